//! Removal under fault injection (strace `-e inject`, `support::strace`):
//! `remove` and `gc --apply` never lose work on a failing check (a directory read, an open or
//! a stat failing inside `git status`, or in kardwt itself, with `-f`), release nothing before
//! the last refusal (the repository lock included), leave a state the next `remove` and `add`
//! repair when SIGKILLed at any point, and say what happened: a failed collection is not
//! "collected", a tree is never both "removed" and "removing it failed", and the command
//! printed for a locked tree works on it.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::cleanup::{cleanup_lines, cleanup_rules, Sleeper};
use crate::support::procs::{open_lock_file, processes_under, repo_lock};
use crate::support::strace::Fault;
use crate::support::{pinned, pinned_case, snapshot, wait_until, Output, TestRepo, BIN};

/// A repository sharing the base's `.env` into each tree, with the standard prepare script and
/// the logging cleanup hook, `action_timeout_seconds: N` appended when given.
fn scene(timeout: Option<u64>) -> TestRepo {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    let script = repo.write_prepare("");
    let timeout = timeout
        .map(|t| format!("  action_timeout_seconds: {t}\n"))
        .unwrap_or_default();
    // The hook succeeds when the tree is gone too (an orphan's release runs it then).
    repo.write_rules(&format!(
        "{}{}{timeout}",
        repo.rules_sharing(&script),
        cleanup_rules(&repo, "true")
    ));
    repo
}

fn is_link(p: &Path) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

/// Everything a refused removal must leave as it was: the tree's files (links by target), its
/// record's bytes, and its registration.
fn kept_state(repo: &TestRepo, wt: &Path) -> (BTreeMap<PathBuf, Vec<u8>>, Vec<u8>, bool) {
    (
        snapshot(wt),
        std::fs::read(repo.record_path(wt)).unwrap_or_default(),
        repo.is_registered(wt),
    )
}

/// A removal of the dirty tree `wt` ran with a fault: whatever failed, the work in it is
/// there, nothing was released (the process in it, if any, lives, the cleanup hook did not run,
/// the `.env` link is kardwt's link still) and nothing says it was removed or collected.
#[track_caller]
fn assert_untouched(
    repo: &TestRepo,
    wt: &Path,
    before: &(BTreeMap<PathBuf, Vec<u8>>, Vec<u8>, bool),
    sleeper: Option<&mut Sleeper>,
    what: &str,
    out: &Output,
) {
    assert!(
        !out.stdout.contains("removed") && !out.stdout.contains("collected card"),
        "{what}: stdout says removed:\n{out}"
    );
    assert!(
        kept_state(repo, wt) == *before,
        "{what}: the dirty tree, its record or registration changed:\n{out}"
    );
    assert!(
        is_link(&wt.join(".env")),
        "{what}: .env was unlinked:\n{out}"
    );
    if let Some(sleeper) = sleeper {
        assert!(
            sleeper.alive(),
            "{what}: the process in the tree was stopped:\n{out}"
        );
    }
    assert!(
        cleanup_lines(repo).is_empty(),
        "{what}: the cleanup hook ran:\n{out}"
    );
}

/// What to run on the dirty tree: `remove` (with a process inside), or `gc --apply` of a tree
/// whose work landed (no process: gc keeps a tree in use anyway).
#[derive(Clone, Copy, PartialEq)]
enum By {
    Remove,
    Gc,
}

impl By {
    fn args(self) -> &'static [&'static str] {
        match self {
            By::Remove => &["remove", "42", "--grace", "1"],
            By::Gc => &["gc", "--apply", "--offline"],
        }
    }
}

