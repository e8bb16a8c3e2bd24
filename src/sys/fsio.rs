//! File I/O for kardwt's own files: reads that are bounded, never block and
//! accept only a regular file; appends and lock files opened without following a symlink or
//! waiting on a FIFO; kardwt's directories made without following a symlink planted on the way;
//! whole-file writes made atomic through `tempfile` (a temporary file beside the destination,
//! fsync, rename, fsync of the directory), so a symlink at the destination is replaced and
//! never written through; the temporary's name carries its writer's pid, so one a killed
//! writer left is recognised ([`temporary`]) and removed by whoever comes next. Anything but a regular file (or a real directory) where kardwt keeps
//! one of its files is refused with a [`NotRegular`] error that names it.
use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

/// Something other than what kardwt keeps there: a symlink, a FIFO, a socket, a device or a
/// directory where a regular file belongs, or anything but a real directory where a directory
/// belongs. Carried inside an [`io::Error`] of kind [`io::ErrorKind::InvalidInput`]; see
/// [`not_regular`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotRegular {
    pub path: PathBuf,
    /// What is there: `a symlink`, `a FIFO`, …
    pub what: &'static str,
    /// What belongs there: `a regular file` or `a directory`.
    pub wanted: &'static str,
}

impl NotRegular {
    /// What is wrong with the path, without it: `is a FIFO, not a regular file; …`.
    fn why(&self) -> String {
        format!(
            "is {}, not {}; kardwt does not follow it, write through it or wait on it",
            self.what, self.wanted
        )
    }
}

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.path.display(), self.why())
    }
}

impl std::error::Error for NotRegular {}

/// The [`NotRegular`] an error carries, if it is one.
pub(crate) fn not_regular(e: &io::Error) -> Option<&NotRegular> {
    e.get_ref()?.downcast_ref()
}

/// `path: e` for messages, or just `e` when it already names the path (a [`NotRegular`]).
pub(crate) fn with_path(path: &Path, e: &io::Error) -> String {
    match not_regular(e) {
        Some(bad) => bad.to_string(),
        None => format!("{}: {e}", path.display()),
    }
}

/// `path: e` for a message that says first what could not be done (`cannot read <path>: it is
/// a FIFO, …`), where [`with_path`]'s form would read as one clause.
pub(crate) fn path_then_why(path: &Path, e: &io::Error) -> String {
    match not_regular(e) {
        Some(bad) => format!("{}: it {}", bad.path.display(), bad.why()),
        None => format!("{}: {e}", path.display()),
    }
}

fn refuse(path: &Path, what: &'static str, wanted: &'static str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        NotRegular {
            path: path.to_path_buf(),
            what,
            wanted,
        },
    )
}

/// A file type in words, for messages.
fn describe(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symlink"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Never wait on a FIFO or a device when opening, never make a terminal ours.
const QUIET: OFlags = OFlags::NONBLOCK.union(OFlags::NOCTTY);

/// Open `path` with `options`, not following a final symlink (unless `follow`) and never
/// blocking, then make sure it is a regular file. An open that fails because of what is there
/// (a symlink under `O_NOFOLLOW`, a FIFO without a reader, a directory) says what it is.
fn open_regular(path: &Path, options: &mut OpenOptions, follow: bool) -> io::Result<File> {
    let mut flags = QUIET;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    // std adds O_CLOEXEC itself.
    let file = match options.custom_flags(flags.bits() as i32).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(e),
        Err(e) => {
            let meta = if follow {
                std::fs::metadata(path)
            } else {
                std::fs::symlink_metadata(path)
            };
            return match meta {
                Ok(m) if !m.is_file() => {
                    Err(refuse(path, describe(m.file_type()), "a regular file"))
                }
                _ => Err(e),
            };
        }
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse(path, describe(meta.file_type()), "a regular file"));
    }
    Ok(file)
}

/// Open the regular file at `path` for reading, a final symlink refused, never blocking on a
/// FIFO or a device planted there.
pub(crate) fn open_regular_nofollow(path: &Path) -> io::Result<File> {
    open_regular(path, OpenOptions::new().read(true), false)
}

/// Open the regular file at `path` (a final symlink followed) for reading, never blocking on
/// a FIFO or a device planted there.
pub(crate) fn open_regular_following(path: &Path) -> io::Result<File> {
    open_regular(path, OpenOptions::new().read(true), true)
}

