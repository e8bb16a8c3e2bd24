//! The blob ids of the files kardwt copied into a tree (SPEC §22.2), kept beside its record in
//! `<admin dir>/kardwt-copied` (one `<oid> <path>` per NUL-terminated entry, the union of every
//! copy into that tree) rather than in the record, which stays small however many files a copy
//! holds. pre-push blocks any pushed blob with one of these ids, under any name.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// The file's name in a worktree's admin dir.
pub const FILE_NAME: &str = "kardwt-copied";

/// The largest file read: far above the ids of a million copied files.
const MAX_BYTES: u64 = 128 << 20;

/// Add `copied` (blob id, path in the tree) to what `admin` keeps, by a temporary file renamed
/// over it.
pub fn keep(admin: &Path, copied: Vec<(String, PathBuf)>) -> Result<()> {
    if copied.is_empty() {
        return Ok(());
    }
    let mut all = load(admin);
    for (id, path) in copied {
        all.entry(id)
            .or_insert_with(|| path.to_string_lossy().into_owned());
    }
    let mut text = Vec::new();
    for (id, path) in &all {
        text.extend_from_slice(format!("{id} {path}\0").as_bytes());
    }
    crate::sys::fsio::write_atomic(admin, FILE_NAME, &text)
        .with_context(|| format!("could not write {}", admin.join(FILE_NAME).display()))
}

/// The blob ids `admin` keeps, each with the path it was copied to (none when there is no
/// file, or it cannot be read: a symlink or FIFO planted as it is neither followed nor waited
/// on).
pub fn load(admin: &Path) -> BTreeMap<String, String> {
    let raw = crate::sys::fsio::read_bounded(&admin.join(FILE_NAME), MAX_BYTES)
        .ok()
        .flatten()
        .unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter_map(|rec| {
            let text = String::from_utf8_lossy(rec);
            let (id, path) = text.split_once(' ')?;
            crate::git::push::is_oid(id).then(|| (id.to_owned(), path.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accumulate_across_copies() {
        let admin = tempfile::tempdir().unwrap();
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        keep(admin.path(), vec![(a.clone(), "x/.env.local".into())]).unwrap();
        keep(admin.path(), vec![(b.clone(), "y z".into())]).unwrap();
        let got = load(admin.path());
        assert_eq!(got.get(&a).map(String::as_str), Some("x/.env.local"));
        assert_eq!(got.get(&b).map(String::as_str), Some("y z"));
    }
}
