//! Cross-process locks under `<common dir>/kardwt/`: the repository lock that
//! serializes fetch, ref and worktree administration, and one lock per card around seeding and
//! preparation. flock(2) through fd-lock: a lock held by a dead process is free. Always take
//! the card's lock before the repository lock. The repository lock is a type of its own,
//! [`RepoLock`], that the git layer's mutating operations require. The holder writes who it is
//! into the file (pid, command, since when, what it is doing), so that a process waiting for
//! the lock can say who it waits for.
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fd_lock::RwLock;

use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};

/// After this long waiting for a lock, one stderr line names its holder.
pub const SPEAK_AFTER: Duration = Duration::from_secs(1);

/// Whether a wait for a lock is announced on stderr. Off by default, and off inside git's
/// hooks, where the verdict must be the first text on stderr; the dispatcher
/// turns it on for the commands a person runs.
static SPEAK: AtomicBool = AtomicBool::new(false);

/// Announce (`true`) or not (`false`) a wait of more than [`SPEAK_AFTER`] for a lock.
pub fn speak_while_waiting(on: bool) {
    SPEAK.store(on, Ordering::Relaxed);
}

/// Who holds a lock, as its lock file says: written by the holder when it takes the lock and
/// when it starts a long step ([`Held::doing`]). Lines `pid N`, `since T`, `command C`, and
/// optionally `doing D`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub since: String,
    pub command: String,
    pub doing: Option<String>,
}

impl Holder {
    /// This process, holding since now, running `command`.
    fn me(command: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            since: crate::sys::time::now(),
            command: command.to_owned(),
            doing: None,
        }
    }

    /// The lock file's text for this holder (one key per line; see [`Holder::parse`]).
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "pid {}\nsince {}\ncommand {}\n",
            self.pid,
            self.since,
            one_line(&self.command)
        );
        if let Some(doing) = &self.doing {
            text.push_str(&format!("doing {}\n", one_line(doing)));
        }
        text
    }

    /// Read a lock file's text back; `None` when it does not say who holds it (empty, being
    /// rewritten, or written by something else).
    pub fn parse(text: &str) -> Option<Holder> {
        let (mut pid, mut since, mut command, mut doing) = (None, None, None, None);
        for line in text.lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "pid" => pid = value.parse().ok(),
                "since" => since = Some(value.to_owned()),
                "command" => command = Some(value.to_owned()),
                "doing" => doing = Some(value.to_owned()),
                _ => {}
            }
        }
        Some(Holder {
            pid: pid?,
            since: since.unwrap_or_default(),
            command: command.unwrap_or_default(),
            doing,
        })
    }

    /// `pid 4242 (git kardwt add 42) since 2026-12-01T01:12:03Z, preparing card 42`.
    pub fn describe(&self) -> String {
        let mut text = format!("pid {}", self.pid);
        if !self.command.is_empty() {
            text.push_str(&format!(" ({})", self.command));
        }
        if !self.since.is_empty() {
            text.push_str(&format!(" since {}", self.since));
        }
        if let Some(doing) = &self.doing {
            text.push_str(&format!(", {doing}"));
        }
        text
    }
}

/// Who holds the lock at `path`, in words: its [`Holder`], else the file's raw first line (an
/// older kardwt), else "another process".
fn describe_holder(path: &Path) -> String {
    // Read like every file of kardwt's: bounded, never through a symlink or from a FIFO.
    let bytes = crate::sys::fsio::read_bounded(path, 64 * 1024)
        .ok()
        .flatten();
    let text = String::from_utf8_lossy(bytes.as_deref().unwrap_or_default());
    if let Some(holder) = Holder::parse(&text) {
        return holder.describe();
    }
    match text.lines().next().map(str::trim) {
        Some(line) if !line.is_empty() => line.to_owned(),
        _ => "another process".to_owned(),
    }
}

/// The line announcing a wait (pure): what is awaited, who holds it, how long at most.
pub fn waiting_line(what: &str, holder: &str, left: Duration) -> String {
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    format!("waiting for {what}, held by {holder}; giving up in {secs} s unless it is released")
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// The variable that names, to the hooks kardwt runs, the locks kardwt holds while they run
/// (its own and those of the kardwt commands whose hooks it runs in): one line per lock,
/// `<dev>:<inode>:<pid>`, its name and its holder's command, tab-separated. A kardwt command in
/// such a hook that needs one of them fails at once instead of waiting for its own ancestor.
pub const HELD_VAR: &str = "KARDWT_HELD_LOCKS";

/// A lock some kardwt holds: its file's identity, who holds it, what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeldLock {
    id: (u64, u64),
    pid: u32,
    what: String,
    command: String,
    path: PathBuf,
}