/// Sweep `by` on the dirty tree over every call of each of `syscalls` (failing with EIO, in
/// kardwt and every process it starts) up to the most the busiest process makes. The tree must
/// come out of every trial as it went in. Returns the number of trials.
fn sweep_dirty(by: By, make_dirty: impl Fn(&Path), syscalls: &[&str]) -> usize {
    let repo = scene(None);
    let wt = repo.add_card("42");
    if by == By::Gc {
        land(&repo, &wt, "card/42");
    }
    make_dirty(&wt);
    let mut sleeper = (by == By::Remove).then(|| Sleeper::start(&repo, &wt.join("src")));
    let before = kept_state(&repo, &wt);
    // Without a fault it refuses too; that run counts the calls worth sweeping.
    let (out, counts) = repo.syscall_counts(BIN, &repo.base, by.args(), syscalls, true);
    assert_untouched(&repo, &wt, &before, sleeper.as_mut(), "no fault", &out);
    let mut trials = 0;
    for syscall in syscalls {
        let most = counts.get(*syscall).copied().unwrap_or(0);
        assert!(most > 0, "{syscall} is never called: {counts:?}");
        for when in 1..=most {
            let fault = Fault::new(syscall, "EIO", when, true);
            let out = repo.kardwt_injected(&fault, &repo.base, by.args());
            let what = format!("{} {fault}", by.args()[0]);
            assert_untouched(&repo, &wt, &before, sleeper.as_mut(), &what, &out);
            trials += 1;
        }
    }
    trials
}

fn untracked_file(wt: &Path) {
    std::fs::write(wt.join("src/mine.txt"), "mine\n").unwrap();
}

fn untracked_dir(wt: &Path) {
    std::fs::create_dir_all(wt.join("notes/deep")).unwrap();
    std::fs::write(wt.join("notes/deep/idea.txt"), "idea\n").unwrap();
}

fn modified_file(wt: &Path) {
    std::fs::write(wt.join("src/lib.txt"), "one\ntwo\nmine\n").unwrap();
}

/// The data loss: one failed directory read inside `git status` hid `src/mine.txt`
/// from kardwt's check and from git's own, and `remove` deleted it. Every failing
/// `getdents64` (and every failing `openat`, which git reports only as a warning), and every
/// failing `write` or `read` (status output lost on its way) now leaves the file, and
/// releases nothing.
#[test]
fn an_untracked_file_survives_every_failed_directory_read() {
    let syscalls = ["getdents64", "openat", "write", "read"];
    let trials = sweep_dirty(By::Remove, untracked_file, &syscalls);
    assert!(trials > 20, "{trials} trials");
}

/// The same through `gc --apply`, which judged the landed tree clean from the same status.
#[test]
fn gc_keeps_an_untracked_file_through_every_failed_directory_read() {
    sweep_dirty(By::Gc, untracked_file, &["getdents64"]);
}

/// The same for a file in a new directory of its own, which git lists only after reading
/// that directory too.
#[test]
fn an_untracked_directory_survives_every_failed_directory_read() {
    sweep_dirty(By::Remove, untracked_dir, &["getdents64"]);
}

/// A modified tracked file: git skips a file whose `lstat` fails (it prints the error and
/// exits 0), so only a status run with nothing on stderr counts.
#[test]
fn a_modified_file_survives_every_failed_stat() {
    sweep_dirty(By::Remove, modified_file, &["newfstatat"]);
}

/// The repository lock is the last refusal, taken before anything is released. With
/// the lock held elsewhere past the action deadline, `remove` fails (exit 5) with the process
/// in the tree alive, the cleanup hook not run and the `.env` link in place, the tree still
/// `ready`, and says nothing was released; once the lock is free, `remove` finishes.
#[test]
fn remove_takes_the_repository_lock_before_releasing_anything() {
    let repo = scene(Some(2));
    let wt = repo.add_card("42");
    let mut sleeper = Sleeper::start(&repo, &wt);
    let before = kept_state(&repo, &wt);
    let mut holder = fd_lock::RwLock::new(open_lock_file(&repo_lock(&repo)));
    let guard = holder.write().unwrap();

    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(5);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_repository_lock_held",
            pinned_case("remove 42 --grace 1", &out)
        )
    });
    assert_untouched(&repo, &wt, &before, Some(&mut sleeper), "lock held", &out);
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));

    drop(guard);
    drop(holder);
    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert_eq!(cleanup_lines(&repo).len(), 2, "the hook did not run once");
}

