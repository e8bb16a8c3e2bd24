//! Processes as Linux's `/proc` shows them: `/proc/<pid>/cwd` for the directory, the `stat`
//! line for the parent and the state, `comm` for the name. Read when asked, never kept: `/proc`
//! is always current.
use std::path::PathBuf;

use super::Unseen;

/// What `/proc` shows; taking it checks that `/proc` is there at all.
pub(super) struct Table(());

impl Table {
    /// `/proc` mounted and showing this process's own cwd, or why not.
    pub(super) fn take() -> Result<Table, Unseen> {
        std::fs::read_link("/proc/self/cwd")
            .map(|_| Table(()))
            .map_err(|e| Unseen::new(format!("/proc/self/cwd cannot be read: {e}")))
    }

    /// Every process whose cwd can be read, with it.
    pub(super) fn cwds(&self) -> Vec<(i32, PathBuf)> {
        pids()
            .filter_map(|pid| Some((pid, std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?)))
            .collect()
    }

    /// The parent of `pid`, if it is there.
    pub(super) fn parent(&self, pid: i32) -> Option<i32> {
        let stat = stat(pid)?;
        stat.split_whitespace().nth(1)?.parse().ok()
    }

    /// Every `(pid, parent)` link.
    pub(super) fn parents(&self) -> Vec<(i32, i32)> {
        pids()
            .filter_map(|pid| Some((pid, self.parent(pid)?)))
            .collect()
    }
}

fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
}

/// The fields of `/proc/<pid>/stat` after the command name, which may hold spaces and
/// parentheses: what follows the last `)` is fixed (the state, then the parent).
fn stat(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat[stat.rfind(')')? + 1..].to_owned())
}

/// The command name (`/proc/<pid>/comm`).
pub(super) fn name(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()
}

/// Running: there and not a zombie. `/proc` always knows: gone is not running.
pub(super) fn alive(pid: i32) -> Option<bool> {
    Some(stat(pid).is_some_and(|s| !s.trim_start().starts_with('Z')))
}
