//! The ordered ownership checks, returning every check's outcome, plus drift
//! (see `drift`). A path is used only after these pass; anything present that fails them is
//! foreign or malformed and kardwt fails closed. Reads only.
//!
//! | file | one job |
//! |---|---|
//! | `mod` | the ordered checks ([`verify`]) and whether a record about to be written passes them |
//! | `scan` | the worktrees and records the checks read ([`Entry`]) |
//! | `report` | each check's outcome and the verdict ([`Report`]) |
//! | `incomplete` | whether a checkout is complete ([`Incomplete`], [`Probe`]) |
//! | `drift` | HEAD off its recorded branch, and the way back |
mod drift;
mod incomplete;
mod report;
mod scan;

use std::path::{Path, PathBuf};

use crate::git::{self, Repo};
use crate::ground::card::CardId;
use crate::state::{Loaded, Origin, Record};

pub(crate) use drift::{drift_hint, drifted};
pub(crate) use incomplete::{checkout_incomplete, Incomplete, Probe};
pub(crate) use report::{
    check_line, checks_summary, shown_checks, Check, Report, ReportJson, Verdict, CHECKS,
};
pub(crate) use scan::{claims, scan, scan_card, scan_path, scan_path_card, Entry, Index};

/// Builds the ordered list of checks, stopping at the first failure.
struct Checks {
    done: Vec<Check>,
}

impl Checks {
    fn pass(&mut self, name: &'static str, detail: impl Into<String>) {
        self.done.push(Check {
            name,
            ok: Some(true),
            detail: detail.into(),
        });
    }
    fn fail(mut self, name: &'static str, detail: impl Into<String>) -> Vec<Check> {
        self.done.push(Check {
            name,
            ok: Some(false),
            detail: detail.into(),
        });
        self.finish()
    }
    fn finish(mut self) -> Vec<Check> {
        for name in CHECKS.iter().skip(self.done.len()) {
            self.done.push(Check {
                name,
                ok: None,
                detail: "not run".into(),
            });
        }
        self.done
    }
}

/// Run the checks on `path` (absolute), for `card` when the caller asked for one.
pub(crate) fn verify(repo: &Repo, entries: &[Entry], path: &Path, card: Option<&CardId>) -> Report {
    // A symlink at the last component is judged as itself, never as what it points to.
    let path = git::absolutize_keep_last(path);
    verify_resolved(repo, &Index::linear(entries), path, card)
}

