//! Removing a verified worktree, release first, the service `remove`, `gc` and the runner
//! commands share. Every refusal comes before anything is released: gc's judgement again, the
//! one removability decision (`removable.rs` beside it: mounts, nested trees, uncommitted work,
//! what `git worktree remove` would refuse, processes), and the repository lock, held from
//! then to the end. Then the record says `failed` (reason
//! `remove`) before anything is released, so a removal stopped at any later point, even by
//! SIGKILL, leaves a tree the next `add` prepares again and the next `remove` finishes;
//! release ([`crate::lifecycle::release`]); unlink kardwt's own links; move the tree aside and
//! `git worktree remove` it; keep the branch unless asked to delete it and it is merged into
//! the recorded base (or forced). How its refusals read: `refusal.rs` beside it.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::context::Context;
use crate::git;
use crate::lifecycle::release;
pub(crate) use crate::lifecycle::removable::Processes;
use crate::lifecycle::removable::{self, Removable, Unremovable};
use crate::lifecycle::step::Step;
use crate::sandbox;
use crate::state::{Deleting, Moved, Reason, Record, RemovalEnded, State};
use crate::verify::{self};

mod refusal;
pub(crate) use refusal::Refused;

/// How to remove.
pub(crate) struct Options {
    pub force: bool,
    pub delete_branch: bool,
    /// `gc` keeps a tree in use instead of ending what runs in it.
    pub processes: Processes,
    /// `gc`: its judgement again, under the card's lock, on what the tree holds now (`Some`:
    /// why it is kept), so a commit made between judging and removing is never lost.
    pub recheck: Option<Recheck>,
}

/// A judgement run again under the card's lock: the tree's path, admin dir, record and HEAD.
pub(super) type Recheck = Box<
    dyn Fn(
        &std::path::Path,
        &std::path::Path,
        &Record,
        Option<&crate::git::Head>,
    ) -> Option<String>,
>;

/// What a removal did.
pub(crate) struct Removal {
    pub path: std::path::PathBuf,
    pub card: String,
    pub steps: Vec<Step>,
}

