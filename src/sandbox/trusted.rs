//! Committed helpers, trusted once per machine: `git kardwt trust` copies the rules' helpers
//! directory (`helpers.from_repository`) out of the base's HEAD into the user's own store,
//! outside every worktree, one copy per git tree id of that directory with every file pinned by
//! SHA-256 in a manifest. A hook runs the copy whose tree id is the directory's at the tree's
//! commit, after its bytes were checked against the manifest; a directory changed upstream has
//! another tree id and runs nothing until it is trusted again. The tree being prepared never
//! supplies the program: its working files are never read, only committed objects.
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ground::error::{Code, Fail, Kind};

/// The manifest's schema.
const SCHEMA: u32 = 1;
/// The largest helper file trusted (a script, not a toolchain).
const MAX_FILE: u64 = 16 << 20;

/// Why the committed helpers cannot run, or cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    #[error("the helpers in {dir} at commit {commit} are not trusted on this machine")]
    NotTrusted {
        dir: String,
        commit: String,
        /// The newest trusted version's commit, when one was trusted before.
        before: Option<String>,
    },
    #[error("helpers.from_repository: {dir} is not a directory at commit {commit}")]
    NotInCommit { dir: String, commit: String },
    #[error("the trusted copy of {dir} in {store} does not match its manifest: {why}")]
    Tampered {
        dir: String,
        store: PathBuf,
        why: String,
    },
    #[error("helpers.from_repository: {dir} at commit {commit} holds {path}, {what}: only regular files with UTF-8 names are trusted")]
    NotAFile {
        dir: String,
        commit: String,
        path: String,
        what: String,
    },
    #[error("{key}: {program} is not an executable file of the trusted helpers in {dir}")]
    NotAHelper {
        key: String,
        program: String,
        dir: String,
    },
    #[error("neither XDG_DATA_HOME nor HOME is set to an absolute directory: no place for trusted helpers")]
    NoHome,
    #[error("the store of what this user trusts is not safe: {path} {why}")]
    UnsafeStore { path: PathBuf, why: String },
}

impl Kind for Untrusted {
    fn code(&self) -> Code {
        match self {
            Untrusted::NotAHelper { .. } | Untrusted::NoHome => Code::Usage,
            Untrusted::UnsafeStore { .. } => Code::Refused,
            _ => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Untrusted::NotTrusted { dir, before, .. } => {
                let mut h = vec![format!(
                    "a person must read what the scripts do, then trust them once on this machine by running git kardwt trust themselves (an agent must not: ask the user; git kardwt trust --dry-run shows the files). It copies {dir} from the base's HEAD; pull the base first if the change came from upstream"
                )];
                if let Some(b) = before {
                    h.push(format!(
                        "what changed since the version trusted here: git diff {} HEAD -- {dir}",
                        short(b)
                    ));
                }
                h
            }
            Untrusted::Tampered { .. } => vec![
                "the copy is not what was trusted: a person should find out why, then trust the helpers again by running git kardwt trust themselves (an agent must not: ask the user)".into(),
            ],
            Untrusted::NotInCommit { .. } => vec![
                "commit the helpers directory the rules name, or fix helpers.from_repository"
                    .into(),
            ],
            Untrusted::NotAFile { .. } => {
                vec!["keep only regular files (scripts) with UTF-8 names in the helpers directory".into()]
            }
            Untrusted::NotAHelper { dir, .. } => vec![format!(
                "argv[0] must name a committed executable file beneath {dir}, relative to the repository's root"
            )],
            Untrusted::NoHome => vec!["set HOME (or XDG_DATA_HOME) to your home directory".into()],
            Untrusted::UnsafeStore { path, .. } => vec![
                format!(
                    "only you may write the store and the directories above it up to the data directory: \
                     make {} yours and writable by you alone (chown, chmod go-w), or remove it \
                     and run git kardwt trust again",
                    path.display()
                ),
            ],
        }
    }
}

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
}

/// One file of a trusted version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the repository's root (`tools/kardwt/prepare`).
    pub path: String,
    pub blob: String,
    pub sha256: String,
    pub executable: bool,
}

