//! The prepare cache: prepare runs once per inputs, and a hit is the tree prepare would make.
//! After a successful prepare its outputs are stored under `<common dir>/kardwt/cache/<key>/`
//! as clones through the copier (near-zero space where the file system clones), written under
//! a temporary name with a manifest and renamed into place; a later tree with the same key gets
//! them cloned in ([`place`]) and the hook is skipped (or run with `KARDWT_CACHE=hit`). A
//! damaged or partial entry (a file whose restored bytes do not match the manifest's hash
//! included) is a miss and is replaced, never an error; outputs that name their tree (its path,
//! directory name, git dir, branch or card, see [`identity`]) are not stored (they would hand
//! the next tree this one's files or identity); at most
//! `prepare.cache_entries` entries are kept, the least recently used (the entry directory's
//! mtime, touched on each hit) dropped first. Every step is careful: nothing is written
//! through a symlink in the tree or the cache, and the deadline and signals stop it (exit 5,
//! 128 + signal) with nothing half-placed.
//!
//! | file | one job |
//! |---|---|
//! | `fetching` | a fetch's progress on a terminal: files and bytes arrived so far |
//! | `identity` | what names a tree, in the spellings looked for in its outputs before storing them |
//! | `inspect` | the local cache as the `cache` command sees it: listing, checking, pruning |
//! | `key` | the key: the rules, the argv, the program's bytes, the environment, the inputs on disk |
//! | `manifest` | what an entry holds, and whether what is on disk still matches it |
//! | `place` | cloning an entry's outputs into a tree, all or nothing |
//! | `remote` | the cache shared through an S3-compatible object store |
//! | `shelf` | the cache directory: storing an entry, listing, trimming |
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::{Config, Prepare};
use crate::ground::error::Fail;

mod fetching;
mod identity;
pub(crate) mod inspect;
mod key;
mod manifest;
mod place;
mod remote;
mod shelf;

pub(crate) use identity::Tree;
pub(crate) use shelf::Tidy;

/// Does the store `remote` names answer this machine within `deadline`: where it is, or why
/// not (what it answered, or that it did not), for `doctor`.
pub fn remote_answers(
    remote: &crate::config::CacheRemote,
    deadline: std::time::Instant,
) -> Result<String> {
    let r = remote::Remote::new(remote, false, deadline);
    match r.answers() {
        Ok(()) => Ok(r.describe()),
        Err(e) => Err(e.context(format!("{} does not answer", r.describe()))),
    }
}

/// This user's public key for signing the shared store's entries, `ed25519:<hex>` (the key
/// pair made on first use).
pub fn signing_key() -> Result<String> {
    let key = remote::keys::own(true)?.ok_or_else(|| anyhow::anyhow!("no signing key"))?;
    Ok(remote::keys::show(&key.verifying_key()))
}

/// Trust the shared store's signer `key` (`ed25519:<hex>`) for this user; `dry_run` writes
/// nothing. Whether it was trusted already, and the file that says so.
pub fn trust_signer(key: &str, dry_run: bool) -> Result<(bool, PathBuf)> {
    remote::keys::trust(key, dry_run)
}

/// Whose entries of the shared store this user uses, for `doctor`: where it writes, the key it
/// signs with; else the signers it trusts, or (`Err`) that it trusts none, so every entry is a
/// miss. Makes no key.
pub fn signers(writes: bool) -> Result<String> {
    let own = remote::keys::own(false)?;
    if writes {
        return Ok(match own {
            Some(k) => format!(
                "this machine uploads, signed with {}",
                remote::keys::show(&k.verifying_key())
            ),
            None => "this machine uploads, signed with a key made at its first upload".into(),
        });
    }
    let trusted = remote::keys::trusted()?;
    let others = trusted.len() - usize::from(own.is_some());
    match others {
        0 => Err(anyhow::anyhow!(
            "this user trusts no signer of the shared prepare cache: every entry is a miss"
        )),
        n => Ok(format!(
            "this user trusts {n} signer{} of the shared prepare cache",
            if n == 1 { "" } else { "s" }
        )),
    }
}

