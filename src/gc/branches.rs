//! `gc --branches`: stale `card/*` branches. A branch is a candidate when
//! no worktree has it checked out (the main one included), its tip is integrated into the
//! freshly fetched base (the rules' `base.ref`, or the remote's HEAD): merged, or squash- or
//! rebase-merged, by the integration test gc judges trees with ([`collectable::branch_landed`]),
//! and deleting it loses no commit: every commit on it or named by its reflog is reachable from
//! a ref kardwt did not make (a remote-tracking ref, a tag, a branch outside `card/`) or makes a
//! change a commit of the base also makes (`git cherry`'s rule), judged commit by commit, never
//! by tips or trees.
//! Every other `card/*` branch is kept, with the reason. Deletion (`--apply`) takes the
//! repository lock and judges each branch again under it (still no worktree, still the tip
//! that was judged, still integrated, still nothing lost) before `git branch -D`.
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::config::Config;
use crate::context::Context;
use crate::gc::collectable::Judgement;
use crate::git::History;
use crate::{gc::collectable, git};

/// Where the branches gc looks at live.
const PREFIX: &str = "refs/heads/card/";

/// One `card/*` branch and what gc makes of it.
#[derive(Debug, Serialize)]
pub struct Branch {
    /// Its short name (`card/42`).
    pub branch: String,
    /// The commit it named when judged.
    pub oid: String,
    pub reason: String,
    /// After `--apply`, for a candidate: `deleted`, `kept: …` or `failed: …`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// `branches` in `gc --json`.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// The base they were judged against (`refs/remotes/<remote>/<branch>`), when known.
    pub base: Option<String>,
    pub candidates: Vec<Branch>,
    pub kept: Vec<Branch>,
}

impl Report {
    /// Did a deletion fail?
    pub fn failed(&self) -> bool {
        self.candidates.iter().any(|c| {
            c.outcome
                .as_deref()
                .is_some_and(|o| o.starts_with("failed"))
        })
    }

    /// The text report, one line a branch.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.candidates {
            out.push(match c.outcome.as_deref() {
                None => format!("would delete branch {}: {}", c.branch, c.reason),
                Some("deleted") => format!("deleted branch {}: {}", c.branch, c.reason),
                Some(o) => match o.strip_prefix("kept: ") {
                    Some(why) => format!("kept branch {}: {why}", c.branch),
                    None => format!(
                        "could not delete branch {}: {}",
                        c.branch,
                        o.trim_start_matches("failed: ")
                    ),
                },
            });
        }
        for k in &self.kept {
            out.push(format!("kept branch {}: {}", k.branch, k.reason));
        }
        out
    }
}

/// Why there is no base to judge branches against: every branch is then kept, with this reason.
#[derive(Debug, thiserror::Error)]
enum NoBase {
    #[error("{0:#}")]
    Lock(anyhow::Error),
    #[error("could not fetch the base from {remote} ({cause:#}): gc judges only against a freshly fetched base (git kardwt gc --offline judges against the last fetch)")]
    Fetch {
        remote: String,
        cause: anyhow::Error,
    },
    #[error("the base of {0} is not known without a fetch: name it with base.ref, or run gc without --offline")]
    Unknown(String),
    #[error("{0} does not exist: run gc without --offline")]
    Missing(String),
}

/// The base to judge against: fetched now (under the repository lock) unless `offline`, then
/// the remote-tracking ref as last fetched. `(tracking ref, commit)`, or why there is none.
fn base(
    ctx: &Context,
    cfg: &Config,
    offline: bool,
    deadline: Instant,
) -> Result<(String, String), NoBase> {
    let remote = &cfg.base.remote;
    if !offline {
        let lock = ctx
            .cards
            .lock(deadline, "git kardwt gc --branches (fetch)")
            .map_err(NoBase::Lock)?;
        let (base_ref, oid) = crate::lifecycle::fetch_base(&lock, &ctx.repo, cfg, None, deadline)
            .map_err(|cause| NoBase::Fetch {
            remote: remote.clone(),
            cause,
        })?;
        let tracking = collectable::tracking_ref_of(remote, &base_ref).unwrap_or(base_ref);
        return Ok((tracking, oid));
    }
    let tracking = match &cfg.base.git_ref {
        Some(r) => collectable::tracking_ref_of(remote, r),
        None => git::symbolic_ref(&ctx.repo.base, &format!("refs/remotes/{remote}/HEAD")),
    }
    .ok_or_else(|| NoBase::Unknown(remote.clone()))?;
    let oid = git::ref_commit(&ctx.repo.base, &tracking)
        .ok_or_else(|| NoBase::Missing(tracking.clone()))?;
    Ok((tracking, oid))
}

