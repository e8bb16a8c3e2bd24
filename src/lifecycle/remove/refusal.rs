//! How a removal's refusals read: each [`Refusal`]'s message, the code its variant fixes and
//! what to do by hand, and the one way a refusal leaves, as a [`Refused`] in a [`Fail`].
use std::path::Path;

use super::Refusal;
use crate::ground::error::{code_or, Code, Fail, Kind};
use crate::lifecycle::removable::{self, Unremovable};

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNTOUCHED: &str = "nothing was released or removed";
        match self {
            Refusal::Untouched { path, what, .. } => {
                write!(f, "{} was not removed: {what}; {UNTOUCHED}", path.display())
            }
            Refusal::GitRefused { path, why, .. } => {
                write!(f, "git worktree remove refused {}: {why}", path.display())
            }
            Refusal::Unproven { path, .. } => write!(
                f,
                "{}; {UNTOUCHED}",
                removable::unproven(&path.display().to_string())
            ),
            Refusal::NoLongerCollectable { path, why } => write!(
                f,
                "{} is no longer collectable: {why}; {UNTOUCHED}",
                path.display()
            ),
            Refusal::Unremovable { path, why } => {
                write!(
                    f,
                    "{}; {UNTOUCHED}",
                    why.said_of(&path.display().to_string())
                )
            }
        }
    }
}

/// A [`Refusal`] as an error: its message, its cause as the source, its code and hints.
#[derive(Debug)]
pub(crate) struct Refused(pub Refusal);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Refusal::Untouched { cause, .. } | Refusal::Unproven { cause, .. } => {
                Some(cause.as_ref())
            }
            _ => None,
        }
    }
}

/// The one way a refusal leaves: as the [`Fail`] its variant's code fixes.
impl From<Refusal> for anyhow::Error {
    fn from(refusal: Refusal) -> anyhow::Error {
        anyhow::Error::new(Fail::from(Refused(refusal)))
    }
}

impl Kind for Refused {
    fn code(&self) -> Code {
        match &self.0 {
            Refusal::Untouched { cause, .. } | Refusal::Unproven { cause, .. } => {
                code_or(cause, Code::Failed)
            }
            Refusal::Unremovable {
                why: Unremovable::Mounted { .. },
                ..
            } => Code::Refused,
            _ => Code::Failed,
        }
    }
    fn hints(&self) -> Vec<String> {
        let hint = match &self.0 {
            Refusal::Untouched { .. } | Refusal::NoLongerCollectable { .. } => return Vec::new(),
            Refusal::GitRefused { card, .. } => format!(
                "processes were released and the cleanup hook ran, so its record is now failed \
                 (git kardwt add {card} prepares it again); fix what git names and run remove again"
            ),
            Refusal::Unproven { path, forcible, .. } => unproven_fix(path, *forcible),
            Refusal::Unremovable { path, why } => fix(path, why),
        };
        vec![hint]
    }
}

/// What to do about a tree not proven clean (`--force` too, when it would pass the check).
fn unproven_fix(path: &Path, forcible: bool) -> String {
    format!(
        "run the command again; if this repeats, git -C {} status names the problem{}",
        crate::ground::quote::sh_path(path),
        if forcible {
            "; --force removes the tree with whatever it holds"
        } else {
            ""
        }
    )
}

/// What to do by hand about `why`, the tree at `path`'s, then run remove again.
fn fix(path: &Path, why: &Unremovable) -> String {
    match why {
        Unremovable::Unproven { forcible, .. } => unproven_fix(path, *forcible),
        Unremovable::Dirty { .. } => {
            "commit, stash or delete them, or pass --force to discard them".into()
        }
        Unremovable::WouldRefuse { blockers } => format!(
            "{}; then run remove again",
            blockers
                .iter()
                .map(|b| b.fix.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Unremovable::Unseen { .. } => "end the processes working in it yourself, then pass \
                                       --force (nothing is signalled then)"
            .into(),
        Unremovable::InUse { .. } => "automatic cleanup never ends a process: stop it, or \
                                      remove the tree yourself with git kardwt remove"
            .into(),
        Unremovable::Mounted { mounts } => format!(
            "unmount it (umount {}), then run remove again; --force does not remove it: \
             kardwt never deletes across a file system boundary",
            mounts
                .first()
                .map(|m| crate::ground::quote::sh_path(m))
                .unwrap_or_default()
        ),
        Unremovable::Nested { first, .. } => {
            let shown = crate::ground::quote::sh_path(first);
            format!(
                "check it for uncommitted work and unpushed commits (git -C {shown} status), \
                 move it out of the tree or delete it by hand (git worktree remove {shown}, \
                 for a worktree), then run remove again; --force does not remove it"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_refusals_variant_fixes_its_code_and_a_wrapped_lock_keeps_its_own() {
        let path = PathBuf::from("/r/card-1");
        let dirt: Vec<String> = (1..=6).map(|i| format!("f{i}")).collect();
        let dirty = Refused(Refusal::Unremovable {
            path: path.clone(),
            why: Unremovable::Dirty { dirt },
        });
        assert_eq!(dirty.code(), Code::Failed);
        assert_eq!(
            dirty.to_string(),
            "/r/card-1 has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …); \
             nothing was released or removed"
        );
        let deadline = anyhow::Error::new(Fail::new(Code::Deadline, "the lock is held"));
        let untouched = Refusal::Untouched {
            path,
            what: "the repository lock could not be taken",
            cause: deadline,
        };
        assert!(Refused(Refusal::NoLongerCollectable {
            path: PathBuf::from("/r/card-2"),
            why: "x".into()
        })
        .hints()
        .is_empty());
        // `?` (here `from`) is the only way out, and it keeps the code the variant fixes.
        let err = anyhow::Error::from(untouched);
        assert_eq!(crate::ground::error::code_of(&err), Some(Code::Deadline));
        assert!(matches!(
            crate::ground::error::kind_of::<Refused>(&err),
            Some(Refused(Refusal::Untouched { .. }))
        ));
    }

    #[test]
    fn only_an_unproven_check_force_passes_suggests_force() {
        let hint = |forcible| {
            let path = PathBuf::from("/r/card-1");
            let cause = anyhow::anyhow!("could not read a directory");
            Refused(Refusal::Unproven {
                path,
                cause,
                forcible,
            })
            .hints()
        };
        let status = "run the command again; if this repeats, git -C /r/card-1 status names the \
                      problem";
        assert_eq!(hint(false), [status.to_owned()]);
        assert_eq!(
            hint(true),
            [format!(
                "{status}; --force removes the tree with whatever it holds"
            )]
        );
    }
}
