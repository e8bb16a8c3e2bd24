//! gc's judgement of one managed worktree: collectable only on evidence
//! that work happened in it and landed. Its own HEAD reflog (`<admin>/logs/HEAD`, or git's
//! reading of it where the refs are in reftable) must show a
//! commit made in this worktree; HEAD (whatever branch is checked out, not the recorded one)
//! and every such commit must be integrated into the base's remote-tracking ref (an ancestor,
//! or its changes already there: a squash or rebase merge); HEAD must be on a remote. Clean
//! trees, git's own refusals and live processes are the caller's checks. Reads only: git is
//! asked, never told.
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::git;
use crate::git::{Head, Repo};
use crate::state::{Loaded, Record, State};
use crate::verify::Entry;

/// The reflog messages that record a commit made in this worktree: `git commit` writes
/// `commit: <subject>`, `commit (initial): …`, `commit (amend): …` and `commit (merge): …`
/// (a merge that needed a commit). Fast-forwards (`merge …: Fast-forward`, `pull:`), resets,
/// checkouts, rebases and cherry-picks are not: they move HEAD to work made elsewhere (a
/// rebase or cherry-pick replays commits that were made here, or were not work of this tree).
fn is_commit_message(message: &str) -> bool {
    message
        .strip_prefix("commit")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with(" ("))
}

/// The commits made in this worktree, oldest first, from the text of its HEAD reflog (pure).
/// Each line is `<old> <new> <ident> <time> <zone>\t<message>`. A commit later amended is
/// judged by its replacement: `commit (amend)` drops the commit it replaced.
pub(super) fn commits_made_here(reflog: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in reflog.lines() {
        let Some((head, message)) = line.split_once('\t') else {
            continue;
        };
        if !is_commit_message(message) {
            continue;
        }
        let mut ids = head.split(' ');
        let (Some(old), Some(new)) = (ids.next(), ids.next()) else {
            continue;
        };
        if message.starts_with("commit (amend)") {
            out.retain(|c| c != old);
        }
        if !new.is_empty() && !new.bytes().all(|b| b == b'0') && !out.iter().any(|c| c == new) {
            out.push(new.to_owned());
        }
    }
    out
}

/// The HEAD reflog of the worktree at `path` (admin dir `admin`): its loose `logs/HEAD`, or
/// where there is none (a reftable repository keeps reflogs in its tables) as git tells it.
/// `None` when neither holds an entry.
fn head_reflog(path: &Path, admin: &Path) -> Option<String> {
    match std::fs::read_to_string(admin.join("logs/HEAD")) {
        Ok(text) => Some(text),
        Err(_) => git::head_reflog(path).ok().filter(|t| !t.is_empty()),
    }
}

/// gc's judgement of a tree or a branch, with the reason either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Judgement {
    /// It may go: its work landed (or it is idle, with `--idle`).
    Collect(String),
    /// It stays, and why.
    Keep(String),
}

use Judgement::{Collect, Keep};

/// Which trees' HEADs are on no remote, asked of git once for all the trees gc judges: a HEAD
/// is pushed exactly when a remote-tracking ref reaches it, so one `git rev-list --stdin --not
/// --remotes` over every HEAD answers for each (a HEAD it lists is on no remote). Read before
/// the judging; the judgement under a card's lock asks again, of that tree alone.
pub(super) struct OnRemotes {
    /// Each tree's HEAD commit when asked, by path.
    tips: HashMap<PathBuf, String>,
    /// The HEADs of `tips` that no remote-tracking ref reaches.
    unpushed: HashSet<String>,
}

impl OnRemotes {
    /// Ask git about the HEAD commits `tips` (path, commit) in one walk, run in `dir`. None when
    /// git could not answer: each tree is then asked on its own.
    pub(super) fn ask(dir: &Path, tips: Vec<(PathBuf, String)>) -> Option<OnRemotes> {
        let mut heads: Vec<&str> = tips.iter().map(|(_, oid)| oid.as_str()).collect();
        heads.sort_unstable();
        heads.dedup();
        let listed = git::not_on_remotes(dir, &heads).ok()?;
        let unpushed = heads
            .into_iter()
            .filter(|h| listed.contains(*h))
            .map(str::to_owned)
            .collect();
        Some(OnRemotes {
            tips: tips.into_iter().collect(),
            unpushed,
        })
    }

