//! Claims: one small TOML file per card under `<common dir>/kardwt/claims/`,
//! written before `git worktree add` runs (`intent`), completed with the record, deleted last
//! on removal. Unlike the record it outlives git's admin dir, so a worktree removed behind
//! kardwt's back leaves an orphan claim that `gc --apply` releases.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::ground::card::CardId;
use crate::ground::error::Fail;
use crate::state::record::{self, Record};

mod refusal;
use refusal::Refusal;

/// Written last by the migration of a repository that had records but no claims.
const MIGRATED: &str = ".migrated";

/// The largest claim read: far above any real one.
const MAX_CLAIM_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ClaimState {
    /// `git worktree add` is about to run or ran; the record is not written yet.
    Intent,
    /// The record exists.
    Complete,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claim {
    pub schema: u32,
    /// Judged by [`Claim::malformed`] (a record's, by its parse): a claim acted on holds an id.
    #[serde(deserialize_with = "CardId::deserialize_as_written")]
    pub card: CardId,
    pub path: PathBuf,
    /// The admin dir's name under `<common dir>/worktrees/` (empty while an intent).
    #[serde(default)]
    pub admin: String,
    pub state: ClaimState,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default)]
    pub ports: Vec<u16>,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub base_ref: String,
    /// Its record says `released`, or the removal that left its tree half removed
    /// had released it: the cleanup hook ran (or is not due) and the ports went
    /// back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
    /// The directory the worktree was made under (its parent when claimed: the worktree root
    /// for `add`). Its `path` must stay strictly beneath it. Empty in claims
    /// written before it was recorded: those are judged by the other checks alone.
    #[serde(default, skip_serializing_if = "path_is_empty")]
    pub root: PathBuf,
    /// When a `git worktree remove` of this claim's tree failed after git had forgotten the
    /// tree (its admin dir gone, files left), RFC 3339 to the nanosecond (to the second when
    /// written by older versions); empty otherwise. What is
    /// left is cleared without `--force` only when nothing in it changed after this moment
    /// (`crate::lifecycle::remnant`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub half_removed: String,
}

fn path_is_empty(p: &Path) -> bool {
    p.as_os_str().is_empty()
}

/// What an orphan claim's path holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Orphan {
    /// Nothing: the worktree is gone. Its resources are released (cleanup hook, ports).
    Gone,
    /// Another worktree or repository (its `.git` names another admin dir, or is a
    /// repository of its own): the claim is dropped and nothing there is touched, the cleanup
    /// hook included.
    Replaced,
}

impl Claim {
    /// An orphan: a complete, well-formed claim whose path no longer exists
    /// ([`Orphan::Gone`]), or exists with a `.git` that names another admin dir than the
    /// claim's ([`Orphan::Replaced`]). Anything else at the path (its own worktree, a
    /// directory without `.git`) is not an orphan and is left alone.
    pub(crate) fn orphan_kind(&self, common_dir: &Path, base: Option<&Path>) -> Option<Orphan> {
        if self.state != ClaimState::Complete || self.malformed(common_dir, base).is_some() {
            return None;
        }
        if self.path.symlink_metadata().is_err() {
            return Some(Orphan::Gone);
        }
        if self.admin.is_empty() {
            return None; // no admin dir to compare with: only a gone path is an orphan
        }
        let dot_git = self.path.join(".git");
        if dot_git.is_dir() {
            return Some(Orphan::Replaced);
        }
        let named = crate::git::read_dot_git(&self.path)?;
        if crate::git::names_gone_admin(common_dir, &named) {
            return None; // a tree of this repository git forgot: half removed
        }
        let ours = common_dir.join("worktrees").join(&self.admin);
        let same = named == ours
            || std::fs::canonicalize(&named)
                .ok()
                .zip(std::fs::canonicalize(&ours).ok())
                .is_some_and(|(a, b)| a == b);
        (!same).then_some(Orphan::Replaced)
    }

    /// This claim as an orphan ([`Claim::orphan_kind`]), or why it is not one: why it is
    /// malformed, or that its path is no orphan's.
    pub(crate) fn orphan_or_why(
        &self,
        common_dir: &Path,
        base: Option<&Path>,
    ) -> Result<Orphan, String> {
        self.orphan_kind(common_dir, base).ok_or_else(|| {
            self.malformed(common_dir, base)
                .unwrap_or_else(|| format!("{} is not an orphan's path", self.path.display()))
        })
    }

