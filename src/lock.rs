//! Cross-process locks under `<common dir>/kardwt/` (SPEC R-LOCK): the repository lock that
//! serializes fetch, ref and worktree administration, and one lock per card around seeding and
//! preparation. flock(2) through fd-lock: a lock held by a dead process is free. Always take
//! the card's lock before the repository lock. The repository lock is a type of its own,
//! [`RepoLock`], that the git layer's mutating operations require.
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fd_lock::RwLock;

use crate::card::CardId;
use crate::error::{Code, Fail};

/// kardwt's repository-wide directory.
pub fn kardwt_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("kardwt")
}

/// The repository lock's file.
pub fn repo_lock_path(common_dir: &Path) -> PathBuf {
    kardwt_dir(common_dir).join("lock")
}

/// One card's lock file.
pub fn card_lock_path(common_dir: &Path, card: &CardId) -> PathBuf {
    kardwt_dir(common_dir)
        .join("cards")
        .join(format!("{card}.lock"))
}

/// An opened (not yet taken) lock file.
pub struct Lock {
    path: PathBuf,
    what: String,
    inner: RwLock<File>,
}

impl Lock {
    /// Open (creating it and its directory) the lock file at `path`; `what` names it in
    /// messages ("the repository lock").
    pub fn open(path: PathBuf, what: impl Into<String>) -> Result<Lock> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("could not create {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("could not open the lock file {}", path.display()))?;
        Ok(Lock {
            path,
            what: what.into(),
            inner: RwLock::new(file),
        })
    }

    /// Take the lock, waiting until `deadline`; `holder` is written into the file so that a
    /// waiting process can say who holds it. The lock is held until the returned [`Held`] is
    /// dropped (its file is closed) or the process dies.
    pub fn acquire(mut self, deadline: Instant, holder: &str) -> Result<Held> {
        let mut delay = Duration::from_millis(2);
        loop {
            let attempt = self.inner.try_write().map(|mut guard| {
                let _ = guard.set_len(0);
                let _ = guard.rewind();
                let _ = writeln!(guard, "pid {} {holder}", std::process::id());
                // Keep the flock beyond the guard: it ends when `Held` closes the file.
                std::mem::forget(guard);
            });
            match attempt {
                Ok(()) => return Ok(Held { _file: self.inner }),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(self.deadline_error().into());
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

    fn deadline_error(&self) -> Fail {
        let mut holder = String::new();
        let _ = File::open(&self.path).and_then(|mut f| f.read_to_string(&mut holder));
        let holder = holder.trim();
        let who = if holder.is_empty() {
            "another process".to_owned()
        } else {
            holder.to_owned()
        };
        Fail::new(
            Code::Deadline,
            format!(
                "the action deadline passed while waiting for {} ({}), held by {who}",
                self.what,
                self.path.display()
            ),
        )
        .hint("wait for that process to finish, or raise --timeout")
    }
}

/// A taken lock; dropping it closes the file, which releases the flock.
pub struct Held {
    _file: RwLock<File>,
}

/// Take card `card`'s lock (always before the repository lock), waiting until `deadline`.
pub fn take_card(
    common_dir: &Path,
    card: &CardId,
    deadline: Instant,
    holder: &str,
) -> Result<Held> {
    take(
        card_lock_path(common_dir, card),
        &format!("card {card}'s lock"),
        deadline,
        holder,
    )
}

/// The taken repository lock. Only [`take_repo`] creates one, and every git operation that
/// mutates the repository (`crate::git::worktree_add`, …) asks for a `&RepoLock`, so running
/// one without the lock does not compile (SPEC R-LOCK). Released when dropped.
pub struct RepoLock {
    _held: Held,
}

/// Take the repository lock, waiting until `deadline`. Never while this process already holds
/// it (flock would wait for itself): pass the `&RepoLock` on instead.
pub fn take_repo(common_dir: &Path, deadline: Instant, holder: &str) -> Result<RepoLock> {
    take(
        repo_lock_path(common_dir),
        "the repository lock",
        deadline,
        holder,
    )
    .map(|held| RepoLock { _held: held })
}

/// Take the lock at `path` (opening it first), waiting until `deadline`.
pub fn take(path: PathBuf, what: &str, deadline: Instant, holder: &str) -> Result<Held> {
    Lock::open(path, what)?.acquire(deadline, holder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_taker_waits_until_deadline_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kardwt").join("lock");
        let held = take(
            path.clone(),
            "the repository lock",
            Instant::now(),
            "test one",
        )
        .unwrap();
        let err = take(
            path.clone(),
            "the repository lock",
            Instant::now() + Duration::from_millis(50),
            "two",
        )
        .err()
        .unwrap();
        assert_eq!(crate::error::exit_code(&err), 5);
        assert!(err.to_string().contains("test one"), "{err}");
        drop(held);
        take(path, "the repository lock", Instant::now(), "three").unwrap();
    }
}