/// Commit in `wt`, push its branch and merge it into origin's main, then fetch in the base:
/// the tree's work landed, so gc collects it.
fn land(repo: &TestRepo, wt: &Path, branch: &str) {
    std::fs::write(wt.join("landed.txt"), "landed\n").unwrap();
    repo.git(wt, &["add", "landed.txt"]);
    repo.git(wt, &["commit", "--quiet", "-m", "landed"]);
    repo.git(wt, &["push", "--quiet", "origin", branch]);
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    let theirs = format!("origin/{branch}");
    repo.git(
        &repo.scratch,
        &["merge", "--quiet", "--no-ff", "-m", "merge", &theirs],
    );
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
}

/// `gc --apply` that could not collect a tree says so: not "collected" on
/// stdout, an `error:` line on stderr, exit 1; and the tree is as it was.
#[track_caller]
fn assert_not_collected(wt: &Path, out: &Output) {
    assert_eq!(out.code, 1, "{out}");
    assert!(wt.join("src/lib.txt").is_file(), "{out}");
    assert!(
        !out.stdout.contains("collected card 42"),
        "a failed collection is reported as collected:\n{out}"
    );
    assert!(out.stdout.contains("could not collect card 42"), "{out}");
    assert!(
        out.stderr.contains("error: could not collect card 42"),
        "{out}"
    );
}

/// The same lock, for gc: with the repository lock held past the deadline, `gc --apply`
/// releases nothing (the `.env` link stays, the cleanup hook does not run, the record stays
/// `ready`) and reports the tree as not collected.
#[test]
fn gc_takes_the_repository_lock_before_releasing_anything() {
    let repo = scene(Some(2));
    let wt = repo.add_card("42");
    land(&repo, &wt, "card/42");
    let dry = repo.kardwt(&repo.base, &["gc", "--offline"]);
    let mut shown = pinned_case("gc --offline", &dry);

    let mut holder = fd_lock::RwLock::new(open_lock_file(&repo_lock(&repo)));
    let guard = holder.write().unwrap();
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    assert_not_collected(&wt, &out);
    shown.push_str(&pinned_case("gc --apply --offline, the lock held", &out));
    assert!(is_link(&wt.join(".env")), ".env was unlinked:\n{out}");
    assert!(cleanup_lines(&repo).is_empty(), "cleanup ran:\n{out}");
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));

    drop(guard);
    drop(holder);
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("gc --apply --offline", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("gc_repository_lock_held", shown));
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
}

/// The message bug, with a failure injected into the removal: a cleanup hook that
/// fails makes the collection fail, and gc says so.
#[test]
fn gc_never_reports_a_failed_removal_as_collected() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    let flag = repo.tmp.join("FAIL");
    std::fs::write(&flag, "").unwrap();
    let fail = format!(
        "if [ -e {} ]; then echo 'cannot stop the database' >&2; exit 1; fi",
        crate::support::sh_quote(&flag)
    );
    repo.write_rules(&format!(
        "{}{}",
        repo.rules_for(&script, false),
        cleanup_rules(&repo, &fail)
    ));
    let wt = repo.add_card("42");
    land(&repo, &wt, "card/42");
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    assert_not_collected(&wt, &out);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_cleanup_hook_failed",
            pinned_case("gc --apply --offline", &out)
        )
    });
    // Released, not removed: the record says so, and the next gc (its hook fixed) with
    // --include-failed, or remove, finishes.
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("failed"));
    std::fs::remove_file(&flag).unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(0);
    assert!(!wt.exists(), "{out}");
}

