//! The one writer of kardwt's per-card state: a worktree's record and its card's claim change
//! together here, and the repository lock is taken here so that records made
//! before claims existed are migrated, and the temporaries killed writes left in the claims
//! directory removed, by the first locked command, which also finishes what a killed
//! removal moved aside (`aside.rs`). `record.rs` and `claim.rs`
//! beside it stay below it, each knowing only its own file.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::state::record::Record;
use crate::sys::RepoLock;

/// Write the worktree's record atomically, then complete its card's claim (a claim is complete
/// once its record exists). What killed writes left in the admin dir goes first.
pub fn write(admin: &Path, record: &Record) -> Result<()> {
    crate::sys::remove_files(&crate::sys::dead_temporaries(admin, None));
    // The record's and the claim's temporaries are written side by side, so that their waits
    // for the disk overlap; then they are put in place one after the other, the record first.
    enum Staging {
        Record(Result<crate::sys::Staged>),
        Claim(Result<Option<crate::sys::Staged>>),
    }
    let mut staged =
        crate::sys::in_parallel_with(2, &[true, false], |record_side| match record_side {
            true => Staging::Record(crate::state::record::stage(admin, record)),
            false => Staging::Claim(crate::state::claim::stage_for_record(admin, record)),
        })
        .into_iter();
    let (Some(Staging::Record(rec)), Some(Staging::Claim(claim))) = (staged.next(), staged.next())
    else {
        unreachable!("the pool keeps the items' order");
    };
    // Renamed into place in that order, then their directories synced: the claim never lands
    // without its record, and the journal commits both renames at once.
    let failed = |what: &str, file: &Path, e| {
        anyhow::Error::new(e).context(format!("could not write the {what} {}", file.display()))
    };
    let rec = rec?;
    let record_file = rec.dest().to_owned();
    let record_failed = |e| failed("record", &record_file, e);
    let placed = rec.place().map_err(record_failed)?;
    let claim = claim?
        .map(|c| {
            let file = c.dest().to_owned();
            match c.place() {
                Ok(placed) => Ok((placed, file)),
                Err(e) => Err(failed("claim", &file, e)),
            }
        })
        .transpose();
    placed.sync().map_err(record_failed)?;
    if let Some((claim, file)) = claim? {
        claim.sync().map_err(|e| failed("claim", &file, e))?;
    }
    Ok(())
}

/// [`write()`] on a path that is already failing or finishing (the record says `failed`, or what
/// the last hook did): a record that cannot be written is a warning on stderr, since the
/// message that follows assumes it was.
pub fn write_or_warn(admin: &Path, record: &Record) {
    if let Err(e) = write(admin, record) {
        eprintln!("warning: {e:#}; the record may not say what happened");
    }
}

/// Take the repository lock, waiting until `deadline`, and migrate records without claims
/// under it. Never while this process already holds it: pass the lock on instead.
pub fn take_repo(common_dir: &Path, deadline: Instant, holder: &str) -> Result<RepoLock> {
    let lock = crate::sys::take_repo_lock(common_dir, deadline, holder)?;
    crate::state::claim::tidy(common_dir);
    // Trees a killed removal moved aside and nobody is deleting: deleted now, detached.
    crate::state::aside::finish_abandoned(common_dir);
    Ok(lock)
}

/// The temporaries killed atomic writes left: in the claims directory, beside `info/exclude`
/// (the block that hides kardwt's links), beside the repository's list of copied blob ids, and
/// beside the record and the copy list in each of `admins`. Each goes by itself with the next
/// write of its file, and those in the claims directory with the next locked command; `gc --apply` removes them all.
pub fn dead_temporaries(common_dir: &Path, admins: &[PathBuf]) -> Vec<PathBuf> {
    let of = |dir: &Path, name: &str| crate::sys::dead_temporaries(dir, Some(OsStr::new(name)));
    let mut out = crate::sys::dead_temporaries(&crate::state::claim::dir(common_dir), None);
    out.extend(of(&common_dir.join("info"), "exclude"));
    out.extend(crate::sys::dead_temporaries(
        &crate::state::aside::dir(common_dir),
        None,
    ));
    let copied = crate::state::blobs::repo_file(common_dir);
    if let (Some(dir), Some(name)) = (copied.parent(), copied.file_name()) {
        out.extend(of(dir, &name.to_string_lossy()));
    }
    // One listing of each admin dir for both files, on every core (thousands of worktrees).
    let names = [
        OsStr::new(crate::state::record::FILE_NAME),
        OsStr::new(crate::state::blobs::FILE_NAME),
    ];
    let each = crate::sys::in_parallel(admins, |admin| {
        crate::sys::dead_temporaries_of(admin, &names)
    });
    out.extend(each.into_iter().flatten());
    out
}
