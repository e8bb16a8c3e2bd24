//! Finding and stopping the processes that hold a worktree (the first step of removal): every
//! process whose current directory is inside the tree, except the caller and its ancestors.
//! SIGTERM first, SIGKILL after the grace period. Also the descendants of this process, which a
//! hook may leave behind after leaving its process group (kardwt is their subreaper while a hook
//! runs on Linux, see `sandbox/`). What the system shows is read in `linux` (`/proc`) and
//! `macos` (the kernel's process info, through `sysinfo`); what is done with it (who is spared,
//! what is inside, who descends from whom) is here, the same everywhere.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod unseen;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use unseen as os;

/// Why the processes of this machine cannot be seen. kardwt then never calls a tree unused:
/// `remove` and `gc` refuse (`remove --force` goes on and signals nothing), `release` says it
/// signalled nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the processes inside it cannot be seen here ({0}), so nothing shows it is unused")]
pub struct Unseen(String);

impl Unseen {
    fn new(why: impl Into<String>) -> Unseen {
        Unseen(why.into())
    }
}

/// Can kardwt see every process's current directory here? It must see its own: on Linux
/// through `/proc` (mounted, showing this process's entry), on macOS through the kernel's
/// process info; on any other system never.
pub(crate) fn can_see() -> Result<(), Unseen> {
    os::Table::take().map(drop)
}

/// The pids whose cwd lies inside `dir` (canonical), sparing this process and its ancestors;
/// an error when processes cannot be seen at all.
pub(crate) fn holding(dir: &Path) -> Result<Vec<i32>, Unseen> {
    Ok(holders(&os::Table::take()?, dir, &[]))
}

/// The processes of `table` holding `dir` but none inside a `spared` directory, nor this
/// process or its ancestors.
fn holders(table: &os::Table, dir: &Path, spared: &[PathBuf]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let ancestors = ancestors(me, |pid| table.parent(pid));
    inside_only(table.cwds(), dir, spared, &ancestors)
}

/// Of the `(pid, cwd)` pairs, the pids whose cwd is inside `dir` and inside none of `spared`,
/// leaving out `ancestors`: sorted, each once (pure).
fn inside_only(
    cwds: Vec<(i32, PathBuf)>,
    dir: &Path,
    spared: &[PathBuf],
    ancestors: &[i32],
) -> Vec<i32> {
    let mut pids: Vec<i32> = cwds
        .into_iter()
        .filter(|(pid, _)| !ancestors.contains(pid))
        .filter(|(_, cwd)| inside(cwd, dir) && !spared.iter().any(|s| inside(cwd, s)))
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Does a process with pid `pid` exist (a zombie not yet reaped included; one run by another
/// user too)? Asked of the kernel (`kill(pid, 0)`), so a missing `/proc` never makes a live
/// writer look gone.
pub(crate) fn exists(pid: i32) -> bool {
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// The command name of `pid`, or `?` when it cannot be read.
pub(crate) fn name(pid: i32) -> String {
    os::name(pid)
        .map(|n| n.trim_end().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "?".to_owned())
}

/// Why `dir` is in use, in words ("in use: pid 4242 node"), when a process holds it or when
/// processes cannot be seen: automatic cleanup keeps such a tree instead of ending anything.
pub(crate) fn in_use(dir: &Path) -> Option<String> {
    let pids = match holding(dir) {
        Ok(pids) => pids,
        Err(unseen) => return Some(unseen.to_string()),
    };
    if pids.is_empty() {
        return None;
    }
    let shown: Vec<String> = pids
        .iter()
        .take(3)
        .map(|&p| format!("pid {p} {}", name(p)))
        .collect();
    let more = match pids.len().saturating_sub(3) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!("in use: {}{more}", shown.join(", ")))
}

/// Is the cwd a system reports inside `dir`? A directory deleted under a process reads on Linux
/// as `<path> (deleted)`: it still counts, so a tree a runner already deleted is released too.
fn inside(cwd: &Path, dir: &Path) -> bool {
    if cwd.starts_with(dir) {
        return true;
    }
    let text = cwd.as_os_str().to_string_lossy();
    text.strip_suffix(" (deleted)")
        .is_some_and(|gone| Path::new(gone).starts_with(dir))
}

/// `me` and every ancestor up to init, as `parent` links them (pure; a loop or a missing link
/// ends the chain).
fn ancestors(me: i32, parent: impl Fn(i32) -> Option<i32>) -> Vec<i32> {
    let mut out = Vec::new();
    let mut pid = me;
    while pid > 1 && !out.contains(&pid) {
        out.push(pid);
        pid = parent(pid).unwrap_or(0);
    }
    out
}

/// Is `pid` running (neither gone nor a zombie, which has exited and only waits for its
/// parent)? Where the system cannot tell, a process that exists counts as running.
fn alive(pid: i32) -> bool {
    os::alive(pid).unwrap_or_else(|| exists(pid))
}

fn signal(pid: i32, sig: Signal) {
    if let Some(p) = Pid::from_raw(pid) {
        let _ = kill_process(p, sig);
    }
}

/// Every live descendant of this process, found through parent links (an orphan re-parented to
/// us while we are the child subreaper is one). Empty where processes cannot be seen.
pub(crate) fn descendants() -> Vec<i32> {
    let parents = os::Table::take().map(|t| t.parents()).unwrap_or_default();
    descendants_among(&parents, std::process::id() as i32)
}

/// The descendants of `root` among the `(pid, parent)` links, nearest first (pure).
fn descendants_among(parents: &[(i32, i32)], root: i32) -> Vec<i32> {
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        for &(pid, ppid) in parents {
            if ppid == parent && !found.contains(&pid) {
                found.push(pid);
            }
        }
        at += 1;
    }
    found.remove(0);
    found
}

/// This process as the child subreaper (Linux, `PR_SET_CHILD_SUBREAPER`) for as long as the
/// guard lives: a descendant whose parent dies is re-parented to us, not to init. Elsewhere, in
/// the `portable` build and if the kernel refuses, it does nothing: what the caller kills then
/// is its own children and their process group.
pub(crate) struct Subreaper {
    /// The kernel took it, so the drop has something to undo.
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    set: bool,
}

impl Subreaper {
    pub(crate) fn begin() -> Subreaper {
        Subreaper {
            #[cfg(all(target_os = "linux", not(feature = "portable")))]
            set: rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok(),
        }
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(feature = "portable")))]
        if self.set {
            let _ = rustix::process::set_child_subreaper(None);
        }
    }
}

