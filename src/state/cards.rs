//! One repository's store of cards, as the floors above see it: the claims, the event log, the
//! repository lock, the blob ids of copied files and the trees moved aside, all under one
//! common dir; and the one writer of a worktree's record, which completes its card's claim
//! with it. It names what the modules beside it keep (each still knows its own files), and
//! keeps what happened to a card's tree in one call each: a step of its release
//! ([`Happened`], its event), and how its removal ended ([`RemovalEnded`], the claim it
//! changes, then its event). The repository lock is taken here so that records made before claims
//! existed are migrated, and the temporaries killed writes left in the claims directory
//! removed, by the first locked command, which also finishes what a killed removal moved aside
//! (`aside.rs`).
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::record::Record;
use super::{aside, blobs, claim, events};
use super::{Aside, Claim, ClaimError, ClaimState, EventKind, EventLog, Moved, Orphan};
use crate::ground::card::CardId;
use crate::sys::RepoLock;

/// What happened to a card's tree while it was released, as the lifecycle says it and the
/// store logs it ([`Cards::note`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Happened<'a> {
    /// What the tree held was released (in words: its processes, an orphan's release).
    Released(&'a str),
    /// A step of its release failed or was stopped (in words: the cleanup hook, the signal).
    Failed(&'a str),
}

/// How a removal of a card's tree ended, as the store keeps it ([`Cards::removal`]): the claim
/// of its path changed, then its event logged.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RemovalEnded<'a> {
    /// The tree is gone (a note on how): the claim of its path is forgotten.
    Done(&'a str),
    /// `git worktree remove` failed (why, in git's words): git may have forgotten the tree and
    /// left part of it, so the claim of its path is marked half removed.
    Failed(&'a str),
}

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
    /// commands left: the claims migrated and tidied, the trees moved aside finished.
    /// Never while this process already holds it: pass the lock on instead.
    pub(crate) fn lock(&self, deadline: Instant, holder: &str) -> Result<RepoLock> {
        let lock = crate::sys::take_repo_lock(&self.common_dir, deadline, holder)?;
        claim::tidy(&self.common_dir);
        // Trees a killed removal moved aside and nobody is deleting: deleted now, detached.
        aside::finish_abandoned(&self.common_dir);
        Ok(lock)
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

    /// Log what happened to `card`'s tree at `path` while it was released, `took` long.
    pub(crate) fn note(&self, card: &str, path: &Path, what: Happened<'_>, took: Duration) {
        let (kind, outcome) = match what {
            Happened::Released(how) => (EventKind::Released, how),
            Happened::Failed(what) => (EventKind::Failed, what),
        };
        self.log(kind, card, path, outcome, took);
    }

    /// Keep how the removal of `card`'s tree at `path` ended: the claim of `path` changed (a
    /// claim of another path is left alone), then the event logged, `took` long.
    pub(crate) fn removal(&self, card: &str, path: &Path, ended: RemovalEnded<'_>, took: Duration) {
        match ended {
            RemovalEnded::Done(note) => {
                claim::forget(&self.common_dir, card, path);
                self.log(EventKind::Removed, card, path, note, took);
            }
            RemovalEnded::Failed(why) => {
                claim::mark_half_removed(&self.common_dir, Some(card), path);
                let outcome = format!("git worktree remove: {why}");
                self.log(EventKind::Failed, card, path, &outcome, took);
            }
        }
    }

    /// Delete `card`'s claim whatever it names.
    pub(crate) fn delete_claim(&self, card: &str) {
        claim::delete(&self.common_dir, card);
    }

    /// Mark the claim of `path` (of `card`, when known) as half removed.
    pub(crate) fn mark_half_removed(&self, card: Option<&str>, path: &Path) {
        claim::mark_half_removed(&self.common_dir, card, path);
    }

    /// The temporaries killed atomic writes left: in the claims directory, beside `info/exclude`
    /// (the block that hides kardwt's links), beside the repository's list of copied blob ids,
    /// and beside the record and the copy list in each of `admins`.
    /// Each goes by itself with the next write of its file, and those in the claims directory
    /// with the next locked command; `gc --apply` removes them all.
    pub(crate) fn dead_temporaries(&self, admins: &[PathBuf]) -> Vec<PathBuf> {
        let common_dir = &self.common_dir;
        let of = |dir: &Path, name: &str| crate::sys::dead_temporaries(dir, Some(OsStr::new(name)));
        let mut out = crate::sys::dead_temporaries(&claim::dir(common_dir), None);
        out.extend(of(&common_dir.join("info"), "exclude"));
        out.extend(crate::sys::dead_temporaries(&aside::dir(common_dir), None));
        let copied = blobs::repo_file(common_dir);
        if let (Some(dir), Some(name)) = (copied.parent(), copied.file_name()) {
            out.extend(of(dir, &name.to_string_lossy()));
        }
        // One listing of each admin dir for both files, on every core (thousands of worktrees).
        let names = [
            OsStr::new(super::record::FILE_NAME),
            OsStr::new(blobs::FILE_NAME),
        ];
        let each = crate::sys::in_parallel(admins, |admin| {
            crate::sys::dead_temporaries_of(admin, &names)
        });
        out.extend(each.into_iter().flatten());
        out
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

/// Write the worktree's record atomically, then complete its card's claim (a claim is complete
/// once its record exists). What killed writes left in the admin dir goes first.
pub(crate) fn write(admin: &Path, record: &Record) -> Result<()> {
    crate::sys::remove_files(&crate::sys::dead_temporaries(admin, None));
    // The record's and the claim's temporaries are written side by side, so that their waits
    // for the disk overlap: the claim on a thread of its own (a pool's first free thread would
    // often be this one, taking both in turn before a helper had started), the record here.
    // Then they are put in place one after the other, the record first.
    let (rec, claim) = std::thread::scope(|scope| {
        let claim = std::thread::Builder::new()
            .spawn_scoped(scope, || claim::stage_for_record(admin, record))
            .ok();
        let rec = super::record::stage(admin, record);
        let claim = match claim.map(|h| h.join()) {
            Some(Ok(c)) => c,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            // No thread to be had (EAGAIN): the claim after the record, here.
            None => claim::stage_for_record(admin, record),
        };
        (rec, claim)
    });
    // Renamed into place in that order; their directories are not synced, as git syncs none
    // of the admin directories it makes for a worktree. The contract is the file's (temporary,
    // fsync, rename: never a torn record); a crash before the file system's next journal
    // commit (or writeback, without a journal) can lose the renames. That leaves a worktree
    // without a record, which `verify` and `list` call unseeded, and a claim that, where it
    // landed, still names that tree. A directory sync cost every hooked `git worktree add`
    // another write to the disk (0.2-0.4 ms).
    let failed = |what: &str, file: &Path, e| {
        anyhow::Error::new(e).context(format!("could not write the {what} {}", file.display()))
    };
    let rec = rec?;
    let record_file = rec.dest().to_owned();
    rec.place()
        .map_err(|e| failed("record", &record_file, e))?
        .unsynced();
    if let Some(c) = claim? {
        let file = c.dest().to_owned();
        c.place().map_err(|e| failed("claim", &file, e))?.unsynced();
    }
    Ok(())
}

/// [`write()`] on a path that is already failing or finishing (the record says `failed`, or what
/// the last hook did): a record that cannot be written is a warning on stderr, since the
/// message that follows assumes it was.
pub(crate) fn write_or_warn(admin: &Path, record: &Record) {
    if let Err(e) = write(admin, record) {
        eprintln!("warning: {e:#}; the record may not say what happened");
    }
}
