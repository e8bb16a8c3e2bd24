//! Releasing what an orphan claim still holds (its worktree removed or its directory deleted
//! behind kardwt's back): its cleanup hook, run in the base, and its ports back, never a signal.
use crate::sys;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::Config;
use crate::context::Context;
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::lifecycle::release::cleanup_program;
use crate::lifecycle::step::Step;
use crate::sandbox::{self, Phase};
use crate::state::Happened;

/// Release what the orphan `claim` (its worktree removed or its directory deleted behind
/// kardwt's back) still holds, under its card's lock: the cleanup hook, run in the base with
/// `KARDWT_WORKTREE` naming the vanished path and `KARDWT_REASON=orphan`; its ports are given
/// back with the claim, which the caller deletes last. No process is signalled: a process whose
/// cwd was inside is no proof it belonged to this card. `Err` (claim kept) when the hook failed.
pub(crate) fn release_orphan(
    ctx: &Context,
    cfg: &Config,
    claim: &crate::state::Claim,
    deadline: Instant,
) -> Result<Vec<Step>> {
    let card = well_formed(ctx, claim)?;
    let _card_lock = sys::take_card_lock(
        &ctx.repo.common_dir,
        card,
        deadline,
        &format!("git kardwt gc (release orphan {card})"),
    )?;
    release_orphan_locked(ctx, cfg, claim, deadline)
}

/// Drop the claim of `claim.card` whose path now holds another worktree, under
/// the card's lock, after checking again that the claim on disk is still that one. Nothing at
/// the path is touched and no hook runs: whatever stands there is not this card's.
pub(crate) fn drop_replaced_orphan(
    ctx: &Context,
    claim: &crate::state::Claim,
    deadline: Instant,
) -> Result<()> {
    let card = well_formed(ctx, claim)?;
    let _card_lock = sys::take_card_lock(
        &ctx.repo.common_dir,
        card,
        deadline,
        &format!("git kardwt gc (drop claim {card})"),
    )?;
    match ctx.cards.claim(&claim.card) {
        Some(Ok(now)) if now == *claim => {}
        _ => return Err(Fail::from(Refusal::Changed { card: card.clone() }).into()),
    }
    ctx.cards.delete_claim(&claim.card);
    let dropped = Happened::Released(
        "orphan claim dropped: another worktree stands at its path; nothing there was touched",
    );
    ctx.cards
        .note(&claim.card, &claim.path, dropped, Duration::ZERO);
    Ok(())
}

/// `claim`'s card, to lock: refused when the claim is malformed (its card, then, may be no id),
/// before any lock is taken. Its callers are handed orphans, which never are.
fn well_formed<'c>(ctx: &Context, claim: &'c crate::state::Claim) -> Result<&'c CardId> {
    match claim.malformed(&ctx.repo.common_dir, Some(&ctx.repo.base)) {
        None => Ok(&claim.card),
        Some(why) => Err(Fail::from(Refusal::NotReleased {
            card: crate::ground::quote::shown(&claim.card, 40),
            why,
        })
        .into()),
    }
}

