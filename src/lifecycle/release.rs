//! Releasing a card's worktree, the service `release`,
//! `remove`, `gc` and the runner commands share: the processes whose cwd is inside the tree
//! (only when a person or agent asked: automatic cleanup never signals), the cleanup hook with
//! its reason, the ports; the record becomes `released`. A tree whose directory is already
//! gone gets what its record still names released (orphan claims: `orphan.rs`).
use crate::sys;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::{Cleanup, Config};
use crate::context::Context;
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::lifecycle::removable::Processes;
use crate::lifecycle::step::Step;
use crate::sandbox::{self, Phase};
use crate::state::{Happened, Loaded, Reason, Record, State};
use crate::verify::{self, Verdict};

/// `release --json` and `remove --json`: the tree, its card and each step.
#[derive(serde::Serialize)]
pub(crate) struct StepsJson<'a> {
    pub path: std::borrow::Cow<'a, str>,
    pub card: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
    pub steps: &'a [Step],
}

/// What a release did.
pub(crate) struct Release {
    pub path: PathBuf,
    pub card: String,
    pub steps: Vec<Step>,
}

/// A configured cleanup hook and its resolved program.
pub(super) type CleanupRun<'c> = (&'c Cleanup, PathBuf);

/// The configured cleanup hook and its resolved program, if any: committed helpers as trusted
/// for `site`'s commit.
pub(super) fn cleanup_program<'c>(
    cfg: &'c Config,
    site: sandbox::Site<'_>,
) -> Result<Option<(&'c Cleanup, PathBuf)>> {
    let Some(c) = &cfg.cleanup else {
        return Ok(None);
    };
    match sandbox::resolve_hook(&c.argv, &cfg.helpers, "worktree.cleanup.argv", Some(site))? {
        Some(program) => Ok(Some((c, program))),
        None => anyhow::bail!("internal error: the cleanup hook resolved to nothing"),
    }
}

/// The cleanup hook a removal (`force`: `remove --force`) or a release of the tree at `path`
/// runs, resolved before anything is touched. When its program cannot run (its committed helper
/// is not trusted on this machine, or is not among the helpers of the commit the card was made
/// from: a team that adds a cleanup script never gave one to the older cards), `force` goes on
/// without it and the second value is the step that says what was not run and why; anything
/// else is a refusal naming `remove --force` and `trust`.
pub(super) fn cleanup_for_removal<'c>(
    cfg: &'c Config,
    site: sandbox::Site<'_>,
    path: &Path,
    force: bool,
) -> Result<(Option<CleanupRun<'c>>, Option<Step>)> {
    let Some(c) = &cfg.cleanup else {
        return Ok((None, None));
    };
    let key = "worktree.cleanup.argv";
    match sandbox::resolve_hook(&c.argv, &cfg.helpers, key, Some(site)) {
        Ok(Some(program)) => Ok((Some((c, program)), None)),
        Ok(None) => anyhow::bail!("internal error: the cleanup hook resolved to nothing"),
        Err(why) if force => Ok((
            None,
            Some(Step {
                step: "cleanup hook",
                ms: None,
                ok: false,
                detail: format!("not run (--force): {}", why.message),
            }),
        )),
        Err(mut why) => {
            let at = site.commit.get(..12).unwrap_or(site.commit);
            let forced = crate::ground::quote::sh_path(path);
            if cfg.helpers.from_repository.is_some() {
                why = why.hint(format!(
                    "a card's cleanup hook runs the committed helpers of the commit it was made \
                     from ({at}) as a person trusted them on this machine (git kardwt trust); a \
                     helper committed since does not run for it"
                ));
            }
            Err(why
                .hint(format!(
                    "to remove the tree without its cleanup hook: git kardwt remove --path \
                     {forced} --force (which also removes uncommitted work: check git -C \
                     {forced} status first)"
                ))
                .into())
        }
    }
}

/// How a release goes: which processes, until when, and whether a failed cleanup hook stops it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReleaseHow {
    pub processes: Processes,
    pub deadline: Instant,
    /// A failed cleanup hook does not stop the caller (`remove --force`).
    pub force: bool,
}

