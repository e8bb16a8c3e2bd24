//! kardwt's per-card state on disk: the lifecycle record in a worktree's admin dir, the card's
//! claim, the blob ids of files copied into a tree, the event log, the one writer that
//! changes a record and its claim together, and the remembered base of a git dir elsewhere.
//!
//! Its face: one store of cards per repository, [`Cards`] (claims, events and what happened to a
//! tree, [`Happened`], the lock, copied blobs, trees moved aside), the record's types and its
//! writer, and the few verbs on one tree's admin dir.
mod aside;
mod blobs;
mod cards;
mod claim;
mod events;
mod record;

pub(crate) use aside::{
    delete as delete_aside, put_back, start_deleting, Aside, Deleting, Deletion, Entry, Moved,
    Tidy, ATTEMPTS,
};
pub(crate) use blobs::{common_dir_of, keep as keep_blobs, load as copied_blobs};
pub(crate) use cards::{write, write_or_warn, Cards, Happened, RemovalEnded};
pub(crate) use claim::{Claim, ClaimError, ClaimState, Orphan};
pub(crate) use events::{in_words, Event as LoggedEvent, Kind as EventKind, Read as EventLog};
pub(crate) use record::{
    load as load_record, parse as parse_record, path_in as record_path, Killed, LastHook, Loaded,
    Origin, PrepareCache, Reason, Record, State,
};

/// Remember `base` as the main worktree of the repository whose common dir is `common_dir`
/// (its git dir is elsewhere: see `sys::base_file`), unless that is known already.
/// Best effort: a base that cannot be remembered is only not found from a linked worktree.
pub(crate) fn remember_base(common_dir: &std::path::Path, base: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    if crate::git::remembered_base(common_dir).as_deref() == Some(base) {
        return;
    }
    let mut line = base.as_os_str().as_bytes().to_vec();
    if line.contains(&b'\n') {
        return;
    }
    line.push(b'\n');
    let dir = crate::sys::kardwt_dir(common_dir);
    let file = crate::sys::base_file(common_dir);
    let _ = crate::sys::create_dir_nofollow(common_dir, &dir)
        .and_then(|()| crate::sys::write_atomic(&dir, file.file_name().unwrap_or_default(), &line));
}
