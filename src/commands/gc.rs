//! `git kardwt gc [--apply] [--include-failed] [--older-than DUR] [--json] [--prunable]` (SPEC
//! R-GC): a dry run by default. Candidates: registered entries whose directory is gone (pruned; the ports
//! their record held are reported released), and managed `ready` worktrees that are clean,
//! have nothing unpushed and are merged into their recorded base; with `--include-failed`,
//! `failed`/`preparing` ones older than `--older-than` that are clean and pushed. Removal goes
//! through the release-first path, never forced. Locked and unmanaged worktrees are never
//! collected; a dirty one is listed with the command to remove it by hand. `--prunable` limits
//! the candidates to the gone entries (what `git worktree prune` drops, the guard's replacement
//! for it, SPEC R-TRUST 9): no live worktree is looked at, so none is ever removed.
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use crate::cli::GcArgs;
use crate::commands::release;
use crate::commands::remove::{self, Options};
use crate::context::Context;
use crate::error::usage;
use crate::record::{Loaded, Record, State};
use crate::verify::{self, Verdict};
use crate::{dirty, events, git, lifecycle};

#[derive(Debug, Serialize)]
struct Candidate {
    card: String,
    path: PathBuf,
    reason: String,
    /// Ports its record held, released with it.
    ports: Vec<u16>,
    #[serde(skip)]
    prune: bool,
    /// R-ORPHAN: the card's claim outlived its worktree (or its directory): released first.
    #[serde(skip)]
    orphan: Option<crate::claim::Claim>,
    /// After `--apply`: what happened.
    outcome: Option<String>,
}

#[derive(Debug, Serialize)]
struct Kept {
    card: String,
    path: PathBuf,
    reason: String,
    /// The command to remove it by hand, when that is the user's call.
    command: Option<String>,
}

/// Parse `24h`, `30m`, `2d`, `45s` or plain seconds (pure).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (num, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = num.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86_400)?,
        "w" => n.checked_mul(604_800)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

pub fn run(ctx: &Context, args: &GcArgs, out: &mut dyn Write) -> Result<i32> {
    let older_than = parse_duration(&args.older_than).ok_or_else(|| {
        usage(format!(
            "--older-than {:?} is not a duration",
            args.older_than
        ))
        .hint("write it like 24h, 30m, 2d or 0s")
    })?;
    let rules = ctx.rules()?;
    let entries = verify::scan(&ctx.repo)?;
    let mut candidates = Vec::new();
    let mut kept = Vec::new();
    let mut orphans = crate::claim::orphans(&ctx.repo.common_dir);
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
                    .position(|o| o.card == rec.card)
                    .map(|i| orphans.remove(i)),
                outcome: None,
            });
            continue;
        }
        let report = verify::verify(&ctx.repo, &entries, &path, None);
        if report.verdict != Verdict::Verified {
            continue;
        }
        let reason = match rec.state {
            State::Ready => match collectable_ready(ctx, rec, &path)? {
                Ok(reason) => reason,
                Err(why) => {
                    kept.push(keep(why, None));
                    continue;
                }
            },
            State::Failed | State::Preparing | State::Released if args.include_failed => {
                let age = crate::time::parse_rfc3339(&rec.updated_at)
                    .map(|t| crate::time::now_secs().saturating_sub(t));
                if age.is_none_or(|a| a < older_than.as_secs()) {
                    kept.push(keep(
                        format!("{} for less than {}", rec.state.as_str(), args.older_than),
                        None,
                    ));
                    continue;
                }
                if let Some(why) = unpushed(ctx, &path)? {
                    kept.push(keep(why, None));
                    continue;
                }
                format!("left {} since {}", rec.state.as_str(), rec.updated_at)
            }
            State::Failed | State::Preparing | State::Released => continue,
        };
        let dirt = dirty::dirty(&ctx.repo.base, &path, rec)?;
        if !dirt.is_empty() {
            let cmd = format!("git kardwt remove --path '{}' --force", path.display());
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
    for o in orphans {
        if entries
            .iter()
            .any(|e| matches!(&e.record, Loaded::Parsed(r) if r.card == o.card))
        {
            continue; // still registered (locked, or kept above): not released here
        }
        candidates.push(Candidate {
            card: o.card.clone(),
            path: o.path.clone(),
            reason: "orphan: git no longer knows its worktree".into(),
            ports: o.ports.clone(),
            prune: false,
            orphan: Some(o),
            outcome: None,
        });
    }

    if args.apply {
        apply(ctx, &rules.config, &entries, &mut candidates)?;
    }
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"applied": args.apply, "candidates": candidates, "kept": kept})
        )?;
    } else {
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
            let outcome = c
                .outcome
                .as_deref()
                .map(|o| format!(": {o}"))
                .unwrap_or_default();
            writeln!(
                out,
                "{verb} card {} at {}: {}{ports}{outcome}",
                c.card,
                c.path.display(),
                c.reason
            )?;
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
        if !args.apply && !candidates.is_empty() {
            let flags = if args.prunable { " --prunable" } else { "" };
            writeln!(out, "(dry run: git kardwt gc --apply{flags} does it)")?;
        }
    }
    let failed = candidates.iter().any(|c| {
        c.outcome
            .as_deref()
            .is_some_and(|o| o.starts_with("failed"))
    });
    Ok(i32::from(failed))
}

