//! The prepare cache shared through an S3-compatible object store (`prepare.cache_remote`).
//! Files are stored once by content, shared between entries: small ones packed
//! (`packs/sha256/<ab>/<hash of the pack>`, see [`packs`]), large ones alone
//! (`blobs/sha256/<ab>/<hash>`); each entry as a manifest (`entries/<platform>/<key>.json`,
//! platform: operating system, architecture, C library) listing every path, kind, mode, size,
//! hash and link target, and its packs. On a local miss the manifest, then its packs and blobs
//! a few at once, are fetched into a new local entry and a second directory (the tree's
//! staging), each file checked against its size and hash as it arrives: anything missing,
//! truncated, altered or unsafe (a path leaving the entry, a file beneath a symlink, a mode
//! beyond the permission bits, a pack that does not add up) is a miss, and nothing of it is
//! kept. A machine whose user or CI opts in writes: packs and blobs first, each only where
//! missing, then the manifest, never overwriting one (create-only PUTs).
//! The stored document is an envelope (`format`, `body`: the manifest's JSON as text, and
//! `signatures` over those exact bytes): the writer signs with its user's key, and a reader
//! uses an entry only when a signature verifies under a key its user trusts; an entry unsigned,
//! signed by no one trusted or whose signature does not match is a miss, checked before
//! anything of it is read or written (whoever can write the store cannot poison the cache).
//!
//! | file | one job |
//! |---|---|
//! | `creds` | the machine's credentials |
//! | `keys` | this user's signing key and the signers it trusts |
//! | `packs` | small files packed into a few objects, and unpacked as they arrive |
//! | `s3` | GET, HEAD and create-only PUT against the store |
//! | `signed` | signing a manifest, and accepting only trusted signatures |
//! | `sigv4` | signing a request |
//! | `transfers` | transfers on threads, waited for so that Ctrl-C and the deadline stop them at once |
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::manifest::{Kind, Manifest};
use crate::config::CacheRemote;

mod creds;
pub(crate) mod keys;
mod packs;
mod s3;
mod signed;
mod sigv4;
mod transfers;

/// The envelope's format: 2 added packs (an older reader finds it of another format: a miss).
const FORMAT: u32 = 2;
/// The oldest format read (1: every file a blob).
const OLDEST: u32 = 1;
/// Fetches at once (a few connections keep a store's bandwidth busy while each writes its files).
const TRANSFERS: usize = 4;
/// Uploads at once (a pack is held in memory while it goes up: at most this many packs).
const UPLOADS: usize = 4;
/// Connections kept open for the next request.
const CONNECTIONS: usize = 8;
/// The largest manifest read.
const MAX_MANIFEST: u64 = 256 << 20;

/// The document stored per entry.
#[derive(Serialize, Deserialize)]
struct Envelope {
    format: u32,
    /// The [`Published`] JSON, as the exact bytes a signature covers.
    body: String,
    /// Signatures over `body`.
    #[serde(default)]
    signatures: Vec<signed::Signature>,
}

#[derive(Serialize, Deserialize)]
struct Published {
    platform: String,
    manifest: Manifest,
    /// Where the small files are; a file in none is a blob of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    packs: Vec<packs::Pack>,
}

/// The remote of a cache: where, for which platform, and whether this machine writes.
pub struct Remote {
    store: s3::Store,
    platform: String,
    pub write: bool,
}

impl Remote {
    pub fn new(remote: &CacheRemote, write: bool, deadline: Instant) -> Remote {
        Remote {
            store: s3::Store::new(remote, deadline),
            platform: platform(),
            write,
        }
    }

    /// Where the store is, for messages.
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    /// Does the store answer this machine (a `HEAD` of an entry that need not exist: found or
    /// not found is an answer)? `Err`: what it answered instead, or why it did not.
    pub fn answers(&self) -> Result<()> {
        self.store
            .exists(&self.manifest_name("kardwt-doctor"))
            .map(|_| ())
    }

    fn manifest_name(&self, key: &str) -> String {
        format!("entries/{}/{key}.json", self.platform)
    }

