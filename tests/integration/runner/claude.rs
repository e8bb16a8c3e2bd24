//! `git kardwt runner claude worktree-create | worktree-remove`, Claude Code's WorktreeCreate
//! and WorktreeRemove hooks, fed Claude Code's documented payload through the real binary and
//! real git.
use std::path::{Path, PathBuf};

use crate::support::cleanup::{cleanup_lines, event_names, rules_with_cleanup, Sleeper};
use crate::support::recipes::*;
use crate::support::{pinned, pinned_case, sh_quote, snapshot, TestRepo};

#[test]
fn claude_worktree_create_verify_remove_round_trip_with_a_process_inside() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let (create, remove) = claude_commands();

    let out = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "bold-oak-a3f2"),
        &[],
    );
    out.expect_code(0);
    let last = out.stdout.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    let wt = PathBuf::from(last);
    assert_eq!(wt, repo.card_path("bold-oak-a3f2"), "{out}");
    assert!(wt.is_absolute(), "{out}");
    assert_eq!(wt.canonicalize().unwrap(), wt, "not canonical:\n{out}");
    assert!(
        !wt.components().any(|c| matches!(
            c,
            std::path::Component::CurDir | std::path::Component::ParentDir
        )),
        "{out}"
    );
    repo.kardwt(&repo.base, &["verify", "--path", last])
        .expect_code(0);

    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    out.expect_code(0);
    assert!(gone(&mut sleeper), "the process inside survived:\n{out}");
    assert!(!wt.exists(), "the clean tree was not removed:\n{out}");
    assert!(!repo.is_registered(&wt), "{out}");
    // No commits beyond its base, so its branch goes with it (as Claude's own).
    assert!(
        !repo.branch_exists("card/bold-oak-a3f2"),
        "the branch without commits of its own was kept:\n{out}"
    );
    assert!(
        out.stderr.contains("and its branch card/bold-oak-a3f2"),
        "{out}"
    );
    let lines = cleanup_lines(&repo);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("bold-oak-a3f2 remove cleanup")),
        "the cleanup hook did not run: {lines:?}"
    );
    assert!(lines.contains(&"present".to_owned()), "{lines:?}");
    let events = event_names(&repo, "bold-oak-a3f2");
    assert!(events.contains(&"released".to_owned()), "{events:?}");
    assert!(events.contains(&"removed".to_owned()), "{events:?}");
}

#[test]
fn claude_worktree_create_turns_any_name_into_a_card_and_fails_loudly() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let (create, _) = claude_commands();
    let out = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "feat/x y"),
        &[],
    );
    out.expect_code(0);
    assert_eq!(
        out.stdout.trim_end().lines().last(),
        Some(repo.card_path("feat-x-y-106dd400").to_str().unwrap()),
        "{out}"
    );
    // The same name again: the same card, reused.
    let again = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "feat/x y"),
        &[],
    );
    again.expect_code(0);
    assert_eq!(again.stdout, out.stdout, "{again}");

    // A cwd outside any repository: non-zero, the verdict on stderr, nothing on stdout.
    let outside = repo.tmp.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let before = repo.snapshot_base();
    let out = run_sh(
        &repo,
        &outside,
        &create,
        &create_payload(&outside, "other"),
        &[],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stdout.trim().is_empty(), "{out}");
    let mut all = pinned_case("outside_a_repository", &out);
    assert!(!repo.card_path("other").exists(), "{out}");
    assert_eq!(repo.snapshot_base(), before);

    // A payload that is not Claude's: non-zero, said on stderr.
    let out = run_sh(&repo, &repo.base, &create, "not json", &[]);
    assert_eq!(out.code, 2, "{out}");
    all.push_str(&pinned_case("not_json", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("claude_create_refused", all));
}

/// Names that sanitize alike (`/` vs `-`, `.lock` vs `-lock`, a shared first 128
/// characters) get different cards and trees; the same name gets the same tree again.
#[test]
fn claude_names_that_sanitize_alike_get_different_trees() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let (create, _) = claude_commands();
    let long = "z".repeat(128);
    let names = [
        "feat/login".to_owned(),
        "feat-login".to_owned(),
        "team/fix.lock".to_owned(),
        "team-fix.lock".to_owned(),
        format!("{long}/one"),
        format!("{long}/two"),
    ];
    let mut trees: Vec<PathBuf> = Vec::new();
    for name in &names {
        let out = run_sh(
            &repo,
            &repo.base,
            &create,
            &create_payload(&repo.base, name),
            &[],
        );
        out.expect_code(0);
        let wt = PathBuf::from(out.stdout.trim_end().lines().last().unwrap());
        assert!(
            !trees.contains(&wt),
            "{name:?} got a tree another name has:\n{out}"
        );
        repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
            .expect_code(0);
        trees.push(wt);
    }
    assert_eq!(
        trees[1],
        repo.card_path("feat-login"),
        "a valid id is its own card"
    );
    let again = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "feat/login"),
        &[],
    );
    again.expect_code(0);
    assert_eq!(
        PathBuf::from(again.stdout.trim_end().lines().last().unwrap()),
        trees[0],
        "{again}"
    );
}

