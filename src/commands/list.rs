//! `git kardwt list [--json]`: every linked worktree with card, state, branch,
//! drift and path, then the claims no worktree git knows stands behind (orphan, malformed,
//! half-removed, interrupted). Read-only; reads admin dirs directly, spawning no git.
use std::io::Write;

use anyhow::Result;

use crate::cli::ListArgs;
use crate::session::context::Context;
use crate::state::record::Loaded;
use crate::verify::{self, Report, Verdict};

pub fn run(ctx: &Context, args: &ListArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    // Every worktree is judged against the same entries: look them up through maps built once,
    // and resolve the directory most worktrees share once, so many trees stay fast.
    let index = verify::Index::mapped(&entries);
    let mut parents = crate::git::repo::Parents::default();
    let reports: Vec<Report> = entries
        .iter()
        .map(|e| match &e.linked.path {
            Some(path) if !e.linked.prunable => {
                verify::judge(&ctx.repo, &index, parents.keep_last(path), None)
            }
            path => prunable(e, path.clone().unwrap_or_default()),
        })
        .collect();
    // Orphans: claims whose worktree git no longer knows, and malformed ones; trees a failed
    // removal left half deleted and intents of interrupted adds.
    let recorded: std::collections::HashSet<&str> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Loaded::Parsed(r) => Some(r.card.as_str()),
            _ => None,
        })
        .collect();
    let orphans: Vec<(crate::state::claim::Claim, &str)> =
        crate::lifecycle::remnant::unbacked(&ctx.repo, &entries, &recorded)
            .into_iter()
            .map(|(c, state)| (c, state.list_state()))
            .collect();
    if args.json {
        let mut rows: Vec<Row> = reports.iter().map(row).collect();
        rows.extend(orphans.iter().map(|(o, state)| Row {
            card: Some(&o.card),
            state,
            branch: (!o.branch.is_empty()).then_some(o.branch.as_str()),
            head: None,
            drift: false,
            path: o.path.to_string_lossy(),
            locked: false,
            ports: &o.ports,
        }));
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        return Ok(0);
    }
    // The card column fits its ids (a long one stands on its own line: text::cell).
    let cards = reports.iter().map(|r| r.card.as_deref().unwrap_or("-"));
    let w = crate::ground::cap::width(
        cards.chain(orphans.iter().map(|(o, _)| o.card.as_str())),
        12,
        32,
    );
    for r in &reports {
        let head = r.head.as_ref().map_or("-", |h| h.display());
        let drift = if r.drift() { " (drift)" } else { "" };
        writeln!(
            out,
            "{}{:<9} {}{drift} {}",
            crate::ground::cap::cell(r.card.as_deref().unwrap_or("-"), 0, w),
            r.list_state(),
            head,
            r.path.display()
        )?;
    }
    for (o, state) in &orphans {
        let card = crate::ground::cap::cell(&o.card, 0, w);
        writeln!(out, "{card}{state:<9} - {}", o.path.display())?;
    }
    Ok(0)
}

/// A registered worktree whose directory is gone.
fn prunable(e: &verify::Entry, path: std::path::PathBuf) -> Report {
    let record = match &e.record {
        Loaded::Parsed(r) => Some((**r).clone()),
        _ => None,
    };
    Report {
        path,
        card: record.as_ref().map(|r| r.card.clone()),
        verdict: Verdict::Prunable,
        checks: Vec::new(),
        record,
        admin: Some(e.linked.admin.clone()),
        head: crate::git::repo::read_head(&e.linked.admin),
        locked: e.linked.locked,
    }
}

/// One `list --json` row.
#[derive(serde::Serialize)]
struct Row<'a> {
    card: Option<&'a str>,
    state: &'a str,
    branch: Option<&'a str>,
    head: Option<&'a str>,
    drift: bool,
    path: std::borrow::Cow<'a, str>,
    locked: bool,
    ports: &'a [u16],
}

fn row(r: &Report) -> Row<'_> {
    Row {
        card: r.card.as_deref(),
        state: r.list_state(),
        branch: r.expected_branch(),
        head: r.head.as_ref().map(|h| h.display()),
        drift: r.drift(),
        path: r.path.to_string_lossy(),
        locked: r.locked,
        ports: r.record.as_ref().map_or(&[], |rec| rec.ports.as_slice()),
    }
}