    /// Fetch the entry of `key` into `tmp` (an empty directory of kardwt's own): its files
    /// beneath `tmp/files` and beneath `also` (another), each checked as it arrives; the
    /// manifest of what was written, `None` when the store has no entry. `Err`: why it cannot
    /// be used (nothing of it is to be kept in either).
    pub fn fetch(
        &self,
        key: &str,
        outputs: &[String],
        tmp: &Path,
        also: &Path,
    ) -> Result<Option<Manifest>> {
        let (store, name) = (self.store.clone(), self.manifest_name(key));
        let got = transfers::one(self.deadline(), FETCHING, move || {
            store.get(&name, MAX_MANIFEST)
        })?;
        let Some(bytes) = got else {
            return Ok(None);
        };
        let envelope: Envelope =
            serde_json::from_slice(&bytes).context("its manifest is not one kardwt wrote")?;
        if !(OLDEST..=FORMAT).contains(&envelope.format) {
            bail!(
                "its manifest is of format {}, not {FORMAT}",
                envelope.format
            );
        }
        let trusted = keys::trusted().context("cannot read the signers this machine trusts")?;
        signed::check(&envelope.body, &envelope.signatures, &trusted)?;
        let published: Published = serde_json::from_str(&envelope.body)
            .context("its manifest's body is not one kardwt wrote")?;
        let m = &published.manifest;
        if published.platform != self.platform || m.key != key || !m.is_current() {
            bail!("its manifest names another key, platform or version");
        }
        let listed: Vec<&str> = m.outputs.iter().map(|o| o.path.as_str()).collect();
        if listed != outputs {
            bail!("its manifest names other outputs");
        }
        safe(m)?;
        let files = tmp.join("files");
        std::fs::create_dir(&files)?;
        let roots = [files, also.to_path_buf()];
        // Directories and links in order (a parent before its children), each root on a
        // thread of its own, then the files, several at once.
        std::thread::scope(|scope| {
            let other = std::thread::Builder::new().spawn_scoped(scope, || skeleton(m, &roots[1]));
            let mine = skeleton(m, &roots[0]);
            let theirs = match other {
                Ok(handle) => handle.join().unwrap_or_else(|_| bail!("a thread failed")),
                Err(_) => skeleton(m, &roots[1]),
            };
            mine.and(theirs)
        })?;
        crate::ground::trace::phase("prepare cache: manifest accepted");
        let wanted = packs::transfers(m, &published.packs, &roots)?;
        // One file per output where the entry and the tree share a file system: the tree's
        // copy is a hard link to the entry's, made once the content is checked.
        let link = links_work(tmp, also);
        let (store, into) = (self.store.clone(), roots.clone());
        transfers::at_once(wanted, TRANSFERS, self.deadline(), FETCHING, move |t| {
            packs::fetch(&store, t, &into, link)
        })?;
        for e in m.entries.iter().rev().filter(|e| e.kind == Kind::Dir) {
            for root in &roots {
                let perms = std::fs::Permissions::from_mode(e.mode);
                std::fs::set_permissions(root.join(&e.path), perms)?;
            }
        }
        Ok(Some(published.manifest))
    }

    fn deadline(&self) -> Instant {
        self.store.deadline()
    }

