//! Writing beneath a worktree without following anything planted on the way: the
//! directories from the worktree's root down to a file kardwt creates are opened one component
//! at a time with `O_NOFOLLOW|O_DIRECTORY`, and files are created relative to the last one. A
//! symlink, a file or a FIFO on that path (committed upstream, or planted) stops the write with
//! a [`Blocked`] that says which component and what it is; it is never followed, never opened
//! for reading and never an error that fails the action.
use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A path beneath the root that is not a real directory, so nothing is written through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocked {
    /// The component's path, relative to the root.
    pub rel: PathBuf,
    /// What it is: `a symlink`, `a file`, `a FIFO`, …
    pub what: &'static str,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is {} in the new tree", self.rel.display(), self.what)
    }
}

/// Opening a directory beneath the root: it, or why not.
pub(crate) type Opened = Result<OwnedFd, Blocked>;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Open the root itself (its own path is kardwt's, checked before: followed as given).
pub(crate) fn root(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Something to call with each directory made (its path relative to the root), or `None` to
/// make none.
pub(crate) type Made<'a> = Option<&'a mut dyn FnMut(&Path)>;

/// Open directory `rel` beneath `root`, one component at a time. With `made`, missing
/// directories are created (mode 0755 less the umask), each reported to `made`; without it a
/// missing one is a `NotFound` error.
pub(crate) fn open_dir(root: &OwnedFd, rel: &Path, mut made: Made<'_>) -> io::Result<Opened> {
    let mut dir = rustix::fs::openat(root, ".", DIR, Mode::empty())?;
    let mut at = PathBuf::new();
    for c in rel.components() {
        let name = match c {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            // Paths come from git listings and the rules file: never `..` or absolute.
            _ => {
                return Ok(Err(Blocked {
                    rel: at.join(c),
                    what: "not a plain name",
                }))
            }
        };
        at.push(name);
        let again: Made<'_> = match &mut made {
            Some(f) => Some(&mut **f),
            None => None,
        };
        dir = match child(&dir, name, &at, again)? {
            Ok(d) => d,
            Err(b) => return Ok(Err(b)),
        };
    }
    Ok(Ok(dir))
}

/// Open the directory `name` in `dir` (whose path is `rel` beneath the root), making it first
/// when `made` is given and it is missing.
pub(crate) fn child(dir: &OwnedFd, name: &OsStr, rel: &Path, made: Made<'_>) -> io::Result<Opened> {
    match rustix::fs::openat(dir, name, DIR, Mode::empty()) {
        Ok(d) => return Ok(Ok(d)),
        Err(Errno::NOENT) if made.is_some() => {}
        Err(Errno::LOOP | Errno::NOTDIR) => return Ok(Err(blocked(dir, name, rel))),
        Err(e) => return Err(with_path(e, rel)),
    }
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) => {
            if let Some(made) = made {
                made(rel);
            }
        }
        Err(Errno::EXIST) => {}
        Err(e) => return Err(with_path(e, rel)),
    }
    match rustix::fs::openat(dir, name, DIR, Mode::empty()) {
        Ok(d) => Ok(Ok(d)),
        Err(Errno::LOOP | Errno::NOTDIR) => Ok(Err(blocked(dir, name, rel))),
        Err(e) => Err(with_path(e, rel)),
    }
}

