//! `git kardwt verify [<card> | --path P]`: run the ownership checks and exit
//! 0 (verified, ready), 1 (not ready, unseeded, absent) or 3 (foreign or malformed). Read-only.
use std::io::Write;

use anyhow::Result;

use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::verify;

pub(crate) fn run(ctx: &Context, args: &VerifyArgs, out: &mut dyn Write) -> Result<i32> {
    // Only the worktree's own record and its card's claim are read, not every record.
    let entries = match &args.target.card {
        Some(card) => {
            let default = ctx.root().join(card.dir_name());
            verify::scan_card(&ctx.repo, card.as_str(), &default)?
        }
        None => verify::scan_path(&ctx.repo, &ctx.target(&[], &args.target)?.0)?,
    };
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    if args.json {
        // How far behind the base (as last fetched) the tree's HEAD is.
        let behind = report
            .record
            .as_ref()
            .filter(|_| report.path.is_dir())
            .and_then(|r| crate::lifecycle::behind(&report.path, r));
        let json = VerifyJson {
            report: report.json(),
            behind,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        // The verdict alone when every check passed; what failed, or with -v every check.
        for c in verify::shown_checks(&report, args.verbose) {
            writeln!(out, "{}", verify::check_line(c))?;
        }
        if report.drift() {
            writeln!(
                out,
                "drift: HEAD is {} but the record expects {}",
                report.head.as_ref().map_or("?", |h| h.display()),
                report.expected_branch().unwrap_or("?")
            )?;
        }
        writeln!(out, "{}", report.explain())?;
    }
    let code = report.exit_code();
    if code == 3 {
        eprintln!("error: {}", report.explain());
        eprintln!("hint: {}", report.fix_hint());
    }
    Ok(code)
}

/// `verify --json`: the report, then how far behind its base the tree is.
#[derive(serde::Serialize)]
struct VerifyJson<'a> {
    #[serde(flatten)]
    report: crate::verify::ReportJson<'a>,
    behind: Option<u64>,
}
