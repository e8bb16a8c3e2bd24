//! What verification found out about one path: each check's outcome, the verdict, and how
//! both read for people (explanations, hints) and for `--json`.
use std::path::PathBuf;

use serde::Serialize;

use super::drift::drifted;
use crate::git::Head;
use crate::state::{Record, State};

/// The outcome of one check; `ok` is `None` when an earlier check failed and it did not run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    pub name: &'static str,
    pub ok: Option<bool>,
    pub detail: String,
}

/// The names of the checks, in the order they run.
pub(crate) const CHECKS: [&str; 9] = [
    "directory",
    "dot_git",
    "gitdir",
    "registered",
    "record_parses",
    "record_location",
    "record_card",
    "record_consistent",
    "card_unique",
];

/// A check's name in words, for text output (`--json` keeps [`CHECKS`]' names).
pub(super) fn check_words(name: &str) -> &str {
    match name {
        "dot_git" => ".git file",
        "gitdir" => "gitdir file",
        "registered" => "registered with git",
        "record_parses" => "record reads",
        "record_location" => "record's path",
        "record_card" => "record's card",
        "record_consistent" => "record agrees",
        "card_unique" => "card unique",
        other => other,
    }
}

/// One check as a line: `ok`, `FAIL` or `-` (not run), its name in words, its detail.
pub(crate) fn check_line(c: &Check) -> String {
    let mark = match c.ok {
        Some(true) => "ok  ",
        Some(false) => "FAIL",
        None => "-   ",
    };
    format!("{mark} {:<19} {}", check_words(c.name), c.detail)
}

/// The checks a person is shown: those that failed, or with `verbose` every one.
pub(crate) fn shown_checks(report: &Report, verbose: bool) -> impl Iterator<Item = &Check> {
    report
        .checks
        .iter()
        .filter(move |c| verbose || c.ok == Some(false))
}

/// The checks in a few words: `all 9 passed`, `5 passed, record's card failed`.
pub(crate) fn checks_summary(report: &Report) -> String {
    let passed = report.checks.iter().filter(|c| c.ok == Some(true)).count();
    let failed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.ok == Some(false))
        .map(|c| check_words(c.name))
        .collect();
    match (passed, failed.as_slice()) {
        (0, []) => "none ran".to_owned(),
        (n, []) if n == report.checks.len() => format!("all {n} passed"),
        (n, []) => format!("{n} passed, the rest did not run"),
        (n, f) => format!("{n} passed, {} failed (-v shows every check)", f.join(", ")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// Every check passed.
    Verified,
    /// A registered linked worktree without a record.
    Unseeded,
    /// Nothing at the path.
    Absent,
    /// Registered, but its directory is gone.
    Prunable,
    /// The path is the base itself, not a linked worktree.
    Base,
    /// Present but failing a check: fail closed.
    Foreign,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Unseeded => "unseeded",
            Verdict::Absent => "absent",
            Verdict::Prunable => "prunable",
            Verdict::Base => "base",
            Verdict::Foreign => "foreign",
        }
    }
}

/// Everything verification found out about one path.
#[derive(Debug)]
pub(crate) struct Report {
    pub path: PathBuf,
    pub card: Option<String>,
    pub verdict: Verdict,
    pub checks: Vec<Check>,
    pub record: Option<Record>,
    pub admin: Option<PathBuf>,
    pub head: Option<Head>,
    pub locked: bool,
}

impl Report {
    /// The record's state, when the worktree verified.
    pub(crate) fn state(&self) -> Option<State> {
        (self.verdict == Verdict::Verified)
            .then(|| self.record.as_ref().map(|r| r.state))
            .flatten()
    }

    /// The state `list` shows: the record's state, or the verdict when there is none.
    /// A locked worktree whose directory is missing is `locked`, never `prunable`: git does not
    /// prune it, its directory may come back (a removable disk).
    pub(crate) fn list_state(&self) -> &'static str {
        match self.state() {
            Some(s) => s.as_str(),
            None if self.verdict == Verdict::Prunable && self.locked => "locked",
            None => self.verdict.as_str(),
        }
    }

    /// The branch the record expects HEAD on; `None` without a record, or for a tree created
    /// detached (recorded with an empty branch).
    pub(crate) fn expected_branch(&self) -> Option<&str> {
        self.record
            .as_ref()
            .map(|r| r.branch.as_str())
            .filter(|b| !b.is_empty())
    }

    /// HEAD is not on the recorded branch (another branch, or detached); never for a tree
    /// that expects no branch.
    pub(crate) fn drift(&self) -> bool {
        self.expected_branch()
            .is_some_and(|expected| drifted(self.head.as_ref(), expected))
    }

    /// The first failed check, for messages.
    pub(crate) fn failed_check(&self) -> Option<&Check> {
        self.checks.iter().find(|c| c.ok == Some(false))
    }

    /// The exit code `verify` uses: 0 verified and ready, 3 foreign, else 1.
    pub(crate) fn exit_code(&self) -> i32 {
        match (self.verdict, self.state()) {
            (Verdict::Verified, Some(State::Ready)) => 0,
            (Verdict::Foreign, _) => 3,
            _ => 1,
        }
    }

    /// A one-line explanation of the verdict for humans.
    pub(crate) fn explain(&self) -> String {
        let p = self.path.display();
        match self.verdict {
            Verdict::Verified => format!(
                "{p} is card {}'s worktree, state {}",
                self.card.as_deref().unwrap_or("?"),
                self.list_state()
            ),
            Verdict::Unseeded => {
                format!("{p} is a linked worktree with no kardwt record (unseeded)")
            }
            Verdict::Absent => format!("no worktree at {p}"),
            Verdict::Prunable => format!("{p} is registered with git but its directory is gone"),
            Verdict::Base => format!("{p} is the base checkout, not a linked worktree"),
            Verdict::Foreign => match self.failed_check() {
                Some(c) => format!(
                    "{p} is foreign or malformed: the check {:?} failed: {}",
                    check_words(c.name),
                    c.detail
                ),
                None => format!("{p} is foreign or malformed"),
            },
        }
    }

    /// What the user can do by hand about a foreign or malformed path.
    pub(crate) fn fix_hint(&self) -> String {
        let moved = self
            .failed_check()
            .is_some_and(|c| c.name == "record_location")
            && self.record.as_ref().is_some_and(|r| !r.path.exists());
        if moved {
            format!(
                "it looks moved with git worktree move: record it again with git kardwt prepare --path {}",
                crate::ground::quote::sh_path(&self.path)
            )
        } else {
            format!(
                "kardwt did not create {} (or its record was changed) and will not use or touch it: \
                 inspect it, then move it away or repair it by hand",
                self.path.display()
            )
        }
    }

    /// The typed `--json` shape of this report.
    pub(crate) fn json(&self) -> ReportJson<'_> {
        ReportJson {
            path: self.path.to_string_lossy(),
            card: self.card.as_deref(),
            verdict: self.verdict,
            state: self.state().map(State::as_str),
            checks: &self.checks,
            drift: self.drift(),
            expected_branch: self.expected_branch(),
            head: self.head.as_ref().map(Head::display),
            locked: self.locked,
        }
    }
}

/// The `--json` shape of a [`Report`], in its field order.
#[derive(Serialize)]
pub(crate) struct ReportJson<'a> {
    pub path: std::borrow::Cow<'a, str>,
    pub card: Option<&'a str>,
    pub verdict: Verdict,
    pub state: Option<&'static str>,
    pub checks: &'a [Check],
    pub drift: bool,
    pub expected_branch: Option<&'a str>,
    pub head: Option<&'a str>,
    pub locked: bool,
}
