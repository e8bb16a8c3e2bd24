//! `git kardwt release [<card> | --path P]`: everything `remove` releases
//! (the processes whose cwd is inside the tree, the cleanup hook with reason `remove`, the
//! ports) without removing the tree, through [`crate::lifecycle::release`]; the record becomes
//! `released` and the next `add` prepares it again.
use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use crate::cli::ReleaseArgs;
use crate::ground::error::{failed, refused};
use crate::lifecycle::release::StepsJson;
use crate::lifecycle::release::{release_gone, release_verified};
use crate::session::context::Context;
use crate::verify::{self, Verdict};

pub fn run(ctx: &Context, args: &ReleaseArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    let grace = Duration::from_secs(args.grace);
    let done = match report.verdict {
        Verdict::Verified => release_verified(ctx, &report, grace)?,
        Verdict::Prunable => release_gone(ctx, &report, grace)?,
        Verdict::Unseeded => {
            return Err(refused(format!(
                "{} is not managed by kardwt (no record); nothing was released",
                path.display()
            ))
            .hint(format!(
                "record it first with git kardwt prepare --path {}",
                crate::ground::quote::sh_path(&path)
            ))
            .into())
        }
        Verdict::Absent => return Err(failed(report.explain()).into()),
        Verdict::Base | Verdict::Foreign => {
            return Err(refused(report.explain())
                .hint("kardwt releases only worktrees it verifies")
                .into())
        }
    };
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&StepsJson {
                path: done.path.to_string_lossy(),
                card: &done.card,
                state: Some("released"),
                steps: &done.steps,
            })?
        )?;
    } else {
        for s in &done.steps {
            writeln!(out, "{}", s.line(13))?;
        }
        writeln!(out, "released {}", done.path.display())?;
    }
    Ok(0)
}
