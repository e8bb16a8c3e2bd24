//! A plain `git worktree add` that kardwt seeds says so in one line on stderr: what it did and
//! where the prepare hook's whole output is (the hook's own lines go to that log, not to the
//! terminal).
use crate::support::*;

#[test]
fn a_seeded_worktree_add_says_what_was_done_in_one_line_naming_the_log() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("echo 'hook says hi'");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let path = repo.root().join("plain");
    let out = repo.worktree_add(&[path.to_str().unwrap(), "-b", "plain"]);
    out.expect_code(0);
    let ours: Vec<&str> = out
        .stderr
        .lines()
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
    assert!(!out.stderr.contains("hook says hi"), "{out}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("hook says hi"), "{logged}");

    // Without a prepare hook: seeded, and where to look.
    repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    let other = repo.root().join("other");
    let out = repo.worktree_add(&[other.to_str().unwrap(), "-b", "other"]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("(git kardwt status other shows what it holds)"),
        "{out}"
    );
}
