//! The event log (SPEC R-LOG): one JSON line per lifecycle event appended to
//! `<common dir>/kardwt/events.jsonl` under the log's own lock (never the repository lock,
//! which a parent `git kardwt add` may hold while its hook runs), rotated at 1 MiB. Writing
//! is best effort: a log that cannot be written never fails an action.
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::lock;

/// Rotate the log when it grows past this size.
const ROTATE_AT: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub time: String,
    pub event: String,
    pub card: String,
    pub path: String,
    pub outcome: String,
    pub duration_ms: u64,
}

pub fn log_path(common_dir: &Path) -> PathBuf {
    lock::kardwt_dir(common_dir).join("events.jsonl")
}

fn rotated_path(common_dir: &Path) -> PathBuf {
    lock::kardwt_dir(common_dir).join("events.jsonl.1")
}

/// Append one event. `event` is one of the contract's names (`created`, `prepared`, …).
pub fn append(
    common_dir: &Path,
    event: &str,
    card: &str,
    path: &Path,
    outcome: &str,
    duration: Duration,
) {
    let e = Event {
        time: crate::record::now(),
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
    let lock_path = lock::kardwt_dir(common_dir).join("events.lock");
    let deadline = Instant::now() + Duration::from_secs(5);
    let Ok(_held) = lock::take(lock_path, "the event log's lock", deadline, "append") else {
        return;
    };
    let path = log_path(common_dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= ROTATE_AT) {
        let _ = std::fs::rename(&path, rotated_path(common_dir));
    }
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&path) {
        // One write call for the whole line: readers never see half an event.
        let _ = f.write_all(line.as_bytes());
    }
}

/// Every event still kept (the rotated file first), optionally only one card's.
pub fn read(common_dir: &Path, card: Option<&str>) -> Vec<Event> {
    [rotated_path(common_dir), log_path(common_dir)]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<Event>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|e| card.is_none_or(|c| e.card == c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_reads_filters_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        append(
            dir.path(),
            "created",
            "42",
            Path::new("/w/card-42"),
            "ok",
            Duration::from_millis(7),
        );
        append(
            dir.path(),
            "created",
            "43",
            Path::new("/w/card-43"),
            "ok",
            Duration::ZERO,
        );
        let all = read(dir.path(), None);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].duration_ms, 7);
        assert_eq!(read(dir.path(), Some("43")).len(), 1);
        std::fs::write(log_path(dir.path()), vec![b'\n'; ROTATE_AT as usize]).unwrap();
        append(
            dir.path(),
            "removed",
            "42",
            Path::new("/w/card-42"),
            "ok",
            Duration::ZERO,
        );
        assert!(rotated_path(dir.path()).exists());
        assert_eq!(
            read(dir.path(), Some("42")).last().unwrap().event,
            "removed"
        );
    }
}
