//! The local prepare cache as the `cache` command sees it: each entry with its size, when it
//! was stored and last used; a full check of an entry's files against its manifest (shape and
//! every byte's hash); and pruning. Pruning removes only what kardwt made (entries named by
//! their 64-hex key, leftovers of a store or removal whose process is gone), only inside the
//! cache directory, and refuses a cache path that is not a real directory (a symlink planted
//! there is never followed). Other names in the directory are reported and left alone.
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{manifest, shelf};
use crate::ground::error::{Code, Kind};

/// One entry of the local cache.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    /// Files and symlinks, and bytes, its manifest lists (`None`: no readable manifest).
    pub files: Option<u64>,
    pub bytes: Option<u64>,
    /// When its manifest was written (seconds since the epoch): stored or fetched.
    pub stored: Option<u64>,
    /// When it was last stored or used.
    pub used: u64,
}

/// The local cache of a repository: where, its entries (most recently used first), what an
/// interrupted store or removal left, and names kardwt did not make.
#[derive(Debug)]
pub struct Local {
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
    pub leftovers: Vec<String>,
    pub others: Vec<String>,
}

/// Why the cache is not read or touched.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "{} is not a real directory (a symlink or a file): kardwt reads and removes nothing \
         through it",
        .0.display()
    )]
    NotADirectory(PathBuf),
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        Code::Refused
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::NotADirectory(p) => vec![format!(
                "look at it by hand (ls -la {}); once it is gone, the next prepare makes a new cache",
                crate::ground::quote::sh_path(p)
            )],
        }
    }
}

/// The local cache under `common_dir` (empty when there is none yet).
pub fn open(common_dir: &Path) -> Result<Local, Refusal> {
    let dir = crate::sys::cache_dir(common_dir);
    let mut local = Local {
        dir: dir.clone(),
        entries: Vec::new(),
        leftovers: Vec::new(),
        others: Vec::new(),
    };
    match std::fs::symlink_metadata(&dir) {
        Err(_) => return Ok(local),
        Ok(m) if !m.is_dir() => return Err(Refusal::NotADirectory(dir)),
        Ok(_) => {}
    }
    let stored = |key: &str| {
        std::fs::symlink_metadata(dir.join(key).join(manifest::FILE))
            .ok()
            .map(|m| u64::try_from(m.mtime()).unwrap_or(0))
    };
    local.entries = shelf::list(common_dir)
        .into_iter()
        .map(|s| Entry {
            stored: stored(&s.key),
            key: s.key,
            files: s.files,
            bytes: s.bytes,
            used: s.used,
        })
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        if local.entries.iter().any(|e| e.key == name) {
            continue;
        }
        match shelf::leftover_pid(&name) {
            Some(pid) if !crate::sys::process_exists(pid) => local.leftovers.push(name),
            // Another kardwt is storing or removing it now.
            Some(_) => {}
            None => local.others.push(name),
        }
    }
    Ok(local)
}

/// Is the entry of `key` whole: its manifest names it, lists exactly what is there, and every
/// file holds the bytes of its hash? Else why not (`None`: whole).
pub fn damage(local: &Local, key: &str) -> Option<String> {
    let dir = local.dir.join(key);
    let checked = manifest::check(&dir, key)
        .and_then(|m| manifest::verify(&dir.join("files"), &m).map(|_| ()));
    checked.err().map(|e| e.to_string())
}

/// What pruning removed.
#[derive(Debug, Default)]
pub struct Pruned {
    pub entries: Vec<Entry>,
    pub leftovers: Vec<String>,
}

/// Remove the entries `which` picks, and the leftovers of processes gone; nothing else. An
/// entry that cannot be removed is not listed as removed.
pub fn prune(common_dir: &Path, which: impl Fn(&Entry) -> bool) -> Result<Pruned, Refusal> {
    let local = open(common_dir)?;
    let mut pruned = Pruned::default();
    for e in local.entries.into_iter().filter(|e| which(e)) {
        shelf::discard(common_dir, &e.key);
        if std::fs::symlink_metadata(local.dir.join(&e.key)).is_err() {
            pruned.entries.push(e);
        }
    }
    for name in local.leftovers {
        shelf::drop_leftover(common_dir, &name);
        if std::fs::symlink_metadata(local.dir.join(&name)).is_err() {
            pruned.leftovers.push(name);
        }
    }
    Ok(pruned)
}

/// Remove the damaged entry of `key` (what `check` found): whether it is gone.
pub fn discard(local: &Local, common_dir: &Path, key: &str) -> bool {
    shelf::discard(common_dir, key);
    std::fs::symlink_metadata(local.dir.join(key)).is_err()
}

#[cfg(test)]
mod tests {
    use super::shelf::leftover_pid;

    #[test]
    fn only_what_a_store_or_a_removal_leaves_is_a_leftover() {
        let key = "0123456789abcdef".repeat(4);
        assert_eq!(leftover_pid(&format!(".tmp-42-{key}")), Some(42));
        assert_eq!(leftover_pid(&format!(".old-7-{key}")), Some(7));
        for name in [
            ".tmp-42-mine".to_owned(),
            format!(".tmp-x-{key}"),
            format!(".new-42-{key}"),
            format!(".tmp-42-{key}0"),
            key.clone(),
            "notes.txt".to_owned(),
        ] {
            assert_eq!(leftover_pid(&name), None, "{name}");
        }
    }
}
