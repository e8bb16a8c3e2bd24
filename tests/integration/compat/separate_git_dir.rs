//! A repository whose git dir is elsewhere (`git clone --separate-git-dir`): git records its
//! main worktree nowhere a linked worktree can read, so kardwt remembers it from the main
//! checkout. Cloning with the shared shims succeeds; a plain `git worktree add` from the main
//! checkout or a linked one is seeded; a card made there verifies, pushes and is removed.
use super::*;

/// A clone of origin at `checkout` whose git dir is `<tmp>/elsewhere.git`, with the shared
/// shims reaching it (the clone itself runs post-checkout); returns (checkout, git dir).
fn clone_elsewhere(repo: &TestRepo) -> (PathBuf, PathBuf) {
    shared_hooks(repo);
    let git_dir = repo.sibling("elsewhere.git");
    let main = repo.sibling("checkout");
    let origin = repo.origin.to_str().unwrap();
    let out = repo.git_output(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--separate-git-dir",
            git_dir.to_str().unwrap(),
            origin,
            main.to_str().unwrap(),
        ],
    );
    out.expect_code(0);
    assert_intact(repo, &main);
    (main, git_dir)
}

#[test]
fn a_separate_git_dir_clone_succeeds_and_its_worktree_adds_are_seeded() {
    let repo = TestRepo::new();
    let (main, git_dir) = clone_elsewhere(&repo);
    let linked = repo.sibling("linked");
    let out = repo.git_output(&main, &["worktree", "add", linked.to_str().unwrap()]);
    out.expect_code(0);
    assert_intact(&repo, &linked);
    assert!(git_dir.join("worktrees/linked/kardwt.toml").is_file());
    // From the linked worktree, whose repository names no main worktree.
    let nested = repo.sibling("from-linked");
    let out = repo.git_output(&linked, &["worktree", "add", nested.to_str().unwrap()]);
    out.expect_code(0);
    assert_intact(&repo, &nested);
    assert!(git_dir.join("worktrees/from-linked/kardwt.toml").is_file());
    repo.kardwt(&nested, &["verify"]).expect_code(0);
}

#[test]
fn a_card_of_a_separate_git_dir_repository_verifies_pushes_and_is_removed() {
    let repo = TestRepo::new();
    let (main, _) = clone_elsewhere(&repo);
    let out = repo.kardwt(&main, &["add", "4"]);
    out.expect_code(0);
    let card = PathBuf::from(out.stdout.trim());
    assert_eq!(card, repo.sibling("checkout.worktrees/card-4"));
    repo.kardwt(&card, &["verify"]).expect_code(0);
    std::fs::write(card.join("work.txt"), "work\n").unwrap();
    repo.git(&card, &["add", "work.txt"]);
    repo.git(&card, &["commit", "--quiet", "-m", "work"]);
    let out = repo.git_output(
        &card,
        &["push", "--quiet", "origin", "HEAD:refs/heads/card-4"],
    );
    out.expect_code(0);
    let pushed = repo.git(&repo.origin, &["rev-parse", "refs/heads/card-4"]);
    assert_eq!(pushed, repo.git(&card, &["rev-parse", "HEAD"]));
    repo.kardwt(&main, &["remove", "4"]).expect_code(0);
    assert!(!card.exists());
}
