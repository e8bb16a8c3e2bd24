//! The cache directory, `<common dir>/kardwt/cache/`: one directory per key
//! holding `manifest.json` and `files/`. An entry is written under `.tmp-<pid>-<key>` and
//! renamed into place; one it replaces is first moved aside to `.old-<pid>-<key>`, then removed,
//! so a reader sees a whole entry or none. A symlink or anything else that is not a real
//! directory at the cache's path or an entry's is never followed, written through or used.
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::identity::{Finder, Tree};
use super::manifest::{self, Manifest, Output};
use crate::seed::copy::{Copier, Method};
use crate::sys;

/// One entry, for `gc` and trimming.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shelved {
    pub key: String,
    /// When it was last stored or used (seconds since the epoch).
    pub used: u64,
    /// The same to the nanosecond: two entries stored within one second still order right.
    #[serde(skip)]
    pub used_ns: i128,
    /// Files and symlinks, and bytes, its manifest lists (`None`: no readable manifest).
    pub files: Option<u64>,
    pub bytes: Option<u64>,
}

/// The cache directory, made first when `create`; `None` when it is absent, or is not a real
/// directory (a symlink planted there is never followed).
fn root(common_dir: &Path, create: bool) -> Option<PathBuf> {
    let dir = crate::sys::cache_dir(common_dir);
    let real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if create && !real_dir(&dir) {
        let _ = crate::sys::create_dir_nofollow(common_dir, &dir);
    }
    real_dir(&dir).then_some(dir)
}

fn is_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The entry directory of `key`, when one is there (a real directory).
pub fn entry_dir(common_dir: &Path, key: &str) -> Option<PathBuf> {
    let dir = root(common_dir, false)?.join(key);
    std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir())
        .then_some(dir)
}

/// Mark the entry at `dir` used now (its mtime orders the least recently used).
pub fn touch(dir: &Path) {
    let now = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_NOW,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_NOW,
        },
    };
    let _ = rustix::fs::utimensat(
        rustix::fs::CWD,
        dir,
        &now,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    );
}

/// Remove the entry `name` (moved aside first, so no reader sees it half removed).
fn remove(cache: &Path, name: &str) {
    let Ok(fd) = sys::beneath_root(cache) else {
        return;
    };
    let aside = format!(".old-{}-{name}", std::process::id());
    if !name.starts_with('.') {
        if rustix::fs::renameat(&fd, name, &fd, aside.as_str()).is_ok() {
            let _ = sys::beneath_remove_tree(&fd, OsStr::new(&aside));
        }
        return;
    }
    let _ = sys::beneath_remove_tree(&fd, OsStr::new(name));
}

/// Drop the entry of `key` (damaged: the next store replaces it).
pub fn discard(common_dir: &Path, key: &str) {
    if let Some(cache) = root(common_dir, false) {
        remove(&cache, key);
    }
}

