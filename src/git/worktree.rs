//! Worktree operations and reads of a worktree's files: `git worktree add` and `remove`, the
//! branch removal that follows, and status, ls-files and check-ignore. Every mutation takes a
//! [`RepoLock`] (checked by the compiler).
use std::ffi::OsString;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::argv::Argv;
use super::call::{raw_no_replace, Call, Output};
use super::parse;
use crate::sys::RepoLock;

/// How hard `git worktree remove` pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Force {
    /// Refuse a dirty or locked tree (git's default).
    No,
    /// `--force`: discard changes.
    Once,
    /// `--force --force`: also a locked tree (one git left `initializing`).
    Twice,
}

/// What `git worktree add` creates.
pub(crate) struct NewWorktree<'p> {
    pub path: &'p Path,
    /// `--no-checkout` (the delegated checkout mode).
    pub no_checkout: bool,
    /// `-b <branch>` at `start`; `None` checks out `start` (an existing branch) as it is.
    pub new_branch: Option<&'p str>,
    pub start: &'p str,
    /// A variable set to `path` for git and its hooks (the marker of `git kardwt add`).
    pub marker: &'p str,
}

/// `git worktree add` (mutates: under the repository lock).
pub(crate) fn worktree_add(
    _lock: &RepoLock,
    base: &Path,
    new: &NewWorktree<'_>,
    deadline: Option<Instant>,
) -> Result<Output> {
    let mut args = Argv::new(["worktree", "add", "--quiet"]);
    if new.no_checkout {
        args = args.fixed("--no-checkout");
    }
    if let Some(branch) = new.new_branch {
        args = args.fixed("-b").fixed(branch);
    }
    let args = args.outside(new.path).outside(new.start);
    // Settings the user gave git on its command line (`git -c x=y kardwt add`) or in
    // `GIT_CONFIG_COUNT` reach the checkout, as they reach `git -c x=y worktree add`'s (every
    // call keeps them).
    Call::new(base, args)
        .env(new.marker, new.path)
        .deadline(deadline)
        .output()
}

/// `git worktree remove [--force [--force]] <path>` from `base` (mutates: under the
/// repository lock).
pub(crate) fn worktree_remove(
    _lock: &RepoLock,
    base: &Path,
    path: &Path,
    force: Force,
    deadline: Option<Instant>,
) -> Result<Output> {
    let mut args = Argv::new(["worktree", "remove"]);
    if force != Force::No {
        args = args.fixed("--force");
    }
    if force == Force::Twice {
        args = args.fixed("--force");
    }
    Call::new(base, args.outside(path))
        .deadline(deadline)
        .output()
}

/// `git branch -D <branch>` (mutates: under the repository lock).
pub(crate) fn branch_delete(_lock: &RepoLock, base: &Path, branch: &str) -> Result<()> {
    Call::new(base, Argv::new(["branch", "-D", "--quiet"]).outside(branch))
        .run()
        .map(drop)
}

/// The branches checked out in any worktree of the repository, the main one included
/// (`git worktree list --porcelain -z`): `(worktree path, full ref name)`.
pub(crate) fn checked_out_branches(dir: &Path) -> Result<Vec<(String, String)>> {
    let args = ["worktree", "list", "--porcelain", "-z"].map(OsString::from);
    let raw = raw_no_replace(dir, args.to_vec(), None)?;
    Ok(parse::worktree_branches(&raw))
}

/// `git status --porcelain -z <options…> [-- <paths…>]` in `worktree`, parsed, from a run that
/// provably completed: see [`completed`].
pub(crate) fn status_z(
    worktree: &Path,
    options: &[&str],
    paths: &[&str],
) -> Result<Vec<parse::StatusEntry>> {
    let mut args = Argv::new(["status", "--porcelain", "-z"]);
    for o in options {
        args = args.fixed(*o);
    }
    if !paths.is_empty() {
        args = args.paths(paths.iter().copied());
    }
    let out = Call::new(worktree, args).untraced().output()?;
    completed(&out, "git status", worktree, parse::status_z)
}

