//! Release-first removal: `git kardwt remove` stops the processes whose cwd is
//! inside the tree, runs the cleanup hook while the directory still exists, then removes the
//! tree; a dirty tree is refused before anything is released; a failing cleanup hook exits 4
//! and keeps the tree; `--delete-branch` deletes only a merged branch unless `--force`; the
//! event log still tells the card's story after the record is gone.
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use crate::support::cleanup::*;
use crate::support::{pinned, pinned_case, TestRepo};

/// The sleep is gone, the hook saw the tree, the tree is unregistered and gone,
/// the branch remains, the base is untouched; `--json` reports every step.
#[test]
fn remove_releases_processes_runs_cleanup_while_present_then_removes_the_tree() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let base = repo.snapshot_base();

    let out = repo.kardwt(&repo.base, &["remove", "42", "--json"]);
    out.expect_code(0);

    // The process was stopped by a signal (SIGTERM, or SIGKILL after the grace).
    let status = sleeper
        .ended(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("sleep still running after remove:\n{out}"));
    assert!(
        matches!(status.signal(), Some(15) | Some(9)),
        "sleep was not killed by a signal: {status:?}\n{out}"
    );
    // The cleanup hook ran once, as `remove`/`cleanup`, in the tree, while it existed.
    assert_eq!(
        cleanup_lines(&repo),
        vec![
            format!("42 remove cleanup {}", wt.display()),
            "present".to_owned()
        ],
        "{out}"
    );
    // The tree is unregistered and gone, its branch stays, the base is untouched.
    assert!(!wt.exists(), "{} still exists:\n{out}", wt.display());
    assert!(!repo.is_registered(&wt), "still registered:\n{out}");
    assert!(
        repo.branch_exists("card/42"),
        "the branch was deleted:\n{out}"
    );
    assert_eq!(repo.snapshot_base(), base, "the base changed");
    // The prepare hook did not run again for the removal.
    assert_eq!(repo.prepare_runs(), vec!["42 create prepare".to_owned()]);

    // --json: {path, card, steps:[{step, ok, detail}]}.
    let v = out.json();
    assert_eq!(v["path"], wt.to_str().unwrap(), "{out}");
    assert_eq!(v["card"], "42", "{out}");
    let steps = v["steps"].as_array().expect("steps is an array");
    for s in steps {
        assert!(s["step"].is_string() && s["ok"].is_boolean() && s["detail"].is_string());
    }
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| n.contains(name))
            .unwrap_or_else(|| panic!("no {name} step in {names:?}"))
    };
    assert!(
        at("process") < at("cleanup") && at("cleanup") < at("worktree"),
        "steps out of order: {names:?}"
    );
    let processes = &steps[at("process")];
    assert!(
        processes["detail"]
            .as_str()
            .unwrap()
            .contains(&sleeper.child.id().to_string()),
        "the sleep's pid is not in the processes step: {processes}"
    );
    let names_logged = event_names(&repo, "42");
    assert!(
        names_logged.iter().any(|e| e == "released"),
        "{names_logged:?}"
    );
}

/// The caller and its ancestors are spared: `remove` run from inside the tree (so `git` and
/// kardwt both have their cwd in it) still completes.
#[test]
fn remove_from_inside_the_tree_spares_the_caller() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    let mut sleeper = Sleeper::start(&repo, &wt);
    let out = repo.kardwt(&wt.join("src"), &["remove", "42", "--grace", "1"]);
    out.expect_code(0);
    assert!(
        sleeper.ended(Duration::from_secs(10)).is_some(),
        "sleep survived:\n{out}"
    );
    assert!(!wt.exists(), "{out}");
    assert!(!repo.is_registered(&wt), "{out}");
}

