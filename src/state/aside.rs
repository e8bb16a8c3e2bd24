//! Trees moved aside to be deleted: `remove` renames a judged tree to a hidden sibling
//! (`.<name>.kardwt-removing-<nonce>`, same directory, so same file system) and returns; a
//! detached `git kardwt delete-aside` deletes the bytes. Each move is recorded first, atomically,
//! in `<common dir>/kardwt/aside/<nonce>.json` with the directory's device and inode, so only
//! what kardwt moved is ever deleted: a recorded path that now holds anything else is refused.
//! A move a kill left behind is finished by the next locked command (a new deleter) or by
//! `gc --apply` (in place), and listed by `gc`. Deleting stays on the tree's file system
//! (nothing with a mount in it, nothing mounted later); a deletion that fails is counted in
//! the record with what stays, retried by itself [`ATTEMPTS`] times in all, and named by
//! `list`, `doctor` and `gc`.
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What one record says: the tree `from` now lies at `path`, the directory `dev`/`ino`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Aside {
    pub card: String,
    pub from: PathBuf,
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub moved_at: String,
    /// How many deletions of it failed, and why the last one did (what stays, and where).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failed: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How many failed deletions of a tree are retried by themselves (each locked command starts a
/// deleter for a move no one is deleting); after that only `gc --apply` tries again, and
/// `list`, `doctor` and `gc` name what stays.
pub const ATTEMPTS: u32 = 3;

/// A tree moved aside and its record file.
#[derive(Debug)]
pub struct Moved {
    pub record: PathBuf,
    pub aside: Aside,
    /// The record's lock, held from just after it is written until the deleter starts, so no
    /// other finisher takes the record for one whose tree is not there yet.
    hold: Option<std::fs::File>,
}

/// The directory of the records.
pub fn dir(common_dir: &Path) -> PathBuf {
    crate::sys::kardwt_dir(common_dir).join("aside")
}

/// The name a tree named `name` gets while it waits to be deleted (pure).
pub fn aside_name(name: &std::ffi::OsStr, nonce: &str) -> std::ffi::OsString {
    let mut out = std::ffi::OsString::from(".");
    out.push(name);
    out.push(format!(".kardwt-removing-{nonce}"));
    out
}

/// Move the tree at `tree` aside: the record written (and synced) first, then the rename.
/// `Err` names why it stayed where it was (another file system: `EXDEV`; no record could be
/// written): the caller deletes it in place then.
pub fn move_aside(common_dir: &Path, card: &str, tree: &Path) -> anyhow::Result<Moved> {
    use anyhow::Context as _;
    let meta = tree
        .symlink_metadata()
        .with_context(|| tree.display().to_string())?;
    if !meta.is_dir() {
        anyhow::bail!("{} is not a directory", tree.display());
    }
    let (Some(parent), Some(name)) = (tree.parent(), tree.file_name()) else {
        anyhow::bail!("{} has no parent directory", tree.display());
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let nonce = format!("{}-{nanos:x}", std::process::id());
    let aside = Aside {
        card: card.to_owned(),
        from: tree.to_owned(),
        path: parent.join(aside_name(name, &nonce)),
        dev: meta.dev(),
        ino: meta.ino(),
        moved_at: crate::sys::now(),
        attempts: 0,
        failed: String::new(),
    };
    let records = dir(common_dir);
    let file = format!("{nonce}.json");
    let bytes = serde_json::to_vec(&aside)?;
    crate::sys::create_dir_nofollow(common_dir, &records)
        .and_then(|()| crate::sys::write_atomic_new(&records, &file, &bytes))
        .with_context(|| format!("its move could not be recorded in {}", records.display()))?;
    let record = records.join(&file);
    let hold = crate::sys::open_regular_nofollow(&record).ok();
    if let Some(f) = &hold {
        let _ = rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive);
    }
    if let Err(e) = std::fs::rename(tree, &aside.path) {
        let _ = std::fs::remove_file(&record);
        if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
            anyhow::bail!("it cannot be renamed within its file system (EXDEV)");
        }
        return Err(anyhow::Error::new(e).context("renaming it failed"));
    }
    Ok(Moved {
        record,
        aside,
        hold,
    })
}

/// Undo a [`move_aside`] (git refused to forget the tree): the tree back at its path, the
/// record dropped. `false` when it could not be renamed back (the record then stays, and the
/// tree is deleted as any recorded move).
pub fn put_back(moved: Moved) -> bool {
    if std::fs::rename(&moved.aside.path, &moved.aside.from).is_err() {
        return false;
    }
    let _ = std::fs::remove_file(&moved.record);
    true
}

/// How the bytes of a moved tree are deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleting {
    /// A detached process deletes them.
    Background,
    /// No process could be started: deleted before returning, or not all (what stays, and
    /// where).
    InPlace(Result<(), String>),
}

