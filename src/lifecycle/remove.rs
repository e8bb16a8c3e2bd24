//! Removing a verified worktree, release first, the service `remove`, `gc` and the runner
//! commands share. Every refusal comes before anything is released: gc's judgement again, the
//! one removability decision (`removable.rs` beside it: mounts, nested trees, uncommitted work,
//! what `git worktree remove` would refuse, processes), and the repository lock, held from
//! then to the end. Then the record says `failed` (reason
//! `remove`) before anything is released, so a removal stopped at any later point, even by
//! SIGKILL, leaves a tree the next `add` prepares again and the next `remove` finishes;
//! release ([`crate::lifecycle::release`]); unlink kardwt's own links; `git worktree remove`; keep the
//! branch unless asked to delete it and it is merged into the recorded base (or forced).
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::context::Context;
use crate::ground::error::{code_or, Code, Fail, Kind};
use crate::lifecycle::release;
pub(crate) use crate::lifecycle::release::Processes;
use crate::lifecycle::removable::{self, Removable, Unremovable};
use crate::lifecycle::step::Step;
use crate::sandbox;
use crate::state::{Reason, Record, RemovalEnded, State};
use crate::verify::{self};
use crate::{git, lifecycle::dirty};

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
        if dirty::link_state(&ctx.links_from(), &path, link) == dirty::LinkState::Own
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
    let moved = crate::lifecycle::move_aside::move_aside(ctx, &rec.card, &path, opts.force);
    crate::lifecycle::move_aside::refuse_late_mounts(&moved, &path)?;
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
            crate::lifecycle::move_aside::put_back(moved, &admin);
            let why = sandbox::tail_chars(out.stderr.trim(), 120);
            mark_failed(&why);
            return Err(Refusal::GitRefused { path, why, card }.into());
        }
        Err(e) => {
            crate::lifecycle::move_aside::put_back(moved, &admin);
            mark_failed(&format!("{e:#}"));
            return Err(e);
        }
    }
    steps.push(crate::lifecycle::move_aside::delete(moved));
    drop(shown);
    // 4. The branch.
    use crate::lifecycle::card_branch::BranchAsked;
    let asked = match (opts.delete_branch, opts.force) {
        (false, _) => BranchAsked::Keep,
        (true, false) => BranchAsked::Delete,
        (true, true) => BranchAsked::DeleteForced,
    };
    let branch = crate::lifecycle::card_branch::branch_step(&repo_lock, ctx, &rec, asked);
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
    let removable =
        removable::decide(ctx, &tree, how).map_err(|why| Refusal::refused(path.to_owned(), why))?;
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
/// ([`Refused`], in a [`Fail`]), so no refusal can reach `main` as a plain exit 1.
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

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNTOUCHED: &str = "nothing was released or removed";
        match self {
            Refusal::Untouched { path, what, .. } => {
                write!(f, "{} was not removed: {what}; {UNTOUCHED}", path.display())
            }
            Refusal::GitRefused { path, why, .. } => {
                write!(f, "git worktree remove refused {}: {why}", path.display())
            }
            Refusal::Unproven { path, .. } => write!(
                f,
                "{}; {UNTOUCHED}",
                removable::unproven(&path.display().to_string())
            ),
            Refusal::NoLongerCollectable { path, why } => write!(
                f,
                "{} is no longer collectable: {why}; {UNTOUCHED}",
                path.display()
            ),
            Refusal::Unremovable { path, why } => {
                write!(
                    f,
                    "{}; {UNTOUCHED}",
                    why.said_of(&path.display().to_string())
                )
            }
        }
    }
}

/// A [`Refusal`] as an error: its message, its cause as the source, its code and hints.
#[derive(Debug)]
pub(crate) struct Refused(pub Refusal);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Refusal::Untouched { cause, .. } | Refusal::Unproven { cause, .. } => {
                Some(cause.as_ref())
            }
            _ => None,
        }
    }
}

/// The one way a refusal leaves: as the [`Fail`] its variant's code fixes.
impl From<Refusal> for anyhow::Error {
    fn from(refusal: Refusal) -> anyhow::Error {
        anyhow::Error::new(Fail::from(Refused(refusal)))
    }
}

impl Refusal {
    /// The refusal of the tree at `path` the decision answered with `why`.
    fn refused(path: PathBuf, why: Unremovable) -> Refusal {
        match why {
            Unremovable::Unproven { cause, forcible } => Refusal::Unproven {
                path,
                cause,
                forcible,
            },
            why => Refusal::Unremovable { path, why },
        }
    }
}