/// An untracked file or a tracked change is refused before anything
/// is released: non-zero exit, the file stays, the process lives, the cleanup hook never ran.
/// `--force` then removes it anyway.
#[test]
fn a_dirty_tree_is_refused_before_anything_is_released() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    let mut sleeper = Sleeper::start(&repo, &wt);
    let admin = repo.admin_dir(&wt);

    std::fs::write(wt.join("scratch.txt"), "work in progress\n").unwrap();
    let untracked = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    untracked.expect_code(1);
    let out = &untracked;
    assert_eq!(
        std::fs::read_to_string(wt.join("scratch.txt")).unwrap(),
        "work in progress\n"
    );
    assert!(sleeper.alive(), "the process was reaped:\n{out}");
    assert_eq!(
        cleanup_lines(&repo),
        Vec::<String>::new(),
        "cleanup ran:\n{out}"
    );
    assert!(repo.is_registered(&wt) && admin.join("kardwt.toml").is_file());
    let events = event_names(&repo, "42");
    assert!(
        !events.iter().any(|e| e == "released" || e == "removed"),
        "{events:?}"
    );

    // A tracked change alone is refused the same way.
    std::fs::remove_file(wt.join("scratch.txt")).unwrap();
    std::fs::write(wt.join("src/lib.txt"), "edited\n").unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(1);
    assert!(sleeper.alive(), "the process was reaped:\n{out}");
    assert_eq!(
        cleanup_lines(&repo),
        Vec::<String>::new(),
        "cleanup ran:\n{out}"
    );
    assert!(wt.join("src/lib.txt").is_file() && repo.is_registered(&wt));
    // Each names what it found, and that nothing was released.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_dirty_before_release",
            pinned_case("untracked", &untracked) + &pinned_case("tracked change", &out)
        )
    });

    // --force discards the change and releases everything.
    let out = repo.kardwt(&repo.base, &["remove", "42", "--force", "--grace", "1"]);
    out.expect_code(0);
    assert!(sleeper.ended(Duration::from_secs(10)).is_some(), "{out}");
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert_eq!(
        cleanup_lines(&repo).last().map(String::as_str),
        Some("present")
    );
}

/// A cleanup hook that exits 1 makes `remove` exit 4 with the tree
/// still there and registered; `--force` removes it despite the hook. Its processes were
/// released and the hook ran (half), so the record says `failed` (written before the
/// release), never `ready`.
#[test]
fn a_failing_cleanup_hook_exits_4_and_keeps_the_tree() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(
        &repo,
        "echo 'container still running' >&2\nexit 1",
    ));
    let wt = repo.add_card("42");
    let admin = repo.admin_dir(&wt);

    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(4);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_cleanup_hook_failed",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert_eq!(cleanup_lines(&repo).len(), 2, "the hook did not run once");
    assert!(wt.join("src/lib.txt").is_file(), "the tree is gone:\n{out}");
    assert!(repo.is_registered(&wt), "unregistered:\n{out}");
    assert!(admin.join("kardwt.toml").is_file(), "the record is gone");
    let rec = repo.record(&wt);
    assert_eq!(rec["state"].as_str(), Some("failed"), "{rec:?}");
    assert_eq!(rec["reason"].as_str(), Some("remove"), "{rec:?}");
    let verified = repo.kardwt(&repo.base, &["verify", "42"]);
    assert!(verified.stdout.contains("state failed"), "{verified}");

    let out = repo.kardwt(&repo.base, &["remove", "42", "--force"]);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
}

