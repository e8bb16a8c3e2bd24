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
//! in place with `--apply` (`crate::state::aside`). The plan is `crate::gc::plan`'s, the
//! collecting `crate::gc::apply`'s, each tree through the one removability decision; this file
//! orchestrates and prints.
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::GcArgs;
use crate::context::Context;
use crate::gc::{Candidate, Kept, LastFetch, Outcome, Plan, Policy};
use crate::ground::error::{Code, Fail, Kind};
use crate::verify;

pub use crate::ground::human::parse_duration;

pub fn run(ctx: &Context, args: &GcArgs, out: &mut dyn Write) -> Result<i32> {
    let older_than = parse_duration(&args.older_than)
        .ok_or_else(|| NoDuration::OlderThan(args.older_than.clone()))?;
    let idle = match &args.idle {
        None => None,
        Some(text) => Some(
            humantime::parse_duration(text).map_err(|error| NoDuration::Idle {
                text: text.clone(),
                error,
            })?,
        ),
    };
    let rules = ctx.rules()?;
    let entries = verify::scan(&ctx.repo)?;
    let policy = Policy {
        offline: args.offline,
        prunable: args.prunable,
        include_failed: args.include_failed,
        older_than,
        older_than_text: &args.older_than,
        idle,
    };
    let Plan {
        last_fetched,
        mut candidates,
        kept,
    } = crate::gc::plan(ctx, &rules.config, &entries, &policy)?;

    // Trees a killed removal moved aside, before this run moves any.
    let aside = crate::state::Tidy::run(&ctx.repo.common_dir, args.apply);
    if args.apply {
        let again = (idle, args.include_failed);
        crate::gc::apply(ctx, &rules.config, &entries, &mut candidates, again)?;
    }
    // The prepare cache's entries, those beyond the bound dropped with --apply.
    let bound = crate::seed::cache_bound(&rules.config);
    let cache = crate::seed::CacheTidy::run(&ctx.repo.common_dir, bound, args.apply);
    // The temporary files killed writes left, removed with --apply.
    let admins: Vec<_> = entries.iter().map(|e| e.linked.admin.clone()).collect();
    let mut temporaries = ctx.cards.dead_temporaries(&admins);
    if args.apply {
        temporaries = crate::sys::remove_files(&temporaries);
    }
    // Stale card/* branches, judged after the trees (a tree collected above frees its
    // branch for the same run).
    let branches = if args.branches {
        Some(crate::gc::collect_branches(ctx, &rules.config, args)?)
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
                format!("{} ago", crate::gc::coarse(s))
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
            match &c.outcome {
                Some(Outcome::Failed(why)) => {
                    writeln!(
                        out,
                        "could not collect card {} at {}: {why}",
                        c.card,
                        c.path.display()
                    )?;
                    eprintln!("error: could not collect card {}: {why}", c.card);
                }
                Some(Outcome::Kept(why)) => {
                    writeln!(out, "kept card {} at {}: {why}", c.card, c.path.display(),)?
                }
                Some(Outcome::Collected(how)) => writeln!(
                    out,
                    "{verb} card {} at {}: {}{ports}: {}",
                    c.card,
                    c.path.display(),
                    c.reason,
                    how.as_str()
                )?,
                None => writeln!(
                    out,
                    "{verb} card {} at {}: {}{ports}",
                    c.card,
                    c.path.display(),
                    c.reason,
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
        for line in branches.iter().flat_map(crate::gc::BranchReport::lines) {
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
    let failed = candidates
        .iter()
        .any(|c| matches!(c.outcome, Some(Outcome::Failed(_))));
    let failed = failed
        || branches
            .as_ref()
            .is_some_and(crate::gc::BranchReport::failed);
    Ok(i32::from(failed))
}

/// A duration option gc cannot read: a usage error (exit 2). Not an error type itself: `?` makes
/// it the [`Fail`] that says so, so it cannot leave as a plain exit 1.
#[derive(Debug)]
enum NoDuration {
    OlderThan(String),
    Idle {
        text: String,
        error: humantime::DurationError,
    },
}

impl std::fmt::Display for NoDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoDuration::OlderThan(text) => write!(f, "--older-than {text:?} is not a duration"),
            NoDuration::Idle { text, error } => {
                write!(f, "--idle {text:?} is not a duration: {error}")
            }
        }
    }
}

/// [`NoDuration`] as an error of its kind.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unreadable(NoDuration);

impl Kind for Unreadable {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec![match self.0 {
            NoDuration::OlderThan(_) => "write it like 24h, 30m, 2d or 0s",
            NoDuration::Idle { .. } => "write it like 2h, 3d or 90min",
        }
        .into()]
    }
}

impl From<NoDuration> for anyhow::Error {
    fn from(no: NoDuration) -> anyhow::Error {
        anyhow::Error::new(Fail::from(Unreadable(no)))
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
    prepare_cache: &'a crate::seed::CacheTidy,
    /// Temporary files killed writes left: removed when applied.
    temporaries: &'a [std::path::PathBuf],
    /// Trees removals moved aside and a kill kept from being deleted: deleted when applied.
    moved_aside: &'a [crate::state::Entry],
    /// `--branches`: the stale `card/*` branches.
    #[serde(skip_serializing_if = "Option::is_none")]
    branches: Option<&'a crate::gc::BranchReport>,
}
