//! The one writer of kardwt's per-card state: a worktree's record and its card's claim change
//! together here (R-REC, R-CLAIM), and the repository lock is taken here so that records made
//! before claims existed are migrated by the first locked command. `record.rs` and `claim.rs`
//! stay below it, each knowing only its own file.
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use crate::lock::RepoLock;
use crate::record::Record;

/// Write the worktree's record atomically, then complete its card's claim (a claim is complete
/// once its record exists).
pub fn write(admin: &Path, record: &Record) -> Result<()> {
    crate::record::write(admin, record)?;
    crate::claim::complete(admin, record)
}

/// [`write`] on a path that is already failing or finishing (the record says `failed`, or what
/// the last hook did): a record that cannot be written is a warning on stderr, since the
/// message that follows assumes it was.
pub fn write_or_warn(admin: &Path, record: &Record) {
    if let Err(e) = write(admin, record) {
        eprintln!("warning: {e:#}; the record may not say what happened");
    }
}

/// Take the repository lock, waiting until `deadline`, and migrate records without claims
/// under it (R-CLAIM). Never while this process already holds it: pass the lock on instead.
pub fn take_repo(common_dir: &Path, deadline: Instant, holder: &str) -> Result<RepoLock> {
    let lock = crate::lock::take_repo(common_dir, deadline, holder)?;
    crate::claim::migrate(common_dir);
    Ok(lock)
}
