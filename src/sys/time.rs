//! The clock: RFC 3339 UTC timestamps with second precision, the only time format kardwt
//! writes (records, claims, the event log, lock holders), through `humantime`.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ground::error::{Code, Kind};

/// The current time as RFC 3339 UTC with second precision (`2026-11-29T18:00:00Z`).
pub(crate) fn now() -> String {
    rfc3339(now_secs())
}

/// Format seconds since the epoch as RFC 3339 UTC.
pub(crate) fn rfc3339(secs: u64) -> String {
    let at = UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .unwrap_or(UNIX_EPOCH);
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Parse the RFC 3339 UTC times kardwt writes (`2026-11-29T18:00:05Z`) back to seconds since
/// the epoch; `None` for anything else (other precisions and offsets included).
pub(crate) fn parse_rfc3339(text: &str) -> Option<u64> {
    if text.len() != 20 || !text.ends_with('Z') {
        return None;
    }
    let at = humantime::parse_rfc3339(text).ok()?;
    at.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// A moment to compare file change times against, to the nanosecond (RFC 3339 with nine
/// fractional digits): now, returned once every local file system stamps a later change at or
/// after it. File systems stamp changes from the kernel's coarse clock, which lags the precise
/// one by up to a tick, so on Linux this waits (a few milliseconds, bounded) until the coarse
/// clock has passed the moment with a margin; what changed before it is stamped before it.
pub(crate) fn mark() -> String {
    let at = SystemTime::now();
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let want = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_add(Duration::from_millis(2));
        for _ in 0..100 {
            let c = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
            let coarse = Duration::new(
                u64::try_from(c.tv_sec).unwrap_or(0),
                u32::try_from(c.tv_nsec).unwrap_or(0),
            );
            if coarse >= want {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    humantime::format_rfc3339_nanos(at).to_string()
}

/// Parse an RFC 3339 UTC time kardwt wrote, to the second ([`now`]) or finer ([`mark`]), to
/// seconds and nanoseconds since the epoch.
pub(crate) fn parse_precise(text: &str) -> Option<(u64, u32)> {
    if !text.ends_with('Z') || text.len() < 20 {
        return None;
    }
    let at = humantime::parse_rfc3339(text).ok()?;
    let d = at.duration_since(UNIX_EPOCH).ok()?;
    Some((d.as_secs(), d.subsec_nanos()))
}

/// Seconds since the epoch now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The action deadline passed `during` a step (`while git ran`): exit 5.
#[derive(Debug, thiserror::Error)]
#[error("the action deadline passed {during}")]
pub(crate) struct Overran {
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
    fn a_mark_keeps_its_nanoseconds_and_second_times_parse_too() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let (s, n) = parse_precise(&mark()).unwrap();
        let got = Duration::new(s, n);
        assert!(
            got >= before && got < before + Duration::from_secs(5),
            "{got:?}"
        );
        assert_eq!(
            parse_precise("2026-11-29T18:00:05Z"),
            Some((1_795_975_205, 0))
        );
        assert_eq!(
            parse_precise("2026-11-29T18:00:05.000000250Z"),
            Some((1_795_975_205, 250))
        );
        assert_eq!(parse_precise("yesterday"), None);
    }

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_975_205), "2026-11-29T18:00:05Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
