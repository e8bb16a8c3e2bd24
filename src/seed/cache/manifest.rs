//! The manifest of a prepare-cache entry: every directory, file and symlink stored
//! beneath the entry's `files/`, with its mode and size (a symlink: its target), each file's
//! SHA-256, and which outputs prepare left absent. An entry is used only when what is on disk
//! matches its manifest exactly; anything else (a truncated file, a missing manifest, an extra
//! file) is a miss, and so is a file whose bytes do not match its hash ([`verify`], on the
//! restored copy or on the entry a clone shares its blocks with, so a hit reads each byte once).
//! Storing reads each file once, for its hash and for the tree's identity ([`seal`]). Walking
//! never follows a symlink.
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::identity::Finder;

/// The manifest's file name in an entry.
pub const FILE: &str = "manifest.json";
/// The largest manifest read (a million files is far below it).
const MAX_BYTES: u64 = 256 << 20;
/// The manifest's format: 2 added the files' hashes (an entry of 1 is a miss, replaced).
const VERSION: u32 = 2;

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
    /// SHA-256 of a file's bytes, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl Entry {
    /// The entry as [`scan`] sees it, without the hash (compared without reading a byte).
    fn shape(&self) -> Entry {
        Entry {
            sha256: None,
            ..self.clone()
        }
    }
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

    /// Is it of the version this kardwt writes?
    pub fn is_current(&self) -> bool {
        self.version == VERSION
    }

    /// Read the manifest of the entry at `dir`; `None` when it is missing, unreadable or not a
    /// manifest of this version.
    pub fn load(dir: &Path) -> Option<Manifest> {
        let bytes = crate::sys::read_bounded(&dir.join(FILE), MAX_BYTES).ok()??;
        let m: Manifest = serde_json::from_slice(&bytes).ok()?;
        (m.version == VERSION).then_some(m)
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
                sha256: None,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Why a cache entry cannot be used: it is a miss then, dropped and replaced, never an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("its manifest is missing or unreadable")]
    NoManifest,
    #[error("its manifest names another key")]
    OtherKey,
    #[error("its manifest lacks a file's hash")]
    NoHash,
    /// What `files/` holds is not what the manifest lists: the first difference.
    #[error("{0}")]
    Differs(String),
    #[error("its files cannot be read: {0}")]
    FilesUnreadable(String),
    #[error("{0}'s bytes do not match their hash")]
    Mismatch(String),
    #[error("{path} cannot be read: {why}")]
    Unreadable { path: String, why: String },
    #[error("a hash check stopped")]
    CheckStopped,
}

/// The manifest of the entry at `dir` when the entry can be used for `key`: its manifest is
/// there, names `key` and lists exactly what `files/` holds. Else why not.
pub fn check(dir: &Path, key: &str) -> Result<Manifest, Unusable> {
    let Some(m) = Manifest::load(dir) else {
        return Err(Unusable::NoManifest);
    };
    if m.key != key {
        return Err(Unusable::OtherKey);
    }
    if m.entries
        .iter()
        .any(|e| e.kind == Kind::File && e.sha256.is_none())
    {
        return Err(Unusable::NoHash);
    }
    let listed: Vec<Entry> = m.entries.iter().map(Entry::shape).collect();
    match scan(&dir.join("files")) {
        Ok(found) if found == listed => Ok(m),
        Ok(found) => Err(Unusable::Differs(differs(&listed, &found))),
        Err(e) => Err(Unusable::FilesUnreadable(format!("{e:#}"))),
    }
}

/// A new manifest (this version) for `key`.
pub fn new(key: &str, outputs: Vec<Output>, entries: Vec<Entry>) -> Manifest {
    Manifest {
        version: VERSION,
        key: key.to_owned(),
        outputs,
        entries,
    }
}