impl HeldLock {
    fn line(&self) -> String {
        let field = |t: &str| t.replace(['\t', '\n', '\r'], " ");
        format!(
            "{}:{}:{}\t{}\t{}\t{}",
            self.id.0,
            self.id.1,
            self.pid,
            field(&self.what),
            field(&self.command),
            field(&self.path.to_string_lossy())
        )
    }

    fn parse(line: &str) -> Option<HeldLock> {
        let mut fields = line.split('\t');
        let mut ids = fields.next()?.split(':');
        let (dev, ino, pid) = (ids.next()?, ids.next()?, ids.next()?);
        Some(HeldLock {
            id: (dev.parse().ok()?, ino.parse().ok()?),
            pid: pid.parse().ok()?,
            what: fields.next()?.to_owned(),
            command: fields.next()?.to_owned(),
            path: PathBuf::from(fields.next()?),
        })
    }

    /// Where a command run by this holder's hook notes that it needed this lock.
    fn note_path(&self) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".hook-{}", self.pid));
        PathBuf::from(name)
    }
}

/// The locks this process holds now.
static HELD: std::sync::Mutex<Vec<HeldLock>> = std::sync::Mutex::new(Vec::new());

/// The locks the kardwt commands this process runs under hold (from [`HELD_VAR`]).
fn inherited() -> Vec<HeldLock> {
    std::env::var(HELD_VAR)
        .unwrap_or_default()
        .lines()
        .filter_map(HeldLock::parse)
        .collect()
}

