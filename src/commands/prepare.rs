//! `git kardwt prepare (<card> | --path P)`: seed and prepare an existing worktree by hand
//! (reason `manual`), through [`crate::lifecycle::prepare`]. Records an unseeded worktree
//! (origin `manual`), re-records one moved with `git worktree move`, and re-runs sharing and
//! the prepare hook on a managed one. Never removes the tree: a failure leaves it recorded as
//! failed (exit 4).
use std::io::Write;

use anyhow::Result;

use crate::cli::PrepareArgs;
use crate::context::Context;
use crate::verify;

pub(crate) fn run(ctx: &Context, args: &PrepareArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, asked) = ctx.target(&entries, &args.target)?;
    let rec = crate::lifecycle::prepare(ctx, &path, asked)?;
    writeln!(out, "{}", rec.path.display())?;
    Ok(0)
}