/// A trusted version's manifest, `<store>/<tree>.toml`, written after its files.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    schema: u32,
    repository: String,
    dir: String,
    tree: String,
    commit: String,
    trusted_at: String,
    #[serde(default, rename = "file")]
    files: Vec<Entry>,
}

/// The user's store for this repository's trusted helpers:
/// `${XDG_DATA_HOME:-$HOME/.local/share}/git-kardwt/trusted/<base name>-<hash of common dir>`.
pub fn store(common_dir: &Path) -> Result<PathBuf, Fail> {
    let data = data_home().ok_or_else(|| Fail::from(Untrusted::NoHome))?;
    let canonical = std::fs::canonicalize(common_dir).unwrap_or_else(|_| common_dir.to_owned());
    let digest = hex(&Sha256::digest(canonical.as_os_str().as_encoded_bytes()));
    // The base's directory name, for a person reading the store.
    let named = if canonical.file_name().is_some_and(|n| n == ".git") {
        canonical.parent().and_then(Path::file_name)
    } else {
        canonical.file_name()
    };
    let name: String = named
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let store = data
        .join("git-kardwt/trusted")
        .join(format!("{name}-{}", &digest[..16]));
    // `git-kardwt/` may also hold what `make install PREFIX=~/.local` put there (made under
    // the user's umask): only others' write is refused there; kardwt makes the rest 0700.
    safe_dir(&data.join("git-kardwt"), 0o002)?;
    safe_dir(&data.join("git-kardwt/trusted"), 0o022)?;
    safe_dir(&store, 0o022)?;
    Ok(store)
}

/// The user's data directory, `${XDG_DATA_HOME:-$HOME/.local/share}` (each absolute), where
/// kardwt keeps what this user trusts beneath `git-kardwt/`.
pub fn data_home() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local/share"))
        })
}

/// A directory of the store, where it exists, must be a directory (a symlink is judged by what
/// it leads to) owned by this user, with none of the write bits `unsafe_bits` for its group or
/// others: whoever can write there could put a program and its manifest in place of what was
/// trusted.
pub fn safe_dir(dir: &Path, unsafe_bits: u32) -> Result<(), Fail> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Fail::from(Untrusted::UnsafeStore {
                path: dir.to_owned(),
                why: format!("cannot be read ({e})"),
            }))
        }
    };
    let why = if !meta.is_dir() {
        Some("is not a directory".to_owned())
    } else if meta.uid() != rustix::process::geteuid().as_raw() {
        Some(format!("belongs to another user (uid {})", meta.uid()))
    } else if meta.mode() & unsafe_bits != 0 {
        Some(format!(
            "is writable by its group or by others (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(Fail::from(Untrusted::UnsafeStore {
            path: dir.to_owned(),
            why,
        })),
        None => Ok(()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the helpers directory holds at one commit.
#[derive(Debug)]
pub struct Committed {
    pub commit: String,
    pub tree: String,
    /// `(path, blob, executable)` of every file beneath the directory.
    pub files: Vec<(String, String, bool)>,
}

/// Read the helpers directory `dir` at `commit` from the object database of `repo_dir`.
pub fn committed(repo_dir: &Path, commit: &str, dir: &Path) -> Result<Committed> {
    let dir_s = dir.to_string_lossy().into_owned();
    let not_in = || {
        Fail::from(Untrusted::NotInCommit {
            dir: dir_s.clone(),
            commit: commit.to_owned(),
        })
    };
    let tree = crate::git::tree_id(repo_dir, commit, &dir_s).ok_or_else(not_in)?;
    let raw = crate::git::ls_tree_path_z(repo_dir, commit, &dir_s)?;
    let mut files = Vec::new();
    for rec in raw.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let meta = String::from_utf8_lossy(&rec[..tab]).into_owned();
        let named = std::str::from_utf8(&rec[tab + 1..]);
        let path = String::from_utf8_lossy(&rec[tab + 1..]).into_owned();
        let parts: Vec<&str> = meta.split(' ').collect();
        let refuse = |what: &str| {
            Fail::from(Untrusted::NotAFile {
                dir: crate::ground::quote::visible(&dir_s).into_owned(),
                commit: commit.to_owned(),
                path: crate::ground::quote::visible(&path).into_owned(),
                what: what.to_owned(),
            })
        };
        // A name is copied and matched as written: one that is not UTF-8 would be neither.
        if named.is_err() {
            return Err(refuse("a name that is not UTF-8").into());
        }
        match parts.as_slice() {
            ["100755", "blob", oid] => files.push((path.clone(), (*oid).to_owned(), true)),
            ["100644", "blob", oid] => files.push((path.clone(), (*oid).to_owned(), false)),
            ["120000", ..] => return Err(refuse("a symbolic link").into()),
            ["160000", ..] => return Err(refuse("a submodule").into()),
            _ => return Err(refuse("an entry of another kind").into()),
        }
    }
    Ok(Committed {
        commit: commit.to_owned(),
        tree,
        files,
    })
}

