//! Output pinned whole: the text a command printed with what changes from run to run (the
//! test's temporary directory, object ids, times, durations, pids, ports) replaced by names, for
//! `insta` snapshots that a reviewer reads as the user would see them.
use super::TestRepo;

/// `insta` settings whose filters turn one run's text into the stable form snapshots keep.
pub fn settings(repo: &TestRepo) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    let tmp = regex_escape(&repo.tmp.to_string_lossy());
    let filters: Vec<(String, &str)> = vec![
        (tmp, "[TMP]"),
        (r"\b[0-9a-f]{64}\b".into(), "[OID256]"),
        (r"\b[0-9a-f]{40}\b".into(), "[OID]"),
        (r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b".into(), "[TIME]"),
        (r"\b\d+(\.\d+)? ?(ms|s)\b".into(), "[DURATION]"),
        (r#""(duration_ms|ms)": ?\d+"#.into(), r#""$1": [MS]"#),
        (
            r#""age_seconds": ?\d+"#.into(),
            r#""age_seconds": [SECONDS]"#,
        ),
        (r"\bpid \d+\b".into(), "pid [PID]"),
        (r"\b[0-9a-f]{7,12}\b".into(), "[SHORT]"),
        (r"doctor-try-\d+".into(), "doctor-try-[PID]"),
    ];
    for (re, with) in &filters {
        s.add_filter(re, *with);
    }
    s
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
