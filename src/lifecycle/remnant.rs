//! Half-removed trees and stale intents. When one of its deletions fails, `git
//! worktree remove` still deletes the tree's admin dir, leaving part of the tree on disk that
//! git no longer knows. Such a directory is kardwt's only when its card's claim names it, its
//! `.git` (if still there) names an admin dir of this repository that is gone, and git
//! registers no worktree there; it is cleared, by `remove` or the next `add` of the card, only
//! when nothing in it changed after the failed removal (the claim's `half_removed` mark) or
//! with `--force`, never while a process works in it, never across a symlink and never into
//! another file system. Also what `list` and `doctor` say about a claim no worktree git knows
//! stands behind: an orphan, a malformed claim, a half-removed tree, or the intent of an `add`
//! that was interrupted before its tree existed.
use crate::sys;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use rustix::fs::{AtFlags, FileType};

use crate::context::Context;
use crate::git::Repo;
use crate::ground::card::CardId;
use crate::ground::error::Fail;
use crate::lifecycle::step::Step;
use crate::state::{Claim, ClaimState};

mod refusal;
pub(crate) use refusal::Refusal;

/// How many of the paths that block a clearing a message names.
const SHOWN: usize = 5;

/// A moment as seconds and nanoseconds since the epoch.
type Since = (u64, u32);

/// A card's tree that a failed removal left half deleted: its claim, which names the path.
#[derive(Debug, Clone)]
pub struct Remnant {
    pub claim: Claim,
}

impl Remnant {
    pub fn path(&self) -> &Path {
        &self.claim.path
    }

    /// Its claim's card: an id, since a malformed claim is never a remnant.
    pub fn card(&self) -> &CardId {
        &self.claim.card
    }

    /// When the removal that left it failed (seconds and nanoseconds since the epoch), if
    /// kardwt saw it fail.
    fn since(&self) -> Option<Since> {
        crate::sys::parse_rfc3339_precise(&self.claim.half_removed)
    }
}

/// What stands at a claim's path, for recognising a remnant.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Standing {
    /// Nothing, or something that is not a real directory (a symlink, a file).
    NoDirectory,
    /// A directory without `.git`: git deleted it before the failure.
    Bare,
    /// A directory whose `.git` names an admin dir of this repository that is gone.
    Forgotten,
    /// A directory whose `.git` is anything else: a live worktree, another repository's, a
    /// repository of its own, unreadable.
    Other,
}

/// A claim as a remnant is recognised by: malformed (never acted on), or well formed with git
/// registering a worktree at its path or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaimSeen {
    Malformed,
    Registered,
    Unregistered,
}

/// Is a claim's path a remnant, given what the claim is and what stands there (pure)? An
/// intent's path counts as a complete claim's: an `add` undone or repaired may have failed the
/// same way. A malformed claim is never acted on.
fn is_remnant(claim: ClaimSeen, standing: &Standing) -> bool {
    claim == ClaimSeen::Unregistered && matches!(standing, Standing::Bare | Standing::Forgotten)
}

/// Read what stands at `path`, never following a symlink there.
fn standing(common_dir: &Path, path: &Path) -> Standing {
    if !path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Standing::NoDirectory;
    }
    let dot_git = path.join(".git");
    match dot_git.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Standing::Bare,
        Ok(m) if m.is_file() => match crate::git::read_dot_git(path) {
            Some(named) if crate::git::names_gone_admin(common_dir, &named) => Standing::Forgotten,
            _ => Standing::Other,
        },
        _ => Standing::Other,
    }
}

/// The paths git registers worktrees at, as `linked` lists them.
fn registered_paths(linked: &[crate::git::Linked]) -> HashSet<PathBuf> {
    linked.iter().filter_map(|l| l.path.clone()).collect()
}

/// Is `claim`'s path among `registered` (compared as written and resolved)?
fn is_registered(claim: &Claim, registered: &HashSet<PathBuf>) -> bool {
    registered.contains(&claim.path)
        || std::fs::canonicalize(&claim.path).is_ok_and(|c| registered.contains(&c))
}

