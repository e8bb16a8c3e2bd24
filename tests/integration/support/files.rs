//! Snapshots, mtimes, quoting for the shell and YAML, and waiting: helpers on plain files.
#![allow(unused_imports)]
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::*;

/// Every entry under `dir` (files with their bytes, symlinks with their target, directories
/// marked), keyed by path relative to `dir`. A missing `dir` gives an empty map.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot_excluding(dir, None)
}

pub(crate) fn snapshot_excluding(dir: &Path, skip: Option<&Path>) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    walk(dir, &mut |path, meta| {
        let rel = path.strip_prefix(dir).unwrap().to_path_buf();
        if skip.is_some_and(|s| rel.starts_with(s)) {
            return;
        }
        let value = if meta.file_type().is_symlink() {
            let mut v = b"<symlink> ".to_vec();
            v.extend(
                std::fs::read_link(path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            );
            v
        } else if meta.is_dir() {
            b"<dir>".to_vec()
        } else {
            std::fs::read(path).unwrap()
        };
        out.insert(rel, value);
    });
    out
}

/// Every entry under `dir` with its permission bits (0 for a symlink) and what
/// [`snapshot`] keeps of it: names, contents, modes and symlink targets, byte for byte.
pub fn tree_state(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let modes = {
        let mut m = BTreeMap::new();
        walk(dir, &mut |path, meta| {
            let mode = if meta.file_type().is_symlink() {
                0
            } else {
                meta.permissions().mode() & 0o7777
            };
            m.insert(path.strip_prefix(dir).unwrap().to_path_buf(), mode);
        });
        m
    };
    snapshot(dir)
        .into_iter()
        .map(|(rel, bytes)| (rel.clone(), (modes[&rel], bytes)))
        .collect()
}

/// Modification times (and file types/sizes) of every entry under `dir`, itself included.
pub fn mtimes(dir: &Path) -> BTreeMap<PathBuf, (SystemTime, u64, bool)> {
    let mut out = BTreeMap::new();
    if let Ok(meta) = std::fs::symlink_metadata(dir) {
        out.insert(
            PathBuf::from("."),
            (meta.modified().unwrap(), meta.len(), meta.is_dir()),
        );
    }
    walk(dir, &mut |path, meta| {
        let rel = path.strip_prefix(dir).unwrap().to_path_buf();
        out.insert(rel, (meta.modified().unwrap(), meta.len(), meta.is_dir()));
    });
    out
}

pub(crate) fn walk(dir: &Path, f: &mut dyn FnMut(&Path, &std::fs::Metadata)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        f(&path, &meta);
        if meta.is_dir() {
            walk(&path, f);
        }
    }
}

/// Quote a path for `/bin/sh` (single quotes).
pub fn sh_quote(path: &Path) -> String {
    let s = path.to_str().unwrap();
    assert!(!s.contains('\''));
    format!("'{s}'")
}

/// Quote a path as a YAML double-quoted string.
pub fn yaml_str(path: &Path) -> String {
    serde_json::to_string(path.to_str().unwrap()).unwrap()
}

/// A path as printed on stdout: the path and a newline.
pub fn line(path: &Path) -> String {
    format!("{}\n", path.display())
}

/// Poll `cond` every 20 ms for at most `timeout`.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}
