//! `git kardwt remove (<card> | --path P)`: verify, then release first and
//! remove through [`crate::lifecycle::remove_verified`], or clear what a failed removal left of the card's tree
//! ([`crate::lifecycle::remove_remnant`]); the steps on stdout (or one JSON object).
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::cli::RemoveArgs;
use crate::context::Context;
use crate::ground::error::{Code, Fail, Kind};
use crate::lifecycle::StepsJson;
use crate::lifecycle::{remove_verified, Processes, Removal, RemoveOptions};
use crate::verify::{self, Verdict};

pub(crate) fn run(ctx: &Context, args: &RemoveArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    // What a failed `git worktree remove` left of a card's tree (its claim names it).
    if matches!(report.verdict, Verdict::Foreign | Verdict::Absent) {
        let remnant = match &card {
            Some(card) => crate::lifecycle::remnant_of(ctx, card),
            None => crate::lifecycle::remnant_at(ctx, &path),
        };
        if let Some(remnant) = remnant {
            let (path, card, steps) = crate::lifecycle::remove_remnant(ctx, &remnant, args.force)?;
            return print(out, args.json, Removal { path, card, steps });
        }
    }
    match report.verdict {
        Verdict::Verified => {}
        Verdict::Unseeded => return Err(Fail::from(Refusal::Unmanaged { path }).into()),
        Verdict::Absent => return Err(Fail::from(Refusal::Absent(report.explain())).into()),
        Verdict::Prunable => return remove_gone(ctx, args, &report, out),
        Verdict::Base => return Err(Fail::from(Refusal::Base(report.explain())).into()),
        Verdict::Foreign => return Err(Fail::from(Refusal::Foreign(report.explain())).into()),
    }
    let opts = RemoveOptions {
        force: args.force,
        delete_branch: args.delete_branch,
        processes: Processes::Release(Duration::from_secs(args.grace)),

        recheck: None,
    };
    let removal = remove_verified(ctx, &report, &opts)?;
    print(out, args.json, removal)
}

/// A card tree whose directory is gone (`rm -rf`, or a `git worktree remove` cut short after it
/// deleted the tree): what its record holds is released, then its registration is
/// pruned, as `gc --apply` does; a tree kardwt has no record of is refused.
fn remove_gone(
    ctx: &Context,
    args: &RemoveArgs,
    report: &verify::Report,
    out: &mut dyn Write,
) -> Result<i32> {
    let mut done = crate::lifecycle::release_gone(ctx, report, Duration::from_secs(args.grace))?;
    let timeout = ctx.rules()?.config.action_timeout_seconds;
    let deadline = crate::context::after(std::time::Instant::now(), timeout);
    let note = "remove: the directory was gone";
    if let Some(why) = crate::lifecycle::prune_gone(ctx, &done.card, &report.path, deadline, note)?
    {
        return Err(Fail::from(Refusal::Unpruned {
            path: report.path.clone(),
            why,
        })
        .into());
    }
    done.steps.push(crate::lifecycle::Step {
        step: "worktree",
        ms: None,
        ok: true,
        detail: "the directory was gone; its registration is pruned".into(),
    });
    print(
        out,
        args.json,
        Removal {
            path: done.path,
            card: done.card,
            steps: done.steps,
        },
    )
}

/// The steps of a removal, one per line, then `removed P` (`--json`: one object).
fn print(out: &mut dyn Write, json: bool, removal: Removal) -> Result<i32> {
    let Removal { path, card, steps } = removal;
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&StepsJson {
                path: path.to_string_lossy(),
                card: &card,
                state: None,
                steps: &steps,
            })?
        )?;
    } else {
        for s in &steps {
            writeln!(out, "{}", s.line(13))?;
        }
        writeln!(out, "removed {}", path.display())?;
    }
    Ok(0)
}

/// Why `remove` will not remove the tree it was named.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("{} is not managed by kardwt (no record)", path.display())]
    Unmanaged { path: PathBuf },
    /// Neither a directory nor a registration: verification's account of it.
    #[error("{0}")]
    Absent(String),
    #[error("{0}")]
    Base(String),
    #[error("{0}")]
    Foreign(String),
    /// Its directory was gone and its resources are released; git would not prune it.
    #[error(
        "{} was gone and what its record held is released, but git could not prune its \
         registration: {why}",
        path.display()
    )]
    Unpruned {
        path: PathBuf,
        why: crate::lifecycle::PruneRefused,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Absent(_) | Refusal::Unpruned { .. } => Code::Failed,
            Refusal::Unmanaged { .. } | Refusal::Base(_) | Refusal::Foreign(_) => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        let hint = match self {
            Refusal::Unmanaged { path } => format!(
                "remove it with git worktree remove {}, or record it first with git kardwt \
                 prepare --path",
                crate::ground::quote::sh_path(path)
            ),
            Refusal::Absent(_) => return Vec::new(),
            Refusal::Base(_) => "this is the base checkout (the main worktree the cards are made \
                                 from), which kardwt never removes; git kardwt list shows the card \
                                 worktrees, and git kardwt remove <card> removes one"
                .into(),
            Refusal::Foreign(_) => {
                "kardwt removes only worktrees it verifies; inspect it and remove it by hand".into()
            }
            Refusal::Unpruned { .. } => "fix what git names, then run git worktree prune (a \
                                         locked entry: git worktree unlock first)"
                .into(),
        };
        vec![hint]
    }
}