/// After a kill or failure at any point, the next `remove` finishes (or the tree is already
/// gone), and the next `add` makes a ready tree with its `.env` link again.
#[track_caller]
fn assert_repaired(repo: &TestRepo, wt: &Path, what: &str) {
    if repo.is_registered(wt) {
        let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
        assert_eq!(
            out.code, 0,
            "{what}: the next remove did not finish:\n{out}"
        );
    }
    assert!(!wt.exists(), "{what}: the tree is still there");
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    assert_eq!(out.code, 0, "{what}: the next add failed:\n{out}");
    assert!(is_link(&wt.join(".env")), "{what}: no .env link");
    assert_eq!(repo.record(wt)["state"].as_str(), Some("ready"), "{what}");
}

/// A clean tree (with a process inside for `remove`; its work landed for `gc`), card 42.
fn clean_scene(by: By) -> (TestRepo, PathBuf, Option<Sleeper>) {
    let repo = scene(None);
    let wt = repo.add_card("42");
    if by == By::Gc {
        land(&repo, &wt, "card/42");
    }
    let sleeper = (by == By::Remove).then(|| Sleeper::start(&repo, &wt.join("src")));
    (repo, wt, sleeper)
}

/// Sweep `by` on a clean tree, a fresh repository per trial, over every call of each of
/// `syscalls` failing with `error` (`KILL`: SIGKILL there). After each trial, once what the
/// run started has finished: the tree is removed, or its record is not `ready` (a released
/// tree never looks ready), or it is `ready` with nothing released; the next `remove`
/// finishes and the next `add` makes a ready tree again. A tree `git worktree remove` left
/// half-deleted (its admin dir gone, files left) is counted, not judged here: its repair is
/// tested in `faults/repair.rs`. Returns (trials, half-deleted).
fn sweep_clean(by: By, syscalls: &[&str], error: &str, follow: bool) -> (usize, usize) {
    let counts = {
        let (repo, _, _sleeper) = clean_scene(by);
        let (out, counts) = repo.syscall_counts(BIN, &repo.base, by.args(), syscalls, follow);
        out.expect_code(0);
        counts
    };
    let (mut trials, mut half) = (0, 0);
    for (syscall, most) in &counts {
        for when in 1..=*most {
            let (repo, wt, mut sleeper) = clean_scene(by);
            let fault = Fault::new(syscall, error, when, follow);
            let what = format!("{} {fault}", by.args()[0]);
            let out = repo.kardwt_injected(&fault, &repo.base, by.args());
            trials += 1;
            // What a killed kardwt started (git worktree remove, the cleanup hook) runs on:
            // the state is judged once it is done.
            let mine = sleeper.as_ref().map(|s| s.child.id() as i32);
            let settled = wait_until(Duration::from_secs(30), || {
                processes_under(&repo.tmp)
                    .iter()
                    .all(|(pid, _)| Some(*pid) == mine)
            });
            assert!(settled, "{what}: {:?}", processes_under(&repo.tmp));
            if wt.exists() && !repo.common_dir().join("worktrees/card-42").exists() {
                half += 1;
                continue;
            }
            // Read from the admin dir: a kill between the move aside and git forgetting the
            // tree leaves it registered with its directory gone.
            let admin = repo.common_dir().join("worktrees/card-42");
            let state = repo
                .is_registered(&wt)
                .then(|| std::fs::read_to_string(admin.join("kardwt.toml")).ok())
                .flatten()
                .and_then(|t| t.parse::<toml::Table>().ok())
                .and_then(|t| t.get("state")?.as_str().map(str::to_owned));
            if out.code == 0 {
                assert!(!wt.exists(), "{what}: exit 0, tree kept:\n{out}");
            }
            if state.as_deref() == Some("ready") {
                assert!(
                    !out.stdout.contains("removed") && !out.stdout.contains("collected card"),
                    "{what}: kept, says removed:\n{out}"
                );
                assert!(
                    is_link(&wt.join(".env")),
                    "{what}: ready without .env:\n{out}"
                );
                if let Some(sleeper) = sleeper.as_mut() {
                    assert!(
                        sleeper.alive(),
                        "{what}: ready, its process stopped:\n{out}"
                    );
                }
                assert!(
                    cleanup_lines(&repo).is_empty(),
                    "{what}: ready, its cleanup hook ran:\n{out}"
                );
            }
            drop(sleeper);
            assert_repaired(&repo, &wt, &what);
        }
    }
    (trials, half)
}

