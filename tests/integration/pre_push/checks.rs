//! pre-push verification: with the hooks installed, a push from a card worktree
//! made by `git kardwt add` goes through when its commits are ordinary, and is refused (naming
//! the path and the commit, with nothing reaching the remote) when a commit adds a `.env.*`
//! forced past .gitignore or a symlink leaving the repository, or when the worktree's record no
//! longer verifies. A tracked, not ignored `.env.example` and a deletion pass. Every check is
//! logged.
use std::time::Instant;

use crate::support::push::*;
use crate::support::TestRepo;

/// An ordinary commit is pushed (first as a new remote ref, then as an update),
/// and each push is checked and logged.
#[test]
fn an_ordinary_commit_from_a_card_worktree_is_checked_and_pushed() {
    let (repo, wt) = repo_with_card("42");
    let oid = commit(&repo, &wt, &[("notes.txt", "ordinary\n")], false, "notes");
    let out = push(&repo, &wt, &["card/42"]);
    out.expect_code(0);
    assert!(
        ls_remote(&repo).contains(&format!("{oid}\trefs/heads/card/42")),
        "{}",
        ls_remote(&repo)
    );
    let checked: Vec<serde_json::Value> = repo
        .events(Some("42"))
        .into_iter()
        .filter(|e| e["event"] == "push-checked")
        .collect();
    assert_eq!(checked.len(), 1, "the push was not checked:\n{out}");
    assert_eq!(checked[0]["path"], wt.to_str().unwrap());

    let oid = commit(&repo, &wt, &[("src/more.txt", "more\n")], false, "more");
    push(&repo, &wt, &["card/42"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&format!("{oid}\trefs/heads/card/42")));
    assert_eq!(count_events(&repo, "push-checked"), 2);
    assert_eq!(count_events(&repo, "push-blocked"), 0);
}

/// A commit adding `.env.prod` forced past .gitignore is refused, naming the path
/// and the commit, and origin does not receive it: on a new remote ref, and on an existing one
/// where the offending commit is not the tip.
#[test]
fn a_commit_adding_a_forced_env_file_is_refused_and_never_reaches_the_remote() {
    let (repo, wt) = repo_with_card("42");
    let bad = commit(&repo, &wt, &[(".env.prod", "TOKEN=secret\n")], true, "oops");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.prod", &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_forced_env_file",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(
        !ls_remote(&repo).contains("refs/heads/card/42"),
        "{}",
        ls_remote(&repo)
    );
    let blocked: Vec<serde_json::Value> = repo
        .events(Some("42"))
        .into_iter()
        .filter(|e| e["event"] == "push-blocked")
        .collect();
    assert_eq!(blocked.len(), 1, "the refusal is not logged");

    // An existing remote ref: the secret sits under a harmless tip.
    let wt43 = repo.add_card("43");
    let first = commit(&repo, &wt43, &[("a.txt", "a\n")], false, "a");
    push(&repo, &wt43, &["card/43"]).expect_code(0);
    let bad = commit(&repo, &wt43, &[(".env", "TOKEN=secret\n")], true, "env");
    let tip = commit(&repo, &wt43, &[("b.txt", "b\n")], false, "b");
    let out = push(&repo, &wt43, &["card/43"]);
    assert_blocked(&repo, &out, ".env", &bad);
    assert!(!origin_has(&repo, &tip));
    assert!(ls_remote(&repo).contains(&format!("{first}\trefs/heads/card/43")));

    // Any pushed commit counts, from the base too.
    repo.git(&repo.base, &["switch", "--quiet", "-c", "topic"]);
    let bad = commit(&repo, &repo.base, &[(".env.local", "X=1\n")], true, "env");
    let out = push(&repo, &repo.base, &["topic"]);
    assert_blocked(&repo, &out, ".env.local", &bad);
}

/// A symlink whose target leaves the repository (`..` past the root, or absolute) is refused;
/// one that stays inside passes.
#[test]
fn a_symlink_leaving_the_repository_is_refused() {
    let (repo, wt) = repo_with_card("42");
    let ok = commit_links(
        &repo,
        &wt,
        &[("readme-link", "README.md"), ("docs/up", "../src/lib.txt")],
        "links inside",
    );
    push(&repo, &wt, &["card/42"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));

    let bad = commit_links(&repo, &wt, &[("docs/escape", "../../outside")], "escape");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "docs/escape", &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_symlink_leaving",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });

    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    let bad = commit_links(&repo, &wt, &[("passwd", "/etc/passwd")], "absolute");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "passwd", &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_absolute_symlink",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(ls_remote(&repo).contains(&format!("{ok}\trefs/heads/card/42")));
}

/// A `.env.example` the ignore rules do not ignore (tracked the ordinary way) passes; a forced
/// `.env.local` beside it does not.
#[test]
fn a_tracked_env_example_that_is_not_ignored_passes() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[(".gitignore", ".env\n.env.*\n!.env.example\n")],
        "unignore .env.example",
    );
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let wt = repo.add_card("42");
    push_env_example(&repo, &wt);
    assert_eq!(count_events(&repo, "push-checked"), 1);

    let bad = commit(&repo, &wt, &[(".env.local", "TOKEN=x\n")], true, "local");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.local", &bad);
}