/// `claim` as a remnant of `repo`, judged against the worktrees git registers.
fn recognise_among(repo: &Repo, registered: &HashSet<PathBuf>, claim: Claim) -> Option<Remnant> {
    let seen = if claim
        .malformed(&repo.common_dir, Some(&repo.base))
        .is_some()
    {
        ClaimSeen::Malformed
    } else if is_registered(&claim, registered) {
        ClaimSeen::Registered
    } else {
        ClaimSeen::Unregistered
    };
    let standing = standing(&repo.common_dir, &claim.path);
    is_remnant(seen, &standing).then_some(Remnant { claim })
}

/// `claim` as a remnant, judged against git's worktrees read now (`None` when they cannot be
/// read: nothing is proven then). They are read only when the path could be one.
fn recognise(repo: &Repo, claim: Claim) -> Option<Remnant> {
    if !matches!(
        standing(&repo.common_dir, &claim.path),
        Standing::Bare | Standing::Forgotten
    ) {
        return None;
    }
    let linked = repo.linked().ok()?;
    recognise_among(repo, &registered_paths(&linked), claim)
}

/// The remnant of card `card`'s tree, if its claim names one.
pub fn of_card(ctx: &Context, card: &CardId) -> Option<Remnant> {
    let claim = ctx.cards.claim(card.as_str())?.ok()?;
    recognise(&ctx.repo, claim)
}

/// The remnant at `path`, if a card's claim names it.
pub fn at(ctx: &Context, path: &Path) -> Option<Remnant> {
    let p = crate::git::absolutize(path);
    let claim = ctx
        .cards
        .claims()
        .into_iter()
        .find(|c| crate::git::absolutize(&c.path) == p)?;
    recognise(&ctx.repo, claim)
}

/// What a remnant holds, read without following a symlink.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Contents {
    /// Its entries (files, links, directories), itself not counted.
    pub entries: u64,
    /// How many entries changed after the failed removal (every non-directory when kardwt did
    /// not see it fail), and the first few of them, relative to it (`.`: itself).
    pub changed: u64,
    pub changed_shown: Vec<PathBuf>,
    /// Directories in it on another file system (mount points), relative to it (`""`: itself).
    pub mounts: Vec<PathBuf>,
}

/// Read what `path` holds. `since`: when the removal that left it failed; an entry whose status
/// changed at or after it, to the nanosecond, counts as changed (its contents, mode, links or
/// name: `ctime`, which no one sets back), directories (the tree itself included) and
/// everything beneath them alike: git's own deletions changed theirs before the failure, so a
/// change not provably before it is not its.
pub fn inspect(path: &Path, since: Option<Since>) -> std::io::Result<Contents> {
    let (parent, name) = split(path)?;
    let parent_fd = sys::beneath_root(parent)?;
    let root = open_below(&parent_fd, name, Path::new(""))?;
    let dev = rustix::fs::fstat(&root)?.st_dev;
    let mut out = Contents::default();
    if rustix::fs::fstat(&parent_fd)?.st_dev != dev {
        out.mounts.push(PathBuf::new());
        return Ok(out);
    }
    // The tree itself: an entry moved in (or out) after the failure changed it.
    let st = rustix::fs::fstat(&root)?;
    if changed_after(true, ctime(&st), since) {
        out.note_changed(Path::new("."));
    }
    walk(&root, Path::new(""), dev, since, &mut out)?;
    // Bind mounts of the same file system share its device: the mount table names them.
    for at in crate::sys::mounts_under(path)? {
        if !out.mounts.contains(&at) {
            out.mounts.push(at);
        }
    }
    out.mounts.sort();
    Ok(out)
}

/// The parent directory and name of an absolute path.
fn split(path: &Path) -> std::io::Result<(&Path, &OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) => Ok((p, n)),
        _ => Err(std::io::Error::other(format!(
            "{} has no parent directory",
            path.display()
        ))),
    }
}

/// Open the directory `name` in `dir` without following a symlink (`rel`: its path, for
/// messages).
fn open_below(dir: &OwnedFd, name: &OsStr, rel: &Path) -> std::io::Result<OwnedFd> {
    sys::beneath_child(dir, name, rel, None)?
        .map_err(|b| std::io::Error::other(format!("{b}; nothing was deleted")))
}

