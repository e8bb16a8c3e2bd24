//! `git kardwt list [--json [--status]] [--budget SECS]`: every linked worktree with card,
//! state, branch, drift, age and path, then the claims no worktree git knows stands behind
//! (orphan, malformed, half-removed, interrupted) and the trees removals moved aside whose
//! deletion failed (undeleted), card ids in natural order. The table (and
//! `--json --status`) adds each tree's status: dirty, and commits ahead of and behind its
//! recorded base, read by git in parallel within a time budget; a tree not answered within it
//! shows `?` (`null`). Plain `--json` reads admin dirs directly and spawns no git.
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::ListArgs;
use crate::context::Context;
use crate::ground::cap;
use crate::state::Loaded;
use crate::verify::{self, Report, Verdict};

pub(crate) fn run(ctx: &Context, args: &ListArgs, out: &mut dyn Write) -> Result<i32> {
    let entries = verify::scan(&ctx.repo)?;
    // Every worktree is judged against the same entries: look them up through maps built once,
    // and resolve the directory most worktrees share once, so many trees stay fast.
    let index = verify::Index::mapped(&entries);
    let mut parents = crate::git::Parents::default();
    let reports: Vec<Report> = entries
        .iter()
        .map(|e| match &e.linked.path {
            Some(path) if !e.linked.prunable => {
                verify::verify_resolved(&ctx.repo, &index, parents.keep_last(path), None)
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
    let orphans: Vec<(crate::state::Claim, &str)> =
        crate::lifecycle::unbacked(ctx, &entries, &recorded)
            .into_iter()
            .map(|(c, state)| (c, state.list_state()))
            .collect();
    // Trees removals moved aside whose deletion failed: their bytes stay there.
    let undeleted = ctx.cards.failing_asides();
    let now = crate::sys::now_secs();
    let mut rows: Vec<Row> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| Row {
            report: Some(i),
            ..row(r, now)
        })
        .collect();
    rows.extend(orphans.iter().map(|(o, state)| Row {
        card: claimed_card(&o.card),
        state,
        branch: (!o.branch.is_empty()).then_some(o.branch.as_str()),
        head: None,
        drift: false,
        path: o.path.to_string_lossy(),
        locked: false,
        ports: &o.ports,
        age_seconds: age_seconds(&o.created_at, now),
        status: None,
        report: None,
    }));
    rows.extend(undeleted.iter().map(|a| Row {
        card: Some(&a.card),
        state: "undeleted",
        branch: None,
        head: None,
        drift: false,
        path: a.path.to_string_lossy(),
        locked: false,
        ports: &[],
        age_seconds: age_seconds(&a.moved_at, now),
        status: None,
        report: None,
    }));
    // Card ids in natural order (3 before 10); rows without a card last, by path.
    rows.sort_by(|a, b| match (a.card, b.card) {
        (Some(x), Some(y)) => crate::ground::natural::compare(x, y).then(a.path.cmp(&b.path)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.path.cmp(&b.path),
    });
    if !args.json || args.status {
        let asked = statuses(ctx, &reports, args.budget);
        for row in &mut rows {
            row.status = Some(match row.report.and_then(|i| asked.get(i)) {
                Some(status) => status.clone(),
                None => Status::default(),
            });
        }
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        return Ok(0);
    }
    table(&rows, out)?;
    Ok(0)
}

/// The table: a header and one aligned line per row, the path last (never cut).
fn table(rows: &[Row], out: &mut dyn Write) -> std::io::Result<()> {
    const HEADER: [&str; 7] = ["CARD", "STATE", "DIRTY", "AHEAD", "BEHIND", "AGE", "BRANCH"];
    let cells: Vec<[String; 7]> = rows.iter().map(Row::cells).collect();
    // Each column fits its cells (a long card id or branch stands on its own line: cap::cell).
    let caps = [32, 12, 5, 8, 8, 6, 48];
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            let column = cells.iter().map(|line| line[c].as_str());
            cap::width(column.chain([HEADER[c]]), 0, caps[c])
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut text = String::new();
        let mut start = 0;
        for (c, cell) in cells.iter().take(7).enumerate() {
            text.push_str(&cap::cell(cell, start, widths[c]));
            start += widths[c] + 1;
        }
        text.push_str(cells[7]);
        text
    };
    let mut header: Vec<&str> = HEADER.to_vec();
    header.push("PATH");
    writeln!(out, "{}", line(&header))?;
    for (r, cells) in rows.iter().zip(&cells) {
        let mut all: Vec<&str> = cells.iter().map(String::as_str).collect();
        all.push(&r.path);
        writeln!(out, "{}", line(&all))?;
    }
    Ok(())
}

/// A claim's card as a row shows it: a malformed claim's may be anything, and only an id is
/// shown (a script reading `--json` may hand it to a shell).
fn claimed_card(card: &str) -> Option<&str> {
    crate::ground::card::why_invalid(card)
        .is_none()
        .then_some(card)
}

/// A registered worktree whose directory is gone.
fn prunable(e: &verify::Entry, path: std::path::PathBuf) -> Report {
    let record = match &e.record {
        Loaded::Parsed(r) => Some((**r).clone()),
        _ => None,
    };
    Report {
        path,
        card: record.as_ref().map(|r| r.card.to_string()),
        verdict: Verdict::Prunable,
        checks: Vec::new(),
        record,
        admin: Some(e.linked.admin.clone()),
        head: crate::git::read_head(&e.linked.admin),
        locked: e.linked.locked,
    }
}

/// One row of the list (`--json`: one object).
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
    /// Seconds since the record (or claim) was created; `null` when it names no time.
    age_seconds: Option<u64>,
    /// Asked for (the table, `--json --status`): dirty, ahead, behind, flattened in.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    /// Which report the row shows (orphans have none), to attach its status.
    #[serde(skip)]
    report: Option<usize>,
}

impl Row<'_> {
    /// The table's cells, the path aside.
    fn cells(&self) -> [String; 7] {
        let status = self.status.clone().unwrap_or_default();
        let mut branch = self.head.or(self.branch).unwrap_or("-").to_owned();
        if self.drift {
            branch.push_str(" (drift)");
        }
        [
            self.card.unwrap_or("-").to_owned(),
            self.state.to_owned(),
            status
                .dirty
                .shown(|d| if *d { "yes" } else { "no" }.to_owned()),
            status.ahead.shown(u64::to_string),
            status.behind.shown(u64::to_string),
            self.age_seconds
                .map_or("-".into(), crate::ground::human::age),
            branch,
        ]
    }
}

