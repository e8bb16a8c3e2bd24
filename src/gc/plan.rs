//! gc's plan: which trees it would collect and which it keeps, and why. Candidates are
//! registered entries whose directory is gone, orphan claims, and managed trees whose own work
//! landed (or that were left failed long enough), judged against freshly fetched bases; each
//! then passes the one removability decision ([`crate::lifecycle::decide_removal`]) or is kept with
//! its reason. Nothing here changes anything but the remote-tracking refs of the bases.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::context::Context;
use crate::gc::collectable::{self, Judgement::Collect, Judgement::Keep};
use crate::git::absolutize_keep_last;
use crate::ground::card::CardId;
use crate::lifecycle::{Processes, Unremovable};
use crate::state::{Claim, Orphan};
use crate::state::{Loaded, State};
use crate::verify::{self, Verdict};
use crate::{git, sandbox};

/// A tree, a gone entry or an orphan claim gc collects.
#[derive(Debug, Serialize)]
pub(crate) struct Candidate {
    pub card: CardId,
    pub path: PathBuf,
    pub reason: String,
    /// Ports its record held, released with it.
    pub ports: Vec<u16>,
    /// Its directory is gone: its registration is pruned.
    #[serde(skip)]
    pub prune: bool,
    /// An orphan: the card's claim outlived its worktree (or its directory): released first,
    /// or only dropped when another worktree now stands at its path.
    #[serde(skip)]
    pub orphan: Option<(Claim, Orphan)>,
    /// After `--apply`: what happened.
    pub outcome: Option<Outcome>,
}

/// What `--apply` did with a candidate.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Collected, this way.
    Collected(Collected),
    /// Judged again under its card's lock and kept: the refusal, in words.
    Kept(String),
    /// It could not be collected: the error, in words.
    Failed(String),
}

/// How a candidate was collected.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Collected {
    /// An orphan claim dropped (another worktree stands at its path).
    Dropped,
    /// An orphan claim's resources released and the claim deleted.
    Released,
    /// A gone entry's registration pruned.
    Pruned,
    /// A tree released and removed.
    Removed,
}

impl Collected {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Collected::Dropped => "dropped",
            Collected::Released => "released",
            Collected::Pruned => "pruned",
            Collected::Removed => "removed",
        }
    }
}

/// `--json` shows an outcome as one string: `removed`, `kept: …`, `failed: …`.
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Collected(how) => s.serialize_str(how.as_str()),
            Outcome::Kept(why) => s.serialize_str(&format!("kept: {why}")),
            Outcome::Failed(why) => s.serialize_str(&format!("failed: {why}")),
        }
    }
}

/// `--offline`: a remote-tracking ref judged as last fetched, and how long ago that was (from
/// its reflog and `FETCH_HEAD`; `None` when neither tells).
#[derive(Debug, Serialize)]
pub(crate) struct LastFetch {
    pub tracking_ref: String,
    pub age_seconds: Option<u64>,
}

/// A tree gc keeps, and why.
#[derive(Debug, Serialize)]
pub(crate) struct Kept {
    pub card: CardId,
    pub path: PathBuf,
    pub reason: String,
    /// The command to remove it by hand, when that is the user's call.
    pub command: Option<String>,
}

/// What gc collects: the options that decide it.
pub(crate) struct Policy<'a> {
    pub offline: bool,
    pub prunable: bool,
    pub include_failed: bool,
    pub older_than: Duration,
    /// `--older-than` as written, for the reason a tree is kept.
    pub older_than_text: &'a str,
    pub idle: Option<Duration>,
}

/// The plan: the bases judged as last fetched (`--offline`), the candidates and the kept trees.
pub(crate) struct Plan {
    pub last_fetched: Vec<LastFetch>,
    pub candidates: Vec<Candidate>,
    pub kept: Vec<Kept>,
}