/// Count `dir`'s entries into `out`, descending into its directories one open at a time.
fn walk(
    dir: &OwnedFd,
    rel: &Path,
    dev: rustix::fs::Dev,
    since: Option<Since>,
    out: &mut Contents,
) -> std::io::Result<()> {
    let names: Vec<OsString> = rustix::fs::Dir::read_from(dir)?
        .map(|e| {
            e.map(|e| {
                use std::os::unix::ffi::OsStrExt as _;
                OsStr::from_bytes(e.file_name().to_bytes()).to_owned()
            })
        })
        .collect::<Result<_, _>>()?;
    for name in names.iter().filter(|n| *n != "." && *n != "..") {
        let at = rel.join(name);
        let st = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        out.entries += 1;
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        if is_dir && st.st_dev != dev {
            out.mounts.push(at);
            continue;
        }
        if changed_after(is_dir, ctime(&st), since) {
            out.note_changed(&at);
        }
        if is_dir {
            let sub = open_below(dir, name, &at)?;
            walk(&sub, &at, dev, since, out)?;
        }
    }
    Ok(())
}

/// An entry's change time, seconds and nanoseconds.
fn ctime(st: &rustix::fs::Stat) -> (i64, i64) {
    #[allow(clippy::unnecessary_cast)]
    (st.st_ctime as i64, st.st_ctime_nsec as i64)
}

/// Did an entry change after the failed removal at `since` (pure)? Its `ctime` says when its
/// status last changed: a directory's moves with it (a directory moved in keeps its files'
/// old times, not its own) and with every entry made, moved or deleted in it, so one touched
/// after the failure is new. Only a change provably before the failure is git's: one stamped
/// at the very moment counts as after, and one stamped at a whole second (a file system that
/// keeps no finer times) could be anywhere in that second. Unmarked (`None`), every
/// non-directory counts; an empty directory holds nothing to lose.
fn changed_after(is_dir: bool, (secs, nanos): (i64, i64), since: Option<Since>) -> bool {
    let Some((s, n)) = since else {
        return !is_dir;
    };
    let (secs, nanos) = (i128::from(secs), i128::from(nanos));
    let at = i128::from(s) * 1_000_000_000 + i128::from(n);
    // The latest moment the change may have been made.
    let latest = secs * 1_000_000_000 + if nanos == 0 { 999_999_999 } else { nanos };
    latest >= at
}

impl Contents {
    fn note_changed(&mut self, at: &Path) {
        self.changed += 1;
        if self.changed_shown.len() < SHOWN {
            self.changed_shown.push(at.to_path_buf());
        }
    }
}

/// Why a remnant may not be cleared, if it may not (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uncleared {
    /// A file system is mounted in it: never cleared, even with `--force`.
    Mounted(Vec<PathBuf>),
    /// Files in it changed after the removal failed: new work, perhaps (`--force` clears).
    Changed { count: u64, shown: Vec<PathBuf> },
    /// kardwt did not see the removal fail, so it cannot tell old files from new ones
    /// (`--force` clears).
    Unmarked { count: u64 },
}

impl Uncleared {
    /// In words, after "and it …".
    pub fn describe(&self) -> String {
        let list = |paths: &[PathBuf], count: u64| {
            let mut shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            if count > paths.len() as u64 {
                shown.push("…".into());
            }
            shown.join(", ")
        };
        match self {
            Uncleared::Mounted(m) => format!(
                "a file system is mounted in it ({})",
                list(m, m.len() as u64)
            ),
            Uncleared::Changed { count, shown } => format!(
                "holds {count} entries changed or moved in after that removal failed ({}), new work perhaps",
                list(shown, *count)
            ),
            Uncleared::Unmarked { count } => format!(
                "holds {count} file(s) kardwt cannot tell from new work (it did not see that removal fail)"
            ),
        }
    }

    /// Does `--force` clear it anyway?
    pub fn forcible(&self) -> bool {
        !matches!(self, Uncleared::Mounted(_))
    }
}

/// How a remnant is to be cleared.
#[derive(Debug, Clone, Copy)]
pub struct Clearing {
    /// kardwt saw its removal fail.
    pub marked: bool,
    /// `--force`: changed files do not stop it.
    pub force: bool,
}

