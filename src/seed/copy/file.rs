//! One file or symlink copied into a directory of the new tree: data goes to
//! a temporary name beside the destination (`.kardwt-tmp-…`), which is renamed into place
//! without replacing anything, so a destination is either absent or complete. In a directory
//! this copy made under a temporary name itself (a whole directory copied where none was,
//! renamed into place once complete by the walk), files are written at their own names
//! directly: the directory is the temporary. Blocks are cloned where the file system can
//! (Linux's `FICLONE` into the new file; on macOS `fclonefileat` makes it as a clone), else
//! copied segment by segment between `SEEK_DATA`/`SEEK_HOLE`, so sparse files stay sparse.
//! The deadline is checked between segments and every 64 MiB.
use std::ffi::OsStr;
use std::fs::{File, FileTimes, Metadata};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use crate::config::CopyMethod as Method;
use crate::ground::error::Fail;

/// The prefix of the temporary names copies are written under; a retry removes any left.
pub(super) const TMP_PREFIX: &str = ".kardwt-tmp-";

/// Files up to this size get their blob id kept, for pre-push to block a pushed copy.
pub(super) const MAX_HASHED: u64 = 1 << 20;

/// What copying one entry did.
pub(super) enum Copied {
    /// Copied; `cloned` when the blocks are shared with the base; `blob` its id when hashed.
    File {
        cloned: bool,
        blob: Option<String>,
    },
    Link,
    /// Something was already at the destination: kept as it was. `blob`: the source's id
    /// when what is there is a byte-for-byte copy of it (an earlier, interrupted copy's).
    Kept {
        blob: Option<String>,
    },
    /// The source is gone or is no longer a file or symlink (it changed under the copy).
    Gone,
}

/// Fail with exit 5 once `deadline` has passed, and with 128 + the signal once kardwt was
/// interrupted: a copy stops between files and between a file's segments.
pub(super) fn check_deadline(deadline: Option<Instant>) -> Result<()> {
    crate::sys::check_signal("while copying from the base")?;
    match deadline {
        Some(d) if Instant::now() >= d => Err(Fail::from(crate::sys::Overran {
            during: "while copying from the base".into(),
        })
        .into()),
        _ => Ok(()),
    }
}

/// How `copy` hashes what it copied: `None` keeps no blob ids.
pub(super) type Hash = Option<gix::hash::Kind>;

/// Where a copy goes: `dir` is a directory of the new tree, or (`fresh`) one this copy made
/// under a temporary name and fills alone, where nothing else is and no temporary is needed.
pub(super) struct Dest<'a> {
    pub dir: &'a OwnedFd,
    pub fresh: bool,
}