/// Does `git status --porcelain` list anything in `worktree`: a tracked change, or an untracked
/// file the ignore rules do not ignore? Read-only (`--no-optional-locks`: git neither takes the
/// index lock nor refreshes the index, so a reader never blocks or disturbs a writer); git is
/// killed and reaped when `deadline` passes first (an error then).
pub(crate) fn is_dirty(worktree: &Path, deadline: Option<Instant>) -> Result<bool> {
    let args = Argv::new(["--no-optional-locks", "status", "--porcelain", "-z"]);
    let out = Call::new(worktree, args)
        .untraced()
        .own_group()
        .deadline(deadline)
        .output()?;
    Ok(!completed(&out, "git status", worktree, parse::status_z)?.is_empty())
}

/// How many commits HEAD in `worktree` has that `base` lacks, and `base` has that HEAD lacks:
/// `(ahead, behind)` (`git rev-list --left-right --count <base>...HEAD`). git is killed and
/// reaped when `deadline` passes first (an error then).
pub(crate) fn ahead_behind(
    worktree: &Path,
    base: &str,
    deadline: Option<Instant>,
) -> Result<(u64, u64)> {
    let args = Argv::new(["rev-list", "--left-right", "--count"]).outside(format!("{base}...HEAD"));
    let out = Call::new(worktree, args)
        .own_group()
        .deadline(deadline)
        .output()?;
    if !out.ok {
        anyhow::bail!(
            "`git rev-list --left-right --count {base}...HEAD` failed in {}: {}",
            worktree.display(),
            out.stderr.trim()
        );
    }
    let (behind, ahead) = parse::left_right_count(&out.stdout).ok_or_else(|| {
        anyhow::anyhow!(
            "`git rev-list --left-right --count` printed {:?} in {}",
            out.stdout.trim(),
            worktree.display()
        )
    })?;
    Ok((ahead, behind))
}

/// The index's entries (`git ls-files --stage -z` in `dir`), from a run that provably
/// completed: see [`completed`].
pub(crate) fn index_z(dir: &Path) -> Result<Vec<parse::IndexEntry>> {
    let out = Call::new(dir, ["ls-files", "--stage", "-z"])
        .untraced()
        .output()?;
    completed(&out, "git ls-files --stage", dir, parse::index_z)
}

/// The index's entries marked skip-worktree or assume-unchanged (`git ls-files -v --stage
/// -z` in `dir`), from a run that provably completed: see [`completed`].
pub(crate) fn flagged_z(dir: &Path) -> Result<Vec<parse::FlaggedEntry>> {
    let out = Call::new(dir, ["ls-files", "-v", "--stage", "-z"])
        .untraced()
        .output()?;
    completed(&out, "git ls-files -v --stage", dir, parse::flagged_z)
}

/// The blob ids git would store for the files at `paths` (relative to `dir`, none holding a
/// newline), through the same filters `git add` applies (`git hash-object --stdin-paths`),
/// one per path in order.
pub(crate) fn hash_paths(dir: &Path, paths: &[&[u8]]) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let input: Vec<u8> = paths.iter().flat_map(|p| [*p, b"\n"].concat()).collect();
    let out = Call::new(dir, ["hash-object", "--stdin-paths"])
        .stdin(input)
        .untraced()
        .output()?;
    let oids: Vec<String> = out.stdout.lines().map(str::to_owned).collect();
    if !out.ok || oids.len() != paths.len() {
        anyhow::bail!(
            "`git hash-object --stdin-paths` failed in {}: {}",
            dir.display(),
            out.stderr.trim()
        );
    }
    Ok(oids)
}