/// Delete the moved tree of `record` after returning: a detached `git kardwt delete-aside` (in
/// its own session) (it survives the caller, reads and writes nothing of the caller's), or, when
/// none can start, now.
pub fn start_deleting(moved: Moved) -> Deleting {
    let Moved { record, hold, .. } = moved;
    drop(hold);
    delete_later(&record)
}

/// [`start_deleting`] of a record alone.
fn delete_later(record: &Path) -> Deleting {
    if spawn_deleter(record).is_ok() {
        return Deleting::Background;
    }
    Deleting::InPlace(match delete(record) {
        Deletion::Deleted | Deletion::Gone => Ok(()),
        Deletion::Busy => Err("another process is deleting it".into()),
        Deletion::Refused(why) | Deletion::Failed(why) | Deletion::Unreadable(why) => Err(why),
    })
}

fn spawn_deleter(record: &Path) -> io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("delete-aside")
        .arg(record)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // It leaves the caller's session itself, first thing (`delete-aside`).
    let mut child = cmd.spawn()?;
    // Reaped by a thread, not awaited: the caller returns at once and the child outlives it
    // (with no thread to spare, it is reaped when the caller ends).
    let _ = std::thread::Builder::new().spawn(move || child.wait());
    Ok(())
}

/// What became of a record's move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// The tree was deleted and its record dropped.
    Deleted,
    /// Nothing at the recorded path (deleted already, or never moved): the record is dropped.
    Gone,
    /// Another process is deleting it now.
    Busy,
    /// The recorded path holds something other than the moved tree: left as it is.
    Refused(String),
    /// Deleting failed part way: the record stays, for the next try.
    Failed(String),
    /// The record cannot be read.
    Unreadable(String),
}

/// Judge the record at `record` without changing anything (`gc`'s dry run), or, with `apply`,
/// delete the tree it names when the recorded path still holds that very directory.
pub fn finish(record: &Path, apply: bool) -> (Option<Aside>, Deletion) {
    let file = match crate::sys::open_regular_nofollow(record) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (None, Deletion::Gone),
        Err(e) => return (None, Deletion::Unreadable(e.to_string())),
    };
    // Held until the end: one deleter per record.
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return (read(record).ok(), Deletion::Busy);
    }
    let aside = match read(record) {
        Ok(a) => a,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (None, Deletion::Gone),
        Err(e) => return (None, Deletion::Unreadable(e.to_string())),
    };
    let outcome = still_there(&aside);
    if !apply {
        return (Some(aside), outcome);
    }
    let outcome = match outcome {
        Deletion::Gone => Deletion::Gone,
        Deletion::Deleted => match delete_tree(&aside.path) {
            Ok(()) => Deletion::Deleted,
            Err(why) => {
                let why = format!("{why:#}");
                let aside = note_failure(record, aside, &why);
                return (Some(aside), Deletion::Failed(why));
            }
        },
        other => return (Some(aside), other),
    };
    let _ = std::fs::remove_file(record);
    (Some(aside), outcome)
}

/// Delete the moved tree at `path` on its own file system only: refused whole when a file
/// system is mounted in it, and whatever is mounted while it is deleted is left alone. `Err`
/// says what stays, and where.
fn delete_tree(path: &Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mounts = crate::sys::mounts_under(path).with_context(|| path.display().to_string())?;
    if !mounts.is_empty() {
        let shown: Vec<String> = mounts
            .iter()
            .map(|m| path.join(m).display().to_string())
            .collect();
        anyhow::bail!(
            "a file system is mounted in it ({}); nothing was deleted: kardwt never deletes across \
             a mount",
            shown.join(", ")
        );
    }
    match crate::sys::delete_on_one_fs(path) {
        Ok(None) => Ok(()),
        Ok(Some(left)) => Err(anyhow::anyhow!(
            "{}; they stay in {}",
            left.describe(),
            path.display()
        )),
        Err(e) => Err(anyhow::anyhow!(
            "{}: {e}; nothing was deleted",
            path.display()
        )),
    }
}

/// Count a failed deletion in the record (under its lock): one more attempt, and why.
fn note_failure(record: &Path, mut aside: Aside, why: &str) -> Aside {
    aside.attempts = aside.attempts.saturating_add(1);
    aside.failed = why.to_owned();
    if let (Some(dir), Some(name), Ok(bytes)) = (
        record.parent(),
        record.file_name(),
        serde_json::to_vec(&aside),
    ) {
        let _ = crate::sys::write_atomic(dir, name, &bytes);
    }
    aside
}

/// [`finish`] with `apply`.
pub fn delete(record: &Path) -> Deletion {
    finish(record, true).1
}

