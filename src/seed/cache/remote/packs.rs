//! Packs: the small files of a shared entry travel as a few large objects, not one request
//! each. A pack is the contents of small files (each distinct content once) one after the
//! other, stored as `packs/sha256/<ab>/<hash of the pack's bytes>`, so packs are shared between
//! entries only where their bytes are the same; the manifest lists each pack's name, size and
//! the contents it holds in order (each content's size is the manifest's, so where each one
//! starts follows). Files of [`SOLO`] bytes or more stay single blobs; empty files travel in
//! the manifest alone. Where packs are cut depends on the contents, not on their positions
//! (a pack ends after a content whose hash says so, once the pack holds [`PACK_MIN`] bytes), so
//! an entry that differs from another in a few files shares most of its packs.
//! Reading streams a pack through the files of each content as it arrives, each checked
//! against its size and hash before the next begins: a pack cut short, too long or with one
//! byte changed fails the fetch.
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::manifest::{Kind, Manifest};
use super::{s3, sigv4};

/// Files this large or larger are single blobs.
pub const SOLO: u64 = 256 << 10;
/// A pack ends after a content whose hash says so once it holds this many bytes…
const PACK_MIN: u64 = 4 << 20;
/// …and after any content once it holds this many.
const PACK_MAX: u64 = 16 << 20;
/// The SHA-256 of no bytes.
pub const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// One pack as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pack {
    /// SHA-256 of the pack's bytes (its name).
    pub sha256: String,
    pub size: u64,
    /// The contents it holds, by SHA-256, in order.
    pub holds: Vec<String>,
}

/// One content to write: its hash and size, and the files that hold it (path, mode).
#[derive(Debug, Clone)]
pub struct Content {
    pub sha256: String,
    pub size: u64,
    pub files: Vec<(String, u32)>,
}

/// What a fetch transfers: a pack (its contents in order) or one blob.
#[derive(Debug)]
pub enum Transfer {
    Pack { pack: Pack, contents: Vec<Content> },
    Blob(Content),
}

impl Transfer {
    pub fn bytes(&self) -> u64 {
        match self {
            Transfer::Pack { pack, .. } => pack.size,
            Transfer::Blob(c) => c.size,
        }
    }
}

pub fn pack_name(hash: &str) -> String {
    format!("packs/sha256/{}/{hash}", hash.get(..2).unwrap_or("00"))
}

pub fn blob_name(hash: &str) -> String {
    format!("blobs/sha256/{}/{hash}", hash.get(..2).unwrap_or("00"))
}

/// Each distinct content of `m`'s files, in the order of its first file.
fn contents(m: &Manifest) -> Result<Vec<Content>> {
    let mut order: Vec<Content> = Vec::new();
    let mut at: BTreeMap<&str, usize> = BTreeMap::new();
    for e in m.entries.iter().filter(|e| e.kind == Kind::File) {
        let hash = e.sha256.as_deref().context("a file without a hash")?;
        match at.get(hash) {
            Some(&i) if order[i].size != e.size => {
                bail!("its manifest lists one content at two sizes ({})", e.path)
            }
            Some(&i) => order[i].files.push((e.path.clone(), e.mode)),
            None => {
                at.insert(hash, order.len());
                order.push(Content {
                    sha256: hash.to_owned(),
                    size: e.size,
                    files: vec![(e.path.clone(), e.mode)],
                });
            }
        }
    }
    Ok(order)
}

/// The writer's plan: the small contents of `m` cut into packs (each a list of contents), and
/// the contents that go up alone. Empty contents are in neither.
pub fn plan(m: &Manifest) -> Result<(Vec<Vec<Content>>, Vec<Content>)> {
    let (mut packs, mut solo, mut open, mut held) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for c in contents(m)? {
        if c.size == 0 {
            continue;
        }
        if c.size >= SOLO {
            solo.push(c);
            continue;
        }
        held += c.size;
        let cut = held >= PACK_MAX || (held >= PACK_MIN && c.sha256.ends_with('0'));
        open.push(c);
        if cut {
            packs.push(std::mem::take(&mut open));
            held = 0;
        }
    }
    if !open.is_empty() {
        packs.push(open);
    }
    Ok((packs, solo))
}

