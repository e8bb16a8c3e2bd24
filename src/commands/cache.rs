//! `git kardwt cache list|check|prune [--json]`: the local prepare cache of this repository,
//! listed, checked byte for byte, pruned. What may be removed and how is
//! `crate::seed`'s; this file parses the options and prints. A cache path
//! that is not a real directory is refused (exit 3), an unreadable duration is a usage error
//! (exit 2); both touch nothing.
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{CacheCheckArgs, CacheListArgs, CachePruneArgs};
use crate::context::Context;
use crate::ground::error::{usage, Fail};
use crate::ground::human;
use crate::seed::{self, CacheEntry as Entry, LocalCache as Local};

/// One entry, as `--json` prints it.
#[derive(Serialize)]
struct EntryJson {
    key: String,
    files: Option<u64>,
    bytes: Option<u64>,
    stored: Option<String>,
    last_used: String,
    /// Seconds since it was stored (`None`: no manifest).
    age_seconds: Option<u64>,
    path: String,
}

fn entry_json(local: &Local, e: &Entry) -> EntryJson {
    let now = crate::sys::now_secs();
    EntryJson {
        key: e.key.clone(),
        files: e.files,
        bytes: e.bytes,
        stored: e.stored.map(crate::sys::rfc3339),
        last_used: crate::sys::rfc3339(e.used),
        age_seconds: e.stored.map(|s| now.saturating_sub(s)),
        path: local.dir.join(&e.key).to_string_lossy().into_owned(),
    }
}

/// `<key12>  <n> files, <size>, stored <age> ago, last used <age> ago`.
fn entry_line(e: &Entry) -> String {
    let now = crate::sys::now_secs();
    let ago = |t: u64| format!("{} ago", human::age(now.saturating_sub(t)));
    let what = match (e.files, e.bytes) {
        (Some(f), Some(b)) => format!("{f} files, {}", human::size(b)),
        _ => "damaged (no readable manifest)".to_owned(),
    };
    let stored = e
        .stored
        .map_or(String::new(), |s| format!(", stored {}", ago(s)));
    format!(
        "{}  {what}{stored}, last used {}",
        &e.key[..12],
        ago(e.used)
    )
}

fn open(ctx: &Context) -> Result<Local> {
    seed::open_cache(&ctx.repo.common_dir).map_err(|r| Fail::from(r).into())
}

pub fn list(ctx: &Context, args: &CacheListArgs, out: &mut dyn Write) -> Result<i32> {
    let local = open(ctx)?;
    if args.json {
        let rows: Vec<EntryJson> = local
            .entries
            .iter()
            .map(|e| entry_json(&local, e))
            .collect();
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        return Ok(0);
    }
    if local.entries.is_empty() {
        writeln!(out, "no prepare cache entries in {}", local.dir.display())?;
    }
    for e in &local.entries {
        writeln!(out, "{}", entry_line(e))?;
    }
    for name in &local.others {
        writeln!(out, "not kardwt's, left alone: {name}")?;
    }
    Ok(0)
}

/// One entry's check, as `--json` prints it.
#[derive(Serialize)]
struct Checked {
    key: String,
    ok: bool,
    /// Why it is damaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    damaged: Option<String>,
    /// Removed (with `--discard`).
    removed: bool,
}

pub fn check(ctx: &Context, args: &CacheCheckArgs, out: &mut dyn Write) -> Result<i32> {
    let local = open(ctx)?;
    let mut rows = Vec::new();
    for e in &local.entries {
        let damaged = seed::cache_damage(&local, &e.key);
        let removed = damaged.is_some()
            && args.discard
            && seed::discard_cache_entry(&local, &ctx.repo.common_dir, &e.key);
        rows.push(Checked {
            key: e.key.clone(),
            ok: damaged.is_none(),
            damaged,
            removed,
        });
    }
    let bad = rows.iter().filter(|r| !r.ok).count();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
    } else {
        for (r, e) in rows.iter().zip(&local.entries) {
            match &r.damaged {
                None => writeln!(out, "ok       {}", entry_line(e))?,
                Some(why) if r.removed => {
                    writeln!(out, "removed  {}: damaged: {why}", &r.key[..12])?
                }
                Some(why) => writeln!(out, "damaged  {}: {why}", &r.key[..12])?,
            }
        }
        writeln!(
            out,
            "{} entries checked, {bad} damaged{}",
            rows.len(),
            if bad > 0 && !args.discard {
                " (a damaged entry is a miss; `git kardwt cache check --discard` removes it)"
            } else {
                ""
            }
        )?;
    }
    Ok(if bad > 0 { 1 } else { 0 })
}

/// What `prune --json` prints.
#[derive(Serialize)]
struct PrunedJson {
    removed: Vec<EntryJson>,
    leftovers: Vec<String>,
    freed_bytes: u64,
}

pub fn prune(ctx: &Context, args: &CachePruneArgs, out: &mut dyn Write) -> Result<i32> {
    let older_than = match (&args.older_than, args.all) {
        (Some(text), _) => Some(human::parse_duration(text).ok_or_else(|| {
            usage(format!("--older-than {text:?} is not a duration"))
                .hint("write it like 30m, 12h or 7d; nothing was removed")
        })?),
        (None, true) => None,
        (None, false) => {
            return Err(usage("say which entries: --older-than <DUR> or --all")
                .hint("nothing was removed")
                .into())
        }
    };
    // Read before removing, so what is printed is what was there.
    let local = open(ctx)?;
    let now = crate::sys::now_secs();
    let pruned = seed::prune_cache(&ctx.repo.common_dir, |e| {
        older_than.is_none_or(|d| now.saturating_sub(e.used) > d.as_secs())
    })
    .map_err(Fail::from)?;
    let freed: u64 = pruned.entries.iter().filter_map(|e| e.bytes).sum();
    if args.json {
        let json = PrunedJson {
            removed: pruned
                .entries
                .iter()
                .map(|e| entry_json(&local, e))
                .collect(),
            leftovers: pruned.leftovers.clone(),
            freed_bytes: freed,
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
        return Ok(0);
    }
    for e in &pruned.entries {
        writeln!(out, "removed {}", entry_line(e))?;
    }
    for name in &pruned.leftovers {
        writeln!(
            out,
            "removed {name} (left by an interrupted store whose process is gone)"
        )?;
    }
    let kept = local.entries.len() - pruned.entries.len();
    writeln!(
        out,
        "removed {} entries ({}), kept {kept}",
        pruned.entries.len(),
        human::size(freed)
    )?;
    Ok(0)
}
