//! Pushing from a card worktree: a repository with a card, commits with links, pushes, and what a blocked push must say.
#![allow(unused_imports, dead_code)]
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::support::{Output, TestRepo};

/// Hooks installed in the base, the standard prepare rules, and card `card` added; returns the
/// repository and the card's worktree.
pub(crate) fn repo_with_card(card: &str) -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let hooks = repo.common_dir().join("hooks");
    assert!(
        hooks.join("pre-push").is_file(),
        "install-hooks did not install pre-push"
    );
    let wt = repo.add_card(card);
    (repo, wt)
}

/// Write `files` in `wt`, stage them (`git add -f` when `force`), commit; returns the oid.
#[track_caller]
pub(crate) fn commit(
    repo: &TestRepo,
    wt: &Path,
    files: &[(&str, &str)],
    force: bool,
    msg: &str,
) -> String {
    for (rel, content) in files {
        let p = wt.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        let mut add = vec!["add"];
        if force {
            add.push("-f");
        }
        add.extend(["--", rel]);
        repo.git(wt, &add);
    }
    repo.git(wt, &["commit", "--quiet", "-m", msg]);
    head(repo, wt)
}

/// Commit the symlinks `(path, target)` in `wt`; returns the oid.
#[track_caller]
pub(crate) fn commit_links(
    repo: &TestRepo,
    wt: &Path,
    links: &[(&str, &str)],
    msg: &str,
) -> String {
    for (rel, target) in links {
        let p = wt.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &p).unwrap();
        repo.git(wt, &["add", "--", rel]);
    }
    repo.git(wt, &["commit", "--quiet", "-m", msg]);
    head(repo, wt)
}

/// Commit `.env.example` in `wt` with a plain `git add` (no -f: it is not ignored), push
/// card/42 and assert the push passed and reached the remote.
#[track_caller]
pub(crate) fn push_env_example(repo: &TestRepo, wt: &Path) {
    let ok = commit(repo, wt, &[(".env.example", "TOKEN=\n")], false, "example");
    let out = push(repo, wt, &["card/42"]);
    out.expect_code(0);
    assert!(ls_remote(repo).contains(&ok), "{out}");
}

pub(crate) fn head(repo: &TestRepo, wt: &Path) -> String {
    repo.git(wt, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// `git push origin <refspecs…>` from `dir`, hooks active. Does not assert.
pub(crate) fn push(repo: &TestRepo, dir: &Path, refspecs: &[&str]) -> Output {
    let mut args = vec!["push", "origin"];
    args.extend_from_slice(refspecs);
    repo.git_output(dir, &args)
}

/// `git ls-remote origin` as seen from the base.
pub(crate) fn ls_remote(repo: &TestRepo) -> String {
    repo.git(&repo.base, &["ls-remote", "origin"])
}

/// Does origin hold the object `oid` at all?
pub(crate) fn origin_has(repo: &TestRepo, oid: &str) -> bool {
    repo.git_output(
        &repo.origin,
        &["cat-file", "-e", &format!("{oid}^{{commit}}")],
    )
    .code
        == 0
}

pub(crate) fn count_events(repo: &TestRepo, event: &str) -> usize {
    repo.events(None)
        .iter()
        .filter(|e| e["event"] == event)
        .count()
}

/// Assert that a push was refused by the pre-push check, naming `path` and `commit`, and that
/// origin received neither the commit nor the ref update.
#[track_caller]
pub(crate) fn assert_blocked(repo: &TestRepo, out: &Output, path: &str, commit: &str) {
    assert_ne!(out.code, 0, "the push went through:\n{out}");
    assert!(
        out.stderr.contains("blocked"),
        "not refused by the pre-push check:\n{out}"
    );
    assert!(out.stderr.contains(path), "{path} is not named:\n{out}");
    assert!(
        out.stderr.contains(commit),
        "commit {commit} is not named:\n{out}"
    );
    assert!(
        !ls_remote(repo).contains(commit),
        "origin lists {commit}:\n{}",
        ls_remote(repo)
    );
    assert!(!origin_has(repo, commit), "origin received {commit}");
    assert!(
        !out.stderr.contains("elsewhere"),
        "the refusal suggests pushing from elsewhere:\n{out}"
    );
}