/// Remove a worktree that verified, releasing first, in order; `gc` uses this too.
/// `report` (read before any lock) only names the card: the worktree is verified again under
/// the card's lock, and only that record is acted on and written.
pub(crate) fn remove_verified(
    ctx: &Context,
    report: &verify::Report,
    opts: &Options,
) -> Result<Removal> {
    let started = Instant::now();
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let crate::lifecycle::release::Relocked {
        card,
        path,
        mut rec,
        admin,
        deadline,
        held,
    } = crate::lifecycle::release::relock(
        ctx,
        report,
        cfg,
        "remove",
        "nothing was released or removed",
    )?;
    let site = sandbox::Site::of(&ctx.repo, &rec);
    let (cleanup, not_run) =
        crate::lifecycle::release::cleanup_for_removal(cfg, site, &path, opts.force)?;
    let report = &held.report;
    let holder = format!("git kardwt remove {card}");
    // On a terminal: the step it is at, and for how long.
    let step = |what: &str| format!("kardwt: removing {card}: {what}");
    let shown = crate::sys::Shown::spinner(step("checking it"));

    // Every refusal comes before anything is released, the repository lock last.
    let mut steps = vec![refusals(ctx, &path, &admin, &rec, report.locked, opts)?];
    // Held from here to the end: a lock that cannot be taken refuses while nothing is
    // released yet, never between the release and the removal.
    let untouched = |what: &'static str, cause| Refusal::Untouched {
        path: path.clone(),
        what,
        cause,
    };
    let repo_lock = ctx
        .cards
        .lock(deadline, &holder)
        .map_err(|e| untouched("the repository lock could not be taken", e))?;
    crate::sys::check_signal("before anything was released or removed")?;
    // Recorded before anything is released: whatever stops this removal from here on, even
    // SIGKILL, leaves a record that says so (`failed`, reason `remove`), so the next `add`
    // prepares the tree again instead of reusing a released tree as ready, and `remove`
    // finishes it.
    let before = (rec.state, rec.reason, rec.updated_at.clone());
    rec.state = State::Failed;
    rec.reason = Reason::Remove;
    rec.updated_at = crate::sys::now();
    crate::state::write(&admin, &rec)
        .map_err(|e| untouched("its record could not say that the removal started", e))?;

    // 1. Processes whose cwd is inside the tree; 2. the cleanup hook, while the directory
    // still exists (shared with `release`).
    shown.message(step("releasing its processes, cleanup hook and ports"));
    let (released, hook_failed) = crate::lifecycle::release::release_locked(
        ctx,
        cfg,
        cleanup.as_ref(),
        &mut rec,
        &admin,
        &path,
        crate::lifecycle::release::ReleaseHow {
            processes: opts.processes,
            deadline,
            force: opts.force,
        },
    )?;
    steps.extend(released);
    steps.extend(not_run);
    if let Some(crate::lifecycle::release::HookFailed {
        fail,
        own_lock: true,
    }) = hook_failed
    {
        // The hook failed on this command's own lock: the record says what it said before.
        (rec.state, rec.reason, rec.updated_at) = before;
        crate::state::write_or_warn(&admin, &rec);
        return Err(fail.into());
    }
    if let Some(crate::lifecycle::release::HookFailed { fail: err, .. }) = hook_failed {
        return Err(err
            .hint(format!("its record is now failed (git kardwt add {card} prepares it again); fix the hook and run remove again, or pass --force to remove anyway"))
            .into());
    }

    if let Some(sig) = crate::sys::interrupted() {
        let during = "after releasing, before the tree was removed";
        let stopped = release::stopped_releasing(ctx, &mut rec, &admin, &path, sig, during);
        return Err(stopped.into());
    }

    // 3. kardwt's own links, then the tree. A link committed since (`git add -f`) is tracked:
    // git removes it with the tree, and unlinking it first would leave a deleted tracked file
    // that makes `git worktree remove` refuse after the release.
    let tracked: std::collections::HashSet<Vec<u8>> = if rec.links.is_empty() {
        Default::default()
    } else {
        git::index_z(&path).map_or_else(
            |_| Default::default(),
            |index| index.into_iter().map(|e| e.path).collect(),
        )
    };
    for link in &rec.links {
        if removable::link_state(&ctx.links_from(), &path, link) == removable::LinkState::Own
            && !tracked.contains(link.as_bytes())
        {
            let _ = std::fs::remove_file(path.join(link));
        }
    }
    let force = if opts.force {
        git::Force::Once
    } else {
        git::Force::No
    };
    // The tree moved aside first (a rename, recorded), so git only forgets it and the bytes
    // go after returning; where it cannot move, git deletes it in place.
    shown.message(step("moving it aside and unregistering it"));
    let moved = move_aside(ctx, &rec.card, &path, opts.force)?;
    // Released but not removed: the record says `failed` since before the release (its
    // `updated_at` now says when git failed), so the next `add` prepares the tree again (reason
    // retry) instead of reusing it as ready.
    let mut mark_failed = |why: &str| {
        // git may have forgotten the tree and left part of it.
        let failed = RemovalEnded::Failed(why);
        ctx.cards
            .removal(&rec.card, &path, failed, started.elapsed());
        rec.updated_at = crate::sys::now();
        crate::state::write_or_warn(&admin, &rec);
    };
    let removed = git::worktree_remove(&repo_lock, &ctx.repo.base, &path, force, Some(deadline));
    match removed {
        Ok(out) if out.ok => {}
        Ok(out) => {
            put_back(moved, &admin);
            let why = sandbox::tail_chars(out.stderr.trim(), 120);
            mark_failed(&why);
            return Err(Refusal::GitRefused { path, why, card }.into());
        }
        Err(e) => {
            put_back(moved, &admin);
            mark_failed(&format!("{e:#}"));
            return Err(e);
        }
    }
    steps.push(delete(moved));
    drop(shown);
    // 4. The branch.
    let asked = match (opts.delete_branch, opts.force) {
        (false, _) => BranchAsked::Keep,
        (true, false) => BranchAsked::Delete,
        (true, true) => BranchAsked::DeleteForced,
    };
    let branch = branch_step(&repo_lock, ctx, &rec, asked);
    steps.push(branch);
    // 5. The card's claim, last.
    let removed = RemovalEnded::Done("ok");
    ctx.cards
        .removal(&rec.card, &path, removed, started.elapsed());
    Ok(Removal {
        path,
        card: rec.card.to_string(),
        steps,
    })
}

