//! The files of a planned checkout, written by kardwt's own writers: each thread takes one
//! contiguous run of the index's entries and creates them through directory descriptors it
//! opened itself (one path component looked up per file, not the tree's whole path), with none
//! of a general checkout's attribute and filter lookups, which a planned tree never needs.
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, Result};
use gix::bstr::ByteSlice;
use gix::index::entry::{Mode, Stat};
use gix::objs::FindExt as _;
use io_close::Close as _;
use rustix::fs::OFlags;

/// Write every entry of `entries` (paths in `paths`) beneath the empty directory `root` on
/// `threads` threads, each entry's stat data taken from the file just written. Stops between
/// files once `stop` is set (the caller tells why). Returns how many regular files were
/// written; the first failure, naming its path, once every thread has stopped.
pub(crate) fn write<F>(
    root: &Path,
    entries: &mut [gix::index::Entry],
    paths: &gix::index::PathStorageRef,
    objects: &F,
    threads: usize,
    stop: &AtomicBool,
) -> Result<usize>
where
    F: gix::objs::Find + Clone + Send,
{
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", root.display()))?;
    let failed = AtomicBool::new(false);
    let per = entries.len().div_ceil(threads.max(1)).max(1);
    let mut runs: Vec<&mut [gix::index::Entry]> = entries.chunks_mut(per).collect();
    let last = runs.pop();
    let results: Vec<Result<usize>> = std::thread::scope(|scope| {
        let mut results = Vec::new();
        let mut handles = Vec::new();
        for run in runs {
            let objects = objects.clone();
            let (root_fd, failed) = (root_fd.as_fd(), &failed);
            let spawned = std::thread::Builder::new()
                .name("kardwt-checkout".to_owned())
                .spawn_scoped(scope, move || {
                    write_run(root, root_fd, run, paths, objects, stop, failed)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                // The system refused a thread: a failed checkout, which the caller undoes.
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    results.push(Err(anyhow::Error::from(e).context(format!(
                        "cannot start a thread to check out {}",
                        root.display()
                    ))));
                }
            }
        }
        if let Some(run) = last {
            let objects = objects.clone();
            results.push(write_run(
                root,
                root_fd.as_fd(),
                run,
                paths,
                objects,
                stop,
                &failed,
            ));
        }
        for handle in handles {
            results.push(handle.join().unwrap_or_else(|_| {
                Err(anyhow::anyhow!(
                    "a checkout thread of {} panicked",
                    root.display()
                ))
            }));
        }
        results
    });
    let mut files = 0;
    for result in results {
        files += result?;
    }
    Ok(files)
}

/// Write one thread's `run` of entries in order, until the end, `stop`, or another thread's
/// failure (`failed`); its own failure sets `failed`.
fn write_run<F: gix::objs::Find>(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    run: &mut [gix::index::Entry],
    paths: &gix::index::PathStorageRef,
    objects: F,
    stop: &AtomicBool,
    failed: &AtomicBool,
) -> Result<usize> {
    let mut dirs = Dirs {
        root: root_fd,
        path: Vec::new(),
        open: Vec::new(),
    };
    let mut buf = Vec::new();
    let mut files = 0;
    for entry in run {
        if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
            break;
        }
        let path = entry.path_in(paths);
        let written = write_entry(root, &mut dirs, entry, path.as_bytes(), &objects, &mut buf);
        match written {
            Ok(file) => files += usize::from(file),
            Err(e) => {
                failed.store(true, Ordering::Relaxed);
                return Err(e.context(format!("cannot write {} in {}", path, root.display())));
            }
        }
    }
    Ok(files)
}

