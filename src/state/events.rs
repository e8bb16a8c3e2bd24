//! The event log: one JSON line per lifecycle event appended to
//! `<common dir>/kardwt/events.jsonl` under the log's own lock (never the repository lock,
//! which a parent `git kardwt add` may hold while its hook runs), rotated at 1 MiB. Writing
//! is best effort: a log that cannot be written never fails an action, but says so on
//! stderr. Reading skips a line that does not decode, or whose card is not a card id, with a
//! warning naming it.
use crate::sys;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Rotate the log when it grows past this size.
const ROTATE_AT: u64 = 1024 * 1024;

/// The largest generation read: rotation keeps each near [`ROTATE_AT`].
const MAX_READ: u64 = 64 * ROTATE_AT;

/// The lifecycle events the log records, by the names the log writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Created,
    Seeded,
    Prepared,
    Reused,
    Failed,
    Removed,
    Released,
    RemoveRefused,
    Adopted,
    PushBlocked,
    PushChecked,
    HookNoop,
}

impl Kind {
    /// The name written to the log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Created => "created",
            Kind::Seeded => "seeded",
            Kind::Prepared => "prepared",
            Kind::Reused => "reused",
            Kind::Failed => "failed",
            Kind::Removed => "removed",
            Kind::Released => "released",
            Kind::RemoveRefused => "remove-refused",
            Kind::Adopted => "adopted",
            Kind::PushBlocked => "push-blocked",
            Kind::PushChecked => "push-checked",
            Kind::HookNoop => "hook-noop",
        }
    }
}

/// An event's name as a person reads it (`hook-noop` is "nothing to do (hook)"); `--json`
/// and the log file keep the names [`Kind::as_str`] writes.
pub(crate) fn in_words(event: &str) -> &str {
    match event {
        "remove-refused" => "removal refused",
        "push-blocked" => "push blocked",
        "push-checked" => "push checked",
        "hook-noop" => "nothing to do (hook)",
        other => other,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Event {
    pub time: String,
    pub event: String,
    pub card: String,
    pub path: String,
    pub outcome: String,
    pub duration_ms: u64,
}

pub(super) fn log_path(common_dir: &Path) -> PathBuf {
    crate::sys::events_path(common_dir)
}

fn rotated_path(common_dir: &Path) -> PathBuf {
    crate::sys::events_rotated_path(common_dir)
}

/// Append one event.
pub(super) fn append(
    common_dir: &Path,
    kind: Kind,
    card: &str,
    path: &Path,
    outcome: &str,
    duration: Duration,
) {
    let event = kind.as_str();
    let e = Event {
        time: crate::sys::now(),
        event: event.to_owned(),
        card: card.to_owned(),
        path: path.display().to_string(),
        outcome: outcome.to_owned(),
        duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    };
    let Ok(mut line) = serde_json::to_string(&e) else {
        return;
    };
    line.push('\n');
    if let Err(why) = write_line(common_dir, &line) {
        eprintln!("warning: could not write event '{event}': {why}");
    }
}

/// Append one whole line, rotating first when the log is full. Only the rotation takes the
/// log's own lock: an append is one `write` to a file opened for appending, whole whatever
/// else appends beside it, and a line that lands in the file just rotated is still read.
fn write_line(common_dir: &Path, line: &str) -> anyhow::Result<()> {
    let path = log_path(common_dir);
    let why = |e: std::io::Error| anyhow::anyhow!(crate::sys::with_path(&path, &e));
    // Only a regular file is rotated: a symlink or FIFO planted as the log is refused below.
    let full =
        || std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() >= ROTATE_AT);
    if full() {
        let lock_path = crate::sys::events_lock_path(common_dir);
        let deadline = Instant::now() + Duration::from_secs(5);
        let _held = sys::take_lock(
            common_dir,
            lock_path,
            "the event log's lock",
            deadline,
            "rotate",
        )?;
        // Full still: another process may have rotated it while this one waited.
        if full() {
            std::fs::rename(&path, rotated_path(common_dir)).map_err(why)?;
        }
    }
    let opened = match crate::sys::open_append_nofollow(&path) {
        // The first event of a repository: kardwt's directory is made (nothing planted followed).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().unwrap_or(common_dir);
            crate::sys::create_dir_nofollow(common_dir, dir)
                .and_then(|()| crate::sys::open_append_nofollow(&path))
        }
        other => other,
    };
    let mut f = opened.map_err(why)?;
    // One write call for the whole line: readers never see half an event.
    f.write_all(line.as_bytes()).map_err(why)?;
    Ok(())
}

/// What reading the log found: the events, and one warning per line that did not decode.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
}

/// Every event still kept (the rotated file first), optionally only one card's. A line that
/// does not decode (a torn write, a stray byte) is skipped and named in `warnings`; every other
/// line is still read.
pub(super) fn read(common_dir: &Path, card: Option<&str>) -> Read {
    let mut found = Read::default();
    for path in [rotated_path(common_dir), log_path(common_dir)] {
        match crate::sys::read_bounded(&path, MAX_READ) {
            Ok(Some(bytes)) => parse_into(&bytes, &path, card, &mut found),
            Ok(None) => {}
            Err(e) => found.warnings.push(format!(
                "could not read {}",
                crate::sys::path_then_why(&path, &e)
            )),
        }
    }
    found
}

/// Decode the lines of one log file (pure).
fn parse_into(bytes: &[u8], path: &Path, card: Option<&str>, found: &mut Read) {
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            // kardwt writes only card ids (or none): any other card was written by someone
            // else, and is neither shown nor matched.
            Ok(e) if !e.card.is_empty() && crate::ground::card::why_invalid(&e.card).is_some() => {
                found.warnings.push(format!(
                    "{} line {}: its card is not a valid card id; skipped",
                    path.display(),
                    n + 1
                ))
            }
            Ok(e) if card.is_none_or(|c| e.card == c) => found.events.push(e),
            Ok(_) => {}
            Err(_) => found.warnings.push(format!(
                "{} line {}: not an event; skipped",
                path.display(),
                n + 1
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_reads_filters_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        append(
            dir.path(),
            Kind::Created,
            "42",
            Path::new("/w/card-42"),
            "ok",
            Duration::from_millis(7),
        );
        append(
            dir.path(),
            Kind::Created,
            "43",
            Path::new("/w/card-43"),
            "ok",
            Duration::ZERO,
        );
        let all = read(dir.path(), None).events;
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].duration_ms, 7);
        assert_eq!(read(dir.path(), Some("43")).events.len(), 1);
        std::fs::write(log_path(dir.path()), vec![b'\n'; ROTATE_AT as usize]).unwrap();
        append(
            dir.path(),
            Kind::Removed,
            "42",
            Path::new("/w/card-42"),
            "ok",
            Duration::ZERO,
        );
        assert!(rotated_path(dir.path()).exists());
        assert_eq!(
            read(dir.path(), Some("42")).events.last().unwrap().event,
            "removed"
        );
    }

    #[test]
    fn a_line_that_does_not_decode_is_skipped_and_named() {
        let mut found = Read::default();
        let good = br#"{"time":"t","event":"created","card":"1","path":"/p","outcome":"ok","duration_ms":1}"#;
        let mut bytes = good.to_vec();
        bytes.extend_from_slice(b"\n{\"time\":\"\xff\"}\n\n");
        bytes.extend_from_slice(good);
        parse_into(&bytes, Path::new("events.jsonl"), None, &mut found);
        assert_eq!(found.events.len(), 2);
        assert_eq!(
            found.warnings,
            vec!["events.jsonl line 2: not an event; skipped".to_owned()]
        );
    }
}
