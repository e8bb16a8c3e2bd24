//! Whether a worktree's checkout is complete (SPEC §17.5): git's `initializing` mark, the
//! index, the tracked files; and the one command that repairs an incomplete one.
use std::path::Path;

/// Why a worktree's checkout is not complete (SPEC §17.5): such a tree is never recorded
/// `ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// git's `<admin dir>/locked` still says `initializing`: `git worktree add` never finished.
    Initializing,
    /// The worktree has no index: its checkout never finished (or never ran).
    NoIndex,
    /// Tracked files are missing from the tree (how many, and the first few names).
    Missing(usize, Vec<String>),
}

impl Incomplete {
    /// One phrase for messages.
    pub fn describe(&self) -> String {
        match self {
            Incomplete::Initializing => {
                "its checkout never completed (git's admin dir still says `initializing`)".into()
            }
            Incomplete::NoIndex => "its checkout never completed (it has no index)".into(),
            Incomplete::Missing(n, first) => format!(
                "{n} tracked file(s) are missing from it (e.g. {})",
                first.join(", ")
            ),
        }
    }

    /// The one command that repairs the tree without losing work, last on its line so it can
    /// be copied: a tree whose checkout never completed was never usable, so it is removed
    /// (its branch is kept) and created again; missing tracked files are written back from the
    /// index, which overwrites nothing that exists (or their deletion is staged with git rm).
    pub fn repair(&self, path: &Path) -> String {
        let p = crate::quote::sh_path(path);
        match self {
            Incomplete::Initializing | Incomplete::NoIndex => format!(
                "it was never usable: remove it (its branch is kept), then create it again: git worktree remove --force --force {p}"
            ),
            Incomplete::Missing(..) => format!(
                "restore the missing files and nothing else (or stage their deletion with git rm): git -C {p} ls-files -z --deleted | git -C {p} checkout-index -z --stdin"
            ),
        }
    }
}

/// The pure judgement behind [`checkout_incomplete`]: the content of `<admin>/locked` (if
/// any), whether the index exists, and `git ls-files --deleted -z`'s output (`None`: not asked).
pub fn judge_checkout(
    locked: Option<&str>,
    has_index: bool,
    deleted: Option<&str>,
) -> Option<Incomplete> {
    if locked.is_some_and(|l| l.trim() == "initializing") {
        return Some(Incomplete::Initializing);
    }
    if !has_index {
        return Some(Incomplete::NoIndex);
    }
    let names: Vec<&str> = deleted?.split('\0').filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return None;
    }
    let first = names.iter().take(3).map(|n| (*n).to_owned()).collect();
    Some(Incomplete::Missing(names.len(), first))
}

/// How much of a checkout [`checkout_incomplete`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Only git's `initializing` mark: a delegated checkout that has not run yet.
    Mark,
    /// The mark and the index: a reused tree, whose deleted files are the user's work.
    Index,
    /// The mark, the index and every tracked file.
    Files,
}

/// Is the checkout of the worktree at `path` (admin dir `admin`) incomplete? Cheap: two file
/// probes and, for [`Probe::Files`], one `git ls-files --deleted` (a stat per tracked file:
/// about 4 ms for 3,000 files).
pub fn checkout_incomplete(path: &Path, admin: &Path, probe: Probe) -> Option<Incomplete> {
    // Non-blocking and bounded: a FIFO planted as `locked` must not hang the probe.
    let locked = crate::repo::read_bounded(&admin.join("locked"), 64 * 1024)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    if probe == Probe::Mark {
        return judge_checkout(locked.as_deref(), true, None);
    }
    let has_index = admin.join("index").is_file();
    let deleted = match has_index && probe == Probe::Files {
        true => {
            // A tree git cannot even list is not complete either.
            let out = crate::git::ls_files_deleted(path);
            match out {
                Ok(o) if o.ok => Some(o.stdout),
                _ => return Some(Incomplete::NoIndex),
            }
        }
        false => None,
    };
    judge_checkout(locked.as_deref(), has_index, deleted.as_deref())
}
