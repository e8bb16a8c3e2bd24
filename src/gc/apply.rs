//! gc's `--apply`: each candidate of the plan collected in turn (an orphan claim dropped or
//! released, a gone entry pruned, a tree removed through the release-first path, judged again
//! under its card's lock), its [`Outcome`] recorded on it. Never forced, never signals a process.
use std::time::Duration;

use anyhow::Result;

use crate::context::Context;
use crate::gc::collectable::{self, Judgement::Collect, Judgement::Keep};
use crate::gc::plan::{Candidate, Collected, Outcome};
use crate::lifecycle::RemoveOptions;
use crate::state::Orphan;
use crate::verify;

/// Collect every candidate; `idle` and `include_failed` judge each tree again.
pub(crate) fn apply(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
    candidates: &mut [Candidate],
    (idle, include_failed): (Option<Duration>, bool),
) -> Result<()> {
    let deadline = crate::context::after(std::time::Instant::now(), cfg.action_timeout_seconds);
    for c in candidates.iter_mut() {
        // An interrupt stops gc between trees; the one in hand rolls back itself.
        crate::sys::check_signal("during gc --apply, before its next tree")?;
        c.outcome = Some(collect(
            ctx,
            cfg,
            entries,
            c,
            deadline,
            (idle, include_failed),
        )?);
    }
    Ok(())
}

/// Collect one candidate.
fn collect(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
    c: &Candidate,
    deadline: std::time::Instant,
    (idle, include_failed): (Option<Duration>, bool),
) -> Result<Outcome> {
    if let Some((claim, Orphan::Replaced)) = &c.orphan {
        // Someone else's tree stands there now: nothing at the path is touched.
        return Ok(
            match crate::lifecycle::drop_replaced_orphan(ctx, claim, deadline) {
                Ok(()) => Outcome::Collected(Collected::Dropped),
                Err(e) => Outcome::Failed(format!("{e:#}")),
            },
        );
    }
    if let Some((claim, _)) = &c.orphan {
        if let Err(e) = crate::lifecycle::release_orphan(ctx, cfg, claim, deadline) {
            return Ok(Outcome::Failed(format!("{e:#}")));
        }
        if !c.prune {
            // Its claim, last.
            ctx.cards.delete_claim(&claim.card);
            return Ok(Outcome::Collected(Collected::Released));
        }
    }
    if c.prune {
        let note = "gc: directory was gone";
        return Ok(
            match crate::lifecycle::prune_gone(ctx, &c.card, &c.path, deadline, note)? {
                None => Outcome::Collected(Collected::Pruned),
                Some(why) => Outcome::Failed(why.to_string()),
            },
        );
    }
    let report = verify::verify(&ctx.repo, entries, &c.path, None);
    let opts = RemoveOptions {
        force: false,
        delete_branch: false,
        processes: crate::lifecycle::Processes::KeepInUse,
        // The same judgement, again under the card's lock (what the tree holds now).
        recheck: Some(Box::new(
            move |path, admin, rec, head| match collectable::verdict(
                path,
                admin,
                rec,
                head,
                idle,
                include_failed,
                None,
            ) {
                Collect(_) => None,
                Keep(why) => Some(why),
            },
        )),
    };
    Ok(
        match crate::lifecycle::remove_verified(ctx, &report, &opts) {
            Ok(_) => Outcome::Collected(Collected::Removed),
            Err(e) => match crate::ground::error::kind_of::<crate::lifecycle::RemoveRefused>(&e) {
                Some(crate::lifecycle::RemoveRefused(
                    kept @ crate::lifecycle::RemoveRefusal::NoLongerCollectable { .. },
                )) => Outcome::Kept(kept.to_string()),
                _ => Outcome::Failed(format!("{e:#}")),
            },
        },
    )
}
