//! Whether a worktree's checkout is complete: git's `initializing` mark, the
//! index and whether it follows HEAD, the tracked files (judged in-process by
//! [`crate::git::checkout_gap`]); and the one command that repairs an incomplete one.
use std::path::Path;

/// Why a worktree's checkout is not complete: such a tree is never recorded
/// `ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Incomplete {
    /// git's `<admin dir>/locked` still says `initializing`: `git worktree add` never finished.
    Initializing,
    /// The worktree has no index: its checkout never finished (or never ran).
    NoIndex,
    /// Tracked files are missing from the tree (how many, and the first few names).
    Missing(usize, Vec<String>),
    /// The index is empty although HEAD's tree is not: git exited 0 from a checkout one of
    /// its own reads broke.
    EmptyIndex,
    /// The index does not hold HEAD's entries (how many differ, of how many, the first few).
    Unmatched(usize, usize, Vec<String>),
    /// The checkout could not be judged: something it needs could not be read.
    Unreadable(String),
}

impl Incomplete {
    /// One phrase for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Incomplete::Initializing => {
                "its checkout never completed (git's admin dir still says `initializing`)".into()
            }
            Incomplete::NoIndex => "its checkout never completed (it has no index)".into(),
            Incomplete::Missing(n, first) => format!(
                "{n} tracked file(s) are missing from it (e.g. {})",
                first.join(", ")
            ),
            Incomplete::EmptyIndex => {
                "its checkout never completed (its index is empty, HEAD's tree is not)".into()
            }
            Incomplete::Unmatched(n, of, first) => format!(
                "its checkout never completed (its index differs from HEAD's {of} entries in {n}, e.g. {})",
                first.join(", ")
            ),
            Incomplete::Unreadable(why) => format!("its checkout could not be checked ({why})"),
        }
    }

    /// The one command that repairs the tree without losing work, last on its line so it can
    /// be copied: a tree whose checkout never completed was never usable, so it is removed
    /// (its branch is kept) and created again; missing tracked files are written back from the
    /// index, which overwrites nothing that exists (or their deletion is staged with git rm).
    pub(crate) fn repair(&self, path: &Path) -> String {
        let p = crate::ground::quote::sh_path(path);
        match self {
            Incomplete::Initializing
            | Incomplete::NoIndex
            | Incomplete::EmptyIndex
            | Incomplete::Unmatched(..) => format!(
                "it was never usable: remove it (its branch is kept), then create it again: git worktree remove --force --force {p}"
            ),
            Incomplete::Missing(..) => format!(
                "restore the missing files and nothing else (or stage their deletion with git rm): git -C {p} ls-files -z --deleted | git -C {p} checkout-index -z --stdin"
            ),
            Incomplete::Unreadable(_) => format!(
                "make sure it can be read (git -C {p} status shows what git sees), then run the command again"
            ),
        }
    }
}

/// The pure judgement behind [`checkout_incomplete`]: the content of `<admin>/locked` (if
/// any), whether the index exists, and `git ls-files --deleted -z`'s output (`None`: not asked).
pub(super) fn incomplete_from(
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
pub(crate) enum Probe {
    /// Only git's `initializing` mark: a delegated checkout that has not run yet.
    Mark,
    /// The mark and the index: a reused tree, whose deleted files are the user's work.
    Index,
    /// The mark, an index that is not empty when HEAD is not, and every tracked file: a tree
    /// someone may have worked in (a staged change is theirs).
    Files,
    /// The mark, an index holding exactly HEAD's entries, and every tracked file: a tree git
    /// has just checked out.
    Head,
}

/// Is the checkout of the worktree at `path` (admin dir `admin`) incomplete? Cheap: two file
/// probes and, for [`Probe::Files`] and [`Probe::Head`], the index and HEAD's tree read in
/// process and one `lstat` per tracked file (measured: 5,000 files in a few milliseconds).
pub(crate) fn checkout_incomplete(path: &Path, admin: &Path, probe: Probe) -> Option<Incomplete> {
    // Non-blocking and bounded: a FIFO planted as `locked` must not hang the probe.
    let locked = crate::git::read_bounded(&admin.join("locked"), 64 * 1024)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    if probe == Probe::Mark {
        return incomplete_from(locked.as_deref(), true, None);
    }
    let has_index = admin.join("index").is_file();
    if let Some(why) = incomplete_from(locked.as_deref(), has_index, None) {
        return Some(why);
    }
    let follow = match probe {
        Probe::Mark | Probe::Index => return None,
        Probe::Files => crate::git::Follow::Loosely,
        Probe::Head => crate::git::Follow::Exactly,
    };
    crate::git::checkout_gap(path, admin, follow).map(|gap| match gap {
        crate::git::Gap::EmptyIndex => Incomplete::EmptyIndex,
        crate::git::Gap::Unmatched(n, of, first) => Incomplete::Unmatched(n, of, first),
        crate::git::Gap::Missing(n, first) => Incomplete::Missing(n, first),
        crate::git::Gap::Unreadable(why) => Incomplete::Unreadable(why),
    })
}
