//! The base a new tree starts from and the `git worktree add` that makes it: fetch exactly the
//! base `--base`, the rules or the remote's HEAD name (a branch, a tag or a commit), and check
//! out a card's tree at it, marked so that kardwt's own post-checkout hook leaves it to the caller.
use crate::sys;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::config::{tracking_ref_of, NameError};
use crate::config::{CheckoutMode, Config};
use crate::git;
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};

/// The variable `add` sets on its own `git worktree add`, naming the target path, so that
/// kardwt's post-checkout hook leaves that worktree to `add`.
pub(crate) const ADD_MARKER: &str = "KARDWT_ADD_TARGET";

/// `git worktree add` of card `card`'s tree at `path`, the step `add` and `doctor --try` share:
/// a new branch `card/<id>` at `oid`, or the kept branch as it is; `--no-checkout` in delegated
/// mode; marked so that kardwt's post-checkout hook leaves it to the caller. A plain full
/// checkout is written by kardwt itself ([`git::check_out`]) after a `--no-checkout` add,
/// followed by the post-checkout hooks git would have run; a failure of either is a failed
/// `Output`, as git's own would be. With it: whether kardwt wrote the checkout itself, every
/// file of it (then nothing need look again whether the checkout is whole).
pub(super) fn add_worktree_at(
    repo_lock: &sys::RepoLock,
    repo: &git::Repo,
    cfg: &Config,
    card: &CardId,
    path: &Path,
    oid: &str,
    deadline: Instant,
) -> Result<(git::Output, bool)> {
    let branch = card.branch();
    let existing = repo.branch_exists(&branch);
    let delegated = cfg.checkout.mode == CheckoutMode::Delegated;
    // The commit the tree will hold; kardwt checks it out itself where that is git's plain copy.
    let commit = match existing {
        true => repo.ref_oid(&format!("refs/heads/{branch}")).ok(),
        false => Some(oid.to_owned()),
    };
    // A hook of the user's runs as git runs it: git checks out. kardwt's own shim returns at
    // once for the tree add makes (add seeds it itself), so it need not run at all.
    let hooks = repo.post_checkout_hooks();
    let planned = commit
        .as_deref()
        .filter(|_| !delegated && hooks != git::PostCheckout::Other)
        .and_then(|c| repo.plan_checkout(c).ok());
    crate::ground::trace::phase("add: checkout planned");
    let new = git::NewWorktree {
        path,
        no_checkout: delegated || planned.is_some(),
        new_branch: (!existing).then_some(branch.as_str()),
        start: if existing { &branch } else { oid },
        marker: ADD_MARKER,
    };
    let added = git::worktree_add(repo_lock, &repo.base, &new, Some(deadline))?;
    let Some(planned) = planned.filter(|_| added.ok) else {
        return Ok((added, false));
    };
    if let Err(e) = git::check_out(path, planned, deadline) {
        return Ok((git::Output::failed(format!("{e:#}")), false));
    }
    Ok((added, true))
}

/// What `--base` asked for, checked before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    /// A full ref: `refs/heads/<branch>` or `refs/tags/<tag>`.
    Ref(String),
    /// A short name, a branch or a tag of the remote (a branch first, as git resolves it).
    Name(String),
    /// A full commit id.
    Commit(String),
    /// `pr/<n>`: a pull request's head, GitHub's `refs/pull/<n>/head` or GitLab's
    /// `refs/merge-requests/<n>/head`, whichever the remote has.
    Pr { shown: String, number: u64 },
}

