//! Work that `git status` does not show is still work: a real file hidden by the exclude entry
//! written for another tree's link, a repository or worktree nested at an ignored path, and an
//! edit to a tracked file flagged skip-worktree or assume-unchanged. `remove` refuses each,
//! naming it, and touches nothing on disk.
use std::path::Path;

use crate::support::{snapshot, TestRepo};

fn status(repo: &TestRepo, dir: &Path) -> String {
    repo.git(dir, &["status", "--porcelain", "--untracked-files=all"])
}

/// `remove card` (at `wt`) exits 1 naming `what`; the tree, the base and the registration are
/// as they were.
#[track_caller]
fn assert_refused(repo: &TestRepo, args: &[&str], wt: &Path, what: &str) {
    let before = snapshot(wt);
    let base = repo.snapshot_base();
    let mut all = vec!["remove"];
    all.extend_from_slice(args);
    all.extend(["--grace", "1"]);
    let out = repo.kardwt(&repo.base, &all);
    out.expect_code(1);
    assert!(out.stderr.contains(what), "{what} is not named:\n{out}");
    assert_eq!(snapshot(wt), before, "the tree changed:\n{out}");
    assert_eq!(repo.snapshot_base(), base, "the base changed:\n{out}");
    assert!(repo.is_registered(wt), "{out}");
}

/// Card 2 holds its own untracked `seed.sql`; once card 1 links the base's `seed.sql`, the
/// shared exclude entry hides card 2's file from `git status`, and it is still card 2's work.
#[test]
fn a_real_file_hidden_by_another_trees_link_entry_is_user_work() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join("seed.sql"), "base seed\n").unwrap();
    let plain = repo.rules_with_prepare(false);
    repo.write_rules(&plain);
    let two = repo.add_card("2");
    std::fs::write(two.join("seed.sql"), "card 2's own seed\n").unwrap();
    assert!(status(&repo, &two).contains("?? seed.sql"));

    repo.write_rules(&format!("{plain}  sharing:\n    link: [seed.sql]\n"));
    let one = repo.add_card("1");
    let link = one.join("seed.sql");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(status(&repo, &two), "", "the test needs the file hidden");

    assert_refused(&repo, &["2"], &two, "seed.sql");
    assert_eq!(
        std::fs::read_to_string(two.join("seed.sql")).unwrap(),
        "card 2's own seed\n"
    );
    // Card 1's own link is not dirt, and the base's file survives its removal.
    let out = repo.kardwt(&repo.base, &["remove", "1", "--grace", "1"]);
    out.expect_code(0);
    assert!(!one.exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(repo.base.join("seed.sql")).unwrap(),
        "base seed\n"
    );
}

/// `/build/` ignored in every tree (the common dir's `info/exclude`).
fn ignore_build(repo: &TestRepo) {
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/build/\n");
    std::fs::write(exclude, text).unwrap();
}

/// A worktree, and then a plain repository, inside a card tree at an ignored path: git status
/// of the outer tree is silent, and `remove`, forced or not, refuses naming it, signals no
/// process in it and deletes nothing.
#[test]
fn a_worktree_or_repository_nested_at_an_ignored_path_is_refused() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    ignore_build(&repo);
    let wt = repo.add_card("3");
    let inner = repo.nested_worktree(&wt);
    assert_eq!(status(&repo, &wt), "", "the test needs the tree hidden");
    let mut sleeper = crate::support::cleanup::Sleeper::start(&repo, &inner);
    for args in [&["3"][..], &["3", "--force"]] {
        assert_refused(&repo, args, &wt, "build/inner");
        assert!(
            sleeper.alive(),
            "a process in the nested tree was signalled"
        );
    }
    assert!(repo.is_registered(&inner));
    assert_eq!(
        std::fs::read_to_string(inner.join("notes.txt")).unwrap(),
        "uncommitted\n"
    );
    drop(sleeper);

    repo.git(
        &repo.base,
        &["worktree", "remove", "--force", inner.to_str().unwrap()],
    );
    let scratch = wt.join("build/deep/scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    repo.git(&scratch, &["init", "--quiet"]);
    std::fs::write(scratch.join("draft.txt"), "mine\n").unwrap();
    assert_eq!(status(&repo, &wt), "");
    assert_refused(&repo, &["3", "--force"], &wt, "build/deep/scratch");
    assert_eq!(
        std::fs::read_to_string(scratch.join("draft.txt")).unwrap(),
        "mine\n"
    );

    // Once it is gone, the tree is removed.
    std::fs::remove_dir_all(wt.join("build")).unwrap();
    repo.kardwt(&repo.base, &["remove", "3", "--grace", "1"])
        .expect_code(0);
    assert!(!wt.exists());
}

/// An edit to a tracked file marked skip-worktree, and one to a file and a symlink marked
/// assume-unchanged: git status shows none of them, and `remove` refuses naming each. A
/// skip-worktree entry sparse-checkout left absent is nothing to lose: the tree is removed.
#[test]
fn edits_to_files_flagged_in_the_index_are_user_work() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[("conf/app.ini", "committed\n"), ("notes.md", "committed\n")],
        "tracked files",
    );
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("7");
    std::os::unix::fs::symlink("notes.md", wt.join("current")).unwrap();
    repo.git(&wt, &["add", "current"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "a link"]);

    repo.git(&wt, &["update-index", "--skip-worktree", "conf/app.ini"]);
    std::fs::write(wt.join("conf/app.ini"), "my local setting\n").unwrap();
    assert_eq!(status(&repo, &wt), "", "the test needs the edit hidden");
    assert_refused(&repo, &["7"], &wt, "conf/app.ini");

    repo.git(&wt, &["update-index", "--no-skip-worktree", "conf/app.ini"]);
    repo.git(&wt, &["checkout", "--", "conf/app.ini"]);
    repo.git(
        &wt,
        &["update-index", "--assume-unchanged", "notes.md", "current"],
    );
    std::fs::write(wt.join("notes.md"), "my notes\n").unwrap();
    assert_eq!(status(&repo, &wt), "");
    assert_refused(&repo, &["7"], &wt, "notes.md");
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.md")).unwrap(),
        "my notes\n"
    );

    std::fs::write(wt.join("notes.md"), "committed\n").unwrap();
    std::fs::remove_file(wt.join("current")).unwrap();
    std::os::unix::fs::symlink("conf/app.ini", wt.join("current")).unwrap();
    assert_eq!(status(&repo, &wt), "");
    assert_refused(&repo, &["7"], &wt, "current");

    // As sparse-checkout leaves it: flagged and absent; and a flagged file as committed.
    std::fs::remove_file(wt.join("current")).unwrap();
    repo.git(&wt, &["update-index", "--no-assume-unchanged", "current"]);
    repo.git(&wt, &["checkout", "--", "current"]);
    repo.git(&wt, &["update-index", "--skip-worktree", "conf/app.ini"]);
    std::fs::remove_file(wt.join("conf/app.ini")).unwrap();
    assert_eq!(status(&repo, &wt), "");
    let out = repo.kardwt(&repo.base, &["remove", "7", "--grace", "1"]);
    out.expect_code(0);
    assert!(!wt.exists(), "{out}");
}
