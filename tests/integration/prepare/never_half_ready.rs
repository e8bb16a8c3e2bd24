//! No half-made tree is ever recorded `ready` (`prepare --path`
//! and `adopt` refuse a tree whose checkout never ran, is still `initializing`, or misses
//! tracked files, write nothing, and name the repair), and the post-checkout hook never writes
//! a record it would reject: a tree on a `card/` branch that names no card id is none of
//! kardwt's and stays as git made it, unrecorded; on a second claim on a card it removes the
//! new worktree, keeps the branch, fails `git worktree add`, and the card's own worktree stays
//! verified, reusable and removable; `prepare --path` never records a second
//! claim either. `add` clears the empty directory its own killed run left before git wrote
//! `.git`, and nothing else. (Real kills during a checkout: `add/killed.rs`.)
use std::path::PathBuf;
use std::time::Duration;

use crate::support::{line, snapshot, yaml_str, TestRepo};

/// Every worktree directory git knows, besides the base.
fn linked_paths(repo: &TestRepo) -> Vec<PathBuf> {
    repo.worktrees()
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| *p != repo.base)
        .collect()
}

/// No admin dir holds a kardwt record.
#[track_caller]
fn assert_no_record_anywhere(repo: &TestRepo, what: &str) {
    let dir = repo.common_dir().join("worktrees");
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        assert!(
            !e.path().join("kardwt.toml").exists(),
            "{what}: a record was written in {}",
            e.path().display()
        );
    }
}

/// The line of `stderr` from the first occurrence of `needle` on.
#[track_caller]
fn advice(stderr: &str, needle: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.find(needle).map(|i| l[i..].to_owned()))
        .unwrap_or_else(|| panic!("no advice containing {needle:?} in:\n{stderr}"))
}

/// Run a shell line (the advice as printed) in the base.
#[track_caller]
fn follow(repo: &TestRepo, line: &str) {
    let out = repo
        .spawn("sh", &repo.base, &["-c", line])
        .wait(Duration::from_secs(60));
    assert_eq!(out.code, 0, "following {line:?} failed:\n{out}");
}

#[test]
fn the_hook_leaves_a_card_branch_with_an_invalid_id_as_git_made_it_unrecorded() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let base_before = repo.snapshot_base();

    let out = repo.worktree_add(&["-b", "card/-x", "../w1"]);
    out.expect_code(0);
    let w1 = repo.sibling("w1");
    assert!(
        w1.join(".git").is_file(),
        "the tree git made is gone:\n{out}"
    );
    assert_eq!(linked_paths(&repo), vec![w1.clone()]);
    assert!(repo.branch_exists("card/-x"), "the branch is gone");
    assert_no_record_anywhere(&repo, "after the add");
    assert!(repo.snapshot_base() == base_before, "the base changed");
    // Nothing kardwt would reject is recorded for list to trip over.
    repo.kardwt_ok(&repo.base, &["list"]);

    // Another branch is seeded as before.
    repo.worktree_add(&["-b", "feature/x", "../w2"])
        .expect_code(0);
    let w2 = repo.sibling("w2");
    repo.kardwt_ok(&repo.base, &["verify", "--path", w2.to_str().unwrap()]);
}

#[test]
fn the_hook_never_takes_a_card_away_from_its_healthy_worktree() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let card_x = repo.add_card("x");
    let tree_before = snapshot(&card_x);
    let record_before = std::fs::read(repo.record_path(&card_x)).unwrap();

    let out = repo.worktree_add(&["-f", "../dup", "card/x"]);
    assert_ne!(
        out.code, 0,
        "git worktree add -f of card/x succeeded:\n{out}"
    );
    assert!(
        out.stderr.contains("card x is already claimed")
            && out.stderr.contains(card_x.to_str().unwrap()),
        "the refusal does not name card x's worktree:\n{out}"
    );
    let dup = repo.sibling("dup");
    assert!(!dup.exists(), "the refused worktree is still there:\n{out}");
    assert_eq!(linked_paths(&repo), vec![card_x.clone()]);
    assert!(repo.branch_exists("card/x"));
    assert_eq!(snapshot(&card_x), tree_before, "card x's tree changed");
    assert_eq!(
        std::fs::read(repo.record_path(&card_x)).unwrap(),
        record_before,
        "card x's record changed"
    );

    // Card x still verifies, is reused by add, and can be removed.
    repo.kardwt_ok(&repo.base, &["verify", "x"]);
    let out = repo.kardwt(&repo.base, &["add", "x"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&card_x), "{out}");
    repo.kardwt_ok(&repo.base, &["remove", "x"]);
    assert!(!card_x.exists(), "remove x left the tree");
}

