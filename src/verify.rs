//! The ordered ownership checks of SPEC R-VERIFY, returning every check's outcome, plus drift
//! (R-DRIFT). A path is used only after these pass; anything present that fails them is
//! foreign or malformed and kardwt fails closed. Reads only.
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use crate::card::CardId;
use crate::record::{self, Loaded, Origin, Record, State};
use crate::repo::{self, Head, Linked, Repo};

/// One linked worktree with its record, as found by scanning the admin dirs.
#[derive(Debug)]
pub struct Entry {
    pub linked: Linked,
    pub record: Loaded,
}

/// Read every linked worktree's record.
pub fn scan(repo: &Repo) -> anyhow::Result<Vec<Entry>> {
    Ok(repo
        .linked()?
        .into_iter()
        .map(|linked| Entry {
            record: record::load(&linked.admin),
            linked,
        })
        .collect())
}

/// R-SCALE: the entries `verify` of the worktree at `path` needs, read without listing every
/// worktree: its own admin dir, and the one the claim of each card involved (`card`, and the
/// card its own record names) says owns that card. `None` when the claims cannot answer (not
/// migrated yet, a card without a complete claim, a path that is not a directory or whose
/// `.git` names something unusual): the caller scans everything, as before claims.
pub fn scan_for(repo: &Repo, path: &Path, card: Option<&str>) -> Option<Vec<Entry>> {
    if !crate::claim::migrated(&repo.common_dir) {
        return None;
    }
    let path = repo::absolutize(path);
    let worktrees = repo.worktrees_dir();
    let mut admins: Vec<PathBuf> = Vec::new();
    let mut cards: Vec<String> = card.map(str::to_owned).into_iter().collect();
    if path.is_dir() && path != repo.base {
        if let Some(target) = repo::read_dot_git(&path) {
            if target.parent() != Some(worktrees.as_path()) || !target.is_dir() {
                return None;
            }
            if let Loaded::Parsed(r) = record::load(&target) {
                cards.push(r.card.clone());
            }
            admins.push(target);
        }
    } else if !path.is_dir() {
        return None;
    }
    for c in &cards {
        // No claim: no other worktree holds a record of this card (every record written
        // completes its card's claim, and migration claimed the older ones).
        let Some(claim) = crate::claim::load(&repo.common_dir, c) else {
            continue;
        };
        let claim = claim.ok()?;
        if claim.state != crate::claim::ClaimState::Complete || claim.admin.is_empty() {
            return None;
        }
        let owner = worktrees.join(&claim.admin);
        if !admins.contains(&owner) {
            admins.push(owner);
        }
    }
    Some(
        admins
            .into_iter()
            .filter_map(repo::linked_at)
            .map(|linked| Entry {
                record: record::load(&linked.admin),
                linked,
            })
            .collect(),
    )
}

/// The entries `verify` of `card`'s worktree needs: narrowed through its claim (see
/// [`scan_for`]) when the claim names a worktree whose record is the card's, or, when the card
/// has no claim, to `default` (where `add` would create it); else all.
pub fn scan_card(repo: &Repo, card: &str, default: &Path) -> anyhow::Result<Vec<Entry>> {
    match crate::claim::load(&repo.common_dir, card) {
        Some(Ok(claim)) => {
            if let Some(entries) = scan_for(repo, &claim.path, Some(card)) {
                let owners = claims(&entries, card);
                if let [one] = owners.as_slice() {
                    if one.linked.path.as_deref() == Some(claim.path.as_path()) {
                        return Ok(entries);
                    }
                }
            }
        }
        None if !default.exists() => {
            if let Some(entries) = scan_for(repo, &repo.base, Some(card)) {
                return Ok(entries);
            }
        }
        None => {
            if let Some(entries) = scan_for(repo, default, Some(card)) {
                if claims(&entries, card).is_empty() {
                    return Ok(entries);
                }
            }
        }
        Some(Err(_)) => {}
    }
    scan(repo)
}

/// The entries `verify` of the worktree at `path` needs (see [`scan_for`]), else all.
pub fn scan_path(repo: &Repo, path: &Path) -> anyhow::Result<Vec<Entry>> {
    match scan_for(repo, path, None) {
        Some(entries) => Ok(entries),
        None => scan(repo),
    }
}

/// The entries whose record names `card`.
pub fn claims<'a>(entries: &'a [Entry], card: &str) -> Vec<&'a Entry> {
    entries
        .iter()
        .filter(|e| matches!(&e.record, Loaded::Parsed(r) if r.card == card))
        .collect()
}

/// The outcome of one check; `ok` is `None` when an earlier check failed and it did not run.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: Option<bool>,
    pub detail: String,
}

