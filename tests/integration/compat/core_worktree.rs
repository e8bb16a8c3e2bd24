//! A repository whose checkout `core.worktree` names: the dotfiles layout (a git dir with
//! `core.worktree` set and no `.git` in the checkout, git run with `GIT_DIR`) and a checkout
//! whose `.git` file names a git dir that sets `core.worktree`. install-hooks, add, the seeding
//! of a plain `git worktree add`, verify, list, pre-push and remove work in both; where only
//! `GIT_WORK_TREE` names the checkout, a plain `git worktree add` is left as git made it and
//! `verify` refuses naming `core.worktree`.
use std::ffi::OsStr;

use super::*;

/// A checkout tied to its git dir by `core.worktree`.
struct Tied {
    checkout: PathBuf,
    git_dir: PathBuf,
    /// `GIT_DIR` names the git dir to every git and kardwt run in the checkout (it holds no
    /// `.git`).
    dotfiles: bool,
}

impl Tied {
    /// What git run in the checkout needs: `GIT_DIR` where it holds no `.git`.
    fn env(&self) -> Vec<(&'static str, &OsStr)> {
        match self.dotfiles {
            true => vec![("GIT_DIR", self.git_dir.as_os_str())],
            false => Vec::new(),
        }
    }

    /// `program args…` in the checkout with [`Tied::env`]. Does not assert.
    fn run(&self, repo: &TestRepo, program: &str, args: &[&str]) -> Output {
        repo.spawn_with_env(program, &self.checkout, args, &self.env())
            .wait(COMMAND_TIMEOUT)
    }
}

/// The dotfiles layout: `git clone --bare origin <tmp>/dot.git` made non-bare with
/// `core.worktree` naming `<tmp>/dothome`, checked out there with `GIT_DIR`.
fn dotfiles(repo: &TestRepo) -> Tied {
    let git_dir = repo.sibling("dot.git");
    let checkout = repo.sibling("dothome");
    std::fs::create_dir(&checkout).unwrap();
    let origin = repo.origin.to_str().unwrap();
    let dir = git_dir.to_str().unwrap();
    repo.git(&repo.tmp, &["clone", "--quiet", "--bare", origin, dir]);
    repo.git(&git_dir, &["config", "core.bare", "false"]);
    let tree = checkout.to_str().unwrap();
    repo.git(&git_dir, &["config", "core.worktree", tree]);
    let fetch = "+refs/heads/*:refs/remotes/origin/*";
    repo.git(&git_dir, &["config", "remote.origin.fetch", fetch]);
    let tied = Tied {
        checkout,
        git_dir,
        dotfiles: true,
    };
    tied.run(repo, "git", &["reset", "--quiet", "--hard"])
        .expect_code(0);
    assert!(!tied.checkout.join(".git").exists());
    tied
}

/// `git clone --separate-git-dir <tmp>/linked.git origin <tmp>/co`, with `core.worktree`
/// naming the checkout its `.git` file is in.
fn gitfile(repo: &TestRepo) -> Tied {
    let git_dir = repo.sibling("linked.git");
    let checkout = repo.sibling("co");
    let origin = repo.origin.to_str().unwrap();
    let (dir, tree) = (git_dir.to_str().unwrap(), checkout.to_str().unwrap());
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", "--separate-git-dir", dir, origin, tree],
    );
    repo.git(&git_dir, &["config", "core.worktree", tree]);
    Tied {
        checkout,
        git_dir,
        dotfiles: false,
    }
}

/// The event log's `push-checked` lines of `git_dir`.
fn pushes_checked(git_dir: &Path) -> usize {
    let text = std::fs::read_to_string(git_dir.join("kardwt/events.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("\"event\":\"push-checked\""))
        .count()
}

