//! Directories the new tree lacks, filled under a temporary name (`.kardwt-tmp-…`) and
//! renamed into place once the copy is complete: one rename for a whole directory, so it is
//! absent or whole; deleted (on its own file system only) when the copy fails or is dropped.
use crate::sys;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{Context as _, Result};

use super::super::file;
use super::Copier;

/// A directory being filled under a temporary name `tmp` in the directory `parent` (relative
/// to the root), to be renamed to `name` (`rel`) once complete.
pub(super) struct Staged {
    parent: PathBuf,
    tmp: OsString,
    name: OsString,
    rel: PathBuf,
}

impl Copier {
    /// The destination directory `name` in `parent_fd` (at its final place) for the base's
    /// `dir`: the one there (not fresh), or where there is none a new one under a temporary
    /// name (fresh), renamed into place by `finish`; `None` when something that is not a
    /// directory is there (kept, reported).
    pub(super) fn open_or_stage(
        &mut self,
        parent_fd: &OwnedFd,
        name: &OsStr,
        dir: &Path,
    ) -> Result<Option<(OwnedFd, bool)>> {
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC;
        match rustix::fs::openat(parent_fd, name, flags, rustix::fs::Mode::empty()) {
            Ok(fd) => {
                self.clear_once(dir, &fd);
                return Ok(Some((fd, false)));
            }
            Err(rustix::io::Errno::NOENT) => {}
            Err(_) => return Ok(self.open_child(parent_fd, name, dir)?.map(|fd| (fd, false))),
        }
        let tmp = OsString::from(file::temporary_name());
        let Some((fd, _)) = self.make_fresh(parent_fd, &tmp, dir)? else {
            return Ok(None);
        };
        self.staged.push(Staged {
            parent: dir.parent().unwrap_or(Path::new("")).to_path_buf(),
            tmp,
            name: name.to_owned(),
            rel: dir.to_path_buf(),
        });
        Ok(Some((fd, true)))
    }

    /// Make the directory `name` in `parent_fd` (for the base's `dir`) and open it, fresh:
    /// `None` when something is there already (in a directory this copy fills alone, planted:
    /// skipped, reported).
    pub(super) fn make_fresh(
        &mut self,
        parent_fd: &OwnedFd,
        name: &OsStr,
        dir: &Path,
    ) -> Result<Option<(OwnedFd, bool)>> {
        let path = self.to.join(dir);
        let unmade = || format!("cannot create {}", path.display());
        match rustix::fs::mkdirat(parent_fd, name, rustix::fs::Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => {
                self.tally.kept.fetch_add(1, Ordering::Relaxed);
                self.skip(dir, "something appeared there during the copy");
                return Ok(None);
            }
            Err(e) => return Err(std::io::Error::from(e)).with_context(unmade),
        }
        self.note_made(vec![dir.to_path_buf()]);
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC;
        let fd = rustix::fs::openat(parent_fd, name, flags, rustix::fs::Mode::empty())
            .map_err(std::io::Error::from)
            .with_context(unmade)?;
        Ok(Some((fd, true)))
    }

    /// Rename each directory filled under a temporary name into place; one something
    /// appeared at meanwhile is kept, and the copy deleted (reported).
    pub(super) fn unstage(&mut self) -> Result<()> {
        for staged in std::mem::take(&mut self.staged) {
            let parent = match sys::beneath_open_dir(&self.root, &staged.parent, None) {
                Ok(Ok(fd)) => fd,
                Ok(Err(blocked)) => {
                    self.skip(&staged.rel, blocked);
                    continue;
                }
                Err(e) => {
                    let parent = self.to.join(&staged.parent);
                    return Err(e).with_context(|| format!("cannot open {}", parent.display()));
                }
            };
            let placed = sys::rename_noreplace(&parent, &staged.tmp, &parent, &staged.name)
                .with_context(|| {
                    format!(
                        "cannot move a copy into place as {}",
                        self.to.join(&staged.rel).display()
                    )
                });
            match placed {
                Ok(true) => {}
                Ok(false) => {
                    let _ = crate::sys::delete_on_one_fs_at(&parent, &staged.tmp);
                    self.tally.kept.fetch_add(1, Ordering::Relaxed);
                    self.skip(&staged.rel, "something appeared there during the copy");
                }
                Err(e) => {
                    let _ = crate::sys::delete_on_one_fs_at(&parent, &staged.tmp);
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// A copy that failed or was stopped leaves no directory half filled under a temporary name.
impl Drop for Copier {
    fn drop(&mut self) {
        if self.staged.is_empty() {
            return;
        }
        self.stop();
        for staged in std::mem::take(&mut self.staged) {
            if let Ok(Ok(parent)) = sys::beneath_open_dir(&self.root, &staged.parent, None) {
                let _ = crate::sys::delete_on_one_fs_at(&parent, &staged.tmp);
            }
        }
    }
}