/// [`HELD_VAR`]'s value for a hook this process runs: what it inherited and what it holds.
pub fn held_for_hooks() -> String {
    let own = HELD.lock().map(|h| h.clone()).unwrap_or_default();
    inherited()
        .iter()
        .chain(&own)
        .map(HeldLock::line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the hooks this process ran said they could not take, because this process held it:
/// one line each (the hook's command and the lock), read and cleared.
pub fn needed_by_hooks() -> Vec<String> {
    let own = HELD.lock().map(|h| h.clone()).unwrap_or_default();
    let mut notes = Vec::new();
    for lock in own {
        let path = lock.note_path();
        if let Ok(Some(bytes)) = crate::sys::fsio::read_bounded(&path, 64 * 1024) {
            notes.extend(String::from_utf8_lossy(&bytes).lines().map(str::to_owned));
        }
        let _ = std::fs::remove_file(&path);
    }
    notes
}

/// The device and inode of an open file.
fn identity(file: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// An opened (not yet taken) lock file.
pub struct Lock {
    path: PathBuf,
    what: String,
    inner: RwLock<File>,
    /// The same open file, for rewriting the holder text while the lock is held.
    writer: File,
    /// For a card's lock: the repository lock's file, which is taken after it. Waiting for a
    /// card's lock while the command whose hook this is holds the repository lock could wait
    /// for ever (the card's holder may be waiting for that lock).
    taken_before: Option<PathBuf>,
}

impl Lock {
    /// Open (creating it and its directory) the lock file at `path` beneath `common_dir`;
    /// `what` names it in messages ("the repository lock"). Its directories are made without
    /// following a symlink, and the file itself must be a regular file: a symlink or FIFO
    /// planted there is refused (exit 3), never followed or waited on.
    pub fn open(common_dir: &Path, path: PathBuf, what: impl Into<String>) -> Result<Lock> {
        let what = what.into();
        let opened = match path.parent() {
            Some(dir) => crate::sys::fsio::create_dir_nofollow(common_dir, dir),
            None => Ok(()),
        }
        .and_then(|()| crate::sys::fsio::open_lock_nofollow(&path));
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                return Err(
                    match crate::sys::fsio::not_regular(&e).map(|b| b.path.clone()) {
                        Some(bad) => Fail::from(Refusal::Planted {
                            what,
                            error: e,
                            bad,
                        })
                        .into(),
                        None => anyhow::Error::new(e)
                            .context(format!("could not open the lock file {}", path.display())),
                    },
                );
            }
        };
        let writer = file
            .try_clone()
            .with_context(|| format!("could not open the lock file {}", path.display()))?;
        Ok(Lock {
            path,
            what,
            inner: RwLock::new(file),
            writer,
            taken_before: None,
        })
    }

    /// Take the lock, waiting until `deadline`; `holder` is written into the file so that a
    /// waiting process can say who holds it. The lock is held until the returned [`Held`] is
    /// dropped (its file is closed) or the process dies.
    /// After [`SPEAK_AFTER`] of waiting, one stderr line names the holder (when
    /// [`speak_while_waiting`] is on). A signal kardwt receives ends the wait (`signals.rs` beside it).
    pub fn acquire(mut self, deadline: Instant, holder: &str) -> Result<Held> {
        let me = Holder::me(holder);
        let text = me.to_text();
        let started = Instant::now();
        let mut spoken = !SPEAK.load(Ordering::Relaxed);
        let mut delay = Duration::from_millis(2);
        loop {
            let attempt = self.inner.try_write().map(|guard| {
                rewrite(&guard, &text);
                // Keep the flock beyond the guard: it ends when `Held` closes the file.
                std::mem::forget(guard);
            });
            match attempt {
                Ok(()) => {
                    let registered = identity(&self.writer).map(|id| HeldLock {
                        id,
                        pid: me.pid,
                        what: self.what.clone(),
                        command: me.command.clone(),
                        path: self.path.clone(),
                    });
                    if let (Some(lock), Ok(mut held)) = (&registered, HELD.lock()) {
                        held.push(lock.clone());
                    }
                    return Ok(Held {
                        _file: self.inner,
                        writer: self.writer,
                        holder: me,
                        registered,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Some(refusal) = self.held_by_ancestor(holder) {
                        return Err(refusal.into());
                    }
                    // An interrupt ends the wait, unless a rollback waits.
                    crate::sys::signals::check(&format!("while waiting for {}", self.what))?;
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(self.deadline_error().into());
                    }
                    if !spoken && now.duration_since(started) >= SPEAK_AFTER {
                        spoken = true;
                        let who = describe_holder(&self.path);
                        eprintln!(
                            "{}",
                            waiting_line(&self.what, &who, deadline.duration_since(now))
                        );
                    }
                    std::thread::sleep(
                        delay.min(deadline.saturating_duration_since(Instant::now())),
                    );
                    delay = (delay * 2).min(Duration::from_millis(50));
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("could not lock {}", self.path.display()))
                }
            }
        }
    }

    /// The refusal when waiting would wait for a kardwt command whose hook this process runs
    /// in: it holds this lock, or (for a card's lock) the repository lock taken after it. The
    /// ancestor is told through a note beside its lock ([`needed_by_hooks`]).
    fn held_by_ancestor(&self, me: &str) -> Option<Fail> {
        let ancestors = inherited();
        if ancestors.is_empty() {
            return None;
        }
        let still_holds = |lock: &HeldLock| {
            let text = crate::sys::fsio::read_bounded(&lock.path, 64 * 1024)
                .ok()
                .flatten();
            Holder::parse(&String::from_utf8_lossy(
                text.as_deref().unwrap_or_default(),
            ))
            .is_some_and(|h| h.pid == lock.pid)
        };
        let own = identity(&self.writer);
        let before = self
            .taken_before
            .as_deref()
            .and_then(|p| std::fs::File::open(p).ok())
            .and_then(|f| identity(&f));
        let (lock, first) = ancestors.iter().find_map(|lock| {
            if Some(lock.id) == own && still_holds(lock) {
                return Some((lock, None));
            }
            if Some(lock.id) == before && still_holds(lock) {
                return Some((lock, Some(describe_holder(&self.path))));
            }
            None
        })?;
        let note = format!("{me} needed {}, which {} holds\n", lock.what, lock.command);
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(lock.note_path())
            .and_then(|mut f| f.write_all(note.as_bytes()));
        Some(Fail::from(Refusal::HeldAbove {
            me: me.to_owned(),
            what: self.what.clone(),
            first,
            held: lock.what.clone(),
            command: lock.command.clone(),
            pid: lock.pid,
        }))
    }

    fn deadline_error(&self) -> Fail {
        Fail::from(Refusal::Deadline {
            what: self.what.clone(),
            path: self.path.clone(),
            who: describe_holder(&self.path),
        })
    }
}

/// A taken lock; dropping it closes the file, which releases the flock.
pub struct Held {
    _file: RwLock<File>,
    writer: File,
    holder: Holder,
    /// Its entry among the locks this process holds, dropped with it.
    registered: Option<HeldLock>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let (Some(lock), Ok(mut held)) = (&self.registered, HELD.lock()) {
            held.retain(|h| h != lock);
        }
    }
}