impl Kind for Refused {
    fn code(&self) -> Code {
        match &self.0 {
            Refusal::Untouched { cause, .. } | Refusal::Unproven { cause, .. } => {
                code_or(cause, Code::Failed)
            }
            Refusal::Unremovable {
                why: Unremovable::Mounted { .. },
                ..
            } => Code::Refused,
            _ => Code::Failed,
        }
    }
    fn hints(&self) -> Vec<String> {
        let hint = match &self.0 {
            Refusal::Untouched { .. } | Refusal::NoLongerCollectable { .. } => return Vec::new(),
            Refusal::GitRefused { card, .. } => format!(
                "processes were released and the cleanup hook ran, so its record is now failed \
                 (git kardwt add {card} prepares it again); fix what git names and run remove again"
            ),
            Refusal::Unproven { path, forcible, .. } => unproven_fix(path, *forcible),
            Refusal::Unremovable { path, why } => fix(path, why),
        };
        vec![hint]
    }
}

/// What to do about a tree not proven clean (`--force` too, when it would pass the check).
fn unproven_fix(path: &Path, forcible: bool) -> String {
    format!(
        "run the command again; if this repeats, git -C {} status names the problem{}",
        crate::ground::quote::sh_path(path),
        if forcible {
            "; --force removes the tree with whatever it holds"
        } else {
            ""
        }
    )
}

/// What to do by hand about `why`, the tree at `path`'s, then run remove again.
fn fix(path: &Path, why: &Unremovable) -> String {
    match why {
        Unremovable::Unproven { forcible, .. } => unproven_fix(path, *forcible),
        Unremovable::Dirty { .. } => {
            "commit, stash or delete them, or pass --force to discard them".into()
        }
        Unremovable::WouldRefuse { blockers } => format!(
            "{}; then run remove again",
            blockers
                .iter()
                .map(|b| b.fix.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Unremovable::Unseen { .. } => "end the processes working in it yourself, then pass \
                                       --force (nothing is signalled then)"
            .into(),
        Unremovable::InUse { .. } => "automatic cleanup never ends a process: stop it, or \
                                      remove the tree yourself with git kardwt remove"
            .into(),
        Unremovable::Mounted { mounts } => format!(
            "unmount it (umount {}), then run remove again; --force does not remove it: \
             kardwt never deletes across a file system boundary",
            mounts
                .first()
                .map(|m| crate::ground::quote::sh_path(m))
                .unwrap_or_default()
        ),
        Unremovable::Nested { first, .. } => {
            let shown = crate::ground::quote::sh_path(first);
            format!(
                "check it for uncommitted work and unpushed commits (git -C {shown} status), \
                 move it out of the tree or delete it by hand (git worktree remove {shown}, \
                 for a worktree), then run remove again; --force does not remove it"
            )
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusals_variant_fixes_its_code_and_a_wrapped_lock_keeps_its_own() {
        let path = PathBuf::from("/r/card-1");
        let dirt: Vec<String> = (1..=6).map(|i| format!("f{i}")).collect();
        let dirty = Refused(Refusal::Unremovable {
            path: path.clone(),
            why: Unremovable::Dirty { dirt },
        });
        assert_eq!(dirty.code(), Code::Failed);
        assert_eq!(
            dirty.to_string(),
            "/r/card-1 has uncommitted changes or untracked files (f1, f2, f3, f4, f5, …); \
             nothing was released or removed"
        );
        let deadline = anyhow::Error::new(Fail::new(Code::Deadline, "the lock is held"));
        let untouched = Refusal::Untouched {
            path,
            what: "the repository lock could not be taken",
            cause: deadline,
        };
        assert!(Refused(Refusal::NoLongerCollectable {
            path: PathBuf::from("/r/card-2"),
            why: "x".into()
        })
        .hints()
        .is_empty());
        // `?` (here `from`) is the only way out, and it keeps the code the variant fixes.
        let err = anyhow::Error::from(untouched);
        assert_eq!(crate::ground::error::code_of(&err), Some(Code::Deadline));
        assert!(matches!(
            crate::ground::error::kind_of::<Refused>(&err),
            Some(Refused(Refusal::Untouched { .. }))
        ));
    }

    #[test]
    fn only_an_unproven_check_force_passes_suggests_force() {
        let hint = |forcible| {
            let path = PathBuf::from("/r/card-1");
            let cause = anyhow::anyhow!("could not read a directory");
            Refused(Refusal::Unproven {
                path,
                cause,
                forcible,
            })
            .hints()
        };
        let status = "run the command again; if this repeats, git -C /r/card-1 status names the \
                      problem";
        assert_eq!(hint(false), [status.to_owned()]);
        assert_eq!(
            hint(true),
            [format!(
                "{status}; --force removes the tree with whatever it holds"
            )]
        );
    }
}