/// The prepare cache of one tree: its key and the rules that made it.
pub struct Cache<'a> {
    common_dir: PathBuf,
    prep: &'a Prepare,
    pub key: String,
    deadline: Instant,
    /// The shared store, when the rules name one.
    remote: Option<remote::Remote>,
    /// The paths of this machine's clone (its base and common dir) that outputs must not name
    /// to be uploaded.
    machine: Vec<String>,
}

/// Where the entry a hit restored was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// In this machine's cache.
    Local,
    /// In the shared store, fetched into this machine's cache first.
    Remote,
}

/// What looking the key up found.
pub enum Lookup {
    /// The outputs are in the tree: this many files and symlinks, bytes, how long, and where
    /// the entry was found.
    Hit {
        files: u64,
        bytes: u64,
        took: Duration,
        found: Found,
    },
    /// Nothing usable: why (the hook runs).
    Miss(String),
}

impl Lookup {
    /// `hit`, `remote hit` or `miss`: the word the record and the events use.
    pub fn outcome(&self) -> &'static str {
        match self {
            Lookup::Hit {
                found: Found::Remote,
                ..
            } => "remote hit",
            Lookup::Hit { .. } => "hit",
            Lookup::Miss(_) => "miss",
        }
    }

    /// `cache: hit <key> (<n> files and symlinks, <size> cloned)`, or `cache: remote hit …`.
    pub fn said(&self, short_key: &str) -> String {
        match self {
            Lookup::Hit { files, bytes, .. } => format!(
                "cache: {} {short_key} ({files} files and symlinks, {} cloned)",
                self.outcome(),
                crate::ground::human::size(*bytes)
            ),
            Lookup::Miss(why) => format!("cache: miss {short_key} ({why})"),
        }
    }
}