/// [`verify`] of a path already resolved as [`git::absolutize_keep_last`] resolves it, looking
/// entries up through `index` (`list` judges every worktree with one [`Index::mapped`]).
pub(crate) fn verify_resolved(
    repo: &Repo,
    index: &Index,
    path: PathBuf,
    card: Option<&CardId>,
) -> Report {
    let mut report = Report {
        path: path.clone(),
        card: card.map(|c| c.to_string()),
        verdict: Verdict::Foreign,
        checks: Vec::new(),
        record: None,
        admin: None,
        head: None,
        locked: false,
    };
    let mut checks = Checks { done: Vec::new() };

    // 1. A directory, itself: a symlink to a worktree is not that worktree.
    // One lstat answers both questions for anything but a symlink (no failing readlink).
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&path) {
            Ok(target) => {
                report.checks = checks.fail(
                    "directory",
                    format!(
                        "is a symbolic link (to {}), not a worktree directory",
                        target.display()
                    ),
                );
                return report;
            }
            Err(_) => std::fs::metadata(&path),
        },
        lstat => lstat,
    };
    match meta {
        Err(_) => {
            let registered = index
                .entries
                .iter()
                .find(|e| e.linked.path.as_deref() == Some(path.as_path()));
            report.verdict = if registered.is_some() {
                Verdict::Prunable
            } else {
                Verdict::Absent
            };
            if let Some(e) = registered {
                report.admin = Some(e.linked.admin.clone());
                report.locked = e.linked.locked;
                // Its card, for `list` (a locked one whose directory is missing).
                if let (None, Loaded::Parsed(r)) = (&report.card, &e.record) {
                    report.card = Some(r.card.to_string());
                }
            }
            report.checks = checks.fail("directory", "does not exist");
            return report;
        }
        Ok(m) if !m.is_dir() => {
            report.checks = checks.fail("directory", "exists but is not a directory");
            return report;
        }
        Ok(_) => checks.pass("directory", "is a directory"),
    }
    if path == repo.base {
        report.verdict = Verdict::Base;
        report.checks = checks.fail(
            "dot_git",
            "this is the base checkout, not a linked worktree",
        );
        return report;
    }

    // 2. Its `.git` file names an admin dir inside this common dir.
    let worktrees_dir = repo.worktrees_dir();
    let admin = match git::read_dot_git(&path) {
        None => {
            let why = if path.join(".git").is_dir() {
                "has a .git directory: it is a repository of its own, not a linked worktree"
            } else {
                "has no readable `.git` file naming an admin dir"
            };
            report.checks = checks.fail("dot_git", why);
            return report;
        }
        // git writes the admin dir's absolute path: take it as it is when it already names an
        // entry of this common dir, and resolve it only otherwise. A listed admin dir is a
        // directory (its `gitdir` was read from it): no need to ask again.
        Some(target)
            if target.parent() == Some(worktrees_dir.as_path())
                && (index.admin(&target).is_some() || target.is_dir()) =>
        {
            target
        }
        Some(target) => match std::fs::canonicalize(&target) {
            Ok(admin) if admin.parent() == Some(worktrees_dir.as_path()) => admin,
            Ok(admin) => {
                report.checks = checks.fail(
                    "dot_git",
                    format!(
                        "names {} which is not inside {}",
                        admin.display(),
                        worktrees_dir.display()
                    ),
                );
                return report;
            }
            Err(_) => {
                report.checks = checks.fail(
                    "dot_git",
                    format!("names {} which does not exist", target.display()),
                );
                return report;
            }
        },
    };
    checks.pass("dot_git", format!("names {}", admin.display()));
    report.admin = Some(admin.clone());

    // 3. The admin dir's `gitdir` points back at this path. git's listing (the scan) read it
    // already: when what it read names this path, it is not read again.
    let listed = index.admin(&admin);
    let expected = path.join(".git");
    let read_back = || {
        let back = git::read_admin_gitdir(&admin);
        let ok = back.as_deref().is_some_and(|b| {
            b == expected || std::fs::canonicalize(b).is_ok_and(|c| c == expected)
        });
        (ok, back)
    };
    let (points_back, back) =
        match listed.is_some_and(|e| e.linked.path.as_deref() == Some(path.as_path())) {
            true => (true, None),
            false => read_back(),
        };
    if !points_back {
        let found = back.map_or("nothing".to_owned(), |b| b.display().to_string());
        report.checks = checks.fail(
            "gitdir",
            format!(
                "{}/gitdir points at {found}, not at this worktree",
                admin.display()
            ),
        );
        return report;
    }
    checks.pass("gitdir", "points back at this worktree");

    // 4. git lists it as registered and not prunable.
    let entry = match listed {
        Some(e) if !e.linked.prunable => {
            report.locked = e.linked.locked;
            checks.pass(
                "registered",
                format!("registered as worktree {}", e.linked.id),
            );
            e
        }
        _ => {
            report.checks = checks.fail("registered", "git does not list it as a usable worktree");
            return report;
        }
    };
    report.head = git::read_head(&admin);

    // 5. The record parses (absent: unseeded).
    // The scan read every record already; use its reading rather than parsing it again.
    let rec: &Record = match &entry.record {
        Loaded::Absent => {
            report.verdict = Verdict::Unseeded;
            report.checks = checks.fail("record_parses", "no kardwt record");
            return report;
        }
        Loaded::Malformed(why) => {
            report.checks = checks.fail("record_parses", why.clone());
            return report;
        }
        Loaded::Parsed(r) => r,
    };
    checks.pass("record_parses", "parses");
    report.card = Some(rec.card.to_string());
    report.record = Some(rec.clone());

    // 6. It names this path and this common dir.
    if rec.path != path || rec.common_dir != repo.common_dir {
        report.checks = checks.fail(
            "record_location",
            format!(
                "the record names path {} and common dir {}, not {} and {}",
                rec.path.display(),
                rec.common_dir.display(),
                path.display(),
                repo.common_dir.display()
            ),
        );
        return report;
    }
    checks.pass("record_location", "names this path and common dir");

    // 7. It is the card asked for.
    match card {
        Some(c) if rec.card != c.as_str() => {
            report.card = Some(c.to_string());
            report.checks = checks.fail(
                "record_card",
                format!("the record is for card {:?}, not {c}", rec.card.as_str()),
            );
            return report;
        }
        Some(_) => checks.pass("record_card", "is the card asked for"),
        None => checks.pass("record_card", "no card asked for"),
    }

    // 8. It agrees with itself.
    if let Some(why) = inconsistency(rec) {
        report.checks = checks.fail("record_consistent", why);
        return report;
    }
    checks.pass("record_consistent", "agrees with itself");

    // 9. No other record claims the same card.
    let others: Vec<String> = index
        .claims(&rec.card)
        .iter()
        .filter(|e| e.linked.admin != admin)
        .map(|e| e.linked.admin.display().to_string())
        .collect();
    if !others.is_empty() {
        report.checks = checks.fail(
            "card_unique",
            format!("card {} is also claimed by {}", rec.card, others.join(", ")),
        );
        return report;
    }
    checks.pass("card_unique", "no other record claims this card");
    report.verdict = Verdict::Verified;
    report.checks = checks.finish();
    report
}

/// Which other worktree (than the one of admin dir `admin`) already claims `card`, as a
/// message, if one does.
pub(crate) fn claimed_elsewhere(entries: &[Entry], admin: &Path, card: &str) -> Option<String> {
    let same = |a: &Path| a == admin || std::fs::canonicalize(a).is_ok_and(|c| c == admin);
    let others: Vec<String> = claims(entries, card)
        .iter()
        .filter(|e| !same(&e.linked.admin))
        .map(|e| {
            e.linked
                .path
                .as_deref()
                .unwrap_or(&e.linked.admin)
                .display()
                .to_string()
        })
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "card {card} is already claimed by the worktree at {}",
            others.join(", ")
        )
    })
}

