//! The clock: RFC 3339 UTC timestamps with second precision, the only time format kardwt
//! writes (records, claims, the event log, lock holders), through `humantime`.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ground::error::{Code, Kind};

/// The current time as RFC 3339 UTC with second precision (`2026-11-29T18:00:00Z`).
pub fn now() -> String {
    rfc3339(now_secs())
}

/// Format seconds since the epoch as RFC 3339 UTC.
pub fn rfc3339(secs: u64) -> String {
    let at = UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .unwrap_or(UNIX_EPOCH);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Parse the RFC 3339 UTC times kardwt writes (`2026-11-29T18:00:05Z`) back to seconds since
/// the epoch; `None` for anything else (other precisions and offsets included).
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    if text.len() != 20 || !text.ends_with('Z') {
        return None;
    }
    let at = humantime::parse_rfc3339(text).ok()?;
    at.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// Seconds since the epoch now.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The action deadline passed `during` a step (`while git ran`): exit 5.
#[derive(Debug, thiserror::Error)]
#[error("the action deadline passed {during}")]
pub struct Overran {
    pub during: String,
}

impl Kind for Overran {
    fn code(&self) -> Code {
        Code::Deadline
    }
    fn hints(&self) -> Vec<String> {
        vec!["raise --timeout or worktree.action_timeout_seconds".into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for t in [0, 59, 86_399, 951_782_400, 1_795_975_205, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2026-11-29T18:00:05.5Z"), None);
    }

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_975_205), "2026-11-29T18:00:05Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
