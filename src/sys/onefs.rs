//! Deleting a directory tree on one file system only (`rm --one-file-system`'s rule, bind
//! mounts of the same file system included): never following a symlink, never descending into
//! a directory that is a mount point, whatever was mounted after the tree was judged, and going
//! on past what cannot be deleted, so that what stays is named, never hidden.
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How many of the entries that could not be deleted are named.
const SHOWN: usize = 3;

/// What a deletion left: how many entries stayed, and the first few with why.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Left {
    pub count: u64,
    pub first: Vec<(PathBuf, String)>,
}

impl Left {
    fn note(&mut self, rel: &Path, why: impl Into<String>) {
        self.count += 1;
        if self.first.len() < SHOWN {
            self.first.push((rel.to_path_buf(), why.into()));
        }
    }

    /// In words: `3 entries could not be deleted (a: Operation not permitted, …)`.
    pub(crate) fn describe(&self) -> String {
        let mut shown: Vec<String> = self
            .first
            .iter()
            .map(|(p, why)| {
                let p = if p.as_os_str().is_empty() {
                    ".".into()
                } else {
                    p.display().to_string()
                };
                format!("{p}: {why}")
            })
            .collect();
        if self.count > self.first.len() as u64 {
            shown.push("…".into());
        }
        format!(
            "{} entr{} could not be deleted ({})",
            self.count,
            if self.count == 1 { "y" } else { "ies" },
            shown.join("; ")
        )
    }
}

/// An error number in words, without the number (`Operation not permitted`).
fn words(e: Errno) -> String {
    let text = std::io::Error::from(e).to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The words for a mount point the deletion left alone.
pub(crate) const MOUNTED: &str = "a file system is mounted there; kardwt never deletes across it";

/// Delete the directory `path` and everything in it on its own file system. `Ok(None)`: all
/// gone (or nothing was there); `Ok(Some)`: what stayed (paths relative to `path`); `Err`: it
/// could not even be opened, and nothing was deleted.
pub(crate) fn delete(path: &Path) -> std::io::Result<Option<Left>> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other(format!(
            "{} has no parent directory",
            path.display()
        )));
    };
    let parent = crate::sys::beneath::root(parent)?;
    delete_at(&parent, name)
}

/// [`delete`] for the entry `name` in the open directory `parent`.
pub(crate) fn delete_at(parent: &OwnedFd, name: &OsStr) -> std::io::Result<Option<Left>> {
    let parent_dev = rustix::fs::fstat(parent)?.st_dev;
    let mut left = Left::default();
    match crate::sys::mounts::mount_point(parent, name, parent_dev)? {
        None => {
            // Not a directory (or gone): the entry itself.
            return match rustix::fs::unlinkat(parent, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => Ok(None),
                Err(e) => Err(e.into()),
            };
        }
        Some(true) => {
            left.note(Path::new(""), MOUNTED);
            return Ok(Some(left));
        }
        Some(false) => {}
    }
    let root = match rustix::fs::openat(parent, name, DIR, Mode::empty()) {
        Ok(d) => d,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    empty(&root, Path::new(""), parent_dev, &mut left);
    if left.count == 0 {
        match rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => left.note(Path::new(""), words(e)),
        }
    }
    Ok((left.count > 0).then_some(left))
}

/// Delete everything in `dir` (at `rel`) that is on the device `dev`, noting what stays.
fn empty(dir: &OwnedFd, rel: &Path, dev: rustix::fs::Dev, left: &mut Left) {
    let entries = match rustix::fs::Dir::read_from(dir) {
        Ok(d) => d,
        Err(e) => return left.note(rel, words(e)),
    };
    let mut found = Vec::new();
    for e in entries {
        match e {
            Ok(e) => {
                use std::os::unix::ffi::OsStrExt as _;
                let name = OsStr::from_bytes(e.file_name().to_bytes()).to_owned();
                if name != "." && name != ".." {
                    found.push((name, e.file_type()));
                }
            }
            Err(e) => {
                left.note(rel, words(e));
                break;
            }
        }
    }
    for (name, kind) in found {
        let at = rel.join(&name);
        // A directory entry's type says what is surely not a directory: unlinked at once
        // (a file mount point refuses with EBUSY and stays).
        let maybe_dir = matches!(kind, FileType::Directory | FileType::Unknown);
        if maybe_dir {
            match crate::sys::mounts::mount_point(dir, &name, dev) {
                Ok(Some(true)) => {
                    left.note(&at, MOUNTED);
                    continue;
                }
                Ok(Some(false)) => {
                    subtree(dir, &name, &at, dev, left);
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    left.note(&at, e.to_string());
                    continue;
                }
            }
        }
        match rustix::fs::unlinkat(dir, &name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => left.note(&at, words(e)),
        }
    }
}