/// `--delete-branch` deletes a merged branch, keeps an unmerged one, and deletes
/// it with `--force` once pushed; without `--delete-branch` nothing is deleted.
#[test]
fn delete_branch_deletes_only_a_merged_branch_unless_forced() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let commit_in = |wt: &Path| {
        std::fs::write(wt.join("feature.txt"), "new work\n").unwrap();
        repo.git(wt, &["add", "feature.txt"]);
        repo.git(wt, &["commit", "--quiet", "-m", "new work"]);
    };

    // Merged (no commits of its own): deleted.
    repo.add_card("41");
    let out = repo.kardwt(&repo.base, &["remove", "41", "--delete-branch", "--json"]);
    out.expect_code(0);
    assert!(!repo.branch_exists("card/41"), "merged branch kept:\n{out}");

    // Unmerged: the tree goes, the branch stays.
    let wt = repo.add_card("42");
    commit_in(&wt);
    let tip = repo.git(&wt, &["rev-parse", "HEAD"]);
    let out = repo.kardwt(&repo.base, &["remove", "42", "--delete-branch", "--json"]);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert!(
        repo.branch_exists("card/42"),
        "unmerged branch deleted:\n{out}"
    );
    assert_eq!(repo.git(&repo.base, &["rev-parse", "card/42"]), tip);
    let branch_step = out.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "branch")
        .cloned()
        .unwrap_or_else(|| panic!("no branch step:\n{out}"));
    assert_eq!(branch_step["ok"], false, "{out}");

    // Unmerged with --force, its commit pushed: deleted (unpushed it would be lost, and is
    // kept: remove/delete_branch.rs).
    let wt = repo.add_card("43");
    commit_in(&wt);
    repo.git(&wt, &["push", "--quiet", "origin", "card/43"]);
    let out = repo.kardwt(&repo.base, &["remove", "43", "--delete-branch", "--force"]);
    out.expect_code(0);
    assert!(
        !repo.branch_exists("card/43"),
        "forced delete kept it:\n{out}"
    );

    // Without --delete-branch even a merged branch is kept (--force alone does not delete).
    repo.add_card("44");
    repo.kardwt(&repo.base, &["remove", "44", "--force"])
        .expect_code(0);
    assert!(repo.branch_exists("card/44"));
}

/// After `remove 42`, `log 42 --json` still lists its `created`, `prepared` and
/// `removed` events, in that order, each with the documented keys.
#[test]
fn the_log_tells_a_removed_cards_story() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    repo.add_card("7");
    repo.kardwt_ok(&repo.base, &["remove", "42"]);
    assert!(!wt.exists());

    let events = repo.events(Some("42"));
    for e in &events {
        for key in ["time", "event", "card", "path", "outcome", "duration_ms"] {
            assert!(e.get(key).is_some(), "event without {key}: {e}");
        }
        assert_eq!(e["card"], "42", "log 42 lists another card: {e}");
    }
    let names = event_names(&repo, "42");
    let at = |name: &str| {
        names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no {name} event in {names:?}"))
    };
    assert!(
        at("created") < at("prepared") && at("prepared") < at("removed"),
        "{names:?}"
    );
    assert!(at("released") < at("removed"), "{names:?}");
    let removed = &events[at("removed")];
    assert_eq!(removed["path"], wt.to_str().unwrap(), "{removed}");
}

/// remove verifies first: an unseeded worktree and a worktree whose record was edited are
/// refused with exit 3 and nothing is released; an absent card exits 1.
#[test]
fn remove_refuses_what_does_not_verify_before_releasing_anything() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    repo.add_unhooked_worktree("../plain", "feature/plain");
    let plain = repo.sibling("plain");
    let mut in_plain = Sleeper::start(&repo, &plain);
    let out = repo.kardwt(&repo.base, &["remove", "--path", plain.to_str().unwrap()]);
    out.expect_code(3);
    assert!(
        in_plain.alive() && plain.is_dir() && repo.is_registered(&plain),
        "{out}"
    );

    let wt = repo.add_card("42");
    let mut in_card = Sleeper::start(&repo, &wt);
    repo.edit_record(&wt, "card", "99");
    for args in [
        vec!["remove", "--path", wt.to_str().unwrap()],
        vec!["remove", "--path", wt.to_str().unwrap(), "--force"],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(3);
        assert!(
            in_card.alive() && wt.is_dir() && repo.is_registered(&wt),
            "{out}"
        );
    }
    assert_eq!(cleanup_lines(&repo), Vec::<String>::new(), "cleanup ran");

    let out = repo.kardwt(&repo.base, &["remove", "77"]);
    out.expect_code(1);
}

