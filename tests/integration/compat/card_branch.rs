//! A plain `git worktree add -b card/<not an id>`: the branch cannot be a card's, so the hook
//! leaves the tree as git made it, unrecorded, and `git worktree add` succeeds.
use super::*;

#[test]
fn a_branch_under_card_that_names_no_card_keeps_its_tree_and_succeeds() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let path = repo.sibling("login");
    let out = repo.worktree_add(&["-b", "card/ui/login", path.to_str().unwrap()]);
    out.expect_code(0);
    assert!(
        !out.stderr.contains("kardwt"),
        "spoke through a pipe:\n{out}"
    );
    assert_intact(&repo, &path);
    assert!(repo.is_registered(&path));
    assert!(repo.branch_exists("card/ui/login"));
    assert!(!repo.record_path(&path).exists(), "it was recorded");
    let notes = noop_notes(&repo.common_dir());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("\"ui/login\" is not a valid card id"),
        "{notes:?}"
    );
}

#[test]
fn a_branch_under_card_that_names_a_card_is_still_seeded_as_that_card() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let path = repo.sibling("seven");
    repo.worktree_add(&["-b", "card/7", path.to_str().unwrap()])
        .expect_code(0);
    assert_eq!(repo.record(&path)["card"].as_str(), Some("7"));
}