    /// [`Claim::orphan_kind`] as a yes or no; `base` is taken as the common dir's parent.
    pub(crate) fn orphan(&self, common_dir: &Path) -> bool {
        self.orphan_kind(common_dir, None).is_some()
    }

    /// Why this claim is malformed, if it is: its card is not a card id, its path is not
    /// absolute and normal, is not strictly beneath the root it was made under, or is the base
    /// (or the common dir) or one of their ancestors. A malformed claim is reported, never acted
    /// on.
    /// `base` defaults to the common dir's parent.
    pub(crate) fn malformed(&self, common_dir: &Path, base: Option<&Path>) -> Option<String> {
        use std::path::Component;
        if let Some(why) = crate::ground::card::why_invalid(&self.card) {
            return Some(format!(
                "its card '{}' is not a valid card id ({why})",
                crate::ground::quote::shown(&self.card, 40)
            ));
        }
        let p = &self.path;
        let normal = p.is_absolute()
            && p.components()
                .skip(1)
                .all(|c| matches!(c, Component::Normal(_)));
        if !normal {
            return Some(format!(
                "its path {} is not absolute and normal",
                p.display()
            ));
        }
        let base = base.or_else(|| common_dir.parent());
        for (what, guarded) in [("the base", base), ("the common dir", Some(common_dir))] {
            if guarded.is_some_and(|g| g.starts_with(p)) {
                return Some(format!("its path {} is {what} or contains it", p.display()));
            }
        }
        if !path_is_empty(&self.root) && (!p.starts_with(&self.root) || *p == self.root) {
            return Some(format!(
                "its path {} is not beneath {}, the root it was made under",
                p.display(),
                self.root.display()
            ));
        }
        None
    }
}

/// The claims directory.
pub(super) fn dir(common_dir: &Path) -> PathBuf {
    crate::sys::claims_dir(common_dir)
}

/// The claim file of `card`.
pub(super) fn file(common_dir: &Path, card: &str) -> PathBuf {
    dir(common_dir).join(card)
}

/// Why a card's claim file is not a claim kardwt acts on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaimError {
    /// It could not be read (a FIFO, a symlink, too large, not UTF-8, …).
    #[error("cannot read {0}")]
    Unreadable(String),
    /// It is not TOML of a claim's shape.
    #[error("{}: {why}", path.display())]
    Malformed { path: PathBuf, why: String },
}

/// Read `card`'s claim: `None` when there is none, `Some(Err)` when it does not parse.
pub(super) fn load(common_dir: &Path, card: &str) -> Option<Result<Claim, ClaimError>> {
    let f = file(common_dir, card);
    match read_text(&f) {
        Ok(None) => None,
        Err(e) => Some(Err(ClaimError::Unreadable(crate::sys::path_then_why(
            &f, &e,
        )))),
        Ok(Some(text)) => Some(
            toml::from_str::<Claim>(&text).map_err(|e| ClaimError::Malformed {
                path: f.clone(),
                why: e.message().to_owned(),
            }),
        ),
    }
}

/// A claim file's text: bounded, without following a symlink or waiting on a FIFO planted
/// there.
fn read_text(f: &Path) -> std::io::Result<Option<String>> {
    crate::sys::read_bounded(f, MAX_CLAIM_BYTES)?
        .map(|b| String::from_utf8(b).map_err(std::io::Error::other))
        .transpose()
}

/// A listed claim file, parsed; `None` when it cannot be read or parsed.
fn parse_file(f: &Path) -> Option<Claim> {
    toml::from_str(&read_text(f).ok()??).ok()
}

/// Has this repository's claims been migrated (or begun with claims)? Until then verification
/// cannot rely on them.
pub(super) fn migrated(common_dir: &Path) -> bool {
    dir(common_dir).join(MIGRATED).exists()
}

/// Every claim, in card order (unparsable ones skipped).
pub(super) fn all(common_dir: &Path) -> Vec<Claim> {
    let Ok(entries) = std::fs::read_dir(dir(common_dir)) else {
        return Vec::new();
    };
    let files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    // Thousands of claims are parsed on every core (as `verify::scan` reads records).
    let mut out: Vec<Claim> = crate::sys::in_parallel(&files, |f| parse_file(f))
        .into_iter()
        .flatten()
        .collect();
    out.sort_by(|a: &Claim, b| a.card.cmp(&b.card));
    out
}

