//! `git kardwt log [<card>] [--json]` (SPEC R-LOG): what happened to a card, read from the
//! event log, even after its worktree and record are gone. Read-only.
use std::io::Write;

use anyhow::Result;

use crate::card::CardId;
use crate::cli::LogArgs;
use crate::context::Context;
use crate::events;

pub fn run(ctx: &Context, args: &LogArgs, out: &mut dyn Write) -> Result<i32> {
    let card = args.card.as_deref().map(CardId::parse).transpose()?;
    let events::Read { events, warnings } =
        events::read(&ctx.repo.common_dir, card.as_ref().map(CardId::as_str));
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&events)?)?;
        return Ok(0);
    }
    for e in &events {
        let card = if e.card.is_empty() { "-" } else { &e.card };
        writeln!(
            out,
            "{} {:<13} {:<10} {:<24} {:>6} ms  {}",
            e.time, e.event, card, e.outcome, e.duration_ms, e.path
        )?;
    }
    Ok(0)
}
