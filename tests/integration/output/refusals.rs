//! What a refused command prints, whole: the `error:`, `caused by:` and `hint:` lines, and that
//! nothing changed on disk.
use crate::support::{pinned, TestRepo};

#[test]
fn an_invalid_card_id_is_refused_whole() {
    let repo = TestRepo::new();
    let before = repo.snapshot_base();
    let out = repo.kardwt(&repo.base, &["add", "bad id"]);
    out.expect_code(2);
    pinned(&repo).bind(|| insta::assert_snapshot!("add_invalid_card", out.stderr));
    repo.assert_nothing_created(&before, "add of an invalid card id");
}

#[test]
fn removing_a_directory_kardwt_did_not_create_is_refused_whole() {
    let repo = TestRepo::new();
    let foreign = repo.sibling("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("keep.txt"), "mine").unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "--path", foreign.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_foreign",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert_eq!(
        std::fs::read_to_string(foreign.join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn an_invalid_rules_file_is_refused_whole() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  ports:\n    count: many\n");
    let out = repo.kardwt(&repo.base, &["config", "check"]);
    out.expect_code(2);
    pinned(&repo).bind(|| insta::assert_snapshot!("config_check_invalid", out.stderr));
}

#[test]
fn a_failed_prepare_prints_the_failure_block_whole() {
    let repo = TestRepo::new();
    let (_flag, script) = repo.write_failing_prepare("fail", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    let out = repo.kardwt(&repo.base, &["add", "7", "--quiet"]);
    out.expect_code(4);
    pinned(&repo).bind(|| insta::assert_snapshot!("add_failure_block", out.stderr));
}

#[test]
fn removing_a_dirty_tree_is_refused_whole_and_its_work_kept() {
    let repo = TestRepo::new();
    let wt = repo.add_card("3");
    std::fs::write(wt.join("notes.txt"), "my work").unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "3"]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("remove_dirty", format!("exit {}\n{}", out.code, out.stderr))
    });
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).unwrap(),
        "my work"
    );
}

/// Refusals that need no tree: each command's stderr and exit code, whole, and the base as it
/// was.
#[test]
fn refusals_without_a_tree_are_pinned_whole() {
    let repo = TestRepo::new();
    let foreign = repo.sibling("foreign");
    std::fs::create_dir(&foreign).unwrap();
    let foreign = foreign.to_str().unwrap().to_owned();
    let cases: &[(&str, &[&str])] = &[
        ("verify_foreign", &["verify", "--path", &foreign]),
        (
            "add_unknown_base",
            &["add", "4", "--base", "no-such-branch"],
        ),
        ("release_unknown_card", &["release", "9"]),
        ("status_unknown_card", &["status", "9"]),
        ("gc_bad_duration", &["gc", "--idle", "5 fortnights"]),
        ("prepare_path_foreign", &["prepare", "--path", &foreign]),
        (
            "rules_missing",
            &["--rules", "/nonexistent/kardbrd.yml", "config", "check"],
        ),
    ];
    let before = repo.snapshot_base();
    let mut all = String::new();
    for (name, args) in cases {
        let out = repo.kardwt(&repo.base, args);
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&format!("## {name}: exit {}\n{}\n", out.code, out.stderr));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("refusals_without_a_tree", all));
    repo.assert_nothing_created(&before, "the refused commands");
}