/// Does the recorded path still hold the moved tree? `Deleted` when it does (what deleting
/// would do), `Gone` when nothing is there, `Refused` when something else is.
fn still_there(aside: &Aside) -> Deletion {
    match aside.path.symlink_metadata() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Deletion::Gone,
        Err(e) => Deletion::Failed(e.to_string()),
        Ok(m) if m.is_dir() && m.dev() == aside.dev && m.ino() == aside.ino => Deletion::Deleted,
        Ok(_) => Deletion::Refused(format!(
            "{} is not the tree kardwt moved there (another file or directory now stands \
             at it)",
            aside.path.display()
        )),
    }
}

fn read(record: &Path) -> io::Result<Aside> {
    let bytes = crate::sys::read_bounded(record, 1 << 16)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "too large"))?;
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The record files, sorted (temporaries of killed writes are not records).
pub fn records(common_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir(common_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    out.sort();
    out
}

/// The moves whose deletion failed at least once and are still there (read only, no lock):
/// what `list` and `doctor` report.
pub fn failing(common_dir: &Path) -> Vec<Aside> {
    records(common_dir)
        .iter()
        .filter_map(|r| read(r).ok())
        .filter(|a| a.attempts > 0 && still_there(a) == Deletion::Deleted)
        .collect()
}

/// Under the repository lock: a deleter for every move no process is deleting (one a kill
/// left). A recorded path that holds something else is a warning, and stays.
pub fn finish_abandoned(common_dir: &Path) {
    for record in records(common_dir) {
        match finish(&record, false) {
            (_, Deletion::Busy | Deletion::Unreadable(_)) => {}
            (_, Deletion::Gone) => {
                let _ = std::fs::remove_file(&record);
            }
            (_, Deletion::Refused(why)) => {
                eprintln!(
                    "warning: {why}; it is left as it is (git kardwt gc --apply forgets the \
                     record)"
                );
            }
            // Failed too often: left for gc --apply, and named by list, doctor and gc.
            (Some(a), Deletion::Deleted) if a.attempts >= ATTEMPTS => {}
            (_, Deletion::Deleted | Deletion::Failed(_)) => {
                delete_later(&record);
            }
        }
    }
}

/// `gc`'s account of the moves: each record, what was (or would be) done.
#[derive(Debug, Serialize)]
pub struct Tidy {
    pub moved_aside: Vec<Entry>,
}

/// One record in [`Tidy`].
#[derive(Debug, Serialize)]
pub struct Entry {
    pub card: String,
    pub path: PathBuf,
    pub from: PathBuf,
    /// `deleted`, `would delete`, `being deleted`, `refused: …`, `failed: …`.
    pub outcome: String,
}

impl Tidy {
    /// Judge every record; with `apply`, delete what is still the moved tree (in place), and
    /// forget a record whose path holds something else, leaving that as it is.
    pub fn run(common_dir: &Path, apply: bool) -> Tidy {
        let mut moved_aside = Vec::new();
        for record in records(common_dir) {
            let (aside, outcome) = finish(&record, apply);
            let outcome = match outcome {
                Deletion::Deleted if apply => "deleted".to_owned(),
                Deletion::Deleted => match &aside {
                    Some(a) if a.attempts > 0 => format!(
                        "not deleted after {} attempt{} ({}); gc --apply tries again",
                        a.attempts,
                        if a.attempts == 1 { "" } else { "s" },
                        a.failed
                    ),
                    _ => "would delete".to_owned(),
                },
                Deletion::Gone => continue,
                Deletion::Busy => "being deleted by another process".to_owned(),
                Deletion::Refused(why) if apply => {
                    let _ = std::fs::remove_file(&record);
                    format!("not deleted: {why}; its record is forgotten")
                }
                Deletion::Refused(why) => format!("refused: {why}"),
                Deletion::Failed(why) => format!("failed: {why}"),
                Deletion::Unreadable(why) => format!("unreadable record: {why}"),
            };
            let (card, path, from) = aside.map_or_else(
                || (String::new(), record.clone(), PathBuf::new()),
                |a| (a.card, a.path, a.from),
            );
            moved_aside.push(Entry {
                card,
                path,
                from,
                outcome,
            });
        }
        Tidy { moved_aside }
    }

    /// One line per record.
    pub fn lines(&self) -> Vec<String> {
        self.moved_aside
            .iter()
            .map(|e| {
                format!(
                    "{}: {}, the tree of card {} moved aside by remove (was {})",
                    e.outcome,
                    e.path.display(),
                    e.card,
                    e.from.display()
                )
            })
            .collect()
    }

    /// Is anything left to do?
    pub fn pending(&self) -> bool {
        !self.moved_aside.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aside_name_is_a_hidden_sibling_naming_the_tree() {
        let name = aside_name(std::ffi::OsStr::new("card-42"), "7-ab");
        assert_eq!(name, ".card-42.kardwt-removing-7-ab");
    }
}
