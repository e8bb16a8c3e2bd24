//! `git kardwt release [<card> | --path P]`: everything `remove` releases
//! (the processes whose cwd is inside the tree, the cleanup hook with reason `remove`, the
//! ports) without removing the tree, through [`crate::lifecycle::release_verified`]; the record becomes
//! `released` and the next `add` prepares it again.
use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use crate::cli::ReleaseArgs;
use crate::context::Context;
use crate::ground::error::{Code, Fail, Kind};
use crate::lifecycle::StepsJson;
use crate::lifecycle::{release_gone, release_verified};
use crate::verify::{self, Verdict};

pub(crate) fn run(ctx: &Context, args: &ReleaseArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    let grace = Duration::from_secs(args.grace);
    let done = match report.verdict {
        Verdict::Verified => release_verified(ctx, &report, grace)?,
        Verdict::Prunable => release_gone(ctx, &report, grace)?,
        Verdict::Unseeded => return Err(Fail::from(Refusal::Unmanaged { path }).into()),
        Verdict::Absent => return Err(Fail::from(Refusal::Absent(report.explain())).into()),
        Verdict::Base | Verdict::Foreign => {
            return Err(Fail::from(Refusal::Unverified(report.explain())).into())
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

/// Why `release` will not release the tree it was named.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("{} is not managed by kardwt (no record); nothing was released", path.display())]
    Unmanaged { path: std::path::PathBuf },
    /// Neither a directory nor a registration: verification's account of it.
    #[error("{0}")]
    Absent(String),
    /// The base checkout or a tree kardwt does not verify: verification's words.
    #[error("{0}")]
    Unverified(String),
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::Absent(_) => Code::Failed,
            Refusal::Unmanaged { .. } | Refusal::Unverified(_) => Code::Refused,
        }
    }
    fn hints(&self) -> Vec<String> {
        match self {
            Refusal::Unmanaged { path } => vec![format!(
                "record it first with git kardwt prepare --path {}",
                crate::ground::quote::sh_path(path)
            )],
            Refusal::Absent(_) => Vec::new(),
            Refusal::Unverified(_) => vec!["kardwt releases only worktrees it verifies".into()],
        }
    }
}