/// Is the path `rel` writable beneath `root` as far as it exists: `Some` names the first
/// component that is not a real directory (the last component itself is not looked at).
pub(crate) fn probe(root: &OwnedFd, rel: &Path) -> io::Result<Option<Blocked>> {
    let Some(parent) = rel.parent() else {
        return Ok(None);
    };
    match open_dir(root, parent, None) {
        Ok(Ok(_)) => Ok(None),
        Ok(Err(b)) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What is at `name` in `dir`, not following a symlink: `None` when nothing is.
pub(crate) fn kind_at(dir: &OwnedFd, name: &OsStr) -> Option<FileType> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

/// Create the symlink `name` in `dir` pointing at `target`; false when something (even a
/// dangling link) is already there.
pub(crate) fn symlink(dir: &OwnedFd, name: &OsStr, target: &Path) -> io::Result<bool> {
    match rustix::fs::symlinkat(target, dir, name) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Remove `name` in `dir` and everything beneath it, never following a symlink: a symlink is
/// removed itself, a directory is opened with `O_NOFOLLOW` and emptied first. Nothing there is
/// not an error.
pub(crate) fn remove_tree(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(e) => return Err(e.into()),
    }
    let sub = match rustix::fs::openat(dir, name, DIR, Mode::empty()) {
        Ok(d) => d,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let names: Vec<std::ffi::OsString> = rustix::fs::Dir::read_from(&sub)?
        .flatten()
        .map(|e| {
            use std::os::unix::ffi::OsStrExt;
            OsStr::from_bytes(e.file_name().to_bytes()).to_owned()
        })
        .filter(|n| n != "." && n != "..")
        .collect();
    for n in names {
        remove_tree(&sub, &n)?;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Move `from` in `from_dir` to `to` in `to_dir` (one file system) unless something is
/// already at `to`: false then, and nothing moved. `RENAME_NOREPLACE`, or where the file system
/// lacks it a look first (a directory is never renamed over a non-empty one either).
pub(crate) fn rename_noreplace(
    from_dir: &OwnedFd,
    from: &OsStr,
    to_dir: &OwnedFd,
    to: &OsStr,
) -> io::Result<bool> {
    match crate::sys::beneath::renameat_noreplace(from_dir, from, to_dir, to) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST | Errno::NOTEMPTY) => Ok(false),
        Err(e) if crate::sys::beneath::no_noreplace(e) => {
            if kind_at(to_dir, to).is_some() {
                return Ok(false);
            }
            match rustix::fs::renameat(from_dir, from, to_dir, to) {
                Ok(()) => Ok(true),
                Err(Errno::EXIST | Errno::NOTEMPTY) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// `renameat2(RENAME_NOREPLACE)` (on macOS `renameatx_np(RENAME_EXCL)`); in the `portable`
/// build always `ENOSYS`, so that the fallbacks of a file system without it run.
pub(crate) fn renameat_noreplace<P: rustix::path::Arg, Q: rustix::path::Arg>(
    from_dir: &OwnedFd,
    from: P,
    to_dir: &OwnedFd,
    to: Q,
) -> Result<(), Errno> {
    #[cfg(not(feature = "portable"))]
    {
        rustix::fs::renameat_with(
            from_dir,
            from,
            to_dir,
            to,
            rustix::fs::RenameFlags::NOREPLACE,
        )
    }
    #[cfg(feature = "portable")]
    {
        let _ = (from_dir, from, to_dir, to);
        Err(Errno::NOSYS)
    }
}

/// The answers by which a kernel or file system says it has no no-replace rename (macOS's
/// ENOTSUP is a number of its own; on Linux it is EOPNOTSUPP).
pub(crate) fn no_noreplace(e: Errno) -> bool {
    [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP, Errno::NOTSUP].contains(&e)
}

/// The parent directory and file name of a relative path (`None` for an empty one).
pub(crate) fn split(rel: &Path) -> Option<(&Path, &OsStr)> {
    Some((rel.parent().unwrap_or(Path::new("")), rel.file_name()?))
}

fn blocked(dir: &OwnedFd, name: &OsStr, rel: &Path) -> Blocked {
    Blocked {
        rel: rel.to_path_buf(),
        what: describe(kind_at(dir, name)),
    }
}

/// A file type in words, for messages (pure).
pub(crate) fn describe(kind: Option<FileType>) -> &'static str {
    match kind {
        Some(FileType::Symlink) => "a symlink",
        Some(FileType::RegularFile) => "a file",
        Some(FileType::Fifo) => "a FIFO",
        Some(FileType::Socket) => "a socket",
        Some(FileType::CharacterDevice | FileType::BlockDevice) => "a device",
        Some(FileType::Directory) => "a directory",
        _ => "not a directory",
    }
}

fn with_path(e: Errno, rel: &Path) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("{}: {e}", rel.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_files_and_fifos_on_the_way_block_and_are_never_followed() {
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::os::unix::fs::symlink(outside.path(), tree.path().join("config")).unwrap();
        std::fs::write(tree.path().join("file"), "x").unwrap();
        crate::sys::fsio::fifo(&tree.path().join("fifo"));
        let root = root(tree.path()).unwrap();
        let mut made = Vec::new();
        let mut note = |p: &Path| made.push(p.to_path_buf());
        for (rel, blocked_at, what) in [
            ("config/sub", "config", "a symlink"),
            ("file/sub", "file", "a file"),
            ("fifo/sub", "fifo", "a FIFO"),
        ] {
            let got = open_dir(&root, Path::new(rel), Some(&mut note)).unwrap();
            let b = got.err().unwrap();
            assert_eq!((b.rel.to_str().unwrap(), b.what), (blocked_at, what));
        }
        assert_eq!(
            probe(&root, Path::new("config/local.toml")).unwrap(),
            Some(Blocked {
                rel: "config".into(),
                what: "a symlink"
            })
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        assert!(open_dir(&root, Path::new("a/b"), Some(&mut note))
            .unwrap()
            .is_ok());
        assert_eq!(made, [PathBuf::from("a"), PathBuf::from("a/b")]);
        assert!(tree.path().join("a/b").is_dir());
        assert_eq!(probe(&root, Path::new("x/y/z")).unwrap(), None);
    }

    #[test]
    fn remove_tree_never_follows_a_symlink_and_rename_never_replaces() {
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::fs::create_dir_all(tree.path().join("out/a/b")).unwrap();
        std::fs::write(tree.path().join("out/a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("out/a/link")).unwrap();
        let root = root(tree.path()).unwrap();
        std::fs::create_dir(tree.path().join("there")).unwrap();
        std::fs::write(tree.path().join("there/f"), "x").unwrap();
        assert!(!rename_noreplace(&root, OsStr::new("out"), &root, OsStr::new("there")).unwrap());
        assert!(rename_noreplace(&root, OsStr::new("out"), &root, OsStr::new("moved")).unwrap());
        remove_tree(&root, OsStr::new("moved")).unwrap();
        remove_tree(&root, OsStr::new("absent")).unwrap();
        assert!(!tree.path().join("moved").exists());
        assert!(outside.path().join("keep").is_file(), "followed a symlink");
    }
}