/// Store the `outputs` of `who`'s tree as the entry of `key`, unless a usable one is there;
/// says what was done. Outputs that name the tree are not stored (an error saying where).
pub fn store(
    common_dir: &Path,
    key: &str,
    who: &Tree<'_>,
    outputs: &[PathBuf],
    deadline: Instant,
) -> Result<String> {
    let cache = root(common_dir, true).context("the cache directory is not a directory")?;
    if let Some(dir) = entry_dir(common_dir, key) {
        if manifest::check(&dir, key).is_ok() {
            touch(&dir);
            return Ok("already stored".into());
        }
    }
    let finder = Finder::of(who)?;
    let tree = who.path;
    let tree_root = sys::beneath_root(tree)?;
    let mut listed = Vec::new();
    for out in outputs {
        if let Some(blocked) = sys::beneath_probe(&tree_root, out)? {
            anyhow::bail!("{}: {blocked}", out.display());
        }
        let present = sys::beneath_split(out).is_some_and(|(parent, name)| {
            matches!(sys::beneath_open_dir(&tree_root, parent, None), Ok(Ok(dir)) if sys::beneath_kind_at(&dir, name).is_some())
        });
        listed.push(Output {
            path: out
                .to_str()
                .context("an output's path is not UTF-8")?
                .to_owned(),
            present,
        });
    }
    let tmp_name = format!(".tmp-{}-{key}", std::process::id());
    let tmp = cache.join(&tmp_name);
    remove(&cache, &tmp_name);
    let written = write_entry(&tmp, key, tree, &finder, listed, deadline);
    let m = match written {
        Ok(m) => m,
        Err(e) => {
            remove(&cache, &tmp_name);
            return Err(e);
        }
    };
    let fd = sys::beneath_root(&cache)?;
    let (tmp_os, key_os) = (OsStr::new(&tmp_name), OsStr::new(key));
    if !sys::rename_noreplace(&fd, tmp_os, &fd, key_os)? {
        // Another card stored it meanwhile, or a damaged entry is in the way.
        if manifest::check(&cache.join(key), key).is_ok() {
            remove(&cache, &tmp_name);
            return Ok("already stored".into());
        }
        remove(&cache, key);
        if !sys::rename_noreplace(&fd, tmp_os, &fd, key_os)? {
            remove(&cache, &tmp_name);
            anyhow::bail!("another entry took its place");
        }
    }
    Ok(format!(
        "stored {} files, {}",
        m.copied(),
        crate::ground::human::size(m.bytes())
    ))
}

/// Make the entry of `key` from what `fill` writes into a new temporary directory (its
/// `files/`, and the manifest it returns), renamed into place whole: its manifest; `Ok(None)`
/// when `fill` found nothing. Nothing of a failed or empty fill is kept.
pub fn adopt(
    common_dir: &Path,
    key: &str,
    fill: impl FnOnce(&Path) -> Result<Option<Manifest>>,
) -> Result<Option<Manifest>> {
    let cache = root(common_dir, true).context("the cache directory is not a directory")?;
    let tmp_name = format!(".tmp-{}-{key}", std::process::id());
    let tmp = cache.join(&tmp_name);
    remove(&cache, &tmp_name);
    std::fs::create_dir(&tmp)?;
    let filled = fill(&tmp).and_then(|m| {
        let Some(m) = m else { return Ok(None) };
        crate::sys::write_atomic_new(&tmp, manifest::FILE, &serde_json::to_vec(&m)?)?;
        let fd = sys::beneath_root(&cache)?;
        if !sys::rename_noreplace(&fd, OsStr::new(&tmp_name), &fd, OsStr::new(key))? {
            anyhow::bail!("another entry took its place");
        }
        Ok(Some(m))
    });
    if !matches!(filled, Ok(Some(_))) {
        remove(&cache, &tmp_name);
    }
    filled
}

/// Write the entry under the temporary directory `tmp`: the outputs cloned into `files/`,
/// then the manifest of what is there, unless they hold what `finder` looks for.
fn write_entry(
    tmp: &Path,
    key: &str,
    tree: &Path,
    finder: &Finder,
    outputs: Vec<Output>,
    deadline: Instant,
) -> Result<Manifest> {
    let files = tmp.join("files");
    std::fs::create_dir(tmp)?;
    std::fs::create_dir(&files)?;
    let mut copier = Copier::new(tree, &files, Method::Auto, false, Some(deadline), None)?;
    for out in outputs.iter().filter(|o| o.present) {
        copier.path(Path::new(&out.path), None)?;
    }
    copier.finish()?;
    super::stop_check(deadline, "while storing prepare's outputs in the cache")?;
    let mut entries = manifest::scan(&files)?;
    manifest::seal(&files, &mut entries, finder)?;
    super::stop_check(deadline, "while storing prepare's outputs in the cache")?;
    let m = manifest::new(key, outputs, entries);
    crate::sys::write_atomic_new(tmp, manifest::FILE, &serde_json::to_vec(&m)?)?;
    Ok(m)
}