/// Read the regular file at `path` whole, if it holds at most `max` bytes: `None` when there
/// is nothing there. A final symlink is not followed; a FIFO, socket, device or directory is
/// refused ([`NotRegular`]) without blocking; a larger file is an error of kind
/// [`io::ErrorKind::FileTooLarge`], and never read past `max + 1` bytes (`/dev/zero`).
pub(crate) fn read_bounded(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    read_opened(path, max, false)
}

/// [`read_bounded`], following a final symlink (a file the user may link on purpose, or git's
/// own files); what it resolves to must still be a regular file.
pub(crate) fn read_bounded_following(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    read_opened(path, max, true)
}

fn read_opened(path: &Path, max: u64, follow: bool) -> io::Result<Option<Vec<u8>>> {
    let file = match open_regular(path, OpenOptions::new().read(true), follow) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = Vec::with_capacity(512);
    file.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    Ok(Some(buf))
}

/// Open the log at `path` for appending, creating it (mode 0666 less the umask) when missing.
/// A symlink, FIFO or anything else but a regular file there is refused ([`NotRegular`]),
/// never followed, written through or waited on.
pub(crate) fn open_append_nofollow(path: &Path) -> io::Result<File> {
    open_regular(
        path,
        OpenOptions::new().append(true).create(true).mode(0o666),
        false,
    )
}

/// Start the log at `file` (beneath `root`) afresh: its directories made as by
/// [`create_dir_nofollow`], the previous log (a regular file) kept as `<file>.1`, then a new
/// one opened for appending. Anything else planted as the log (a symlink, a FIFO) is removed,
/// never followed, written through or waited on; what it was is returned, for a warning.
pub(crate) fn open_log_rotated(root: &Path, file: &Path) -> io::Result<(File, Option<NotRegular>)> {
    if let Some(dir) = file.parent() {
        create_dir_nofollow(root, dir)?;
    }
    let mut removed = None;
    match std::fs::symlink_metadata(file) {
        Ok(m) if m.is_file() => {
            let mut old = file.as_os_str().to_owned();
            old.push(".1");
            std::fs::rename(file, &old)?;
        }
        Ok(m) => {
            std::fs::remove_file(file)?;
            removed = Some(NotRegular {
                path: file.to_path_buf(),
                what: describe(m.file_type()),
                wanted: "a regular file",
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok((open_append_nofollow(file)?, removed))
}

/// Open the lock file at `path` for reading and writing, creating it when missing and never
/// truncating it (its inode is what is locked). Refused like [`open_append_nofollow`].
pub(crate) fn open_lock_nofollow(path: &Path) -> io::Result<File> {
    open_regular(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o666),
        false,
    )
}

/// Make the directory `dir` and its missing ancestors below `root` (kardwt's directories below
/// the common dir). `root` is followed as given and must exist; every component below it is
/// opened with `O_NOFOLLOW|O_DIRECTORY`, so a symlink, file or FIFO planted on the way is
/// refused ([`NotRegular`] naming it), never followed. `dir` must be beneath `root`.
pub(crate) fn create_dir_nofollow(root: &Path, dir: &Path) -> io::Result<()> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not beneath {}", dir.display(), root.display()),
        )
    })?;
    let top = crate::sys::beneath::root(root)?;
    let mut made = |_: &Path| {};
    match crate::sys::beneath::open_dir(&top, rel, Some(&mut made))? {
        Ok(_) => Ok(()),
        Err(blocked) => Err(refuse(
            &root.join(&blocked.rel),
            blocked.what,
            "a directory",
        )),
    }
}

/// Replace `dir/name` with `bytes` atomically: a temporary file made in `dir` (created new, so
/// never through a symlink), written, fsynced and renamed over `name`, then `dir` fsynced.
/// Whatever was at `name` (a file, a symlink, a FIFO) is replaced, never written through; a
/// regular file's mode is kept. `dir` is used as given: make it with [`create_dir_nofollow`].
pub(crate) fn write_atomic(dir: &Path, name: impl AsRef<OsStr>, bytes: &[u8]) -> io::Result<()> {
    write_whole(dir, name.as_ref(), bytes, true)
}