    /// [`OnRemotes::ask`] about the HEAD of each live, unlocked managed worktree of `entries`,
    /// read without git (a branch's commit through gix), in the base of `repo`.
    pub(super) fn of_trees(repo: &Repo, entries: &[Entry]) -> Option<OnRemotes> {
        let tips = entries
            .iter()
            .filter_map(|e| {
                let Loaded::Parsed(rec) = &e.record else {
                    return None;
                };
                if e.linked.locked || e.linked.prunable {
                    return None;
                }
                let oid = match git::read_head(&e.linked.admin)? {
                    Head::Detached(oid) => oid,
                    Head::Branch(b) => repo.ref_oid(&format!("refs/heads/{b}")).ok()?,
                };
                Some((
                    e.linked.path.clone().unwrap_or_else(|| rec.path.clone()),
                    oid,
                ))
            })
            .collect();
        OnRemotes::ask(&repo.base, tips)
    }

    /// Is the HEAD of the tree at `path` on no remote (its commit when asked), if it was asked?
    fn unpushed_at(&self, path: &Path) -> Option<Option<&str>> {
        let tip = self.tips.get(path)?;
        Some(self.unpushed.contains(tip).then_some(tip.as_str()))
    }
}

/// `Keep` when HEAD at `path` has commits on no remote, or when that cannot be told; from
/// `remotes` when it holds the tree, else from git.
fn unpushed(path: &Path, remotes: Option<&OnRemotes>) -> Option<Judgement> {
    let asked = match remotes.and_then(|r| r.unpushed_at(path)) {
        Some(known) => Ok(known.map(str::to_owned)),
        None => git::unpushed_commit(path),
    };
    match asked {
        Ok(Some(oid)) => Some(Keep(format!(
            "HEAD has commits that are on no remote (e.g. {oid})"
        ))),
        Ok(None) => None,
        Err(e) => Some(Keep(format!(
            "could not tell whether HEAD is pushed: {e:#}"
        ))),
    }
}

/// Judge the verified worktree at `path` (admin dir `admin`, record `rec`): `Collect` when its
/// work landed, `Keep` otherwise. `head` is what its HEAD names; `remotes`, when it holds the
/// tree, whether HEAD is pushed.
pub(super) fn landed(
    path: &Path,
    admin: &Path,
    rec: &Record,
    head: Option<&Head>,
    remotes: Option<&OnRemotes>,
) -> Judgement {
    let head_name = match head {
        Some(Head::Branch(b)) => b.clone(),
        Some(Head::Detached(oid)) => format!("detached HEAD {}", short(oid)),
        None => "HEAD".to_owned(),
    };
    if let Some(keep) = unpushed(path, remotes) {
        return keep;
    }
    let reflog = match head_reflog(path, admin) {
        Some(text) => text,
        None => {
            return Keep(
                "it has no HEAD reflog, so nothing shows that work was made and landed here".into(),
            )
        }
    };
    let made = commits_made_here(&reflog);
    if made.is_empty() {
        return Keep(
            "no commit was made in this worktree (its HEAD reflog records none): nothing of its own landed"
                .into(),
        );
    }
    if rec.base_ref.is_empty() {
        // An empty base ref says why, instead of "not merged into " (an empty name).
        return Keep(format!(
            "{head_name} cannot be checked for a merge: {}",
            crate::context::empty_base_why(&rec.base_remote)
        ));
    }
    let Some(tracking) = work_base(rec) else {
        return Keep(format!(
            "{head_name} cannot be checked for a merge: no commit of the base {} is recorded",
            rec.base_ref
        ));
    };
    let Some(tip) = git::head_oid(path) else {
        return Keep("its HEAD names no commit".into());
    };
    if !integrated(path, &tracking, &tip) {
        return Keep(format!("{head_name} is not merged into {}", rec.base_ref));
    }
    for c in &made {
        // HEAD's own history landed with it (merged, or its changes in the base).
        if git::is_ancestor(path, c, &tip) || integrated(path, &tracking, c) {
            continue;
        }
        return Keep(format!(
            "commit {} made in this worktree is not merged into {} (amended, reset away or on another branch)",
            short(c),
            rec.base_ref
        ));
    }
    let n = made.len();
    Collect(format!(
        "{head_name} is merged into {} and pushed ({n} commit{} made here)",
        rec.base_ref,
        if n == 1 { "" } else { "s" }
    ))
}

