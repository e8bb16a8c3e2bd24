//! The base's files behind kardwt's links (`sharing.link` paths, whole directories included,
//! and the skills directories), matched against blobs a push carries: by size first, from
//! file metadata alone, so a large linked directory costs one `stat` per entry and no byte is
//! read until a file has the size of a pushed blob; only those are hashed. Symlinks beneath a
//! linked path are not followed (a link's own path may be one). When kardwt links them, the
//! small files' ids are remembered ([`versions`]), so a version that changed since still
//! cannot leave.
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Of `wanted` (blob id → size), the ids whose content equals a regular file beneath one of
/// `rels` in `base`, each with that file's path relative to `base`. Unreadable entries are
/// passed over; nothing here fails.
pub(crate) fn matching(
    base: &Path,
    rels: &BTreeSet<Vec<u8>>,
    wanted: &BTreeMap<String, u64>,
    kind: gix::hash::Kind,
) -> BTreeMap<String, Vec<u8>> {
    let sizes: BTreeSet<u64> = wanted.values().copied().filter(|s| *s > 0).collect();
    let mut found = BTreeMap::new();
    if sizes.is_empty() {
        return found;
    }
    for rel in rels {
        let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
        if rel.as_os_str().is_empty()
            || !rel.components().all(|c| matches!(c, Component::Normal(_)))
        {
            continue;
        }
        for (file, size) in candidates(base, rel, &|s| sizes.contains(&s)) {
            let Some(id) = blob_id(&base.join(&file), size, kind) else {
                continue;
            };
            if wanted.contains_key(&id) {
                found
                    .entry(id)
                    .or_insert_with(|| file.as_os_str().as_bytes().to_vec());
            }
        }
    }
    found
}

/// Linked files larger than this are not remembered (while there, pre-push still finds them by
/// size), nor more than [`REMEMBER_BUDGET`] bytes at one linking.
const REMEMBER_MAX: u64 = 1 << 20;
const REMEMBER_BUDGET: u64 = 64 << 20;

/// Remember the versions of what was just linked (`links`, relative to `base`) in the
/// repository's list of shared blob ids, so pre-push blocks them after they change. A list that
/// cannot be written is said on stderr: pre-push still judges the files' content of the day.
pub(super) fn remember(base: &Path, common_dir: &Path, links: &[String]) {
    if links.is_empty() {
        return;
    }
    let kind = crate::state::Cards::at(common_dir).hash_kind();
    let versions = versions(base, links, kind);
    if let Err(e) = crate::state::Cards::at(common_dir).remember_blobs(&versions) {
        eprintln!("warning: could not remember the linked files' versions for pre-push: {e:#}");
    }
}

/// The blob ids of the non-empty regular files at or beneath `rels` in `base` (what a linking
/// shares today), each with its path relative to `base`: up to 1 MiB a file and 64 MiB in all.
/// A `.env`-like file's content with CRLF made LF (as a text conversion would commit it) is
/// one more id.
pub(super) fn versions(
    base: &Path,
    rels: &[String],
    kind: gix::hash::Kind,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut budget = REMEMBER_BUDGET;
    for rel in rels {
        let rel = Path::new(rel);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            continue;
        }
        for (file, size) in candidates(base, rel, &|s| s > 0 && s <= REMEMBER_MAX) {
            if size > budget {
                return out;
            }
            budget -= size;
            let Ok(mut f) = crate::sys::open_regular_following(&base.join(&file)) else {
                continue;
            };
            let mut data = Vec::new();
            if std::io::Read::read_to_end(&mut std::io::Read::take(&mut f, REMEMBER_MAX), &mut data)
                .is_err()
            {
                continue;
            }
            let shown = file.to_string_lossy().into_owned();
            let name = file.file_name().map_or(&b""[..], |n| n.as_bytes());
            let env = crate::git::is_env_name(name, false);
            let mut bodies = vec![data.clone()];
            if env {
                bodies.push(crate::git::crlf_to_lf(&data));
            }
            for body in bodies.iter().filter(|b| !b.is_empty()) {
                if let Ok(id) = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, body) {
                    out.push((id.to_string(), shown.clone()));
                }
            }
        }
    }
    out
}

/// The regular files at or beneath `rel` (the path itself followed if a symlink, nothing
/// beneath it) whose size `wanted` accepts, relative to `base`.
fn candidates(base: &Path, rel: &Path, wanted: &dyn Fn(u64) -> bool) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let Ok(top) = std::fs::metadata(base.join(rel)) else {
        return out;
    };
    if top.is_file() {
        if wanted(top.len()) {
            out.push((rel.to_path_buf(), top.len()));
        }
        return out;
    }
    let mut todo = vec![rel.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(base.join(&dir)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = dir.join(entry.file_name());
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() {
                match entry.metadata() {
                    Ok(m) if wanted(m.len()) => out.push((path, m.len())),
                    _ => {}
                }
            }
        }
    }
    out
}

/// The git blob id of the file at `path`, streamed, when it still has `size` bytes.
fn blob_id(path: &Path, size: u64, kind: gix::hash::Kind) -> Option<String> {
    let mut file = crate::sys::open_regular_following(path).ok()?;
    if file.metadata().ok()?.len() != size {
        return None;
    }
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    gix::objs::compute_stream_hash(
        kind,
        gix::objs::Kind::Blob,
        &mut file,
        size,
        &mut gix::progress::Discard,
        &interrupt,
    )
    .ok()
    .map(|id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_of_a_pushed_size_are_hashed_and_found_at_any_depth() {
        let base = tempfile::tempdir().unwrap();
        let deep = base.path().join("data/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("secret.csv"), b"id,token\n1,xyz\n").unwrap();
        std::fs::write(base.path().join("data/other"), b"short").unwrap();
        std::os::unix::fs::symlink("/etc", base.path().join("data/etc")).unwrap();
        let kind = gix::hash::Kind::Sha1;
        let id = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, b"id,token\n1,xyz\n")
            .unwrap()
            .to_string();
        let rels: BTreeSet<Vec<u8>> = [b"data".to_vec(), b"../x".to_vec()].into();
        let wanted: BTreeMap<String, u64> = [(id.clone(), 15), ("f".repeat(40), 5)].into();
        let found = matching(base.path(), &rels, &wanted, kind);
        assert_eq!(found.len(), 1);
        assert_eq!(found[&id], b"data/a/b/secret.csv");
        assert_eq!(
            candidates(base.path(), Path::new("data"), &|s| s == 15).len(),
            1
        );
        let kept = versions(base.path(), &["data".into()], kind);
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(kept.contains(&(id, "data/a/b/secret.csv".into())));
    }
}