/// Why the record `rec`, about to be written into `admin`, would fail verification, if it would:
/// another worktree already claims its card, or the record as it would be read back (written
/// and parsed again) fails one of the ordered checks, run exactly as `verify` runs them.
pub(crate) fn would_reject(
    repo: &Repo,
    entries: &[Entry],
    admin: &Path,
    rec: &Record,
) -> Option<String> {
    if let Some(why) = claimed_elsewhere(entries, admin, &rec.card) {
        return Some(why);
    }
    let same = |a: &Path| a == admin || std::fs::canonicalize(a).is_ok_and(|c| c == admin);
    let read_back = match toml::to_string(rec) {
        Ok(text) => match crate::state::parse_record(&text) {
            Ok(r) => Loaded::Parsed(Box::new(r)),
            Err(why) => Loaded::Malformed(why.to_string()),
        },
        Err(e) => Loaded::Malformed(e.to_string()),
    };
    let mut read_back = Some(read_back);
    // The other records were judged above; here only this worktree's would-be record counts.
    let would_be: Vec<Entry> = entries
        .iter()
        .map(|e| Entry {
            linked: e.linked.clone(),
            record: match same(&e.linked.admin) {
                true => read_back.take().unwrap_or(Loaded::Absent),
                false => Loaded::Absent,
            },
        })
        .collect();
    if let Some(record) = read_back {
        // git's list did not name this admin dir (it always should): judge the record alone.
        if let Loaded::Malformed(why) = record {
            return Some(why);
        }
        return inconsistency(rec);
    }
    let report = verify(repo, &would_be, &rec.path, Some(&rec.card));
    match report.verdict {
        Verdict::Verified => None,
        _ => Some(match report.failed_check() {
            Some(c) => format!("its record would fail check {}: {}", c.name, c.detail),
            None => report.explain(),
        }),
    }
}

/// Why a record contradicts itself, if it does (pure).
pub(crate) fn inconsistency(rec: &Record) -> Option<String> {
    if rec.origin == Origin::Add && rec.branch != format!("card/{}", rec.card) {
        return Some(format!(
            "origin add but branch {} is not card/{}",
            rec.branch, rec.card
        ));
    }
    if let Some(other) = rec.branch.strip_prefix("card/") {
        if rec.card != other {
            return Some(format!(
                "branch {} means card {other}, but the record says {}",
                rec.branch, rec.card
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::incomplete::incomplete_from;
    use super::*;
    use crate::git::Head;

    #[test]
    fn a_checkout_is_complete_only_unlocked_indexed_and_whole() {
        assert_eq!(incomplete_from(None, true, Some("")), None);
        assert_eq!(incomplete_from(Some("my reason\n"), true, Some("")), None);
        assert_eq!(
            incomplete_from(Some("initializing\n"), true, Some("")),
            Some(Incomplete::Initializing)
        );
        assert_eq!(
            incomplete_from(None, false, None),
            Some(Incomplete::NoIndex)
        );
        // Not materialized yet (delegated): only git's mark is judged.
        assert_eq!(incomplete_from(None, true, None), None);
        let missing = incomplete_from(None, true, Some("a\0b c\0d\0e\0"));
        assert_eq!(
            missing,
            Some(Incomplete::Missing(
                4,
                vec!["a".into(), "b c".into(), "d".into()]
            ))
        );
        let p = Path::new("/w/card-1");
        assert!(missing
            .unwrap()
            .repair(p)
            .contains("checkout-index -z --stdin"));
        assert!(Incomplete::NoIndex
            .repair(p)
            .contains("git worktree remove --force --force /w/card-1"));
    }

    #[test]
    fn drift_is_another_branch_or_detached_and_its_hint_names_the_way_back() {
        let branch = Head::Branch("card/42".into());
        let other = Head::Branch("feature".into());
        let detached = Head::Detached("0123456789abcdef0123".into());
        assert!(!drifted(Some(&branch), "card/42"));
        assert!(!drifted(None, "card/42"));
        assert!(drifted(Some(&other), "card/42"));
        assert!(drifted(Some(&detached), "card/42"));
        // Created detached: no expected branch, so neither a detached HEAD nor a branch drifts.
        assert!(!drifted(Some(&detached), ""));
        assert!(!drifted(Some(&other), ""));
        let p = Path::new("/w/card-42");
        let hint = drift_hint("42", p, &other, "card/42");
        assert!(
            hint.contains("is on branch feature, not on its branch card/42"),
            "{hint}"
        );
        assert!(hint.ends_with("git -C /w/card-42 switch card/42"), "{hint}");
        let hint = drift_hint("42", p, &detached, "card/42");
        assert!(hint.contains("detached HEAD at 0123456789ab,"), "{hint}");
    }
}