/// The root of the trusted copy of the helpers as committed at `commit`, checked against its
/// manifest, and the manifest's entries: the stable root its programs run from.
pub fn trusted_root(
    common_dir: &Path,
    repo_dir: &Path,
    commit: &str,
    dir: &Path,
) -> Result<(PathBuf, Vec<Entry>), Fail> {
    let store = store(common_dir)?;
    let dir_s = dir.to_string_lossy().into_owned();
    let tree = crate::git::tree_id(repo_dir, commit, &dir_s).ok_or_else(|| {
        Fail::from(Untrusted::NotInCommit {
            dir: dir_s.clone(),
            commit: commit.to_owned(),
        })
    })?;
    let Some(manifest) = read_manifest(&store, &tree) else {
        return Err(Fail::from(Untrusted::NotTrusted {
            dir: dir_s,
            commit: commit.to_owned(),
            before: newest(&store).map(|m| m.commit),
        }));
    };
    let root = store.join(&tree);
    check_copy(&root, &manifest).map_err(|why| {
        Fail::from(Untrusted::Tampered {
            dir: dir_s.clone(),
            store: root.clone(),
            // It names a file of the manifest: shown with its control characters written out.
            why: crate::ground::quote::visible(&format!("{why:#}")).into_owned(),
        })
    })?;
    Ok((root, manifest.files))
}

/// The program `argv0` (relative to the repository's root) names in a trusted copy, when it is
/// one of its executable files.
pub fn program_in(
    root: &Path,
    files: &[Entry],
    argv0: &str,
    key: &str,
    dir: &Path,
) -> Result<PathBuf, Fail> {
    let normal: PathBuf = Path::new(argv0)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    let wanted = normal.to_string_lossy();
    if files.iter().any(|f| f.path == wanted && f.executable) {
        return Ok(root.join(&normal));
    }
    Err(Fail::from(Untrusted::NotAHelper {
        key: key.to_owned(),
        program: argv0.to_owned(),
        dir: dir.display().to_string(),
    }))
}

fn read_manifest(store: &Path, tree: &str) -> Option<Manifest> {
    let text = crate::sys::read_bounded(&store.join(format!("{tree}.toml")), 1 << 20)
        .ok()
        .flatten()?;
    let m: Manifest = toml::from_str(std::str::from_utf8(&text).ok()?).ok()?;
    (m.schema == SCHEMA && m.tree == tree).then_some(m)
}

/// The most recently trusted version in the store, if any.
fn newest(store: &Path) -> Option<Manifest> {
    let mut all: Vec<Manifest> = std::fs::read_dir(store)
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            read_manifest(store, name.strip_suffix(".toml")?)
        })
        .collect();
    all.sort_by(|a, b| a.trusted_at.cmp(&b.trusted_at));
    all.pop()
}

/// Does the copy at `root` hold exactly the manifest's bytes (no more files, no fewer)?
fn check_copy(root: &Path, m: &Manifest) -> Result<()> {
    for f in &m.files {
        let path = root.join(&f.path);
        let meta = std::fs::symlink_metadata(&path).with_context(|| f.path.clone())?;
        if !meta.is_file() {
            anyhow::bail!("{} is not a regular file", f.path);
        }
        let bytes = crate::sys::read_bounded(&path, MAX_FILE)
            .with_context(|| f.path.clone())?
            .with_context(|| format!("{} is too large", f.path))?;
        if hex(&Sha256::digest(&bytes)) != f.sha256 {
            anyhow::bail!("{} changed since it was trusted", f.path);
        }
    }
    Ok(())
}