/// A reading git run whose answer kardwt acts on only when it provably completed: exit 0,
/// nothing on stderr (git reports a directory it could not open, or a file it could not
/// stat, only as a line there, and exits 0 with that part missing from its answer), and its
/// whole `-z` output read to the final NUL of its last entry.
fn completed<T>(
    out: &Output,
    what: &str,
    dir: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T, parse::Garbled>,
) -> Result<T> {
    let said = out.stderr.trim();
    if !out.ok {
        let ended = out.code.map_or("was killed by a signal".to_owned(), |c| {
            format!("exited {c}")
        });
        anyhow::bail!("`{what}` {ended} in {}: {said}", dir.display());
    }
    if !said.is_empty() {
        anyhow::bail!(
            "`{what}` reported a problem in {}, so its answer may be missing part of the tree: {}",
            dir.display(),
            crate::ground::cap::tail_chars(said, 300)
        );
    }
    parse(&out.bytes).map_err(|why| anyhow::anyhow!("`{what}` in {}: {why}", dir.display()))
}

/// Which of `paths` (relative to `dir`) git ignores and does not track; an error when git
/// fails (exit 1 is "none of them", anything else is not an answer), and when it warns: git
/// reads past an ignore file it cannot read (`unable to access '.gitignore'`), and its answer
/// then leaves out what that file ignores.
pub(crate) fn check_ignore(dir: &Path, paths: &[String]) -> Result<Vec<String>> {
    let out = Call::new(dir, Argv::new(["check-ignore"]).paths(paths)).output()?;
    if !matches!(out.code, Some(0 | 1)) {
        anyhow::bail!(
            "`git check-ignore` failed in {}: {}",
            dir.display(),
            out.stderr.trim()
        );
    }
    if !out.stderr.trim().is_empty() {
        anyhow::bail!(
            "`git check-ignore` reported a problem in {}, so its answer may leave out what an \
             ignore file ignores: {}",
            dir.display(),
            crate::ground::cap::tail_chars(out.stderr.trim(), 300)
        );
    }
    Ok(out.stdout.lines().map(str::to_owned).collect())
}

/// `git ls-files -z --others --ignored --exclude-standard --directory`: every untracked path
/// the ignore rules ignore, as NUL-separated paths relative to `dir`, an ignored directory as
/// one `dir/` that git does not walk (the copy's `.worktreeinclude`).
pub(crate) fn ls_ignored_untracked_z(dir: &Path) -> Result<Vec<u8>> {
    let out = Call::new(
        dir,
        [
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
    )
    .output()?;
    if !out.ok {
        anyhow::bail!(
            "git ls-files --others --ignored failed: {}",
            out.stderr.trim()
        );
    }
    // A warning (an ignore file or a directory git could not read) means the list may lack
    // what that file ignores or that directory holds.
    if !out.stderr.trim().is_empty() {
        anyhow::bail!(
            "git ls-files --others --ignored reported a problem in {}, so its list may be \
             missing part of the tree: {}",
            dir.display(),
            crate::ground::cap::tail_chars(out.stderr.trim(), 300)
        );
    }
    Ok(out.bytes)
}

/// `git check-ignore -z --stdin` in `dir` (with `--no-index` when `no_index`): which of
/// `paths` the ignore rules ignore.
pub(crate) fn ignored_paths(
    dir: &Path,
    paths: &[&[u8]],
    no_index: bool,
) -> Result<std::collections::BTreeSet<Vec<u8>>> {
    if paths.is_empty() {
        return Ok(std::collections::BTreeSet::new());
    }
    let input: Vec<u8> = paths
        .iter()
        .flat_map(|p| p.iter().chain(&[0]))
        .copied()
        .collect();
    let out = check_ignore_z(dir, input, no_index)?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// `git check-ignore -z --stdin [--no-index]` with NUL-terminated paths on stdin: the ones the
/// ignore rules ignore, NUL-separated.
pub(crate) fn check_ignore_z(dir: &Path, paths: Vec<u8>, no_index: bool) -> Result<Vec<u8>> {
    let mut args: Vec<OsString> = vec!["check-ignore".into()];
    if no_index {
        args.push("--no-index".into());
    }
    args.extend(["-z".into(), "--stdin".into()]);
    raw_no_replace(dir, args, Some(paths))
}
