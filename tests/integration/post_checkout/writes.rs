//! How often the hook writes a new tree's record: once, `ready`, where seeding is a few links at
//! most (every write waits for the disk, and the hook runs on every plain `git worktree add`);
//! first `preparing` where seeding takes time (a prepare hook), so `list` says what goes on.
use std::path::Path;

use crate::support::strace::strace;
use crate::support::TestRepo;

/// `git worktree add --detach <path>` in the base under `strace -f`, tracing renames; returns
/// how many renamed a file into place as the new tree's record, and as a claim.
fn renames_into_place(repo: &TestRepo, path: &Path) -> (usize, usize) {
    let text = traced_worktree_add(repo, path, "trace=rename,renameat,renameat2");
    let into = |tail: &str| {
        text.lines()
            .filter(|l| l.contains("= 0") && l.contains(tail))
            .count()
    };
    let claim = format!(
        "/kardwt/claims/{}\"",
        path.file_name().unwrap().to_string_lossy()
    );
    (into("/kardwt.toml\""), into(&claim))
}

#[test]
fn a_tree_with_nothing_slow_to_seed_is_recorded_ready_in_one_write() {
    let repo = TestRepo::new();
    // The rules share the base's `.env` (a link): quick seeding.
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    repo.install_hooks();
    let wt = repo.sibling("quick");
    let (records, claims) = renames_into_place(&repo, &wt);
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    assert!(wt.join(".env").symlink_metadata().unwrap().is_symlink());
    // Once `ready` with its link, never first `preparing`: one record write, one claim.
    assert_eq!((records, claims), (1, 1));
}

#[test]
fn a_tree_with_a_prepare_hook_is_recorded_preparing_first() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    repo.write_rules(&repo.rules_sharing(&script));
    repo.install_hooks();
    let wt = repo.sibling("slow");
    let (records, claims) = renames_into_place(&repo, &wt);
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    assert_eq!(repo.prepare_runs().len(), 1);
    // `preparing` while the hook runs, then `ready`; the claim once.
    assert!(records >= 2, "{records} record write(s)");
    assert_eq!(claims, 1);
}

/// `git worktree add --quiet --detach <path>` in the base under `strace -f -e <trace>`; asserts
/// it succeeded and returns strace's log.
fn traced_worktree_add(repo: &TestRepo, path: &Path, trace: &str) -> String {
    traced_worktree_add_with(repo, path, &["-e", trace])
}

/// [`traced_worktree_add`] with strace's options `options`.
fn traced_worktree_add_with(repo: &TestRepo, path: &Path, options: &[&str]) -> String {
    let log = repo.tmp.join(format!(
        "strace-{}.log",
        path.file_name().unwrap().to_string_lossy()
    ));
    let out = repo
        .command(strace(), &repo.base)
        .args(["-f", "-qq"])
        .args(options)
        .arg("-o")
        .arg(&log)
        .args(["git", "worktree", "add", "--quiet", "--detach"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::read_to_string(&log).unwrap()
}

#[test]
fn the_hook_reads_no_other_worktrees_record_when_nobody_holds_the_card() {
    let repo = TestRepo::new();
    repo.install_hooks();
    for name in ["other-1", "other-2", "other-3"] {
        repo.worktree_add(&["--quiet", "--detach", &repo.sibling(name).to_string_lossy()])
            .expect_code(0);
    }
    let wt = repo.sibling("new");
    let text = traced_worktree_add(&repo, &wt, "trace=openat");
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    // The claims say nobody holds card `new`: the other trees' records stay unread (a
    // repository of a thousand worktrees costs the hook what one of three does).
    let read: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("/worktrees/other-") && l.contains("kardwt.toml"))
        .collect();
    assert!(read.is_empty(), "{read:#?}");
}

/// The hook's events are appended without the event log's lock (a line appended is whole
/// whatever appends beside it; only a rotation takes the lock), and still land in the log.
#[test]
fn the_hooks_events_are_appended_without_the_logs_lock() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let wt = repo.sibling("evented");
    let text = traced_worktree_add(&repo, &wt, "trace=openat,open");
    assert!(text.contains("events.jsonl"), "no event appended:\n{text}");
    let locked: Vec<&str> = text.lines().filter(|l| l.contains("events.lock")).collect();
    assert!(locked.is_empty(), "{locked:#?}");
    let events: Vec<String> = repo
        .events(Some("evented"))
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(events.contains(&"created".to_owned()), "{events:?}");
}

/// Taking a lock writes its holder over the lock file in place, never cutting the file to
/// nothing first: ext4 writes a file emptied and written again out to the disk when it is
/// closed (`auto_da_alloc`), a disk write for every lock taken (0.3 ms each, measured).
#[test]
fn the_hook_never_empties_a_lock_file_it_takes() {
    let repo = TestRepo::new();
    repo.install_hooks();
    // The card's lock file exists already (an earlier tree of the card, now gone), longer
    // than what this holder writes.
    let lock = repo.common_dir().join("kardwt/cards/locked.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let old = format!("pid 1\nsince then\ncommand {}\n", "x".repeat(300));
    std::fs::write(&lock, &old).unwrap();
    let wt = repo.sibling("locked");
    let text = traced_worktree_add(&repo, &wt, "trace=ftruncate");
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    let emptied: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ftruncate(") && l.contains(", 0)"))
        .collect();
    assert!(emptied.is_empty(), "{emptied:#?}");
    // Cut to this holder's text: no line of the old holder's is left.
    let now = std::fs::read_to_string(&lock).unwrap();
    assert!(
        now.len() < old.len() && !now.contains("since then"),
        "{now}"
    );
}

/// The record's and the claim's temporaries are written and fsynced side by side, the claim on
/// a thread of its own, so that the two waits for the disk overlap (a pool whose first free
/// thread was the caller's took both in turn, one fsync after the other).
#[test]
fn the_record_and_its_claim_are_staged_on_two_threads() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let wt = repo.sibling("paired");
    // Every thread's start returns to its starter 50 ms late: a helper that took whatever
    // came next would take both while the hook's own thread waits (what the pool did).
    let text = traced_worktree_add_with(
        &repo,
        &wt,
        &[
            "-e",
            "trace=openat,fsync,clone3",
            "-e",
            "inject=clone3:delay_exit=50000",
        ],
    );
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    // strace -f starts each line with the thread's id.
    let creator = |name: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("openat(") && l.contains("O_CREAT") && l.contains(name))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    };
    let record = creator("/worktrees/paired/.kardwt.toml.");
    let claim = creator("/kardwt/claims/.paired.");
    assert_eq!((record.len(), claim.len()), (1, 1), "{text}");
    assert_ne!(record, claim, "both staged by one thread:\n{text}");
    let fsyncs: Vec<&str> = text.lines().filter(|l| l.contains("fsync(")).collect();
    assert!(fsyncs.len() >= 2, "{fsyncs:#?}");
}
