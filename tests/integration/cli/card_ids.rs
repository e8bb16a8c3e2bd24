//! Card ids: every invalid id is a usage error (exit 2) before anything is touched.
use std::path::PathBuf;

use crate::support::{line, TestRepo};

/// The names (not contents) of everything under the common dir, so an invalid id is shown
/// to create nothing there either (no lock dir, no admin dir, no ref).
fn common_dir_names(repo: &TestRepo) -> Vec<PathBuf> {
    crate::support::snapshot(&repo.common_dir())
        .into_keys()
        .collect()
}

#[track_caller]
fn assert_rejected(repo: &TestRepo, args: &[&str]) {
    let before = common_dir_names(repo);
    let base_before = repo.snapshot_base();
    let out = repo.kardwt(&repo.base, args);
    assert_eq!(out.code, 2, "expected a usage error:\n{out}");
    assert_eq!(out.stdout, "", "stdout must stay empty on error:\n{out}");
    assert!(out.stderr.contains("error"), "{out}");
    repo.assert_nothing_created(&base_before, &format!("{args:?}"));
    assert_eq!(
        common_dir_names(repo),
        before,
        "the common dir changed for {args:?}"
    );
}

#[test]
fn each_invalid_id_exits_2_and_creates_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let long = "9".repeat(129);
    for id in [
        "../x", "a b", "", "x.lock", "a/b", "a..b", "a\nb", "x.", ".x", "_x", &long,
    ] {
        assert_rejected(&repo, &["add", id]);
        assert_rejected(&repo, &["add", "--", id]);
    }
    assert!(repo.prepare_runs().is_empty());
}

#[test]
fn a_leading_dash_id_exits_2_as_option_and_after_double_dash() {
    let repo = TestRepo::new();
    assert_rejected(&repo, &["add", "--", "-rf"]);
    assert_rejected(&repo, &["add", "-rf"]);
    assert!(!repo.base.join("-rf").exists());
}

#[test]
fn invalid_ids_are_usage_errors_for_reading_commands_too() {
    let repo = TestRepo::new();
    for args in [["verify", "../x"], ["select", "a/b"], ["status", "a..b"]] {
        let mut all = args.to_vec();
        if args[0] == "select" {
            all.push("--existing-or-base");
        }
        assert_rejected(&repo, &all);
    }
}

#[test]
fn the_longest_and_unusual_valid_ids_are_accepted() {
    let repo = TestRepo::new();
    let long = "a".repeat(128);
    for id in ["A-1_b.c", "x.lockx", long.as_str()] {
        let out = repo.kardwt_ok(&repo.base, &["add", id]);
        assert_eq!(out, line(&repo.card_path(id)));
        assert_eq!(
            repo.git(&repo.card_path(id), &["symbolic-ref", "--short", "HEAD"])
                .trim(),
            format!("card/{id}")
        );
    }
}
