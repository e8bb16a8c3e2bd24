//! Processes, pids and locks for the fault and signal tests: what runs under a directory, reaping it, pid files, lock files.
#![allow(unused_imports, dead_code)]
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{line, sh_quote, snapshot, wait_until, Output, Running, TestRepo};

/// How long any phase may take to be reached before the test gives up.
pub(crate) const REACH: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Processes.

/// Live (non-zombie) processes other than this one whose cwd lies inside `dir`, with their
/// command lines. Everything a test starts (kardwt, its git children, hooks, sleepers) runs in
/// the test's tempdir, so this finds exactly what the test left behind. (Also used by
/// `prepare/sandbox.rs`.)
pub(crate) fn processes_under(dir: &Path) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) else {
            continue;
        };
        if !cwd.starts_with(dir) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rfind(')')
                    .map(|i| s[i + 1..].trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if zombie {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.push((pid, cmdline));
    }
    out
}

pub(crate) fn sigkill(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
}

/// SIGKILL everything left running inside `dir` until nothing is; false when something
/// survives 30 s of that.
pub(crate) fn reap(dir: &Path) -> bool {
    wait_until(Duration::from_secs(30), || {
        let left = processes_under(dir);
        for (pid, _) in &left {
            sigkill(*pid);
        }
        left.is_empty()
    })
}

/// Wait (bounded by 30 s) until nothing runs inside `dir`; when something still does, kill it
/// and fail naming it. A killed process is gone within milliseconds, so the bound only matters
/// to what survived, which the callers make sleep far longer than 30 s.
#[track_caller]
pub(crate) fn assert_nothing_running_under(dir: &Path, what: &str) {
    if wait_until(Duration::from_secs(30), || processes_under(dir).is_empty()) {
        return;
    }
    let left = processes_under(dir);
    reap(dir);
    panic!("{what}: still running: {left:?}");
}

/// Kills whatever a test left running in its tempdir when the test ends, even by a panic.
pub(crate) struct Reaper(pub(crate) PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        reap(&self.0);
    }
}

/// Does process `pid` have `path` open?
pub(crate) fn has_open(pid: u32, path: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == path))
}

/// Wait (bounded) for `cond`; when it never holds, kill the add and fail with its output.
#[track_caller]
pub(crate) fn reach(add: &mut Option<Running>, what: &str, cond: impl FnMut() -> bool) {
    if wait_until(REACH, cond) {
        return;
    }
    let mut r = add.take().unwrap();
    r.kill();
    let out = r.wait(Duration::from_secs(10));
    panic!("{what} was never reached:\n{out}");
}

/// SIGKILL the add (kardwt's own pid) and show that it died of that signal, i.e. that the
/// phase was still running when the kill came.
#[track_caller]
pub(crate) fn kill_add(add: &mut Option<Running>) -> Output {
    let mut r = add.take().unwrap();
    r.kill();
    let out = r.wait(Duration::from_secs(10));
    assert_eq!(
        out.code,
        128 + 9,
        "the add was not killed mid-phase (it had already ended):\n{out}"
    );
    assert_eq!(out.stdout, "", "a killed add printed a path:\n{out}");
    out
}

/// The pid a helper script wrote (atomically: `echo $$ > f.tmp; mv f.tmp f`).
pub(crate) fn read_pid(file: &Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("pid file {}: {e}", file.display()))
}

/// Shell lines that record the script's pid in `file`.
pub(crate) fn write_pid(file: &Path) -> String {
    let f = sh_quote(file);
    format!("echo $$ > {f}.tmp\nmv {f}.tmp {f}")
}

// ---------------------------------------------------------------------------------------------
// Locks.

pub(crate) fn repo_lock(repo: &TestRepo) -> PathBuf {
    repo.common_dir().join("kardwt").join("lock")
}

pub(crate) fn card_lock(repo: &TestRepo, card: &str) -> PathBuf {
    repo.common_dir()
        .join("kardwt")
        .join("cards")
        .join(format!("{card}.lock"))
}

pub(crate) fn open_lock_file(path: &Path) -> File {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap()
}

/// Is the flock on `path` free right now? (Taken and released at once from this process.)
pub(crate) fn lock_is_free(path: &Path) -> bool {
    let mut lock = fd_lock::RwLock::new(open_lock_file(path));
    let free = lock.try_write().is_ok();
    free
}

pub(crate) fn have_flock() -> bool {
    std::process::Command::new("flock")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Hold `path`'s flock from another process until the returned child is killed.
pub(crate) fn hold_flock(repo: &TestRepo, path: &std::path::Path) -> crate::support::Running {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ready = repo.tmp.join("flock.ready");
    // One process (sh, then sleep) holds the lock on fd 9, so killing it frees the lock.
    let script = format!(
        "exec 9>>{}; flock 9; touch {}; exec sleep 60",
        sh_quote(path),
        sh_quote(&ready)
    );
    let child = repo.spawn("sh", &repo.tmp, &["-c", &script]);
    assert!(
        wait_until(Duration::from_secs(30), || ready.exists()),
        "flock never took {}",
        path.display()
    );
    child
}

/// Wait until process `pid` has `file` open (it is waiting for that lock: everything it read
/// before taking the lock has been read).
pub(crate) fn wait_until_open(pid: u32, file: &std::path::Path) -> bool {
    let fds = std::path::PathBuf::from(format!("/proc/{pid}/fd"));
    wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&fds).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == file))
        })
    })
}

