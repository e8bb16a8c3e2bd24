//! The git layer, the locks and the errors of issue 11: a lock deadline inside the
//! post-checkout hook keeps its exit code, a stale record never overwrites a newer one,
//! `remove` reads a renamed non-ASCII file in a dirty tree right, and `KARDWT_TRACE=1` shows
//! every git call.
use std::time::Duration;

use crate::support::{sh_quote, wait_until, TestRepo};

/// Hold `path`'s flock from another process until the returned child is killed.
fn hold_flock(repo: &TestRepo, path: &std::path::Path) -> crate::support::Running {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ready = repo.tmp.join("flock.ready");
    // One process (sh, then sleep) holds the lock on fd 9, so killing it frees the lock.
    let script = format!(
        "exec 9>>{}; flock 9; touch {}; exec sleep 60",
        sh_quote(path),
        sh_quote(&ready)
    );
    let child = repo.spawn("sh", &repo.tmp, &["-c", &script]);
    assert!(
        wait_until(Duration::from_secs(30), || ready.exists()),
        "flock never took {}",
        path.display()
    );
    child
}

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
