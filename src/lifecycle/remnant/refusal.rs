//! Why a half-removed tree was not cleared: each variant fixes its exit code and hints.
use std::path::{Path, PathBuf};

use super::Uncleared;
use crate::ground::error::{Code, Kind};
use crate::ground::quote::{sh, sh_path};

#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// Its claim or what stands behind it changed while the repository lock was awaited.
    #[error("{} changed while waiting for the repository lock; nothing was deleted", path.display())]
    Changed { path: PathBuf },
    #[error("{}, and it is {why}; nothing was deleted", left(path, card))]
    InUse {
        path: PathBuf,
        card: String,
        why: String,
    },
    #[error(
        "{}, and reading it failed: {error}; nothing was deleted",
        left(path, card)
    )]
    Unreadable {
        path: PathBuf,
        card: String,
        error: std::io::Error,
    },
    /// What it holds stops the clearing (mounted, or changed after the failed removal).
    #[error("{}, and it {}; nothing was deleted", left(path, card), blocked.describe())]
    Uncleared {
        path: PathBuf,
        card: String,
        blocked: Uncleared,
    },
    #[error("{}; deleting it failed: {error}", left(path, card))]
    Undeletable {
        path: PathBuf,
        card: String,
        error: std::io::Error,
    },
}

/// What the directory at `path` is.
fn left(path: &Path, card: &str) -> String {
    format!(
        "{} is what a failed git worktree remove left of card {card}'s worktree (git no longer \
         knows it)",
        path.display()
    )
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::InUse { .. } | Refusal::Uncleared { .. } => Code::Refused,
            Refusal::Changed { .. } | Refusal::Unreadable { .. } | Refusal::Undeletable { .. } => {
                Code::Failed
            }
        }
    }
    fn hints(&self) -> Vec<String> {
        let hint = match self {
            Refusal::Changed { .. } => {
                "check it with git kardwt doctor, then run the command again".into()
            }
            Refusal::InUse { .. } => "stop that process, then run the command again".into(),
            Refusal::Unreadable { path, .. } => format!(
                "fix what the error names, then run the command again; or inspect {} and delete \
                 it by hand",
                sh_path(path)
            ),
            Refusal::Uncleared {
                path,
                card,
                blocked,
            } if blocked.forcible() => format!(
                "move what you want to keep out of {}, then run git kardwt remove --force {} (it \
                 deletes everything left there)",
                sh_path(path),
                sh(card)
            ),
            Refusal::Uncleared { .. } => "unmount it, then run the command again (kardwt never \
                                        deletes into another file system)"
                .into(),
            Refusal::Undeletable { path, .. } => format!(
                "fix what the error names and run the command again, or delete {} by hand",
                sh_path(path)
            ),
        };
        vec![hint]
    }
}
