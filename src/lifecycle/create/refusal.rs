//! Why `add` will not create or reuse a card's tree: each variant fixes its exit code and hints.
use std::path::PathBuf;

use crate::context::RemovalError;
use crate::ground::card::CardId;
use crate::ground::error::{Code, Kind};
use crate::ground::quote::sh_path;
use crate::verify::Incomplete;

/// What an interrupted `add` can leave at the card's path, unrecorded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leftover {
    /// A registered tree whose checkout never completed.
    HalfMade,
    /// An empty directory without its `.git` file, git's entry for it still `initializing`.
    BareStart,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// `--base` names another base than the reusable tree was created from.
    #[error(
        "card {card}'s worktree {} was created from {base_ref}, not {asked}; nothing was changed",
        path.display()
    )]
    OtherBase {
        card: CardId,
        path: PathBuf,
        base_ref: String,
        asked: String,
    },
    /// A tree left half made that this card's `add` never meant to make.
    #[error(
        "{} is a worktree kardwt has no record of, and {}; once it is repaired, run git kardwt \
         add {card} again",
        path.display(),
        why.describe()
    )]
    HalfMade {
        path: PathBuf,
        card: CardId,
        why: Incomplete,
    },
    #[error("{} is a worktree kardwt has no record of (unseeded)", path.display())]
    Unseeded { path: PathBuf, card: CardId },
    #[error("{} is registered with git but its directory is gone", path.display())]
    Prunable { path: PathBuf },
    /// The base checkout or a tree kardwt does not verify: verification's words and fix.
    #[error("{explain}")]
    Unverified { explain: String, fix: String },
    /// What an interrupted `add` left could not be removed.
    #[error(
        "removing {}, which an interrupted git kardwt add {card} left half made, failed: {refusal}",
        path.display()
    )]
    LeftoverStays {
        path: PathBuf,
        card: CardId,
        leftover: Leftover,
        refusal: RemovalError,
    },
    /// The card's branch is checked out in an unrecorded tree (`why`: it is half made).
    #[error(
        "branch {} is checked out in {}, a worktree kardwt has no record of: {}",
        card.branch(),
        path.display(),
        match why {
            Some(why) =>
                format!("{}; once it is repaired, run git kardwt add {card} again", why.describe()),
            None => "unseeded".to_owned(),
        }
    )]
    BranchHeld {
        card: CardId,
        path: PathBuf,
        why: Option<Incomplete>,
    },
    #[error("{} would be inside the worktree {}; nothing was created", path.display(), dir.display())]
    InsideAnother { path: PathBuf, dir: PathBuf },
    /// The new tree could not be recorded and was removed again.
    #[error(
        "recording card {card}'s new worktree {} failed, so it was removed again (branch {} is \
         kept): {why:#}",
        path.display(),
        card.branch()
    )]
    Unmade {
        card: CardId,
        path: PathBuf,
        why: anyhow::Error,
    },
    /// The new tree could not be recorded, nor removed.
    #[error(
        "recording card {card}'s new worktree {} failed ({why:#}), and removing it failed too: \
         {refusal}",
        path.display()
    )]
    Unremoved {
        card: CardId,
        path: PathBuf,
        why: anyhow::Error,
        refusal: RemovalError,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::LeftoverStays { .. } | Refusal::Unmade { .. } | Refusal::Unremoved { .. } => {
                Code::Failed
            }
            _ => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        let take_over = |card: &CardId, path: &PathBuf| {
            format!(
                "to take it over as card {card}, run: git kardwt prepare --path {}",
                sh_path(path)
            )
        };
        let hint = match self {
            Refusal::OtherBase { card, asked, .. } => format!(
                "run git kardwt add {card} without --base to reuse it, or remove it first (git \
                 kardwt remove {card}) to create it from {asked}"
            ),
            Refusal::HalfMade { path, why, .. } => why.repair(path),
            Refusal::Unseeded { path, card } => take_over(card, path),
            Refusal::Prunable { .. } => "git kardwt gc --apply clears the stale registration (and \
                                         reports what its record held), then run add again"
                .into(),
            Refusal::Unverified { fix, .. } => fix.clone(),
            Refusal::LeftoverStays {
                path,
                card,
                leftover: Leftover::HalfMade,
                ..
            } => format!(
                "remove it by hand, then run git kardwt add {card} again: git worktree remove \
                 --force --force {}",
                sh_path(path)
            ),
            Refusal::LeftoverStays {
                path,
                card,
                leftover: Leftover::BareStart,
                ..
            } => format!(
                "move {} away by hand, then run git kardwt add {card} again",
                path.display()
            ),
            Refusal::BranchHeld {
                path,
                why: Some(why),
                ..
            } => why.repair(path),
            Refusal::BranchHeld {
                card,
                path,
                why: None,
            } => take_over(card, path),
            Refusal::InsideAnother { .. } => {
                "choose a root outside every worktree (--root, or git \
                                              config kardwt.root); the default is \
                                              <base>.worktrees beside the base"
                    .into()
            }
            Refusal::Unmade { card, .. } => {
                format!("once that is fixed, a retry (git kardwt add {card}) creates it again")
            }
            Refusal::Unremoved { card, path, .. } => format!(
                "remove it by hand, then run git kardwt add {card}: git worktree remove --force \
                 --force {}",
                sh_path(path)
            ),
        };
        vec![hint]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_add_left_fails_and_what_it_found_refuses() {
        let card = CardId::parse("7").unwrap();
        let path = PathBuf::from("/r/card-7");
        let stays = Refusal::LeftoverStays {
            path: path.clone(),
            card: card.clone(),
            leftover: Leftover::BareStart,
            refusal: RemovalError::Git("busy".into()),
        };
        assert_eq!(stays.code(), Code::Failed);
        assert_eq!(
            stays.hints(),
            ["move /r/card-7 away by hand, then run git kardwt add 7 again"]
        );
        let held = Refusal::BranchHeld {
            card,
            path,
            why: None,
        };
        assert_eq!(held.code(), Code::Refused);
        assert_eq!(
            held.to_string(),
            "branch card/7 is checked out in /r/card-7, a worktree kardwt has no record of: \
             unseeded"
        );
    }
}
