//! Inside the post-checkout hook, errors keep their exit codes: a lock deadline exits 5, a rules
//! error exits 2, and `git worktree add` leaves no tree behind.
use std::time::Duration;

use crate::support::procs::hold_flock;
use crate::support::TestRepo;

#[test]
fn a_lock_deadline_inside_the_post_checkout_hook_exits_5() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  action_timeout_seconds: 1\n");
    repo.install_hooks();
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let out = repo.worktree_add(&["../k1", "-b", "card/k1"]);
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("could not seed"), "{out}");
    assert!(out.stderr.contains("caused by:"), "{out}");
    assert!(out.stderr.contains("deadline"), "{out}");
    assert!(!repo.sibling("k1").exists(), "{out}");
}

#[test]
fn a_rules_error_inside_the_post_checkout_hook_exits_2() {
    let repo = TestRepo::new();
    repo.install_hooks();
    repo.write_rules("worktree:\n  action_timeout_seconds: soon\n");
    let out = repo.worktree_add(&["../k1", "-b", "card/k1"]);
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("could not seed"), "{out}");
    assert!(out.stderr.contains("caused by:"), "{out}");
    assert!(!repo.sibling("k1").exists(), "{out}");
}
