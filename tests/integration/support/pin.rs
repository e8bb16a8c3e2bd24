//! Output pinned whole: the text a command printed with what changes from run to run (the
//! test's temporary directory, object ids, times, durations, pids, ports, the names of trees
//! moved aside, the hashes of trusted helpers and their store) replaced by names, for `insta` snapshots that a reviewer reads as the user
//! would see them.
use super::{Output, TestRepo};

/// `insta` settings whose filters turn one run's text into the stable form snapshots keep.
pub fn settings(repo: &TestRepo) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    let tmp = regex_escape(&repo.tmp.to_string_lossy());
    let filters: Vec<(String, &str)> = vec![
        (regex_escape(super::BIN), "[BIN]"),
        (tmp, "[TMP]"),
        (
            r"\.kardwt-removing-\d+-[0-9a-f]+".into(),
            ".kardwt-removing-[NONCE]",
        ),
        (r"\b[0-9a-f]{64}\b".into(), "[OID256]"),
        (r"\b[0-9a-f]{40}\b".into(), "[OID]"),
        (r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b".into(), "[TIME]"),
        (r"\b\d+\.\d+ ?s\b|\b\d+ ?ms\b".into(), "[DURATION]"),
        (r#""(duration_ms|ms)": ?\d+"#.into(), r#""$1": [MS]"#),
        (
            r#""age_seconds": ?\d+"#.into(),
            r#""age_seconds": [SECONDS]"#,
        ),
        (r"\bpid \d+\b".into(), "pid [PID]"),
        (
            r"\b(process(?:es)?) \(\d+(?:, \d+)*\)".into(),
            "$1 ([PIDS])",
        ),
        (
            r"\bports: \d+(?:, \d+)* released".into(),
            "ports: [PORTS] released",
        ),
        (r"giving up in \d+ s\b".into(), "giving up in [SECONDS] s"),
        (
            r"\b\d+ (second|minute|hour|day)s? ago\b".into(),
            "[AGE] ago",
        ),
        (r"\b\d+s ago\b".into(), "[AGE] ago"),
        (r"\b(stored|last used) \d+m ago\b".into(), "$1 [AGE] ago"),
        (r"\bsha256 [0-9a-f]{16}\b".into(), "sha256 [SHA256]"),
        (r"(git-kardwt/trusted/)[^/\s]+".into(), "$1[REPO]"),
        (
            r"\b(cache: (?:hit|miss) |prepare cache )[0-9a-f]{12}\b".into(),
            "$1[KEY]",
        ),
        // Where a short object id or key stands, one of only decimal digits too (about one in
        // 27 commits' abbreviations is: the short_hex filter leaves those for sizes and ports).
        (
            r"(HEAD is now at|HEAD at|\(tip|kardwt at|git diff) [0-9]{7,12}\b".into(),
            "$1 [SHORT]",
        ),
        (
            r"(git diff (?:\[SHORT\]|[0-9a-f]{7,12})) [0-9]{7,12}\b".into(),
            "$1 [SHORT]",
        ),
        (
            r"\b((?:ok|removed|damaged)\s+)[0-9]{12}\b".into(),
            "$1[SHORT]",
        ),
        (short_hex(), "[SHORT]"),
        (r"doctor-try-\d+".into(), "doctor-try-[PID]"),
    ];
    for (re, with) in &filters {
        s.add_filter(re, *with);
    }
    s
}

/// A regex for 7 to 12 hex digits holding at least one letter (a short object id or key): a
/// number of that many decimal digits (a size, a port) is left as it is.
fn short_hex() -> String {
    let alternatives: Vec<String> = (0..12)
        .map(|k| {
            format!(
                "[0-9]{{{k}}}[a-f][0-9a-f]{{{},{}}}",
                6usize.saturating_sub(k),
                11 - k
            )
        })
        .collect();
    format!(r"\b(?:{})\b", alternatives.join("|"))
}

/// One case of a table of refusals as its snapshot shows it: the case's name, the exit code, the
/// whole stderr and, when the command printed any, its stdout.
pub fn case(name: &str, out: &Output) -> String {
    let mut text = format!("## {name}: exit {}\n{}", out.code, out.stderr);
    if !out.stdout.is_empty() {
        text.push_str(&format!("--- stdout\n{}", out.stdout));
    }
    text.push('\n');
    text
}

/// `text` with every character a regex treats specially escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~ ".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
