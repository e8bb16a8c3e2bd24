//! `git kardwt gc [--apply] [--include-failed] [--older-than DUR] [--json] [--prunable]
//! [--branches]`: a dry run by default.
//! Candidates: registered entries whose directory is gone (pruned; the ports their record held
//! are reported released), orphan claims, and managed `ready` worktrees whose own work landed
//! (`gc/collectable.rs`: a commit made in the tree, all of them and HEAD integrated into the
//! base, HEAD pushed), that are clean and that no process is using; with `--include-failed`,
//! `failed`/`preparing` ones older than `--older-than` with no commit of their own (or whose
//! commits landed), clean and unused. gc fetches each base first and judges against it
//! (`--offline` judges against the last fetch and says how old it is); removal goes through
//! the release-first path, never forced, and never signals a process (a tree in use is kept:
//! only `remove` ends processes). Locked and unmanaged worktrees are never collected; a dirty
//! one is listed with the command to remove it by hand. `--prunable` limits the candidates to
//! the gone entries (what `git worktree prune` drops, the guard's replacement for it, which
//! never blocks by mistake): no live worktree is looked at, so none is ever removed.
//! `--branches` adds the stale `card/*` branches (`crate::gc::branches`), judged after the
//! trees. Trees `remove` moved aside and a kill kept from being deleted are listed, and deleted
//! in place with `--apply` (`crate::state::aside`).
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::cli::GcArgs;
use crate::gc::collectable::Judgement::{Collect, Keep};
use crate::git::repo::absolutize_keep_last;
use crate::ground::error::{Code, Fail, Kind};
use crate::lifecycle::remove::Options;
use crate::lifecycle::{dirty, remove};
use crate::session::context::Context;
use crate::state::claim::Orphan;
use crate::state::record::{Loaded, State};
use crate::verify::{self, Verdict};
use crate::{gc::collectable, git, sandbox, session::hold};

#[derive(Debug, Serialize)]
struct Candidate {
    card: String,
    path: PathBuf,
    reason: String,
    /// Ports its record held, released with it.
    ports: Vec<u16>,
    #[serde(skip)]
    prune: bool,
    /// An orphan: the card's claim outlived its worktree (or its directory): released first,
    /// or only dropped when another worktree now stands at its path.
    #[serde(skip)]
    orphan: Option<(crate::state::claim::Claim, crate::state::claim::Orphan)>,
    /// After `--apply`: what happened.
    outcome: Option<String>,
}

