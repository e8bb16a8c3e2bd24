//! `git kardwt shell cards`: the card ids completion offers, from the records alone.
use crate::support::{TestRepo, BIN};

/// One id per line in natural order, from the base and from inside a tree; a worktree kardwt
/// did not make is not a card; the ids are read without starting any process.
#[test]
fn cards_lists_the_recorded_ids_in_natural_order_and_starts_nothing() {
    let repo = TestRepo::new();
    for card in ["10", "3", "b-2"] {
        repo.add_card(card);
    }
    repo.add_unhooked_worktree("plain", "plain");
    let listed = repo.kardwt_ok(&repo.base, &["shell", "cards"]);
    assert_eq!(listed, "3\n10\nb-2\n");
    let inside = repo.kardwt_ok(&repo.card_path("10"), &["shell", "cards"]);
    assert_eq!(inside, listed);
    let (out, counts) = repo.syscall_counts(
        BIN,
        &repo.base,
        &["shell", "cards"],
        &["clone", "clone3", "fork", "vfork", "execve"],
        false,
    );
    out.expect_code(0);
    assert_eq!(out.stdout, listed, "{out}");
    // Its own execve only: no child started.
    let started: u32 = ["clone", "clone3", "fork", "vfork"]
        .iter()
        .filter_map(|s| counts.get(*s))
        .sum();
    assert_eq!(started, 0, "{counts:?}");
    assert_eq!(counts.get("execve"), Some(&1), "{counts:?}");
}