/// SHA-256 of the file at `path` (a final symlink not followed), and what of the tree's
/// identity its bytes hold when `finder` looks for it: one read, through `buf` (reused from
/// file to file: a fresh buffer per small file would cost more than its bytes).
fn read_once(
    path: &Path,
    finder: Option<&Finder>,
    buf: &mut Vec<u8>,
) -> std::io::Result<(String, Option<String>)> {
    use sha2::{Digest, Sha256};
    use std::io::Read as _;
    let mut file = crate::sys::open_regular_nofollow(path)?;
    let keep = finder.map_or(1, Finder::longest).max(1) - 1;
    let mut h = Sha256::new();
    buf.resize(keep + (256 << 10), 0);
    let (mut held, mut found) = (0, None);
    loop {
        let n = file.read(&mut buf[held..])?;
        if n == 0 {
            break;
        }
        h.update(&buf[held..held + n]);
        let len = held + n;
        if found.is_none() {
            found = finder.and_then(|f| f.find(&buf[..len]));
        }
        // The last bytes stay, so a needle across two reads is still seen.
        let tail = len.min(keep);
        buf.copy_within(len - tail..len, 0);
        held = tail;
    }
    let hex = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((hex, found))
}

/// Hash every file `entries` lists beneath `files`, and refuse the entry when a name, a file
/// or a symlink's target holds what `finder` looks for (the tree's path, names, branch, card):
/// outputs that name their tree are not relocatable. The error names the first such path.
pub fn seal(files: &Path, entries: &mut [Entry], finder: &Finder) -> Result<()> {
    let mut buf = Vec::new();
    for e in entries.iter_mut() {
        if let Some(found) = finder.find(e.path.as_bytes()) {
            anyhow::bail!(
                "{} is named after {found}, so it cannot serve another tree",
                e.path
            );
        }
        match e.kind {
            Kind::File => {
                let (hash, found) = read_once(&files.join(&e.path), Some(finder), &mut buf)
                    .with_context(|| format!("cannot read the stored {}", e.path))?;
                if let Some(found) = found {
                    anyhow::bail!("{} names {found}, so it cannot serve another tree", e.path);
                }
                e.sha256 = Some(hash);
            }
            Kind::Link => {
                if let Some(found) = e.target.as_deref().and_then(|t| finder.find(t.as_bytes())) {
                    anyhow::bail!(
                        "the symlink {} points to {found}, so it cannot serve another tree",
                        e.path
                    );
                }
            }
            Kind::Dir => {}
        }
    }
    Ok(())
}

/// Do the files restored beneath `root` (the same paths as the entry's `files/`) hold the
/// bytes `m` lists? Else the first that does not.
pub fn verify(root: &Path, m: &Manifest) -> Result<(), Unusable> {
    let files: Vec<&Entry> = m.entries.iter().filter(|e| e.kind == Kind::File).collect();
    // Two halves, one on a second thread when one can be started (the hash is the cost of
    // a hit on a file system that clones); the first mismatch found is the answer.
    let even: Vec<&Entry> = files.iter().step_by(2).copied().collect();
    let odd: Vec<&Entry> = files.iter().skip(1).step_by(2).copied().collect();
    std::thread::scope(|scope| {
        let other = std::thread::Builder::new().spawn_scoped(scope, || verify_files(root, &odd));
        let mine = verify_files(root, &even);
        let theirs = match other {
            Ok(handle) => handle.join().unwrap_or(Err(Unusable::CheckStopped)),
            Err(_) => verify_files(root, &odd),
        };
        mine.and(theirs)
    })
}