/// May a remnant holding `contents` be cleared `how` (pure)?
pub fn blocked(contents: &Contents, how: Clearing) -> Option<Uncleared> {
    if !contents.mounts.is_empty() {
        return Some(Uncleared::Mounted(contents.mounts.clone()));
    }
    if how.force || contents.changed == 0 {
        return None;
    }
    Some(if how.marked {
        Uncleared::Changed {
            count: contents.changed,
            shown: contents.changed_shown.clone(),
        }
    } else {
        Uncleared::Unmarked {
            count: contents.changed,
        }
    })
}

/// Clearing `rem`, forced or not.
fn clearing(rem: &Remnant, force: bool) -> Clearing {
    Clearing {
        marked: rem.since().is_some(),
        force,
    }
}

/// The command that clears `rem` as it is now (`doctor`), or why none does: `add` for what an
/// interrupted `add` left (its claim still an intent: the tree was never handed out, and the
/// card is wanted), else `remove`; `remove --force` when something in it changed since.
pub fn fix(rem: &Remnant, contents: &Contents) -> Result<String, Uncleared> {
    let card = crate::ground::quote::sh(rem.card());
    match blocked(contents, clearing(rem, false)) {
        None if rem.claim.state == ClaimState::Intent => Ok(format!("git kardwt add {card}")),
        None => Ok(format!("git kardwt remove {card}")),
        Some(b) if b.forcible() => Ok(format!("git kardwt remove --force {card}")),
        Some(b) => Err(b),
    }
}

/// What `doctor` says about `rem`: the state in words, and the command that clears it.
pub fn advice(rem: &Remnant) -> (String, String) {
    let card = rem.card();
    let what = format!(
        "card {card}'s worktree was half removed: git no longer knows it, but a failed git worktree remove left"
    );
    let contents = match inspect(rem.path(), rem.since()) {
        Ok(c) => c,
        Err(e) => {
            return (
                format!("{what} it, and reading it failed: {e}"),
                format!(
                    "inspect {} by hand",
                    crate::ground::quote::sh_path(rem.path())
                ),
            )
        }
    };
    let left = format!("{what} {} entries", contents.entries);
    match (
        fix(rem, &contents),
        blocked(&contents, clearing(rem, false)),
    ) {
        (Ok(cmd), None) => (left, cmd),
        (Ok(cmd), Some(b)) => (
            format!(
                "{left}; it {}: move what you want to keep first",
                b.describe()
            ),
            cmd,
        ),
        (Err(b), _) => (
            format!("{left}; {}", b.describe()),
            format!(
                "unmount it, then git kardwt remove {}",
                crate::ground::quote::sh(card)
            ),
        ),
    }
}

/// What [`clear`] deleted.
pub struct Cleared {
    pub entries: u64,
}

/// Delete the remnant `rem` (the caller holds its card's lock), judged again under the
/// repository lock: the claim unchanged, git registering nothing there, no process inside,
/// and, unless `force`, nothing in it changed after the failed removal. Logged as `removed`.
pub fn clear(ctx: &Context, rem: &Remnant, force: bool, deadline: Instant) -> Result<Cleared> {
    let started = Instant::now();
    let (cards, path, card) = (&ctx.cards, rem.path(), rem.card());
    let holder = format!("git kardwt (clearing card {card}'s half-removed tree)");
    let _repo_lock = cards.lock(deadline, &holder)?;
    let same = cards
        .claim(card)
        .and_then(Result::ok)
        .filter(|c| *c == rem.claim)
        .and_then(|c| recognise(&ctx.repo, c));
    let Some(rem) = same else {
        return Err(Fail::from(Refusal::Changed {
            path: path.to_owned(),
        })
        .into());
    };
    let (path, card) = (path.to_owned(), card.to_string());
    if let Some(why) = crate::sys::in_use(&path) {
        return Err(Fail::from(Refusal::InUse { path, card, why }).into());
    }
    let contents = match inspect(&path, rem.since()) {
        Ok(contents) => contents,
        Err(error) => return Err(Fail::from(Refusal::Unreadable { path, card, error }).into()),
    };
    if let Some(blocked) = blocked(&contents, clearing(&rem, force)) {
        return Err(Fail::from(Refusal::Uncleared {
            path,
            card,
            blocked,
        })
        .into());
    }
    if let Err(error) = delete(&path) {
        return Err(Fail::from(Refusal::Undeletable { path, card, error }).into());
    }
    cards.log(
        crate::state::EventKind::Removed,
        &card,
        &path,
        "half removed: what a failed git worktree remove left was deleted",
        started.elapsed(),
    );
    Ok(Cleared {
        entries: contents.entries,
    })
}