/// The orphan claims of this repository (`base`: its base checkout), with what their path
/// holds now.
pub(super) fn orphans(common_dir: &Path, base: &Path) -> Vec<(Claim, Orphan)> {
    all(common_dir)
        .into_iter()
        .filter_map(|c| {
            let kind = c.orphan_kind(common_dir, Some(base))?;
            Some((c, kind))
        })
        .collect()
}

/// The malformed claims of this repository, each with why (reported, never acted
/// on).
pub(super) fn malformed(common_dir: &Path, base: &Path) -> Vec<(Claim, String)> {
    all(common_dir)
        .into_iter()
        .filter_map(|c| {
            let why = c.malformed(common_dir, Some(base))?;
            Some((c, why))
        })
        .collect()
}

/// The claims of cards no registered record in `recorded` names, parsed (unparsable ones
/// skipped), in card order. The claims directory is listed once and only those claims are
/// read (`list`).
pub(super) fn unrecorded(
    common_dir: &Path,
    recorded: &std::collections::HashSet<&str>,
) -> Vec<Claim> {
    let Ok(entries) = std::fs::read_dir(dir(common_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Claim> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if name.starts_with('.') || recorded.contains(name.as_str()) {
                return None;
            }
            parse_file(&e.path())
        })
        .collect();
    out.sort_by(|a, b| a.card.cmp(&b.card));
    out
}

/// Write `claim` atomically, either replacing what is there (`replace`) or only when nothing
/// is (create-new: an error of kind `AlreadyExists` otherwise). The claims directory is made
/// without following a symlink planted as it (or as `kardwt/`).
fn put(common_dir: &Path, claim: &Claim, replace: bool) -> std::io::Result<()> {
    stage(common_dir, claim, replace)?.commit()
}

/// [`put`]'s first half: the claim's temporary written and on disk, not yet in place.
fn stage(common_dir: &Path, claim: &Claim, replace: bool) -> std::io::Result<crate::sys::Staged> {
    let d = dir(common_dir);
    crate::sys::create_dir_nofollow(common_dir, &d)?;
    let text = toml::to_string(claim).map_err(std::io::Error::other)?;
    crate::sys::stage_atomic(&d, claim.card.as_str().as_ref(), text.as_bytes(), replace)
}

/// Before `git worktree add` of `card` at `path` (under the repository lock), claim
/// the card (`intent`). A claim already there is replaced when it is a leftover intent, names
/// this same path, or is an orphan (`add` released it just before); a claim of a worktree git
/// still knows elsewhere is refused.
pub(super) fn intend(common_dir: &Path, card: &CardId, path: &Path, branch: &str) -> Result<()> {
    migrate(common_dir);
    intend_only(common_dir, card, path, branch)
}

/// [`intend`] without the migration check.
fn intend_only(common_dir: &Path, card: &CardId, path: &Path, branch: &str) -> Result<()> {
    let now = crate::sys::now();
    let path = crate::git::absolutize(path);
    let claim = Claim {
        schema: 1,
        card: card.clone(),
        root: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        path,
        admin: String::new(),
        state: ClaimState::Intent,
        created_at: now.clone(),
        updated_at: now,
        ports: Vec::new(),
        branch: branch.to_owned(),
        base_ref: String::new(),
        released: false,
        half_removed: String::new(),
    };
    let f = file(common_dir, card);
    match put(common_dir, &claim, false) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(e).with_context(|| format!("could not write the claim {}", f.display()))
        }
        Err(_) => {}
    }
    let old = load(common_dir, card);
    if let Some(Err(why)) = &old {
        // Not a claim kardwt can read (a FIFO or symlink planted there, or garbage): replaced.
        eprintln!("warning: card {card}'s claim could not be read ({why}); it is replaced");
    }
    if let Some(Ok(old)) = old {
        if let Some(why) = old.malformed(common_dir, None) {
            return Err(Fail::from(Refusal::Malformed {
                card: card.clone(),
                why,
                file: file(common_dir, card),
            })
            .into());
        }
        let same = crate::git::absolutize(&old.path) == claim.path;
        if !same && old.state == ClaimState::Complete && !old.orphan(common_dir) {
            return Err(Fail::from(Refusal::Taken {
                card: card.clone(),
                path: old.path,
            })
            .into());
        }
    }
    put(common_dir, &claim, true)
        .with_context(|| format!("could not write the claim {}", f.display()))
}

/// Complete `rec`'s claim (its record in `admin` was just written), keeping the claim's
/// creation time; no migration check.
fn complete_only(admin: &Path, rec: &Record) -> Result<()> {
    match stage_complete(admin, rec)? {
        Some(staged) => staged.commit().with_context(|| {
            format!(
                "could not write the claim {}",
                file(&rec.common_dir, &rec.card).display()
            )
        }),
        None => Ok(()),
    }
}