/// The release steps of a removal, in order, on a worktree verified under its card's lock: the
/// processes whose cwd is inside `path` (event `released`; none with
/// [`Processes::KeepInUse`]), then the cleanup hook (reason
/// `remove`) while the directory exists. A failed cleanup hook is returned as the second value
/// (unless `force`), unhinted, after its `failed` event and `last_hook` were written; the caller decides
/// what the record becomes. An interrupt after the processes were released, or
/// during the hook, marks the record `failed` and is an error even with `force`.
pub(super) fn release_locked(
    ctx: &Context,
    cfg: &Config,
    cleanup: Option<&(&Cleanup, PathBuf)>,
    rec: &mut Record,
    admin: &Path,
    path: &Path,
    how: ReleaseHow,
) -> Result<(Vec<Step>, Option<HookFailed>)> {
    let ReleaseHow {
        processes,
        deadline,
        force,
    } = how;
    let mut steps = Vec::new();
    // 1. Processes whose cwd is inside the tree.
    let t = Instant::now();
    let released = match processes {
        // A tree nested in this one is not this tree's to release: its processes are spared.
        Processes::Release(grace) => {
            use std::os::unix::ffi::OsStrExt;
            let nested = crate::lifecycle::removable::nested_tree_paths(path)?;
            let spared: Vec<PathBuf> = nested
                .iter()
                .map(|rel| path.join(std::ffi::OsStr::from_bytes(rel)))
                .map(|at| std::fs::canonicalize(&at).unwrap_or(at))
                .collect();
            sys::release_processes(path, grace, &spared)
        }
        // The caller refused a tree in use before anything was released (`lifecycle/remove.rs`).
        Processes::KeepInUse => Ok(sys::Released::default()),
    };
    // Processes that cannot be seen were not signalled: said so, never "no process left" (remove
    // and gc refused such a tree before, unless forced).
    let (ok, released) = match released {
        Ok(r) => (true, r.to_string()),
        Err(unseen) => (false, format!("none signalled: {unseen}")),
    };
    steps.push(Step {
        step: "processes",
        ms: None,
        ok,
        detail: released.clone(),
    });
    ctx.cards
        .note(&rec.card, path, Happened::Released(&released), t.elapsed());
    if let Some(sig) = crate::sys::interrupted() {
        if let Processes::KeepInUse = processes {
            // Nothing was signalled: nothing to record.
            return Err(crate::sys::stopped(sig, "before anything was released").into());
        }
        return Err(stopped_releasing(
            ctx,
            rec,
            admin,
            path,
            sig,
            "after its processes were released",
        )
        .into());
    }

    // 2. The cleanup hook, while the directory still exists.
    let Some((hook, program)) = cleanup else {
        return Ok((steps, None));
    };
    rec.reason = Reason::Remove;
    let cap = Duration::from_secs(hook.timeout_seconds);
    let outcome = sandbox::run_phase(&sandbox::Hook {
        phase: Phase::Cleanup,
        program,
        argv: &hook.argv,
        cwd: path,
        facts: &sandbox::Facts::of(rec, ctx.base_shown()),
        passthrough: &cfg.environment.passthrough,
        extra: &[],
        cached: false,
        cap,
        deadline,
        log: None,
    })?;
    rec.last_hook = Some(outcome.last_hook(Phase::Cleanup, cap));
    crate::state::write_or_warn(admin, rec);
    if let sandbox::Ending::Signal(sig) = outcome.ending {
        return Err(stopped_releasing(
            ctx,
            rec,
            admin,
            path,
            sig,
            "during the cleanup hook, which was killed",
        )
        .into());
    }
    let ok = outcome.succeeded();
    steps.push(Step {
        step: "cleanup hook",
        ms: None,
        ok,
        detail: outcome.ending.to_string(),
    });
    // Commands the hook ran that needed a lock this process holds failed at once: the hook
    // failed for kardwt's own lock, not for anything of the tree's.
    let own_locks = &outcome.needed_locks;
    if ok || force {
        return Ok((steps, None));
    }
    if !own_locks.is_empty() {
        let fail = Fail::from(Refusal::HookOwnLock {
            card: rec.card.to_string(),
            locks: own_locks.clone(),
            path: path.to_owned(),
        });
        return Ok((
            steps,
            Some(HookFailed {
                fail,
                own_lock: true,
            }),
        ));
    }
    let failed = Happened::Failed("cleanup hook");
    ctx.cards.note(&rec.card, path, failed, outcome.duration);
    let fail = Fail::from(Refusal::HookFailed {
        card: rec.card.to_string(),
        ending: outcome.ending,
        path: path.to_owned(),
        tail: sandbox::tail_chars(&outcome.tail, 300),
    });
    Ok((
        steps,
        Some(HookFailed {
            fail,
            own_lock: false,
        }),
    ))
}

/// A cleanup hook that failed, as [`release_locked`] returns it.
pub(super) struct HookFailed {
    pub fail: Fail,
    /// It failed because a kardwt command it ran needed a lock the caller holds: nothing of the
    /// tree's, so the card is not marked `failed` for it.
    pub own_lock: bool,
}

