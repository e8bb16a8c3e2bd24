//! `git kardwt status [<card> | --path P] [--json]` (SPEC R-LIST): one worktree in full: its
//! record, every check, drift, links, ports and whether the rules changed since it was
//! prepared. Read-only.
use std::io::Write;

use anyhow::Result;

use crate::cli::StatusArgs;
use crate::context::Context;
use crate::verify;

pub fn run(ctx: &Context, args: &StatusArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    // A rules file that does not decode leaves config_changed unknown rather than failing.
    let current = ctx.rules().ok().map(|r| r.config.fingerprint());
    let config_changed = match (&report.record, &current) {
        (Some(rec), Some(fp)) => Some(&rec.config_fingerprint != fp),
        _ => None,
    };
    let links = report
        .record
        .as_ref()
        .map(|r| r.links.clone())
        .unwrap_or_default();
    let ports = report
        .record
        .as_ref()
        .map(|r| r.ports.clone())
        .unwrap_or_default();
    if args.json {
        let mut v = report.to_json();
        v["verdict"] = serde_json::to_value(report.verdict)?;
        v["state"] = serde_json::Value::from(report.list_state());
        v["record"] = serde_json::to_value(&report.record)?;
        v["links"] = serde_json::to_value(&links)?;
        v["ports"] = serde_json::to_value(&ports)?;
        v["config_changed"] = serde_json::to_value(config_changed)?;
        writeln!(out, "{v}")?;
        return Ok(0);
    }
    writeln!(out, "path:            {}", report.path.display())?;
    writeln!(
        out,
        "card:            {}",
        report.card.as_deref().unwrap_or("-")
    )?;
    writeln!(out, "state:           {}", report.list_state())?;
    if let Some(rec) = &report.record {
        writeln!(
            out,
            "branch:          {} (HEAD: {})",
            rec.branch,
            report.head.as_ref().map_or("?", |h| h.display())
        )?;
        writeln!(out, "drift:           {}", report.drift())?;
        writeln!(
            out,
            "origin/reason:   {} / {}",
            origin(rec),
            rec.reason.as_str()
        )?;
        writeln!(
            out,
            "base:            {} {} at {}",
            rec.base_remote, rec.base_ref, rec.base_oid
        )?;
        writeln!(
            out,
            "created/updated: {} / {}",
            rec.created_at, rec.updated_at
        )?;
        if let Some(h) = &rec.last_hook {
            writeln!(
                out,
                "last hook:       {} exited {} after {} ms",
                h.phase, h.exit_code, h.duration_ms
            )?;
        }
    }
    writeln!(
        out,
        "links:           {}",
        if links.is_empty() {
            "-".to_owned()
        } else {
            links.join(" ")
        }
    )?;
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    writeln!(
        out,
        "ports:           {}",
        if ports.is_empty() {
            "-".to_owned()
        } else {
            ports.join(" ")
        }
    )?;
    let changed = config_changed.map_or("unknown".to_owned(), |c| c.to_string());
    writeln!(out, "config_changed:  {changed}")?;
    writeln!(out, "checks:")?;
    for c in &report.checks {
        let mark = match c.ok {
            Some(true) => "ok  ",
            Some(false) => "FAIL",
            None => "-   ",
        };
        writeln!(out, "  {mark} {:<18} {}", c.name, c.detail)?;
    }
    Ok(0)
}

fn origin(rec: &crate::record::Record) -> String {
    serde_json::to_value(rec.origin)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