impl Held {
    /// Say in the lock file what the holder is doing now ("preparing card 42"), so that a
    /// process waiting for it can tell. Best effort: the lock itself is unaffected.
    pub fn doing(&self, what: &str) {
        let mut holder = self.holder.clone();
        holder.doing = Some(what.to_owned());
        let text = holder.to_text();
        // Rewritten in place through the file the lock holds (never replaced, never reopened
        // by its path): the flock is on this inode.
        rewrite(&self.writer, &text);
    }
}

/// Write `text` over a lock file's contents in place, best effort, never emptying the file
/// first: ext4 (`auto_da_alloc`, its default) writes a file that was cut to nothing and
/// written again out to the disk when it is closed, a disk write for every lock taken (0.3
/// ms of wall time and 0.1 of CPU each here, against 0.02 in place). A longer old text's tail
/// is blanked first (`parse` skips blank lines) and then cut off, so a reader never sees the
/// old holder's lines after the new holder's.
fn rewrite(file: &File, text: &str) {
    /// Past this, the old text is not a holder's (something else wrote it): cut at once.
    const BLANKED_AT_MOST: u64 = 4096;
    let old = file.metadata().map_or(0, |m| m.len());
    let new = text.len() as u64;
    if old > BLANKED_AT_MOST {
        let _ = file.set_len(0);
        let _ = file.write_all_at(text.as_bytes(), 0);
    } else if old > new {
        let mut bytes = text.as_bytes().to_vec();
        bytes.resize(old as usize, b'\n');
        let _ = file.write_all_at(&bytes, 0);
        let _ = file.set_len(new);
    } else {
        let _ = file.write_all_at(text.as_bytes(), 0);
    }
}

/// Take card `card`'s lock (always before the repository lock), waiting until `deadline`.
pub fn take_card(
    common_dir: &Path,
    card: &CardId,
    deadline: Instant,
    holder: &str,
) -> Result<Held> {
    let mut lock = Lock::open(
        common_dir,
        crate::sys::layout::card_lock_path(common_dir, card.as_str()),
        format!("card {card}'s lock"),
    )?;
    lock.taken_before = Some(crate::sys::layout::repo_lock_path(common_dir));
    lock.acquire(deadline, holder)
}

/// The taken repository lock. Only [`take_repo`] creates one, and every git operation that
/// mutates the repository (`crate::git::worktree_add`, …) asks for a `&RepoLock`, so running
/// one without the lock does not compile. Released when dropped.
pub struct RepoLock {
    _held: Held,
}

/// Take the repository lock, waiting until `deadline`. Never while this process already holds
/// it (flock would wait for itself): pass the `&RepoLock` on instead.
pub fn take_repo(common_dir: &Path, deadline: Instant, holder: &str) -> Result<RepoLock> {
    take(
        common_dir,
        crate::sys::layout::repo_lock_path(common_dir),
        "the repository lock",
        deadline,
        holder,
    )
    .map(|held| RepoLock { _held: held })
}