/// SIGKILL at each point of `remove` of a clean tree (each process it starts, each signal it
/// sends, each lock it takes, each file it unlinks or renames).
#[test]
fn a_removal_killed_at_any_point_leaves_a_state_the_next_remove_finishes() {
    let syscalls = [
        "clone3", "clone", "vfork", "kill", "unlink", "unlinkat", "renameat", "flock",
    ];
    let (trials, half) = sweep_clean(By::Remove, &syscalls, "KILL", false);
    // No helper threads since git runs without duct: fewer clones than there were.
    assert!(trials >= 10, "{trials} trials");
    assert_eq!(
        half, 0,
        "a kill of kardwt alone never cuts git's deletion short"
    );
}

/// The same for `gc --apply` of a clean tree whose work landed: each process it starts, lock,
/// rename and unlink.
#[test]
fn a_collection_killed_at_any_point_leaves_a_state_the_next_remove_finishes() {
    let syscalls = ["clone3", "clone", "vfork", "unlink", "renameat", "flock"];
    let (trials, half) = sweep_clean(By::Gc, &syscalls, "KILL", false);
    assert!(trials >= 10, "{trials} trials");
    assert_eq!(half, 0);
}

/// A failing lock, record write or directory read (in kardwt or any process it starts) during
/// `remove` of a clean tree: released never looks ready, and the next `remove` finishes.
#[test]
fn a_removal_failing_at_any_point_leaves_a_state_the_next_remove_finishes() {
    let syscalls = ["flock", "renameat", "getdents64"];
    let (trials, half) = sweep_clean(By::Remove, &syscalls, "EIO", true);
    eprintln!("remove, EIO -f over {syscalls:?}: {trials} trials, {half} half-deleted");
    assert!(trials >= 10, "{trials} trials");
}

/// SIGKILL at each point of `remove` and `gc --apply` of a dirty tree: the work survives and
/// nothing is released, wherever the kill lands.
#[test]
fn a_dirty_tree_survives_a_kill_at_any_point() {
    for by in [By::Remove, By::Gc] {
        let repo = scene(None);
        let wt = repo.add_card("42");
        if by == By::Gc {
            land(&repo, &wt, "card/42");
        }
        untracked_file(&wt);
        let mut sleeper = (by == By::Remove).then(|| Sleeper::start(&repo, &wt.join("src")));
        let before = kept_state(&repo, &wt);
        let syscalls = ["clone3", "clone", "vfork", "openat", "getdents64"];
        let (_, counts) = repo.syscall_counts(BIN, &repo.base, by.args(), &syscalls, false);
        for (syscall, most) in &counts {
            for when in 1..=*most {
                let fault = Fault::new(syscall, "KILL", when, false);
                let out = repo.kardwt_injected(&fault, &repo.base, by.args());
                let what = format!("{} {fault}", by.args()[0]);
                assert_untouched(&repo, &wt, &before, sleeper.as_mut(), &what, &out);
            }
        }
    }
}

/// The command a failure message gives for removing a tree by hand: from `git worktree
/// remove` to the end of its line, or to the ` (why: …)` that follows it.
fn by_hand(out: &Output) -> String {
    let at = out
        .stderr
        .find("git worktree remove")
        .unwrap_or_else(|| panic!("no command to remove it by hand:\n{out}"));
    let line = out.stderr[at..].lines().next().unwrap();
    line.split(" (why").next().unwrap().to_owned()
}

/// Run `command` with sh in the base; its output.
fn run_sh(repo: &TestRepo, command: &str) -> Output {
    repo.spawn("sh", &repo.base, &["-c", command])
        .wait(crate::support::COMMAND_TIMEOUT)
}

