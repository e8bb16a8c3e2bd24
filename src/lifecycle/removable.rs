//! Whether a tree may be removed now: the one decision `remove`, `gc` and the runner's disposal
//! make, its checks in one order (a mount, a nested repository, uncommitted work, what `git
//! worktree remove` would refuse, processes), each reason said in one wording.
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::lifecycle::dirty;
pub(crate) use crate::lifecycle::release::Processes;
use crate::state::Record;

/// The tree a decision is about: its path, admin dir, record, and whether git has it locked.
pub(crate) struct Tree<'a> {
    pub path: &'a Path,
    pub admin: &'a Path,
    pub rec: &'a Record,
    pub locked: bool,
}

/// How it would be removed: forced (its work discarded), and what happens to its processes.
#[derive(Clone, Copy)]
pub(crate) struct How {
    pub force: bool,
    pub processes: Processes,
}

/// It may be removed: clean, or forced with whatever it holds.
#[derive(Debug)]
pub(crate) enum Removable {
    Clean,
    /// Forced with this many dirty paths.
    Forced {
        dirty: usize,
    },
    /// Forced without knowing what it holds: why that could not be told.
    ForcedUnjudged(String),
}

/// Why it may not be removed now, in the order the checks run (the first found is the answer).
#[derive(Debug)]
pub enum Unremovable {
    /// A file system is mounted in it (or at it): `mounts`, absolute. Forced or not.
    Mounted { mounts: Vec<PathBuf> },
    /// It holds another repository or worktree, `first` of them (absolute) `nested`. Forced
    /// or not.
    Nested { first: PathBuf, nested: Vec<String> },
    /// A check could not finish, so nothing is proven; `forcible` when `--force` would pass it
    /// (only the check for uncommitted work: a mount or a nested tree stops a forced removal too).
    Unproven {
        cause: anyhow::Error,
        forcible: bool,
    },
    /// Uncommitted changes or untracked files (link-aware, flagged index entries included).
    Dirty { dirt: Vec<String> },
    /// What `git worktree remove` would refuse: a lock, the main worktree, submodules.
    WouldRefuse { blockers: Vec<dirty::Blocker> },
    /// Its processes would be released but cannot be seen.
    Unseen { unseen: crate::sys::Unseen },
    /// A process works in it and this removal keeps a tree in use (gc).
    InUse { why: String },
}