/// SIGKILL every descendant of this process and reap those that became our children, until
/// none is left alive (a descendant may fork while we look: look again, for up to 2 s).
/// Call it only when this process has no child of its own it still wants.
pub(crate) fn kill_descendants() -> Vec<i32> {
    let mut killed = Vec::new();
    let until = later(Duration::from_secs(2));
    loop {
        let found = descendants();
        let live: Vec<i32> = found.iter().copied().filter(|&p| alive(p)).collect();
        for &pid in &live {
            signal(pid, Signal::KILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        for &pid in &found {
            reap(pid);
        }
        if live.is_empty() || Instant::now() >= until {
            return killed;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Collect the exit status of `pid` if it is our child and has ended (no wait otherwise).
fn reap(pid: i32) {
    if let Some(p) = Pid::from_raw(pid) {
        let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
    }
}

/// `now + wait`, saturating instead of panicking on an absurd duration.
fn later(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}

/// What releasing the processes did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub(crate) struct Released {
    pub terminated: Vec<i32>,
    pub killed: Vec<i32>,
}

/// In words: `no process left`, `2 processes terminated (41, 42)`, ….
impl std::fmt::Display for Released {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |pids: &[i32]| {
            let n = pids.len();
            let shown: Vec<String> = pids.iter().map(i32::to_string).collect();
            format!(
                "{n} process{} ({})",
                if n == 1 { "" } else { "es" },
                shown.join(", ")
            )
        };
        match (self.terminated.as_slice(), self.killed.as_slice()) {
            ([], []) => f.write_str("no process left"),
            (t, []) => write!(f, "{} terminated", list(t)),
            ([], k) => write!(f, "{} killed after the grace period", list(k)),
            (t, k) => write!(
                f,
                "{} terminated, {} killed after the grace period",
                list(t),
                list(k)
            ),
        }
    }
}

/// SIGTERM every process holding `dir` but those inside one of the `spared` directories (trees
/// nested in it, which are not its to release), wait up to `grace`, SIGKILL the survivors. An
/// interrupt of kardwt cuts the grace short: the survivors are killed at once.
pub(crate) fn release(dir: &Path, grace: Duration, spared: &[PathBuf]) -> Result<Released, Unseen> {
    let pids = holders(&os::Table::take()?, dir, spared);
    for &pid in &pids {
        signal(pid, Signal::TERM);
    }
    // Any grace saturates (`--grace 18446744073709551615` waits as long as it can, never panics).
    let until = later(grace);
    while pids.iter().any(|&p| alive(p))
        && Instant::now() < until
        && crate::sys::signals::interrupted().is_none()
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    for &pid in &survivors {
        signal(pid, Signal::KILL);
    }
    let until = Instant::now() + Duration::from_secs(2);
    while survivors.iter().any(|&p| alive(p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Released {
        terminated: pids
            .into_iter()
            .filter(|p| !survivors.contains(p))
            .collect(),
        killed: survivors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_read_as_words() {
        let r =
            |terminated: Vec<i32>, killed: Vec<i32>| Released { terminated, killed }.to_string();
        assert_eq!(r(vec![], vec![]), "no process left");
        assert_eq!(r(vec![7], vec![]), "1 process (7) terminated");
        assert_eq!(
            r(vec![7, 8], vec![9]),
            "2 processes (7, 8) terminated, 1 process (9) killed after the grace period"
        );
    }

    #[test]
    fn the_caller_and_its_ancestors_are_spared() {
        let me = std::process::id() as i32;
        let table = os::Table::take().unwrap();
        let chain = ancestors(me, |pid| table.parent(pid));
        assert_eq!(chain.first(), Some(&me));
        assert!(chain.len() > 1, "no parent seen: {chain:?}");
        let cwd = std::env::current_dir().unwrap();
        assert!(!holding(&cwd).unwrap().contains(&me));
    }

    #[test]
    fn ancestors_follow_parent_links_up_to_init_and_stop_at_a_loop_or_a_gap() {
        let links = std::collections::HashMap::from([(40, 30), (30, 20), (20, 1), (7, 8), (8, 7)]);
        let parent = |pid: i32| links.get(&pid).copied();
        assert_eq!(ancestors(40, parent), [40, 30, 20]);
        assert_eq!(ancestors(7, parent), [7, 8], "a loop ends the chain");
        assert_eq!(ancestors(99, parent), [99], "an unknown parent ends it");
        assert_eq!(
            ancestors(1, parent),
            Vec::<i32>::new(),
            "init is never spared"
        );
    }

    #[test]
    fn holders_are_inside_the_dir_not_inside_a_spared_one_nor_ancestors_sorted_once() {
        let tree = Path::new("/w/tree");
        let cwds = vec![
            (30, PathBuf::from("/w/tree/src")),
            (12, PathBuf::from("/w/tree")),
            (12, PathBuf::from("/w/tree")),
            (50, PathBuf::from("/w/treehouse")),
            (60, PathBuf::from("/w/tree/nested/deep")),
            (70, PathBuf::from("/w/tree/gone (deleted)")),
            (80, PathBuf::from("/elsewhere")),
            (90, PathBuf::from("/w/tree/bin")),
        ];
        let spared = [PathBuf::from("/w/tree/nested")];
        assert_eq!(inside_only(cwds, tree, &spared, &[90]), [12, 30, 70]);
    }

    #[test]
    fn descendants_are_found_through_every_generation() {
        let links = [(11, 10), (12, 10), (13, 11), (14, 13), (20, 1), (21, 20)];
        assert_eq!(descendants_among(&links, 10), [11, 12, 13, 14]);
        assert_eq!(descendants_among(&links, 14), Vec::<i32>::new());
        let me = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(descendants().contains(&(child.id() as i32)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!descendants().contains(&me));
    }

    #[test]
    fn names_and_liveness_are_read_from_the_system() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Until the child has exec'd it still carries the test thread's name.
        let until = Instant::now() + Duration::from_secs(5);
        while name(pid) != "sleep" && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(name(pid), "sleep");
        assert!(alive(pid));
        child.kill().unwrap();
        // Killed but not yet waited for: a zombie, which has exited.
        let until = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(pid), "a zombie counts as ended");
        assert!(exists(pid), "a zombie still exists until it is reaped");
        child.wait().unwrap();
        assert!(!exists(pid) && !alive(pid));
        assert_eq!(name(pid), "?");
    }

    #[test]
    fn a_process_inside_the_dir_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&dir)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(holding(&dir).unwrap().contains(&pid));
        let released = release(&dir, Duration::from_secs(2), &[]).unwrap();
        assert!(
            released.terminated.contains(&pid) || released.killed.contains(&pid),
            "{released:?}"
        );
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