/// Delete the directory `path` and everything in it on its own file system, never following
/// a symlink; what stays is an error that names it.
fn delete(path: &Path) -> std::io::Result<()> {
    match crate::sys::delete_on_one_fs(path)? {
        None => Ok(()),
        Some(left) => Err(std::io::Error::other(format!(
            "{}; they stay in {}",
            left.describe(),
            path.display()
        ))),
    }
}

/// `git kardwt remove` of a remnant: under the card's lock, clear it, then release its claim
/// as an orphan's (its cleanup hook unless the removal that left it ran it, its ports) and
/// delete the claim. The steps, as `remove` prints them.
pub fn remove(ctx: &Context, rem: &Remnant, force: bool) -> Result<(PathBuf, String, Vec<Step>)> {
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let card = rem.card();
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let holder = format!("git kardwt remove {card}");
    let _card_lock = sys::take_card_lock(&ctx.repo.common_dir, card, deadline, &holder)?;
    let cleared = clear(ctx, rem, force, deadline)?;
    let mut steps = vec![Step {
        step: "half-removed",
        ms: None,
        ok: true,
        detail: format!(
            "{} entries a failed git worktree remove left were deleted",
            cleared.entries
        ),
    }];
    if rem.claim.state == ClaimState::Complete {
        steps.extend(crate::lifecycle::orphan::release_orphan_locked(
            ctx, cfg, &rem.claim, deadline,
        )?);
    }
    ctx.cards.delete_claim(card.as_str());
    Ok((rem.path().to_path_buf(), card.to_string(), steps))
}

/// What a claim says when no worktree git knows stands behind it.
#[derive(Debug)]
pub enum Unbacked {
    /// Its worktree is gone, or another stands there: an orphan; `gc --apply` releases it.
    Orphan,
    /// Never acted on.
    Malformed,
    /// A failed removal left part of its tree ([`Remnant`]).
    HalfRemoved(Box<Remnant>),
    /// The intent of an `add` interrupted before git registered its tree (and no `add` of the
    /// card runs now); the next `add` of the card takes it over.
    Interrupted,
}

impl Unbacked {
    /// Its state in `list`.
    pub fn list_state(&self) -> &'static str {
        match self {
            Unbacked::Orphan => "orphan",
            Unbacked::Malformed => "malformed",
            Unbacked::HalfRemoved(_) => "half-removed",
            Unbacked::Interrupted => "interrupted",
        }
    }
}

/// The claims of cards `recorded` does not name, with what each says when no worktree git
/// knows (`entries`) stands behind it; claims of a worktree git knows are left out. Reads
/// only (the card lock is asked, never taken).
pub fn unbacked(
    ctx: &Context,
    entries: &[crate::verify::Entry],
    recorded: &HashSet<&str>,
) -> Vec<(Claim, Unbacked)> {
    let registered: HashSet<PathBuf> = entries
        .iter()
        .filter_map(|e| e.linked.path.clone())
        .collect();
    let (repo, cards) = (&ctx.repo, &ctx.cards);
    cards
        .unrecorded(recorded)
        .into_iter()
        .filter_map(|c| {
            if let Some(rem) = recognise_among(repo, &registered, c.clone()) {
                return Some((c, Unbacked::HalfRemoved(Box::new(rem))));
            }
            let state = match cards.vanished_state(&c, &repo.base) {
                Some("malformed") => Unbacked::Malformed,
                Some(_) => Unbacked::Orphan,
                None if interrupted(repo, &registered, &c) => Unbacked::Interrupted,
                None => return None,
            };
            Some((c, state))
        })
        .collect()
}