impl<'a> Cache<'a> {
    /// The cache for `tree` under `cfg`'s rules: `None` when the rules name no
    /// `prepare.outputs` (no cache).
    /// `program` is the prepare hook's resolved `argv[0]`, `env` the environment it gets less
    /// the per-tree values; `write`: this machine uploads to the rules' shared store.
    pub fn open(
        common_dir: &Path,
        cfg: &'a Config,
        tree: &Path,
        program: &Path,
        env: std::collections::BTreeMap<String, String>,
        deadline: Instant,
        write: bool,
    ) -> Result<Option<Cache<'a>>> {
        let Some(prep) = cfg.prepare.as_ref().filter(|p| !p.outputs.is_empty()) else {
            return Ok(None);
        };
        // Where this machine keeps its clone, as given and resolved: outputs naming it are kept
        // here but never uploaded (the key does not hold it).
        let mut machine: Vec<String> = ["KARDWT_BASE", "KARDWT_COMMON_DIR"]
            .iter()
            .filter_map(|k| env.get(*k))
            .flat_map(|v| {
                let real = std::fs::canonicalize(v).ok();
                [
                    Some(v.clone()),
                    real.map(|r| r.to_string_lossy().into_owned()),
                ]
            })
            .flatten()
            .filter(|v| v.len() >= identity::SHORTEST)
            .collect();
        machine.sort();
        machine.dedup();
        let parts = key::Parts {
            program: key::file_digest(program)?,
            env,
            inputs: key::input_digests(tree, &prep.inputs)?,
        };
        Ok(Some(Cache {
            common_dir: common_dir.to_path_buf(),
            prep,
            key: key::digest(&outputs_fingerprint(cfg), &prep.argv, &parts),
            deadline,
            remote: prep
                .cache_remote
                .as_ref()
                .map(|r| remote::Remote::new(r, write, deadline)),
            machine,
        }))
    }

    /// The key's first 12 hex digits, for messages.
    pub fn short_key(&self) -> &str {
        &self.key[..12]
    }

    /// Clone the key's outputs into `tree` when a usable entry holds them. A damaged entry is
    /// removed (the store after this prepare replaces it). `Err` only when interrupted or past
    /// the deadline.
    pub fn restore(&self, tree: &Path, progress: bool) -> Result<Lookup> {
        let started = Instant::now();
        let Some(dir) = shelf::entry_dir(&self.common_dir, &self.key) else {
            return self.fetch(tree, progress, started);
        };
        self.restore_from(&dir, tree, progress, started, Found::Local)
    }

    /// On a local miss: the entry from the shared store, when the rules name one and it holds a
    /// usable one, stored locally and cloned in as a local hit is. Any failure is a miss saying
    /// why (one line on stderr when the store failed, not when it lacks the entry).
    fn fetch(&self, tree: &Path, progress: bool, started: Instant) -> Result<Lookup> {
        let Some(remote) = &self.remote else {
            return Ok(Lookup::Miss("no entry".into()));
        };
        // Drawn as a spinner counting what arrived where progress is drawn; else one line.
        let drawn = progress && crate::sys::progress_on();
        if progress && !drawn && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprintln!(
                "kardwt: prepare cache {}: fetching from {}",
                self.short_key(),
                remote.describe()
            );
        }
        let outputs: Vec<String> = self
            .prep
            .outputs
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        // The files are written twice as they arrive, each checked: into the new local entry
        // and into a staging directory in the tree, moved into place once all are there (no
        // second pass copying and reading them again).
        let stage = place::Staging::new(tree)?;
        crate::ground::trace::phase("prepare cache: fetching from the remote");
        let fetched = shelf::adopt(&self.common_dir, &self.key, |tmp| {
            let _shown = drawn.then(|| fetching::watch(tmp, remote.describe()));
            remote.fetch(&self.key, &outputs, tmp, &stage.path)
        });
        crate::ground::trace::phase("prepare cache: fetch ended");
        let m = match fetched {
            Ok(Some(m)) => m,
            Ok(None) => {
                stage.remove();
                return Ok(Lookup::Miss("no entry, none on the remote".into()));
            }
            Err(e) => {
                stage.remove();
                if crate::sys::interrupted().is_some() || Instant::now() >= self.deadline {
                    return Err(e);
                }
                let why = format!("{e:#}");
                eprintln!("kardwt: warning: prepare cache remote not used: {why}");
                return Ok(Lookup::Miss(format!("no entry; remote: {why}")));
            }
        };
        if let Err(e) = stop_check(self.deadline, "while placing prepare's outputs") {
            stage.remove();
            return Err(e);
        }
        match stage.place(&m)? {
            Ok(summary) => {
                crate::ground::trace::phase("prepare cache: placed");
                if let Some(dir) = shelf::entry_dir(&self.common_dir, &self.key) {
                    shelf::touch(&dir);
                }
                Ok(Lookup::Hit {
                    files: summary.files + summary.links,
                    bytes: summary.bytes,
                    took: started.elapsed(),
                    found: Found::Remote,
                })
            }
            Err(unplaced) => Ok(Lookup::Miss(unplaced.why)),
        }
    }

    /// Clone the entry at `dir` (found where `found` says) into `tree` when usable.
    fn restore_from(
        &self,
        dir: &Path,
        tree: &Path,
        progress: bool,
        started: Instant,
        found: Found,
    ) -> Result<Lookup> {
        let dir = dir.to_path_buf();
        let manifest = match manifest::check(&dir, &self.key) {
            Ok(m) => m,
            Err(why) => {
                shelf::discard(&self.common_dir, &self.key);
                return Ok(Lookup::Miss(format!("entry damaged ({why}), replaced")));
            }
        };
        crate::ground::trace::phase("prepare cache: entry checked");
        stop_check(
            self.deadline,
            "while cloning prepare's outputs from the cache",
        )?;
        match place::place(&dir.join("files"), tree, &manifest, self.deadline, progress)? {
            Ok(summary) => {
                crate::ground::trace::phase("prepare cache: placed");
                shelf::touch(&dir);
                Ok(Lookup::Hit {
                    files: summary.files + summary.links,
                    bytes: summary.bytes,
                    took: started.elapsed(),
                    found,
                })
            }
            Err(unplaced) if unplaced.damaged => {
                shelf::discard(&self.common_dir, &self.key);
                Ok(Lookup::Miss(format!(
                    "entry damaged ({}), replaced",
                    unplaced.why
                )))
            }
            Err(unplaced) => Ok(Lookup::Miss(unplaced.why)),
        }
    }

    /// Store the outputs of `tree` under the key after a successful prepare (unless a usable
    /// entry holds them already, or they name the tree), then keep at most
    /// `prepare.cache_entries` entries. The answer says what was done; a failure to store is a
    /// warning in it, never an error. `Err` only when interrupted or past the deadline.
    pub fn store(&self, tree: &Tree<'_>) -> Result<String> {
        let stored = shelf::store(
            &self.common_dir,
            &self.key,
            tree,
            &self.prep.outputs,
            self.deadline,
        );
        let said = match stored {
            Ok(said) => said,
            Err(e) if crate::sys::interrupted().is_some() || Instant::now() >= self.deadline => {
                return Err(e)
            }
            Err(e) => {
                let said = format!("not stored: {e:#}");
                eprintln!("kardwt: warning: prepare cache {said}");
                said
            }
        };
        // The entry just stored (or found) counts as used now: trimming never drops it first.
        if let Some(dir) = shelf::entry_dir(&self.common_dir, &self.key) {
            shelf::touch(&dir);
        }
        let keep = usize::try_from(self.prep.cache_entries).unwrap_or(usize::MAX);
        shelf::trim(&self.common_dir, keep);
        Ok(match self.publish()? {
            Some(sent) => format!("{said}; remote: {sent}"),
            None => said,
        })
    }

    /// Upload the entry of the key to the shared store where this machine writes; what was
    /// done, or why not (also a warning on stderr). `Err` only when interrupted or past the
    /// deadline (what went up is blobs without a manifest: no entry).
    fn publish(&self) -> Result<Option<String>> {
        let Some(remote) = self.remote.as_ref().filter(|r| r.write) else {
            return Ok(None);
        };
        let Some(dir) = shelf::entry_dir(&self.common_dir, &self.key) else {
            return Ok(None);
        };
        let sent = manifest::check(&dir, &self.key)
            .map_err(anyhow::Error::from)
            .and_then(|m| remote.publish(&dir, &m, &self.machine));
        Ok(Some(match sent {
            Ok(sent) => sent,
            Err(e) if crate::sys::interrupted().is_some() || Instant::now() >= self.deadline => {
                return Err(e)
            }
            Err(e) => {
                let why = format!("not uploaded: {e:#}");
                eprintln!("kardwt: warning: prepare cache remote {why}");
                why
            }
        }))
    }
}