/// Why a ready worktree may go (`Ok`), or why it stays (`Err`).
fn collectable_ready(
    ctx: &Context,
    rec: &Record,
    path: &std::path::Path,
) -> Result<Result<String, String>> {
    if let Some(why) = unpushed(ctx, path)? {
        return Ok(Err(why));
    }
    // A branch still at the commit it was created from holds no work that was merged: it is
    // most likely in use right now (a fresh card), so it is not collected.
    let tip = git::head_oid(path).unwrap_or_default();
    if tip == rec.base_oid {
        return Ok(Err(format!("{} has no commits of its own yet", rec.branch)));
    }
    if rec.base_ref.is_empty() {
        // R-DISPATCH 4: say why, instead of "not merged into " (an empty name).
        return Ok(Err(format!(
            "{} cannot be checked for a merge: {}",
            rec.branch,
            crate::outside::empty_base_why(&rec.base_remote)
        )));
    }
    if rec.branch.is_empty() || !remove::integrated_into_base(ctx, rec) {
        return Ok(Err(format!(
            "{} is not merged into {}",
            rec.branch, rec.base_ref
        )));
    }
    Ok(Ok(format!(
        "{} is merged into {} and pushed",
        rec.branch, rec.base_ref
    )))
}

/// A reason to keep the worktree when HEAD has commits no remote-tracking ref reaches.
fn unpushed(_ctx: &Context, path: &std::path::Path) -> Result<Option<String>> {
    Ok(git::unpushed_commit(path)?
        .map(|oid| format!("HEAD has commits that are on no remote (e.g. {oid})")))
}

fn apply(
    ctx: &Context,
    cfg: &crate::config::Config,
    entries: &[verify::Entry],
    candidates: &mut [Candidate],
) -> Result<()> {
    let deadline = lifecycle::after(std::time::Instant::now(), cfg.action_timeout_seconds);
    for c in candidates.iter_mut() {
        if let Some(claim) = &c.orphan {
            let grace = Duration::from_secs(5);
            if let Err(e) = release::release_orphan(ctx, cfg, claim, grace, deadline) {
                c.outcome = Some(format!("failed: {e:#}"));
                continue;
            }
            if !c.prune {
                // Its claim, last.
                crate::claim::delete(&ctx.repo.common_dir, &claim.card);
                c.outcome = Some("released".into());
                continue;
            }
        }
        let outcome = if c.prune {
            let repo_lock =
                crate::store::take_repo(&ctx.repo.common_dir, deadline, "git kardwt gc")?;
            let removed = git::worktree_remove(
                &repo_lock,
                &ctx.repo.base,
                &c.path,
                git::Force::No,
                Some(deadline),
            )?;
            match removed {
                o if o.ok => {
                    crate::claim::forget(&ctx.repo.common_dir, &c.card, &c.path);
                    events::append(
                        &ctx.repo.common_dir,
                        "removed",
                        &c.card,
                        &c.path,
                        "gc: directory was gone",
                        Duration::ZERO,
                    );
                    "pruned".to_owned()
                }
                o => format!("failed: {}", o.stderr.trim()),
            }
        } else {
            let report = verify::verify(&ctx.repo, entries, &c.path, None);
            let opts = Options {
                force: false,
                delete_branch: false,
                grace: Duration::from_secs(5),
            };
            match remove::remove_verified(ctx, &report, &opts) {
                Ok(_) => "removed".to_owned(),
                Err(e) => format!("failed: {e:#}"),
            }
        };
        c.outcome = Some(outcome);
    }
    Ok(())
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
