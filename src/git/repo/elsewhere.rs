//! Where the main worktree of a repository whose git dir is elsewhere is, when git records
//! it nowhere a linked worktree reads: the checkout kardwt remembered, or `core.worktree`.
use std::path::{Path, PathBuf};

/// The main worktree kardwt remembered for the repository whose common dir is `common_dir`
/// (see [`super::Repo::git_dir_elsewhere`]), when it still is one: its `.git` names this common dir.
pub(crate) fn remembered_base(common_dir: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = super::read_small(&crate::sys::base_file(common_dir))?;
    let named = Path::new(std::ffi::OsStr::from_bytes(bytes.strip_suffix(b"\n")?));
    let base = std::fs::canonicalize(named).ok()?;
    let git_dir = std::fs::canonicalize(super::read_dot_git(&base)?).ok()?;
    (git_dir == common_dir).then_some(base)
}

/// The main worktree `core.worktree` names in the repository `main` (opened on its common
/// dir, relative to which a relative value is read), if it is a directory.
pub(super) fn configured_work_tree(main: &gix::Repository) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let value = main.config_snapshot().string("core.worktree")?;
    let named = Path::new(std::ffi::OsStr::from_bytes(value.as_ref()));
    let path = main.common_dir().join(named);
    std::fs::canonicalize(path).ok().filter(|p| p.is_dir())
}