impl Unremovable {
    /// The reason as one clause about `subject` (a path, or "it"): the one wording every
    /// command shows.
    pub fn said_of(&self, subject: &str) -> String {
        match self {
            Unremovable::Mounted { mounts } => format!(
                "{subject} has a file system mounted in it ({})",
                mounts
                    .iter()
                    .map(|m| m.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unremovable::Nested { nested, .. } => format!(
                "{subject} holds another repository or worktree ({})",
                first_five(nested)
            ),
            Unremovable::Unproven { .. } => unproven(subject),
            Unremovable::Dirty { dirt } => format!(
                "{subject} has uncommitted changes or untracked files ({})",
                first_five(dirt)
            ),
            Unremovable::WouldRefuse { blockers } => format!(
                "git worktree remove would refuse {subject}: {}",
                blockers
                    .iter()
                    .map(|b| b.check.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Unremovable::Unseen { unseen } => format!("{subject} cannot be released: {unseen}"),
            Unremovable::InUse { why } => format!("{subject} is {why}"),
        }
    }

    /// [`Self::said_of`], with the cause of an unfinished check where one line must say it all.
    pub fn said_whole(&self, subject: &str) -> String {
        match self {
            Unremovable::Unproven { cause, .. } => {
                format!("{}: {cause:#}", self.said_of(subject))
            }
            _ => self.said_of(subject),
        }
    }

    /// Whether the tree may still be released while it is kept (the runner does so when its
    /// agent is done with it): not when a mount or an unfinished check leaves what it holds
    /// unknown, nor when its processes cannot be seen or must be kept.
    pub fn releasable(&self) -> bool {
        matches!(
            self,
            Unremovable::Nested { .. }
                | Unremovable::Dirty { .. }
                | Unremovable::WouldRefuse { .. }
        )
    }
}

/// May the tree be removed now, `how`? Every check, in one order: a mount and a nested
/// repository (forced or not), uncommitted work (unless forced: a tree not proven clean is
/// refused, a forced one removed with whatever it holds), what `git worktree remove` would
/// refuse, and the processes (unseen ones refused unless forced; a tree in use kept when
/// asked to keep one).
pub(crate) fn decide(ctx: &Context, tree: &Tree, how: How) -> Result<Removable, Unremovable> {
    let path = tree.path;
    let unproven = |cause| Unremovable::Unproven {
        cause,
        forcible: false,
    };
    let mounts = crate::sys::mounts_under(path).map_err(|e| {
        unproven(
            anyhow::Error::new(e).context("could not tell whether a file system is mounted in it"),
        )
    })?;
    if !mounts.is_empty() {
        let mounts = mounts.iter().map(|m| path.join(m)).collect();
        return Err(Unremovable::Mounted { mounts });
    }
    let nested = dirty::nested_trees(path).map_err(unproven)?;
    if let Some(first) = nested.first() {
        let first = path.join(first);
        return Err(Unremovable::Nested { first, nested });
    }
    let links = ctx.links_from();
    let verdict = match dirty::dirty(&links, &ctx.repo.common_dir, path, tree.rec) {
        Ok(dirt) if dirt.is_empty() => Removable::Clean,
        Ok(dirt) if how.force => Removable::Forced { dirty: dirt.len() },
        Ok(dirt) => return Err(Unremovable::Dirty { dirt }),
        // --force discards whatever the tree holds: not knowing what that is stops nothing.
        Err(e) if how.force => Removable::ForcedUnjudged(format!("{e:#}")),
        Err(cause) => {
            return Err(Unremovable::Unproven {
                cause,
                forcible: true,
            })
        }
    };
    let force = match how.force {
        true => crate::git::Force::Once,
        false => crate::git::Force::No,
    };
    let blockers = dirty::removal_blockers(&ctx.repo.base, path, tree.admin, tree.locked, force)
        .map_err(unproven)?;
    if !blockers.is_empty() {
        return Err(Unremovable::WouldRefuse { blockers });
    }
    match how.processes {
        Processes::Release(_) if how.force => {}
        Processes::Release(_) => {
            crate::sys::can_see_processes().map_err(|unseen| Unremovable::Unseen { unseen })?
        }
        Processes::KeepInUse => {
            crate::sys::can_see_processes().map_err(|unseen| Unremovable::Unseen { unseen })?;
            if let Some(why) = crate::sys::in_use(path) {
                return Err(Unremovable::InUse { why });
            }
        }
    }
    Ok(verdict)
}

/// [`Unremovable::Unproven`]'s wording about `subject`.
pub(super) fn unproven(subject: &str) -> String {
    format!("{subject} could not be proven to hold no uncommitted work")
}

/// The first five of `all`, and an ellipsis when there are more.
fn first_five(all: &[String]) -> String {
    let shown: Vec<&str> = all.iter().take(5).map(String::as_str).collect();
    format!(
        "{}{}",
        shown.join(", "),
        if all.len() > 5 { ", …" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_one_wording_about_its_subject() {
        let blocker = dirty::lock_blocker(Path::new("/r/card-1"));
        let many: Vec<String> = (1..=7).map(|i| format!("f{i}")).collect();
        let cases = [
            Unremovable::Mounted {
                mounts: vec![PathBuf::from("/r/card-1/data")],
            },
            Unremovable::Nested {
                first: PathBuf::from("/r/card-1/build/inner"),
                nested: vec!["build/inner".into()],
            },
            Unremovable::Unproven {
                cause: anyhow::anyhow!("git status failed"),
                forcible: true,
            },
            Unremovable::Dirty { dirt: many },
            Unremovable::WouldRefuse {
                blockers: vec![blocker],
            },
            Unremovable::InUse {
                why: "in use: pid 42 sleep".into(),
            },
        ];
        let said: Vec<String> = cases.iter().map(|c| c.said_whole("it")).collect();
        assert_eq!(
            said,
            [
                "it has a file system mounted in it (/r/card-1/data)",
                "it holds another repository or worktree (build/inner)",
                "it could not be proven to hold no uncommitted work: git status failed",
                "it has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …)",
                "git worktree remove would refuse it: it is locked (git worktree lock)",
                "it is in use: pid 42 sleep",
            ]
        );
        let releasable: Vec<bool> = cases.iter().map(Unremovable::releasable).collect();
        assert_eq!(releasable, [false, true, false, true, true, false]);
        assert_eq!(
            cases[3].said_of("/r/card-1"),
            "/r/card-1 has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …)"
        );
    }
}