/// Copy `src` (whose `lstat` is `meta`) to `name` in the directory `to` of the new tree.
pub(super) fn copy(
    src: &Path,
    meta: &Metadata,
    to: Dest<'_>,
    name: &OsStr,
    method: Method,
    deadline: Option<Instant>,
    hash: Hash,
) -> Result<Copied> {
    let Dest { dir, fresh } = to;
    if !fresh && crate::sys::beneath_kind_at(dir, name).is_some() {
        let blob = blob_of_earlier_copy(src, meta, dir, name, hash)?;
        return Ok(Copied::Kept { blob });
    }
    if meta.file_type().is_symlink() {
        let target = match std::fs::read_link(src) {
            Ok(t) => t,
            Err(e) if changed_under_the_copy(&e) => return Ok(Copied::Gone),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
        };
        // A symlink is made in one step: no temporary needed.
        if !crate::sys::beneath_symlink(dir, name, &target)? {
            return Ok(Copied::Kept { blob: None });
        }
        let _ = set_times_at(dir, name, meta);
        return Ok(Copied::Link);
    }
    // Never follow a symlink swapped in, never block on a FIFO swapped in.
    let input = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(src)
    {
        Ok(f) => f,
        Err(e) if changed_under_the_copy(&e) => return Ok(Copied::Gone),
        // A base file that cannot be read fails the copy, never leaves it out.
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
    };
    match input.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Ok(Copied::Gone),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
    }
    let tmp = match fresh {
        true => name.to_owned(),
        false => temporary_name().into(),
    };
    let tmp = tmp.as_os_str();
    let (output, made_as_clone) = match clone_new(&input, dir, tmp, method)
        .with_context(|| format!("copying {}", src.display()))?
    {
        Some(clone) => (clone, true),
        None => (
            match rustix::fs::openat(
                dir,
                tmp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => fd.into(),
                // Planted in the directory this copy made: kept, never replaced.
                Err(Errno::EXIST) if fresh => return Ok(Copied::Kept { blob: None }),
                Err(e) => {
                    return Err(std::io::Error::from(e)).with_context(|| {
                        format!("cannot create a temporary file beside {}", src.display())
                    })
                }
            },
            false,
        ),
    };
    let written = (|| -> Result<(bool, Option<String>)> {
        let cloned = made_as_clone || copy_data(&input, &output, meta.len(), method, deadline)?;
        output.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        let times = FileTimes::new()
            .set_accessed(meta.accessed().unwrap_or(UNIX_EPOCH))
            .set_modified(meta.modified().unwrap_or(SystemTime::now()));
        output.set_times(times)?;
        let blob = match hash {
            Some(kind) if meta.len() <= MAX_HASHED => blob_id(&input, meta.len(), kind),
            _ => None,
        };
        Ok((cloned, blob))
    })();
    let (cloned, blob) = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
            return Err(e.context(format!("copying {}", src.display())));
        }
    };
    drop(output);
    if !fresh && !rename_noreplace(dir, tmp, name)? {
        return Ok(Copied::Kept { blob: None });
    }
    Ok(Copied::File { cloned, blob })
}

/// The blob id of `src` (whose `lstat` is `meta`) when the file already at `name` in `dir` is
/// a byte-for-byte copy of it: a copy an interrupted run completed (copies are atomic) whose
/// id was never kept, so that pre-push blocks it after the retry too.
/// `None` for anything else there (the user's), or when no ids are kept. A base file that
/// cannot be read is an error.
fn blob_of_earlier_copy(
    src: &Path,
    meta: &Metadata,
    dir: &OwnedFd,
    name: &OsStr,
    hash: Hash,
) -> Result<Option<String>> {
    let Some(kind) = hash else {
        return Ok(None);
    };
    if !meta.is_file() || meta.len() == 0 || meta.len() > MAX_HASHED {
        return Ok(None);
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(there) = rustix::fs::openat(dir, name, flags, Mode::empty()) else {
        return Ok(None);
    };
    let there = File::from(there);
    if !there
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() == meta.len())
    {
        return Ok(None);
    }
    let input = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(src)
    {
        Ok(f) => f,
        Err(e) if changed_under_the_copy(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
    };
    let len = meta.len() as usize;
    let (mut theirs, mut ours) = (vec![0u8; len], vec![0u8; len]);
    input
        .read_exact_at(&mut theirs, 0)
        .with_context(|| format!("cannot read {}", src.display()))?;
    if there.read_exact_at(&mut ours, 0).is_err() || ours != theirs {
        return Ok(None);
    }
    Ok(
        gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &theirs)
            .ok()
            .map(|id| id.to_string()),
    )
}

/// Did opening or reading a base entry fail because it changed since it was listed (gone,
/// turned into a symlink or no longer one, a parent no longer a directory)? Anything else is
/// a read that failed.
fn changed_under_the_copy(e: &std::io::Error) -> bool {
    matches!(
        Errno::from_io_error(e),
        Some(Errno::NOENT | Errno::LOOP | Errno::NOTDIR | Errno::INVAL)
    )
}

