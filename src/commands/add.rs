//! `git kardwt add <card>`: [`crate::lifecycle::add`], then the tree's path on stdout (or one JSON
//! object with `--json`), with a hint on stderr when its HEAD is not on the recorded branch.
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cli::AddArgs;
use crate::context::Context;
use crate::lifecycle::AddOptions;
use crate::{git, verify};

/// `add --json`: one object per call.
#[derive(Serialize)]
struct AddJson<'a> {
    path: &'a PathBuf,
    branch: &'a str,
    head: Option<&'a str>,
    drift: bool,
    base_oid: &'a str,
    state: &'static str,
    reason: &'static str,
}

pub(crate) fn run(ctx: &Context, args: &AddArgs, out: &mut dyn Write) -> Result<i32> {
    let added = crate::lifecycle::add(
        ctx,
        &AddOptions {
            card: args.card.clone(),
            board: args.board.clone(),
            timeout: args.timeout,
            quiet: args.quiet,
            base: args.base.clone(),
        },
    )?;
    let record = &added.record;
    if let Some(now) = added.head.as_ref().filter(|_| added.drift) {
        eprintln!(
            "hint: {}",
            verify::drift_hint(&record.card, &record.path, now, &record.branch)
        );
    }
    if args.json {
        let json = AddJson {
            path: &record.path,
            branch: &record.branch,
            head: added.head.as_ref().map(git::Head::display),
            drift: added.drift,
            base_oid: &record.base_oid,
            state: record.state.as_str(),
            reason: record.reason.as_str(),
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        writeln!(out, "{}", record.path.display())?;
    }
    Ok(0)
}
