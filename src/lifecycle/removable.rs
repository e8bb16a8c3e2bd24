//! Whether a tree may be removed now: the one decision `remove`, `gc` and the runner's disposal
//! make, its checks in one order (a mount, a nested repository, uncommitted work, what `git
//! worktree remove` would refuse, processes), each reason said in one wording; and the checks
//! themselves, made before anything is released: the one link-aware dirtiness test (with
//! kardwt's own walk, `walk.rs`, and the edits `git status` is told not to show, `flagged.rs`)
//! and everything `git worktree remove` would refuse.
//!
//! A path in the record's `links` is kardwt's own only while it is still the symlink kardwt
//! made, pointing where kardwt pointed it (the base's file at the same relative path). Anything
//! else there is user work, even when an exclude pattern or the user's ignore rules keep it out
//! of `git status`.
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::context::Context;
use crate::state::Record;
use crate::{git, lifecycle::flagged, lifecycle::walk};

/// What a release does about the processes whose cwd is inside the tree.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Processes {
    /// SIGTERM, then SIGKILL after the grace period: `remove` and `release`, which a person
    /// or agent asked for.
    Release(Duration),
    /// Signal nothing: `gc` (automatic cleanup never ends a process), whose
    /// removal refuses a tree in use before anything is released.
    KeepInUse,
}

/// The tree a decision is about: its path, admin dir, record, and whether git has it locked.
pub(crate) struct Tree<'a> {
    pub path: &'a Path,
    pub admin: &'a Path,
    pub rec: &'a Record,
    pub locked: bool,
}

/// How it would be removed: forced (its work discarded), and what happens to its processes.
#[derive(Clone, Copy)]
pub(crate) struct How {
    pub force: bool,
    pub processes: Processes,
}

/// It may be removed: clean, or forced with whatever it holds.
#[derive(Debug)]
pub(crate) enum Removable {
    Clean,
    /// Forced with this many dirty paths.
    Forced {
        dirty: usize,
    },
    /// Forced without knowing what it holds: why that could not be told.
    ForcedUnjudged(String),
}

/// Why it may not be removed now, in the order the checks run (the first found is the answer).
#[derive(Debug)]
pub enum Unremovable {
    /// A file system is mounted in it (or at it): `mounts`, absolute. Forced or not.
    Mounted { mounts: Vec<PathBuf> },
    /// It holds another repository or worktree, `first` of them (absolute) `nested`. Forced
    /// or not.
    Nested { first: PathBuf, nested: Vec<String> },
    /// A check could not finish, so nothing is proven; `forcible` when `--force` would pass it
    /// (only the check for uncommitted work: a mount or a nested tree stops a forced removal too).
    Unproven {
        cause: anyhow::Error,
        forcible: bool,
    },
    /// Uncommitted changes or untracked files (link-aware, flagged index entries included).
    Dirty { dirt: Vec<String> },
    /// What `git worktree remove` would refuse: a lock, the main worktree, submodules.
    WouldRefuse { blockers: Vec<Blocker> },
    /// Its processes would be released but cannot be seen.
    Unseen { unseen: crate::sys::Unseen },
    /// A process works in it and this removal keeps a tree in use (gc).
    InUse { why: String },
}