/// The rules' fingerprint less where the cache is kept (`prepare.cache_remote`, which a
/// machine on another network may reach through another endpoint, and
/// `prepare.cache_entries`): they decide nothing of the outputs.
fn outputs_fingerprint(cfg: &Config) -> String {
    let mut rules = cfg.clone();
    if let Some(p) = rules.prepare.as_mut() {
        p.cache_remote = None;
        p.cache_entries = 0;
    }
    rules.fingerprint()
}

/// Does this machine upload to the rules' shared store? Where `KARDWT_CACHE_WRITE` says so
/// (`1`, `true`, `yes`, `on`; `0`, `false`… says no, over git config), else where git config
/// `kardwt.cacheWrite` (`git_value`) does. Reading needs no opt-in.
pub fn writes(git_value: Option<String>) -> bool {
    let yes = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "" | "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    };
    std::env::var("KARDWT_CACHE_WRITE")
        .ok()
        .and_then(|v| yes(&v))
        .or_else(|| git_value.as_deref().and_then(yes))
        .unwrap_or(false)
}

/// The number of entries the rules keep: `prepare.cache_entries`, 0 when they name no outputs.
pub fn bound(cfg: &Config) -> usize {
    cfg.prepare
        .as_ref()
        .filter(|p| !p.outputs.is_empty())
        .map_or(0, |p| {
            usize::try_from(p.cache_entries).unwrap_or(usize::MAX)
        })
}

/// Fail with 128 + the signal once kardwt was interrupted, with exit 5 once
/// `deadline` has passed.
fn stop_check(deadline: Instant, during: &str) -> Result<()> {
    crate::sys::check_signal(during)?;
    if Instant::now() >= deadline {
        return Err(Fail::from(crate::sys::Overran {
            during: during.to_owned(),
        })
        .into());
    }
    Ok(())
}
