//! The copier: walks what is to be copied from the base, opens or makes
//! each destination directory beneath the new tree's root (never through a symlink), and hands
//! files to workers that copy many at once. A directory the new tree lacks is filled under a
//! temporary name and renamed into place once complete (one rename, not one per file), so it
//! is absent or whole; one that is there already gets each file atomically. A destination
//! blocked by something that is not a real directory is skipped and reported; temporaries an
//! interrupted copy left in a directory that already existed are removed; the deadline stops
//! the copy (exit 5). The walk streams: memory and open directories do not grow with the tree.
use crate::sys;
use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use super::file::{self, Copied, Dest, Hash};
use super::Summary;
use crate::config::CopyMethod as Method;
use stage::Staged;

mod stage;

/// One entry to copy: its path relative to both roots, and its destination directory.
struct Job {
    rel: PathBuf,
    meta: std::fs::Metadata,
    dir: Arc<OwnedFd>,
    /// Keep its blob id: a file copied by name or a `.env`-like file in a copied directory,
    /// unless an earlier copy into this tree already kept it.
    hash: bool,
    /// `dir` is one this copy made under a temporary name and fills alone.
    fresh: bool,
}

/// Counters and results the workers share.
#[derive(Default)]
struct Tally {
    files: AtomicU64,
    links: AtomicU64,
    bytes: AtomicU64,
    cloned: AtomicU64,
    kept: AtomicU64,
    /// Blob ids of the files copied, with their paths (pre-push blocks them).
    blobs: Mutex<Vec<(String, PathBuf)>>,
}

/// How many files are copied at once: copying many small files is per-file work (open, clone
/// or copy, set times) that overlaps with I/O, but more threads than that only contend for the
/// same directory locks (measured on XFS with 20,000 files: 2 cores, 4 workers best).
fn workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| (n.get() * 2).clamp(2, 8))
        .unwrap_or(4)
}

/// Decides, during a whole-directory copy, which entries beneath it are left out (a
/// `.worktreeinclude` negation): called with the path and whether it is a directory.
pub(super) type Leave<'a> = dyn Fn(&Path, bool) -> bool + 'a;

/// The files (and symlinks) and bytes a copy of `from/rel` would take, without what `leave`
/// leaves out: the totals a progress bar counts against. What cannot be read counts nothing.
pub(super) fn measure(from: &Path, rel: &Path, leave: Option<&Leave<'_>>) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut pending = vec![rel.to_path_buf()];
    while let Some(rel) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(from.join(&rel)) else {
            continue;
        };
        if !meta.is_dir() {
            if copyable(&meta) {
                files += 1;
                bytes += if meta.is_file() { meta.len() } else { 0 };
            }
            continue;
        }
        let Ok(listing) = std::fs::read_dir(from.join(&rel)) else {
            continue;
        };
        for entry in listing.flatten() {
            let child = rel.join(entry.file_name());
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !leave.is_some_and(|leave| leave(&child, is_dir)) {
                pending.push(child);
            }
        }
    }
    (files, bytes)
}

/// A copy from `from` (the base) into `to` (the new worktree): feed it relative paths, then
/// [`Copier::finish`].
pub(crate) struct Copier {
    from: PathBuf,
    to: PathBuf,
    root: OwnedFd,
    tx: Option<mpsc::SyncSender<Job>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    tally: Arc<Tally>,
    error: Arc<Mutex<Option<anyhow::Error>>>,
    deadline: Option<Instant>,
    /// Directories this copy created, with the base's metadata to give them at the end.
    created: Vec<(PathBuf, std::fs::Metadata)>,
    /// Directories being filled under temporary names, renamed into place by `finish`.
    staged: Vec<Staged>,
    /// Existing directories already cleared of temporaries.
    cleared: HashSet<PathBuf>,
    /// The last destination directory opened for a single entry.
    last: Option<(PathBuf, Arc<OwnedFd>)>,
    /// What was skipped, and why.
    pub skipped: Vec<String>,
    /// Paths whose blob id an earlier copy into this tree kept: not hashed again.
    known: HashSet<PathBuf>,
    started: Instant,
    last_progress: Instant,
    progress: bool,
    /// The bar drawn on a terminal, and the totals it counts against.
    shown: Option<(crate::sys::Shown, u64)>,
}

