//! `add --base` takes a tag or a commit the remote has, not only a branch: the card's branch
//! starts at that commit, the record keeps the tag ref or the commit id, and verify and gc judge
//! against it; one the remote lacks creates nothing, and the refusal names `--base`.
use crate::support::TestRepo;

/// A tag `v1.0` (annotated) and a commit on a branch `side`, both pushed to origin, neither on
/// main; returns (the tag's commit, the side commit).
fn tag_and_commit(repo: &TestRepo) -> (String, String) {
    let s = &repo.scratch;
    repo.git(s, &["switch", "--quiet", "-c", "side"]);
    std::fs::write(s.join("TAGGED"), "1.0\n").unwrap();
    repo.git(s, &["add", "TAGGED"]);
    repo.git(s, &["commit", "--quiet", "-m", "tagged"]);
    repo.git(s, &["tag", "-a", "-m", "one", "v1.0"]);
    let tagged = repo.git(s, &["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::write(s.join("SIDE"), "side\n").unwrap();
    repo.git(s, &["add", "SIDE"]);
    repo.git(s, &["commit", "--quiet", "-m", "side"]);
    let side = repo.git(s, &["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(s, &["push", "--quiet", "origin", "side", "refs/tags/v1.0"]);
    repo.git(s, &["switch", "--quiet", "main"]);
    (tagged, side)
}

#[test]
fn add_base_takes_a_tag_or_a_commit_the_remote_has() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let (tagged, side) = tag_and_commit(&repo);

    for (card, base, recorded, commit) in [
        ("1", "v1.0", "refs/tags/v1.0", &tagged),
        ("2", "refs/tags/v1.0", "refs/tags/v1.0", &tagged),
        ("3", side.as_str(), side.as_str(), &side),
    ] {
        let out = repo.kardwt(&repo.base, &["add", card, "--base", base]);
        out.expect_code(0);
        let wt = repo.card_path(card);
        assert_eq!(
            repo.git(&wt, &["rev-parse", "HEAD"]).trim(),
            commit,
            "{out}"
        );
        assert_eq!(
            repo.git(&wt, &["symbolic-ref", "--short", "HEAD"]).trim(),
            format!("card/{card}")
        );
        let rec = repo.record(&wt);
        assert_eq!(rec["base_ref"].as_str(), Some(recorded), "{rec:?}");
        assert_eq!(rec["base_oid"].as_str(), Some(commit.as_str()), "{rec:?}");
        repo.kardwt_ok(&repo.base, &["verify", card]);
        // Reused with the same base; another base is refused.
        repo.kardwt_ok(&repo.base, &["add", card, "--base", base]);
        let out = repo.kardwt(&repo.base, &["add", card, "--base", "main"]);
        out.expect_code(3);
    }
    assert!(repo.card_path("1").join("TAGGED").is_file());
    assert!(repo.card_path("3").join("SIDE").is_file());

    // gc judges a commit made in the tree against the recorded commit, not "not a branch".
    let wt = repo.card_path("3");
    std::fs::write(wt.join("work.txt"), "w\n").unwrap();
    repo.git(&wt, &["add", "work.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "work"]);
    repo.git(&wt, &["push", "--quiet", "origin", "card/3"]);
    let out = repo.kardwt(&repo.base, &["gc", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let kept = v["kept"].as_array().unwrap();
    let three = kept
        .iter()
        .find(|k| k["card"] == "3")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        three["reason"].as_str(),
        Some(format!("card/3 is not merged into {side}").as_str()),
        "{v}"
    );
}

#[test]
fn add_base_of_a_tag_or_commit_the_remote_lacks_creates_nothing_and_names_the_option() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    tag_and_commit(&repo);
    let refs = repo.all_refs();
    let base_before = repo.snapshot_base();
    let absent = "0123456789abcdef0123456789abcdef01234567";
    for base in ["no-such", "refs/tags/v9", absent] {
        let out = repo.kardwt(&repo.base, &["add", "5", "--base", base]);
        out.expect_code(2);
        assert!(
            out.stderr
                .starts_with(&format!("error: --base {base}: the remote origin has no ")),
            "{out}"
        );
        assert!(
            out.stderr
                .contains("hint: give --base a branch, tag or commit origin has"),
            "{out}"
        );
        assert!(!out.stderr.contains("worktree.base.ref"), "{out}");
        assert!(!repo.card_path("5").exists(), "{out}");
        assert!(!repo.branch_exists("card/5"), "{out}");
        assert_eq!(repo.all_refs(), refs, "{out}");
        assert_eq!(repo.snapshot_base(), base_before);
    }
    // Not a branch, tag or commit at all: a usage error before anything runs.
    let out = repo.kardwt(&repo.base, &["add", "5", "--base", "refs/notes/x"]);
    out.expect_code(2);
    assert!(out.stderr.contains("--base"), "{out}");
}

/// A commit only this repository has (made here, never pushed) is no commit the remote has:
/// `add --base` refuses it, naming the commit and saying to push it, and creates nothing (the
/// fetch of a commit already here asks the remote nothing, so it proves nothing). Once the
/// remote has it, on a branch this repository never fetched, the same command creates the card.
#[test]
fn add_base_of_a_commit_only_this_repository_has_creates_nothing_until_it_is_pushed() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.git(&repo.base, &["switch", "--quiet", "-c", "local-only"]);
    std::fs::write(repo.base.join("LOCAL"), "only here\n").unwrap();
    repo.git(&repo.base, &["add", "LOCAL"]);
    repo.git(&repo.base, &["commit", "--quiet", "-m", "local work"]);
    let local = repo
        .git(&repo.base, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    repo.git(&repo.base, &["switch", "--quiet", "main"]);

    let refs = repo.all_refs();
    let base_before = repo.snapshot_base();
    let trees = repo.git(&repo.base, &["worktree", "list", "--porcelain"]);
    let out = repo.kardwt(&repo.base, &["add", "6", "--base", &local]);
    out.expect_code(2);
    assert!(
        out.stderr.starts_with(&format!(
            "error: --base {local}: this repository has that commit, but no branch or tag of \
             the remote origin reaches it; nothing was created"
        )),
        "{out}"
    );
    assert!(
        out.stderr.contains(&format!(
            "push it first (git push origin {local}:refs/heads/"
        )),
        "{out}"
    );
    assert!(!repo.card_path("6").exists(), "{out}");
    assert!(!repo.branch_exists("card/6"), "{out}");
    assert_eq!(repo.all_refs(), refs, "{out}");
    assert_eq!(repo.snapshot_base(), base_before, "{out}");
    assert_eq!(
        repo.git(&repo.base, &["worktree", "list", "--porcelain"]),
        trees,
        "{out}"
    );

    // Pushed, then the remote-tracking ref dropped: only the remote's own refs show it.
    repo.git(
        &repo.base,
        &[
            "push",
            "--quiet",
            "origin",
            &format!("{local}:refs/heads/pushed"),
        ],
    );
    repo.git(
        &repo.base,
        &["update-ref", "-d", "refs/remotes/origin/pushed"],
    );
    repo.kardwt_ok(&repo.base, &["add", "6", "--base", &local]);
    assert_eq!(
        repo.git(&repo.card_path("6"), &["rev-parse", "HEAD"])
            .trim(),
        local
    );
}