/// The names of the checks, in the order they run.
pub const CHECKS: [&str; 9] = [
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
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
    pub fn as_str(self) -> &'static str {
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
pub struct Report {
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
    pub fn state(&self) -> Option<State> {
        (self.verdict == Verdict::Verified)
            .then(|| self.record.as_ref().map(|r| r.state))
            .flatten()
    }

    /// The state `list` shows: the record's state, or the verdict when there is none.
    /// A locked worktree whose directory is missing is `locked`, never `prunable`: git does not
    /// prune it, its directory may come back (a removable disk) (SPEC §22.8).
    pub fn list_state(&self) -> &'static str {
        match self.state() {
            Some(s) => s.as_str(),
            None if self.verdict == Verdict::Prunable && self.locked => "locked",
            None => self.verdict.as_str(),
        }
    }

    /// The branch the record expects HEAD on; `None` without a record, or for a tree created
    /// detached (recorded with an empty branch: R-RUNNER2 6).
    pub fn expected_branch(&self) -> Option<&str> {
        self.record
            .as_ref()
            .map(|r| r.branch.as_str())
            .filter(|b| !b.is_empty())
    }

    /// HEAD is not on the recorded branch (another branch, or detached); never for a tree
    /// that expects no branch.
    pub fn drift(&self) -> bool {
        self.expected_branch()
            .is_some_and(|expected| drifted(self.head.as_ref(), expected))
    }

    /// The first failed check, for messages.
    pub fn failed_check(&self) -> Option<&Check> {
        self.checks.iter().find(|c| c.ok == Some(false))
    }

    /// The exit code `verify` uses: 0 verified and ready, 3 foreign, else 1.
    pub fn exit_code(&self) -> i32 {
        match (self.verdict, self.state()) {
            (Verdict::Verified, Some(State::Ready)) => 0,
            (Verdict::Foreign, _) => 3,
            _ => 1,
        }
    }

    /// A one-line explanation of the verdict for humans.
    pub fn explain(&self) -> String {
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
                    "{p} is foreign or malformed: check {} failed: {}",
                    c.name, c.detail
                ),
                None => format!("{p} is foreign or malformed"),
            },
        }
    }

    /// What the user can do by hand about a foreign or malformed path.
    pub fn fix_hint(&self) -> String {
        let moved = self
            .failed_check()
            .is_some_and(|c| c.name == "record_location")
            && self.record.as_ref().is_some_and(|r| !r.path.exists());
        if moved {
            format!(
                "it looks moved with git worktree move: record it again with git kardwt prepare --path '{}'",
                self.path.display()
            )
        } else {
            format!(
                "kardwt did not create {} (or its record was changed) and will not use or touch it: \
                 inspect it, then move it away or repair it by hand",
                self.path.display()
            )
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.to_string_lossy(),
            "card": self.card,
            "verdict": self.verdict,
            "state": self.state().map(State::as_str),
            "checks": self.checks,
            "drift": self.drift(),
            "expected_branch": self.expected_branch(),
            "head": self.head.as_ref().map(Head::display),
            "locked": self.locked,
        })
    }
}

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
pub fn verify(repo: &Repo, entries: &[Entry], path: &Path, card: Option<&CardId>) -> Report {
    // A symlink at the last component is judged as itself, never as what it points to.
    let path = repo::absolutize_keep_last(path);
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

    // 1. A directory, itself: a symlink to a worktree is not that worktree (SPEC §22.8).
    if let Ok(target) = std::fs::read_link(&path) {
        report.checks = checks.fail(
            "directory",
            format!(
                "is a symbolic link (to {}), not a worktree directory",
                target.display()
            ),
        );
        return report;
    }
    match std::fs::metadata(&path) {
        Err(_) => {
            let registered = entries
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
                // Its card, for `list` (a locked one whose directory is missing, SPEC §22.8).
                if let (None, Loaded::Parsed(r)) = (&report.card, &e.record) {
                    report.card = Some(r.card.clone());
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
    let admin = match repo::read_dot_git(&path) {
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
        // entry of this common dir, and resolve it only otherwise.
        Some(target) if target.parent() == Some(worktrees_dir.as_path()) && target.is_dir() => {
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
    // already: when what it read names this path, it is not read again (R-SCALE).
    let listed = entries.iter().find(|e| e.linked.admin == admin);
    let expected = path.join(".git");
    let read_back = || {
        let back = repo::read_admin_gitdir(&admin);
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
    report.head = repo::read_head(&admin);

    // 5. The record parses (absent: unseeded).
    // The scan read every record already; use its reading rather than parsing it again.
    let rec = match &entry.record {
        Loaded::Absent => {
            report.verdict = Verdict::Unseeded;
            report.checks = checks.fail("record_parses", "no kardwt record");
            return report;
        }
        Loaded::Malformed(why) => {
            report.checks = checks.fail("record_parses", why.clone());
            return report;
        }
        Loaded::Parsed(r) => r.clone(),
    };
    checks.pass("record_parses", "parses");
    report.card = Some(rec.card.clone());
    let rec = report.record.insert(*rec).clone();

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
        Some(c) if c.as_str() != rec.card => {
            report.card = Some(c.to_string());
            report.checks = checks.fail(
                "record_card",
                format!("the record is for card {:?}, not {c}", rec.card),
            );
            return report;
        }
        Some(_) => checks.pass("record_card", "is the card asked for"),
        None => checks.pass("record_card", "no card asked for"),
    }

    // 8. It agrees with itself.
    if let Some(why) = inconsistency(&rec) {
        report.checks = checks.fail("record_consistent", why);
        return report;
    }
    checks.pass("record_consistent", "agrees with itself");

    // 9. No other record claims the same card.
    let others: Vec<String> = claims(entries, &rec.card)
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

/// Why a worktree's checkout is not complete (SPEC §17.5): such a tree is never recorded
/// `ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// git's `<admin dir>/locked` still says `initializing`: `git worktree add` never finished.
    Initializing,
    /// The worktree has no index: its checkout never finished (or never ran).
    NoIndex,
    /// Tracked files are missing from the tree (how many, and the first few names).
    Missing(usize, Vec<String>),
}

impl Incomplete {
    /// One phrase for messages.
    pub fn describe(&self) -> String {
        match self {
            Incomplete::Initializing => {
                "its checkout never completed (git's admin dir still says `initializing`)".into()
            }
            Incomplete::NoIndex => "its checkout never completed (it has no index)".into(),
            Incomplete::Missing(n, first) => format!(
                "{n} tracked file(s) are missing from it (e.g. {})",
                first.join(", ")
            ),
        }
    }

    /// The one command that repairs the tree without losing work, last on its line so it can
    /// be copied: a tree whose checkout never completed was never usable, so it is removed
    /// (its branch is kept) and created again; missing tracked files are written back from the
    /// index, which overwrites nothing that exists (or their deletion is staged with git rm).
    pub fn repair(&self, path: &Path) -> String {
        let p = path.display();
        match self {
            Incomplete::Initializing | Incomplete::NoIndex => format!(
                "it was never usable: remove it (its branch is kept), then create it again: git worktree remove --force --force '{p}'"
            ),
            Incomplete::Missing(..) => format!(
                "restore the missing files and nothing else (or stage their deletion with git rm): git -C '{p}' ls-files -z --deleted | git -C '{p}' checkout-index -z --stdin"
            ),
        }
    }
}

/// The pure judgement behind [`checkout_incomplete`]: the content of `<admin>/locked` (if
/// any), whether the index exists, and `git ls-files --deleted -z`'s output (`None`: not asked).
pub fn judge_checkout(
    locked: Option<&str>,
    has_index: bool,
    deleted: Option<&str>,
) -> Option<Incomplete> {
    if locked.is_some_and(|l| l.trim() == "initializing") {
        return Some(Incomplete::Initializing);
    }
    if !has_index {
        return Some(Incomplete::NoIndex);
    }
    let names: Vec<&str> = deleted?.split('\0').filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return None;
    }
    let first = names.iter().take(3).map(|n| (*n).to_owned()).collect();
    Some(Incomplete::Missing(names.len(), first))
}

/// How much of a checkout [`checkout_incomplete`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Only git's `initializing` mark: a delegated checkout that has not run yet.
    Mark,
    /// The mark and the index: a reused tree, whose deleted files are the user's work.
    Index,
    /// The mark, the index and every tracked file.
    Files,
}

/// Is the checkout of the worktree at `path` (admin dir `admin`) incomplete? Cheap: two file
/// probes and, for [`Probe::Files`], one `git ls-files --deleted` (a stat per tracked file:
/// about 4 ms for 3,000 files).
pub fn checkout_incomplete(path: &Path, admin: &Path, probe: Probe) -> Option<Incomplete> {
    // Non-blocking and bounded: a FIFO planted as `locked` must not hang the probe.
    let locked = crate::repo::read_bounded(&admin.join("locked"), 64 * 1024)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    if probe == Probe::Mark {
        return judge_checkout(locked.as_deref(), true, None);
    }
    let has_index = admin.join("index").is_file();
    let deleted = match has_index && probe == Probe::Files {
        true => {
            // A tree git cannot even list is not complete either.
            let out = crate::git::ls_files_deleted(path);
            match out {
                Ok(o) if o.ok => Some(o.stdout),
                _ => return Some(Incomplete::NoIndex),
            }
        }
        false => None,
    };
    judge_checkout(locked.as_deref(), has_index, deleted.as_deref())
}

/// Which other worktree (than the one of admin dir `admin`) already claims `card`, as a
/// message, if one does.
pub fn claimed_elsewhere(entries: &[Entry], admin: &Path, card: &str) -> Option<String> {
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

/// Why the record `rec`, about to be written into `admin`, would fail R-VERIFY, if it would:
/// another worktree already claims its card, or the record as it would be read back (written
/// and parsed again) fails one of the ordered checks, run exactly as `verify` runs them.
pub fn would_reject(repo: &Repo, entries: &[Entry], admin: &Path, rec: &Record) -> Option<String> {
    if let Some(why) = claimed_elsewhere(entries, admin, &rec.card) {
        return Some(why);
    }
    let same = |a: &Path| a == admin || std::fs::canonicalize(a).is_ok_and(|c| c == admin);
    let read_back = match toml::to_string(rec) {
        Ok(text) => match record::parse(&text) {
            Ok(r) => Loaded::Parsed(Box::new(r)),
            Err(why) => Loaded::Malformed(why),
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
    let card = CardId::parse(&rec.card).ok();
    let report = verify(repo, &would_be, &rec.path, card.as_ref());
    match report.verdict {
        Verdict::Verified => None,
        _ => Some(match report.failed_check() {
            Some(c) => format!("its record would fail check {}: {}", c.name, c.detail),
            None => report.explain(),
        }),
    }
}

/// Why a record contradicts itself, if it does (pure).
pub fn inconsistency(rec: &Record) -> Option<String> {
    if CardId::parse(&rec.card).is_err() {
        return Some(format!("card {:?} is not a valid card id", rec.card));
    }
    if rec.origin == Origin::Add && rec.branch != format!("card/{}", rec.card) {
        return Some(format!(
            "origin add but branch {} is not card/{}",
            rec.branch, rec.card
        ));
    }
    if let Some(other) = rec.branch.strip_prefix("card/") {
        if other != rec.card {
            return Some(format!(
                "branch {} means card {other}, but the record says {}",
                rec.branch, rec.card
            ));
        }
    }
    None
}

/// HEAD `head` is not on branch `expected`: another branch, or detached (pure; R-DRIFT). An
/// empty `expected` is a tree created detached (Codex, Cursor, `git worktree add --detach`):
/// it expects no branch, so nothing is drift (R-RUNNER2 6).
pub fn drifted(head: Option<&Head>, expected: &str) -> bool {
    if expected.is_empty() {
        return false;
    }
    match head {
        Some(Head::Branch(b)) => b != expected,
        Some(Head::Detached(_)) => true,
        None => false,
    }
}

/// The hint `add` (reuse) and `select` print when card `card`'s worktree at `path` drifted
/// from branch `expected` (pure; R-DISPATCH 6). kardwt never switches it back itself.
pub fn drift_hint(card: &str, path: &Path, head: &Head, expected: &str) -> String {
    let now = match head {
        Head::Branch(b) => format!("is on branch {b}"),
        Head::Detached(oid) => format!("has a detached HEAD at {}", oid.get(..12).unwrap_or(oid)),
    };
    format!(
        "card {card}'s worktree {} {now}, not on its branch {expected} (kardwt never switches it); to go back: git -C '{}' switch {expected}",
        path.display(),
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_is_complete_only_unlocked_indexed_and_whole() {
        assert_eq!(judge_checkout(None, true, Some("")), None);
        assert_eq!(judge_checkout(Some("my reason\n"), true, Some("")), None);
        assert_eq!(
            judge_checkout(Some("initializing\n"), true, Some("")),
            Some(Incomplete::Initializing)
        );
        assert_eq!(judge_checkout(None, false, None), Some(Incomplete::NoIndex));
        // Not materialized yet (delegated): only git's mark is judged.
        assert_eq!(judge_checkout(None, true, None), None);
        let missing = judge_checkout(None, true, Some("a\0b c\0d\0e\0"));
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
            .contains("git worktree remove --force --force '/w/card-1'"));
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
        assert!(
            hint.ends_with("git -C '/w/card-42' switch card/42"),
            "{hint}"
        );
        let hint = drift_hint("42", p, &detached, "card/42");
        assert!(hint.contains("detached HEAD at 0123456789ab,"), "{hint}");
    }
}