impl Asked {
    /// `--base NAME`: `main`, `refs/heads/main`, `v1.2`, `refs/tags/v1.2` or a full commit id;
    /// anything git would not take as one (an option, `..`, another kind of ref) is a usage
    /// error (exit 2).
    pub(crate) fn parse(name: &str) -> Result<Asked, Fail> {
        let refuse = |why| {
            Fail::from(Refusal::BadName {
                name: name.to_owned(),
                why,
            })
        };
        let is_hex = |n: &str| {
            n.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if (name.len() == 40 || name.len() == 64) && is_hex(name) {
            return Ok(Asked::Commit(name.to_owned()));
        }
        if let Some(n) = name.strip_prefix("pr/") {
            let number = crate::config::check_pr_number(n).map_err(refuse)?;
            return Ok(Asked::Pr {
                shown: name.to_owned(),
                number,
            });
        }
        if name.starts_with("refs/") {
            crate::config::check_base_ref(name).map_err(refuse)?;
            return Ok(Asked::Ref(name.to_owned()));
        }
        crate::config::check_branch_ref(&format!("refs/heads/{name}")).map_err(refuse)?;
        Ok(Asked::Name(name.to_owned()))
    }

    /// Is `recorded` (a record's `base_ref`) what this asks for?
    pub(crate) fn names(&self, recorded: &str) -> bool {
        match self {
            Asked::Ref(r) | Asked::Commit(r) => r == recorded,
            Asked::Name(n) => [format!("refs/heads/{n}"), format!("refs/tags/{n}")]
                .iter()
                .any(|r| r == recorded),
            Asked::Pr { number, .. } => crate::config::pr_refs(*number)
                .iter()
                .any(|r| r == recorded),
        }
    }

    /// Does this name a pull request's head (`pr/<n>`, or the remote's ref itself)? Its
    /// commit is anyone's who opened the request, so its rules are never read.
    pub(crate) fn is_pr(&self) -> bool {
        match self {
            Asked::Pr { .. } => true,
            Asked::Ref(r) => crate::config::is_pr_ref(r),
            Asked::Name(_) | Asked::Commit(_) => false,
        }
    }

    /// As the user gave it, for messages.
    pub(crate) fn shown(&self) -> &str {
        match self {
            Asked::Ref(r) | Asked::Name(r) | Asked::Commit(r) => r,
            Asked::Pr { shown, .. } => shown,
        }
    }
}

/// Fetch exactly the base (`asked`, else the rules' `base.ref`, else the remote's HEAD) and
/// return its ref as recorded (a branch or tag ref, or the commit id itself) with the commit it
/// names. A branch goes to its remote-tracking ref, a tag to the tag of that name (never moving
/// one that names another object), a commit only into the object store: the card's branch,
/// made at it next, is what keeps it.
pub(crate) fn fetch_base(
    repo_lock: &sys::RepoLock,
    repo: &crate::git::Repo,
    cfg: &Config,
    asked: Option<&Asked>,
    deadline: Instant,
) -> Result<(String, String)> {
    let key = asked.map_or("", Asked::shown);
    if let Some((_, base_ref, oid)) = repo.fetched.get().filter(|(k, _, _)| k == key) {
        return Ok((base_ref.clone(), oid.clone()));
    }
    let fetched = fetch_once(repo_lock, repo, cfg, asked, deadline)?;
    // The base fetched here is what the bare layout reads the rules of; a pull request's
    // head never is (see `fetch_for_rules`).
    if repo.is_bare_layout() && !asked.is_some_and(Asked::is_pr) {
        let _ = repo
            .fetched
            .set((key.to_owned(), fetched.0.clone(), fetched.1.clone()));
    }
    Ok(fetched)
}

/// In the bare layout the rules live in the base commit: fetch the base first (under the
/// repository lock, held only for the fetch), so that the rules a new tree is prepared by are
/// the ones committed in the very commit it is made at. The rules known before (the last
/// fetched base's) name the remote and ref fetched. Nothing to do with a base checkout, nor for
/// a pull request's head: anyone who can open a request could otherwise choose the hooks that
/// run on this machine, so such a card is prepared by the rules of the last fetched base.
pub(super) fn fetch_for_rules(
    repo: &git::Repo,
    cards: &crate::state::Cards,
    cfg: &Config,
    asked: Option<&Asked>,
    deadline: Instant,
    holder: &str,
) -> Result<()> {
    if !repo.is_bare_layout() || asked.is_some_and(Asked::is_pr) {
        return Ok(());
    }
    let repo_lock = cards.lock(deadline, holder)?;
    fetch_base(&repo_lock, repo, cfg, asked, deadline).map(drop)
}

/// [`fetch_base`] itself: one fetch.
fn fetch_once(
    repo_lock: &sys::RepoLock,
    repo: &crate::git::Repo,
    cfg: &Config,
    asked: Option<&Asked>,
    deadline: Instant,
) -> Result<(String, String)> {
    let base = &repo.base;
    let remote = &cfg.base.remote;
    let base_ref = match (asked, cfg.base.git_ref.as_deref()) {
        (Some(Asked::Name(n)), _) => resolve_name(base, remote, n, deadline)?,
        (Some(Asked::Pr { shown, number }), _) => {
            resolve_pr(base, remote, shown, *number, deadline)?
        }
        (Some(Asked::Ref(r) | Asked::Commit(r)), _) => r.clone(),
        (None, Some(r)) => r.to_owned(),
        (None, None) => remote_head(base, remote, deadline)?,
    };
    let (refspec, stored) = if let Some(tracking) = tracking_ref_of(remote, &base_ref) {
        (format!("+{base_ref}:{tracking}"), Some(tracking))
    } else if base_ref.starts_with("refs/tags/") {
        (format!("{base_ref}:{base_ref}"), Some(base_ref.clone()))
    } else {
        (base_ref.clone(), None)
    };
    // A commit already here fetches without asking the remote anything: whether the remote
    // has it is then asked below.
    let here_before = stored.is_none() && repo.has_object(&base_ref);
    let out = git::fetch_ref(repo_lock, base, remote, &refspec, Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        let fail = git::remote_failure(remote, url.as_deref(), &base_ref, &out.stderr);
        return Err(match asked {
            Some(asked) if url.is_some() => {
                asked_failure(remote, asked, &base_ref, &out.stderr, fail)
            }
            _ => fail,
        }
        .into());
    }
    let oid = match &stored {
        Some(r) => repo
            .ref_oid(r)
            .with_context(|| format!("could not read {r} after fetching it"))?,
        None if repo.has_object(&base_ref) => base_ref.clone(),
        None => anyhow::bail!("the commit {base_ref} is not in the repository after fetching it"),
    };
    if here_before && !remote_has(base, remote, &base_ref, deadline)? {
        return Err(Fail::from(Refusal::NotOnRemote {
            remote: remote.to_owned(),
            commit: base_ref,
        })
        .into());
    }
    Ok((base_ref, oid))
}

/// Does `remote` have the commit `oid` that this repository has? Yes when one of its
/// remote-tracking refs reaches it, or one of the refs it lists now (`git ls-remote`) whose
/// commit is here. A commit only a ref this repository has not fetched reaches is not proven.
fn remote_has(base: &Path, remote: &str, oid: &str, deadline: Instant) -> Result<bool> {
    if git::tracking_contains(base, remote, oid)? {
        return Ok(true);
    }
    let out = git::ls_remote_refs(base, remote, &[], Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), oid, &out.stderr).into());
    }
    let tips: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|t| !t.is_empty())
        .collect();
    git::reachable_from_any(base, oid, &tips)
}