/// The branch being pushed un-ignores `.env.example` in its own .gitignore: the file was not
/// forced past any ignore rule of the pushed tree, so it passes as well.
#[test]
fn an_env_example_unignored_by_the_pushed_gitignore_passes() {
    let (repo, wt) = repo_with_card("42");
    commit(
        &repo,
        &wt,
        &[(".gitignore", ".env\n.env.*\n!.env.example\n")],
        false,
        "unignore .env.example",
    );
    push_env_example(&repo, &wt);
}

/// Deleting a remote branch passes (and is still checked), even while the local branch holds a
/// commit that could not be pushed.
#[test]
fn deleting_a_remote_card_branch_passes() {
    let (repo, wt) = repo_with_card("42");
    commit(&repo, &wt, &[("notes.txt", "ordinary\n")], false, "notes");
    push(&repo, &wt, &["card/42"]).expect_code(0);
    commit(&repo, &wt, &[(".env.prod", "TOKEN=secret\n")], true, "oops");
    let checked = count_events(&repo, "push-checked");

    let out = push(&repo, &wt, &["--delete", "card/42"]);
    out.expect_code(0);
    assert!(
        !ls_remote(&repo).contains("refs/heads/card/42"),
        "{}",
        ls_remote(&repo)
    );
    assert_eq!(
        count_events(&repo, "push-checked"),
        checked + 1,
        "the deletion did not go through the check:\n{out}"
    );
}

/// A card worktree whose record was edited (its card changed) fails verification: pushing
/// from it is blocked, naming the path and the commit. State alone does not block.
#[test]
fn a_worktree_whose_record_was_edited_blocks_the_push() {
    let (repo, wt) = repo_with_card("42");
    repo.edit_record(&wt, "state", "failed");
    let ok = commit(&repo, &wt, &[("notes.txt", "ordinary\n")], false, "notes");
    let out = push(&repo, &wt, &["card/42"]);
    out.expect_code(0);
    assert!(
        ls_remote(&repo).contains(&ok),
        "state alone blocked:\n{out}"
    );

    repo.edit_record(&wt, "card", "99");
    assert_eq!(
        repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
            .code,
        3,
        "the edited record still verifies"
    );
    let bad = commit(&repo, &wt, &[("more.txt", "ordinary too\n")], false, "more");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, wt.to_str().unwrap(), &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_unverified_tree",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(ls_remote(&repo).contains(&format!("{ok}\trefs/heads/card/42")));
    assert_eq!(count_events(&repo, "push-blocked"), 1);
}

/// 100 commits to push. The same push with and without the hook, in one test;
/// only the ratio is printed (no timed assertion). The check ran and the push succeeded.
#[test]
#[ignore = "benchmark: make test-slow"]
fn pushing_100_commits_is_checked_and_the_ratio_is_printed() {
    let (repo, wt) = repo_with_card("42");
    let script = "for i in $(seq 1 100); do echo \"$i\" > \"f$i.txt\"; \
                  git add \"f$i.txt\"; git commit --quiet -m \"commit $i\"; done";
    let out = repo
        .spawn("sh", &wt, &["-c", script])
        .wait(crate::support::COMMAND_TIMEOUT);
    out.expect_code(0);
    let tip = head(&repo, &wt);
    let count = repo.git(&wt, &["rev-list", "--count", "origin/main..HEAD"]);
    assert_eq!(count.trim(), "100");

    // A second bare remote for the bypassed push, pushed to by URL so no remote-tracking ref
    // tells the hooked push that these commits are already out.
    let mirror = repo.tmp.join("mirror.git");
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", "--bare", "origin.git", "mirror.git"],
    );
    let t = Instant::now();
    let bypassed = repo.git_output(
        &wt,
        &[
            "-c",
            "core.hooksPath=/nonexistent",
            "push",
            "--quiet",
            mirror.to_str().unwrap(),
            "card/42",
        ],
    );
    let bypassed_time = t.elapsed();
    bypassed.expect_code(0);
    assert!(repo
        .git(&wt, &["branch", "-r"])
        .lines()
        .all(|l| !l.contains("card/42")));

    let checked = count_events(&repo, "push-checked");
    let t = Instant::now();
    let hooked = repo.git_output(&wt, &["push", "--quiet", "origin", "card/42"]);
    let hooked_time = t.elapsed();
    hooked.expect_code(0);
    assert!(
        ls_remote(&repo).contains(&format!("{tip}\trefs/heads/card/42")),
        "{hooked}"
    );
    assert_eq!(
        count_events(&repo, "push-checked"),
        checked + 1,
        "the pushed 100 commits were not checked:\n{hooked}"
    );
    println!(
        "pre-push, 100 commits: hooked/bypassed push time ratio {:.2}",
        hooked_time.as_secs_f64() / bypassed_time.as_secs_f64()
    );
}
