//! Finding and stopping the processes that hold a worktree (the first step of removal): every
//! process whose current directory is inside the tree, read from `/proc/<pid>/cwd`, except
//! the caller and its ancestors. SIGTERM first, SIGKILL after the grace period. Also the
//! descendants of this process, which a hook may leave behind after leaving its process group
//! (kardwt is their subreaper while a hook runs, see `sandbox/`).
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// Why the processes of this machine cannot be seen. kardwt then never calls a tree unused:
/// `remove` and `gc` refuse (`remove --force` goes on and signals nothing), `release` says it
/// signalled nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the processes inside it cannot be seen here ({0}), so nothing shows it is unused")]
pub struct Unseen(String);

/// Can kardwt see every process's current directory here? On Linux through `/proc`, which must
/// be mounted and show this process's own entry; elsewhere not yet.
pub fn can_see() -> Result<(), Unseen> {
    if !cfg!(target_os = "linux") {
        return Err(Unseen(
            "kardwt reads processes' directories through Linux's /proc only".into(),
        ));
    }
    std::fs::read_link("/proc/self/cwd")
        .map(drop)
        .map_err(|e| Unseen(format!("/proc/self/cwd cannot be read: {e}")))
}

/// The pids whose cwd lies inside `dir` (canonical), sparing this process and its ancestors;
/// an error when processes cannot be seen at all.
pub fn holding(dir: &Path) -> Result<Vec<i32>, Unseen> {
    can_see()?;
    let spared = ancestors();
    let entries =
        std::fs::read_dir("/proc").map_err(|e| Unseen(format!("/proc cannot be listed: {e}")))?;
    let mut pids: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !spared.contains(pid))
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| inside(&cwd, dir))
        })
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// Does a process with pid `pid` exist (a zombie not yet reaped included; one run by another
/// user too)? Asked of the kernel (`kill(pid, 0)`), so a missing `/proc` never makes a live
/// writer look gone.
pub fn exists(pid: i32) -> bool {
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// The command name of `pid` (`/proc/<pid>/comm`), or `?` when it cannot be read.
pub fn name(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|n| n.trim_end().to_owned())
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "?".to_owned())
}

/// Why `dir` is in use, in words ("in use: pid 4242 node"), when a process holds it or when
/// processes cannot be seen: automatic cleanup keeps such a tree instead of ending anything.
pub fn in_use(dir: &Path) -> Option<String> {
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

/// Is the cwd `/proc` reports inside `dir`? A directory deleted under a process reads as
/// `<path> (deleted)`: it still counts, so a tree a runner already deleted is released too.
fn inside(cwd: &Path, dir: &Path) -> bool {
    if cwd.starts_with(dir) {
        return true;
    }
    let text = cwd.as_os_str().to_string_lossy();
    text.strip_suffix(" (deleted)")
        .is_some_and(|gone| Path::new(gone).starts_with(dir))
}

/// This process and every ancestor up to init.
fn ancestors() -> Vec<i32> {
    let mut out = Vec::new();
    let mut pid = std::process::id() as i32;
    while pid > 1 && !out.contains(&pid) {
        out.push(pid);
        pid = parent_of(pid).unwrap_or(0);
    }
    out
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn alive(pid: i32) -> bool {
    // A zombie has exited; only its parent's wait is missing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

fn signal(pid: i32, sig: Signal) {
    if let Some(p) = Pid::from_raw(pid) {
        let _ = kill_process(p, sig);
    }
}

/// Every live descendant of this process, found through `/proc/<pid>/stat` parent links (an
/// orphan re-parented to us while we are the child subreaper is one). Empty off Linux.
pub fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut found = vec![me];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|&&(pid, ppid)| ppid == parent && !found.contains(&pid))
                .map(|&(pid, _)| pid)
                .collect::<Vec<_>>(),
        );
        at += 1;
    }
    found.remove(0);
    found
}

/// SIGKILL every descendant of this process and reap those that became our children, until
/// none is left alive (a descendant may fork while we look: look again, for up to 2 s).
/// Call it only when this process has no child of its own it still wants.
pub fn kill_descendants() -> Vec<i32> {
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
pub struct Released {
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
pub fn release(
    dir: &Path,
    grace: Duration,
    spared: &[std::path::PathBuf],
) -> Result<Released, Unseen> {
    let pids: Vec<i32> = holding(dir)?
        .into_iter()
        .filter(|pid| {
            !std::fs::read_link(format!("/proc/{pid}/cwd"))
                .is_ok_and(|cwd| spared.iter().any(|s| inside(&cwd, s)))
        })
        .collect();
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
        let chain = ancestors();
        assert_eq!(chain.first(), Some(&me));
        let cwd = std::env::current_dir().unwrap();
        assert!(!holding(&cwd).unwrap().contains(&me));
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