/// What gc asks git once for all the branches it judges (their reflogs, and which commits only
/// kardwt's branches reach), for the decision every deletion of a card branch shares.
fn history(dir: &Path, branches: &[(String, &str)]) -> History {
    let asked: Vec<(&str, &str)> = branches.iter().map(|(r, t)| (r.as_str(), *t)).collect();
    History::ask(dir, &asked)
}

/// Judge one branch at `oid`: `Collect` to delete it, `Keep` to keep it. `history`: its
/// reflog and the commits on no ref but kardwt's branches, asked for it among others.
fn branch_verdict(
    dir: &Path,
    checked_out: &[(String, String)],
    full: &str,
    oid: &str,
    base: &(String, String),
    history: &History,
) -> Judgement {
    if let Some((path, _)) = checked_out.iter().find(|(_, b)| b == full) {
        return Judgement::Keep(format!("checked out in the worktree at {path}"));
    }
    let name = base.0.strip_prefix("refs/remotes/").unwrap_or(&base.0);
    match collectable::branch_landed(dir, &base.1, name, oid) {
        // A squash merge is no commit's equivalent, so such a branch goes only while the
        // remote still has its commits.
        Judgement::Collect(why) => {
            match history.may_delete(dir, Some((base.1.as_str(), name)), full, oid) {
                Ok(()) => Judgement::Collect(why),
                Err(lose) => Judgement::Keep(lose.to_string()),
            }
        }
        keep => keep,
    }
}

/// List the `card/*` branches and judge each; with `apply`, delete the candidates.
pub fn run(ctx: &Context, cfg: &Config, args: &crate::cli::GcArgs) -> Result<Report> {
    let (offline, apply) = (args.offline, args.apply);
    let dir = &ctx.repo.base;
    let deadline = crate::context::after(Instant::now(), cfg.action_timeout_seconds);
    let branches = git::branches_under(dir, PREFIX)?;
    let mut report = Report::default();
    let short = |full: &str| full.strip_prefix("refs/heads/").unwrap_or(full).to_owned();
    let base = match base(ctx, cfg, offline, deadline) {
        Ok(b) => b,
        Err(why) => {
            report.kept = branches
                .into_iter()
                .map(|(full, oid)| Branch {
                    branch: short(&full),
                    oid,
                    reason: why.to_string(),
                    outcome: None,
                })
                .collect();
            return Ok(report);
        }
    };
    report.base = Some(base.0.clone());
    let checked_out = git::checked_out_branches(dir)?;
    let judged: Vec<(String, &str)> = branches
        .iter()
        .map(|(full, oid)| (full.clone(), oid.as_str()))
        .collect();
    let history = history(dir, &judged);
    for (full, oid) in &branches {
        let (reason, list) = match branch_verdict(dir, &checked_out, full, oid, &base, &history) {
            Judgement::Collect(r) => (r, &mut report.candidates),
            Judgement::Keep(r) => (r, &mut report.kept),
        };
        list.push(Branch {
            branch: short(full),
            oid: oid.clone(),
            reason,
            outcome: None,
        });
    }
    if apply && !report.candidates.is_empty() {
        delete(ctx, &base, &mut report.candidates, deadline)?;
    }
    Ok(report)
}

/// Delete the candidates under the repository lock, each judged again first: a branch that
/// moved, was checked out, is no longer integrated or would now lose a commit is kept.
fn delete(
    ctx: &Context,
    base: &(String, String),
    candidates: &mut [Branch],
    deadline: Instant,
) -> Result<()> {
    let dir = &ctx.repo.base;
    let lock = ctx.cards.lock(deadline, "git kardwt gc --branches")?;
    let checked_out = git::checked_out_branches(dir)?;
    let judged: Vec<(String, &str)> = candidates
        .iter()
        .map(|c| (format!("refs/heads/{}", c.branch), c.oid.as_str()))
        .collect();
    let history = history(dir, &judged);
    for c in candidates.iter_mut() {
        crate::sys::check_signal("during gc --branches --apply, before its next branch")?;
        let full = format!("refs/heads/{}", c.branch);
        let now = git::ref_commit(dir, &full);
        let again = match now.as_deref() {
            None => Judgement::Keep("it no longer exists".to_owned()),
            Some(o) if o != c.oid => {
                Judgement::Keep(format!("it moved to {o} since it was judged"))
            }
            Some(o) => branch_verdict(dir, &checked_out, &full, o, base, &history),
        };
        c.outcome = Some(match again {
            Judgement::Keep(why) => format!("kept: {why}"),
            Judgement::Collect(_) => match git::branch_delete(&lock, dir, &c.branch) {
                Ok(()) => "deleted".to_owned(),
                Err(e) => format!("failed: {e:#}"),
            },
        });
    }
    Ok(())
}