#[test]
fn claude_worktree_remove_keeps_a_dirty_tree_and_releases_it() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup_and_ports(&repo));
    let (_, remove) = claude_commands();
    let wt = repo.add_card("7");
    assert_eq!(ports(&repo, &wt).len(), 2);
    std::fs::write(wt.join("notes.txt"), "work in progress\n").unwrap();
    let mut sleeper = Sleeper::start(&repo, &wt);

    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    // The tree is kept, so the exit says so, in one line with the way to finish.
    out.expect_code(1);
    let line = kept_line(&out, &wt);
    assert!(line.contains("notes.txt"), "{out}");
    assert!(
        line.ends_with(&format!(
            "then: git -C {} kardwt remove --path {}",
            sh_quote(&repo.base),
            sh_quote(&wt)
        )),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).unwrap(),
        "work in progress\n"
    );
    assert!(repo.is_registered(&wt));
    assert!(gone(&mut sleeper), "the process was not released:\n{out}");
    assert_eq!(state(&repo, &wt), "released");
    assert!(ports(&repo, &wt).is_empty(), "ports still held");
    let events = event_names(&repo, "7");
    assert!(events.contains(&"remove-refused".to_owned()), "{events:?}");
    repo.kardwt(&repo.base, &["verify", "7"]).expect_code(1);
}

#[test]
fn claude_worktree_remove_releases_an_already_deleted_tree_and_exits_0() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup_and_ports(&repo));
    let (_, remove) = claude_commands();
    let wt = repo.add_card("9");
    let admin = repo.admin_dir(&wt);
    assert_eq!(ports(&repo, &wt).len(), 2);
    // Its cwd is the tree itself: /proc then reads `<tree> (deleted)`.
    let mut sleeper = Sleeper::start(&repo, &wt);
    std::fs::remove_dir_all(&wt).unwrap();

    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    out.expect_code(0);
    let mut all = pinned_case("already_deleted", &out);
    assert!(
        gone(&mut sleeper),
        "the process in the deleted tree survived:\n{out}"
    );
    // Released, then pruned: no registration, record or claim is left.
    assert!(
        !admin.exists(),
        "its admin dir (and record) is left:\n{out}"
    );
    assert!(
        !repo.worktrees().iter().any(|(p, _, _)| p == &wt),
        "still registered:\n{out}"
    );
    assert!(!repo.common_dir().join("kardwt/claims/9").exists());
    let events = event_names(&repo, "9");
    assert!(events.contains(&"released".to_owned()), "{events:?}");
    assert!(events.contains(&"removed".to_owned()), "{events:?}");

    // Nothing there at all: gone, exit 0. A payload that is not JSON: exit 1, said on stderr.
    let before = repo.snapshot_base();
    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &repo.tmp.join("never")),
        &[],
    );
    out.expect_code(0);
    all.push_str(&pinned_case("never_there", &out));
    let out = run_sh(&repo, &repo.base, &remove, "{", &[]);
    out.expect_code(1);
    all.push_str(&pinned_case("not_json", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("claude_remove_gone", all));
    assert_eq!(repo.snapshot_base(), before);
}

/// A clean tree whose branch has a commit of its own is removed, its branch kept
/// and named on stderr; the exit is 0 because the tree is gone.
#[test]
fn claude_worktree_remove_keeps_a_branch_with_commits_of_its_own() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let (create, remove) = claude_commands();
    let out = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "keep-me"),
        &[],
    );
    out.expect_code(0);
    let wt = repo.card_path("keep-me");
    std::fs::write(wt.join("done.txt"), "work\n").unwrap();
    repo.git(&wt, &["add", "done.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "work of its own"]);
    let tip = repo.git(&wt, &["rev-parse", "HEAD"]);

    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert!(repo.branch_exists("card/keep-me"), "{out}");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/heads/card/keep-me"]),
        tip
    );
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("claude_remove_keeps_branch", pinned_case("remove", &out))
    });
}