fn row(r: &Report, now: u64) -> Row<'_> {
    Row {
        card: r.card.as_deref(),
        state: r.list_state(),
        branch: r.expected_branch(),
        head: r.head.as_ref().map(|h| h.display()),
        drift: r.drift(),
        path: r.path.to_string_lossy(),
        locked: r.locked,
        ports: r.record.as_ref().map_or(&[], |rec| rec.ports.as_slice()),
        age_seconds: r
            .record
            .as_ref()
            .and_then(|rec| age_seconds(&rec.created_at, now)),
        status: None,
        report: None,
    }
}

/// Seconds from `created_at` (RFC 3339, as kardwt writes it) to `now`; a time in the future
/// (another machine's clock) is 0.
fn age_seconds(created_at: &str, now: u64) -> Option<u64> {
    crate::sys::parse_rfc3339(created_at).map(|t| now.saturating_sub(t))
}

/// One status figure of a tree: known, not back within the budget (`?`, `null`), or not
/// applicable or not readable (`-`, `null`).
#[derive(Debug, Clone, Default)]
enum Figure<T> {
    Known(T),
    Late,
    #[default]
    None,
}

impl<T: Clone> Figure<T> {
    fn shown(&self, show: impl FnOnce(&T) -> String) -> String {
        match self {
            Figure::Known(v) => show(v),
            Figure::Late => "?".into(),
            Figure::None => "-".into(),
        }
    }