impl Unremovable {
    /// The reason as one clause about `subject` (a path, or "it"): the one wording every
    /// command shows.
    pub fn said_of(&self, subject: &str) -> String {
        match self {
            Unremovable::Mounted { mounts } => format!(
                "{subject} has a file system mounted in it ({})",
                mounts
                    .iter()
                    .map(|m| m.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unremovable::Nested { nested, .. } => format!(
                "{subject} holds another repository or worktree ({})",
                first_five(nested)
            ),
            Unremovable::Unproven { .. } => unproven(subject),
            Unremovable::Dirty { dirt } => format!(
                "{subject} has uncommitted changes or untracked files ({})",
                first_five(dirt)
            ),
            Unremovable::WouldRefuse { blockers } => format!(
                "git worktree remove would refuse {subject}: {}",
                blockers
                    .iter()
                    .map(|b| b.check.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Unremovable::Unseen { unseen } => format!("{subject} cannot be released: {unseen}"),
            Unremovable::InUse { why } => format!("{subject} is {why}"),
        }
    }

    /// [`Self::said_of`], with the cause of an unfinished check where one line must say it all.
    pub fn said_whole(&self, subject: &str) -> String {
        match self {
            Unremovable::Unproven { cause, .. } => {
                format!("{}: {cause:#}", self.said_of(subject))
            }
            _ => self.said_of(subject),
        }
    }

    /// Whether the tree may still be released while it is kept (the runner does so when its
    /// agent is done with it): not when a mount or an unfinished check leaves what it holds
    /// unknown, nor when its processes cannot be seen or must be kept.
    pub fn releasable(&self) -> bool {
        matches!(
            self,
            Unremovable::Nested { .. }
                | Unremovable::Dirty { .. }
                | Unremovable::WouldRefuse { .. }
        )
    }
}

/// May the tree be removed now, `how`? Every check, in one order: a mount and a nested
/// repository (forced or not), uncommitted work (unless forced: a tree not proven clean is
/// refused, a forced one removed with whatever it holds), what `git worktree remove` would
/// refuse, and the processes (unseen ones refused unless forced; a tree in use kept when
/// asked to keep one).
pub(crate) fn decide(ctx: &Context, tree: &Tree, how: How) -> Result<Removable, Unremovable> {
    let path = tree.path;
    let unproven = |cause| Unremovable::Unproven {
        cause,
        forcible: false,
    };
    let mounts = crate::sys::mounts_under(path).map_err(|e| {
        unproven(
            anyhow::Error::new(e).context("could not tell whether a file system is mounted in it"),
        )
    })?;
    if !mounts.is_empty() {
        let mounts = mounts.iter().map(|m| path.join(m)).collect();
        return Err(Unremovable::Mounted { mounts });
    }
    let nested = nested_trees(path).map_err(unproven)?;
    if let Some(first) = nested.first() {
        let first = path.join(first);
        return Err(Unremovable::Nested { first, nested });
    }
    let links = ctx.links_from();
    let verdict = match dirty(&links, &ctx.repo.common_dir, path, tree.rec) {
        Ok(dirt) if dirt.is_empty() => Removable::Clean,
        Ok(dirt) if how.force => Removable::Forced { dirty: dirt.len() },
        Ok(dirt) => return Err(Unremovable::Dirty { dirt }),
        // --force discards whatever the tree holds: not knowing what that is stops nothing.
        Err(e) if how.force => Removable::ForcedUnjudged(format!("{e:#}")),
        Err(cause) => {
            return Err(Unremovable::Unproven {
                cause,
                forcible: true,
            })
        }
    };
    let force = match how.force {
        true => crate::git::Force::Once,
        false => crate::git::Force::No,
    };
    let blockers =
        removal_blockers(&ctx.repo.base, path, tree.admin, tree.locked, force).map_err(unproven)?;
    if !blockers.is_empty() {
        return Err(Unremovable::WouldRefuse { blockers });
    }
    match how.processes {
        Processes::Release(_) if how.force => {}
        Processes::Release(_) => {
            crate::sys::can_see_processes().map_err(|unseen| Unremovable::Unseen { unseen })?
        }
        Processes::KeepInUse => {
            crate::sys::can_see_processes().map_err(|unseen| Unremovable::Unseen { unseen })?;
            if let Some(why) = crate::sys::in_use(path) {
                return Err(Unremovable::InUse { why });
            }
        }
    }
    Ok(verdict)
}

/// [`Unremovable::Unproven`]'s wording about `subject`.
pub(super) fn unproven(subject: &str) -> String {
    format!("{subject} could not be proven to hold no uncommitted work")
}

/// The first five of `all`, and an ellipsis when there are more.
fn first_five(all: &[String]) -> String {
    let shown: Vec<&str> = all.iter().take(5).map(String::as_str).collect();
    format!(
        "{}{}",
        shown.join(", "),
        if all.len() > 5 { ", …" } else { "" }
    )
}

// The checks.

/// What is at one of the record's link paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkState {
    /// Still the symlink kardwt made, pointing at the base's file.
    Own,
    /// Nothing there (nothing to lose).
    Gone,
    /// Something else: a real file or directory, or a symlink kardwt did not make.
    UserWork(&'static str),
}

/// Judge what is at `worktree/rel` against the link kardwt made to `base/rel`.
pub(crate) fn link_state(base: &Path, worktree: &Path, rel: &str) -> LinkState {
    // A record names links inside the worktree; anything else is never kardwt's to unlink.
    let inside = !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return LinkState::UserWork("not a path inside the worktree");
    }
    let at = worktree.join(rel);
    let Ok(meta) = at.symlink_metadata() else {
        return LinkState::Gone;
    };
    if !meta.file_type().is_symlink() {
        return LinkState::UserWork(if meta.is_dir() {
            "a real directory replaced kardwt's link"
        } else {
            "a real file replaced kardwt's link"
        });
    }
    match std::fs::read_link(&at) {
        Ok(target) if target == base.join(rel) => LinkState::Own,
        _ => LinkState::UserWork("a symlink kardwt did not make"),
    }
}

/// The paths of `git status --porcelain -z` entries, one per entry, as people read them (any
/// byte kept, see [`git::display_path`]): a rename or copy names its new path; ignored
/// entries (`!!`) are not dirt (pure).
pub(super) fn status_paths(entries: &[git::StatusEntry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| !e.ignored())
        .map(|e| git::display_path(&e.path))
        .collect()
}

/// Is `path` the link path `link` or inside it? (pure)
fn at_or_under(path: &str, link: &str) -> bool {
    path == link
        || path
            .strip_prefix(link)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Combine git's dirty paths with the judgement of each link path (pure): a path at or under
/// one of kardwt's intact links is not dirt; a link path holding user work is, once, with why.
pub(super) fn combine(status: Vec<String>, links: &[(String, LinkState)]) -> Vec<String> {
    let own: Vec<&str> = links
        .iter()
        .filter(|(_, s)| *s == LinkState::Own)
        .map(|(l, _)| l.as_str())
        .collect();
    let mut dirt: Vec<String> = status
        .into_iter()
        .filter(|p| !own.iter().any(|l| at_or_under(p, l)))
        .collect();
    for (rel, state) in links {
        if let LinkState::UserWork(why) = state {
            dirt.retain(|p| !at_or_under(p, rel));
            dirt.push(format!("{rel} ({why})"));
        }
    }
    dirt
}

/// Tracked changes, untracked files, and user work at kardwt's link paths or hidden by the
/// exclude block of `<common_dir>/info/exclude`, in the worktree at `worktree` whose record is `rec`; empty when clean.
///
/// Clean is decided only on proof: a `git status` that provably completed (exit
/// 0, nothing on stderr, its `-z` output whole), the index as `git ls-files` read it, and
/// kardwt's own walk of every directory git does not ignore ([`crate::lifecycle::walk`]), which names
/// what git should have listed and did not (a directory git could not read is silently empty
/// to it). Any failure among them is an error: the caller refuses, it never removes.
pub(super) fn dirty(
    base: &Path,
    common_dir: &Path,
    worktree: &Path,
    rec: &Record,
) -> Result<Vec<String>> {
    uncommitted_paths(base, common_dir, worktree, rec).with_context(|| {
        format!(
            "could not tell whether {} holds uncommitted work",
            worktree.display()
        )
    })
}

fn uncommitted_paths(
    base: &Path,
    common_dir: &Path,
    worktree: &Path,
    rec: &Record,
) -> Result<Vec<String>> {
    // Ignored paths listed too (a directory matching an ignore rule as one `dir/`): what the
    // walk skips, and what the skills check looks for.
    let status = git::status_z(
        worktree,
        &[
            "--untracked-files=all",
            "--ignore-submodules=none",
            "--ignored=matching",
        ],
        &[],
    )?;
    let index = git::index_z(worktree)?;
    let known = walk::Known::new(&index, &status);
    let missed = walk::unseen(worktree, &known)?;
    let mut paths = status_paths(&status);
    paths.extend(flagged::changed(worktree)?);
    paths.extend(
        missed
            .iter()
            .map(|p| format!("{} (git status did not list it)", git::display_path(p))),
    );
    let mut links: Vec<(String, LinkState)> = rec
        .links
        .iter()
        .map(|l| (l.clone(), link_state(base, worktree, l)))
        .collect();
    // The exclude block is shared by every tree: it hides a non-directory at the skills paths
    // and at every other tree's link path here too. One that is not kardwt's link (per this
    // record) and that git ignores is user work.
    let block = crate::seed::block_paths(common_dir)?;
    for (rel, why) in hidden_by_the_block(worktree, rec, &block, &known) {
        links.push((rel, LinkState::UserWork(why)));
    }
    Ok(combine(paths, &links))
}

/// The paths kardwt's exclude block may hide (the skills paths and `block`, the block's own
/// lines) that are not links of this record, hold a non-directory, and that git ignores (so
/// `git status` does not show them), each with why it is user work.
fn hidden_by_the_block(
    worktree: &Path,
    rec: &Record,
    block: &[String],
    known: &walk::Known,
) -> Vec<(String, &'static str)> {
    let mut rels: Vec<&str> = crate::seed::SKILLS.to_vec();
    for rel in block {
        if !rels.contains(&rel.as_str()) {
            rels.push(rel);
        }
    }
    rels.into_iter()
        .filter(|rel| !rec.links.iter().any(|l| l == rel))
        .filter_map(|rel| {
            let meta = worktree.join(rel).symlink_metadata().ok()?;
            let why = if meta.is_dir() {
                return None;
            } else if meta.file_type().is_symlink() {
                "a symlink hidden from git status by kardwt's exclude entry, not this tree's link"
            } else {
                "a real file hidden from git status by kardwt's exclude entry for a link"
            };
            known
                .ignored_at_or_above(rel.as_bytes())
                .then(|| (rel.to_owned(), why))
        })
        .collect()
}

/// The repositories and worktrees nested in the worktree at `worktree` (any directory beneath it
/// holding a `.git`, ignored or not, but the submodules its index names), relative to it, as
/// raw bytes: removing the outer tree would delete their uncommitted work and their history,
/// and its release would signal their processes. An error when a directory cannot be read.
pub(super) fn nested_tree_paths(worktree: &Path) -> Result<Vec<Vec<u8>>> {
    let gitlinks = git::index_z(worktree)?
        .into_iter()
        .filter(|e| e.is_gitlink())
        .map(|e| e.path)
        .collect();
    walk::nested_trees(worktree, &gitlinks).with_context(|| {
        format!(
            "could not tell whether {} holds another repository or worktree",
            worktree.display()
        )
    })
}

/// [`nested_tree_paths`], as people read them.
pub(super) fn nested_trees(worktree: &Path) -> Result<Vec<String>> {
    let found = nested_tree_paths(worktree)?;
    Ok(found.iter().map(|p| git::display_path(p)).collect())
}

/// One reason `git worktree remove` would refuse: the check, and what to do by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub check: String,
    pub fix: String,
}

/// Why `git worktree remove`, pushed as hard as `force`, would refuse the worktree at
/// `worktree` administered in `admin`, checked before anything is released. Mirrors git's
/// `remove_worktree` and `check_clean_worktree` (builtin/worktree.c): the main worktree, a lock
/// (unless forced twice: `-f -f`), and, unforced, populated submodules. Dirtiness is
/// [`dirty()`]'s job.
pub(super) fn removal_blockers(
    base: &Path,
    worktree: &Path,
    admin: &Path,
    locked: bool,
    force: git::Force,
) -> Result<Vec<Blocker>> {
    let shown = crate::ground::quote::sh_path(worktree);
    let mut blockers = Vec::new();
    if same_dir(base, worktree) {
        blockers.push(Blocker {
            check: "it is the main worktree, which git never removes".into(),
            fix: "kardwt removes only linked worktrees".into(),
        });
    }
    if force != git::Force::Twice && (locked || admin.join("locked").exists()) {
        blockers.push(lock_blocker(worktree));
    }
    if force == git::Force::No {
        if let Some(sub) = populated_submodule(worktree, admin)? {
            blockers.push(Blocker {
                check: format!(
                    "it contains the submodule {sub} (git refuses to remove working trees \
                     containing submodules)"
                ),
                fix: format!(
                    "check the submodule for unpushed work, then pass --force (or run git \
                     worktree remove --force {shown} by hand)"
                ),
            });
        }
    }
    Ok(blockers)
}

/// A lock on the worktree at `worktree`: git refuses to remove it, forced once or not.
pub(crate) fn lock_blocker(worktree: &Path) -> Blocker {
    Blocker {
        check: "it is locked (git worktree lock)".into(),
        fix: format!(
            "unlock it first: git worktree unlock {}",
            crate::ground::quote::sh_path(worktree)
        ),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The first submodule git would count (a gitlink in the index whose directory holds a `.git`,
/// or else a `modules` dir in the admin dir), as git's `validate_no_submodules`.
fn populated_submodule(worktree: &Path, admin: &Path) -> Result<Option<String>> {
    let index = git::index_z(worktree)?;
    let populated = index.iter().filter(|e| e.is_gitlink()).find(|e| {
        use std::os::unix::ffi::OsStrExt;
        let rel = std::ffi::OsStr::from_bytes(&e.path);
        worktree.join(rel).join(".git").symlink_metadata().is_ok()
    });
    if let Some(e) = populated {
        return Ok(Some(git::display_path(&e.path)));
    }
    let modules = admin.join("modules");
    Ok(modules
        .is_dir()
        .then(|| format!("repositories in {}", modules.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_one_wording_about_its_subject() {
        let blocker = lock_blocker(Path::new("/r/card-1"));
        let many: Vec<String> = (1..=7).map(|i| format!("f{i}")).collect();
        let cases = [
            Unremovable::Mounted {
                mounts: vec![PathBuf::from("/r/card-1/data")],
            },
            Unremovable::Nested {
                first: PathBuf::from("/r/card-1/build/inner"),
                nested: vec!["build/inner".into()],
            },
            Unremovable::Unproven {
                cause: anyhow::anyhow!("git status failed"),
                forcible: true,
            },
            Unremovable::Dirty { dirt: many },
            Unremovable::WouldRefuse {
                blockers: vec![blocker],
            },
            Unremovable::InUse {
                why: "in use: pid 42 sleep".into(),
            },
        ];
        let said: Vec<String> = cases.iter().map(|c| c.said_whole("it")).collect();
        assert_eq!(
            said,
            [
                "it has a file system mounted in it (/r/card-1/data)",
                "it holds another repository or worktree (build/inner)",
                "it could not be proven to hold no uncommitted work: git status failed",
                "it has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …)",
                "git worktree remove would refuse it: it is locked (git worktree lock)",
                "it is in use: pid 42 sleep",
            ]
        );
        let releasable: Vec<bool> = cases.iter().map(Unremovable::releasable).collect();
        assert_eq!(releasable, [false, true, false, true, true, false]);
        assert_eq!(
            cases[3].said_of("/r/card-1"),
            "/r/card-1 has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …)"
        );
    }

    #[test]
    fn status_paths_skip_the_original_of_a_rename() {
        let z = b"R  new.txt\0old.txt\0?? scratch.txt\0 M src/lib.txt\0?? n\xff\0!! .env\0";
        assert_eq!(
            status_paths(&git::parse_status_z(z).unwrap()),
            vec!["new.txt", "scratch.txt", "src/lib.txt", "n\\377"]
        );
        assert!(status_paths(&[]).is_empty());
    }

    #[test]
    fn only_intact_links_are_not_dirt() {
        let status = vec![
            ".claude/skills".to_owned(),
            ".env.local/x".to_owned(),
            ".claude/skillsx".to_owned(),
            ".agents/skills/mine.md".to_owned(),
        ];
        let links = vec![
            (".claude/skills".to_owned(), LinkState::Own),
            (
                ".env".to_owned(),
                LinkState::UserWork("a real file replaced kardwt's link"),
            ),
            (".env.local".to_owned(), LinkState::Gone),
            (
                ".agents/skills".to_owned(),
                LinkState::UserWork("a real directory replaced kardwt's link"),
            ),
        ];
        assert_eq!(
            combine(status, &links),
            vec![
                ".env.local/x".to_owned(),
                ".claude/skillsx".to_owned(),
                ".env (a real file replaced kardwt's link)".to_owned(),
                ".agents/skills (a real directory replaced kardwt's link)".to_owned(),
            ]
        );
    }

    #[test]
    fn a_link_outside_the_worktree_is_never_kardwts() {
        let base = Path::new("/nonexistent/base");
        let wt = Path::new("/nonexistent/wt");
        for rel in ["../x", "/etc/passwd", "", "a/../../b", "."] {
            assert!(
                matches!(link_state(base, wt, rel), LinkState::UserWork(_)),
                "{rel}"
            );
        }
        assert_eq!(link_state(base, wt, ".claude/skills"), LinkState::Gone);
    }
}