fn verify_files(root: &Path, files: &[&Entry]) -> Result<(), Unusable> {
    let mut buf = Vec::new();
    for e in files {
        match read_once(&root.join(&e.path), None, &mut buf) {
            Ok((hash, _)) if e.sha256.as_deref() == Some(hash.as_str()) => {}
            Ok(_) => return Err(Unusable::Mismatch(e.path.clone())),
            Err(err) => {
                return Err(Unusable::Unreadable {
                    path: e.path.clone(),
                    why: err.to_string(),
                })
            }
        }
    }
    Ok(())
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
    use crate::seed::cache::identity::Tree;

    /// What the tree at `path` (card `card-1`, branch `card/1`) is searched for by.
    fn finder(path: &str) -> Finder {
        Finder::of(&Tree {
            path: Path::new(path),
            admin: Path::new("/nowhere/repo/.git/worktrees/card-1"),
            card: "1",
            branch: "card/1",
        })
        .unwrap()
    }

    fn entry(dir: &Path) -> Manifest {
        let files = dir.join("files");
        std::fs::create_dir_all(files.join("node_modules/pkg")).unwrap();
        std::fs::write(files.join("node_modules/pkg/index.js"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("pkg/index.js", files.join("node_modules/main.js")).unwrap();
        let mut entries = scan(&files).unwrap();
        seal(&files, &mut entries, &finder("/nowhere/card-1")).unwrap();
        let outputs = vec![Output {
            path: "node_modules".into(),
            present: true,
        }];
        let m = new("k", outputs, entries);
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
        assert_eq!(check(dir.path(), "other").unwrap_err(), Unusable::OtherKey);
        let index = dir.path().join("files/node_modules/pkg/index.js");
        std::fs::write(&index, "x").unwrap();
        let why = check(dir.path(), "k").unwrap_err();
        assert!(
            matches!(&why, Unusable::Differs(d) if d.contains("index.js changed")),
            "{why}"
        );
        std::fs::write(&index, "x = 1\n").unwrap();
        std::fs::write(dir.path().join("files/node_modules/extra"), "").unwrap();
        let why = check(dir.path(), "k").unwrap_err();
        assert!(
            matches!(&why, Unusable::Differs(d) if d.contains("extra")),
            "{why}"
        );
        std::fs::remove_file(dir.path().join("files/node_modules/extra")).unwrap();
        assert!(check(dir.path(), "k").is_ok());
        std::fs::remove_file(dir.path().join(FILE)).unwrap();
        assert_eq!(check(dir.path(), "k").unwrap_err(), Unusable::NoManifest);
    }

    #[test]
    fn sealing_finds_the_tree_anywhere_even_across_reads_and_hashes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path();
        let needle = b"/work/trees/card-1".to_vec();
        let finder = finder("/work/trees/card-1");
        let mut body = vec![b'x'; (1 << 20) - 5];
        body.extend_from_slice(&needle);
        body.extend_from_slice(b"/lib/python\n");
        std::fs::write(files.join("venv.pth"), &body).unwrap();
        std::fs::write(files.join("plain"), b"nothing here").unwrap();
        let mut entries = scan(files).unwrap();
        let err = seal(files, &mut entries, &finder).unwrap_err();
        assert!(
            format!("{err:#}").contains("venv.pth names this tree's path /work/trees/card-1,"),
            "{err:#}"
        );
        std::fs::remove_file(files.join("venv.pth")).unwrap();
        std::os::unix::fs::symlink("/work/trees/card-1/src", files.join("proj")).unwrap();
        let mut entries = scan(files).unwrap();
        let err = seal(files, &mut entries, &finder).unwrap_err();
        assert!(
            format!("{err:#}").contains("symlink proj points to this tree's path"),
            "{err:#}"
        );
        std::fs::remove_file(files.join("proj")).unwrap();
        // The directory name alone, in another case, across two reads (the first read fills
        // the buffer: what is kept of the last read and 256 KiB).
        let first_read = finder.longest() - 1 + (256 << 10);
        let mut body = vec![b'y'; first_read - "COMPOSE=".len() - 3];
        body.extend_from_slice(b"COMPOSE=CARD-1\n");
        std::fs::write(files.join("compose.env"), &body).unwrap();
        let mut entries = scan(files).unwrap();
        let err = seal(files, &mut entries, &finder).unwrap_err();
        assert!(
            format!("{err:#}").contains("compose.env names this tree's directory name card-1,"),
            "{err:#}"
        );
        std::fs::remove_file(files.join("compose.env")).unwrap();
        // A name that holds it.
        std::fs::create_dir(files.join("card_1.d")).unwrap();
        let mut entries = scan(files).unwrap();
        let err = seal(files, &mut entries, &finder).unwrap_err();
        assert!(
            format!("{err:#}")
                .contains("card_1.d is named after this tree's directory name card_1"),
            "{err:#}"
        );
        std::fs::remove_dir(files.join("card_1.d")).unwrap();
        let mut entries = scan(files).unwrap();
        seal(files, &mut entries, &finder).unwrap();
        assert_eq!(entries[0].sha256.as_deref().map(str::len), Some(64));
    }
}
