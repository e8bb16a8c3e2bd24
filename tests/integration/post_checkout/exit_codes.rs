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
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "post_checkout_lock_deadline",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
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
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "post_checkout_rules_error",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(out.stderr.contains("could not seed"), "{out}");
    assert!(out.stderr.contains("caused by:"), "{out}");
    assert!(!repo.sibling("k1").exists(), "{out}");
}

#[test]
fn a_second_tree_of_a_card_is_refused_inside_the_post_checkout_hook_and_removed() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let three = repo.add_card("3");
    repo.git(&repo.base, &["branch", "card/3-copy", "card/3"]);
    // A tree on a card's branch is that card's: a second one for card 3 is refused.
    repo.git(&three, &["checkout", "--quiet", "--detach"]);
    let out = repo.worktree_add(&["../second", "card/3"]);
    assert_eq!(out.code, 3, "{out}");
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "post_checkout_second_tree",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(!repo.sibling("second").exists(), "{out}");
    assert_eq!(repo.record(&three)["card"].as_str(), Some("3"));
}