/// The entries, most recently used first.
pub fn list(common_dir: &Path) -> Vec<Shelved> {
    let Some(cache) = root(common_dir, false) else {
        return Vec::new();
    };
    let Ok(listing) = std::fs::read_dir(&cache) else {
        return Vec::new();
    };
    let mut out: Vec<Shelved> = listing
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok().filter(|n| is_key(n))?;
            let meta = std::fs::symlink_metadata(e.path())
                .ok()
                .filter(|m| m.is_dir())?;
            let m = Manifest::load(&e.path());
            Some(Shelved {
                key: name,
                used: u64::try_from(meta.mtime()).unwrap_or(0),
                used_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                files: m.as_ref().map(Manifest::copied),
                bytes: m.as_ref().map(Manifest::bytes),
            })
        })
        .collect();
    out.sort_by(|a, b| b.used_ns.cmp(&a.used_ns).then_with(|| a.key.cmp(&b.key)));
    out
}

/// Keep the `keep` most recently used entries and drop the rest, with what an interrupted
/// store or removal left (its process gone); returns the entries dropped.
pub fn trim(common_dir: &Path, keep: usize) -> Vec<Shelved> {
    let Some(cache) = root(common_dir, false) else {
        return Vec::new();
    };
    let dropped: Vec<Shelved> = list(common_dir).into_iter().skip(keep).collect();
    for s in &dropped {
        remove(&cache, &s.key);
    }
    for name in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
        let Ok(name) = name.file_name().into_string() else {
            continue;
        };
        if leftover_pid(&name).is_some_and(|pid| !crate::sys::process_exists(pid)) {
            remove(&cache, &name);
        }
    }
    dropped
}

/// The process that made `name`, when it is what a store or removal leaves while it works
/// (`.tmp-<pid>-<key>`, `.old-<pid>-<key>`).
pub fn leftover_pid(name: &str) -> Option<i32> {
    let rest = [".tmp-", ".old-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    let (pid, key) = rest.split_once('-')?;
    is_key(key).then(|| pid.parse().ok())?
}

/// Remove the leftover `name` (see [`leftover_pid`]) from the cache directory.
pub fn drop_leftover(common_dir: &Path, name: &str) {
    if let (Some(cache), Some(_)) = (root(common_dir, false), leftover_pid(name)) {
        remove(&cache, name);
    }
}

/// gc's part: the entries kept, and those beyond the bound (dropped when applied).
#[derive(Debug, Default, serde::Serialize)]
pub struct Tidy {
    pub kept: Vec<Shelved>,
    pub dropped: Vec<Shelved>,
    /// The bound: `prepare.cache_entries`, or 0 when the rules name no outputs.
    pub bound: usize,
}

impl Tidy {
    /// Report the cache under `common_dir` against a bound of `bound` entries; with `apply`,
    /// drop those beyond it.
    pub fn run(common_dir: &Path, bound: usize, apply: bool) -> Tidy {
        let dropped = if apply {
            trim(common_dir, bound)
        } else {
            list(common_dir).into_iter().skip(bound).collect()
        };
        let kept = list(common_dir)
            .into_iter()
            .filter(|s| !dropped.iter().any(|d| d.key == s.key))
            .collect();
        Tidy {
            kept,
            dropped,
            bound,
        }
    }

    /// One line per entry, for gc's text output.
    pub fn lines(&self, applied: bool) -> Vec<String> {
        let describe = |s: &Shelved| match (s.files, s.bytes) {
            (Some(f), Some(b)) => format!(
                "{f} files, {}, last used {}",
                crate::ground::human::size(b),
                crate::sys::rfc3339(s.used)
            ),
            _ => "damaged (no readable manifest)".to_owned(),
        };
        let verb = if applied { "dropped" } else { "would drop" };
        let kept = self
            .kept
            .iter()
            .map(|s| format!("kept prepare cache {}: {}", &s.key[..12], describe(s)));
        let dropped = self.dropped.iter().map(|s| {
            format!(
                "{verb} prepare cache {}: {}; beyond the {} entries prepare.cache_entries keeps",
                &s.key[..12],
                describe(s),
                self.bound
            )
        });
        kept.chain(dropped).collect()
    }
}