// The tree of a removal moved aside instead of deleted in place: renamed to a hidden sibling
// and recorded (`state/aside.rs`) just before git forgets it, put back when git refuses, and
// deleted by a detached process once git has forgotten it, so `remove` returns at once.

/// A move aside, or why the tree stays for git to delete in place.
type Attempt = anyhow::Result<Moved>;

/// Move the tree at `path` aside (under the repository lock, after every refusal and the
/// release). Unless forced, only a tree `git worktree remove` would delete: the same `git
/// status` it runs first finds nothing (the cleanup hook may have left files); otherwise the
/// tree stays, and git, run on it in place, refuses it in its own words as before. A tree that
/// stays in place for git, which deletes across whatever is mounted in it: one mounted since
/// the refusals (by the cleanup hook, say) stops the removal here (the error), after the
/// release, the record still `failed`.
fn move_aside(ctx: &Context, card: &str, path: &Path, force: bool) -> Result<Attempt> {
    let clean = match force {
        true => Ok(()),
        false => match crate::git::status_z(path, &["--ignore-submodules=none"], &[]) {
            Ok(entries) if entries.is_empty() => Ok(()),
            Ok(_) => Err(anyhow::anyhow!("it holds modified or untracked files")),
            Err(e) => Err(e),
        },
    };
    let attempt = clean.and_then(|()| ctx.cards.move_aside(card, path));
    if attempt.is_ok() {
        return Ok(attempt);
    }
    let mounted = crate::sys::mounts_under(path).unwrap_or_default();
    let Some(first) = mounted.first() else {
        return Ok(attempt);
    };
    let at = path.join(first);
    Err(crate::ground::error::Fail::new(
        crate::ground::error::Code::Refused,
        format!(
            "{} has a file system mounted in it since it was checked ({}); it was released but \
             not removed",
            path.display(),
            at.display()
        ),
    )
    .hint(format!(
        "unmount it (umount {}), then run remove again (its record is failed)",
        crate::ground::quote::sh_path(&at)
    ))
    .into())
}

/// git failed: a tree it still has registered (its admin dir's `gitdir` is there) goes back at
/// its path, as if never moved; one git forgot part of goes on being deleted, as git would
/// have deleted it before failing on the admin dir.
fn put_back(attempt: Attempt, admin: &Path) {
    if let Ok(moved) = attempt {
        if !admin.join("gitdir").exists() {
            delete(Ok(moved));
            return;
        }
        let (from, at) = (moved.aside.from.clone(), moved.aside.path.clone());
        if !crate::state::put_back(moved) {
            eprintln!(
                "warning: the tree could not be renamed back from {} to {}; move it back by hand",
                at.display(),
                from.display()
            );
        }
    }
}

/// git forgot the tree: its bytes deleted after returning (or now, when no process can
/// start); the `worktree` step that says which, and where bytes not yet deleted lie.
fn delete(attempt: Attempt) -> Step {
    let (ok, detail) = match attempt {
        Err(why) => (true, format!("removed in place ({why:#})")),
        // Its files go in the background: the path is free already.
        Ok(moved) => {
            let at = moved.aside.path.display().to_string();
            match crate::state::start_deleting(moved) {
                Deleting::Background => (
                    true,
                    format!(
                        "removed; its files are being deleted in the background from {at} (list, \
                         doctor and gc name what cannot be)"
                    ),
                ),
                Deleting::InPlace(Ok(())) => (
                    true,
                    "removed (moved aside and deleted: no process could start)".into(),
                ),
                Deleting::InPlace(Err(why)) => (
                    false,
                    format!("unregistered, but not all deleted: {why} (git kardwt gc --apply tries again)"),
                ),
            }
        }
    };
    Step {
        step: "worktree",
        ms: None,
        ok,
        detail,
    }
}