/// Every tree WorktreeRemove keeps exits 1 with one line `kept <path>: <why>` and
/// the command that finishes the job; the refusals change nothing on disk.
#[test]
fn claude_worktree_remove_exits_1_whenever_it_keeps_the_tree() {
    let repo = TestRepo::new();
    // A cleanup hook that fails for card `hookfail` only.
    repo.write_rules(&rules_with_cleanup(
        &repo,
        r#"test "$KARDWT_CARD" != hookfail"#,
    ));
    let (_, remove) = claude_commands();
    let base_q = sh_quote(&repo.base);
    let call = |wt: &Path, cwd: &Path| run_sh(&repo, cwd, &remove, &remove_payload(cwd, wt), &[]);

    // Unmanaged: a linked worktree kardwt has no record of.
    let loose = repo.sibling("loose");
    repo.add_unhooked_worktree(loose.to_str().unwrap(), "feature/loose");
    let (base, tree, refs) = (repo.snapshot_base(), snapshot(&loose), repo.all_refs());
    let out = call(&loose, &repo.base);
    out.expect_code(1);
    let line = kept_line(&out, &loose);
    let mut all = pinned_case("unmanaged", &out);
    assert!(
        line.ends_with(&format!(
            "git -C {base_q} worktree remove {}",
            sh_quote(&loose)
        )),
        "{out}"
    );
    assert_eq!(
        (repo.snapshot_base(), snapshot(&loose), repo.all_refs()),
        (base, tree, refs.clone())
    );
    assert!(cleanup_lines(&repo).is_empty());

    // The base checkout itself.
    let base = repo.snapshot_base();
    let out = call(&repo.base, &repo.base);
    out.expect_code(1);
    kept_line(&out, &repo.base);
    all.push_str(&pinned_case("the_base", &out));
    assert_eq!(repo.snapshot_base(), base);

    // A directory in no repository, with a cwd in none either.
    let outside = repo.tmp.join("outside");
    std::fs::create_dir_all(outside.join("tree")).unwrap();
    std::fs::write(outside.join("tree/file"), "x").unwrap();
    let before = snapshot(&outside);
    let out = call(&outside.join("tree"), &outside);
    out.expect_code(1);
    let line = kept_line(&out, &outside.join("tree"));
    all.push_str(&pinned_case("in_no_repository", &out));
    assert!(
        line.ends_with(&format!(
            "git kardwt remove --path {}",
            sh_quote(&outside.join("tree"))
        )),
        "{out}"
    );
    assert_eq!(snapshot(&outside), before);

    // Locked: git worktree remove would refuse it. Released, kept, exit 1.
    let locked = repo.add_card("locked");
    repo.git(&repo.base, &["worktree", "lock", locked.to_str().unwrap()]);
    let tree = snapshot(&locked);
    let out = call(&locked, &repo.base);
    out.expect_code(1);
    kept_line(&out, &locked);
    all.push_str(&pinned_case("locked", &out));
    assert_eq!(snapshot(&locked), tree, "{out}");
    assert!(repo.is_registered(&locked) && repo.branch_exists("card/locked"));

    // A failing cleanup hook: the tree stays, the exit says so.
    let failing = repo.add_card("hookfail");
    let out = call(&failing, &repo.base);
    out.expect_code(1);
    kept_line(&out, &failing);
    all.push_str(&pinned_case("cleanup_hook_failed", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("claude_remove_kept", all));
    assert!(failing.join("README.md").exists() && repo.is_registered(&failing));
    assert!(repo.branch_exists("card/hookfail"));
}

#[test]
fn claude_round_trip_through_a_symlinked_root() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let real = repo.tmp.join("real-root");
    std::fs::create_dir(&real).unwrap();
    let link = repo.tmp.join("link-root");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    repo.git(
        &repo.base,
        &["config", "kardwt.root", link.to_str().unwrap()],
    );
    let (create, remove) = claude_commands();
    let out = run_sh(
        &repo,
        &repo.base,
        &create,
        &create_payload(&repo.base, "s1"),
        &[],
    );
    out.expect_code(0);
    let printed = PathBuf::from(out.stdout.trim_end().lines().last().unwrap());
    assert_eq!(
        printed,
        real.join("card-s1"),
        "the printed path is not canonical:\n{out}"
    );
    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &printed),
        &[],
    );
    out.expect_code(0);
    assert!(out.stderr.contains("removed"), "{out}");
    assert!(!printed.exists(), "{out}");
}

