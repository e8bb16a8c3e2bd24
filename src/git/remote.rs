//! Talking to a remote: fetching exactly one ref, asking for its HEAD, its configured URL,
//! and what a failure tells the user (one line naming the cause, one hint naming the fix).
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::argv::Argv;
use super::call::{run, Call, Output};
use crate::ground::error::{Code, Fail, Kind};
use crate::sys::RepoLock;

/// Fetch exactly `refspec` from `remote`: no tags, no pruning, no FETCH_HEAD, no submodules,
/// no maintenance (mutates refs: under the repository lock).
pub(crate) fn fetch_ref(
    _lock: &RepoLock,
    base: &Path,
    remote: &str,
    refspec: &str,
    deadline: Option<Instant>,
) -> Result<Output> {
    let args = Argv::new([
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-prune",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--no-auto-maintenance",
    ])
    .outside(remote)
    .outside(refspec);
    Call::new(base, args).deadline(deadline).output()
}

/// `git ls-remote --symref <remote> HEAD`.
pub(crate) fn ls_remote_head(
    base: &Path,
    remote: &str,
    deadline: Option<Instant>,
) -> Result<Output> {
    let args = Argv::new(["ls-remote", "--symref"])
        .outside(remote)
        .outside("HEAD");
    Call::new(base, args).deadline(deadline).output()
}

/// `git ls-remote <remote> <refs>…`: the remote's refs that end in one of `refs`.
pub(crate) fn ls_remote_refs(
    base: &Path,
    remote: &str,
    refs: &[String],
    deadline: Option<Instant>,
) -> Result<Output> {
    let mut args = Argv::new(["ls-remote"]).outside(remote);
    for r in refs {
        args = args.outside(r);
    }
    Call::new(base, args).deadline(deadline).output()
}

/// The URL of remote `remote` (`git remote get-url`), or `None` when no such remote is
/// configured.
pub(crate) fn remote_url(dir: &Path, remote: &str) -> Option<String> {
    run(dir, Argv::new(["remote", "get-url"]).outside(remote))
        .ok()
        .filter(|u| !u.is_empty())
}

/// The branch ref (`refs/heads/…`) that `git ls-remote --symref <remote> HEAD` names, from its
/// stdout (pure).
pub(crate) fn symref_head(stdout: &str) -> Option<String> {
    stdout.lines().find_map(|l| {
        l.strip_prefix("ref: ")
            .and_then(|r| r.strip_suffix("\tHEAD"))
            .map(str::to_owned)
    })
}

/// What a failed fetch or ls-remote of `remote` tells the user: one line
/// naming the cause and one hint naming the fix, never git's multi-line text. `url` is the
/// remote's configured URL (`None`: no such remote); `what` names what was asked
/// (`its HEAD`, `refs/heads/main`); `stderr` is git's own.
pub(crate) fn remote_failure(remote: &str, url: Option<&str>, what: &str, stderr: &str) -> Fail {
    let (remote, what) = (remote.to_owned(), what.to_owned());
    let Some(url) = url.map(str::to_owned) else {
        return Fail::from(Unreachable::NoRemote { remote });
    };
    if stderr.contains("couldn't find remote ref") {
        return Fail::from(Unreachable::NoRef { remote, url, what });
    }
    let cause = git_cause(stderr);
    Fail::from(Unreachable::Unreached {
        remote,
        url,
        what,
        cause,
    })
}

/// Why the base could not be fetched from a remote (`url`: its configured URL; `what`: what
/// was asked, `its HEAD` or a ref).
#[derive(Debug, thiserror::Error)]
pub(super) enum Unreachable {
    /// No remote of that name: a setting to fix (exit 2).
    #[error("this repository has no remote named {remote} to fetch the base from")]
    NoRemote { remote: String },
    /// The remote lacks the ref: a setting to fix (exit 2).
    #[error("the remote {remote} ({url}) has no {what}")]
    NoRef {
        remote: String,
        url: String,
        what: String,
    },
    /// git could not reach it: `cause`, git's first error line (exit 1).
    #[error("could not reach the remote {remote} ({url}) to fetch {what}: {cause}")]
    Unreached {
        remote: String,
        url: String,
        what: String,
        cause: String,
    },
}

impl Kind for Unreachable {
    fn code(&self) -> Code {
        match self {
            Unreachable::NoRemote { .. } | Unreachable::NoRef { .. } => Code::Usage,
            Unreachable::Unreached { .. } => Code::Failed,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Unreachable::NoRemote { remote } => format!(
                "add it (git remote add {remote} <url>) or name another one with \
                 worktree.base.remote"
            ),
            Unreachable::NoRef { remote, .. } => format!(
                "set worktree.base.ref to a branch {remote} has (git ls-remote --heads {remote} \
                 lists them)"
            ),
            Unreachable::Unreached { remote, .. } => format!(
                "check the URL (git remote set-url {remote} <url>), the network and your \
                 credentials, then retry"
            ),
        }]
    }
}

/// git's first `fatal:`/`error:` line without its prefix, on one line and capped (pure).
pub(super) fn git_cause(stderr: &str) -> String {
    let line = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| stderr.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("git gave no reason");
    let line = line
        .trim_start_matches("fatal:")
        .trim_start_matches("error:")
        .trim();
    crate::ground::cap::tail_chars(line, 200)
}
