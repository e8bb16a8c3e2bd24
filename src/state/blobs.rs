//! The blob ids of every version of the bytes kardwt shared into a tree: the
//! copies pre-push protects, kept beside the tree's record in `<admin dir>/kardwt-copied` (so an
//! interrupted copy, retried, does not read again what it finished), and, for the whole
//! repository in `<common dir>/kardwt/copied`, those ids with every version of a linked `.env`
//! or linked directory's file kardwt saw (when it linked them, and when pre-push found the
//! base's `.env` changed). The repository's list outlives the trees and the versions: pre-push
//! blocks any pushed blob with one of these ids, under any name and from any checkout, after
//! the file changed or the tree that held it is gone. Both hold one `<oid> <path>` per
//! NUL-terminated entry; the repository's file is append-only, oldest first, and bounded (past
//! [`MAX_BYTES`] the oldest ids go, said on stderr).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

/// The file's name in a worktree's admin dir.
pub(super) const FILE_NAME: &str = "kardwt-copied";

/// The repository's file and its lock, in kardwt's directory under the common dir.
const REPO_FILE: &str = "copied";
const REPO_LOCK: &str = "copied.lock";

/// The largest file kept and read: far above the ids of a million copied files.
const MAX_BYTES: u64 = 128 << 20;

/// The repository's list of copied blob ids.
pub(super) fn repo_file(common_dir: &Path) -> PathBuf {
    crate::sys::kardwt_dir(common_dir).join(REPO_FILE)
}

/// The common dir of the repository administering the worktree admin dir `admin` (its
/// `commondir` file, relative to it), or `admin` itself when it names none.
pub(crate) fn common_dir_of(admin: &Path) -> PathBuf {
    crate::sys::read_bounded(&admin.join("commondir"), 4096)
        .ok()
        .flatten()
        .map(|c| admin.join(String::from_utf8_lossy(&c).trim()))
        .unwrap_or_else(|| admin.to_path_buf())
}

fn encode<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> Vec<u8> {
    let mut text = Vec::new();
    for (id, path) in entries {
        text.extend_from_slice(format!("{id} {path}\0").as_bytes());
    }
    text
}

/// Add `copied` (blob id, path in the tree) to what `admin` keeps and to the repository's
/// list, each by a temporary file renamed over it.
pub(crate) fn keep(admin: &Path, copied: Vec<(String, PathBuf)>) -> Result<()> {
    if copied.is_empty() {
        return Ok(());
    }
    let copied: Vec<(String, String)> = copied
        .into_iter()
        .map(|(id, path)| (id, path.to_string_lossy().into_owned()))
        .collect();
    let mut all = load(admin);
    for (id, path) in &copied {
        all.entry(id.clone()).or_insert_with(|| path.clone());
    }
    crate::sys::write_atomic(admin, FILE_NAME, &encode(&all))
        .with_context(|| format!("could not write {}", admin.join(FILE_NAME).display()))?;
    remember(&common_dir_of(admin), &copied)
}

/// Append the ids not yet there (blob id, the path it was shared as) to the repository's list,
/// under its own lock (two copies at once each keep theirs), dropping the oldest past the bound.
pub(super) fn remember(common_dir: &Path, copied: &[(String, String)]) -> Result<()> {
    if copied.is_empty() {
        return Ok(());
    }
    let dir = crate::sys::kardwt_dir(common_dir);
    let _held = crate::sys::take_lock(
        common_dir,
        dir.join(REPO_LOCK),
        "the lock of the copied files' ids",
        Instant::now() + Duration::from_secs(10),
        "keep copied ids",
    )?;
    let mut entries = parse(&read(&repo_file(common_dir)));
    let known: BTreeSet<String> = entries.iter().map(|(id, _)| id.clone()).collect();
    let before = entries.len();
    let mut added: BTreeSet<&str> = BTreeSet::new();
    for (id, path) in copied {
        if !known.contains(id) && added.insert(id) {
            entries.push((id.clone(), path.clone()));
        }
    }
    if entries.len() == before {
        return Ok(());
    }
    let mut text = encode(entries.iter().map(|(a, b)| (a, b)));
    if text.len() as u64 > MAX_BYTES {
        let cut = text.len() - MAX_BYTES as usize;
        let at = text[cut..]
            .iter()
            .position(|b| *b == 0)
            .map_or(text.len(), |p| cut + p + 1);
        text.drain(..at);
        eprintln!(
            "warning: {} is full: the ids of the oldest copied files were dropped, and \
             pre-push no longer blocks their content",
            repo_file(common_dir).display()
        );
    }
    crate::sys::write_atomic(&dir, REPO_FILE, &text)
        .with_context(|| format!("could not write {}", repo_file(common_dir).display()))
}

/// The file's bytes (none when there is no file, or it cannot be read: a symlink or FIFO
/// planted as it is neither followed nor waited on).
fn read(path: &Path) -> Vec<u8> {
    crate::sys::read_bounded(path, MAX_BYTES)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The well-formed `<oid> <path>` entries, in file order.
fn parse(raw: &[u8]) -> Vec<(String, String)> {
    raw.split(|b| *b == 0)
        .filter_map(|rec| {
            let text = String::from_utf8_lossy(rec);
            let (id, path) = text.split_once(' ')?;
            crate::git::is_oid(id).then(|| (id.to_owned(), path.to_owned()))
        })
        .collect()
}

/// The blob ids `admin` keeps, each with the path it was copied to.
pub(crate) fn load(admin: &Path) -> BTreeMap<String, String> {
    parse(&read(&admin.join(FILE_NAME))).into_iter().collect()
}

/// The object format of the repository whose common dir is `common_dir` (its config), for
/// the blob ids kept: SHA-1 unless it says `objectformat = sha256`.
pub(super) fn hash_kind(common_dir: &Path) -> gix::hash::Kind {
    let config = crate::git::read_bounded(&common_dir.join("config"), 1 << 20).unwrap_or_default();
    let sha256 = String::from_utf8_lossy(&config).lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("objectformat") && l.contains("sha256")
    });
    if sha256 {
        gix::hash::Kind::Sha256
    } else {
        gix::hash::Kind::Sha1
    }
}

/// The blob ids the repository keeps, each with the path it was first shared as.
pub(super) fn load_repo(common_dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (id, path) in parse(&read(&repo_file(common_dir))) {
        out.entry(id).or_insert(path);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accumulate_across_copies_and_outlive_the_admin_dir() {
        let common = tempfile::tempdir().unwrap();
        let admin = common.path().join("worktrees").join("1");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        keep(&admin, vec![(a.clone(), "x/.env.local".into())]).unwrap();
        keep(
            &admin,
            vec![(b.clone(), "y z".into()), (a.clone(), "again".into())],
        )
        .unwrap();
        let got = load(&admin);
        assert_eq!(got.get(&a).map(String::as_str), Some("x/.env.local"));
        assert_eq!(got.get(&b).map(String::as_str), Some("y z"));
        std::fs::remove_dir_all(&admin).unwrap();
        let kept = load_repo(common.path());
        assert_eq!(kept.get(&a).map(String::as_str), Some("x/.env.local"));
        assert_eq!(kept.get(&b).map(String::as_str), Some("y z"));
        let raw = read(&repo_file(common.path()));
        assert_eq!(raw.split(|c| *c == 0).filter(|r| !r.is_empty()).count(), 2);
    }
}
