//! Reftable repositories (`extensions.refStorage=reftable`), whose refs gix cannot read and
//! kardwt asks git for: a plain `git worktree add` is seeded and keeps its tree, and
//! `git kardwt add`, `verify`, `list` and `remove` work as in a repository of loose refs.
use super::*;

/// A reftable clone of origin beside the base, with kardwt's shims installed.
fn reftable_clone(repo: &TestRepo) -> PathBuf {
    let clone = repo.sibling("reftable");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--ref-format=reftable",
            origin,
            clone.to_str().unwrap(),
        ],
    );
    assert_eq!(
        repo.git(&clone, &["config", "extensions.refStorage"])
            .trim(),
        "reftable"
    );
    repo.kardwt(&clone, &["install-hooks"]).expect_code(0);
    clone
}

/// The record of the linked worktree `name` of `clone`, parsed.
fn record_of(clone: &Path, name: &str) -> toml::Table {
    let path = clone.join(format!(".git/worktrees/{name}/kardwt.toml"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no record at {}: {e}", path.display()));
    text.parse().unwrap()
}

#[test]
fn a_plain_worktree_add_in_a_reftable_repository_is_seeded_and_keeps_its_tree() {
    let repo = TestRepo::new();
    let clone = reftable_clone(&repo);
    for (name, branch, card) in [("plain", "plain", "plain"), ("seven", "card/7", "7")] {
        let path = repo.sibling(name);
        let out = repo.git_output(
            &clone,
            &["worktree", "add", "-b", branch, path.to_str().unwrap()],
        );
        out.expect_code(0);
        assert_intact(&repo, &path);
        let record = record_of(&clone, name);
        assert_eq!(record["card"].as_str(), Some(card), "{record:?}");
        assert_eq!(record["branch"].as_str(), Some(branch), "{record:?}");
        assert_eq!(record["state"].as_str(), Some("ready"), "{record:?}");
        repo.kardwt(&path, &["verify"]).expect_code(0);
    }
    assert!(noop_notes(&clone.join(".git")).is_empty());
}

#[test]
fn add_verify_list_and_remove_work_in_a_reftable_repository() {
    let repo = TestRepo::new();
    let clone = reftable_clone(&repo);
    let main = repo.commit_on_origin("origin moves on");
    let out = repo.kardwt(&clone, &["add", "9"]);
    out.expect_code(0);
    let path = PathBuf::from(out.stdout.trim());
    assert_eq!(path, repo.sibling("reftable.worktrees/card-9"));
    assert_intact(&repo, &path);
    assert_eq!(repo.git(&path, &["rev-parse", "HEAD"]).trim(), main);
    assert_eq!(
        repo.git(&path, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/card/9"
    );
    let record = record_of(&clone, "card-9");
    assert_eq!(record["base_oid"].as_str(), Some(main.as_str()));
    repo.kardwt(&clone, &["verify", "9"]).expect_code(0);
    let list = repo.kardwt(&clone, &["list", "--json"]);
    list.expect_code(0);
    assert!(list.stdout.contains("\"branch\":\"card/9\""), "{list}");
    // Reused, not made again.
    let again = repo.kardwt(&clone, &["add", "9"]);
    again.expect_code(0);
    assert_eq!(again.stdout.trim(), path.to_str().unwrap());
    repo.kardwt(&clone, &["remove", "9"]).expect_code(0);
    assert!(!path.exists());
    let branches = repo.git(&clone, &["for-each-ref", "refs/heads/card/"]);
    assert!(branches.contains("refs/heads/card/9"), "{branches}");
}

/// `gc --offline` says how long ago the base was last fetched from the reflog git keeps in the
/// reftable (there is no `logs/` directory to read), in its text and in its JSON.
#[test]
fn gc_offline_says_how_old_the_last_fetch_is_in_a_reftable_repository() {
    let repo = TestRepo::new();
    let clone = reftable_clone(&repo);
    assert!(!clone.join(".git/logs/refs/remotes/origin/main").exists());
    let out = repo.kardwt(&clone, &["add", "5"]);
    out.expect_code(0);
    // The fetch moved nothing: the clone's entry, written at the test's committer date, is the
    // last (2024-01-01, more than a day ago).
    let out = repo.kardwt(&clone, &["gc", "--offline", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["offline"][0]["tracking_ref"], "refs/remotes/origin/main");
    let age = v["offline"][0]["age_seconds"].as_u64();
    assert!(age.is_some_and(|a| a > 86_400), "{v}");
    let out = repo.kardwt(&clone, &["gc", "--offline"]);
    out.expect_code(0);
    assert!(
        out.stdout.lines().any(|l| l
            .starts_with("judged against refs/remotes/origin/main as last fetched, updated ")
            && l.contains(" days ago")),
        "{out}"
    );
}
