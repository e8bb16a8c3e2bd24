//! Bare and mirror repositories that kardwt's shared shims reach: a plain
//! `git worktree add` keeps its tree and succeeds, a push from a bare or mirror repository goes
//! through, with a note in the event log (on stderr only at a terminal). Where kardwt is set
//! up, it still fails closed.
use super::*;

/// A bare clone of origin beside the base, with the shared shims reaching it.
fn bare_clone(repo: &TestRepo, name: &str, how: &str) -> PathBuf {
    let bare = repo.sibling(name);
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", how, origin, bare.to_str().unwrap()],
    );
    bare
}

#[test]
fn a_plain_worktree_add_in_a_bare_clone_keeps_its_tree_and_succeeds() {
    let repo = TestRepo::new();
    shared_hooks(&repo);
    let bare = bare_clone(&repo, "project.git", "--bare");
    let detached = repo.sibling("detached");
    let out = repo.git_output(
        &bare,
        &["worktree", "add", "--detach", detached.to_str().unwrap()],
    );
    out.expect_code(0);
    assert!(
        !out.stderr.contains("kardwt"),
        "spoke through a pipe:\n{out}"
    );
    assert_intact(&repo, &detached);
    let branched = repo.sibling("feature");
    repo.git(
        &bare,
        &[
            "worktree",
            "add",
            "-b",
            "feature",
            branched.to_str().unwrap(),
        ],
    );
    assert_intact(&repo, &branched);
    let notes = noop_notes(&bare);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("no main worktree"), "{notes:?}");
    assert!(!bare.join("worktrees/feature/kardwt.toml").exists());

    // At a terminal the note is said as well, and git still succeeds.
    let third = repo.sibling("third");
    let line = format!("git worktree add --detach {}", sh_quote(&third));
    let out = on_a_terminal(&repo, &bare, &line);
    out.expect_code(0);
    assert!(
        out.stdout.contains("kardwt: post-checkout: nothing to do"),
        "{out}"
    );
    assert_intact(&repo, &third);
}

#[test]
fn pushes_from_a_bare_and_a_mirror_repository_go_through() {
    let repo = TestRepo::new();
    shared_hooks(&repo);
    let bare = bare_clone(&repo, "project.git", "--bare");
    let target = repo.sibling("target.git");
    repo.git(
        &repo.tmp,
        &["init", "--quiet", "--bare", target.to_str().unwrap()],
    );
    let main = repo.origin_main();
    repo.git(
        &bare,
        &["push", "--quiet", target.to_str().unwrap(), "main"],
    );
    let pushed = repo.git(&target, &["rev-parse", "refs/heads/main"]);
    assert_eq!(pushed.trim(), main);

    let mirror = bare_clone(&repo, "mirror.git", "--mirror");
    let copy = repo.sibling("copy.git");
    repo.git(
        &repo.tmp,
        &["init", "--quiet", "--bare", copy.to_str().unwrap()],
    );
    repo.git(
        &mirror,
        &["push", "--quiet", "--mirror", copy.to_str().unwrap()],
    );
    assert_eq!(
        repo.git(&copy, &["for-each-ref"]),
        repo.git(&mirror, &["for-each-ref"]),
        "the mirror push did not copy every ref"
    );
    assert!(noop_notes(&mirror)[0].starts_with("pre-push: nothing to do"));
}

#[test]
fn a_bare_repository_set_up_for_kardwt_still_fails_closed() {
    let repo = TestRepo::new();
    shared_hooks(&repo);
    let bare = bare_clone(&repo, "project.git", "--bare");
    repo.git(
        &bare,
        &["config", "kardwt.rules", "/nonexistent/kardbrd.yml"],
    );
    let target = repo.sibling("target.git");
    repo.git(
        &repo.tmp,
        &["init", "--quiet", "--bare", target.to_str().unwrap()],
    );
    let out = repo.git_output(&bare, &["push", target.to_str().unwrap(), "main"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("no main worktree"), "{out}");
    assert_eq!(
        repo.git(&target, &["for-each-ref"]),
        "",
        "the push went through"
    );
    assert!(noop_notes(&bare).is_empty());
}