/// Delete the directory `name` in `dir` and what it holds, opened without following a symlink
/// and checked again once open (a mount made since the look is left alone).
fn subtree(dir: &OwnedFd, name: &OsStr, at: &Path, dev: rustix::fs::Dev, left: &mut Left) {
    let sub = match rustix::fs::openat(dir, name, DIR, Mode::empty()) {
        Ok(d) => d,
        Err(Errno::NOENT) => return,
        Err(e) => return left.note(at, words(e)),
    };
    if rustix::fs::fstat(&sub).map_or(true, |st| st.st_dev != dev) {
        return left.note(at, MOUNTED);
    }
    let before = left.count;
    empty(&sub, at, dev, left);
    if left.count > before {
        return;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => {}
        // Mounted on since it was looked at.
        Err(Errno::BUSY) => left.note(at, MOUNTED),
        Err(e) => left.note(at, words(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_all_on_one_file_system_and_never_follows_a_symlink() {
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let t = tree.path().join("t");
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::write(t.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), t.join("a/link")).unwrap();
        assert_eq!(delete(&t).unwrap(), None);
        assert!(!t.exists());
        assert!(outside.path().join("keep").is_file(), "followed a symlink");
        assert_eq!(delete(&t).unwrap(), None, "nothing there is not an error");
    }

    /// A real tmpfs and a bind mount of a directory on the same file system, mounted inside
    /// a tree (as root; skipped otherwise): the deletion takes everything else and leaves both
    /// mounts' contents whole, naming them. Unmounted by a guard, a failing test included.
    #[test]
    fn never_descends_into_a_mount_of_another_or_the_same_file_system() {
        struct Unmount(Vec<PathBuf>);
        impl Drop for Unmount {
            fn drop(&mut self) {
                for at in self.0.iter().rev() {
                    let _ = std::process::Command::new("umount")
                        .arg("-l")
                        .arg(at)
                        .status();
                }
            }
        }
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED: mounting needs root");
            return;
        }
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("keep"), "outside").unwrap();
        let t = tree.path().join("t");
        for d in ["a/tmp", "a/bound", "b"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(t.join("b/f"), "x").unwrap();
        let mut guard = Unmount(Vec::new());
        let mount = |args: &[&std::ffi::OsStr]| {
            let ok = std::process::Command::new("mount").args(args).status();
            assert!(ok.unwrap().success(), "mount {args:?}");
        };
        mount(&[
            "-t".as_ref(),
            "tmpfs".as_ref(),
            "tmpfs".as_ref(),
            t.join("a/tmp").as_os_str(),
        ]);
        guard.0.push(t.join("a/tmp"));
        std::fs::write(t.join("a/tmp/db"), "mounted").unwrap();
        mount(&[
            "--bind".as_ref(),
            outside.path().as_os_str(),
            t.join("a/bound").as_os_str(),
        ]);
        guard.0.push(t.join("a/bound"));

        let left = delete(&t).unwrap().expect("the mounts stay");
        let mut stayed: Vec<PathBuf> = left.first.iter().map(|(p, _)| p.clone()).collect();
        stayed.sort();
        assert_eq!(
            stayed,
            [PathBuf::from("a/bound"), PathBuf::from("a/tmp")],
            "{left:?}"
        );
        assert!(left.first.iter().all(|(_, why)| why == MOUNTED), "{left:?}");
        assert_eq!(
            std::fs::read_to_string(t.join("a/tmp/db")).unwrap(),
            "mounted"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "outside"
        );
        assert!(
            !t.join("b").exists(),
            "what is on the tree's file system goes"
        );
        drop(guard);
    }

    #[test]
    fn what_stays_is_counted_and_named() {
        let mut left = Left::default();
        for i in 0..5 {
            left.note(Path::new(&format!("d/f{i}")), "Operation not permitted");
        }
        assert_eq!(
            left.describe(),
            "5 entries could not be deleted (d/f0: Operation not permitted; d/f1: Operation not \
             permitted; d/f2: Operation not permitted; …)"
        );
    }
}