// What removal does with a card's branch: kept unless `--delete-branch`, and then deleted
// only when merged into the recorded base (or `--force`) and no commit on it or named by its
// reflog would be lost ([`crate::git::may_delete_branch`], the decision `gc --branches` uses
// too).

/// What removal was asked to do with the card's branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BranchAsked {
    /// Keep it (no `--delete-branch`).
    Keep,
    /// `--delete-branch`: delete it when merged into the recorded base.
    Delete,
    /// `--delete-branch --force`: merged or not.
    DeleteForced,
}

/// Delete the branch when asked, merged into the recorded base (or forced), and nothing on it
/// would be lost; otherwise keep it, saying why and how to delete it by hand.
fn branch_step(
    repo_lock: &crate::sys::RepoLock,
    ctx: &Context,
    rec: &Record,
    asked: BranchAsked,
) -> Step {
    let step = |ok, detail: String| Step {
        step: "branch",
        ms: None,
        ok,
        detail,
    };
    let branch = &rec.branch;
    if branch.is_empty() {
        return step(true, "no branch recorded".into());
    }
    if asked == BranchAsked::Keep {
        return step(true, format!("{branch} kept"));
    }
    let merged = merged_into_base(ctx, rec);
    if !merged && asked != BranchAsked::DeleteForced {
        return step(
            false,
            format!(
                "{branch} kept: not merged into {} (use --force to delete it anyway, once every \
                 commit on it is on another ref)",
                rec.base_ref
            ),
        );
    }
    let dir = &ctx.repo.base;
    let base = base_of(ctx, rec);
    let base = base
        .as_ref()
        .map(|(oid, name)| (oid.as_str(), name.as_str()));
    if let Err(lose) = git::may_delete_branch(dir, base, branch) {
        let quoted = crate::ground::quote::sh_path(dir);
        return step(
            false,
            format!(
                "{branch} kept: {lose}; check it with git -C {quoted} log {branch} (and git -C \
                 {quoted} reflog {branch}), then delete it by hand: git -C {quoted} branch -D \
                 {branch}"
            ),
        );
    }
    match git::branch_delete(repo_lock, dir, branch) {
        Ok(_) => step(
            true,
            format!("{branch} deleted{}", if merged { "" } else { " (forced)" }),
        ),
        Err(e) => step(false, format!("{branch} kept: {e:#}")),
    }
}

/// The base whose commits' changes count as kept: the recorded base's remote-tracking ref, or
/// the recorded base itself when it is a ref outside kardwt's branches. `(commit, name)`.
fn base_of(ctx: &Context, rec: &Record) -> Option<(String, String)> {
    let tracking = crate::config::tracking_ref_of(&rec.base_remote, &rec.base_ref);
    let own = rec
        .base_ref
        .starts_with("refs/")
        .then(|| rec.base_ref.clone())
        .filter(|r| !r.starts_with(&format!("refs/heads/{}", git::CARD_BRANCHES)));
    tracking.into_iter().chain(own).find_map(|r| {
        let oid = git::ref_commit(&ctx.repo.base, &r)?;
        let name = r
            .strip_prefix("refs/remotes/")
            .or_else(|| r.strip_prefix("refs/heads/"))
            .unwrap_or(&r)
            .to_owned();
        Some((oid, name))
    })
}

/// Is the branch's tip contained in the recorded base (its remote-tracking ref, or the
/// recorded base commit)?
pub(crate) fn merged_into_base(ctx: &Context, rec: &Record) -> bool {
    let branch = format!("refs/heads/{}", rec.branch);
    let tracking = crate::config::tracking_ref_of(&rec.base_remote, &rec.base_ref);
    tracking
        .into_iter()
        .chain((!rec.base_oid.is_empty()).then(|| rec.base_oid.clone()))
        .any(|base| git::is_ancestor(&ctx.repo.base, &branch, &base))
}