/// A short `--base` name as the remote has it: its branch of that name, else its tag.
fn resolve_name(base: &Path, remote: &str, name: &str, deadline: Instant) -> Result<String> {
    let wanted = [format!("refs/heads/{name}"), format!("refs/tags/{name}")];
    let out = git::ls_remote_refs(base, remote, &wanted, Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), name, &out.stderr).into());
    }
    let has = |r: &str| out.stdout.lines().any(|l| l.split('\t').nth(1) == Some(r));
    match wanted.iter().find(|r| has(r)) {
        Some(r) => Ok(r.clone()),
        None => Err(Fail::from(Refusal::Lacks {
            remote: remote.to_owned(),
            asked: name.to_owned(),
            what: "branch or tag",
            base_ref: name.to_owned(),
        })
        .into()),
    }
}

/// `--base pr/<n>` as the remote has it: GitHub's `refs/pull/<n>/head`, else GitLab's
/// `refs/merge-requests/<n>/head`; a remote with neither is refused naming both.
fn resolve_pr(
    base: &Path,
    remote: &str,
    shown: &str,
    number: u64,
    deadline: Instant,
) -> Result<String> {
    let wanted = crate::config::pr_refs(number);
    let out = git::ls_remote_refs(base, remote, &wanted, Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), shown, &out.stderr).into());
    }
    let has = |r: &str| out.stdout.lines().any(|l| l.split('\t').nth(1) == Some(r));
    match wanted.iter().find(|r| has(r)) {
        Some(r) => Ok(r.clone()),
        None => Err(Fail::from(Refusal::NoPr {
            remote: remote.to_owned(),
            asked: shown.to_owned(),
            tried: wanted,
        })
        .into()),
    }
}

