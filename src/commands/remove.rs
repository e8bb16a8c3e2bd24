//! `git kardwt remove (<card> | --path P)`: verify, then release first and
//! remove through [`crate::lifecycle::remove`], or clear what a failed removal left of the card's tree
//! ([`crate::lifecycle::remnant`]); the steps on stdout (or one JSON object).
use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use crate::cli::RemoveArgs;
use crate::ground::error::{failed, refused};
use crate::lifecycle::release::StepsJson;
use crate::lifecycle::remove::{remove_verified, Options, Processes, Removal};
use crate::session::context::Context;
use crate::verify::{self, Verdict};

pub fn run(ctx: &Context, args: &RemoveArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    // What a failed `git worktree remove` left of a card's tree (its claim names it).
    if matches!(report.verdict, Verdict::Foreign | Verdict::Absent) {
        let remnant = match &card {
            Some(card) => crate::lifecycle::remnant::of_card(&ctx.repo, card),
            None => crate::lifecycle::remnant::at(&ctx.repo, &path),
        };
        if let Some(remnant) = remnant {
            let (path, card, steps) = crate::lifecycle::remnant::remove(ctx, &remnant, args.force)?;
            return print(out, args.json, Removal { path, card, steps });
        }
    }
    match report.verdict {
        Verdict::Verified => {}
        Verdict::Unseeded => {
            return Err(refused(format!("{} is not managed by kardwt (no record)", path.display()))
                .hint(format!("remove it with git worktree remove {}, or record it first with git kardwt prepare --path", crate::ground::quote::sh_path(&path)))
                .into())
        }
        Verdict::Absent => return Err(failed(report.explain()).into()),
        Verdict::Prunable => return remove_gone(ctx, args, &report, out),
        Verdict::Base | Verdict::Foreign => {
            return Err(refused(report.explain()).hint(match report.verdict {
                    Verdict::Base => "this is the base checkout (the main worktree the cards are made from), which kardwt never removes; git kardwt list shows the card worktrees, and git kardwt remove <card> removes one",
                    _ => "kardwt removes only worktrees it verifies; inspect it and remove it by hand",
                }).into())
        }
    }
    let opts = Options {
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
    let mut done =
        crate::lifecycle::release::release_gone(ctx, report, Duration::from_secs(args.grace))?;
    let timeout = ctx.rules()?.config.action_timeout_seconds;
    let deadline = crate::session::hold::after(std::time::Instant::now(), timeout);
    let note = "remove: the directory was gone";
    if let Some(why) =
        crate::lifecycle::remove::prune_gone(ctx, &done.card, &report.path, deadline, note)?
    {
        return Err(failed(format!(
            "{} was gone and what its record held is released, but git could not prune its registration: {why}",
            report.path.display()
        ))
        .hint("fix what git names, then run git worktree prune (a locked entry: git worktree unlock first)")
        .into());
    }
    done.steps.push(crate::lifecycle::step::Step {
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
