//! The one-line notice of a seeded plain `git worktree add` is for a person at a terminal:
//! `--quiet`, a pipe or a script get git's own output only, and the tree is seeded all the same.
use super::*;

#[test]
fn a_seeded_worktree_add_through_a_pipe_prints_nothing_of_kardwts_even_with_quiet() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    repo.install_hooks();
    for (name, quiet) in [("quiet", true), ("piped", false)] {
        let path = repo.sibling(name);
        let mut args = vec![path.to_str().unwrap(), "-b", name];
        if quiet {
            args.insert(0, "--quiet");
        }
        let out = repo.worktree_add(&args);
        out.expect_code(0);
        assert!(!out.stderr.contains("kardwt"), "kardwt spoke:\n{out}");
        if quiet {
            assert_eq!(out.stderr, "", "git --quiet is not quiet:\n{out}");
        }
        assert_eq!(repo.record(&path)["state"].as_str(), Some("ready"));
    }
}