#[test]
fn prepare_and_adopt_refuse_a_tree_whose_checkout_never_ran() {
    let repo = TestRepo::new();
    let half = repo.sibling("half");
    // The rules file declares the adoption, so only the tree's state can refuse it.
    repo.write_rules(&format!(
        "worktree:\n  adoptions:\n    - card: \"h1\"\n      path: {}\n      common_dir: {}\n      branch: feature/half\n",
        yaml_str(&half),
        yaml_str(&repo.common_dir()),
    ));
    repo.worktree_add_unhooked(&["--no-checkout", "-b", "feature/half", "../half"]);
    let before = snapshot(&half);
    let admin_before = snapshot(&repo.admin_dir(&half));
    let p = half.to_str().unwrap();

    for args in [
        vec!["prepare", "--path", p],
        vec!["adopt", "h1", "--path", p],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(3);
        crate::support::pinned(&repo).bind(|| {
            insta::assert_snapshot!(
                format!("{}_checkout_never_ran", args[0]),
                format!("exit {}\n{}", out.code, out.stderr)
            )
        });
        assert_eq!(out.stdout, "", "{out}");
        assert_eq!(snapshot(&half), before, "{args:?} changed the tree");
        assert_eq!(
            snapshot(&repo.admin_dir(&half)),
            admin_before,
            "{args:?} wrote into the admin dir"
        );
    }
    repo.kardwt(&repo.base, &["verify", "--path", p])
        .expect_code(1);

    // The named repair works: the tree goes, the branch stays, and a new one can be made.
    let out = repo.kardwt(&repo.base, &["prepare", "--path", p]);
    follow(&repo, &advice(&out.stderr, "git worktree remove"));
    assert!(!half.exists());
    assert!(repo.branch_exists("feature/half"));
}

