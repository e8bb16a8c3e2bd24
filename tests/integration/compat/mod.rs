//! Repositories and options git supports where kardwt has nothing to do: with kardwt's shims
//! reaching them (a shared `core.hooksPath`), git's operation goes on exactly as without them
//! (bare, mirror and separate-git-dir repositories, the bare layout `project/.git`, reftable refs, branches under `card/` that
//! name no card, `--quiet`, a chained hook's stdin).
mod bare;
mod bare_layout;
mod card_branch;
mod chained_stdin;
mod core_worktree;
mod flows;
mod quiet;
mod reftable;
mod separate_git_dir;

use std::path::{Path, PathBuf};

use crate::support::*;

/// kardwt's shims in one hooks directory every repository of this test's user reaches
/// (`core.hooksPath` in the user's own config, as a team or git's test suite shares them);
/// returns that directory.
#[track_caller]
fn shared_hooks(repo: &TestRepo) -> PathBuf {
    let hooks = repo.sibling("shared hooks");
    std::fs::create_dir(&hooks).unwrap();
    repo.git(
        &repo.base,
        &[
            "config",
            "--global",
            "core.hooksPath",
            hooks.to_str().unwrap(),
        ],
    );
    repo.install_hooks();
    assert!(hooks.join("post-checkout").is_file());
    assert!(hooks.join("pre-push").is_file());
    hooks
}

/// Every regular file of `dir` (without `.git`) with its bytes, by path relative to `dir`.
fn files_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The tree `git worktree add` just made at `tree` is intact: registered, clean, holding
/// every file of its commit with git's bytes.
#[track_caller]
fn assert_intact(repo: &TestRepo, tree: &Path) {
    assert!(tree.is_dir(), "{} was deleted", tree.display());
    let status = repo.git(tree, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "{} is not as git made it", tree.display());
    let tracked = repo.git(tree, &["ls-files", "-z"]);
    let mut tracked: Vec<PathBuf> = tracked
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect();
    tracked.sort();
    let found: Vec<PathBuf> = files_of(tree).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        found,
        tracked,
        "{}: files differ from its index",
        tree.display()
    );
    assert!(
        !tracked.is_empty(),
        "{} checked out nothing",
        tree.display()
    );
}

/// The notes kardwt's hooks left in the event log of `common_dir` (`hook-noop` lines).
fn noop_notes(common_dir: &Path) -> Vec<String> {
    let log = common_dir.join("kardwt/events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "hook-noop")
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `line` (a shell command line) run in `dir` on a pseudo-terminal (util-linux `script`):
/// what the terminal received (stdout and stderr both), and the exit code.
fn on_a_terminal(repo: &TestRepo, dir: &Path, line: &str) -> Output {
    let mut cmd = repo.command("script", dir);
    cmd.env("TERM", "dumb");
    repo.start_command(cmd, dir, &["-qefc", line, "/dev/null"])
        .wait(COMMAND_TIMEOUT)
}