/// Write one entry: `Ok(true)` for a regular file, `Ok(false)` for a symbolic link.
fn write_entry<F: gix::objs::Find>(
    root: &Path,
    dirs: &mut Dirs<'_>,
    entry: &mut gix::index::Entry,
    path: &[u8],
    objects: &F,
    buf: &mut Vec<u8>,
) -> Result<bool> {
    let (dir, name) = match path.iter().rposition(|b| *b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&path[..0], path),
    };
    anyhow::ensure!(
        plain_name(name),
        "the name {:?} is not a file's",
        name.as_bstr()
    );
    let parent = dirs.enter(dir)?;
    let blob = objects
        .find_blob(&entry.id, buf)
        .with_context(|| format!("cannot read blob {}", entry.id))?;
    match entry.mode {
        Mode::FILE | Mode::FILE_EXECUTABLE => {
            let mode = if entry.mode == Mode::FILE_EXECUTABLE {
                0o777
            } else {
                0o666
            };
            let fd = rustix::fs::openat(
                parent,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                rustix::fs::Mode::from_raw_mode(mode),
            )?;
            let mut file = std::fs::File::from(fd);
            file.write_all(blob.data)?;
            let meta = gix::index::fs::Metadata::from_file(&file)?;
            entry.stat = Stat::from_fs(&meta)?;
            // A write error some file systems report only when the file is closed.
            file.close()?;
            Ok(true)
        }
        Mode::SYMLINK => {
            rustix::fs::symlinkat(blob.data, parent, name)?;
            let meta = gix::index::fs::Metadata::from_path_no_follow(
                &root.join(std::ffi::OsStr::from_bytes(path)),
            )?;
            entry.stat = Stat::from_fs(&meta)?;
            Ok(false)
        }
        other => anyhow::bail!("a planned checkout holds no entry of mode {other:?}"),
    }
}

/// A file or directory name a tree may hold: not empty, `.` or `..`, and without a slash or a
/// NUL (the index's paths are validated when read from the tree; this is the writer's own
/// guard, as every name is looked up beneath a descriptor).
fn plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

/// The directories a writer is in: the tree's root and, open, each leading directory of the
/// last entry's path, created where absent.
struct Dirs<'r> {
    root: BorrowedFd<'r>,
    /// The directory path (relative, `/`-separated) the descriptors in `open` lead to.
    path: Vec<u8>,
    /// Each directory of `path`, with where its name ends in `path`.
    open: Vec<(usize, OwnedFd)>,
}

impl Dirs<'_> {
    /// The descriptor of `dir` (relative to the root), creating and opening what is not open.
    fn enter(&mut self, dir: &[u8]) -> Result<BorrowedFd<'_>> {
        while let Some((end, _)) = self.open.last() {
            let end = *end;
            let shared = dir.len() >= end
                && dir[..end] == self.path[..end]
                && (dir.len() == end || dir[end] == b'/');
            if shared {
                break;
            }
            self.open.pop();
        }
        let mut at = self.open.last().map_or(0, |(end, _)| *end);
        self.path.clear();
        self.path.extend_from_slice(dir);
        while at < dir.len() {
            let start = if dir[at] == b'/' { at + 1 } else { at };
            let end = dir[start..]
                .iter()
                .position(|b| *b == b'/')
                .map_or(dir.len(), |n| start + n);
            let name = &dir[start..end];
            anyhow::ensure!(
                plain_name(name),
                "the name {:?} is not a directory's",
                name.as_bstr()
            );
            let parent = self.open.last().map_or(self.root, |(_, fd)| fd.as_fd());
            match rustix::fs::mkdirat(parent, name, rustix::fs::Mode::from_raw_mode(0o777)) {
                // Another writer made it (their runs meet in it): a directory or nothing, as
                // the plan refused a tree with a file where a directory is.
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => {
                    return Err(anyhow::Error::from(e)
                        .context(format!("cannot create {}", dir[..end].as_bstr())))
                }
            }
            let fd = rustix::fs::openat(
                parent,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .with_context(|| format!("cannot open {}", dir[..end].as_bstr()))?;
            self.open.push((end, fd));
            at = end;
        }
        Ok(self.open.last().map_or(self.root, |(_, fd)| fd.as_fd()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_written() {
        for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b"] {
            assert!(!plain_name(bad), "{bad:?}");
        }
        for good in [&b"a"[..], b"..a", b".git-x", b"f.txt"] {
            assert!(plain_name(good), "{good:?}");
        }
    }
}