/// The reader's transfers for `m` whose small files are in `packs`, largest first, after
/// checking that the packs add up: each pack's name a hash, its size the sum of its contents'
/// sizes, each content a file's of `m`, not empty, in one pack at most. Empty files are
/// created beneath each of `roots` here. `Err`: why the manifest cannot be used.
pub fn transfers(m: &Manifest, packs: &[Pack], roots: &[PathBuf]) -> Result<Vec<Transfer>> {
    let mut left: BTreeMap<String, Content> = contents(m)?
        .into_iter()
        .map(|c| (c.sha256.clone(), c))
        .collect();
    let mut out = Vec::new();
    let mut named = BTreeSet::new();
    for p in packs {
        if !is_hash(&p.sha256) || !named.insert(p.sha256.as_str()) {
            bail!("its manifest names a pack oddly or twice");
        }
        let mut held = Vec::with_capacity(p.holds.len());
        for h in &p.holds {
            match left.remove(h) {
                Some(c) if c.size > 0 => held.push(c),
                _ => bail!("its manifest packs a content no file has, an empty one, or one twice"),
            }
        }
        let sum = held.iter().try_fold(0u64, |s, c| s.checked_add(c.size));
        if sum != Some(p.size) || held.is_empty() {
            bail!(
                "its manifest's pack {} does not add up ({} bytes listed)",
                short(&p.sha256),
                p.size
            );
        }
        out.push(Transfer::Pack {
            pack: p.clone(),
            contents: held,
        });
    }
    for (_, c) in left {
        if c.size > 0 {
            out.push(Transfer::Blob(c));
        } else if c.sha256 != EMPTY {
            bail!(
                "its manifest lists {} as empty with another hash",
                c.files[0].0
            );
        } else {
            for (path, mode) in &c.files {
                for root in roots {
                    let file = create(&root.join(path))?;
                    file.set_permissions(std::fs::Permissions::from_mode(*mode))?;
                }
            }
        }
    }
    out.sort_by_key(|t| std::cmp::Reverse(t.bytes()));
    Ok(out)
}

fn is_hash(h: &str) -> bool {
    h.len() == 64
        && h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn create(at: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(at)
}

/// Fetch `t` from `store` into the files beneath each of `roots` (each created new), checking
/// every content's size and hash as it arrives. With `link`, only the files beneath the first
/// root are written; each is hard-linked beneath the others once its content is checked and its
/// mode set (one file created per output, not one per root).
pub fn fetch(store: &s3::Store, t: &Transfer, roots: &[PathBuf], link: bool) -> Result<()> {
    let (name, contents, first) = match t {
        Transfer::Pack { pack, contents } => (
            pack_name(&pack.sha256),
            contents.as_slice(),
            &contents[0].files[0].0,
        ),
        Transfer::Blob(c) => (blob_name(&c.sha256), std::slice::from_ref(c), &c.files[0].0),
    };
    let mut w = Unpacker {
        contents,
        roots,
        link,
        at: 0,
        left: 0,
        hash: Sha256::new(),
        open: Vec::new(),
    };
    let got = store
        .get_into(&name, t.bytes(), &mut |chunk| w.write(chunk))?
        .with_context(|| format!("{first}'s content is missing from the store"))?;
    w.next()?;
    if w.at < contents.len() {
        let path = &contents[w.at].files[0].0;
        match t {
            Transfer::Blob(c) => bail!("{path}'s content is truncated ({got} of {} bytes)", c.size),
            Transfer::Pack { pack, .. } => bail!(
                "{path}'s content is truncated (its pack {} ended after {got} of {} bytes)",
                short(&pack.sha256),
                pack.size
            ),
        }
    }
    Ok(())
}

/// Writes a stream of contents, one after the other, into their files.
struct Unpacker<'a> {
    contents: &'a [Content],
    roots: &'a [PathBuf],
    /// Write beneath the first root only, and link the checked files beneath the others.
    link: bool,
    /// The content being written (`contents.len()` once all are).
    at: usize,
    /// Its bytes still to come.
    left: u64,
    hash: Sha256,
    /// Its files beneath each root, open (empty before it starts).
    open: Vec<File>,
}

