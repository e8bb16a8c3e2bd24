//! Preparing an existing worktree by hand or for a runner (reason `manual`): records an
//! unseeded worktree (origin `manual`), re-records one moved with `git worktree move`, and
//! re-runs sharing and the prepare hook on a managed one. `git kardwt prepare` and
//! `git kardwt runner codex session-start` call [`prepare`]. Never removes the tree: a failure
//! leaves it recorded as failed.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::config::{CheckoutMode, Config};
use crate::context::Context;
use crate::git;
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::seed::{self, Prep};
use crate::state::{Origin, Reason, Record, State};
use crate::verify::{self, Report, Verdict};

/// Seed and prepare the linked worktree at `path` (recorded as card `asked` when given) and
/// return its record, state `ready`. Refuses, writing nothing, a half-made tree and a record
/// verification would reject; a failed prepare leaves the tree recorded as failed (the error
/// carries the verdict).
pub(crate) fn prepare(ctx: &Context, path: &Path, asked: Option<CardId>) -> Result<Record> {
    let entries = verify::scan(&ctx.repo)?;
    let path = path.to_path_buf();
    let rules = ctx.rules()?;
    let cfg = &rules.config;
    let program = seed::prepare_program(cfg, None)?;
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    // Decided once before the lock (to know which card's lock to take, and to refuse without
    // waiting), then again under it: only what is on disk under the lock is written.
    let report = verify::verify(&ctx.repo, &entries, &path, asked.as_ref());
    let (card, rec) = plan(ctx, cfg, &entries, &report, asked.clone())?;
    check(ctx, cfg, &entries, &report, &card, &rec)?;
    // Committed helpers run as trusted for the recorded base commit: checked before anything
    // is written.
    if cfg.helpers.from_repository.is_some() {
        seed::check_hooks(ctx, cfg, Some(&rec.base_oid))?;
    }
    let holder = format!("git kardwt prepare {card}");
    let locked =
        crate::context::lock_and_verify(ctx, &card, asked.as_ref(), deadline, &holder, |_| {
            Ok(path.clone())
        })?;
    let (now, rec) = plan(ctx, cfg, &locked.entries, &locked.report, asked)?;
    if now != card {
        return Err(Fail::from(Refusal::Changed {
            path: path.clone(),
            card,
            now,
        })
        .into());
    }
    let admin = check(ctx, cfg, &locked.entries, &locked.report, &card, &rec)?;
    // A released tree gave its ports back: the pipeline takes ports again.
    let mut rec = rec;
    rec.reason = Reason::Manual;
    rec.state = State::Preparing;
    rec.updated_at = crate::sys::now();
    // The tree has its record now: writing it completes the card's claim.
    crate::state::write(&admin, &rec)?;
    let prep = Prep {
        ctx,
        cfg,
        program: program.as_deref(),
        deadline,
        quiet: false,
    };
    let retry = format!(
        "git kardwt prepare --path {}",
        crate::ground::quote::sh_path(&rec.path)
    );
    let rec = prep
        .prepare(
            rec,
            &admin,
            crate::seed::Steps {
                seed: true,
                run_hook: cfg.prepare.is_some(),
                written: false,
                recorded: true,
            },
        )
        .map_err(|f| f.into_error(&card, &retry, None))?;
    Ok(rec)
}

/// The card and the record `prepare` would write for the worktree of `report`, or why not.
fn plan(
    ctx: &Context,
    cfg: &Config,
    entries: &[verify::Entry],
    report: &Report,
    asked: Option<CardId>,
) -> Result<(CardId, Record)> {
    Ok(match report.verdict {
        Verdict::Unseeded => {
            let admin = report.admin.as_deref().unwrap_or(Path::new(""));
            let card = asked.unwrap_or_else(|| {
                crate::context::derive_card(entries, admin, report.head.as_ref())
            });
            let rec = crate::context::outside_record(
                ctx,
                cfg,
                &card,
                &report.path,
                report.head.as_ref(),
                Origin::Manual,
                Reason::Manual,
            );
            (card, rec)
        }
        Verdict::Verified => record_of(report)?,
        Verdict::Foreign if moved(ctx, report) => {
            let (card, mut rec) = record_of(report)?;
            rec.path = report.path.clone();
            (card, rec)
        }
        _ => return Err(Fail::from(Refusal::Unpreparable(report.explain())).into()),
    })
}

/// Never prepare (and so never record ready) a tree whose checkout did not complete, nor
/// write a record verification would reject. Nothing is written on refusal. Returns
/// the admin dir.
fn check(
    ctx: &Context,
    cfg: &Config,
    entries: &[verify::Entry],
    report: &Report,
    card: &CardId,
    rec: &Record,
) -> Result<PathBuf> {
    let Some(admin) = report.admin.clone() else {
        anyhow::bail!("internal error: no admin dir for {}", report.path.display());
    };
    let probe = match cfg.checkout.mode {
        CheckoutMode::Delegated => verify::Probe::Mark,
        _ => verify::Probe::Files,
    };
    if let Some(why) = verify::checkout_incomplete(&report.path, &admin, probe) {
        return Err(Fail::from(Refusal::NotReady {
            path: report.path.clone(),
            why,
        })
        .into());
    }
    if let Some(why) = verify::would_reject(&ctx.repo, entries, &admin, rec) {
        return Err(Fail::from(Refusal::Unrecordable {
            path: report.path.clone(),
            card: card.clone(),
            why,
        })
        .into());
    }
    Ok(admin)
}

fn record_of(report: &Report) -> Result<(CardId, Record)> {
    let rec = report
        .record
        .clone()
        .ok_or_else(|| anyhow::anyhow!("internal error: no record"))?;
    Ok((rec.card.clone(), rec))
}

/// A managed worktree moved with `git worktree move`: every check passes but the record's
/// path, which still names the old place (the common dir must match).
fn moved(ctx: &Context, report: &Report) -> bool {
    let Some(rec) = &report.record else {
        return false;
    };
    report
        .failed_check()
        .is_some_and(|c| c.name == "record_location")
        && rec.common_dir == ctx.repo.common_dir
        && rec.path != report.path
        && !rec.path.exists()
        && verify::inconsistency(rec).is_none()
        && report.card.as_deref().is_none_or(|c| rec.card == c)
        && git::read_dot_git(&report.path).is_some()
}

/// Why `prepare` will not prepare a tree.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// The tree is another card's now than when it was named.
    #[error(
        "{} changed while waiting for card {card}'s lock: it is card {now} now; nothing was written",
        path.display()
    )]
    Changed {
        path: PathBuf,
        card: CardId,
        now: CardId,
    },
    /// Not a linked worktree prepare can take: verification's words.
    #[error("{0}")]
    Unpreparable(String),
    #[error("{} is not ready to prepare: {}", path.display(), why.describe())]
    NotReady {
        path: PathBuf,
        why: verify::Incomplete,
    },
    /// Verification would reject the record written for it.
    #[error("{} cannot be recorded as card {card}: {why}", path.display())]
    Unrecordable {
        path: PathBuf,
        card: CardId,
        why: String,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Changed { .. } => Code::Failed,
            _ => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::Changed { .. } => "run prepare again".into(),
            Refusal::Unpreparable(_) => "prepare works on a linked worktree of this repository: \
                                         an unseeded one, a managed one, or one moved with git \
                                         worktree move"
                .into(),
            Refusal::NotReady { path, why } => why.repair(path),
            Refusal::Unrecordable { .. } => "prepare records a worktree as the card its branch \
                                             card/<id> names (or its admin dir name), which no \
                                             other worktree may claim"
                .into(),
        }]
    }
}