/// What trusting did to one file, against the newest version trusted before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    New,
    Changed,
    Same,
}

/// A trusted version.
#[derive(Debug)]
pub struct Trusted {
    pub store: PathBuf,
    pub tree: String,
    pub commit: String,
    /// Already trusted before (nothing was copied).
    pub already: bool,
    pub files: Vec<(Entry, Change)>,
    /// The commit of the version trusted before, when there was one.
    pub before: Option<String>,
}

/// Copy the helpers directory `dir` as committed at `commit` into the store, pinned by
/// SHA-256; `dry_run` reads and compares only. An existing copy whose bytes no longer match
/// its manifest is made again.
pub fn trust(
    common_dir: &Path,
    repo_dir: &Path,
    commit: &str,
    dir: &Path,
    dry_run: bool,
) -> Result<Trusted> {
    let store = store(common_dir)?;
    let c = committed(repo_dir, commit, dir)?;
    let before = newest(&store);
    let old: BTreeMap<String, String> = before
        .iter()
        .flat_map(|m| m.files.iter().map(|f| (f.path.clone(), f.sha256.clone())))
        .collect();
    let ids: Vec<u8> = c
        .files
        .iter()
        .flat_map(|(_, b, _)| format!("{b}\n").into_bytes())
        .collect();
    let blobs = crate::git::parse_batch(&crate::git::cat_file_batch(repo_dir, ids)?);
    let mut files = Vec::new();
    let mut bytes_of = Vec::new();
    for (path, blob, executable) in &c.files {
        let bytes = blobs
            .get(blob)
            .with_context(|| format!("git cat-file did not return {blob} ({path})"))?;
        anyhow::ensure!(
            bytes.len() as u64 <= MAX_FILE,
            "{path} is larger than {} MiB: only scripts are trusted",
            MAX_FILE >> 20
        );
        let sha256 = hex(&Sha256::digest(bytes));
        let change = match old.get(path) {
            None => Change::New,
            Some(s) if *s == sha256 => Change::Same,
            Some(_) => Change::Changed,
        };
        let entry = Entry {
            path: path.clone(),
            blob: blob.clone(),
            sha256,
            executable: *executable,
        };
        bytes_of.push(bytes.clone());
        files.push((entry, change));
    }
    let manifest = Manifest {
        schema: SCHEMA,
        repository: common_dir.display().to_string(),
        dir: dir.to_string_lossy().into_owned(),
        tree: c.tree.clone(),
        commit: c.commit.clone(),
        trusted_at: crate::sys::now(),
        files: files.iter().map(|(e, _)| e.clone()).collect(),
    };
    let root = store.join(&c.tree);
    let is_there = || read_manifest(&store, &c.tree).is_some_and(|m| check_copy(&root, &m).is_ok());
    let mut already = is_there();
    if !dry_run && !already {
        // One trust at a time writes the store: a second one waits, then finds the version
        // there; what a killed one left half written is cleared first.
        let mut lock = store_lock(&store)?;
        let _held = lock
            .write()
            .with_context(|| format!("cannot lock {}/.lock", store.display()))?;
        already = is_there();
        if !already {
            clear_incoming(&store);
            write_copy(&store, &root, &manifest, &bytes_of)?;
        }
    }
    Ok(Trusted {
        store,
        tree: c.tree,
        commit: c.commit,
        already,
        files,
        before: before.map(|m| m.commit),
    })
}

/// The store's own lock (`<store>/.lock`, flock: free again when its holder dies), creating
/// the store first.
fn store_lock(store: &Path) -> Result<fd_lock::RwLock<std::fs::File>> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(store)
        .with_context(|| format!("cannot create {}", store.display()))?;
    safe_dir(store, 0o022)?;
    let path = store.join(".lock");
    let file = crate::sys::open_lock_nofollow(&path)
        .with_context(|| format!("cannot open the store's lock {}", path.display()))?;
    Ok(fd_lock::RwLock::new(file))
}

