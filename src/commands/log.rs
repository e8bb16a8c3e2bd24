//! `git kardwt log [<card>] [--json] [--all]`: what happened to a card, read from
//! the event log, even after its worktree and record are gone; the hook's no-ops only with
//! `--all`. Events are named in words (`--json` keeps their names); columns fit their
//! content. Read-only.
use std::io::Write;

use anyhow::Result;

use crate::cli::LogArgs;
use crate::context::Context;
use crate::ground::card::CardId;

pub(crate) fn run(ctx: &Context, args: &LogArgs, out: &mut dyn Write) -> Result<i32> {
    let card = args.card.clone();
    let crate::state::EventLog {
        mut events,
        warnings,
    } = ctx.cards.events(card.as_ref().map(CardId::as_str));
    // The post-checkout hook's no-ops (a clone, a branch switch) are plumbing: --all shows them.
    if !args.all {
        events.retain(|e| e.event != "hook-noop");
    }
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&events)?)?;
        return Ok(0);
    }
    let card_of = |e: &crate::state::LoggedEvent| -> String {
        if e.card.is_empty() {
            "-".to_owned()
        } else {
            e.card.clone()
        }
    };
    let cards: Vec<String> = events.iter().map(card_of).collect();
    let w_event = crate::ground::cap::width(
        events.iter().map(|e| crate::state::in_words(&e.event)),
        7,
        20,
    );
    let w_card = crate::ground::cap::width(cards.iter().map(String::as_str), 4, 32);
    let w_outcome = crate::ground::cap::width(events.iter().map(|e| e.outcome.as_str()), 2, 40);
    for (e, card) in events.iter().zip(&cards) {
        // Each column starts where the ones before it end (a cell too long for its column
        // continues the row on the next line, at the next column's edge).
        let at_event = e.time.chars().count() + 1;
        let at_card = at_event + w_event + 1;
        let at_outcome = at_card + w_card + 1;
        writeln!(
            out,
            "{} {}{}{}{:>7}  {}",
            e.time,
            crate::ground::cap::cell(crate::state::in_words(&e.event), at_event, w_event),
            crate::ground::cap::cell(card, at_card, w_card),
            crate::ground::cap::cell(&e.outcome, at_outcome, w_outcome),
            crate::ground::human::duration(std::time::Duration::from_millis(e.duration_ms)),
            e.path
        )?;
    }
    Ok(0)
}
