//! `git kardwt remove (<card> | --path P)` (SPEC R-REMOVE): verify, then release first and
//! remove through [`crate::removal`], or clear what a failed removal left of the card's tree
//! ([`crate::remnant`], SPEC §28.3); the steps on stdout (or one JSON object).
use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use crate::cli::RemoveArgs;
use crate::context::Context;
use crate::error::{failed, refused};
use crate::release::StepsJson;
use crate::removal::{remove_verified, Options, Processes, Removal};
use crate::verify::{self, Verdict};

pub fn run(ctx: &Context, args: &RemoveArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    // SPEC §28.3: what a failed `git worktree remove` left of a card's tree (its claim names it).
    if matches!(report.verdict, Verdict::Foreign | Verdict::Absent) {
        let remnant = match &card {
            Some(card) => crate::remnant::of_card(&ctx.repo, card),
            None => crate::remnant::at(&ctx.repo, &path),
        };
        if let Some(remnant) = remnant {
            let (path, card, steps) = crate::remnant::remove(ctx, &remnant, args.force)?;
            return print(out, args.json, Removal { path, card, steps });
        }
    }
    match report.verdict {
        Verdict::Verified => {}
        Verdict::Unseeded => {
            return Err(refused(format!("{} is not managed by kardwt (no record)", path.display()))
                .hint(format!("remove it with git worktree remove {}, or record it first with git kardwt prepare --path", crate::quote::sh_path(&path)))
                .into())
        }
        Verdict::Absent => return Err(failed(report.explain()).into()),
        Verdict::Prunable => {
            return Err(refused(report.explain()).hint("git kardwt gc --apply clears stale registrations and reports what their records held").into())
        }
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
            writeln!(
                out,
                "{} {:<13} {}",
                if s.ok { "ok  " } else { "-   " },
                s.step,
                s.detail
            )?;
        }
        writeln!(out, "removed {}", path.display())?;
    }
    Ok(0)
}