/// The claim [`super::cards::write`] puts in place beside `rec` (its record in `admin`): the
/// first claim written migrates the records older kardwts left without one, then
/// [`stage_complete`].
pub(super) fn stage_for_record(admin: &Path, rec: &Record) -> Result<Option<crate::sys::Staged>> {
    migrate(&rec.common_dir);
    stage_complete(admin, rec)
}

/// [`complete_only`]'s claim written and on disk beside its place, for the caller to put there
/// ([`crate::sys::Staged::commit`]); `None` when there is nothing to write (the claim
/// says all this already, or is another live worktree's). No migration check.
fn stage_complete(admin: &Path, rec: &Record) -> Result<Option<crate::sys::Staged>> {
    let common = &rec.common_dir;
    let parent = rec.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let existing = load(common, &rec.card);
    let (created_at, root) = match &existing {
        // Another live worktree's claim is never taken over (verification refuses this one).
        Some(Ok(old))
            if old.state == ClaimState::Complete
                && crate::git::absolutize(&old.path) != crate::git::absolutize(&rec.path)
                && !old.orphan(common) =>
        {
            return Ok(None)
        }
        // The root it was made under, while the tree stays beneath it (a tree moved elsewhere
        // and recorded again is claimed under its new parent).
        Some(Ok(old)) if rec.path.starts_with(&old.root) && rec.path != old.root => {
            (old.created_at.clone(), old.root.clone())
        }
        Some(Ok(old)) => (old.created_at.clone(), parent),
        _ => (rec.created_at.clone(), parent),
    };
    let claim = Claim {
        schema: 1,
        card: rec.card.clone(),
        path: rec.path.clone(),
        admin: admin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        state: ClaimState::Complete,
        created_at,
        updated_at: crate::sys::now(),
        ports: rec.ports.clone(),
        branch: rec.branch.clone(),
        base_ref: rec.base_ref.clone(),
        released: rec.state == record::State::Released,
        root,
        half_removed: String::new(),
    };
    // A claim that already says all this is left as it is (only its time would change).
    if let Some(Ok(old)) = &existing {
        if *old
            == (Claim {
                updated_at: old.updated_at.clone(),
                ..claim.clone()
            })
        {
            return Ok(None);
        }
    }
    stage(common, &claim, true).map(Some).with_context(|| {
        format!(
            "could not write the claim {}",
            file(common, &rec.card).display()
        )
    })
}

/// Delete `card`'s claim if it names `path` (removal's last step; also a failed creation's
/// undo). A claim naming another path is another worktree's and stays.
pub(super) fn forget(common_dir: &Path, card: &str, path: &Path) {
    if let Some(Ok(c)) = load(common_dir, card) {
        let p = crate::git::absolutize(path);
        if crate::git::absolutize(&c.path) != p
            && std::fs::canonicalize(&c.path).ok().as_deref() != Some(p.as_path())
        {
            return;
        }
    }
    delete(common_dir, card);
}

/// Delete `card`'s claim whatever it names (an orphan's release). One that cannot be deleted
/// is a warning: the card stays claimed.
pub(super) fn delete(common_dir: &Path, card: &str) {
    let f = file(common_dir, card);
    match std::fs::remove_file(&f) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            eprintln!("warning: could not delete the claim {}: {e}", f.display());
        }
        _ => {}
    }
}

/// A `git worktree remove` of `path` (card `card`, or whichever card's claim names
/// it) just failed. When git forgot the tree anyway (its `.git` is gone or names an admin dir
/// that is gone) but the directory is still there, the claim records the moment, and that the
/// tree needs no release (whoever removed it released it, or it was never handed out), so
/// that what is left is recognised and cleared later. Best effort: without the mark, what is
/// left is cleared only with `--force`.
pub(super) fn mark_half_removed(common_dir: &Path, card: Option<&str>, path: &Path) {
    let dir_left = path.symlink_metadata().is_ok_and(|m| m.is_dir());
    let forgotten = match crate::git::read_dot_git(path) {
        Some(admin) => crate::git::names_gone_admin(common_dir, &admin),
        None => path.join(".git").symlink_metadata().is_err(),
    };
    if !dir_left || !forgotten {
        return;
    }
    let p = crate::git::absolutize(path);
    let names = |c: &Claim| crate::git::absolutize(&c.path) == p;
    let claim = match card {
        Some(card) => load(common_dir, card).and_then(Result::ok).filter(names),
        None => all(common_dir).into_iter().find(names),
    };
    let Some(mut claim) = claim else {
        return;
    };
    // To the nanosecond: a change in the same second after the failure is new work.
    claim.half_removed = crate::sys::time_mark();
    claim.released = true;
    claim.updated_at = crate::sys::now();
    if let Err(e) = put(common_dir, &claim, true) {
        eprintln!(
            "warning: could not note in {} that {} was left half removed: {e}",
            file(common_dir, &claim.card).display(),
            path.display()
        );
    }
}