#[test]
fn prepare_refuses_a_tree_git_still_marks_initializing() {
    let repo = TestRepo::new();
    repo.add_unhooked_worktree("../init", "feature/init");
    let wt = repo.sibling("init");
    // What a killed `git worktree add` leaves: git's own lock with its reason `initializing`.
    repo.git(
        &repo.base,
        &["worktree", "lock", "--reason", "initializing", "../init"],
    );
    let p = wt.to_str().unwrap();
    let out = repo.kardwt(&repo.base, &["prepare", "--path", p]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_initializing",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(!repo.record_path(&wt).exists(), "a record was written");
    repo.kardwt(&repo.base, &["verify", "--path", p])
        .expect_code(1);
}

#[test]
fn prepare_refuses_missing_tracked_files_and_its_repair_keeps_the_users_edits() {
    let repo = TestRepo::new();
    repo.add_unhooked_worktree("../gaps", "feature/gaps");
    let wt = repo.sibling("gaps");
    std::fs::remove_file(wt.join("src/lib.txt")).unwrap();
    std::fs::remove_file(wt.join("README.md")).unwrap();
    std::fs::write(wt.join(".gitignore"), ".env\n.env.*\nmine\n").unwrap();
    std::fs::write(wt.join("notes.txt"), "untracked\n").unwrap();
    let before = snapshot(&wt);
    let p = wt.to_str().unwrap();

    let out = repo.kardwt(&repo.base, &["prepare", "--path", p]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_missing_tracked_files",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert_eq!(
        snapshot(&wt),
        before,
        "the refused prepare changed the tree"
    );
    assert!(!repo.record_path(&wt).exists(), "a record was written");

    follow(&repo, &advice(&out.stderr, "git -C"));
    assert_eq!(
        std::fs::read_to_string(wt.join("src/lib.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(wt.join("README.md").is_file());
    assert_eq!(
        std::fs::read_to_string(wt.join(".gitignore")).unwrap(),
        ".env\n.env.*\nmine\n",
        "the repair overwrote the user's edit"
    );
    assert!(wt.join("notes.txt").is_file());
    repo.kardwt_ok(&repo.base, &["prepare", "--path", p]);
    repo.kardwt_ok(&repo.base, &["verify", "--path", p]);
}

/// What a SIGKILL of `add` leaves in the instant between git creating the card's directory and
/// its `.git` file (too short to hit with a real kill, so built by hand as git leaves it): an
/// empty directory, git's entry naming it still locked `initializing`, and, when `intent`,
/// kardwt's intent naming the path.
fn bare_start(repo: &TestRepo, card: &str, intent: bool) -> (PathBuf, PathBuf) {
    let path = repo.card_path(card);
    std::fs::create_dir_all(&path).unwrap();
    let admin = repo
        .common_dir()
        .join("worktrees")
        .join(format!("card-{card}"));
    std::fs::create_dir_all(&admin).unwrap();
    let dot_git = format!("{}\n", path.join(".git").display());
    std::fs::write(admin.join("gitdir"), dot_git).unwrap();
    std::fs::write(admin.join("locked"), "initializing").unwrap();
    std::fs::write(admin.join("commondir"), "../..\n").unwrap();
    std::fs::write(admin.join("HEAD"), format!("{}\n", "0".repeat(40))).unwrap();
    if intent {
        let claims = repo.common_dir().join("kardwt/claims");
        std::fs::create_dir_all(&claims).unwrap();
        let claim = format!(
            "schema = 1\ncard = \"{card}\"\npath = \"{}\"\nstate = \"intent\"\ncreated_at = \"2026-01-01T00:00:00Z\"\nupdated_at = \"2026-01-01T00:00:00Z\"\n",
            path.display()
        );
        std::fs::write(claims.join(card), claim).unwrap();
    }
    (path, admin)
}

#[test]
fn add_clears_the_empty_start_its_own_killed_run_left_and_nothing_else() {
    let repo = TestRepo::new();

    // Its own (the intent names the path): removed and created again.
    let (path, _) = bare_start(&repo, "k3", true);
    let out = repo.kardwt(&repo.base, &["add", "k3"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&path), "{out}");
    repo.kardwt_ok(&repo.base, &["verify", "k3"]);
    assert!(path.join("README.md").is_file());
    let claim = std::fs::read_to_string(repo.common_dir().join("kardwt/claims/k3")).unwrap();
    assert!(claim.contains("state = \"complete\""), "{claim}");
    assert_eq!(linked_paths(&repo), vec![path.clone()]);

    // Without the intent, or with anything in the directory, it is not kardwt's: refused,
    // untouched.
    let (bare, bare_admin) = bare_start(&repo, "k4", false);
    let (full, full_admin) = bare_start(&repo, "k5", true);
    std::fs::write(full.join("mine.txt"), "user work\n").unwrap();
    for (card, dir, admin) in [("k4", &bare, &bare_admin), ("k5", &full, &full_admin)] {
        let before = (snapshot(dir), snapshot(admin));
        let out = repo.kardwt(&repo.base, &["add", card]);
        out.expect_code(3);
        crate::support::pinned(&repo).bind(|| {
            insta::assert_snapshot!(
                format!("add_empty_start_{card}"),
                format!("exit {}\n{}", out.code, out.stderr)
            )
        });
        assert_eq!(
            (snapshot(dir), snapshot(admin)),
            before,
            "add {card} touched it"
        );
    }
}

#[test]
fn prepare_never_records_a_second_claim_on_a_card() {
    let repo = TestRepo::new();
    let card_x = repo.add_card("x");
    // A second tree of branch card/x, made with every hook bypassed.
    repo.worktree_add_unhooked(&["-f", "../dup", "card/x"]);
    let dup = repo.sibling("dup");
    let out = repo.kardwt(&repo.base, &["prepare", "--path", dup.to_str().unwrap()]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_second_claim",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(
        !repo.record_path(&dup).exists(),
        "a second claim was written"
    );
    repo.kardwt_ok(&repo.base, &["verify", "x"]);
    let out = repo.kardwt(&repo.base, &["add", "x"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&card_x), "{out}");
}

#[test]
fn the_hook_refuses_a_second_claim_at_once_while_the_card_is_busy() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let card_x = repo.add_card("x");
    // Card x is busy (an add preparing it holds its lock for as long as an hour may last).
    let lock = repo.common_dir().join("kardwt/cards/x.lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lock)
        .unwrap();
    let mut held = fd_lock::RwLock::new(file);
    let _guard = held.write().unwrap();

    let out = repo
        .spawn(
            "git",
            &repo.base,
            &["worktree", "add", "-f", "../dup", "card/x"],
        )
        .wait(Duration::from_secs(60));
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("card x is already claimed"), "{out}");
    assert!(!repo.sibling("dup").exists(), "{out}");
    assert_eq!(linked_paths(&repo), vec![card_x]);
}

/// The checkout check lists each directory once: a whole directory gone, and a directory
/// standing where a tracked file belongs, are both missing files.
#[test]
fn a_gone_directory_and_a_directory_in_a_files_place_are_missing_files() {
    let repo = TestRepo::new();
    repo.add_unhooked_worktree("../holes", "feature/holes");
    let wt = repo.sibling("holes");
    std::fs::remove_dir_all(wt.join("src")).unwrap();
    std::fs::remove_file(wt.join("README.md")).unwrap();
    std::fs::create_dir(wt.join("README.md")).unwrap();
    let before = snapshot(&wt);
    let out = repo.kardwt(&repo.base, &["prepare", "--path", wt.to_str().unwrap()]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_gone_directory",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert_eq!(snapshot(&wt), before);
}