/// [`write_atomic`], but only when nothing is at `name` yet: an error of kind
/// [`io::ErrorKind::AlreadyExists`] otherwise, and nothing is changed (create-new).
pub(crate) fn write_atomic_new(
    dir: &Path,
    name: impl AsRef<OsStr>,
    bytes: &[u8],
) -> io::Result<()> {
    write_whole(dir, name.as_ref(), bytes, false)
}

fn write_whole(dir: &Path, name: &OsStr, bytes: &[u8], replace: bool) -> io::Result<()> {
    stage(dir, name, bytes, replace)?.commit()
}

/// An atomic write whose temporary file is written and on disk, not yet renamed into place:
/// dropped uncommitted, the temporary is deleted and nothing changed.
pub(crate) struct Staged {
    tmp: tempfile::NamedTempFile,
    dir: PathBuf,
    dest: PathBuf,
    replace: bool,
}

impl Staged {
    /// Rename the temporary into place, then fsync the directory.
    pub(crate) fn commit(self) -> io::Result<()> {
        self.place()?.sync()
    }

    /// Rename the temporary into place; the rename is on disk once [`Placed::sync`] returns.
    /// The file it will replace or create.
    pub(crate) fn dest(&self) -> &Path {
        &self.dest
    }

    pub(crate) fn place(self) -> io::Result<Placed> {
        if self.replace {
            self.tmp.persist(&self.dest).map_err(|e| e.error)?;
        } else {
            self.tmp
                .persist_noclobber(&self.dest)
                .map_err(|e| e.error)?;
        }
        Ok(Placed { dir: self.dir })
    }
}

/// A [`Staged`] write renamed into place, its directory not yet fsynced. Several placed one
/// after the other and then synced wait for the disk about once: a journaling file system
/// commits the renames together, in the order they were made.
#[must_use = "a placed write is durable only once synced"]
pub(crate) struct Placed {
    dir: PathBuf,
}

impl Placed {
    /// fsync the directory the write was placed in.
    pub(crate) fn sync(&self) -> io::Result<()> {
        sync_dir(&self.dir)
    }

    /// Leave the directory unsynced: the rename reaches the disk with the file system's next
    /// journal commit, as the renames git makes in its own admin directories do.
    pub(crate) fn unsynced(self) {}
}

/// The first half of [`write_atomic`] (`replace`) or [`write_atomic_new`]: the temporary in
/// `dir` written and fsynced, for [`Staged::commit`] to put in place. Two writes staged side by
/// side wait for the disk once between them.
pub(crate) fn stage(dir: &Path, name: &OsStr, bytes: &[u8], replace: bool) -> io::Result<Staged> {
    let dest = dir.join(name);
    // What a killed earlier write of this file left goes first (best effort).
    remove_files(&dead_temporaries(dir, Some(name)));
    let kept = std::fs::symlink_metadata(&dest)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| Permissions::from_mode(m.permissions().mode() & 0o7777));
    let mut tmp = tempfile::Builder::new()
        .prefix(&temporary_prefix(name))
        .suffix(TEMPORARY_SUFFIX)
        .permissions(kept.clone().unwrap_or(Permissions::from_mode(0o666)))
        .tempfile_in(dir)?;
    if let Some(mode) = kept {
        // The umask narrowed the mode given at creation: put the old one back exactly.
        tmp.as_file().set_permissions(mode)?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(Staged {
        tmp,
        dir: dir.to_path_buf(),
        dest,
        replace,
    })
}

/// The suffix of [`write_atomic`]'s temporary names.
const TEMPORARY_SUFFIX: &str = ".tmp";

/// `.<name>.<pid>-`: the start of [`write_atomic`]'s temporary name for `name` (`tempfile`
/// adds six random letters and [`TEMPORARY_SUFFIX`]). The leading dot hides it from the
/// listings of kardwt's directories; the pid says whose it is once its writer is gone.
fn temporary_prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(format!(".{}-", std::process::id()));
    prefix
}

/// A temporary file [`write_atomic`] made: the file it was to become and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Temporary {
    /// The name it was to be renamed to, in the same directory.
    pub of: String,
    pub owner: TemporaryOwner,
}

/// Who wrote a [`Temporary`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemporaryOwner {
    /// The process with this pid (`.<name>.<pid>-<random>.tmp`).
    Process(i32),
    /// An older kardwt, whose names carried no pid (`.<name>.<random>.tmp`).
    Unknown,
}