/// Every refusal of a removal but the repository lock, made before anything is released: gc's
/// judgement again, then the one removability decision ([`removable::decide`]). The `clean`
/// step when none refuses.
fn refusals(
    ctx: &Context,
    path: &Path,
    admin: &Path,
    rec: &Record,
    locked: bool,
    opts: &Options,
) -> Result<Step> {
    if let Some(recheck) = &opts.recheck {
        let head = crate::git::read_head(admin);
        if let Some(why) = recheck(path, admin, rec, head.as_ref()) {
            return Err(Refusal::NoLongerCollectable {
                path: path.to_owned(),
                why,
            }
            .into());
        }
    }
    let tree = removable::Tree {
        path,
        admin,
        rec,
        locked,
    };
    let how = removable::How {
        force: opts.force,
        processes: opts.processes,
    };
    // An unproven check keeps its cause as the refusal's source.
    let removable = removable::decide(ctx, &tree, how).map_err(|why| match why {
        Unremovable::Unproven { cause, forcible } => Refusal::Unproven {
            path: path.to_owned(),
            cause,
            forcible,
        },
        why => Refusal::Unremovable {
            path: path.to_owned(),
            why,
        },
    })?;
    let (ok, detail) = match removable {
        Removable::Clean => (true, "clean".into()),
        Removable::Forced { dirty } => (false, format!("{dirty} dirty paths, forced")),
        Removable::ForcedUnjudged(why) => (false, format!("not judged, forced: {why}")),
    };
    Ok(Step {
        step: "clean",
        ms: None,
        ok,
        detail,
    })
}

/// Why a removal stopped, every one before anything was released but [`Refusal::GitRefused`].
/// Not an error type itself: `?` turns it into the error whose exit code its variant fixes
/// ([`Refused`], in a [`Fail`](crate::ground::error::Fail); `refusal.rs` beside it), so no
/// refusal can reach `main` as a plain exit 1.
#[derive(Debug)]
pub enum Refusal {
    /// A lock or a record write failed before the release.
    Untouched {
        path: PathBuf,
        what: &'static str,
        cause: anyhow::Error,
    },
    /// Released, then `git worktree remove` refused: what it said.
    GitRefused {
        path: PathBuf,
        why: String,
        card: crate::ground::card::CardId,
    },
    /// A check could not finish ([`Unremovable::Unproven`], its cause kept as the source).
    Unproven {
        path: PathBuf,
        cause: anyhow::Error,
        forcible: bool,
    },
    /// gc's recheck kept the tree: not a failure, the tree stays as it is (gc lists it as kept).
    NoLongerCollectable { path: PathBuf, why: String },
    /// The removability decision's every other answer.
    Unremovable { path: PathBuf, why: Unremovable },
}

/// Prune the registration of a worktree whose directory is gone (`git worktree remove` of the
/// missing tree: what `git worktree prune` does, for it alone), then forget its card's claim
/// and log `removed` with `note`: gc and the runners' removal of a tree already deleted. Its
/// resources are the caller's to release first; `Some` when git refused, in its words.
pub(crate) fn prune_gone(
    ctx: &Context,
    card: &str,
    path: &std::path::Path,
    deadline: Instant,
    note: &str,
) -> Result<Option<PruneRefused>> {
    let holder = format!("git kardwt (pruning {card})");
    let repo_lock = ctx.cards.lock(deadline, &holder)?;
    let out = git::worktree_remove(
        &repo_lock,
        &ctx.repo.base,
        path,
        git::Force::No,
        Some(deadline),
    )?;
    if !out.ok {
        return Ok(Some(PruneRefused(out.stderr.trim().to_owned())));
    }
    let pruned = RemovalEnded::Done(note);
    ctx.cards
        .removal(card, path, pruned, std::time::Duration::ZERO);
    Ok(None)
}

/// git refused to prune a gone tree's registration: what it said.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct PruneRefused(pub String);
