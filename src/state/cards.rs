//! One repository's store of cards, as the floors above see it: the claims, the event log, the
//! repository lock, the blob ids of copied files and the trees moved aside, all under one
//! common dir. It names what the modules beside it keep (each still knows its own files), and
//! makes the few changes that touch two of them at once one call (a removal's claim and log).
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{aside, blobs, claim, events, store};
use super::{Aside, Claim, ClaimError, ClaimState, EventKind, EventLog, Moved, Orphan};
use crate::ground::card::CardId;
use crate::sys::RepoLock;

/// The cards of the repository whose common dir is `common_dir`.
/// Obtained once per command (the context holds it) and passed along.
#[derive(Debug, Clone)]
pub(crate) struct Cards {
    common_dir: PathBuf,
}

impl Cards {
    /// The store under `common_dir`.
    pub(crate) fn at(common_dir: &Path) -> Self {
        Cards {
            common_dir: common_dir.to_owned(),
        }
    }

    /// Take the repository lock, waiting until `deadline`, tidying under it what killed
    /// commands left (see `store.rs`).
    pub(crate) fn lock(&self, deadline: Instant, holder: &str) -> Result<RepoLock> {
        store::take_repo(&self.common_dir, deadline, holder)
    }

    /// Append one event to the log.
    pub(crate) fn log(
        &self,
        kind: EventKind,
        card: &str,
        path: &Path,
        outcome: &str,
        took: Duration,
    ) {
        events::append(&self.common_dir, kind, card, path, outcome, took);
    }

    /// The logged events, of `card` only when given.
    pub(crate) fn events(&self, card: Option<&str>) -> EventLog {
        events::read(&self.common_dir, card)
    }

    /// `card`'s claim: none, or what its file holds.
    pub(crate) fn claim(&self, card: &str) -> Option<Result<Claim, ClaimError>> {
        claim::load(&self.common_dir, card)
    }

    /// The file of `card`'s claim.
    pub(crate) fn claim_file(&self, card: &str) -> PathBuf {
        claim::file(&self.common_dir, card)
    }

    /// Every claim that decodes.
    pub(crate) fn claims(&self) -> Vec<Claim> {
        claim::all(&self.common_dir)
    }

    /// Have the records made before claims existed been migrated?
    pub(crate) fn migrated(&self) -> bool {
        claim::migrated(&self.common_dir)
    }

    /// The claims whose tree is gone or replaced.
    pub(crate) fn orphans(&self, base: &Path) -> Vec<(Claim, Orphan)> {
        claim::orphans(&self.common_dir, base)
    }

    /// The claims that name what no card of theirs could be, and why.
    pub(crate) fn malformed(&self, base: &Path) -> Vec<(Claim, String)> {
        claim::malformed(&self.common_dir, base)
    }

    /// The complete claims no record in `recorded` answers.
    pub(crate) fn unrecorded(&self, recorded: &HashSet<&str>) -> Vec<Claim> {
        claim::unrecorded(&self.common_dir, recorded)
    }

    /// What `list` shows for a complete claim no registered record names (a card's registered
    /// record means git still knows its worktree; a registered tree whose directory alone is
    /// gone is listed as prunable): `"malformed"`, `"orphan"`, or nothing.
    pub(crate) fn vanished_state(&self, claim: &Claim, base: &Path) -> Option<&'static str> {
        if claim.state != ClaimState::Complete {
            return None;
        }
        if claim.malformed(&self.common_dir, Some(base)).is_some() {
            return Some("malformed");
        }
        claim.orphan_kind(&self.common_dir, Some(base))?;
        Some("orphan")
    }

    /// Claim `card` at `path` before its tree exists (state `intent`).
    pub(crate) fn intend(&self, card: &CardId, path: &Path, branch: &str) -> Result<()> {
        claim::intend(&self.common_dir, card, path, branch)
    }

    /// Is `card` claimed at `path` in state `intent`?
    pub(crate) fn intended(&self, card: &str, path: &Path) -> bool {
        claim::intended(&self.common_dir, card, path)
    }

    /// Forget `card`'s claim if it is the claim of `path`.
    pub(crate) fn forget(&self, card: &str, path: &Path) {
        claim::forget(&self.common_dir, card, path);
    }

    /// `card`'s tree at `path` is gone: forget its claim (if it is the claim of `path`), then
    /// log `removed` with `note`.
    pub(crate) fn removed(&self, card: &str, path: &Path, note: &str, took: Duration) {
        claim::forget(&self.common_dir, card, path);
        self.log(EventKind::Removed, card, path, note, took);
    }

    /// `git worktree remove` failed on `card`'s tree at `path` (`why`, in its words): git may
    /// have forgotten the tree and left part of it, so the claim of `path` is marked half
    /// removed, then the failure logged.
    pub(crate) fn removal_failed(&self, card: &str, path: &Path, why: &str, took: Duration) {
        claim::mark_half_removed(&self.common_dir, Some(card), path);
        let outcome = format!("git worktree remove: {why}");
        self.log(EventKind::Failed, card, path, &outcome, took);
    }

    /// Delete `card`'s claim whatever it names.
    pub(crate) fn delete_claim(&self, card: &str) {
        claim::delete(&self.common_dir, card);
    }

    /// Mark the claim of `path` (of `card`, when known) as half removed.
    pub(crate) fn mark_half_removed(&self, card: Option<&str>, path: &Path) {
        claim::mark_half_removed(&self.common_dir, card, path);
    }

    /// The temporaries killed writes left here and in `admins`.
    pub(crate) fn dead_temporaries(&self, admins: &[PathBuf]) -> Vec<PathBuf> {
        store::dead_temporaries(&self.common_dir, admins)
    }

    /// The object hash the repository uses.
    pub(crate) fn hash_kind(&self) -> gix::hash::Kind {
        blobs::hash_kind(&self.common_dir)
    }

    /// Remember the blob ids of files copied for the repository.
    pub(crate) fn remember_blobs(&self, copied: &[(String, String)]) -> Result<()> {
        blobs::remember(&self.common_dir, copied)
    }

    /// The blob ids remembered for the repository.
    pub(crate) fn remembered_blobs(&self) -> BTreeMap<String, String> {
        blobs::load_repo(&self.common_dir)
    }

    /// Move `tree` of `card` aside, recorded, to be deleted.
    pub(crate) fn move_aside(&self, card: &str, tree: &Path) -> anyhow::Result<Moved> {
        aside::move_aside(&self.common_dir, card, tree)
    }

    /// The trees moved aside whose deletion keeps failing.
    pub(crate) fn failing_asides(&self) -> Vec<Aside> {
        aside::failing(&self.common_dir)
    }
}