/// A fetch of what `--base` named failed: when the remote lacks it, say so naming `--base`
/// (not a setting the user did not touch); any other failure as `fail` says it.
fn asked_failure(
    remote: &str,
    asked: &Asked,
    base_ref: &str,
    stderr: &str,
    fail: crate::ground::error::Fail,
) -> crate::ground::error::Fail {
    let missing = [
        "couldn't find remote ref",
        "not our ref",
        "unadvertised object",
        "no such remote ref",
    ]
    .iter()
    .any(|m| stderr.contains(m));
    if !missing {
        return fail;
    }
    let what = match asked {
        Asked::Commit(_) => "commit",
        Asked::Pr { .. } => "pull request head",
        _ if base_ref.starts_with("refs/tags/") => "tag",
        _ => "branch",
    };
    Fail::from(Refusal::Lacks {
        remote: remote.to_owned(),
        asked: asked.shown().to_owned(),
        what,
        base_ref: base_ref.to_owned(),
    })
}

/// The branch the remote's HEAD names, as the remote reports it now.
pub(super) fn remote_head(base: &Path, remote: &str, deadline: Instant) -> Result<String> {
    let out = git::ls_remote_head(base, remote, Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), "its HEAD", &out.stderr).into());
    }
    let head = git::symref_head(&out.stdout).ok_or_else(|| {
        Fail::from(Refusal::NoHead {
            remote: remote.to_owned(),
        })
    })?;
    // What the remote says is outside input too: no value becomes an option.
    crate::config::check_branch_ref(&head).map_err(|why| {
        Fail::from(Refusal::BadHead {
            remote: remote.to_owned(),
            head: head.clone(),
            why,
        })
    })?;
    Ok(head)
}

/// Why no base can be fetched for a new tree: every one a usage error (exit 2), since what
/// names the base (`--base`, the rules, the remote's HEAD) is the user's to change.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// `--base` names nothing git would take as a branch, tag or commit.
    #[error("--base {}: {why}", crate::config::quote(name))]
    BadName { name: String, why: NameError },
    /// The remote has no `what` (branch, tag, commit) `base_ref` that `--base asked` named.
    #[error("--base {asked}: the remote {remote} has no {what} {base_ref}; nothing was created")]
    Lacks {
        remote: String,
        asked: String,
        what: &'static str,
        base_ref: String,
    },
    /// `--base` named a commit this repository has and the remote is not shown to have.
    #[error(
        "--base {commit}: this repository has that commit, but no branch or tag of the remote \
         {remote} reaches it; nothing was created"
    )]
    NotOnRemote { remote: String, commit: String },
    /// `--base pr/<n>`: the remote has neither ref a forge keeps a change's head at.
    #[error(
        "--base {asked}: the remote {remote} has neither {} nor {}; nothing was created",
        tried[0],
        tried[1]
    )]
    NoPr {
        remote: String,
        asked: String,
        tried: [String; 2],
    },
    #[error("the remote {remote} reports no HEAD branch")]
    NoHead { remote: String },
    #[error("the remote {remote} names HEAD {}: {why}", crate::config::quote(head))]
    BadHead {
        remote: String,
        head: String,
        why: NameError,
    },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            Refusal::BadName {
                why: NameError::PrNumber,
                ..
            } => "--base pr/<n> takes the number of a pull (or merge) request, e.g. --base pr/7"
                .into(),
            Refusal::NoPr { remote, tried, .. } => format!(
                "check the number (git ls-remote {remote} {} {} lists what {remote} has)",
                tried[0], tried[1]
            ),
            Refusal::BadName { .. } => "--base takes a branch, tag or commit the remote has, e.g. \
                                        --base release/1.2, --base v1.2 or a full commit id"
                .into(),
            Refusal::Lacks { remote, .. } => format!(
                "give --base a branch, tag or commit {remote} has (git ls-remote --heads --tags \
                 {remote} lists its branches and tags)"
            ),
            Refusal::NotOnRemote { remote, commit } => format!(
                "a card starts from a commit {remote} has: push it first (git push {remote} \
                 {commit}:refs/heads/<branch>), or, when {remote} has it on a branch this \
                 repository has not fetched, run git fetch {remote}; then run the command again"
            ),
            Refusal::NoHead { .. } | Refusal::BadHead { .. } => {
                "name the base explicitly with worktree.base.ref (e.g. refs/heads/main)".into()
            }
        }]
    }
}

