//! Why a card's claim was not made: each variant fixes its exit code and hints.
use std::path::PathBuf;

use crate::ground::card::CardId;
use crate::ground::error::{Code, Kind};

/// Why a card's claim was not made: every one a refusal (exit 3), nothing created.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// The claim there is malformed (`file`: where it is).
    #[error("card {card}'s claim is malformed: {why}; nothing was created")]
    Malformed {
        card: CardId,
        why: String,
        file: PathBuf,
    },
    /// Another worktree of the card, at `path`, holds the claim.
    #[error("card {card} is already claimed by the worktree at {}", path.display())]
    Taken { card: CardId, path: PathBuf },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        Code::Refused
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::Malformed { card, file, .. } => format!(
                "inspect {} and delete it by hand if no worktree of card {card} is in use",
                file.display()
            ),
            Refusal::Taken { card, .. } => {
                format!("use that worktree, or remove it first: git kardwt remove {card}")
            }
        }]
    }
}