/// A name no other copy uses: the prefix, the process id and a sequence number.
pub(super) fn temporary_name() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    format!(
        "{TMP_PREFIX}{}-{}",
        PID.get_or_init(std::process::id),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Rename `tmp` to `name` in `dir` unless `name` exists (then `tmp` is removed and the answer
/// is false): `renameat2(RENAME_NOREPLACE)`, or where the file system lacks it a hard link
/// (which never replaces either) and an unlink.
fn rename_noreplace(dir: &OwnedFd, tmp: &OsStr, name: &OsStr) -> Result<bool> {
    let done = match crate::sys::renameat_noreplace(dir, tmp, dir, name) {
        Ok(()) => return Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) if crate::sys::no_noreplace(e) => {
            match rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty()) {
                Ok(()) => Ok(true),
                Err(Errno::EXIST) => Ok(false),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
    done.with_context(|| {
        format!(
            "cannot move a copy into place as {} (on {})",
            name.to_string_lossy(),
            crate::sys::fs_type_of_fd(dir)
        )
    })
}

/// Remove the temporaries an interrupted copy left in `dir`: files, and directories it was
/// filling (deleted on their own file system only, never through a symlink).
pub(super) fn remove_temporaries(dir: &OwnedFd) {
    let Ok(listing) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name().to_bytes();
        if !name.starts_with(TMP_PREFIX.as_bytes()) {
            continue;
        }
        match entry.file_type() {
            rustix::fs::FileType::RegularFile => {
                let _ = rustix::fs::unlinkat(dir, entry.file_name(), AtFlags::empty());
            }
            rustix::fs::FileType::Directory => {
                use std::os::unix::ffi::OsStrExt as _;
                let _ = crate::sys::delete_on_one_fs_at(dir, OsStr::from_bytes(name));
            }
            _ => {}
        }
    }
}

/// Copy the bytes of `input` into the empty `output`; true when the blocks were cloned.
fn copy_data(
    input: &File,
    output: &File,
    len: u64,
    method: Method,
    deadline: Option<Instant>,
) -> Result<bool> {
    if method != Method::Copy {
        match clone_file(input, output) {
            Ok(()) => return Ok(true),
            Err(e) if method == Method::Clone => {
                return Err(anyhow::anyhow!(
                    "sharing.copy_method is clone, but the file system ({}) cannot clone: {e}",
                    crate::sys::fs_type_of_fd(output)
                ))
            }
            Err(_) => {}
        }
    }
    // The holes are left as holes: only the data segments are written.
    output.set_len(len)?;
    let mut pos = 0;
    while pos < len {
        check_deadline(deadline)?;
        let Some((start, end)) = next_data(input, pos, len)? else {
            break;
        };
        copy_segment(input, output, start, end, method, deadline)?;
        pos = end;
    }
    Ok(false)
}

/// The next data segment at or after `pos`, as `[start, end)`; `None` when only a hole is left.
fn next_data(input: &File, pos: u64, len: u64) -> Result<Option<(u64, u64)>> {
    let start = match rustix::fs::seek(input, SeekFrom::Data(pos)) {
        Ok(s) => s,
        Err(Errno::NXIO) => return Ok(None),
        // No SEEK_DATA here: all of it is data.
        Err(_) => return Ok(Some((pos, len))),
    };
    let end = rustix::fs::seek(input, SeekFrom::Hole(start)).unwrap_or(len);
    Ok((start < len).then_some((start, end.min(len))))
}

/// Copy `[start, end)` of `input` to the same offsets of `output`: `copy_file_range` (with
/// `auto`), else reads and writes.
fn copy_segment(
    input: &File,
    output: &File,
    start: u64,
    end: u64,
    method: Method,
    deadline: Option<Instant>,
) -> Result<()> {
    const CHUNK: u64 = 64 << 20;
    let mut at = start;
    let mut ranged = method != Method::Copy;
    let mut buf = Vec::new();
    while at < end {
        check_deadline(deadline)?;
        let want = (end - at).min(CHUNK);
        if ranged {
            match copy_range(input, output, at, want) {
                Ok(0) => return Ok(()), // the file shrank under the copy
                Ok(n) => {
                    at += n;
                    continue;
                }
                Err(_) => ranged = false,
            }
        }
        buf.resize(want.min(1 << 20) as usize, 0);
        let n = input.read_at(&mut buf, at)?;
        if n == 0 {
            return Ok(());
        }
        output.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// The git blob id of `input`'s `len` bytes, read again from the start.
fn blob_id(input: &File, len: u64, kind: gix::hash::Kind) -> Option<String> {
    let mut data = vec![0u8; usize::try_from(len).ok()?];
    input.read_exact_at(&mut data, 0).ok()?;
    if data.is_empty() {
        return None; // the empty blob is everywhere: never a reason to block a push
    }
    gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &data)
        .ok()
        .map(|id| id.to_string())
}

/// Up to `len` bytes at `at` of `input` copied to the same offset of `output` in the kernel.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn copy_range(input: &File, output: &File, at: u64, len: u64) -> std::io::Result<u64> {
    let (mut off_in, mut off_out) = (at, at);
    let n = rustix::fs::copy_file_range(
        input,
        Some(&mut off_in),
        output,
        Some(&mut off_out),
        len as usize,
    )?;
    Ok(n as u64)
}

/// `copy_file_range` is Linux's: elsewhere (and in the `portable` build) every segment is read
/// and written.
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
fn copy_range(_input: &File, _output: &File, _at: u64, _len: u64) -> std::io::Result<u64> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn clone_file(input: &File, output: &File) -> std::io::Result<()> {
    rustix::fs::ioctl_ficlone(output, input).map_err(std::io::Error::from)
}

/// No clone into an open file here: macOS clones into a new name ([`clone_new`]), the `portable`
/// build never clones.
#[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
fn clone_file(_input: &File, _output: &File) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Where the system clones into a new name (macOS's `fclonefileat`, APFS): the clone of `input`
/// made as `tmp` in `dir` and opened, the temporary the copy would have been written to. The
/// source is the file already opened without following a symlink, the destination a name in
/// a directory opened beneath the tree, which `fclonefileat` creates and never follows (a name
/// already there fails it). Not the owner: the caller's, as a copy's. `None` when not asked to
/// clone, or when `auto` meets a file system that cannot (the copy follows).
#[cfg(target_os = "macos")]
fn clone_new(input: &File, dir: &OwnedFd, tmp: &OsStr, method: Method) -> Result<Option<File>> {
    if method == Method::Copy {
        return Ok(None);
    }
    match rustix::fs::fclonefileat(input, dir, tmp, rustix::fs::CloneFlags::NOOWNERCOPY) {
        Ok(()) => {}
        Err(e) if method == Method::Clone => {
            return Err(anyhow::anyhow!(
                "sharing.copy_method is clone, but the file system ({}) cannot clone: {e}",
                crate::sys::fs_type_of_fd(dir)
            ))
        }
        Err(_) => return Ok(None),
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, tmp, flags, Mode::empty()) {
        Ok(clone) => Ok(Some(clone.into())),
        Err(e) => {
            let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
            Err(std::io::Error::from(e)).context("cannot open the clone just made")
        }
    }
}

/// Elsewhere a clone is made into the open temporary (`FICLONE`, in [`copy_data`]), or not at
/// all.
#[cfg(not(target_os = "macos"))]
fn clone_new(_input: &File, _dir: &OwnedFd, _tmp: &OsStr, _method: Method) -> Result<Option<File>> {
    Ok(None)
}

/// Set the access and modification times of `name` in `dir` itself, a symlink included.
fn set_times_at(dir: &OwnedFd, name: &OsStr, meta: &Metadata) -> std::io::Result<()> {
    Ok(rustix::fs::utimensat(
        dir,
        name,
        &timestamps(meta),
        AtFlags::SYMLINK_NOFOLLOW,
    )?)
}

/// `meta`'s access and modification times, for `utimensat`/`futimens`.
pub(super) fn timestamps(meta: &Metadata) -> rustix::fs::Timestamps {
    let ts = |secs: i64, nanos: i64| rustix::fs::Timespec {
        tv_sec: secs,
        tv_nsec: nanos as _,
    };
    rustix::fs::Timestamps {
        last_access: ts(meta.atime(), meta.atime_nsec()),
        last_modification: ts(meta.mtime(), meta.mtime_nsec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_file_stays_sparse_and_a_leftover_temporary_is_removed() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let src = a.path().join("sparse");
        let f = File::create(&src).unwrap();
        f.set_len(64 << 20).unwrap();
        f.write_all_at(&[7u8; 4096], 32 << 20).unwrap();
        drop(f);
        let dir = crate::sys::beneath_root(b.path()).unwrap();
        std::fs::write(b.path().join(format!("{TMP_PREFIX}1-2")), "half").unwrap();
        remove_temporaries(&dir);
        let meta = std::fs::symlink_metadata(&src).unwrap();
        let out = copy(
            &src,
            &meta,
            Dest {
                dir: &dir,
                fresh: false,
            },
            OsStr::new("sparse"),
            Method::Copy,
            None,
            Some(gix::hash::Kind::Sha1),
        )
        .unwrap();
        assert!(matches!(
            out,
            Copied::File {
                cloned: false,
                blob: None
            }
        ));
        let copied = std::fs::metadata(b.path().join("sparse")).unwrap();
        assert_eq!(copied.len(), 64 << 20);
        assert!(
            copied.blocks() * 512 < 1 << 20,
            "{} blocks",
            copied.blocks()
        );
        let names: Vec<_> = std::fs::read_dir(b.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let again = copy(
            &src,
            &meta,
            Dest {
                dir: &dir,
                fresh: false,
            },
            OsStr::new("sparse"),
            Method::Copy,
            None,
            None,
        );
        assert!(matches!(again.unwrap(), Copied::Kept { blob: None }));
    }

    #[test]
    fn small_files_get_their_blob_id() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("f"), "hello\n").unwrap();
        let meta = std::fs::symlink_metadata(a.path().join("f")).unwrap();
        let dir = crate::sys::beneath_root(b.path()).unwrap();
        let hash = Some(gix::hash::Kind::Sha1);
        let out = copy(
            &a.path().join("f"),
            &meta,
            Dest {
                dir: &dir,
                fresh: false,
            },
            OsStr::new("f"),
            Method::Auto,
            None,
            hash,
        );
        let Ok(Copied::File { blob, .. }) = out else {
            panic!("not copied")
        };
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            blob.as_deref(),
            Some("ce013625030ba8dba906f756967f9e9ca394464a")
        );
    }

    #[test]
    fn an_earlier_copy_kept_as_it_is_still_gets_its_blob_id() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("f"), "hello\n").unwrap();
        std::fs::write(a.path().join("g"), "hello\n").unwrap();
        // What an interrupted run copied, and a file of the user's of the same size.
        std::fs::write(b.path().join("f"), "hello\n").unwrap();
        std::fs::write(b.path().join("g"), "HELLO\n").unwrap();
        let dir = crate::sys::beneath_root(b.path()).unwrap();
        let hash = Some(gix::hash::Kind::Sha1);
        let kept = |name: &str| {
            let src = a.path().join(name);
            let meta = std::fs::symlink_metadata(&src).unwrap();
            match copy(
                &src,
                &meta,
                Dest {
                    dir: &dir,
                    fresh: false,
                },
                OsStr::new(name),
                Method::Auto,
                None,
                hash,
            ) {
                Ok(Copied::Kept { blob }) => blob,
                _ => panic!("{name} was not kept"),
            }
        };
        assert_eq!(
            kept("f").as_deref(),
            Some("ce013625030ba8dba906f756967f9e9ca394464a")
        );
        assert_eq!(kept("g"), None);
        assert_eq!(
            std::fs::read_to_string(b.path().join("g")).unwrap(),
            "HELLO\n"
        );
    }
}
