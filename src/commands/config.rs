//! `git kardwt config check [--json]` (SPEC R-CFG): validate the rules strictly and print the
//! effective configuration, defaults filled in. Exit 2 on any configuration error.
use std::io::Write;

use anyhow::Result;

use crate::cli::ConfigCheckArgs;
use crate::context::Context;

pub fn check(ctx: &Context, args: &ConfigCheckArgs, out: &mut dyn Write) -> Result<i32> {
    let rules = ctx.rules()?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&rules.config)?)?;
        return Ok(0);
    }
    match &rules.file {
        Some(f) => eprintln!("{}: ok", f.display()),
        None => eprintln!(
            "no rules file ({}): defaults apply",
            ctx.rules_path().0.display()
        ),
    }
    let yaml = yaml_serde::to_string(&serde_json::json!({ "worktree": rules.config }))?;
    write!(out, "{yaml}")?;
    Ok(0)
}