#[test]
fn a_core_worktree_repository_works_end_to_end() {
    for layout in ["dotfiles", "gitfile"] {
        let repo = TestRepo::new();
        let tied = match layout {
            "dotfiles" => dotfiles(&repo),
            _ => gitfile(&repo),
        };
        let files_before = files_of(&tied.checkout);
        let out = tied.run(&repo, "git", &["kardwt", "install-hooks"]);
        out.expect_code(0);
        assert!(
            tied.git_dir.join("hooks/post-checkout").is_file(),
            "{layout}"
        );
        assert!(tied.git_dir.join("hooks/pre-push").is_file(), "{layout}");

        let out = tied.run(&repo, "git", &["kardwt", "add", "4"]);
        out.expect_code(0);
        let name = tied.checkout.file_name().unwrap().to_str().unwrap();
        let card = repo.sibling(&format!("{name}.worktrees/card-4"));
        assert_eq!(out.stdout, line(&card), "{layout}: {out}");
        assert_intact(&repo, &card);
        repo.kardwt(&card, &["verify"]).expect_code(0);

        // A plain `git worktree add` from the checkout is seeded.
        let plain = repo.sibling("plain");
        let out = tied.run(&repo, "git", &["worktree", "add", plain.to_str().unwrap()]);
        out.expect_code(0);
        assert_intact(&repo, &plain);
        assert!(
            tied.git_dir.join("worktrees/plain/kardwt.toml").is_file(),
            "{layout}: the plain worktree add was not seeded"
        );
        repo.kardwt(&plain, &["verify"]).expect_code(0);

        let out = tied.run(&repo, "git", &["kardwt", "list"]);
        out.expect_code(0);
        let rows: Vec<&str> = out.stdout.lines().skip(1).collect();
        assert_eq!(rows.len(), 2, "{layout}: {out}");
        assert!(
            rows[0].starts_with("4 ") && rows[0].contains("ready"),
            "{out}"
        );
        assert!(rows[1].starts_with("plain ") && rows[1].contains("ready"));

        // pre-push checks a push from the card.
        std::fs::write(card.join("work.txt"), "work\n").unwrap();
        repo.git(&card, &["add", "work.txt"]);
        repo.git(&card, &["commit", "--quiet", "-m", "work"]);
        let before = pushes_checked(&tied.git_dir);
        let to = "HEAD:refs/heads/card-4";
        repo.git_output(&card, &["push", "--quiet", "origin", to])
            .expect_code(0);
        assert_eq!(pushes_checked(&tied.git_dir), before + 1, "{layout}");
        let pushed = repo.git(&repo.origin, &["rev-parse", "refs/heads/card-4"]);
        assert_eq!(pushed, repo.git(&card, &["rev-parse", "HEAD"]));

        let out = tied.run(&repo, "git", &["kardwt", "remove", "4"]);
        out.expect_code(0);
        assert!(!card.exists(), "{layout}: {out}");
        // The checkout itself is as it was.
        assert_eq!(files_of(&tied.checkout), files_before, "{layout}");
        let status = tied.run(&repo, "git", &["status", "--porcelain"]);
        assert_eq!(status.stdout, "", "{layout}: {status}");
    }
}

#[test]
fn a_checkout_named_by_git_work_tree_alone_leaves_git_as_it_was_and_verify_names_core_worktree() {
    let repo = TestRepo::new();
    let tied = dotfiles(&repo);
    repo.git(&tied.git_dir, &["config", "--unset", "core.worktree"]);
    shared_hooks(&repo);
    let env = [
        ("GIT_DIR", tied.git_dir.as_os_str()),
        ("GIT_WORK_TREE", tied.checkout.as_os_str()),
    ];
    let plain = repo.sibling("plain");
    let out = repo
        .spawn_with_env(
            "git",
            &tied.checkout,
            &["worktree", "add", plain.to_str().unwrap()],
            &env,
        )
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert_intact(&repo, &plain);
    assert!(!tied.git_dir.join("worktrees/plain/kardwt.toml").exists());
    let notes = noop_notes(&tied.git_dir);
    assert!(
        notes.iter().any(|n| n.contains("core.worktree")),
        "{notes:?}"
    );
    let out = repo.kardwt(&plain, &["verify"]);
    out.expect_code(2);
    assert!(out.stderr.contains("core.worktree"), "{out}");
    assert_intact(&repo, &plain);
}