impl Copier {
    /// Start the workers. With [`Method::Clone`], a base and worktree on different file
    /// systems fail here, before anything is copied.
    pub(crate) fn new(
        from: &Path,
        to: &Path,
        method: Method,
        progress: bool,
        deadline: Option<Instant>,
        hash: Hash,
    ) -> Result<Copier> {
        if method == Method::Clone {
            super::same_file_system(from, to)?;
        }
        let root =
            sys::beneath_root(to).with_context(|| format!("cannot open {}", to.display()))?;
        // Bounded: each queued job holds its directory open.
        let (tx, rx) = mpsc::sync_channel::<Job>(256);
        let rx = Arc::new(Mutex::new(rx));
        let tally = Arc::new(Tally::default());
        let error = Arc::new(Mutex::new(None));
        let mut handles = Vec::new();
        for _ in 0..workers() {
            let (rx, tally, error) = (Arc::clone(&rx), Arc::clone(&tally), Arc::clone(&error));
            let from = from.to_path_buf();
            let spawned = std::thread::Builder::new()
                .name("copy".into())
                .spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    if error.lock().is_ok_and(|e| e.is_some()) {
                        continue;
                    }
                    if let Err(e) = run_job(&from, method, deadline, hash, &job, &tally) {
                        if let Ok(mut slot) = error.lock() {
                            slot.get_or_insert(e);
                        }
                    }
                });
            // A thread the system refuses (EAGAIN under a process limit) is one worker fewer;
            // with none at all the copy cannot run (an error, not a panic).
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) if handles.is_empty() => {
                    return Err(anyhow::Error::new(e).context(
                        "could not start a thread to copy with (a limit on processes or \
                         memory was reached?)",
                    ))
                }
                Err(_) => break,
            }
        }
        let now = Instant::now();
        Ok(Copier {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            root,
            tx: Some(tx),
            handles,
            tally,
            error,
            deadline,
            created: Vec::new(),
            staged: Vec::new(),
            cleared: HashSet::new(),
            last: None,
            skipped: Vec::new(),
            known: HashSet::new(),
            started: now,
            last_progress: now,
            progress,
            shown: None,
        })
    }

    /// Paths (relative to the tree) whose blob ids are kept already, by an earlier copy into
    /// it: they are not read and hashed again when found there.
    pub(crate) fn with_known(mut self, known: HashSet<PathBuf>) -> Copier {
        self.known = known;
        self
    }

    fn failed(&self) -> bool {
        self.error.lock().is_ok_and(|e| e.is_some())
    }

    fn send(&mut self, mut job: Job) -> Result<()> {
        job.hash = job.hash && !self.known.contains(&job.rel);
        self.report_progress();
        file::check_deadline(self.deadline)?;
        let tx = self.tx.as_ref().context("the copy has finished")?;
        tx.send(job)
            .map_err(|_| anyhow::anyhow!("the copy's workers stopped"))
    }

    /// Draw, for a person at a terminal, a bar of the files and bytes copied against
    /// `files` and `bytes`, the totals expected (`what` names the copy).
    pub(crate) fn expect(&mut self, what: &str, files: u64, bytes: u64) {
        if self.progress && crate::sys::progress_on() {
            let shown = crate::sys::Shown::counted(what, files, bytes);
            self.shown = Some((shown, files));
        }
    }

    /// The bar's position, twenty times a second at most (the workers' tally).
    fn report_progress(&mut self) {
        let Some((shown, files)) = &self.shown else {
            return;
        };
        if self.last_progress.elapsed() < Duration::from_millis(50) {
            return;
        }
        self.last_progress = Instant::now();
        shown.set(
            self.tally.files.load(Ordering::Relaxed) + self.tally.links.load(Ordering::Relaxed),
            *files,
            self.tally.bytes.load(Ordering::Relaxed),
        );
    }

    /// Note that `rel` was skipped because of `why`.
    pub(crate) fn skip(&mut self, rel: &Path, why: impl std::fmt::Display) {
        self.skipped
            .push(format!("skipped {}: {why}", rel.display()));
    }

    /// Copy `rel` (a file, a symlink, or a directory with everything beneath it that `leave`
    /// does not leave out).
    pub(crate) fn path(&mut self, rel: &Path, leave: Option<&Leave<'_>>) -> Result<()> {
        let src = self.from.join(rel);
        let meta = std::fs::symlink_metadata(&src)
            .with_context(|| format!("cannot read {}", src.display()))?;
        if !meta.is_dir() {
            return self.entry(rel.to_path_buf(), meta);
        }
        let Some((parent, name)) = sys::beneath_split(rel) else {
            return Ok(());
        };
        let Some(parent_fd) = self.parent(parent, rel)? else {
            return Ok(());
        };
        // Depth first, one directory listing at a time: pending directories and their
        // destination parents only (as many open directories as the tree is deep).
        let mut pending = vec![(rel.to_path_buf(), name.to_owned(), parent_fd, false)];
        while let Some((dir, name, parent_fd, in_fresh)) = pending.pop() {
            if self.failed() {
                break;
            }
            file::check_deadline(self.deadline)?;
            let opened = match in_fresh {
                true => self.make_fresh(&parent_fd, &name, &dir)?,
                false => self.open_or_stage(&parent_fd, &name, &dir)?,
            };
            let Some((dst, fresh)) = opened else {
                continue;
            };
            let dst = Arc::new(dst);
            let listed = self.from.join(&dir);
            let unreadable = || format!("cannot list {}", listed.display());
            let listing = std::fs::read_dir(&listed).with_context(unreadable)?;
            for entry in listing {
                let entry = entry.with_context(unreadable)?;
                let child = dir.join(entry.file_name());
                let meta = std::fs::symlink_metadata(entry.path())
                    .with_context(|| format!("cannot read {}", entry.path().display()))?;
                if leave.is_some_and(|leave| leave(&child, meta.is_dir())) {
                    continue;
                }
                if meta.is_dir() {
                    pending.push((child, entry.file_name(), Arc::clone(&dst), fresh));
                } else if copyable(&meta) {
                    let dir = Arc::clone(&dst);
                    // Of a copied directory's files, only `.env`-like ones are protected (and
                    // hashed): not the thousands of dependency files it may hold.
                    let name = entry.file_name();
                    let hash = crate::git::is_env_name(name.as_bytes(), false);
                    self.send(Job {
                        rel: child,
                        meta,
                        dir,
                        hash,
                        fresh,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Copy one non-directory entry (its missing parent directories are made as needed).
    pub(crate) fn entry(&mut self, rel: PathBuf, meta: std::fs::Metadata) -> Result<()> {
        // FIFOs, sockets, devices: never copied, never opened.
        if !copyable(&meta) {
            return Ok(());
        }
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let dir = match &self.last {
            Some((p, fd)) if *p == parent => Arc::clone(fd),
            _ => match self.parent(&parent, &rel)? {
                Some(fd) => {
                    self.last = Some((parent, Arc::clone(&fd)));
                    fd
                }
                None => return Ok(()),
            },
        };
        self.send(Job {
            rel,
            meta,
            dir,
            hash: true,
            fresh: false,
        })
    }

    /// The destination directory `parent` (made as needed), or `None` when it is blocked
    /// (reported for `rel`).
    fn parent(&mut self, parent: &Path, rel: &Path) -> Result<Option<Arc<OwnedFd>>> {
        let mut made = Vec::new();
        let mut note = |p: &Path| made.push(p.to_path_buf());
        let opened = sys::beneath_open_dir(&self.root, parent, Some(&mut note))
            .with_context(|| format!("cannot create {}", self.to.join(parent).display()))?;
        self.note_made(made);
        match opened {
            Ok(fd) => {
                self.clear_once(parent, &fd);
                Ok(Some(Arc::new(fd)))
            }
            Err(blocked) => {
                self.skip(rel, blocked);
                Ok(None)
            }
        }
    }

    /// Open (or make) the destination directory `name` in `parent_fd` for the base's `dir`;
    /// `None` when something that is not a directory is there (kept, reported).
    fn open_child(
        &mut self,
        parent_fd: &OwnedFd,
        name: &std::ffi::OsStr,
        dir: &Path,
    ) -> Result<Option<OwnedFd>> {
        let mut made = false;
        let mut note = |_: &Path| made = true;
        let opened = sys::beneath_child(parent_fd, name, dir, Some(&mut note))
            .with_context(|| format!("cannot create {}", self.to.join(dir).display()))?;
        if made {
            self.note_made(vec![dir.to_path_buf()]);
        }
        match opened {
            Ok(fd) => {
                if !made {
                    self.clear_once(dir, &fd);
                }
                Ok(Some(fd))
            }
            Err(blocked) => {
                self.tally.kept.fetch_add(1, Ordering::Relaxed);
                self.skip(dir, blocked);
                Ok(None)
            }
        }
    }

    fn note_made(&mut self, made: Vec<PathBuf>) {
        for rel in made {
            if let Ok(meta) = std::fs::metadata(self.from.join(&rel)) {
                self.created.push((rel, meta));
            }
        }
    }

    /// An existing directory may hold what an interrupted copy left: remove it, once.
    fn clear_once(&mut self, rel: &Path, fd: &OwnedFd) {
        if self.cleared.insert(rel.to_path_buf()) {
            file::remove_temporaries(fd);
        }
    }

    /// Wait for the workers, give the directories this copy created the base's modes and
    /// mtimes (deepest first), and say what was done.
    pub(crate) fn finish(mut self) -> Result<(Summary, Vec<(String, PathBuf)>)> {
        self.stop();
        self.shown = None;
        if let Some(e) = self.error.lock().ok().and_then(|mut e| e.take()) {
            return Err(e);
        }
        self.unstage()?;
        let mut created = std::mem::take(&mut self.created);
        created.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
        for (rel, meta) in &created {
            if let Ok(Ok(fd)) = sys::beneath_open_dir(&self.root, rel, None) {
                // Twelve bits, so the cast loses nothing where `mode_t` is 16 bits (macOS).
                let bits = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
                let mode = rustix::fs::Mode::from_raw_mode(bits as rustix::fs::RawMode);
                let _ = rustix::fs::fchmod(&fd, mode);
                let _ = rustix::fs::futimens(&fd, &file::timestamps(meta));
            }
        }
        let t = &self.tally;
        let summary = Summary {
            files: t.files.load(Ordering::Relaxed),
            links: t.links.load(Ordering::Relaxed),
            bytes: t.bytes.load(Ordering::Relaxed),
            cloned: t.cloned.load(Ordering::Relaxed),
            kept: t.kept.load(Ordering::Relaxed),
            skipped: self.skipped.len() as u64,
            duration: self.started.elapsed(),
        };
        let blobs = t
            .blobs
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default();
        Ok((summary, blobs))
    }
}

impl Copier {
    /// Close the queue and wait for the workers.
    fn stop(&mut self) {
        drop(self.tx.take());
        self.last = None;
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Regular files and symlinks are copied; FIFOs, sockets and devices never.
fn copyable(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_symlink() || meta.is_file()
}

fn run_job(
    from: &Path,
    method: Method,
    deadline: Option<Instant>,
    hash: Hash,
    job: &Job,
    tally: &Tally,
) -> Result<()> {
    let Some(name) = job.rel.file_name() else {
        return Ok(());
    };
    let src = from.join(&job.rel);
    let hash = hash.filter(|_| job.hash);
    let to = Dest {
        dir: &job.dir,
        fresh: job.fresh,
    };
    match file::copy(&src, &job.meta, to, name, method, deadline, hash)? {
        Copied::File { cloned, blob } => {
            tally.files.fetch_add(1, Ordering::Relaxed);
            tally.bytes.fetch_add(job.meta.len(), Ordering::Relaxed);
            if cloned {
                tally.cloned.fetch_add(1, Ordering::Relaxed);
            }
            if let (Some(id), Ok(mut blobs)) = (blob, tally.blobs.lock()) {
                blobs.push((id, job.rel.clone()));
            }
        }
        Copied::Link => {
            tally.links.fetch_add(1, Ordering::Relaxed);
        }
        Copied::Kept { blob } => {
            tally.kept.fetch_add(1, Ordering::Relaxed);
            if let (Some(id), Ok(mut blobs)) = (blob, tally.blobs.lock()) {
                blobs.push((id, job.rel.clone()));
            }
        }
        Copied::Gone => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::time::SystemTime;

    fn tree(root: &Path) {
        std::fs::create_dir_all(root.join("node_modules/pkg/lib")).unwrap();
        let index = root.join("node_modules/pkg/lib/index.js");
        std::fs::write(&index, "module.exports = 1\n").unwrap();
        std::fs::write(root.join("node_modules/pkg/run.sh"), "#!/bin/sh\n").unwrap();
        let run = root.join("node_modules/pkg/run.sh");
        std::fs::set_permissions(run, std::fs::Permissions::from_mode(0o751)).unwrap();
        std::os::unix::fs::symlink("lib/index.js", root.join("node_modules/pkg/main.js")).unwrap();
        std::os::unix::fs::symlink("../nowhere", root.join("node_modules/dangling")).unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let f = std::fs::File::options().write(true).open(index).unwrap();
        f.set_modified(old).unwrap();
    }

    fn copy(a: &Path, b: &Path, method: Method) -> Summary {
        let mut c = Copier::new(a, b, method, false, None, None).unwrap();
        c.path(Path::new("node_modules"), None).unwrap();
        c.finish().unwrap().0
    }

    #[test]
    fn copies_whole_trees_keeping_links_modes_and_mtimes() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        let s = copy(a.path(), b.path(), Method::Auto);
        assert_eq!((s.files, s.links), (2, 2), "{s}");
        let dst = b.path().join("node_modules/pkg");
        let text = std::fs::read_to_string(dst.join("lib/index.js")).unwrap();
        assert_eq!(text, "module.exports = 1\n");
        let mode = std::fs::metadata(dst.join("run.sh")).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o751);
        let target = std::fs::read_link(dst.join("main.js")).unwrap();
        assert_eq!(target, Path::new("lib/index.js"));
        let mtime = std::fs::metadata(dst.join("lib/index.js")).unwrap().mtime();
        assert_eq!(mtime, 1_000_000_000);
        assert!(b.path().join("node_modules/dangling").is_symlink());
    }

    #[test]
    fn never_overwrites_what_is_there() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        std::fs::create_dir_all(b.path().join("node_modules/pkg/lib")).unwrap();
        std::fs::write(b.path().join("node_modules/pkg/lib/index.js"), "mine\n").unwrap();
        std::os::unix::fs::symlink("elsewhere", b.path().join("node_modules/pkg/main.js")).unwrap();
        let s = copy(a.path(), b.path(), Method::Copy);
        assert_eq!(s.kept, 2, "{s}");
        let mine = std::fs::read_to_string(b.path().join("node_modules/pkg/lib/index.js"));
        assert_eq!(mine.unwrap(), "mine\n");
        let target = std::fs::read_link(b.path().join("node_modules/pkg/main.js")).unwrap();
        assert_eq!(target, Path::new("elsewhere"));
        assert_eq!(s.method_used(), "copy");
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_missing_directory_appears_whole_only_when_the_copy_finishes() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        let mut c = Copier::new(a.path(), b.path(), Method::Auto, false, None, None).unwrap();
        c.path(Path::new("node_modules"), None).unwrap();
        // Filling: only a temporary name is there.
        let during = names(b.path());
        assert!(
            during.len() == 1 && during[0].starts_with(file::TMP_PREFIX),
            "{during:?}"
        );
        let s = c.finish().unwrap().0;
        assert_eq!((s.files, s.links, s.kept), (2, 2, 0), "{s}");
        assert_eq!(names(b.path()), ["node_modules"]);
        let mode = std::fs::metadata(b.path().join("node_modules/pkg/run.sh"))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o7777, 0o751);
    }

    #[test]
    fn what_appears_at_the_name_during_the_copy_is_kept_and_the_copy_dropped() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        let mut c = Copier::new(a.path(), b.path(), Method::Auto, false, None, None).unwrap();
        c.path(Path::new("node_modules"), None).unwrap();
        std::fs::create_dir_all(b.path().join("node_modules/mine")).unwrap();
        let s = c.finish().unwrap().0;
        assert_eq!(s.kept, 1, "{s}");
        assert_eq!(names(b.path()), ["node_modules"]);
        assert_eq!(names(&b.path().join("node_modules")), ["mine"]);
    }

    #[test]
    fn a_copy_dropped_unfinished_leaves_no_temporary_directory() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        let mut c = Copier::new(a.path(), b.path(), Method::Auto, false, None, None).unwrap();
        c.path(Path::new("node_modules"), None).unwrap();
        drop(c);
        assert!(names(b.path()).is_empty(), "{:?}", names(b.path()));
    }

    #[test]
    fn a_past_deadline_stops_the_copy_with_exit_5() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(a.path());
        let past = Some(Instant::now());
        let mut c = Copier::new(a.path(), b.path(), Method::Auto, false, past, None).unwrap();
        let err = c.path(Path::new("node_modules"), None).err().unwrap();
        assert_eq!(crate::ground::error::exit_code(&err), 5, "{err}");
    }
}