/// Judge every registered entry and orphan claim.
pub(crate) fn plan(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
    policy: &Policy,
) -> Result<Plan> {
    // Judged against the base as the remote has it now, unless --offline: then
    // against the last fetch, and the report says how old that is. --prunable judges no base.
    let unfetched = if policy.offline || policy.prunable {
        Vec::new()
    } else {
        fetch_bases(ctx, cfg, entries)?
    };
    let last_fetched: Vec<LastFetch> = if policy.offline && !policy.prunable {
        bases(entries)
            .into_iter()
            .filter_map(|(remote, base_ref)| {
                let tracking = collectable::tracking_ref_of(&remote, &base_ref)?;
                let age = collectable::fetched_ago(&ctx.repo.common_dir, &tracking);
                Some(LastFetch {
                    tracking_ref: tracking,
                    age_seconds: age,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    // Whether each tree's HEAD is pushed, asked of git once for all of them (not once a tree).
    let remotes = if policy.prunable {
        None
    } else {
        collectable::OnRemotes::of_trees(&ctx.repo, entries)
    };
    // Each tree verified through maps built once (a linear search per tree is quadratic).
    let index = verify::Index::mapped(entries);
    let mut candidates = Vec::new();
    let mut kept = Vec::new();
    let mut orphans = ctx.cards.orphans(&ctx.repo.base);
    for e in entries {
        let Loaded::Parsed(rec) = &e.record else {
            continue;
        }; // unmanaged: never collected
        if policy.prunable && !e.linked.prunable {
            continue; // live (or locked): --prunable never collects it
        }
        let path = e.linked.path.clone().unwrap_or_else(|| rec.path.clone());
        let keep = |reason: String, command: Option<String>| Kept {
            card: rec.card.clone(),
            path: path.clone(),
            reason,
            command,
        };
        if e.linked.locked {
            // Never collected: said as the removability decision says it.
            let blockers = vec![crate::lifecycle::lock_blocker(&path)];
            let why = Unremovable::WouldRefuse { blockers };
            kept.push(keep(why.said_of("it"), None));
            continue;
        }
        if e.linked.prunable {
            candidates.push(Candidate {
                card: rec.card.clone(),
                path: path.clone(),
                reason: "its directory is gone".into(),
                ports: rec.ports.clone(),
                prune: true,
                orphan: orphans
                    .iter()
                    .position(|(o, _)| o.card == rec.card)
                    .map(|i| orphans.remove(i)),
                outcome: None,
            });
            continue;
        }
        let report = verify::verify_resolved(&ctx.repo, &index, absolutize_keep_last(&path), None);
        if report.verdict != Verdict::Verified {
            continue;
        }
        if let Some((_, _, why)) = unfetched
            .iter()
            .find(|(remote, base_ref, _)| *remote == rec.base_remote && *base_ref == rec.base_ref)
        {
            kept.push(keep(why.clone(), None));
            continue;
        }
        let judged = || {
            let head = report.head.as_ref();
            let admin = &e.linked.admin;
            let failed = policy.include_failed;
            let idle = policy.idle;
            collectable::verdict(&path, admin, rec, head, idle, failed, remotes.as_ref())
        };
        let reason = match rec.state {
            State::Ready => match judged() {
                Collect(reason) => reason,
                Keep(why) => {
                    kept.push(keep(why, None));
                    continue;
                }
            },
            State::Failed | State::Preparing | State::Released if policy.include_failed => {
                let age = crate::sys::parse_rfc3339(&rec.updated_at)
                    .map(|t| crate::sys::now_secs().saturating_sub(t));
                if age.is_none_or(|a| a < policy.older_than.as_secs()) {
                    kept.push(keep(
                        format!(
                            "{} for less than {}",
                            rec.state.as_str(),
                            policy.older_than_text
                        ),
                        None,
                    ));
                    continue;
                }
                match judged() {
                    Collect(reason) => format!(
                        "left {} since {}; {reason}",
                        rec.state.as_str(),
                        rec.updated_at
                    ),
                    Keep(why) => {
                        kept.push(keep(why, None));
                        continue;
                    }
                }
            }
            State::Failed | State::Preparing | State::Released => continue,
        };
        // The decision `remove` makes again under the card's lock: what `--apply` would refuse
        // is kept here, with the same words (a tree in use stays: gc never ends a process).
        let tree = crate::lifecycle::RemovalTree {
            path: &path,
            admin: &e.linked.admin,
            rec,
            locked: e.linked.locked,
        };
        let how = crate::lifecycle::RemovalHow {
            force: false,
            processes: Processes::KeepInUse,
        };
        if let Err(why) = crate::lifecycle::decide_removal(ctx, &tree, how) {
            let command = matches!(why, Unremovable::Dirty { .. }).then(|| {
                format!(
                    "git kardwt remove --path {} --force",
                    crate::ground::quote::sh_path(&path)
                )
            });
            kept.push(keep(
                format!("{reason}, but {}", why.said_whole("it")),
                command,
            ));
            continue;
        }
        candidates.push(Candidate {
            card: rec.card.clone(),
            path: path.clone(),
            reason,
            ports: rec.ports.clone(),
            prune: false,
            orphan: None,
            outcome: None,
        });
    }
    // Claims whose worktree git no longer knows at all (removed or pruned behind our back).
    for (o, kind) in orphans {
        if entries
            .iter()
            .any(|e| matches!(&e.record, Loaded::Parsed(r) if r.card == o.card))
        {
            continue; // still registered (locked, or kept above): not released here
        }
        let reason = match kind {
            Orphan::Gone => "orphan: git no longer knows its worktree",
            Orphan::Replaced => {
                "orphan: another worktree now stands at its path; only the claim is dropped"
            }
        };
        candidates.push(Candidate {
            card: o.card.clone(),
            path: o.path.clone(),
            reason: reason.into(),
            ports: o.ports.clone(),
            prune: false,
            orphan: Some((o, kind)),
            outcome: None,
        });
    }
    Ok(Plan {
        last_fetched,
        candidates,
        kept,
    })
}

/// The bases (remote, ref) of the live managed worktrees gc judges, each once.
fn bases(entries: &[verify::Entry]) -> Vec<(String, String)> {
    let mut bases: Vec<(String, String)> = Vec::new();
    for e in entries {
        if let Loaded::Parsed(rec) = &e.record {
            let base = (rec.base_remote.clone(), rec.base_ref.clone());
            let live = !e.linked.prunable && !e.linked.locked;
            if live && collectable::tracking_ref(rec).is_some() && !bases.contains(&base) {
                bases.push(base);
            }
        }
    }
    bases
}

/// Fetch the base of every managed worktree (each remote and ref once, under the repository
/// lock), so gc judges against the base as it is now. Returns the bases that could not
/// be fetched, with the reason their trees are kept.
fn fetch_bases(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
) -> Result<Vec<(String, String, String)>> {
    let bases = bases(entries);
    if bases.is_empty() {
        return Ok(Vec::new());
    }
    let deadline = crate::context::after(std::time::Instant::now(), cfg.action_timeout_seconds);
    let repo_lock = ctx.cards.lock(deadline, "git kardwt gc (fetch)")?;
    let mut failed = Vec::new();
    for (remote, base_ref) in bases {
        let Some(tracking) = collectable::tracking_ref_of(&remote, &base_ref) else {
            continue; // bases() holds only bases with a tracking ref
        };
        let refspec = format!("+{base_ref}:{tracking}");
        let why = match git::fetch_ref(
            &repo_lock,
            &ctx.repo.base,
            &remote,
            &refspec,
            Some(deadline),
        ) {
            Ok(o) if o.ok => continue,
            Ok(o) => sandbox::tail_chars(o.stderr.trim(), 160),
            Err(e) => format!("{e:#}"),
        };
        failed.push((
            remote.clone(),
            base_ref.clone(),
            format!("could not fetch {base_ref} from {remote} ({why}): gc judges only against a freshly fetched base (git kardwt gc --offline judges against the last fetch)"),
        ));
    }
    Ok(failed)
}