/// Release a worktree that verified (`report`, read before any lock, only names the card):
/// verified again under the card's lock, released, its ports given back, state `released`.
pub(crate) fn release_verified(
    ctx: &Context,
    report: &verify::Report,
    grace: Duration,
) -> Result<Release> {
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let Relocked {
        card: _,
        path,
        mut rec,
        admin,
        deadline,
        held: _held,
    } = relock(ctx, report, cfg, "release", "nothing was released")?;
    let (cleanup, _) = cleanup_for_removal(cfg, sandbox::Site::of(&ctx.repo, &rec), &path, false)?;
    let (mut steps, hook_failed) = release_locked(
        ctx,
        cfg,
        cleanup.as_ref(),
        &mut rec,
        &admin,
        &path,
        ReleaseHow {
            processes: Processes::Release(grace),
            deadline,
            force: false,
        },
    )?;
    if let Some(HookFailed {
        fail,
        own_lock: true,
    }) = hook_failed
    {
        return Err(fail.into());
    }
    if let Some(HookFailed { fail: err, .. }) = hook_failed {
        // Processes are gone but the hook did not finish: `failed`, so `add` prepares again.
        rec.state = State::Failed;
        rec.updated_at = crate::sys::now();
        crate::state::write_or_warn(&admin, &rec);
        return Err(err
            .hint("its record is now failed (git kardwt add prepares it again); fix the hook and run release again")
            .into());
    }
    steps.push(give_back(&mut rec, &admin)?);
    Ok(Release {
        path,
        card: rec.card.to_string(),
        steps,
    })
}

/// The ports back, state `released`, written.
fn give_back(rec: &mut Record, admin: &Path) -> Result<Step> {
    let ports = std::mem::take(&mut rec.ports);
    rec.state = State::Released;
    rec.reason = Reason::Remove;
    rec.updated_at = crate::sys::now();
    crate::state::write(admin, rec)?;
    let shown: Vec<String> = ports.iter().map(u16::to_string).collect();
    Ok(Step {
        step: "ports",
        ms: None,
        ok: true,
        detail: if ports.is_empty() {
            "none held".into()
        } else {
            format!("{} released", shown.join(", "))
        },
    })
}

/// Release what a registered worktree whose directory is gone still holds: the processes
/// whose (deleted) cwd was inside, and the ports its record names. The cleanup hook cannot run
/// without its directory. The registration stays for `git kardwt gc --prunable --apply`.
pub(crate) fn release_gone(
    ctx: &Context,
    report: &verify::Report,
    grace: Duration,
) -> Result<Release> {
    let path = report.path.clone();
    let Some(admin) = report.admin.clone() else {
        anyhow::bail!("internal error: a prunable worktree without admin dir");
    };
    let load = || match crate::state::load_record(&admin) {
        Loaded::Parsed(r) => Ok(*r),
        Loaded::Absent => Err(Fail::from(Refusal::GoneUnmanaged { path: path.clone() })),
        Loaded::Malformed(why) => Err(Fail::from(Refusal::Malformed(why))),
    };
    let card = load()?.card;
    let cfg = ctx.rules()?.config;
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let _card_lock = sys::take_card_lock(
        &ctx.repo.common_dir,
        &card,
        deadline,
        &format!("git kardwt release {card}"),
    )?;
    // Read again under the lock: only the record on disk now is written.
    let mut rec = load()?;
    if rec.card != card.as_str() {
        return Err(Fail::from(Refusal::RecordChanged { path, card }).into());
    }
    let t = Instant::now();
    let released = match sys::release_processes(&path, grace, &[]) {
        Ok(r) => r.to_string(),
        Err(unseen) => format!("none signalled: {unseen}"),
    };
    let gone = format!("directory gone; {released}");
    ctx.cards
        .note(&rec.card, &path, Happened::Released(&gone), t.elapsed());
    let mut steps = vec![
        Step {
            step: "processes",
            ms: None,
            ok: true,
            detail: released.to_string(),
        },
        Step {
            step: "cleanup hook",
            ms: None,
            ok: true,
            detail: "not run: the directory is gone".into(),
        },
    ];
    steps.push(give_back(&mut rec, &admin)?);
    Ok(Release {
        path,
        card: rec.card.to_string(),
        steps,
    })
}

