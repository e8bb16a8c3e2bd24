//! The harness itself: snapshots and mtimes must see the changes the tests rely on them to see.
use std::path::Path;
use std::time::Duration;

use super::*;
/// The harness itself: snapshots and mtimes must see the changes the tests rely on them to see.

#[test]
fn snapshots_and_mtimes_see_every_kind_of_change() {
    let repo = TestRepo::new();
    let base = repo.snapshot_base();
    assert!(base.contains_key(Path::new("README.md")));
    assert!(base.contains_key(Path::new("src/lib.txt")));
    assert!(base.contains_key(Path::new(".git/index")));
    assert!(!base.keys().any(|k| k.starts_with(".git/objects")));

    std::fs::write(repo.base.join("src/lib.txt"), "changed\n").unwrap();
    assert_ne!(repo.snapshot_base(), base, "content change not seen");
    std::fs::write(repo.base.join("src/lib.txt"), "one\ntwo\n").unwrap();
    std::fs::create_dir(repo.base.join("empty")).unwrap();
    assert_ne!(repo.snapshot_base(), base, "new empty directory not seen");
    std::fs::remove_dir(repo.base.join("empty")).unwrap();
    repo.git(&repo.base, &["switch", "--quiet", "-c", "x"]);
    assert_ne!(repo.snapshot_base(), base, "branch switch not seen");
    let settled = repo.snapshot_base();
    assert_eq!(
        repo.snapshot_base(),
        settled,
        "taking a snapshot changed the base"
    );

    let common = mtimes(&repo.common_dir());
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(repo.common_dir().join("worktrees-probe"), "").unwrap();
    std::fs::remove_file(repo.common_dir().join("worktrees-probe")).unwrap();
    assert_ne!(
        mtimes(&repo.common_dir()),
        common,
        "a create+delete not seen"
    );
}

#[test]
fn commands_reach_the_binary_under_test_through_git() {
    let repo = TestRepo::new();
    let out = repo.kardwt(&repo.base, &["--version"]);
    out.expect_code(0);
    assert!(out.stdout.contains(env!("CARGO_PKG_VERSION")), "{out}");
    let out = repo.git_output(&repo.base, &["config", "--global", "--list"]);
    assert_eq!(out.stdout, "", "the global config is not /dev/null:\n{out}");
}