impl Unpacker<'_> {
    /// Check the content just written, and open the next one's files.
    fn next(&mut self) -> Result<()> {
        if self.left > 0 || self.at >= self.contents.len() {
            return Ok(());
        }
        if !self.open.is_empty() {
            let c = &self.contents[self.at];
            let hash = std::mem::replace(&mut self.hash, Sha256::new()).finalize();
            if sigv4::hex(&hash) != c.sha256 {
                bail!("{}'s content does not match its hash", c.files[0].0);
            }
            let written = self.written().len();
            let modes = c.files.iter().flat_map(|f| (0..written).map(|_| f.1));
            for (file, mode) in self.open.drain(..).zip(modes) {
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            if self.link {
                for (path, _) in &c.files {
                    for root in &self.roots[1..] {
                        std::fs::hard_link(self.roots[0].join(path), root.join(path))
                            .with_context(|| format!("cannot link {path} into the tree"))?;
                    }
                }
            }
            self.at += 1;
            if self.at == self.contents.len() {
                return Ok(());
            }
        }
        let c = &self.contents[self.at];
        for (path, _) in &c.files {
            for i in 0..self.written().len() {
                let file = create(&self.roots[i].join(path))?;
                self.open.push(file);
            }
        }
        self.left = c.size;
        Ok(())
    }

    /// The roots whose files are written (the others get links).
    fn written(&self) -> &[PathBuf] {
        match self.link {
            true => &self.roots[..self.roots.len().min(1)],
            false => self.roots,
        }
    }

    fn write(&mut self, mut chunk: &[u8]) -> Result<()> {
        while !chunk.is_empty() {
            self.next()?;
            if self.at >= self.contents.len() {
                bail!("more bytes than listed");
            }
            let n = usize::try_from(self.left).map_or(chunk.len(), |l| l.min(chunk.len()));
            let (now, rest) = chunk.split_at(n);
            self.hash.update(now);
            for f in &mut self.open {
                f.write_all(now)?;
            }
            self.left -= n as u64;
            chunk = rest;
        }
        self.next()
    }
}

/// The bytes of the pack of `contents`, read from the stored files beneath `files`, each
/// checked against its hash as it is read; and the pack's hash.
pub fn build(contents: &[Content], files: &Path) -> Result<(Vec<u8>, String)> {
    let total: u64 = contents.iter().map(|c| c.size).sum();
    let mut bytes = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for c in contents {
        let path = &c.files[0].0;
        let cannot = || format!("cannot read the stored {path}");
        let mut file = crate::sys::open_regular_nofollow(&files.join(path)).with_context(cannot)?;
        let start = bytes.len();
        file.read_to_end(&mut bytes).with_context(cannot)?;
        let read = &bytes[start..];
        if read.len() as u64 != c.size || sigv4::hex(&Sha256::digest(read)) != c.sha256 {
            bail!("the stored {path} changed since it was stored");
        }
    }
    let hash = sigv4::sha256_hex(&bytes);
    Ok((bytes, hash))
}