/// Every lock file kardwt has under `<common dir>/kardwt/`.
pub(crate) fn kardwt_lock_files(repo: &TestRepo) -> Vec<PathBuf> {
    let mut out = vec![repo_lock(repo)];
    if let Ok(entries) = std::fs::read_dir(repo.common_dir().join("kardwt").join("cards")) {
        let mut cards: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        cards.sort();
        out.extend(cards);
    }
    out
}

/// No lock of kardwt's is held: by this process's check and, where util-linux is installed,
/// by `flock -n FILE true`.
#[track_caller]
pub(crate) fn assert_no_lock_held(repo: &TestRepo, when: &str) {
    let flock = have_flock();
    for path in kardwt_lock_files(repo) {
        assert!(
            lock_is_free(&path),
            "{when}: {} is still held ({:?})",
            path.display(),
            std::fs::read_to_string(&path).unwrap_or_default()
        );
        if flock {
            let out = repo
                .spawn("flock", &repo.tmp, &["-n", path.to_str().unwrap(), "true"])
                .wait(Duration::from_secs(30));
            assert_eq!(
                out.code,
                0,
                "{when}: flock -n {} failed: the lock is held\n{out}",
                path.display()
            );
        }
    }
}

/// git's own lock files (`index.lock`, `refs/…/x.lock`, `shallow.lock`…) left in the common
/// dir, kardwt's directory excepted.
pub(crate) fn git_lock_files(repo: &TestRepo) -> Vec<PathBuf> {
    snapshot(&repo.common_dir())
        .into_keys()
        .filter(|p| !p.starts_with("kardwt"))
        .filter(|p| p.extension().is_some_and(|e| e == "lock"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Scenes.

/// A repository with the standard prepare script (which runs `extra` after logging) and
/// origin one commit ahead of the base, plus the base's snapshot taken before any add.
pub(crate) fn scene(
    extra: impl FnOnce(&TestRepo) -> String,
    more_rules: &str,
) -> (TestRepo, Reaper, BTreeMap<PathBuf, Vec<u8>>) {
    let repo = TestRepo::new();
    let reaper = Reaper(repo.tmp.clone());
    let script = repo.write_prepare(&extra(&repo));
    repo.write_rules(&format!("{}{more_rules}", repo.rules_for(&script, false)));
    repo.commit_on_origin("ahead");
    let before = repo.snapshot_base();
    (repo, reaper, before)
}

/// After a kill: nothing left running, no lock held, no git lock file, the base untouched,
/// and another card can be added at once (a held lock would run into `--timeout 10`).
#[track_caller]
pub(crate) fn assert_repository_recovered(
    repo: &TestRepo,
    base_before: &BTreeMap<PathBuf, Vec<u8>>,
) {
    assert!(
        reap(&repo.tmp),
        "processes survive in the test's tempdir: {:?}",
        processes_under(&repo.tmp)
    );
    assert_no_lock_held(repo, "after the kill");
    assert_eq!(
        git_lock_files(repo),
        Vec::<PathBuf>::new(),
        "git lock files were left behind"
    );
    assert!(
        repo.snapshot_base() == *base_before,
        "the base changed:\n{}",
        diff(base_before, &repo.snapshot_base())
    );
    let other = "other9";
    let out = repo.kardwt(&repo.base, &["add", other, "--timeout", "10"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.card_path(other)), "{out}");
    repo.kardwt_ok(&repo.base, &["verify", other]);
}

pub(crate) fn diff(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    let mut out = String::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push_str(&format!("removed {}\n", k.display())),
            Some(w) if w != v => out.push_str(&format!(
                "changed {}: {:?} -> {:?}\n",
                k.display(),
                String::from_utf8_lossy(v),
                String::from_utf8_lossy(w)
            )),
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        out.push_str(&format!("added {}\n", k.display()));
    }
    out
}

/// Nothing of card `card` exists: no directory, no branch, no registration, no record.
#[track_caller]
pub(crate) fn assert_nothing_of(repo: &TestRepo, card: &str) {
    let path = repo.card_path(card);
    assert!(!path.exists(), "{} exists after the kill", path.display());
    assert!(
        !repo.branch_exists(&format!("card/{card}")),
        "branch card/{card} exists"
    );
    let wts = repo.worktrees();
    assert_eq!(wts.len(), 1, "only the base should be registered: {wts:#?}");
}

/// `add card` now works: exit 0, its path, a ready record that verifies.
#[track_caller]
pub(crate) fn assert_add_succeeds(repo: &TestRepo, card: &str) -> PathBuf {
    let path = repo.card_path(card);
    let out = repo.kardwt(&repo.base, &["add", card, "--timeout", "60"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&path), "{out}");
    repo.kardwt_ok(&repo.base, &["verify", "--path", path.to_str().unwrap()]);
    let rec = repo.record(&path);
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert_eq!(rec["card"].as_str(), Some(card), "{rec:?}");
    let n = repo
        .worktrees()
        .iter()
        .filter(|(p, _, _)| *p == path)
        .count();
    assert_eq!(n, 1, "card {card} is registered {n} times");
    path
}

// ---------------------------------------------------------------------------------------------
// The phases.