/// kardwt's own links (shared `.env`, the skills fallback) do not make the tree dirty, are
/// unlinked before `git worktree remove`, and what they point at in the base survives.
#[test]
fn kardwts_own_links_are_not_dirt_and_their_targets_survive() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::create_dir_all(repo.base.join(".claude/skills")).unwrap();
    std::fs::write(repo.base.join(".claude/skills/base.md"), "skill\n").unwrap();
    let script = repo.write_prepare("");
    repo.write_rules(&repo.rules_sharing(&script));
    let wt = repo.add_card("42");
    assert!(wt
        .join(".env")
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink()));
    assert!(wt
        .join(".claude/skills")
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink()));
    let base = repo.snapshot_base();

    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert_eq!(repo.snapshot_base(), base, "the base changed");
    assert_eq!(
        std::fs::read_to_string(repo.base.join(".env")).unwrap(),
        "TOKEN=base\n"
    );
    assert!(repo.base.join(".claude/skills/base.md").is_file());
}

/// The replacement the guard suggests, `git kardwt remove --path P`, runs from any directory:
/// the repository is found from the path, not from where the caller stands.
#[test]
fn remove_by_path_works_from_outside_the_repository() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    let outside = repo.tmp.join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let out = repo.kardwt(&outside, &["verify", "--path", wt.to_str().unwrap()]);
    out.expect_code(0);
    let out = repo.kardwt(
        &outside,
        &["remove", "--path", wt.to_str().unwrap(), "--grace", "1"],
    );
    out.expect_code(0);
    assert!(!wt.exists(), "{out}");
    assert!(!repo.is_registered(&wt), "{out}");
}

/// git refuses to remove a tree containing a submodule, so `remove` refuses before
/// releasing anything: the process in the tree lives, the cleanup hook does not run, the record
/// stays `ready`. `--force` (git's too) removes it.
#[test]
fn a_tree_with_a_submodule_is_refused_before_anything_is_released() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    commit_submodule(&repo, &wt);
    assert_eq!(
        repo.git(&wt, &["status", "--porcelain"]),
        "",
        "the tree is not clean"
    );
    let mut sleeper = Sleeper::start(&repo, &wt.join("sm"));
    let base = repo.snapshot_base();

    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(1);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("remove_submodule_refused", pinned_case("submodule", &out))
    });
    assert!(sleeper.alive(), "the process was killed:\n{out}");
    assert!(cleanup_lines(&repo).is_empty(), "cleanup ran:\n{out}");
    assert!(
        repo.is_registered(&wt) && wt.join("sm/s.txt").is_file(),
        "{out}"
    );
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    assert_eq!(repo.snapshot_base(), base);
    let events = event_names(&repo, "42");
    assert!(
        !events.iter().any(|e| e == "released" || e == "failed"),
        "{events:?}"
    );

    let out = repo.kardwt(&repo.base, &["remove", "42", "--force", "--grace", "1"]);
    out.expect_code(0);
    assert!(sleeper.ended(Duration::from_secs(10)).is_some(), "{out}");
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
}

/// A locked tree is refused before anything is released, even with `--force`.
#[test]
fn a_locked_tree_is_refused_before_anything_is_released() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("42");
    repo.git(
        &repo.base,
        &["worktree", "lock", "--reason", "mine", wt.to_str().unwrap()],
    );
    let mut sleeper = Sleeper::start(&repo, &wt);
    let mut shown = String::new();
    for args in [&["remove", "42"][..], &["remove", "42", "--force"]] {
        let out = repo.kardwt(&repo.base, &[args, &["--grace", "1"]].concat());
        out.expect_code(1);
        assert!(sleeper.alive(), "the process was killed:\n{out}");
        assert!(cleanup_lines(&repo).is_empty(), "cleanup ran:\n{out}");
        assert!(repo.is_registered(&wt), "{out}");
        shown.push_str(&pinned_case(&args.join(" "), &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("remove_locked_refused", shown));
}

/// When `git worktree remove` refuses after the release anyway (here the cleanup hook
/// leaves an untracked file in the tree), the record becomes `failed` (reason `remove`) and
/// the next `add` prepares the released tree again (reason retry) instead of reusing it.
#[test]
fn a_removal_git_refuses_after_the_release_leaves_the_record_failed() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(
        &repo,
        "echo log > \"$KARDWT_WORKTREE/cleanup.out\"",
    ));
    let wt = repo.add_card("42");
    assert_eq!(repo.prepare_runs(), vec!["42 create prepare"]);

    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(1);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_refused_by_git_after_release",
            pinned_case("git refuses", &out)
        )
    });
    assert!(
        wt.join("cleanup.out").is_file() && repo.is_registered(&wt),
        "{out}"
    );
    let rec = repo.record(&wt);
    assert_eq!(rec["state"].as_str(), Some("failed"), "{rec:?}");
    assert_eq!(rec["reason"].as_str(), Some("remove"), "{rec:?}");
    let events = repo.events(Some("42"));
    let failed = events.last().unwrap();
    assert_eq!(failed["event"].as_str(), Some("failed"), "{events:?}");
    assert!(
        failed["outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("git worktree remove:")),
        "{failed}"
    );

    let path = repo.kardwt_ok(&repo.base, &["add", "42"]);
    assert_eq!(path.trim_end(), wt.to_str().unwrap());
    assert_eq!(
        repo.prepare_runs(),
        vec!["42 create prepare", "42 retry prepare"],
        "the released tree was reused without preparing it again"
    );
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
}