/// Is `file_name` one of [`write_atomic`]'s temporary names, and of what and whose (pure)?
/// `None` for anything else, so nothing but kardwt's own temporaries is taken for one.
pub(crate) fn temporary(file_name: &OsStr) -> Option<Temporary> {
    let text = file_name.to_str()?;
    let rest = text.strip_prefix('.')?.strip_suffix(TEMPORARY_SUFFIX)?;
    let (of, tail) = rest.rsplit_once('.')?;
    let random = |r: &str| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric());
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let owner = match tail.split_once('-') {
        Some((pid, r)) if random(r) && digits(pid) => TemporaryOwner::Process(pid.parse().ok()?),
        None if random(tail) => TemporaryOwner::Unknown,
        _ => return None,
    };
    (!of.is_empty()).then(|| Temporary {
        of: of.to_owned(),
        owner,
    })
}

/// How long a temporary of an older kardwt (no pid in its name) must have lain untouched before
/// it is taken for one a killed writer left: far longer than any atomic write takes.
const UNOWNED_TEMPORARY_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The temporaries killed [`write_atomic`]s left in `dir` (of the file `of`, or of any):
/// regular files with its temporary names whose writer no longer exists, or, named by an older
/// kardwt, untouched for an hour. A directory that cannot be listed has none.
pub(crate) fn dead_temporaries(dir: &Path, of: Option<&OsStr>) -> Vec<PathBuf> {
    dead_temporaries_where(dir, |name| of.is_none_or(|of| name == of))
}

/// [`dead_temporaries`] of any of the files `names` in `dir`, with one listing of `dir`.
pub(crate) fn dead_temporaries_of(dir: &Path, names: &[&OsStr]) -> Vec<PathBuf> {
    dead_temporaries_where(dir, |name| names.contains(&name))
}

/// The dead temporaries in `dir` of the files whose names `of` accepts.
fn dead_temporaries_where(dir: &Path, of: impl Fn(&OsStr) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let Some(t) = temporary(&e.file_name()) else {
                return false;
            };
            if !of(OsStr::new(&t.of)) {
                return false;
            }
            // Not following a symlink: only a regular file is ever a temporary.
            let Ok(meta) = e.path().symlink_metadata() else {
                return false;
            };
            meta.is_file()
                && match t.owner {
                    TemporaryOwner::Process(pid) => !crate::sys::process::exists(pid),
                    TemporaryOwner::Unknown => meta
                        .modified()
                        .ok()
                        .and_then(|m| m.elapsed().ok())
                        .is_some_and(|age| age > UNOWNED_TEMPORARY_AGE),
                }
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Remove `files`; those removed (one already gone counts as removed).
pub(crate) fn remove_files(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|f| match std::fs::remove_file(f) {
            Ok(()) => true,
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        })
        .cloned()
        .collect()
}

/// fsync a directory, so a rename in it survives a crash. A filesystem that cannot sync
/// directories (`EINVAL`) is not an error.
fn sync_dir(dir: &Path) -> io::Result<()> {
    let d = OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::DIRECTORY | QUIET).bits() as i32)
        .open(dir)?;
    match d.sync_all() {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => Ok(()),
        other => other,
    }
}