/// `gc --include-failed`: a tree left `failed` or `preparing` (its prepare failed, or kardwt was
/// cut short in it) has no evidence to show, so it goes when it holds nothing of its own: HEAD
/// on a remote and its HEAD reflog recording no commit made here (no reflog is no proof, so it
/// is kept). One with commits of its own is judged like a ready tree, by [`landed`]. Age,
/// clean and unused are the caller's checks.
pub(super) fn abandoned(
    path: &Path,
    admin: &Path,
    rec: &Record,
    head: Option<&Head>,
    remotes: Option<&OnRemotes>,
) -> Judgement {
    if let Some(keep) = unpushed(path, remotes) {
        return keep;
    }
    let Some(reflog) = head_reflog(path, admin) else {
        return Keep("it has no HEAD reflog, so nothing shows it has no commit of its own".into());
    };
    if commits_made_here(&reflog).is_empty() {
        return Collect(
            "no commit of its own (its HEAD reflog records none) and HEAD is on a remote".into(),
        );
    }
    landed(path, admin, rec, head, remotes)
}

/// The judgement for the tree's state as its record says now: a `ready` tree by [`landed`] (or
/// [`idle`] with `idle_for`), a `failed` or `preparing` one by [`abandoned`] and a `released` one
/// by [`landed`], those three only with `include_failed`. `remotes`: as for [`landed`].
pub(super) fn verdict(
    path: &Path,
    admin: &Path,
    rec: &Record,
    head: Option<&Head>,
    idle_for: Option<std::time::Duration>,
    include_failed: bool,
    remotes: Option<&OnRemotes>,
) -> Judgement {
    match rec.state {
        State::Ready => match (landed(path, admin, rec, head, remotes), idle_for) {
            (Keep(why), Some(d)) => match idle(path, admin, rec, d) {
                Collect(reason) => Collect(reason),
                Keep(not_idle) => Keep(format!("{why}; not idle: {not_idle}")),
            },
            (judged, _) => judged,
        },
        State::Failed | State::Preparing | State::Released if !include_failed => Keep(format!(
            "it is {} (gc collects such a tree only with --include-failed)",
            rec.state.as_str()
        )),
        State::Failed | State::Preparing => abandoned(path, admin, rec, head, remotes),
        State::Released => landed(path, admin, rec, head, remotes),
    }
}

