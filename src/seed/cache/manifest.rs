//! The manifest of a prepare-cache entry (SPEC §26): every directory, file and symlink stored
//! beneath the entry's `files/`, with its mode and size (a symlink: its target), and which
//! outputs prepare left absent. An entry is used only when what is on disk matches its manifest
//! exactly; anything else (a truncated file, a missing manifest, an extra file) is a miss.
//! Walking never follows a symlink.
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

/// The manifest's file name in an entry.
pub const FILE: &str = "manifest.json";
/// The largest manifest read (a million files is far below it).
const MAX_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub key: String,
    /// Each output as configured, and whether prepare produced it.
    pub outputs: Vec<Output>,
    /// Everything beneath `files/`, sorted by path.
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    pub path: String,
    pub present: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    /// Permission bits (files and directories).
    pub mode: u32,
    /// Bytes (files).
    pub size: u64,
    /// Where a symlink points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Dir,
    File,
    Link,
}

impl Manifest {
    /// Files and symlinks listed (what a restore copies).
    pub fn copied(&self) -> u64 {
        self.entries.iter().filter(|e| e.kind != Kind::Dir).count() as u64
    }

    /// Bytes of the files listed.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }

    /// Read the manifest of the entry at `dir`; `None` when it is missing, unreadable or not a
    /// manifest of this version.
    pub fn load(dir: &Path) -> Option<Manifest> {
        let bytes = crate::sys::fsio::read_bounded(&dir.join(FILE), MAX_BYTES).ok()??;
        let m: Manifest = serde_json::from_slice(&bytes).ok()?;
        (m.version == 1).then_some(m)
    }
}

/// Everything beneath `files` (a directory of kardwt's own), sorted by path, never following a
/// symlink. A name that is not UTF-8 cannot be listed: an error (that tree is not cached).
pub fn scan(files: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = files.join(&rel);
        for child in
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let child = child?;
            let path = rel.join(child.file_name());
            let meta = std::fs::symlink_metadata(child.path())?;
            let name = path
                .to_str()
                .with_context(|| format!("{} is not UTF-8", path.display()))?
                .to_owned();
            let ft = meta.file_type();
            let (kind, target) = if ft.is_dir() {
                pending.push(path);
                (Kind::Dir, None)
            } else if ft.is_symlink() {
                let t = std::fs::read_link(child.path())?;
                let t = t
                    .to_str()
                    .with_context(|| format!("{name}'s target is not UTF-8"))?;
                (Kind::Link, Some(t.to_owned()))
            } else if ft.is_file() {
                (Kind::File, None)
            } else {
                anyhow::bail!("{name} is neither a file, a directory nor a symlink");
            };
            out.push(Entry {
                path: name,
                kind,
                mode: if kind == Kind::Link {
                    0
                } else {
                    meta.permissions().mode() & 0o7777
                },
                size: if kind == Kind::File { meta.size() } else { 0 },
                target,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The manifest of the entry at `dir` when the entry can be used for `key`: its manifest is
/// there, names `key` and lists exactly what `files/` holds. Else why not, in words.
pub fn check(dir: &Path, key: &str) -> Result<Manifest, String> {
    let Some(m) = Manifest::load(dir) else {
        return Err("its manifest is missing or unreadable".into());
    };
    if m.key != key {
        return Err("its manifest names another key".into());
    }
    match scan(&dir.join("files")) {
        Ok(found) if found == m.entries => Ok(m),
        Ok(found) => Err(differs(&m.entries, &found)),
        Err(e) => Err(format!("its files cannot be read: {e:#}")),
    }
}

/// The first difference between what a manifest lists and what is there, in words.
fn differs(listed: &[Entry], found: &[Entry]) -> String {
    for (a, b) in listed.iter().zip(found) {
        if a != b {
            return if a.path == b.path {
                format!(
                    "{} changed ({:?} {} bytes, listed {:?} {} bytes)",
                    a.path, b.kind, b.size, a.kind, a.size
                )
            } else if a.path < b.path {
                format!("{} is missing", a.path)
            } else {
                format!("{} is extra", b.path)
            };
        }
    }
    match (listed.len(), found.len()) {
        (l, f) if l > f => format!("{} is missing", listed[f].path),
        (l, _) => format!("{} is extra", found[l].path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &Path) -> Manifest {
        let files = dir.join("files");
        std::fs::create_dir_all(files.join("node_modules/pkg")).unwrap();
        std::fs::write(files.join("node_modules/pkg/index.js"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("pkg/index.js", files.join("node_modules/main.js")).unwrap();
        let m = Manifest {
            version: 1,
            key: "k".into(),
            outputs: vec![Output {
                path: "node_modules".into(),
                present: true,
            }],
            entries: scan(&files).unwrap(),
        };
        std::fs::write(dir.join(FILE), serde_json::to_vec(&m).unwrap()).unwrap();
        m
    }

    #[test]
    fn an_entry_matches_its_manifest_until_anything_changes() {
        let dir = tempfile::tempdir().unwrap();
        let m = entry(dir.path());
        let paths: Vec<&str> = m.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "node_modules",
                "node_modules/main.js",
                "node_modules/pkg",
                "node_modules/pkg/index.js"
            ]
        );
        assert_eq!((m.copied(), m.bytes()), (2, 6));
        assert_eq!(check(dir.path(), "k").unwrap(), m);
        assert!(check(dir.path(), "other").is_err());
        let index = dir.path().join("files/node_modules/pkg/index.js");
        std::fs::write(&index, "x").unwrap();
        let why = check(dir.path(), "k").unwrap_err();
        assert!(why.contains("index.js changed"), "{why}");
        std::fs::write(&index, "x = 1\n").unwrap();
        std::fs::write(dir.path().join("files/node_modules/extra"), "").unwrap();
        let why = check(dir.path(), "k").unwrap_err();
        assert!(why.contains("extra"), "{why}");
        std::fs::remove_file(dir.path().join("files/node_modules/extra")).unwrap();
        assert!(check(dir.path(), "k").is_ok());
        std::fs::remove_file(dir.path().join(FILE)).unwrap();
        assert!(check(dir.path(), "k")
            .unwrap_err()
            .contains("manifest is missing"));
    }
}