/// Make a FIFO at `path`, for tests. rustix has no `mknodat` for Apple targets: `mkfifo(1)`
/// makes it there.
#[cfg(test)]
pub(crate) fn fifo(path: &Path) {
    #[cfg(target_os = "linux")]
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    #[cfg(not(target_os = "linux"))]
    {
        let made = std::process::Command::new("mkfifo")
            .args(["-m", "600"])
            .arg(path)
            .status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(e: &io::Error) -> &'static str {
        not_regular(e)
            .unwrap_or_else(|| panic!("not a NotRegular: {e}"))
            .what
    }

    #[test]
    fn reads_are_bounded_and_refuse_what_is_not_a_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let (file, outside) = (d.path().join("file"), d.path().join("outside"));
        assert_eq!(read_bounded(&file, 10).unwrap(), None);
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_bounded(&file, 5).unwrap().unwrap(), b"hello");
        let big = read_bounded(&file, 4).unwrap_err();
        assert_eq!(big.kind(), io::ErrorKind::FileTooLarge);
        // /dev/zero is refused before a byte is read.
        assert_eq!(
            what(&read_bounded(Path::new("/dev/zero"), 4).unwrap_err()),
            "a device"
        );
        std::fs::write(&outside, "secret").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = read_bounded(&link, 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(what(&e), "a symlink");
        assert!(
            e.to_string().contains("is a symlink, not a regular file"),
            "{e}"
        );
        assert_eq!(
            read_bounded_following(&link, 100).unwrap().unwrap(),
            b"secret"
        );
        let f = d.path().join("fifo");
        fifo(&f);
        // A FIFO without a writer: refused at once, never waited on.
        assert_eq!(what(&read_bounded(&f, 100).unwrap_err()), "a FIFO");
        assert_eq!(
            what(&read_bounded(d.path(), 100).unwrap_err()),
            "a directory"
        );
    }

    #[test]
    fn appends_and_locks_never_follow_a_symlink_or_wait_on_a_fifo() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("x.log");
        open_append_nofollow(&log)
            .unwrap()
            .write_all(b"a\n")
            .unwrap();
        open_append_nofollow(&log)
            .unwrap()
            .write_all(b"b\n")
            .unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"a\nb\n");
        // A dangling symlink: open(O_CREAT) would create its target; refused instead.
        let (link, target) = (d.path().join("l.log"), d.path().join("target"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(what(&open_append_nofollow(&link).unwrap_err()), "a symlink");
        assert_eq!(what(&open_lock_nofollow(&link).unwrap_err()), "a symlink");
        assert!(!target.exists());
        let f = d.path().join("fifo");
        fifo(&f);
        assert_eq!(what(&open_append_nofollow(&f).unwrap_err()), "a FIFO");
        assert_eq!(what(&open_lock_nofollow(&f).unwrap_err()), "a FIFO");
        let lock = d.path().join("lock");
        std::fs::write(&lock, "pid 1\n").unwrap();
        let mut held = open_lock_nofollow(&lock).unwrap();
        let mut text = String::new();
        held.read_to_string(&mut text).unwrap();
        assert_eq!(text, "pid 1\n", "never truncated by opening");
    }

    #[test]
    fn directories_are_made_without_following_anything_on_the_way() {
        let (d, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let kardwt = d.path().join("kardwt");
        create_dir_nofollow(d.path(), &kardwt.join("claims")).unwrap();
        assert!(kardwt.join("claims").is_dir());
        create_dir_nofollow(d.path(), &kardwt.join("claims")).unwrap();
        std::os::unix::fs::symlink(outside.path(), kardwt.join("logs")).unwrap();
        let e = create_dir_nofollow(d.path(), &kardwt.join("logs")).unwrap_err();
        assert_eq!(not_regular(&e).unwrap().path, kardwt.join("logs"));
        assert_eq!(what(&e), "a symlink");
        fifo(&kardwt.join("cards"));
        let e = create_dir_nofollow(d.path(), &kardwt.join("cards")).unwrap_err();
        assert_eq!(what(&e), "a FIFO");
        // A symlink as kardwt/ itself stops everything beneath it.
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), other.path().join("kardwt")).unwrap();
        let e = create_dir_nofollow(other.path(), &other.path().join("kardwt/claims")).unwrap_err();
        assert_eq!(what(&e), "a symlink");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(create_dir_nofollow(d.path(), outside.path()).is_err());
    }

    #[test]
    fn atomic_writes_replace_what_is_there_and_never_write_through_it() {
        let (d, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "keep").unwrap();
        std::os::unix::fs::symlink(&secret, d.path().join("rec")).unwrap();
        write_atomic(d.path(), "rec", b"one").unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"keep");
        let rec = d.path().join("rec");
        assert!(rec.symlink_metadata().unwrap().is_file());
        assert_eq!(read_bounded(&rec, 10).unwrap().unwrap(), b"one");
        // A FIFO is replaced without opening it; a file's mode is kept.
        fifo(&d.path().join("f"));
        write_atomic(d.path(), "f", b"two").unwrap();
        assert_eq!(std::fs::read(d.path().join("f")).unwrap(), b"two");
        std::fs::set_permissions(&rec, Permissions::from_mode(0o640)).unwrap();
        write_atomic(d.path(), "rec", b"three").unwrap();
        let mode = rec.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // Create-new: refused when anything is there, even a dangling symlink.
        let e = write_atomic_new(d.path(), "rec", b"four").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        std::os::unix::fs::symlink(outside.path().join("none"), d.path().join("dangling")).unwrap();
        let e = write_atomic_new(d.path(), "dangling", b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(!outside.path().join("none").exists());
        write_atomic_new(d.path(), "new", b"five").unwrap();
        assert_eq!(std::fs::read(d.path().join("new")).unwrap(), b"five");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn temporary_names_say_whose_they_are_and_nothing_else_is_taken_for_one() {
        let prefix = temporary_prefix(OsStr::new("kardwt.toml"));
        let ours = format!("{}AbC12z.tmp", prefix.to_str().unwrap());
        let me = i32::try_from(std::process::id()).unwrap();
        let got = temporary(OsStr::new(&ours)).unwrap();
        assert_eq!(
            (got.of.as_str(), got.owner),
            ("kardwt.toml", TemporaryOwner::Process(me))
        );
        let (mine, old) = (TemporaryOwner::Process(4242), TemporaryOwner::Unknown);
        for (name, want) in [
            (".1.4242-q7Rt0P.tmp", Some(("1", mine))),
            (
                "..migrated.17-aaaaaa.tmp",
                Some((".migrated", TemporaryOwner::Process(17))),
            ),
            (".1.W4leiP.tmp", Some(("1", old))),
            (".kardwt-copied.wq0kz9.tmp", Some(("kardwt-copied", old))),
            ("1", None),
            (".1.tmp", None),
            ("..4242-q7Rt0P.tmp", None),
            (".1.4242-toolong1.tmp", None),
            (".1.42x2-q7Rt0P.tmp", None),
            ("notes.4242-q7Rt0P.tmp", None),
            (".1.4242-q7Rt0P.tmp.bak", None),
            (".1.q7-t0P.tmp", None),
        ] {
            let got = temporary(OsStr::new(name));
            let got = got.as_ref().map(|t| (t.of.as_str(), t.owner));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_temporary_a_killed_write_left_is_removed_by_the_next_write_of_that_file() {
        let d = tempfile::tempdir().unwrap();
        // No process has a pid above the kernel's limit (2^22); pid 1 always runs.
        let dead = d.path().join(".rec.999999999-Dead00.tmp");
        let live = d.path().join(".rec.1-Live00.tmp");
        let other = d.path().join(".other.999999999-Dead00.tmp");
        let fresh_old_style = d.path().join(".rec.AbCdEf.tmp");
        for f in [&dead, &live, &other, &fresh_old_style] {
            std::fs::write(f, "half").unwrap();
        }
        // A symlink with a temporary's name is never taken for one.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let link = d.path().join(".rec.999999999-Link00.tmp");
        std::os::unix::fs::symlink(outside.path().join("keep"), &link).unwrap();
        assert_eq!(
            dead_temporaries(d.path(), None),
            [other.clone(), dead.clone()]
        );
        write_atomic(d.path(), "rec", b"whole").unwrap();
        assert!(!dead.exists());
        for kept in [&live, &other, &fresh_old_style] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(link.symlink_metadata().is_ok() && outside.path().join("keep").exists());
        assert_eq!(
            remove_files(&dead_temporaries(d.path(), None)),
            std::slice::from_ref(&other)
        );
    }

    #[test]
    fn a_log_is_rotated_and_anything_planted_as_it_is_removed_unfollowed() {
        let (d, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let log = d.path().join("kardwt/logs/7.log");
        let (mut f, removed) = open_log_rotated(d.path(), &log).unwrap();
        assert_eq!(removed, None);
        f.write_all(b"first\n").unwrap();
        let (mut f, _) = open_log_rotated(d.path(), &log).unwrap();
        f.write_all(b"second\n").unwrap();
        assert_eq!(
            std::fs::read(d.path().join("kardwt/logs/7.log.1")).unwrap(),
            b"first\n"
        );
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "keep").unwrap();
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink(&secret, &log).unwrap();
        let (mut f, removed) = open_log_rotated(d.path(), &log).unwrap();
        assert_eq!(removed.unwrap().what, "a symlink");
        f.write_all(b"third\n").unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"keep");
        assert_eq!(std::fs::read(&log).unwrap(), b"third\n");
        std::fs::remove_file(&log).unwrap();
        fifo(&log);
        let (_, removed) = open_log_rotated(d.path(), &log).unwrap();
        assert_eq!(removed.unwrap().what, "a FIFO");
        assert!(log.symlink_metadata().unwrap().is_file());
    }
}
