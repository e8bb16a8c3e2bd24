//! A plain `git worktree add` that kardwt seeds says so in one line on stderr when that is a
//! terminal: what it did and where the prepare hook's whole output is (the hook's own lines go
//! to that log, not to the terminal).
use std::path::Path;

use crate::support::*;

/// Plain `git worktree add <path> -b <branch>` in the base on a pseudo-terminal (util-linux
/// `script`): what the terminal received (stdout and stderr both), and the exit code.
fn worktree_add_on_a_terminal(repo: &TestRepo, path: &Path, branch: &str) -> Output {
    let mut cmd = repo.command("script", &repo.base);
    cmd.env("TERM", "dumb");
    let line = format!("git worktree add {} -b {branch}", sh_quote(path));
    repo.start_command(cmd, &repo.base, &["-qefc", &line, "/dev/null"])
        .wait(COMMAND_TIMEOUT)
}

#[test]
fn a_seeded_worktree_add_says_what_was_done_in_one_line_naming_the_log() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("echo 'hook says hi'");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let path = repo.root().join("plain");
    let out = worktree_add_on_a_terminal(&repo, &path, "plain");
    out.expect_code(0);
    let ours: Vec<&str> = out
        .stdout
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with("kardwt"))
        .collect();
    assert_eq!(ours.len(), 1, "not one line:\n{out}");
    assert!(
        ours[0].starts_with(&format!(
            "kardwt: seeded and prepared {} as card plain in ",
            path.display()
        )),
        "{out}"
    );
    let log = repo.common_dir().join("kardwt/logs/plain.log");
    assert!(ours[0].ends_with(&log.display().to_string()), "{out}");
    assert!(!out.stdout.contains("hook says hi"), "{out}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("hook says hi"), "{logged}");

    // Without a prepare hook: seeded, and where to look.
    repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    let other = repo.root().join("other");
    let out = worktree_add_on_a_terminal(&repo, &other, "other");
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("(git kardwt status other shows what it holds)"),
        "{out}"
    );
}
