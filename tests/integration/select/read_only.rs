//! Read-only selection and read-only reading commands: `select`, `verify`, `list`
//! and `status` change no file under the common dir or the worktree root.
use crate::support::{line, mtimes, snapshot, TestRepo};

#[test]
fn select_prints_the_base_for_an_absent_card_and_creates_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let common_before = mtimes(&repo.common_dir());
    let out = repo.kardwt(&repo.base, &["select", "77", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.base), "{out}");
    assert!(!repo.root().exists(), "select created the root");
    assert_eq!(
        mtimes(&repo.common_dir()),
        common_before,
        "select changed the common dir"
    );
    assert!(repo.prepare_runs().is_empty());
}

#[test]
fn select_without_existing_or_base_is_a_usage_error() {
    let repo = TestRepo::new();
    repo.add_card("77");
    let out = repo.kardwt(&repo.base, &["select", "77"]);
    out.expect_code(2);
    assert_eq!(out.stdout, "", "{out}");
}

#[test]
fn select_prints_the_ready_worktree_and_reading_commands_touch_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(true));
    let wt = repo.add_card("77");
    repo.add_card("78");
    // A worktree whose directory is gone (prunable) must not be pruned by reading commands.
    let gone = repo.add_gone_worktree();
    // Settle anything a first read by git itself would write (nothing expected).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let common_before = mtimes(&repo.common_dir());
    let root_before = mtimes(&repo.root());
    let root_files = snapshot(&repo.root());
    let runs = repo.prepare_runs();

    let out = repo.kardwt(&repo.base, &["select", "77", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&wt), "{out}");
    let out = repo.kardwt(
        &repo.base,
        &["select", "77", "--existing-or-base", "--json"],
    );
    out.expect_code(0);
    assert_eq!(out.json()["path"], wt.to_str().unwrap(), "{out}");
    let out = repo.kardwt(&repo.base, &["select", "79", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.base), "{out}");
    // From inside another worktree the answer is the same.
    let out = repo.kardwt(
        &repo.card_path("78"),
        &["select", "77", "--existing-or-base"],
    );
    out.expect_code(0);
    assert_eq!(out.stdout, line(&wt), "{out}");

    for args in [
        vec!["verify", "77"],
        vec!["verify", "77", "--json"],
        vec!["verify", "--path", wt.to_str().unwrap()],
        vec!["list"],
        vec!["list", "--json"],
        vec!["status", "77"],
        vec!["status", "77", "--json"],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(0);
    }
    repo.kardwt_ok(&wt, &["status", "--json"]);
    repo.kardwt_ok(&wt, &["verify"]);

    assert_eq!(
        mtimes(&repo.common_dir()),
        common_before,
        "the common dir changed"
    );
    assert_eq!(
        mtimes(&repo.root()),
        root_before,
        "the worktree root changed"
    );
    assert_eq!(snapshot(&repo.root()), root_files);
    assert_eq!(repo.prepare_runs(), runs, "a reading command ran prepare");
    assert!(repo
        .worktrees()
        .iter()
        .any(|(p, _, prunable)| *p == gone && *prunable));
}

#[test]
fn select_falls_back_to_the_base_for_an_unseeded_worktree_and_fails_closed_on_a_foreign_one() {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.root()).unwrap();
    let unseeded = repo.card_path("55");
    repo.add_unhooked_worktree(unseeded.to_str().unwrap(), "card/55");
    let out = repo.kardwt(&repo.base, &["select", "55", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.base), "{out}");
    assert!(
        !out.stderr.is_empty(),
        "the reason for the fallback belongs on stderr"
    );

    let foreign = repo.card_path("56");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("x"), "x").unwrap();
    let before = snapshot(&repo.root());
    let out = repo.kardwt(&repo.base, &["select", "56", "--existing-or-base"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(snapshot(&repo.root()), before);
}