/// `remove --path` of a symlink to a worktree refuses (exit 3) and removes
/// nothing: not the link, not the worktree it points to, not its process.
#[test]
fn remove_path_of_a_symlink_to_a_worktree_refuses_and_removes_nothing() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    let link = repo.tmp.join("link-42");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let before = crate::support::snapshot(&wt);
    let mut shown = String::new();
    for cwd in [repo.base.clone(), repo.tmp.clone()] {
        let arg = if cwd == repo.tmp {
            "link-42".to_owned()
        } else {
            link.to_str().unwrap().to_owned()
        };
        let out = repo.kardwt(&cwd, &["remove", "--path", &arg, "--force"]);
        out.expect_code(3);
        shown.push_str(&pinned_case(&arg, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("remove_path_symlink", shown));
    assert!(sleeper.alive());
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(repo.is_registered(&wt));
    assert_eq!(crate::support::snapshot(&wt), before);
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
}

/// `remove` pointed at the base refuses (exit 3), says what the base is and which
/// command lists the worktrees, and never advises removing it by hand; nothing changes.
#[test]
fn remove_in_the_base_says_what_the_base_is_and_never_advises_deleting_it() {
    let repo = TestRepo::new();
    repo.add_card("42");
    let before = repo.snapshot_base();
    let mut shown = String::new();
    for args in [
        vec!["remove", "--path", repo.base.to_str().unwrap()],
        vec!["remove", "--path", ".", "--force"],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(3);
        shown.push_str(&pinned_case(&args.join(" "), &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("remove_the_base", shown));
    assert_eq!(repo.snapshot_base(), before, "the base changed");
    assert!(repo.card_path("42").is_dir());
}

/// Every interrupted state has a working repair: a card tree whose directory is gone (deleted by
/// hand, or a `git worktree remove` cut short after it deleted the tree) is released and its
/// registration pruned by `remove` itself, and the card can be added again; a gone worktree
/// kardwt has no record of is refused and left registered.
#[test]
fn remove_of_a_card_whose_directory_is_gone_releases_and_prunes_it() {
    let repo = TestRepo::new();
    repo.write_rules(&crate::support::cleanup::rules_with_cleanup(&repo, ""));
    let wt = repo.add_card("g1");
    std::fs::remove_dir_all(&wt).unwrap();
    let gone = repo.kardwt(&repo.base, &["remove", "g1"]);
    assert_eq!(gone.code, 0, "{gone}");
    let out = &gone;
    assert!(!repo.is_registered(&wt), "{out}");
    assert!(
        event_names(&repo, "g1").iter().any(|e| e == "removed"),
        "{out}"
    );
    repo.kardwt_ok(&repo.base, &["add", "g1"]);
    assert!(wt.join(".git").is_file());

    let foreign = repo.add_gone_worktree();
    let before = repo.all_refs();
    let out = repo.kardwt(&repo.base, &["remove", "--path", foreign.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_gone_directories",
            pinned_case("card g1", &gone) + &pinned_case("unmanaged", &out)
        )
    });
    assert_eq!(repo.all_refs(), before);
    assert!(repo
        .git(&repo.base, &["worktree", "list", "--porcelain"])
        .contains("gone"));
}
