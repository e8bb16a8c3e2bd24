//! `git kardwt status [<card> | --path P] [--json]`: one worktree in full: its
//! record, every check, drift, links, ports and whether the rules changed since it was
//! prepared, each link's state (`present`, `missing`, `replaced`) and why a record names no
//! base ref. Read-only.
use std::io::Write;

use anyhow::Result;

use crate::cli::StatusArgs;
use crate::context::Context;
use crate::verify;

pub(crate) fn run(ctx: &Context, args: &StatusArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    let (path, card) = ctx.target(&entries, &args.target)?;
    let report = verify::verify(&ctx.repo, &entries, &path, card.as_ref());
    // A rules file that does not decode leaves config_changed unknown rather than failing.
    let current = ctx.rules().ok().map(|r| r.config.fingerprint());
    let config_changed = match (&report.record, &current) {
        (Some(rec), Some(fp)) => Some(&rec.config_fingerprint != fp),
        _ => None,
    };
    // Each link as it is on disk now, not as the record remembers it.
    let links: Vec<(String, &'static str)> = report
        .record
        .as_ref()
        .map(|r| {
            r.links
                .iter()
                .map(|l| {
                    let state = link_word(&crate::lifecycle::link_state(
                        &ctx.links_from(),
                        &report.path,
                        l,
                    ));
                    (l.clone(), state)
                })
                .collect()
        })
        .unwrap_or_default();
    // An empty base ref is never silent: it says why.
    let base_why = report
        .record
        .as_ref()
        .filter(|r| r.base_ref.is_empty())
        .map(|r| crate::context::empty_base_why(&r.base_remote));
    // How many commits of the base (as last fetched) the tree's HEAD lacks.
    let behind = report
        .record
        .as_ref()
        .filter(|_| report.path.is_dir())
        .and_then(|r| crate::lifecycle::behind(&report.path, r));
    let ports = report
        .record
        .as_ref()
        .map(|r| r.ports.clone())
        .unwrap_or_default();
    if args.json {
        let mut shown = report.json();
        shown.state = Some(report.list_state());
        let json = StatusJson {
            report: shown,
            record: report.record.as_ref(),
            links: links
                .iter()
                .map(|(path, state)| LinkJson { path, state })
                .collect(),
            base_ref_missing: base_why.as_deref(),
            ports: &ports,
            config_changed,
            behind,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
        return Ok(absent_exit(&report));
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
            report
                .expected_branch()
                .unwrap_or("none expected (created detached)"),
            report.head.as_ref().map_or("?", |h| h.display())
        )?;
        writeln!(out, "drift:           {}", report.drift())?;
        writeln!(out, "made by:         {}", made_by(rec.origin))?;
        writeln!(
            out,
            "reason:          {} (why it was last prepared or released)",
            rec.reason.as_str()
        )?;
        match &base_why {
            Some(why) => writeln!(
                out,
                "base:            {} (no base ref) at {}: {why}",
                rec.base_remote, rec.base_oid
            )?,
            None => writeln!(
                out,
                "base:            {} {} at {}",
                rec.base_remote, rec.base_ref, rec.base_oid
            )?,
        }
        if let Some(n) = behind {
            writeln!(
                out,
                "behind:          {n} commit{} of {}",
                if n == 1 { "" } else { "s" },
                crate::gc::tracking_ref(rec).unwrap_or_default()
            )?;
        }
        writeln!(
            out,
            "created/updated: {} / {}",
            rec.created_at, rec.updated_at
        )?;
        if let Some(h) = &rec.last_hook {
            writeln!(out, "last hook:       {} {}", h.phase, h.describe())?;
        }
        if let Some(c) = &rec.prepare_cache {
            writeln!(out, "prepare cache:   {} {}", c.outcome, c.key)?;
        }
    }
    writeln!(
        out,
        "links:           {}",
        if links.is_empty() {
            "-".to_owned()
        } else {
            links
                .iter()
                .map(|(path, state)| format!("{path} ({state})"))
                .collect::<Vec<_>>()
                .join(" ")
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
    writeln!(out, "checks:          {}", verify::checks_summary(&report))?;
    for c in verify::shown_checks(&report, args.verbose) {
        writeln!(out, "  {}", verify::check_line(c))?;
    }
    Ok(absent_exit(&report))
}

/// An unknown card (nothing at its path) exits 1, as `verify` does; every other verdict is
/// shown, and exits 0.
fn absent_exit(report: &verify::Report) -> i32 {
    if report.verdict != verify::Verdict::Absent {
        return 0;
    }
    eprintln!("error: no worktree at {}", report.path.display());
    eprintln!("hint: git kardwt list shows the worktrees and their cards");
    1
}

/// A link's state in one word (pure): `present` (kardwt's link, as made), `missing` (nothing
/// there: `git kardwt add` on reuse links it again) or `replaced` (something else is there,
/// which kardwt never touches).
fn link_word(state: &crate::lifecycle::LinkState) -> &'static str {
    match state {
        crate::lifecycle::LinkState::Own => "present",
        crate::lifecycle::LinkState::Gone => "missing",
        crate::lifecycle::LinkState::UserWork(_) => "replaced",
    }
}

/// Who made the worktree, in words (pure).
fn made_by(origin: crate::state::Origin) -> &'static str {
    use crate::state::Origin;
    match origin {
        Origin::Add => "git kardwt add",
        Origin::Hook => "git worktree add (the post-checkout hook seeded it)",
        Origin::Adopt => "git kardwt adopt",
        Origin::Manual => "git kardwt prepare --path",
    }
}

/// `status --json`: the report (its state as `list` shows it), then the record and what the
/// tree holds of it.
#[derive(serde::Serialize)]
struct StatusJson<'a> {
    #[serde(flatten)]
    report: crate::verify::ReportJson<'a>,
    record: Option<&'a crate::state::Record>,
    links: Vec<LinkJson<'a>>,
    base_ref_missing: Option<&'a str>,
    ports: &'a [u16],
    config_changed: Option<bool>,
    behind: Option<u64>,
}

/// One shared link and what is at its path now.
#[derive(serde::Serialize)]
struct LinkJson<'a> {
    path: &'a str,
    state: &'static str,
}