/// `sig` stopped releasing `path` `during` a step: the record says `failed` (reason `remove`),
/// since what the tree ran is released, or half cleaned up; the next `add` prepares it again.
pub(super) fn stopped_releasing(
    ctx: &Context,
    rec: &mut Record,
    admin: &Path,
    path: &Path,
    sig: crate::sys::Signal,
    during: &str,
) -> crate::ground::error::Fail {
    rec.state = State::Failed;
    rec.reason = Reason::Remove;
    rec.updated_at = crate::sys::now();
    let recorded = crate::state::write(admin, rec).is_ok();
    let stopped = crate::sys::stopped(sig, during);
    let failed = Happened::Failed(&stopped.message);
    ctx.cards.note(&rec.card, path, failed, Duration::ZERO);
    let card = &rec.card;
    stopped.hint(if recorded {
        format!("{} is kept and its record is now failed (git kardwt add {card} prepares it again); run the command again to finish", path.display())
    } else {
        format!("{} is kept; run the command again to finish", path.display())
    })
}

/// A verified worktree verified again under its card's lock, before `remove` or `release`
/// acts on it: only the record read then is acted on and written (a copy read before the lock
/// could be stale).
pub(super) struct Relocked {
    pub card: CardId,
    pub path: PathBuf,
    pub rec: Record,
    pub admin: PathBuf,
    /// The action's deadline, started from the rules.
    pub deadline: Instant,
    /// Holds the card's lock until dropped; its report is the one verified under the lock.
    pub held: crate::context::Locked,
}

/// Take the card's lock for `verb` (`remove`, `release`) and verify `report`'s worktree again;
/// a worktree that no longer verifies is an error saying `nothing` happened.
pub(super) fn relock(
    ctx: &Context,
    report: &verify::Report,
    cfg: &Config,
    verb: &'static str,
    nothing: &'static str,
) -> Result<Relocked> {
    let Some(seen) = &report.record else {
        anyhow::bail!("internal error: a verified worktree without record");
    };
    let card = seen.card.clone();
    let path = report.path.clone();
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let holder = format!("git kardwt {verb} {card}");
    let held = crate::context::lock_and_verify(ctx, &card, Some(&card), deadline, &holder, |_| {
        Ok(path.clone())
    })?;
    let now = &held.report;
    let (Verdict::Verified, Some(rec), Some(admin)) =
        (now.verdict, now.record.clone(), now.admin.clone())
    else {
        return Err(Fail::from(Refusal::Changed {
            path,
            card,
            explain: now.explain(),
            verb,
            nothing,
        })
        .into());
    };
    Ok(Relocked {
        card,
        path,
        rec,
        admin,
        deadline,
        held,
    })
}

/// Why a release stopped, or what its cleanup hook's failure says.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// The hook ran a kardwt command that needs a lock this command holds.
    #[error(
        "the cleanup hook of card {card} failed: it ran a kardwt command that needs a lock this \
         command holds while the hook runs ({}); {} is kept",
        locks.join("; "),
        path.display()
    )]
    HookOwnLock {
        card: String,
        locks: Vec<String>,
        path: PathBuf,
    },
    /// The hook failed, or ran past the deadline: its output's tail.
    #[error(
        "the cleanup hook of card {card} failed ({ending}); {} is kept{}",
        path.display(),
        crate::ground::cap::hook_said(tail)
    )]
    HookFailed {
        card: String,
        ending: sandbox::Ending,
        path: PathBuf,
        tail: String,
    },
    #[error(
        "{} is gone and was not managed by kardwt (no record); nothing was released",
        path.display()
    )]
    GoneUnmanaged { path: PathBuf },
    /// The record of a gone tree does not parse: why.
    #[error("{0}")]
    Malformed(String),
    #[error(
        "the record of {} changed while waiting for card {card}'s lock; nothing was released",
        path.display()
    )]
    RecordChanged { path: PathBuf, card: CardId },
    /// The tree no longer verifies under the card's lock: `verb` did `nothing`.
    #[error(
        "{} changed while waiting for card {card}'s lock: {explain}; {nothing}",
        path.display()
    )]
    Changed {
        path: PathBuf,
        card: CardId,
        explain: String,
        verb: &'static str,
        nothing: &'static str,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::HookOwnLock { .. } => Code::Hook,
            Refusal::HookFailed { ending, .. } if *ending == sandbox::Ending::Deadline => {
                Code::Deadline
            }
            Refusal::HookFailed { .. } => Code::Hook,
            Refusal::GoneUnmanaged { .. } | Refusal::Malformed(_) => Code::Refused,
            Refusal::RecordChanged { .. } | Refusal::Changed { .. } => Code::Failed,
        }
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::HookOwnLock { .. } => {
                vec!["a cleanup hook cannot run git kardwt add, remove \
                                                 or gc: run them after this command, not from the \
                                                 hook"
                    .into()]
            }
            Refusal::Changed { verb, .. } => {
                vec![format!(
                    "check it with git kardwt verify, then run {verb} again"
                )]
            }
            _ => Vec::new(),
        }
    }
}