/// Remove what killed trusts left: their `.incoming-*` directories (no trust runs but the
/// lock's holder).
fn clear_incoming(store: &Path) {
    let Ok(entries) = std::fs::read_dir(store) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().as_encoded_bytes().starts_with(b".incoming-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Write the files into a fresh directory beside `root`, rename it into place, then write the
/// manifest: a version is trusted only once all of its bytes are there.
fn write_copy(store: &Path, root: &Path, m: &Manifest, bytes: &[Vec<u8>]) -> Result<()> {
    let incoming = store.join(format!(".incoming-{}-{}", m.tree, std::process::id()));
    let _ = std::fs::remove_dir_all(&incoming);
    for (f, data) in m.files.iter().zip(bytes) {
        let dest = incoming.join(&f.path);
        if let Some(parent) = dest.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if f.executable { 0o700 } else { 0o600 })
            .open(&dest)
            .with_context(|| format!("cannot create {}", dest.display()))?;
        out.write_all(data)
            .and_then(|()| out.sync_all())
            .with_context(|| format!("cannot write {}", dest.display()))?;
    }
    if m.files.is_empty() {
        std::fs::DirBuilder::new().mode(0o700).create(&incoming)?;
    }
    // A copy that no longer matched its manifest is replaced whole.
    if root.exists() {
        std::fs::remove_dir_all(root)
            .with_context(|| format!("cannot replace {}", root.display()))?;
    }
    std::fs::rename(&incoming, root)
        .with_context(|| format!("cannot move {} to {}", incoming.display(), root.display()))?;
    let text = toml::to_string(m).context("cannot write the manifest")?;
    crate::sys::write_atomic(
        store,
        OsString::from(format!("{}.toml", m.tree)),
        text.as_bytes(),
    )
    .with_context(|| format!("cannot write {}/{}.toml", store.display(), m.tree))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: Vec<Entry>) -> Manifest {
        Manifest {
            schema: SCHEMA,
            repository: "/r/.git".into(),
            dir: "tools".into(),
            tree: "t".into(),
            commit: "c".into(),
            trusted_at: "2026-12-01T00:00:00Z".into(),
            files,
        }
    }

    #[test]
    fn a_copy_matches_its_manifest_byte_for_byte() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("tools")).unwrap();
        std::fs::write(d.path().join("tools/p"), b"#!/bin/sh\n").unwrap();
        let entry = Entry {
            path: "tools/p".into(),
            blob: "b".into(),
            sha256: hex(&Sha256::digest(b"#!/bin/sh\n")),
            executable: true,
        };
        let m = manifest(vec![entry.clone()]);
        assert!(check_copy(d.path(), &m).is_ok());
        std::fs::write(d.path().join("tools/p"), b"#!/bin/sh\nrm -rf ~\n").unwrap();
        let why = format!("{:#}", check_copy(d.path(), &m).unwrap_err());
        assert!(why.contains("changed since it was trusted"), "{why}");
        std::fs::remove_file(d.path().join("tools/p")).unwrap();
        std::os::unix::fs::symlink("/bin/sh", d.path().join("tools/p")).unwrap();
        assert!(
            format!("{:#}", check_copy(d.path(), &m).unwrap_err()).contains("not a regular file")
        );
    }

    #[test]
    fn only_an_executable_file_of_the_manifest_is_a_program() {
        let files = vec![
            Entry {
                path: "tools/prepare".into(),
                blob: "b".into(),
                sha256: "s".into(),
                executable: true,
            },
            Entry {
                path: "tools/lib.sh".into(),
                blob: "b".into(),
                sha256: "s".into(),
                executable: false,
            },
        ];
        let root = Path::new("/store/t");
        let dir = Path::new("tools");
        assert_eq!(
            program_in(root, &files, "./tools/prepare", "k", dir).unwrap(),
            root.join("tools/prepare")
        );
        for bad in [
            "tools/lib.sh",
            "tools/other",
            "prepare",
            "/store/t/tools/prepare",
        ] {
            let e = program_in(root, &files, bad, "k", dir).unwrap_err();
            assert_eq!(e.code, Code::Usage, "{bad}");
        }
    }
}