    /// Upload the local entry at `dir` (its manifest `m`): the blobs the store lacks, then the
    /// manifest unless one is there. Says what was done.
    /// Outputs that name one of `machine` (where this machine keeps its clone) are not
    /// uploaded: another machine's clone is elsewhere.
    pub fn publish(&self, dir: &Path, m: &Manifest, machine: &[String]) -> Result<String> {
        let name = self.manifest_name(&m.key);
        let deadline = self.deadline();
        let (store, head) = (self.store.clone(), name.clone());
        if transfers::one(deadline, UPLOADING, move || store.exists(&head))? {
            return Ok("already on the remote".to_owned());
        }
        names_none(&dir.join("files"), m, machine)?;
        // The key first: without one nothing is uploaded.
        let key = keys::own(true)?.context("no signing key")?;
        let (packed, solo) = packs::plan(m)?;
        let jobs: Vec<Upload> = (packed.into_iter().enumerate())
            .map(|(i, p)| Upload::Pack(i, p))
            .chain(solo.into_iter().map(Upload::Blob))
            .collect();
        let listed = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let sent = Arc::new((AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)));
        let (store, files) = (self.store.clone(), dir.join("files"));
        let (counts, into) = (Arc::clone(&sent), Arc::clone(&listed));
        transfers::at_once(jobs, UPLOADS, deadline, UPLOADING, move |job| {
            let (contents, bytes) = match job {
                Upload::Blob(c) => (1, upload_file(&store, c, &files)?),
                Upload::Pack(i, p) => {
                    let (pack, bytes) = upload_pack(&store, p, &files)?;
                    if let Ok(mut l) = into.lock() {
                        l.insert(*i, pack);
                    }
                    (p.len() as u64, bytes)
                }
            };
            if let Some(bytes) = bytes {
                counts.0.fetch_add(contents, Ordering::Relaxed);
                counts.1.fetch_add(bytes, Ordering::Relaxed);
                counts.2.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })?;
        let (sent, bytes, objects) = (
            sent.0.load(Ordering::Relaxed),
            sent.1.load(Ordering::Relaxed),
            sent.2.load(Ordering::Relaxed),
        );
        let packs: Vec<packs::Pack> = match listed.lock() {
            Ok(mut l) => std::mem::take(&mut *l).into_values().collect(),
            Err(_) => bail!("an upload stopped"),
        };
        let body = serde_json::to_string(&Published {
            platform: self.platform.clone(),
            manifest: m.clone(),
            packs,
        })?;
        let signatures = vec![signed::sign(&body, &key)];
        let doc = serde_json::to_vec(&Envelope {
            format: FORMAT,
            body,
            signatures,
        })?;
        let store = self.store.clone();
        let put = transfers::one(deadline, UPLOADING, move || {
            let hash = sigv4::sha256_hex(&doc);
            store.put_new(&name, &doc[..], &hash)
        })?;
        let files = format!(
            "{sent} new files ({}, {objects} object{})",
            crate::ground::human::size(bytes),
            if objects == 1 { "" } else { "s" }
        );
        Ok(match put {
            s3::Put::Created => format!("uploaded {files} and the manifest"),
            s3::Put::Exists => format!("uploaded {files}; another machine's manifest was there"),
        })
    }
}

/// Can a file made beneath `from` be hard-linked beneath `to` (one file system, links allowed)?
/// Tried with a probe file of kardwt's own, removed again either way.
fn links_work(from: &Path, to: &Path) -> bool {
    let (probe, link) = (
        from.join(".kardwt-link-probe"),
        to.join(".kardwt-link-probe"),
    );
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    let linked = made && std::fs::hard_link(&probe, &link).is_ok();
    if linked {
        let _ = std::fs::remove_file(&link);
    }
    if made {
        let _ = std::fs::remove_file(&probe);
    }
    linked
}

/// Make the directories and symlinks `m` lists beneath `root`, a parent before its children.
fn skeleton(m: &Manifest, root: &Path) -> Result<()> {
    for e in m.entries.iter().filter(|e| e.kind != Kind::File) {
        let at = root.join(&e.path);
        match e.kind {
            Kind::Dir => std::fs::create_dir(&at)?,
            _ => std::os::unix::fs::symlink(e.target.as_deref().unwrap_or(""), &at)?,
        }
    }
    Ok(())
}

/// What a transfer stopped by a signal or the deadline was doing.
const FETCHING: &str = "while fetching prepare's outputs";
const UPLOADING: &str = "while uploading prepare's outputs";

/// One upload: a pack (its place among the packs, its contents) or one content alone.
enum Upload {
    Pack(usize, Vec<packs::Content>),
    Blob(packs::Content),
}