/// The pack listed for `contents` whose bytes hash to `hash`.
pub fn listed(contents: &[Content], hash: String) -> Pack {
    Pack {
        size: contents.iter().map(|c| c.size).sum(),
        holds: contents.iter().map(|c| c.sha256.clone()).collect(),
        sha256: hash,
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::manifest::{self, Entry, Output};
    use super::*;

    fn file(path: &str, body: &[u8]) -> Entry {
        Entry {
            path: path.into(),
            kind: Kind::File,
            mode: 0o644,
            size: body.len() as u64,
            target: None,
            sha256: Some(sigv4::sha256_hex(body)),
        }
    }

    fn with(entries: Vec<Entry>) -> Manifest {
        let outputs = vec![Output {
            path: "n".into(),
            present: true,
        }];
        manifest::new("k", outputs, entries)
    }

    #[test]
    fn small_contents_are_packed_once_each_large_ones_alone_empty_ones_not_at_all() {
        let big = vec![7u8; SOLO as usize];
        let m = with(vec![
            file("n/a", b"one"),
            file("n/b", b"two"),
            file("n/big", &big),
            file("n/c", b"one"),
            file("n/empty", b""),
        ]);
        let (packed, solo) = plan(&m).unwrap();
        let names = |cs: &[Content]| -> Vec<Vec<String>> {
            cs.iter()
                .map(|c| c.files.iter().map(|f| f.0.clone()).collect())
                .collect()
        };
        assert_eq!(packed.len(), 1);
        assert_eq!(names(&packed[0]), [vec!["n/a", "n/c"], vec!["n/b"]]);
        assert_eq!(names(&solo), [vec!["n/big"]]);
        // Many small contents: packs of at least PACK_MIN bytes (but the last), at most
        // PACK_MAX, cut where the contents say, so the same contents cut the same way after
        // one more content in front.
        let body = |i: usize| {
            let mut b = format!("{i:06}").into_bytes();
            b.resize(100_000, b'.');
            b
        };
        let many: Vec<Entry> = (0..400)
            .map(|i| file(&format!("n/f{i:03}"), &body(i)))
            .collect();
        let (packed, _) = plan(&with(many.clone())).unwrap();
        let sizes: Vec<u64> = packed
            .iter()
            .map(|p| p.iter().map(|c| c.size).sum())
            .collect();
        assert!(sizes.len() > 2, "{sizes:?}");
        for s in &sizes[..sizes.len() - 1] {
            assert!((PACK_MIN..=PACK_MAX).contains(s), "{sizes:?}");
        }
        let mut more = vec![file("n/e", &body(1000))];
        more.extend(many);
        let (again, _) = plan(&with(more)).unwrap();
        let hashes = |p: &Vec<Content>| p.iter().map(|c| c.sha256.clone()).collect::<Vec<_>>();
        let shared = again
            .iter()
            .filter(|p| packed.iter().any(|q| hashes(q) == hashes(p)))
            .count();
        assert!(shared + 2 >= packed.len(), "{shared} of {}", packed.len());
    }

    fn pack_of(m: &Manifest) -> (Pack, Vec<u8>) {
        let (packed, _) = plan(m).unwrap();
        // The test's bodies are their paths' last letter, repeated.
        let bytes: Vec<u8> = packed[0]
            .iter()
            .flat_map(|c| {
                let letter = *c.files[0].0.as_bytes().last().unwrap();
                vec![letter; c.size as usize]
            })
            .collect();
        let hash = sigv4::sha256_hex(&bytes);
        (listed(&packed[0], hash), bytes)
    }

    #[test]
    fn a_pack_that_does_not_add_up_is_refused_before_anything_is_written() {
        let m = with(vec![file("n/a", b"aaa"), file("n/b", b"bb")]);
        let dir = tempfile::tempdir().unwrap();
        let roots = [dir.path().to_path_buf()];
        let (good, _) = pack_of(&m);
        assert_eq!(
            transfers(&m, std::slice::from_ref(&good), &roots)
                .unwrap()
                .len(),
            1
        );
        // Without packs every content is a blob (the first format).
        assert_eq!(transfers(&m, &[], &roots).unwrap().len(), 2);
        let refused = |change: &dyn Fn(&mut Vec<Pack>)| {
            let mut packs = vec![good.clone()];
            change(&mut packs);
            let why = transfers(&m, &packs, &roots).unwrap_err().to_string();
            assert!(why.starts_with("its manifest"), "{why}");
        };
        refused(&|p| p[0].size += 1);
        refused(&|p| p[0].size -= 1);
        refused(&|p| {
            let again = p[0].holds[0].clone();
            p[0].holds.push(again);
        });
        refused(&|p| p[0].holds[0] = "ab".repeat(32));
        refused(&|p| p[0].sha256 = "zz".into());
        refused(&|p| {
            let again = p[0].clone();
            p.push(again);
        });
        refused(&|p| {
            let mut second = p[0].clone();
            second.sha256 = "cd".repeat(32);
            p.push(second);
        });
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_pack_is_written_only_as_listed_byte_for_byte() {
        let m = with(vec![
            file("a", b"aaaa"),
            file("b", b"bb"),
            file("c", b"aaaa"),
        ]);
        let (pack, bytes) = pack_of(&m);
        assert_eq!(bytes, b"aaaabb");
        let unpack = |stream: &[u8], chunk: usize| -> (Result<()>, tempfile::TempDir) {
            let dir = tempfile::tempdir().unwrap();
            let roots = [dir.path().to_path_buf()];
            let t = transfers(&m, std::slice::from_ref(&pack), &roots).unwrap();
            let Transfer::Pack { contents, .. } = &t[0] else {
                panic!("not a pack")
            };
            let mut w = Unpacker {
                contents,
                roots: &roots,
                link: false,
                at: 0,
                left: 0,
                hash: Sha256::new(),
                open: Vec::new(),
            };
            let r = stream
                .chunks(chunk)
                .try_for_each(|c| w.write(c))
                .and_then(|()| w.next())
                .and_then(|()| (w.at == contents.len()).then_some(()).context("truncated"));
            (r, dir)
        };
        for chunk in [1, 3, 64] {
            let (r, dir) = unpack(&bytes, chunk);
            r.unwrap();
            for (name, body) in [("a", "aaaa"), ("b", "bb"), ("c", "aaaa")] {
                assert_eq!(
                    std::fs::read_to_string(dir.path().join(name)).unwrap(),
                    body
                );
            }
        }
        let mut flipped = bytes.clone();
        flipped[4] ^= 1;
        let why = unpack(&flipped, 64).0.unwrap_err().to_string();
        assert_eq!(why, "b's content does not match its hash");
        let why = unpack(&bytes[..5], 64).0.unwrap_err().to_string();
        assert_eq!(why, "truncated");
        let long = [&bytes[..], b"x"].concat();
        let why = unpack(&long, 64).0.unwrap_err().to_string();
        assert_eq!(why, "more bytes than listed");
    }
}