/// Is card `card`'s lock held right now (an `add`, `remove`, … of the card is running)? Asked
/// without creating, writing or waiting on anything: the lock file is opened read-only if it
/// exists (never through a symlink, never waiting on a FIFO) and a shared lock is tried once.
/// A lock file that is missing or cannot be opened is free.
pub fn card_busy(common_dir: &Path, card: &str) -> bool {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(crate::sys::layout::card_lock_path(common_dir, card))
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let lock = RwLock::new(file);
    let busy = matches!(lock.try_read(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    busy
}

/// Take the lock at `path` beneath `common_dir` (opening it first), waiting until `deadline`.
pub fn take(
    common_dir: &Path,
    path: PathBuf,
    what: &str,
    deadline: Instant,
    holder: &str,
) -> Result<Held> {
    Lock::open(common_dir, path, what)?.acquire(deadline, holder)
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// What stands at the lock file's path is no regular file (`bad`): never followed.
    #[error("could not open {what}: {error}")]
    Planted {
        what: String,
        error: std::io::Error,
        bad: PathBuf,
    },
    /// `command` (pid `pid`), whose hook this command runs in, holds the lock `held` this one
    /// needs: `what` itself, or (`first`: its holder) after `what`. Waiting would never end.
    #[error(
        "{me} needs {what}{}, which {command} (pid {pid}) holds while the hook runs that this \
         command runs in; waiting {} wait for ever",
        match first {
            Some(holder) => format!(" (held by {holder}) and then {held}"),
            None => String::new(),
        },
        if first.is_some() { "could" } else { "would" }
    )]
    HeldAbove {
        me: String,
        what: String,
        first: Option<String>,
        held: String,
        command: String,
        pid: u32,
    },
    /// The action deadline passed while `who` held it.
    #[error(
        "the action deadline passed while waiting for {what} ({}), held by {who}",
        path.display()
    )]
    Deadline {
        what: String,
        path: PathBuf,
        who: String,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Planted { .. } | Refusal::HeldAbove { .. } => Code::Refused,
            Refusal::Deadline { .. } => Code::Deadline,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::Planted { bad, .. } => format!(
                "kardwt makes its own lock files: remove {} and try again",
                crate::ground::quote::sh_path(bad)
            ),
            Refusal::HeldAbove { command, .. } => {
                format!("run it after {command} has finished, not from its prepare or cleanup hook")
            }
            Refusal::Deadline { .. } => "wait for that process to finish, or raise --timeout or \
                                         worktree.action_timeout_seconds"
                .into(),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_is_rewritten_in_place_to_exactly_the_new_holder() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("card.lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap();
        let long = "pid 1\nsince then\ncommand git kardwt add 1\ndoing preparing card 1\n";
        let short = "pid 22\nsince now\ncommand x\n";
        let huge = "x".repeat(5000);
        // Longer to shorter, shorter to longer, and a file no holder wrote.
        for (before, after) in [(long, short), (short, long), (huge.as_str(), short)] {
            std::fs::write(&path, before).unwrap();
            let inode = std::fs::metadata(&path).unwrap().ino();
            rewrite(&file, after);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
            assert_eq!(
                std::fs::metadata(&path).unwrap().ino(),
                inode,
                "the same file"
            );
            assert_eq!(
                Holder::parse(after).map(|h| h.pid),
                Holder::parse(&std::fs::read_to_string(&path).unwrap()).map(|h| h.pid)
            );
        }
        // The blanked tail of a longer old text parses as nothing (what a reader may see
        // between the write and the cut).
        let blanked = format!("{short}{}", "\n".repeat(long.len() - short.len()));
        let parsed = Holder::parse(&blanked).unwrap();
        assert_eq!((parsed.pid, parsed.doing), (22, None));
    }

    #[test]
    fn a_lock_held_above_says_whether_waiting_would_or_could_never_end() {
        let held = |first: Option<&str>| Refusal::HeldAbove {
            me: "git kardwt add 7".into(),
            what: "card 7's lock".into(),
            first: first.map(str::to_owned),
            held: "the repository lock".into(),
            command: "git kardwt remove 7".into(),
            pid: 42,
        };
        assert_eq!(
            held(None).to_string(),
            "git kardwt add 7 needs card 7's lock, which git kardwt remove 7 (pid 42) holds while \
             the hook runs that this command runs in; waiting would wait for ever"
        );
        assert_eq!(
            held(Some("pid 9")).to_string(),
            "git kardwt add 7 needs card 7's lock (held by pid 9) and then the repository lock, \
             which git kardwt remove 7 (pid 42) holds while the hook runs that this command runs \
             in; waiting could wait for ever"
        );
        assert_eq!(held(None).code(), Code::Refused);
        let late = Refusal::Deadline {
            what: "the repository lock".into(),
            path: PathBuf::from("/r/.git/kardwt/lock"),
            who: "pid 9".into(),
        };
        assert_eq!(late.code(), Code::Deadline);
    }

    #[test]
    fn a_held_card_lock_is_busy_and_asking_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!card_busy(dir.path(), "7"));
        assert!(!dir.path().join("kardwt").exists(), "asking created a file");
        let card = crate::ground::card::CardId::parse("7").unwrap();
        let held = take_card(dir.path(), &card, Instant::now(), "test").unwrap();
        assert!(card_busy(dir.path(), "7"));
        assert!(!card_busy(dir.path(), "8"));
        drop(held);
        assert!(!card_busy(dir.path(), "7"));
    }

    #[test]
    fn second_taker_waits_until_deadline_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kardwt").join("lock");
        let held = take(
            dir.path(),
            path.clone(),
            "the repository lock",
            Instant::now(),
            "test one",
        )
        .unwrap();
        let err = take(
            dir.path(),
            path.clone(),
            "the repository lock",
            Instant::now() + Duration::from_millis(50),
            "two",
        )
        .err()
        .unwrap();
        assert_eq!(crate::ground::error::exit_code(&err), 5);
        assert!(err.to_string().contains("test one"), "{err}");
        drop(held);
        // Free once its holder drops it. Not a single try: a child another test forks in the
        // meantime holds a copy of the file until it execs.
        take(
            dir.path(),
            path,
            "the repository lock",
            Instant::now() + Duration::from_secs(10),
            "three",
        )
        .unwrap();
    }

    #[test]
    fn the_holder_reads_back_and_says_what_it_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kardwt").join("cards").join("42.lock");
        let held = take(
            dir.path(),
            path.clone(),
            "card 42's lock",
            Instant::now(),
            "git kardwt add 42",
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let holder = Holder::parse(&text).unwrap();
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(holder.command, "git kardwt add 42");
        assert_eq!(holder.doing, None);
        held.doing("preparing card 42");
        let after = Holder::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            after.since, holder.since,
            "the holder's start does not move"
        );
        let said = describe_holder(&path);
        assert_eq!(
            said,
            format!(
                "pid {} (git kardwt add 42) since {}, preparing card 42",
                holder.pid, holder.since
            )
        );
        // No Rust debug text in what a waiting person reads.
        let line = waiting_line("card 42's lock", &said, Duration::from_millis(117_200));
        assert!(
            line.ends_with("giving up in 118 s unless it is released"),
            "{line}"
        );
        assert!(!line.contains("Some(") && !line.contains('"'), "{line}");
    }

    #[test]
    fn a_holder_that_says_nothing_is_described_plainly() {
        assert_eq!(Holder::parse(""), None);
        assert_eq!(Holder::parse("pid x\n"), None);
        let old = Holder::parse("pid 7 git kardwt add 1");
        assert_eq!(
            old, None,
            "the old one-line format has no pid key of its own"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        std::fs::write(&path, "pid 7 git kardwt add 1\n").unwrap();
        assert_eq!(describe_holder(&path), "pid 7 git kardwt add 1");
        std::fs::write(&path, "").unwrap();
        assert_eq!(describe_holder(&path), "another process");
        let h = Holder {
            pid: 9,
            since: String::new(),
            command: "multi\nline".into(),
            doing: None,
        };
        assert_eq!(Holder::parse(&h.to_text()).unwrap().command, "multi line");
    }

    #[test]
    fn a_symlink_or_fifo_planted_as_a_lock_is_refused_never_followed() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cards = dir.path().join("kardwt").join("cards");
        std::fs::create_dir_all(&cards).unwrap();
        let target = outside.path().join("made");
        std::os::unix::fs::symlink(&target, cards.join("1.lock")).unwrap();
        crate::sys::fsio::fifo(&cards.join("2.lock"));
        for (card, what) in [("1", "a symlink"), ("2", "a FIFO")] {
            let err = take(
                dir.path(),
                cards.join(format!("{card}.lock")),
                "the card's lock",
                Instant::now(),
                "test",
            )
            .err()
            .unwrap();
            assert_eq!(crate::ground::error::exit_code(&err), 3);
            assert!(format!("{err:#}").contains(what), "{err:#}");
        }
        assert!(!target.exists());
        // A symlink as the cards directory itself: refused, nothing made where it points.
        std::fs::remove_dir_all(&cards).unwrap();
        std::os::unix::fs::symlink(outside.path(), &cards).unwrap();
        let path = cards.join("3.lock");
        assert!(take(dir.path(), path, "lock", Instant::now(), "t").is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn held_locks_travel_as_lines_and_leave_with_their_holder() {
        let lock = super::HeldLock {
            id: (12, 345),
            pid: 678,
            what: "the repository lock".into(),
            command: "git kardwt remove\t1".into(),
            path: "/c/kardwt/repo.lock".into(),
        };
        let line = lock.line();
        assert_eq!(
            line,
            "12:345:678\tthe repository lock\tgit kardwt remove 1\t/c/kardwt/repo.lock"
        );
        let back = super::HeldLock::parse(&line).unwrap();
        assert_eq!(
            (back.id, back.pid, back.command.as_str()),
            ((12, 345), 678, "git kardwt remove 1")
        );
        assert!(super::HeldLock::parse("garbage").is_none());
        // Taken: named for hooks; dropped: not any more.
        let dir = tempfile::tempdir().unwrap();
        let held = take(
            dir.path(),
            dir.path().join("x.lock"),
            "the x lock",
            Instant::now(),
            "t",
        )
        .unwrap();
        assert!(super::held_for_hooks().contains("\tthe x lock\tt\t"));
        drop(held);
        assert!(!super::held_for_hooks().contains("the x lock"));
    }
}