/// Upload the pack of `contents` (read from the stored files beneath `files`) unless the
/// store has it: the pack as listed, and the bytes sent, `None` when none were.
fn upload_pack(
    store: &s3::Store,
    contents: &[packs::Content],
    files: &Path,
) -> Result<(packs::Pack, Option<u64>)> {
    let (bytes, hash) = packs::build(contents, files)?;
    let name = packs::pack_name(&hash);
    let sent = if store.exists(&name)? {
        None
    } else {
        match store.put_new(&name, &bytes[..], &hash)? {
            s3::Put::Created => Some(bytes.len() as u64),
            s3::Put::Exists => None,
        }
    };
    Ok((packs::listed(contents, hash), sent))
}

/// Upload the content `c` (read from its first stored file beneath `files`) unless the store
/// has its blob: checked against its hash as it is read, then streamed to the store. The bytes
/// sent, `None` when none were.
fn upload_file(store: &s3::Store, c: &packs::Content, files: &Path) -> Result<Option<u64>> {
    let (hash, path) = (c.sha256.as_str(), &c.files[0].0);
    let blob = packs::blob_name(hash);
    if store.exists(&blob)? {
        return Ok(None);
    }
    let cannot = || format!("cannot read the stored {path}");
    let mut file = crate::sys::open_regular_nofollow(&files.join(path)).with_context(cannot)?;
    let mut h = Sha256::new();
    let read = std::io::copy(&mut file, &mut HashWriter(&mut h)).with_context(cannot)?;
    if read != c.size || sigv4::hex(&h.finalize()) != hash {
        bail!("the stored {path} changed since it was stored");
    }
    std::io::Seek::rewind(&mut file).with_context(cannot)?;
    match store.put_new(&blob, file, hash)? {
        s3::Put::Created => Ok(Some(read)),
        s3::Put::Exists => Ok(None),
    }
}

/// Refuse the entry when a name, a symlink's target or a file beneath `files` holds one of
/// `paths` (each file read once, a match across two reads seen).
fn names_none(files: &Path, m: &Manifest, paths: &[String]) -> Result<()> {
    use std::io::Read as _;
    let Ok(finder) = aho_corasick::AhoCorasick::new(paths) else {
        bail!("cannot search the outputs for this machine's paths");
    };
    let named = |what: &str, path: &str, i: usize| {
        anyhow::anyhow!(
            "{what} {path} names {}, where this machine keeps its clone: another machine's is elsewhere",
            paths[i]
        )
    };
    let keep = paths.iter().map(String::len).max().unwrap_or(1).max(1) - 1;
    let mut buf = vec![0u8; keep + (256 << 10)];
    for e in &m.entries {
        let target = e.target.as_deref().unwrap_or_default();
        for (what, text) in [
            ("the path", e.path.as_str()),
            ("the symlink target of", target),
        ] {
            if let Some(hit) = finder.find(text) {
                return Err(named(what, &e.path, hit.pattern().as_usize()));
            }
        }
        if e.kind != Kind::File {
            continue;
        }
        let mut file = crate::sys::open_regular_nofollow(&files.join(&e.path))
            .with_context(|| format!("cannot read the stored {}", e.path))?;
        let mut held = 0;
        loop {
            let n = file.read(&mut buf[held..])?;
            if n == 0 {
                break;
            }
            let len = held + n;
            if let Some(hit) = finder.find(&buf[..len]) {
                return Err(named("the file", &e.path, hit.pattern().as_usize()));
            }
            let tail = len.min(keep);
            buf.copy_within(len - tail..len, 0);
            held = tail;
        }
    }
    Ok(())
}

