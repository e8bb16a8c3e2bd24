//! Acting on a card safely: its lock taken and its worktree verified again under it, the
//! deadline arithmetic, the intent `add` writes before git creates anything, and the forced
//! `git worktree remove` that undoes a tree kardwt just created.
use crate::state::Cards;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::context::Context;
use crate::git;
use crate::ground::card::CardId;

/// The instant `secs` seconds after `from`, saturating at a year for absurd values (a
/// configured timeout may be any 64-bit number; `Instant` arithmetic would panic).
pub(crate) fn after(from: Instant, secs: u64) -> Instant {
    let year = 365 * 24 * 3600;
    from.checked_add(Duration::from_secs(secs.min(year)))
        .unwrap_or(from)
}

/// A card's lock, taken, and what the worktrees look like under it.
pub(crate) struct Locked {
    /// Held until this value is dropped.
    pub card_lock: crate::sys::Held,
    /// The worktrees, scanned after the lock was taken.
    pub entries: Vec<crate::verify::Entry>,
    /// The target, verified after the lock was taken: its record is the one on disk now.
    pub report: crate::verify::Report,
}

/// The one way into acting on a card (`add`, `remove`, `prepare`, `adopt`, `gc --apply`, the
/// post-checkout hook): take card `card`'s lock, then scan the worktrees and verify the target
/// again (`path` picks it from the fresh scan; `asked` is the card the command named, if any).
/// Whatever the caller writes derives from this report, never from a copy read before the
/// lock, so a stale record cannot overwrite a newer one. The repository lock, when needed,
/// is taken after this: the card's lock first, then the repository's, everywhere.
pub(crate) fn lock_and_verify(
    ctx: &Context,
    card: &CardId,
    asked: Option<&CardId>,
    deadline: Instant,
    holder: &str,
    path: impl FnOnce(&[crate::verify::Entry]) -> Result<PathBuf>,
) -> Result<Locked> {
    let card_lock = crate::sys::take_card_lock(&ctx.repo.common_dir, card, deadline, holder)?;
    let entries = crate::verify::scan(&ctx.repo)?;
    let path = path(&entries)?;
    let report = crate::verify::verify(&ctx.repo, &entries, &path, asked);
    Ok(Locked {
        card_lock,
        entries,
        report,
    })
}

/// Take card `card`'s lock for the tree at `path` that git has just made (the post-checkout
/// hook), then read the worktrees it is judged against: when `narrow`, through the claims
/// only this tree and the holder of `card` (as `verify` reads them: see
/// `verify::scan_path_card`), else every worktree. No report: the tree has no record yet.
pub fn lock_and_scan(
    ctx: &Context,
    card: &CardId,
    path: &Path,
    narrow: bool,
    deadline: Instant,
    holder: &str,
) -> Result<(crate::sys::Held, Vec<crate::verify::Entry>)> {
    let card_lock = crate::sys::take_card_lock(&ctx.repo.common_dir, card, deadline, holder)?;
    let entries = match narrow {
        true => crate::verify::scan_path_card(&ctx.repo, path, Some(card.as_str()))?,
        false => crate::verify::scan(&ctx.repo)?,
    };
    Ok((card_lock, entries))
}

/// Say, before git creates anything, that the tree `add` makes for
/// `card` at `path` is ours: the card's claim in state `intent` (see `state/claim.rs`).
pub(crate) fn write_intent(cards: &Cards, card: &CardId, path: &Path) -> Result<()> {
    cards.intend(card, path, &card.branch())
}

/// Forget the intent when nothing was created at `path`.
pub(crate) fn clear_intent(cards: &Cards, card: &CardId, path: &Path) {
    cards.forget(card.as_str(), path);
}

/// Does a leftover intent say that an interrupted `add` of `card` created `path`?
pub(crate) fn intended(cards: &Cards, card: &CardId, path: &Path) -> bool {
    cards.intended(card.as_str(), path)
}

/// Why a worktree kardwt meant to remove is still there: the words the failure block and the
/// hints show, capped (typed, converted to text only where a message is laid out).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemovalError {
    /// `git worktree remove` refused or failed: its own words, capped at 120 characters.
    #[error("{0}")]
    Git(String),
    /// The repository lock could not be taken for the removal.
    #[error("{0}")]
    Lock(String),
    /// Reading or removing a path failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The undo of a tree kardwt (or the hook) just created: take the repository lock (the caller
/// holds at most the card's lock, always taken first), then `git worktree remove --force`,
/// twice forced when the tree is locked: a tree this very operation created is locked only
/// by `git worktree add --lock`, and the failed add leaves no tree behind, locked or not.
/// The undo gets a moment past the action deadline: a tree left behind is worse.
pub(crate) fn undo_worktree(
    ctx: &Context,
    path: &Path,
    deadline: Instant,
) -> Result<(), RemovalError> {
    let grace = deadline.max(Instant::now() + std::time::Duration::from_secs(10));
    let holder = "git kardwt (undo a failed creation)";
    let lock = ctx
        .cards
        .lock(grace, holder)
        .map_err(|e| RemovalError::Lock(format!("{e:#}")))?;
    let force = if is_locked(path) {
        git::Force::Twice
    } else {
        git::Force::Once
    };
    let removed = remove_worktree(&lock, &ctx.repo.base, path, force);
    if removed.is_err() {
        // git may have forgotten the tree and left part of it.
        ctx.cards.mark_half_removed(None, path);
    }
    removed
}

/// Is the worktree at `path` locked (`git worktree lock`, `add --lock`, or git's own
/// `initializing`): its admin dir, as its `.git` file names it, holds a `locked` file?
pub(super) fn is_locked(path: &Path) -> bool {
    crate::git::read_dot_git(path).is_some_and(|admin| admin.join("locked").exists())
}

/// The command that removes the worktree at `path` by hand, discarding what it holds, as git
/// accepts it in the state the tree is in now: `--force --force` for a locked
/// tree (git refuses one with a single `--force`), else `--force`.
pub(crate) fn manual_removal(path: &Path) -> String {
    format!(
        "git worktree remove --force{} {}",
        if is_locked(path) { " --force" } else { "" },
        crate::ground::quote::sh_path(path)
    )
}

/// `git worktree remove --force P`, run from the base under the repository lock; the error
/// is git's refusal, capped.
pub(crate) fn remove_worktree_forced(
    lock: &crate::sys::RepoLock,
    base: &Path,
    path: &Path,
) -> Result<(), RemovalError> {
    remove_worktree(lock, base, path, git::Force::Once)
}

/// `git worktree remove --force --force P`: also a tree git still holds locked `initializing`
/// (a `git worktree add` killed mid-checkout). Only for a tree kardwt knows it created.
pub(crate) fn remove_half_made(
    lock: &crate::sys::RepoLock,
    base: &Path,
    path: &Path,
) -> Result<(), RemovalError> {
    remove_worktree(lock, base, path, git::Force::Twice)
}

/// `git worktree remove` with `force`; the error is git's refusal, capped at 120 characters.
fn remove_worktree(
    lock: &crate::sys::RepoLock,
    base: &Path,
    path: &Path,
    force: git::Force,
) -> Result<(), RemovalError> {
    match git::worktree_remove(lock, base, path, force, None) {
        Ok(o) if o.ok => Ok(()),
        Ok(o) => Err(RemovalError::Git(crate::ground::cap::tail_chars(
            &o.stderr, 120,
        ))),
        Err(e) => Err(RemovalError::Git(crate::ground::cap::tail_chars(
            &e.to_string(),
            120,
        ))),
    }
}