/// Claude Code's WorktreeRemove for a tree something already removed with
/// `git worktree remove`: the claim still names it, so its cleanup hook (in the base, reason
/// orphan) and claim are released; its process is left alone (releasing an orphan signals
/// nothing).
#[test]
fn claude_worktree_remove_of_an_already_removed_tree_releases_its_claim() {
    let repo = TestRepo::new();
    // The hook logs, then ends well although the tree is gone (`true` after `test -d`).
    repo.write_rules(&rules_with_cleanup(&repo, "true"));
    let (_, remove) = claude_commands();
    let wt = repo.add_card("gone-first");
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    repo.git(
        &repo.base,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    out.expect_code(0);
    assert!(sleeper.alive(), "orphan release ended a process:\n{out}");
    assert!(out.stderr.contains("already removed"), "{out}");
    let lines = cleanup_lines(&repo);
    assert!(
        lines.contains(&format!(
            "gone-first orphan cleanup {}",
            repo.base.display()
        )),
        "the cleanup hook did not run in the base as orphan: {lines:?}\n{out}"
    );
    assert!(!repo.common_dir().join("kardwt/claims/gone-first").exists());
    assert!(event_names(&repo, "gone-first").contains(&"released".to_owned()));
}

/// Claude Code's WorktreeRemove naming a symlink to a worktree refuses (exit 3)
/// and removes nothing: the link, the tree it points to and its process stay.
#[test]
fn claude_worktree_remove_of_a_symlink_to_a_worktree_refuses_and_removes_nothing() {
    let repo = TestRepo::new();
    let (_, remove) = claude_commands();
    let wt = repo.add_card("sym");
    let link = repo.tmp.join("sym-link");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &link),
        &[],
    );
    out.expect_code(3);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("claude_remove_symlink", pinned_case("remove", &out)));
    assert!(sleeper.alive(), "{out}");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(wt.is_dir() && repo.is_registered(&wt), "{out}");
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
}

/// WorktreeRemove of a tree already gone finds the repository through the
/// payload's `cwd`, then `CLAUDE_PROJECT_DIR`, then the process cwd, and releases and prunes
/// the entry: `git worktree list --porcelain` shows no `prunable` afterwards.
#[test]
fn claude_worktree_remove_of_a_deleted_tree_prunes_it_whichever_way_the_repository_is_found() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup_and_ports(&repo));
    let (_, remove) = claude_commands();
    let elsewhere = repo.tmp.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // (card, payload cwd, CLAUDE_PROJECT_DIR, process cwd)
    let ways: [(&str, &Path, Option<&Path>, &Path); 3] = [
        ("cwd-way", &repo.base, None, &elsewhere),
        ("project-way", &elsewhere, Some(&repo.base), &elsewhere),
        ("process-way", &elsewhere, None, &repo.base),
    ];
    for (card, cwd, project, process_cwd) in ways {
        let wt = repo.add_card(card);
        std::fs::remove_dir_all(&wt).unwrap();
        assert!(repo
            .worktrees()
            .iter()
            .any(|(p, _, gone)| p == &wt && *gone));
        let env: Vec<(&str, &Path)> = project
            .map(|p| ("CLAUDE_PROJECT_DIR", p))
            .into_iter()
            .collect();
        let out = run_sh(&repo, process_cwd, &remove, &remove_payload(cwd, &wt), &env);
        out.expect_code(0);
        assert!(
            out.stderr.contains("its registration was pruned"),
            "{card}: {out}"
        );
        let porcelain = repo.git(&repo.base, &["worktree", "list", "--porcelain"]);
        assert!(
            !porcelain.contains("prunable"),
            "{card}: {porcelain}\n{out}"
        );
        assert!(
            !porcelain.contains(wt.to_str().unwrap()),
            "{card}: {porcelain}"
        );
        assert!(
            !repo.common_dir().join("kardwt/claims").join(card).exists(),
            "{card}"
        );
    }
    let out = repo.kardwt(&repo.base, &["doctor"]);
    assert!(
        !out.stdout.contains("prunable") && !out.stdout.contains("orphan"),
        "{out}"
    );
}

/// A worktree nested at an ignored path of the tree Claude disposes of: the outer tree is kept
/// (its own process released), and the nested tree's process and uncommitted file are left
/// alone.
#[test]
fn claude_worktree_remove_keeps_a_tree_holding_a_nested_worktree_and_spares_it() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup_and_ports(&repo));
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/build/\n");
    std::fs::write(&exclude, text).unwrap();
    let (_, remove) = claude_commands();
    let wt = repo.add_card("8");
    let inner = repo.nested_worktree(&wt);
    let mut outer_sleeper = Sleeper::start(&repo, &wt);
    let mut inner_sleeper = Sleeper::start(&repo, &inner);

    let out = run_sh(
        &repo,
        &repo.base,
        &remove,
        &remove_payload(&repo.base, &wt),
        &[],
    );
    out.expect_code(1);
    let line = kept_line(&out, &wt);
    assert!(line.contains("build/inner"), "{out}");
    assert!(
        gone(&mut outer_sleeper),
        "the tree's process was not released:\n{out}"
    );
    assert!(
        inner_sleeper.alive(),
        "the nested tree's process was signalled:\n{out}"
    );
    assert_eq!(
        std::fs::read_to_string(inner.join("notes.txt")).unwrap(),
        "uncommitted\n"
    );
    assert!(repo.is_registered(&wt) && repo.is_registered(&inner));
}