/// Bytes written into it are hashed, and go nowhere else.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `<os>-<arch>-<C library>`: outputs are shared only between machines alike in these.
fn platform() -> String {
    let libc = if std::env::consts::OS != "linux" {
        "system"
    } else if std::fs::read_dir("/lib").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("ld-musl-"))
    }) {
        "musl"
    } else {
        "gnu"
    };
    format!("{}-{}-{libc}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Refuse a manifest whose entries could write outside the entry or through a symlink: every
/// path plain and relative, sorted without repeats, its parent a directory listed before it,
/// beneath an output; files with a hash; modes within the permission bits.
fn safe(m: &Manifest) -> Result<()> {
    let mut dirs = BTreeSet::new();
    let mut last: Option<&str> = None;
    for e in &m.entries {
        let p = Path::new(&e.path);
        let plain = !e.path.is_empty()
            && !e.path.ends_with('/')
            && !e.path.contains("//")
            && p.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || last.is_some_and(|l| l >= e.path.as_str()) {
            bail!("its manifest lists an unsafe or unsorted path");
        }
        last = Some(&e.path);
        // An output, a directory above one, or beneath a directory listed before it.
        let output = m.outputs.iter().filter(|o| o.present).any(|o| {
            let o = Path::new(&o.path);
            o == p || p.starts_with(o) || (e.kind == Kind::Dir && o.starts_with(p))
        });
        let parent_ok = output
            && e.path
                .rsplit_once('/')
                .is_none_or(|(parent, _)| dirs.contains(parent));
        if !parent_ok {
            bail!("its manifest lists {} outside a listed directory", e.path);
        }
        let hash_ok = e.sha256.as_deref().is_some_and(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        match e.kind {
            Kind::Dir => {
                dirs.insert(e.path.as_str());
            }
            Kind::File if !hash_ok => bail!("its manifest lacks {}'s hash", e.path),
            Kind::Link if e.target.is_none() => bail!("its manifest lacks {}'s target", e.path),
            _ => {}
        }
        if e.mode & !0o777 != 0 {
            bail!("its manifest gives {} special mode bits", e.path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::manifest::{self, Entry, Output};
    use super::*;

    fn entry(path: &str, kind: Kind) -> Entry {
        Entry {
            path: path.into(),
            kind,
            mode: if kind == Kind::Link { 0 } else { 0o755 },
            size: 0,
            target: (kind == Kind::Link).then(|| "x".to_owned()),
            sha256: (kind == Kind::File).then(|| "ab".repeat(32)),
        }
    }

    fn with(entries: Vec<Entry>) -> Manifest {
        let outputs = vec![Output {
            path: "sub/node_modules".into(),
            present: true,
        }];
        manifest::new("k", outputs, entries)
    }

    fn good() -> Vec<Entry> {
        vec![
            entry("sub", Kind::Dir),
            entry("sub/node_modules", Kind::Dir),
            entry("sub/node_modules/a", Kind::File),
            entry("sub/node_modules/l", Kind::Link),
        ]
    }

    #[test]
    fn a_manifest_that_could_write_outside_its_entry_is_refused() {
        safe(&with(good())).unwrap();
        let refused = |change: &dyn Fn(&mut Vec<Entry>)| {
            let mut e = good();
            change(&mut e);
            let why = safe(&with(e)).unwrap_err().to_string();
            assert!(why.starts_with("its manifest"), "{why}");
        };
        // Leaving the entry, or naming it oddly.
        for bad in [
            "sub/node_modules/../../x",
            "/etc/x",
            "sub/node_modules/./a",
            "sub//node_modules/b",
            "",
        ] {
            refused(&|e| e.push(entry(bad, Kind::File)));
        }
        // A file beneath a symlink (written through it), or beneath an unlisted directory.
        refused(&|e| e.push(entry("sub/node_modules/l/x", Kind::File)));
        refused(&|e| e.push(entry("sub/node_modules/d/x", Kind::File)));
        // Outside every output, though beneath a listed directory.
        refused(&|e| e.insert(1, entry("sub/elsewhere", Kind::File)));
        // Unsorted or repeated paths.
        refused(&|e| e.swap(2, 3));
        refused(&|e| e.push(entry("sub/node_modules/l", Kind::Link)));
        // A file without a hash, a link without a target, special mode bits.
        refused(&|e| e[2].sha256 = Some("zz".into()));
        refused(&|e| e[3].target = None);
        refused(&|e| e[2].mode = 0o4755);
    }
}