/// Is the intent `claim` one an interrupted `add` left: well formed, git registering nothing
/// at its path, and no command holding its card's lock?
fn interrupted(repo: &Repo, registered: &HashSet<PathBuf>, claim: &Claim) -> bool {
    claim.state == ClaimState::Intent
        && claim
            .malformed(&repo.common_dir, Some(&repo.base))
            .is_none()
        && !is_registered(claim, registered)
        && !sys::card_busy(&repo.common_dir, &claim.card)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_claimed_unregistered_directory_git_forgot_is_a_remnant() {
        use ClaimSeen::{Malformed, Registered, Unregistered};
        assert!(is_remnant(Unregistered, &Standing::Forgotten));
        assert!(is_remnant(Unregistered, &Standing::Bare));
        // A live worktree, another repository's, a symlink, a malformed claim: never.
        assert!(!is_remnant(Unregistered, &Standing::Other));
        assert!(!is_remnant(Unregistered, &Standing::NoDirectory));
        assert!(!is_remnant(Registered, &Standing::Forgotten));
        assert!(!is_remnant(Malformed, &Standing::Forgotten));
    }

    #[test]
    fn changed_files_need_force_and_a_mount_point_is_never_cleared() {
        let clean = Contents {
            entries: 3,
            ..Contents::default()
        };
        assert_eq!(
            blocked(
                &clean,
                Clearing {
                    marked: true,
                    force: false
                }
            ),
            None
        );
        let changed = Contents {
            entries: 3,
            changed: 2,
            changed_shown: vec!["a".into(), "b".into()],
            mounts: Vec::new(),
        };
        let b = blocked(
            &changed,
            Clearing {
                marked: true,
                force: false,
            },
        )
        .unwrap();
        assert!(
            b.forcible() && b.describe().contains("2 entries changed"),
            "{b:?}"
        );
        assert!(matches!(
            blocked(
                &changed,
                Clearing {
                    marked: false,
                    force: false
                }
            ),
            Some(Uncleared::Unmarked { count: 2 })
        ));
        assert_eq!(
            blocked(
                &changed,
                Clearing {
                    marked: false,
                    force: true
                }
            ),
            None
        );
        let mounted = Contents {
            mounts: vec!["cache".into()],
            ..changed
        };
        let b = blocked(
            &mounted,
            Clearing {
                marked: true,
                force: true,
            },
        )
        .unwrap();
        assert!(!b.forcible() && b.describe().contains("cache"), "{b:?}");
    }

    #[test]
    fn a_change_not_provably_before_the_failure_is_new() {
        let at = Some((100, 500));
        assert!(!changed_after(false, (100, 499), at));
        assert!(
            changed_after(false, (100, 500), at),
            "equality counts as after"
        );
        assert!(changed_after(false, (100, 501), at));
        assert!(!changed_after(false, (99, 999_999_999), at));
        // A whole-second stamp may be any moment of that second.
        assert!(changed_after(false, (100, 0), at));
        assert!(!changed_after(false, (99, 0), at));
        assert!(changed_after(false, (5, 1), None) && !changed_after(true, (5, 1), None));
    }

    #[test]
    fn inspecting_never_follows_a_symlink_and_counts_new_files() {
        let (tree, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let rem = tree.path().join("card-7");
        std::fs::create_dir_all(rem.join("src/deep")).unwrap();
        std::fs::write(rem.join("src/deep/f"), "x").unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), rem.join("out")).unwrap();
        let now = crate::sys::now_secs();
        let c = inspect(&rem, Some((now + 10, 0))).unwrap();
        assert_eq!((c.entries, c.changed), (4, 0), "{c:?}");
        // Recent: the files, the link, and the directories (the tree itself too).
        let c = inspect(&rem, Some((now.saturating_sub(10), 0))).unwrap();
        assert_eq!(c.changed, 5, "{c:?}");
        assert!(c.changed_shown.contains(&PathBuf::from(".")), "{c:?}");
        assert!(c.changed_shown.contains(&PathBuf::from("src/deep/f")));
        let c = inspect(&rem, None).unwrap();
        assert_eq!(c.changed, 2);
        delete(&rem).unwrap();
        assert!(!rem.exists());
        assert!(outside.path().join("keep").exists(), "followed a symlink");
    }
}