/// Saying what happened, on the hook path: `git worktree add --lock` whose prepare fails leaves
/// no tree (git wants `--force --force` for a locked tree, so a single `--force` left it there
/// while the message said a retry re-creates it), and the message says it was removed.
#[test]
fn a_locked_new_tree_whose_prepare_fails_is_removed() {
    let repo = TestRepo::new();
    let (_flag, script) = repo.write_failing_prepare("no-token", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let y = repo.sibling("y");
    let out = repo.worktree_add(&["--lock", "../y", "-b", "card/7"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(!y.exists(), "the locked new tree was kept:\n{out}");
    assert!(!repo.is_registered(&y), "{out}");
    // Said removed, and no failure of the removal.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "locked_new_tree_removed",
            pinned_case("worktree add --lock", &out)
        )
    });
}

/// When the hook cannot remove the tree it refuses (here: the repository lock cannot be
/// opened), it says the tree was not removed, never both, and the command it names removes
/// the locked tree.
#[test]
fn a_refused_tree_the_hook_cannot_remove_is_never_called_removed() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    repo.add_card("42");
    // A symlink where the repository lock belongs: kardwt refuses to open it, as it refuses
    // to follow any of its own files planted as a symlink.
    let lock = repo_lock(&repo);
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(repo.tmp.join("elsewhere"), &lock).unwrap();

    let dup = repo.sibling("dup");
    let out = repo.worktree_add(&["--force", "--lock", "../dup", "card/42"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(dup.exists(), "the test needs the removal to fail:\n{out}");
    // Already claimed; the tree still there is never called removed.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "refused_tree_not_removed",
            pinned_case("worktree add", &out)
        )
    });
    let command = by_hand(&out);
    let ran = run_sh(&repo, &command);
    assert_eq!(ran.code, 0, "`{command}` does not work:\n{ran}");
    assert!(!dup.exists() && !repo.is_registered(&dup), "{ran}");
}

/// The same on the failed-prepare path (the verdict block): a locked new tree the hook could
/// not remove gets a command that removes it.
#[test]
fn a_locked_tree_left_by_a_failed_prepare_gets_a_command_that_removes_it() {
    let repo = TestRepo::new();
    let (_flag, script) = repo.write_failing_prepare("no-token", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let lock = repo_lock(&repo);
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(repo.tmp.join("elsewhere"), &lock).unwrap();

    let y = repo.sibling("y");
    let out = repo.worktree_add(&["--lock", "../y", "-b", "card/7"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(y.exists(), "the test needs the removal to fail:\n{out}");
    assert!(!out.stderr.contains("was removed"), "{out}");
    let command = by_hand(&out);
    let ran = run_sh(&repo, &command);
    assert_eq!(ran.code, 0, "`{command}` does not work:\n{ran}");
    assert!(!y.exists() && !repo.is_registered(&y), "{ran}");
}

/// A user tracing git (`GIT_TRACE=1`) is not a failing status: the clean tree is removed, and
/// a dirty one is still refused.
#[test]
fn a_user_tracing_git_can_still_remove_a_clean_tree() {
    let repo = scene(None);
    let clean = repo.add_card("t1");
    let dirty = repo.add_card("t2");
    std::fs::write(dirty.join("work.txt"), "work\n").unwrap();
    let traced = [
        ("GIT_TRACE", std::ffi::OsStr::new("1")),
        ("GIT_TRACE2_PERF", std::ffi::OsStr::new("2")),
    ];
    let out = repo
        .spawn_with_env(BIN, &repo.base, &["remove", "t1"], &traced)
        .wait(crate::support::COMMAND_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert!(!clean.exists(), "{out}");
    let out = repo
        .spawn_with_env(BIN, &repo.base, &["remove", "t2"], &traced)
        .wait(crate::support::COMMAND_TIMEOUT);
    assert_ne!(out.code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(dirty.join("work.txt")).unwrap(),
        "work\n"
    );
}