/// `gc --idle DUR`, the one exception to "collect only what landed": a tree with
/// no commit of its own (its HEAD reflog records none; no reflog is no evidence, so it is
/// kept) that nobody touched for `idle_for`. Touched is the newer of its HEAD reflog's mtime
/// (every commit, checkout, reset or pull moves HEAD) and the record's `updated_at` (every
/// prepare, reuse and release). Not the index: any `git status`, gc's own clean check
/// included, rewrites it; and edits that change no HEAD leave the tree dirty, which keeps it.
/// `Collect` when idle; clean and unused are the caller's checks, as for [`landed`].
pub(super) fn idle(
    path: &Path,
    admin: &Path,
    rec: &Record,
    idle_for: std::time::Duration,
) -> Judgement {
    let Some(reflog) = head_reflog(path, admin) else {
        return Keep("it has no HEAD reflog, so nothing shows it has no commit of its own".into());
    };
    let made = commits_made_here(&reflog).len();
    if made > 0 {
        return Keep(format!(
            "{made} commit{} made in this worktree (--idle collects only trees with none)",
            if made == 1 { " was" } else { "s were" }
        ));
    }
    let mtime = |rel: &str| -> Option<u64> {
        let m = std::fs::metadata(admin.join(rel)).ok()?.modified().ok()?;
        m.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    };
    let touched = [
        mtime("logs/HEAD"),
        reflog_last_time(&reflog),
        crate::sys::parse_rfc3339(&rec.updated_at),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(0);
    let age = crate::sys::now_secs().saturating_sub(touched);
    let shown = spelled(age);
    if age < idle_for.as_secs() {
        return Keep(format!(
            "touched {shown} ago, less than --idle {}",
            spelled(idle_for.as_secs())
        ));
    }
    Collect(format!(
        "idle: no commit of its own and untouched for {shown} (since {})",
        crate::sys::rfc3339(touched)
    ))
}

/// What a tree's work is judged against: a branch base's remote-tracking ref, or the commit
/// a tag or commit base named when the tree was made (recorded as `base_oid`).
pub(super) fn work_base(rec: &Record) -> Option<String> {
    tracking_ref(rec).or_else(|| (!rec.base_oid.is_empty()).then(|| rec.base_oid.clone()))
}

/// The remote-tracking ref of the record's base (`refs/remotes/<remote>/<branch>`).
pub(crate) fn tracking_ref(rec: &Record) -> Option<String> {
    tracking_ref_of(&rec.base_remote, &rec.base_ref)
}

/// The remote-tracking ref of `base_ref` on `remote` (pure): a branch's, or where kardwt keeps a
/// pull request's head ([`crate::config::tracking_ref_of`]).
pub(super) fn tracking_ref_of(remote: &str, base_ref: &str) -> Option<String> {
    crate::config::tracking_ref_of(remote, base_ref)
}

/// How many seconds ago `tracking` (`refs/remotes/<remote>/<branch>`) was last updated, as
/// far as the repository tells: the newer of its reflog's last entry (a fetch that moved it)
/// and `FETCH_HEAD`'s mtime when that names the branch (a `git fetch` that found nothing new).
/// A ref with no reflog has not moved since the clone wrote it: then the clone's entry in the
/// reflog of `refs/remotes/<remote>/HEAD`. A reflog with no loose file (a reftable
/// repository keeps them in its tables) is asked of git.
pub(super) fn fetched_ago(common_dir: &Path, tracking: &str) -> Option<u64> {
    let reflog_time = |r: &str| match std::fs::read_to_string(common_dir.join("logs").join(r)) {
        Ok(text) => reflog_last_time(&text),
        Err(_) => crate::git::reflog_time(common_dir, r),
    };
    let mut parts = tracking.splitn(4, '/');
    let remote = parts.nth(2).unwrap_or_default();
    let branch = parts.next().unwrap_or_default();
    let moved =
        reflog_time(tracking).or_else(|| reflog_time(&format!("refs/remotes/{remote}/HEAD")));
    let fetch_head = common_dir.join("FETCH_HEAD");
    let fetched = std::fs::read_to_string(&fetch_head)
        .ok()
        .filter(|t| t.contains(&format!("branch '{branch}' of ")))
        .and_then(|_| std::fs::metadata(&fetch_head).ok()?.modified().ok())
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    let when = moved.into_iter().chain(fetched).max()?;
    Some(crate::sys::now_secs().saturating_sub(when))
}

/// The time (Unix seconds) of a reflog's last entry (pure): each line is
/// `<old> <new> <ident> <time> <zone>\t<message>`.
pub(super) fn reflog_last_time(reflog: &str) -> Option<u64> {
    let line = reflog.lines().rev().find(|l| l.contains('\t'))?;
    let (head, _) = line.split_once('\t')?;
    let mut words = head.rsplit(' ');
    words.next()?; // the zone
    words.next()?.parse().ok()
}

/// A length of time whole, in words (pure): `3 days 1 second`, `36 hours`, `0 seconds`.
fn spelled(secs: u64) -> String {
    let parts = [
        (secs / 86_400, "day"),
        (secs % 86_400 / 3600, "hour"),
        (secs % 3600 / 60, "minute"),
        (secs % 60, "second"),
    ];
    let said: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if said.is_empty() {
        "0 seconds".to_owned()
    } else {
        said.join(" ")
    }
}

/// An age in its largest whole unit, as a person says it (pure): `40 seconds`, `1 minute`,
/// `3 hours`, `2 days`.
pub(crate) fn coarse(secs: u64) -> String {
    let (n, unit) = match secs {
        s if s < 60 => (s, "second"),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3600, "hour"),
        s => (s / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// `gc --branches`: is the branch tip `tip` integrated into `base` (a commit: the
/// freshly fetched base; `base_name` names it), by the same test as a tree's HEAD in
/// [`landed`]? Every commit the tip contains landed with it. `Collect` when it did.
pub(super) fn branch_landed(dir: &Path, base: &str, base_name: &str, tip: &str) -> Judgement {
    if !integrated(dir, base, tip) {
        return Keep(format!(
            "it has commits not integrated into {base_name} (tip {})",
            short(tip)
        ));
    }
    Collect(if git::is_ancestor(dir, tip, base) {
        format!("merged into {base_name} (tip {})", short(tip))
    } else {
        format!(
            "its changes are in {base_name}, squash- or rebase-merged (tip {})",
            short(tip)
        )
    })
}

/// Is `commit` in `base`, or are its changes (a squash or rebase merge)?
fn integrated(dir: &Path, base: &str, commit: &str) -> bool {
    git::is_ancestor(dir, commit, base) || git::changes_contained(dir, base, commit)
}

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
}

#[cfg(test)]
mod tests {
    use super::{coarse, commits_made_here, reflog_last_time, spelled};

    #[test]
    fn last_reflog_time_and_coarse_ages() {
        let log = format!(
            "{}{}",
            line(Z, A, "fetch: storing head"),
            "1111 2222 A U Thor <a@example.com> 1700000500 +0200\tfetch origin: fast-forward\n"
        );
        assert_eq!(reflog_last_time(&log), Some(1_700_000_500));
        assert_eq!(reflog_last_time(""), None);
        assert_eq!(coarse(1), "1 second");
        assert_eq!(coarse(59), "59 seconds");
        assert_eq!(coarse(61), "1 minute");
        assert_eq!(coarse(7300), "2 hours");
        assert_eq!(coarse(3 * 86_400 + 5), "3 days");
    }

    #[test]
    fn lengths_of_time_are_spelled_whole_with_spaces() {
        assert_eq!(spelled(0), "0 seconds");
        assert_eq!(spelled(1), "1 second");
        assert_eq!(spelled(2 * 86_400), "2 days");
        assert_eq!(spelled(3 * 86_400 + 1), "3 days 1 second");
        assert_eq!(spelled(36 * 3600 + 120), "1 day 12 hours 2 minutes");
    }

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";
    const C: &str = "3333333333333333333333333333333333333333";
    const D: &str = "4444444444444444444444444444444444444444";
    const Z: &str = "0000000000000000000000000000000000000000";

    fn line(old: &str, new: &str, message: &str) -> String {
        format!("{old} {new} A U Thor <a@example.com> 1700000000 +0000\t{message}\n")
    }

    #[test]
    fn only_commits_made_here_count() {
        let log = [
            line(Z, A, "reset: moving to HEAD"),
            line(A, B, "merge origin/main: Fast-forward"),
            line(B, C, "pull: Fast-forward"),
            line(C, A, "checkout: moving from card/1 to main"),
            line(A, D, "cherry-pick: picked"),
            line(D, B, "rebase (finish): returning to refs/heads/card/1"),
            line(B, C, "committed by hand: not a commit message"),
        ]
        .concat();
        assert!(commits_made_here(&log).is_empty());
    }

    #[test]
    fn commit_kinds_and_amends() {
        let log = [
            line(Z, A, "commit (initial): first"),
            line(A, B, "commit: second"),
            line(B, C, "commit (amend): second, better"),
            line(C, D, "commit (merge): Merge branch x"),
            line(D, D, "commit: again the same id"),
            "garbage without a tab\n".to_owned(),
        ]
        .concat();
        assert_eq!(commits_made_here(&log), vec![A, C, D]);
    }
}