    fn known(&self) -> Option<T> {
        match self {
            Figure::Known(v) => Some(v.clone()),
            _ => None,
        }
    }
}

/// A tree's status as git reported it.
#[derive(Debug, Clone, Default)]
struct Status {
    dirty: Figure<bool>,
    ahead: Figure<u64>,
    behind: Figure<u64>,
}

impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("dirty", &self.dirty.known())?;
        map.serialize_entry("ahead", &self.ahead.known())?;
        map.serialize_entry("behind", &self.behind.known())?;
        map.end()
    }
}

/// What one tree's status is read from: its directory, and the commit its base is now (the
/// base branch's remote-tracking ref as last fetched, else the recorded base commit), when the
/// tree has a record.
struct Asked {
    path: PathBuf,
    base: Option<String>,
}

/// The status of every report, in their order, read in parallel (one small pool of threads,
/// each running git in one tree at a time) until `budget` seconds from now; trees that do not
/// verify (or are gone) are not read. Every git still running when the budget ends is killed
/// with its process group and reaped before this returns.
fn statuses(ctx: &Context, reports: &[Report], budget: f64) -> Vec<Status> {
    let deadline = Instant::now() + Duration::from_secs_f64(budget);
    let mut bases = std::collections::HashMap::new();
    let asked: Vec<Option<Asked>> = reports
        .iter()
        .map(|r| {
            let readable = matches!(r.verdict, Verdict::Verified | Verdict::Unseeded);
            readable.then(|| Asked {
                path: r.path.clone(),
                base: r.record.as_ref().and_then(|rec| {
                    bases
                        .entry((
                            rec.base_remote.clone(),
                            rec.base_ref.clone(),
                            rec.base_oid.clone(),
                        ))
                        .or_insert_with(|| compared_base(ctx, rec))
                        .clone()
                }),
            })
        })
        .collect();
    // Each git runs in a process group of its own, and one killed at the deadline takes its
    // group with it (an fsmonitor hook it started): only what a late tree's git started, never
    // what another tree's git left running on purpose (a daemon in a session of its own).
    crate::sys::in_parallel(&asked, |a| match a {
        Some(a) => read_status(a, deadline),
        None => Status::default(),
    })
}

/// The commit a tree's ahead and behind are counted against: its base branch's remote-tracking
/// ref (`refs/remotes/<remote>/<branch>`) as last fetched, when it exists; else the base
/// commit the record names (a tag or commit base, or a ref fetched away since).
fn compared_base(ctx: &Context, rec: &crate::state::Record) -> Option<String> {
    crate::gc::tracking_ref(rec)
        .and_then(|tracking| ctx.repo.ref_oid(&tracking).ok())
        .or_else(|| (!rec.base_oid.is_empty()).then(|| rec.base_oid.clone()))
}

/// One tree's status, each figure `Late` when the deadline passed before git answered.
fn read_status(a: &Asked, deadline: Instant) -> Status {
    fn figure<T>(got: Result<T>, deadline: Instant) -> Figure<T> {
        match got {
            Ok(v) => Figure::Known(v),
            Err(_) if Instant::now() >= deadline => Figure::Late,
            Err(_) => Figure::None,
        }
    }
    let late = || Instant::now() >= deadline;
    let dirty = if late() {
        Figure::Late
    } else {
        figure(crate::git::is_dirty(&a.path, Some(deadline)), deadline)
    };
    let counts = match &a.base {
        None => Figure::None,
        Some(_) if late() => Figure::Late,
        Some(base) => figure(
            crate::git::ahead_behind(&a.path, base, Some(deadline)),
            deadline,
        ),
    };
    let (ahead, behind) = match counts {
        Figure::Known((ahead, behind)) => (Figure::Known(ahead), Figure::Known(behind)),
        Figure::Late => (Figure::Late, Figure::Late),
        Figure::None => (Figure::None, Figure::None),
    };
    Status {
        dirty,
        ahead,
        behind,
    }
}
