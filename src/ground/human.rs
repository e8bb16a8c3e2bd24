//! Durations, sizes and ages written the way people write them, one style for every message
//! and column: `850ms`, `16.0s`, `2m 05s`, `1h 02m`; `512 B`, `78.4 MB` (decimal units,
//! 1 MB = 1,000,000 B); `45s`, `12m`, `3h`, `5d`. Pure.
use std::time::Duration;

/// How long something took, precise where it is short: whole milliseconds under a second
/// (`850ms`), tenths of a second under a minute (`16.0s`), then minutes and seconds (`2m 05s`),
/// then hours and minutes (`1h 02m`). Each step is rounded to its last unit, and a value that
/// rounds up to the next step is shown in that step (59.96 s is `1m 00s`, not `60.0s`).
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let tenths = (ms + 50) / 100;
    if tenths < 600 {
        return format!("{}.{}s", tenths / 10, tenths % 10);
    }
    let secs = (ms + 500) / 1000;
    if secs < 3600 {
        return format!("{}m {:02}s", secs / 60, secs % 60);
    }
    let mins = (secs + 30) / 60;
    format!("{}h {:02}m", mins / 60, mins % 60)
}

/// A number of bytes in decimal units: whole bytes under a kilobyte (`512 B`), else one
/// decimal in the largest unit that keeps the figure under 1000 (`78.4 MB`; 1 kB = 1,000 B).
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    // Tenths of the current unit, rounded; moved up a unit while the figure shows 1000 or more.
    let mut scale: u128 = 1000;
    for unit in UNITS {
        let tenths = (u128::from(bytes) * 10 + scale / 2) / scale;
        if tenths < 10_000 || unit == "EB" {
            return format!("{}.{} {unit}", tenths / 10, tenths % 10);
        }
        scale *= 1000;
    }
    unreachable!("the last unit always returns")
}

/// How long ago something happened, coarse as a list column wants it: the largest whole unit
/// (`45s`, `12m`, `3h`, `5d`), never rounded up (a tree 59 minutes old is `59m`).
pub fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Parse `24h`, `30m`, `2d`, `45s` or plain seconds (pure).
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let (num, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = num.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86_400)?,
        "w" => n.checked_mul(604_800)?,
        _ => return None,
    };
    Some(std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn durations_take_the_step_their_length_calls_for() {
        let table = [
            (0, "0ms"),
            (850, "850ms"),
            (999, "999ms"),
            (1000, "1.0s"),
            (16_040, "16.0s"),
            (16_050, "16.1s"),
            (59_940, "59.9s"),
            (59_960, "1m 00s"),
            (125_000, "2m 05s"),
            (3_599_400, "59m 59s"),
            (3_599_600, "1h 00m"),
            (3_720_000, "1h 02m"),
            (90_000_000, "25h 00m"),
        ];
        for (n, want) in table {
            assert_eq!(duration(ms(n)), want, "{n} ms");
        }
    }

    #[test]
    fn sizes_use_decimal_units_with_one_decimal() {
        let table = [
            (0, "0 B"),
            (512, "512 B"),
            (999, "999 B"),
            (1000, "1.0 kB"),
            (1_550, "1.6 kB"),
            (78_400_000, "78.4 MB"),
            (999_940, "999.9 kB"),
            (999_960, "1.0 MB"),
            (1_000_000_000, "1.0 GB"),
            (u64::MAX, "18.4 EB"),
        ];
        for (n, want) in table {
            assert_eq!(size(n), want, "{n} B");
        }
    }

    #[test]
    fn ages_show_the_largest_whole_unit() {
        let table = [
            (0, "0s"),
            (45, "45s"),
            (59, "59s"),
            (60, "1m"),
            (12 * 60 + 59, "12m"),
            (3599, "59m"),
            (3 * 3600, "3h"),
            (86_399, "23h"),
            (5 * 86_400 + 7, "5d"),
            (400 * 86_400, "400d"),
        ];
        for (n, want) in table {
            assert_eq!(age(n), want, "{n} s");
        }
    }
}