/// [`release_orphan`] for a caller that already holds the card's lock (`add`).
pub(super) fn release_orphan_locked(
    ctx: &Context,
    cfg: &Config,
    claim: &crate::state::Claim,
    deadline: Instant,
) -> Result<Vec<Step>> {
    let card = &claim.card;
    let path = &claim.path;
    let t = Instant::now();
    let mut steps = vec![Step {
        step: "processes",
        ms: None,
        ok: true,
        detail: "none signalled (an orphan's release never ends a process)".into(),
    }];
    // Judged again here, whoever calls: a malformed claim or one whose path holds a worktree
    // again is not released.
    let kind = match claim.orphan_or_why(&ctx.repo.common_dir, Some(&ctx.repo.base)) {
        Ok(kind) => kind,
        Err(why) => {
            return Err(Fail::from(Refusal::NotReleased {
                card: card.to_string(),
                why,
            })
            .into())
        }
    };
    let cleanup = match (claim.released, kind) {
        // `release` ran the hook already, with the tree still there.
        (true, _) => None,
        // Another worktree stands there now: a hook told that path would act on it.
        (false, crate::state::Orphan::Replaced) => {
            steps.push(Step {
                step: "cleanup hook",
                ms: None,
                ok: true,
                detail: "not run: another worktree stands at its path".into(),
            });
            None
        }
        (false, crate::state::Orphan::Gone) => {
            // The tree is gone: committed helpers run as trusted for the base's HEAD.
            let head = ctx.head_commit().unwrap_or_default();
            cleanup_program(
                cfg,
                crate::sandbox::Site {
                    common_dir: &ctx.repo.common_dir,
                    repo_dir: &ctx.repo.base,
                    commit: &head,
                },
            )?
        }
    };
    if let Some((hook, program)) = cleanup {
        let facts = sandbox::Facts {
            card: claim.card.to_string(),
            board: String::new(),
            worktree: path.clone(),
            base: ctx.base_shown(),
            common_dir: ctx.repo.common_dir.clone(),
            branch: claim.branch.clone(),
            base_oid: String::new(),
            reason: "orphan",
            ports: claim.ports.clone(),
        };
        let outcome = sandbox::run_phase(&sandbox::Hook {
            phase: Phase::Cleanup,
            program: &program,
            argv: &hook.argv,
            cwd: &ctx.repo.base,
            facts: &facts,
            passthrough: &cfg.environment.passthrough,
            extra: &[],
            cached: false,
            cap: Duration::from_secs(hook.timeout_seconds),
            deadline,
            log: None,
        })?;
        if !outcome.succeeded() {
            let failed = Happened::Failed("orphan: cleanup hook");
            ctx.cards.note(&claim.card, path, failed, outcome.duration);
            return Err(Fail::from(Refusal::HookFailed {
                card: card.clone(),
                ending: outcome.ending,
                tail: sandbox::tail_chars(&outcome.tail, 300),
                needed_locks: outcome.needed_locks,
            })
            .into());
        }
        steps.push(Step {
            step: "cleanup hook",
            ms: None,
            ok: true,
            detail: outcome.ending.to_string(),
        });
    }
    let shown: Vec<String> = claim.ports.iter().map(u16::to_string).collect();
    steps.push(Step {
        step: "ports",
        ms: None,
        ok: true,
        detail: if shown.is_empty() {
            "none held".into()
        } else {
            format!("{} released", shown.join(", "))
        },
    });
    let released = Happened::Released("orphan");
    ctx.cards.note(&claim.card, path, released, t.elapsed());
    Ok(steps)
}

/// Why an orphan claim was not dropped or released.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    #[error("card {card}'s claim changed while waiting for its lock; it was not dropped")]
    Changed { card: CardId },
    /// Judged again, the claim is malformed or its path holds a worktree again.
    #[error("card {card}'s claim is not released: {why}")]
    /// `card` as shown (a malformed claim's card may be no id).
    NotReleased { card: String, why: String },
    /// Its cleanup hook failed (`needed_locks`: the kardwt locks a command it ran needed).
    #[error(
        "the cleanup hook of orphan card {card} failed ({ending}); its claim is kept{}",
        crate::ground::cap::hook_said(tail)
    )]
    HookFailed {
        card: CardId,
        ending: sandbox::Ending,
        tail: String,
        needed_locks: Vec<String>,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Changed { .. } => Code::Failed,
            Refusal::NotReleased { .. } => Code::Refused,
            Refusal::HookFailed { .. } => Code::Hook,
        }
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::Changed { .. } => Vec::new(),
            Refusal::NotReleased { .. } => {
                vec!["git kardwt doctor reports it; inspect the claim by hand".into()]
            }
            Refusal::HookFailed { needed_locks, .. } if needed_locks.is_empty() => {
                vec!["fix the hook and run git kardwt gc --apply again".into()]
            }
            Refusal::HookFailed { needed_locks, .. } => vec![format!(
                "it ran a kardwt command that needs a lock this command holds ({}): run that \
                 after this command, not from the hook",
                needed_locks.join("; ")
            )],
        }
    }
}