/// `--offline`: a remote-tracking ref judged as last fetched, and how long ago that was (from
/// its reflog and `FETCH_HEAD`; `None` when neither tells).
#[derive(Debug, Serialize)]
struct LastFetch {
    tracking_ref: String,
    age_seconds: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Kept {
    card: String,
    path: PathBuf,
    reason: String,
    /// The command to remove it by hand, when that is the user's call.
    command: Option<String>,
}

pub use crate::ground::human::parse_duration;

pub fn run(ctx: &Context, args: &GcArgs, out: &mut dyn Write) -> Result<i32> {
    let older_than = parse_duration(&args.older_than)
        .ok_or_else(|| Fail::from(NoDuration::OlderThan(args.older_than.clone())))?;
    let idle = match &args.idle {
        None => None,
        Some(text) => Some(humantime::parse_duration(text).map_err(|error| {
            Fail::from(NoDuration::Idle {
                text: text.clone(),
                error,
            })
        })?),
    };
    let rules = ctx.rules()?;
    let entries = verify::scan(&ctx.repo)?;
    // Judged against the base as the remote has it now, unless --offline: then
    // against the last fetch, and the report says how old that is. --prunable judges no base.
    let unfetched = if args.offline || args.prunable {
        Vec::new()
    } else {
        fetch_bases(ctx, &rules.config, &entries)?
    };
    let last_fetched: Vec<LastFetch> = if args.offline && !args.prunable {
        bases(&entries)
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
    let remotes = if args.prunable {
        None
    } else {
        collectable::OnRemotes::of_trees(&ctx.repo, &entries)
    };
    // Each tree verified through maps built once (a linear search per tree is quadratic).
    let index = verify::Index::mapped(&entries);
    let mut candidates = Vec::new();
    let mut kept = Vec::new();
    let mut orphans = crate::state::claim::orphans(&ctx.repo.common_dir, &ctx.repo.base);
    for e in &entries {
        let Loaded::Parsed(rec) = &e.record else {
            continue;
        }; // unmanaged: never collected
        if args.prunable && !e.linked.prunable {
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
            kept.push(keep("locked (git worktree lock)".into(), None));
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
        let report = verify::judge(&ctx.repo, &index, absolutize_keep_last(&path), None);
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
            let failed = args.include_failed;
            collectable::judge(&path, admin, rec, head, idle, failed, remotes.as_ref())
        };
        let reason = match rec.state {
            State::Ready => match judged() {
                Collect(reason) => reason,
                Keep(why) => {
                    kept.push(keep(why, None));
                    continue;
                }
            },
            State::Failed | State::Preparing | State::Released if args.include_failed => {
                let age = crate::sys::time::parse_rfc3339(&rec.updated_at)
                    .map(|t| crate::sys::time::now_secs().saturating_sub(t));
                if age.is_none_or(|a| a < older_than.as_secs()) {
                    kept.push(keep(
                        format!("{} for less than {}", rec.state.as_str(), args.older_than),
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
        let dirt = match dirty::dirty(&ctx.links_from(), &ctx.repo.common_dir, &path, rec) {
            Ok(dirt) => dirt,
            // Only a tree proven clean is collected; one gc cannot judge stays.
            Err(e) => {
                kept.push(keep(
                    format!("{reason}, but {e:#}; gc collects only a tree proven clean"),
                    None,
                ));
                continue;
            }
        };
        if !dirt.is_empty() {
            let cmd = format!(
                "git kardwt remove --path {} --force",
                crate::ground::quote::sh_path(&path)
            );
            kept.push(keep(
                format!("{reason}, but it has uncommitted changes or untracked files"),
                Some(cmd),
            ));
            continue;
        }
        let blockers = dirty::removal_blockers(
            &ctx.repo.base,
            &path,
            &e.linked.admin,
            e.linked.locked,
            false,
        )?;
        if !blockers.is_empty() {
            let checks: Vec<&str> = blockers.iter().map(|b| b.check.as_str()).collect();
            kept.push(keep(
                format!(
                    "{reason}, but git worktree remove would refuse it: {}",
                    checks.join("; ")
                ),
                None,
            ));
            continue;
        }
        // Last, so the other reasons still show: a tree someone is using stays.
        if let Some(why) = crate::sys::process::in_use(&path) {
            kept.push(keep(why, None));
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

    // Trees a killed removal moved aside, before this run moves any.
    let aside = crate::state::aside::Tidy::run(&ctx.repo.common_dir, args.apply);
    if args.apply {
        let policy = (idle, args.include_failed);
        apply(ctx, &rules.config, &entries, &mut candidates, policy)?;
    }
    // The prepare cache's entries, those beyond the bound dropped with --apply.
    let bound = crate::seed::cache::bound(&rules.config);
    let cache = crate::seed::cache::Tidy::run(&ctx.repo.common_dir, bound, args.apply);
    // The temporary files killed writes left, removed with --apply.
    let admins: Vec<_> = entries.iter().map(|e| e.linked.admin.clone()).collect();
    let mut temporaries = crate::state::store::dead_temporaries(&ctx.repo.common_dir, &admins);
    if args.apply {
        temporaries = crate::sys::fsio::remove_files(&temporaries);
    }
    // Stale card/* branches, judged after the trees (a tree collected above frees its
    // branch for the same run).
    let branches = if args.branches {
        Some(crate::gc::branches::run(
            ctx,
            &rules.config,
            args.offline,
            args.apply,
        )?)
    } else {
        None
    };
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&GcJson {
                applied: args.apply,
                offline: &last_fetched,
                candidates: &candidates,
                kept: &kept,
                prepare_cache: &cache,
                temporaries: &temporaries,
                moved_aside: &aside.moved_aside,
                branches: branches.as_ref(),
            })?
        )?;
    } else {
        for f in &last_fetched {
            let age = f.age_seconds.map_or("when is unknown".to_owned(), |s| {
                format!("{} ago", collectable::coarse(s))
            });
            writeln!(
                out,
                "judged against {} as last fetched, updated {age} (--offline; without it gc fetches first)",
                f.tracking_ref
            )?;
        }
        let verb = if args.apply {
            "collected"
        } else {
            "would collect"
        };
        for c in &candidates {
            let ports = if c.ports.is_empty() {
                String::new()
            } else {
                format!(
                    " (releases ports {})",
                    c.ports
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            // Messages match what happened: a tree gc could not collect, or kept
            // on a second look, is never reported as collected.
            match c.outcome.as_deref() {
                Some(o) if o.starts_with("failed") => {
                    let why = o.trim_start_matches("failed: ");
                    writeln!(
                        out,
                        "could not collect card {} at {}: {why}",
                        c.card,
                        c.path.display()
                    )?;
                    eprintln!("error: could not collect card {}: {why}", c.card);
                }
                Some(o) if o.starts_with("kept: ") => writeln!(
                    out,
                    "kept card {} at {}: {}",
                    c.card,
                    c.path.display(),
                    o.trim_start_matches("kept: ")
                )?,
                outcome => writeln!(
                    out,
                    "{verb} card {} at {}: {}{ports}{}",
                    c.card,
                    c.path.display(),
                    c.reason,
                    outcome.map(|o| format!(": {o}")).unwrap_or_default()
                )?,
            }
        }
        for k in &kept {
            let cmd = k
                .command
                .as_deref()
                .map(|c| format!("; to remove it anyway: {c}"))
                .unwrap_or_default();
            writeln!(
                out,
                "kept card {} at {}: {}{cmd}",
                k.card,
                k.path.display(),
                k.reason
            )?;
        }
        for line in cache.lines(args.apply) {
            writeln!(out, "{line}")?;
        }
        for t in &temporaries {
            let verb = if args.apply {
                "removed"
            } else {
                "would remove"
            };
            writeln!(
                out,
                "{verb} {}, a temporary file a killed write left",
                t.display()
            )?;
        }
        for line in aside.lines() {
            writeln!(out, "{line}")?;
        }
        for line in branches.iter().flat_map(crate::gc::branches::Report::lines) {
            writeln!(out, "{line}")?;
        }
        let stale = branches.as_ref().is_some_and(|b| !b.candidates.is_empty());
        let tidy = !cache.dropped.is_empty() || !temporaries.is_empty() || aside.pending();
        if !args.apply && (!candidates.is_empty() || tidy || stale) {
            let flags = match (args.prunable, args.branches) {
                (true, _) => " --prunable",
                (false, true) => " --branches",
                (false, false) => "",
            };
            writeln!(out, "(dry run: git kardwt gc --apply{flags} does it)")?;
        }
    }
    let failed = candidates.iter().any(|c| {
        c.outcome
            .as_deref()
            .is_some_and(|o| o.starts_with("failed"))
    });
    let failed = failed
        || branches
            .as_ref()
            .is_some_and(crate::gc::branches::Report::failed);
    Ok(i32::from(failed))
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
    let deadline = hold::after(std::time::Instant::now(), cfg.action_timeout_seconds);
    let repo_lock =
        crate::state::store::take_repo(&ctx.repo.common_dir, deadline, "git kardwt gc (fetch)")?;
    let mut failed = Vec::new();
    for (remote, base_ref) in bases {
        let branch = base_ref.strip_prefix("refs/heads/").unwrap_or(&base_ref);
        let refspec = format!("+{base_ref}:refs/remotes/{remote}/{branch}");
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

fn apply(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
    candidates: &mut [Candidate],
    (idle, include_failed): (Option<Duration>, bool),
) -> Result<()> {
    let deadline = hold::after(std::time::Instant::now(), cfg.action_timeout_seconds);
    for c in candidates.iter_mut() {
        // An interrupt stops gc between trees; the one in hand rolls back itself.
        crate::sys::signals::check("during gc --apply, before its next tree")?;
        if let Some((claim, Orphan::Replaced)) = &c.orphan {
            // Someone else's tree stands there now: nothing at the path is touched.
            c.outcome = Some(
                match crate::lifecycle::orphan::drop_replaced_orphan(ctx, claim, deadline) {
                    Ok(()) => "dropped".into(),
                    Err(e) => format!("failed: {e:#}"),
                },
            );
            continue;
        }
        if let Some((claim, _)) = &c.orphan {
            if let Err(e) = crate::lifecycle::orphan::release_orphan(ctx, cfg, claim, deadline) {
                c.outcome = Some(format!("failed: {e:#}"));
                continue;
            }
            if !c.prune {
                // Its claim, last.
                crate::state::claim::delete(&ctx.repo.common_dir, &claim.card);
                c.outcome = Some("released".into());
                continue;
            }
        }
        let outcome = if c.prune {
            match remove::prune_gone(ctx, &c.card, &c.path, deadline, "gc: directory was gone")? {
                None => "pruned".to_owned(),
                Some(why) => format!("failed: {why}"),
            }
        } else {
            let report = verify::verify(&ctx.repo, entries, &c.path, None);
            let opts = Options {
                force: false,
                delete_branch: false,
                processes: remove::Processes::KeepInUse,
                // The same judgement, again under the card's lock (what the tree holds now).
                recheck: Some(Box::new(
                    move |path, admin, rec, head| match collectable::judge(
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
            match remove::remove_verified(ctx, &report, &opts) {
                Ok(_) => "removed".to_owned(),
                Err(e) => match crate::ground::error::kind_of::<remove::Refusal>(&e) {
                    Some(kept @ remove::Refusal::NoLongerCollectable { .. }) => {
                        format!("kept: {kept}")
                    }
                    _ => format!("failed: {e:#}"),
                },
            }
        };
        c.outcome = Some(outcome);
    }
    Ok(())
}

/// A duration option gc cannot read (a usage error).
#[derive(Debug, thiserror::Error)]
enum NoDuration {
    #[error("--older-than {0:?} is not a duration")]
    OlderThan(String),
    #[error("--idle {text:?} is not a duration: {error}")]
    Idle {
        text: String,
        error: humantime::DurationError,
    },
}

impl Kind for NoDuration {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            NoDuration::OlderThan(_) => "write it like 24h, 30m, 2d or 0s",
            NoDuration::Idle { .. } => "write it like 2h, 3d or 90min",
        }
        .into()]
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("24h"), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("2d"), Some(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("h"), None);
        assert_eq!(parse_duration("5y"), None);
    }
}

/// `gc --json`.
#[derive(Serialize)]
struct GcJson<'a> {
    applied: bool,
    offline: &'a [LastFetch],
    candidates: &'a [Candidate],
    kept: &'a [Kept],
    prepare_cache: &'a crate::seed::cache::Tidy,
    /// Temporary files killed writes left: removed when applied.
    temporaries: &'a [std::path::PathBuf],
    /// Trees removals moved aside and a kill kept from being deleted: deleted when applied.
    moved_aside: &'a [crate::state::aside::Entry],
    /// `--branches`: the stale `card/*` branches.
    #[serde(skip_serializing_if = "Option::is_none")]
    branches: Option<&'a crate::gc::branches::Report>,
}