/// The base a tree checked out on a kept branch really starts from: the fetched
/// base `fetched` when it is an ancestor of the tree's HEAD, else their merge base (`fetched`
/// itself when they share no history or HEAD cannot be read: nothing better is known).
pub(super) fn base_of_kept_branch(tree: &Path, fetched: &str) -> String {
    let Some(tip) = git::head_oid(tree) else {
        return fetched.to_owned();
    };
    if git::is_ancestor(tree, fetched, &tip) {
        return fetched.to_owned();
    }
    git::merge_base(tree, fetched, &tip).unwrap_or_else(|| fetched.to_owned())
}

/// How many commits of the base's remote-tracking ref ([`tracking_ref_of`] the record, as
/// last fetched) the tree's HEAD lacks; `None` when either cannot be read.
pub(crate) fn behind(tree: &Path, rec: &crate::state::Record) -> Option<u64> {
    let tracking = tracking_ref_of(&rec.base_remote, &rec.base_ref)?;
    // Program-made operands: `HEAD..` first, so nothing can read as an option.
    let args = ["rev-list", "--count", &format!("HEAD..{tracking}"), "--"];
    let out = git::raw_no_replace(tree, args.map(Into::into).to_vec(), None).ok()?;
    String::from_utf8_lossy(&out).trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_request_head_is_kept_outside_the_remote_tracking_refs() {
        let kept = |r| tracking_ref_of("origin", r);
        assert_eq!(
            kept("refs/heads/main").as_deref(),
            Some("refs/remotes/origin/main")
        );
        assert_eq!(
            kept("refs/pull/7/head").as_deref(),
            Some("refs/kardwt/remotes/origin/pull/7/head")
        );
        assert_eq!(
            kept("refs/merge-requests/7/head").as_deref(),
            Some("refs/kardwt/remotes/origin/merge-requests/7/head")
        );
        for none in [
            "refs/tags/v1",
            "refs/pull/07/head",
            "refs/pull/7/merge",
            "refs/pulls",
        ] {
            assert_eq!(kept(none), None, "{none}");
        }
    }

    #[test]
    fn a_base_git_would_not_take_is_a_bad_name_and_a_usage_error() {
        assert_eq!(
            Asked::parse("release/1.2").unwrap(),
            Asked::Name("release/1.2".into())
        );
        let fail = Asked::parse("-x").unwrap_err();
        assert_eq!(fail.code, Code::Usage);
        let Some(Refusal::BadName { name, .. }) = fail.kind::<Refusal>() else {
            panic!("not a bad name: {fail:?}");
        };
        assert_eq!(name, "-x");
        assert_eq!(
            Asked::parse("pr/12").unwrap(),
            Asked::Pr {
                shown: "pr/12".into(),
                number: 12
            }
        );
        for bad in [
            "pr/0",
            "pr/012",
            "pr/+1",
            "pr/-1",
            "pr/1x",
            "pr/",
            "pr/99999999999999999999",
        ] {
            let fail = Asked::parse(bad).unwrap_err();
            assert_eq!(fail.code, Code::Usage, "{bad}");
        }
        assert!(matches!(
            Asked::parse("refs/remotes/origin/x")
                .unwrap_err()
                .kind::<Refusal>(),
            Some(Refusal::BadName { .. })
        ));
    }
}
