//! kardwt's per-card state on disk: the lifecycle record in a worktree's admin dir, the card's
//! claim, the blob ids of files copied into a tree, the event log, the one writer that
//! changes a record and its claim together, and the remembered base of a git dir elsewhere.
pub(crate) mod aside;
pub(crate) mod blobs;
pub(crate) mod claim;
pub(crate) mod events;
pub(crate) mod record;
pub(crate) mod store;

/// Remember `base` as the main worktree of the repository whose common dir is `common_dir`
/// (its git dir is elsewhere: see `sys::layout::base_file`), unless that is known already.
/// Best effort: a base that cannot be remembered is only not found from a linked worktree.
pub fn remember_base(common_dir: &std::path::Path, base: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    if crate::git::repo::remembered_base(common_dir).as_deref() == Some(base) {
        return;
    }
    let mut line = base.as_os_str().as_bytes().to_vec();
    if line.contains(&b'\n') {
        return;
    }
    line.push(b'\n');
    let dir = crate::sys::layout::kardwt_dir(common_dir);
    let file = crate::sys::layout::base_file(common_dir);
    let _ = crate::sys::fsio::create_dir_nofollow(common_dir, &dir).and_then(|()| {
        crate::sys::fsio::write_atomic(&dir, file.file_name().unwrap_or_default(), &line)
    });
}
