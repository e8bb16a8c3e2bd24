//! A cleanup hook that runs a kardwt command needing a lock its own `remove` holds: the inner
//! command fails at once naming the outer command and the lock (it never waits to the hook's
//! cap), the outer `remove` says so and keeps its card as it was (not `failed` for a lock it held
//! itself), and two removals whose hooks reach for each other's card never deadlock.
use std::time::{Duration, Instant};

use crate::support::cleanup::cleanup_rules;
use crate::support::{sh_quote, TestRepo, BIN};

/// Rules whose cleanup hook (cap 30 s) removes the other card of the pair 1 and 2.
fn rules(repo: &TestRepo) -> String {
    let other = format!(
        "case \"$KARDWT_CARD\" in 1) other=2 ;; *) other=1 ;; esac\n\
         {} remove \"$other\" || exit $?\n",
        sh_quote(std::path::Path::new(BIN))
    );
    let cleanup = cleanup_rules(repo, &other)
        .replace("  cleanup:\n", "  cleanup:\n    timeout_seconds: 30\n");
    format!("{}{cleanup}", repo.rules_with_prepare(false))
}

#[test]
fn a_cleanup_hook_running_remove_fails_at_once_naming_the_parent_lock() {
    let repo = TestRepo::new();
    repo.write_rules(&rules(&repo));
    let one = repo.add_card("1");
    let two = repo.add_card("2");
    let started = Instant::now();
    let out = repo.kardwt(&repo.base, &["remove", "1"]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "remove waited {:?} for its own lock:\n{out}",
        started.elapsed()
    );
    out.expect_code(4);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_hook_reentry",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    // Not marked failed for a lock it held itself; nothing removed.
    assert!(one.is_dir() && repo.is_registered(&one), "{out}");
    assert_eq!(repo.record(&one)["state"].as_str(), Some("ready"), "{out}");
    assert!(two.is_dir() && repo.is_registered(&two), "{out}");
    assert_eq!(repo.record(&two)["state"].as_str(), Some("ready"), "{out}");
}

#[test]
fn two_removals_whose_hooks_remove_each_other_never_deadlock() {
    let repo = TestRepo::new();
    repo.write_rules(&rules(&repo));
    repo.add_card("1");
    repo.add_card("2");
    let started = Instant::now();
    let a = repo.spawn_kardwt_bin(&repo.base, &["remove", "1"]);
    let b = repo.spawn_kardwt_bin(&repo.base, &["remove", "2"]);
    let (a, b) = (
        a.wait(Duration::from_secs(60)),
        b.wait(Duration::from_secs(60)),
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the removals waited {:?} for each other:\n{a}\n{b}",
        started.elapsed()
    );
    for out in [&a, &b] {
        assert_ne!(out.code, 5, "a removal ran into its deadline:\n{out}");
        assert!(!out.stderr.contains("deadline"), "{out}");
    }
}