/// Does a leftover intent say that an interrupted `add` of `card` created `path`?
pub(super) fn intended(common_dir: &Path, card: &str, path: &Path) -> bool {
    load(common_dir, card).is_some_and(|c| {
        c.is_ok_and(|c| {
            c.state == ClaimState::Intent
                && (crate::git::absolutize(&c.path) == crate::git::absolutize(path)
                    || std::fs::canonicalize(&c.path)
                        .is_ok_and(|n| n == crate::git::absolutize(path)))
        })
    })
}

/// Under the repository lock: migrate the records made before claims existed, and remove
/// the temporaries killed writes left in the claims directory.
pub(super) fn tidy(common_dir: &Path) {
    migrate(common_dir);
    crate::sys::remove_files(&crate::sys::dead_temporaries(&dir(common_dir), None));
}

/// Migration: a repository with records but no claims gets a claim for every
/// recorded worktree, and the older `kardwt/intents/` become intent claims. Run when the
/// repository lock is taken, and before the first claim is written (a repository whose
/// records were all made by the hook or `prepare --path`); idempotent (a marker is written
/// last, existing claims are kept).
pub(super) fn migrate(common_dir: &Path) {
    let d = dir(common_dir);
    if d.join(MIGRATED).exists() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(common_dir.join("worktrees")) {
        for e in entries.filter_map(|e| e.ok()) {
            let admin = e.path();
            if let record::Loaded::Parsed(rec) = record::load(&admin) {
                if load(common_dir, &rec.card).is_none() {
                    let mut rec = *rec;
                    rec.common_dir = common_dir.to_path_buf();
                    let _ = complete_only(&admin, &rec);
                }
            }
        }
    }
    let intents = crate::sys::old_intents_dir(common_dir);
    if let Ok(entries) = std::fs::read_dir(&intents) {
        for e in entries.filter_map(|e| e.ok()) {
            let card = CardId::as_written(e.file_name().to_string_lossy().into_owned());
            if card.starts_with('.') || load(common_dir, &card).is_some() {
                continue;
            }
            if let Ok(Some(b)) = crate::sys::read_bounded(&e.path(), MAX_CLAIM_BYTES) {
                let path = PathBuf::from(String::from_utf8_lossy(&b).into_owned());
                let _ = intend_only(common_dir, &card, &path, "");
            }
        }
        let _ = std::fs::remove_dir_all(&intents);
    }
    // Best effort: without the marker the (idempotent) migration runs again next time.
    if crate::sys::create_dir_nofollow(common_dir, &d).is_ok() {
        crate::sys::write_atomic(&d, MIGRATED, b"1\n").ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_on_one_card_cannot_be_created() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        let live = common.join("w1");
        std::fs::create_dir_all(live.join(".git")).unwrap();
        intend(common, &CardId::parse("7").unwrap(), &live, "card/7").unwrap();
        let mut c = load(common, "7").unwrap().unwrap();
        c.state = ClaimState::Complete;
        put(common, &c, true).unwrap();
        // The claim is complete and its tree exists: a claim at another path is refused.
        let err = intend(
            common,
            &CardId::parse("7").unwrap(),
            &common.join("w2"),
            "card/7",
        )
        .unwrap_err();
        assert!(err.to_string().contains("already claimed"), "{err}");
        assert_eq!(load(common, "7").unwrap().unwrap().path, live);
        // The create-new write itself fails on an existing file.
        let again = put(common, &c, false).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn an_intent_is_recognised_for_its_path_only() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        intend(common, &CardId::parse("8").unwrap(), &common.join("a"), "").unwrap();
        assert!(intended(common, "8", &common.join("a")));
        assert!(!intended(common, "8", &common.join("b")));
        forget(common, "8", &common.join("b"));
        assert!(load(common, "8").is_some());
        forget(common, "8", &common.join("a"));
        assert!(load(common, "8").is_none());
    }
}
