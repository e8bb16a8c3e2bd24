//! The base a new tree starts from and the `git worktree add` that makes it (SPEC R-ADD,
//! R-BASE): fetch exactly the base ref the rules or the remote's HEAD name, and check out a
//! card's tree at it, marked so that kardwt's own post-checkout hook leaves it to the caller.
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::config::{CheckoutMode, Config};
use crate::ground::card::CardId;
use crate::ground::error::usage;
use crate::{git, git::repo, sys::lock};

/// The variable `add` sets on its own `git worktree add`, naming the target path, so that
/// kardwt's post-checkout hook leaves that worktree to `add`.
pub const ADD_MARKER: &str = "KARDWT_ADD_TARGET";

/// `git worktree add` of card `card`'s tree at `path`, the step `add` and `doctor --try` share:
/// a new branch `card/<id>` at `oid`, or the kept branch as it is; `--no-checkout` in delegated
/// mode; marked so that kardwt's post-checkout hook leaves it to the caller.
pub fn add_worktree_at(
    repo_lock: &lock::RepoLock,
    repo: &repo::Repo,
    cfg: &Config,
    card: &CardId,
    path: &Path,
    oid: &str,
    deadline: Instant,
) -> Result<git::Output> {
    let branch = card.branch();
    let existing = repo.branch_exists(&branch);
    let new = git::NewWorktree {
        path,
        no_checkout: cfg.checkout.mode == CheckoutMode::Delegated,
        new_branch: (!existing).then_some(branch.as_str()),
        start: if existing { &branch } else { oid },
        marker: ADD_MARKER,
    };
    git::worktree_add(repo_lock, &repo.base, &new, Some(deadline))
}

/// `--base NAME` as a full branch ref: `main` and `refs/heads/main` alike; anything git would
/// not take as a branch name (an option, `..`, a tag's full ref) is a usage error (exit 2).
pub fn branch_ref(name: &str) -> Result<String> {
    let full = if name.starts_with("refs/") {
        name.to_owned()
    } else {
        format!("refs/heads/{name}")
    };
    crate::config::check_branch_ref(&full).map_err(|why| {
        usage(format!("--base {}: {why}", crate::config::quote(name)))
            .hint("--base takes a branch the remote has, e.g. --base release/1.2")
    })?;
    Ok(full)
}

/// Fetch exactly the base ref and return it with the fetched commit's object id.
pub fn fetch_base(
    repo_lock: &lock::RepoLock,
    repo: &crate::git::repo::Repo,
    cfg: &Config,
    asked: Option<&str>,
    deadline: Instant,
) -> Result<(String, String)> {
    let base = &repo.base;
    let remote = &cfg.base.remote;
    let base_ref = match (asked, cfg.base.git_ref.as_deref()) {
        (Some(r), _) | (None, Some(r)) => r.to_owned(),
        (None, None) => remote_head(base, remote, deadline)?,
    };
    let branch = base_ref.strip_prefix("refs/heads/").unwrap_or(&base_ref);
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let refspec = format!("+{base_ref}:{tracking}");
    let out = git::fetch_ref(repo_lock, base, remote, &refspec, Some(deadline))?;
    if !out.ok {
        // R-DISPATCH 9: one line naming the cause, one hint naming the fix.
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), &base_ref, &out.stderr).into());
    }
    let oid = repo
        .ref_oid(&tracking)
        .with_context(|| format!("could not read {tracking} after fetching it"))?;
    Ok((base_ref, oid))
}

/// The branch the remote's HEAD names, as the remote reports it now.
pub fn remote_head(base: &Path, remote: &str, deadline: Instant) -> Result<String> {
    let out = git::ls_remote_head(base, remote, Some(deadline))?;
    if !out.ok {
        let url = git::remote_url(base, remote);
        return Err(git::remote_failure(remote, url.as_deref(), "its HEAD", &out.stderr).into());
    }
    let head = git::symref_head(&out.stdout).ok_or_else(|| {
        usage(format!("the remote {remote} reports no HEAD branch"))
            .hint("name the base explicitly with worktree.base.ref (e.g. refs/heads/main)")
    })?;
    // What the remote says is outside input too (SPEC R-TRUST 1).
    crate::config::check_branch_ref(&head).map_err(|why| {
        usage(format!(
            "the remote {remote} names HEAD {}: {why}",
            crate::config::quote(&head)
        ))
        .hint("name the base explicitly with worktree.base.ref (e.g. refs/heads/main)")
    })?;
    Ok(head)
}

/// The base a tree checked out on a kept branch really starts from (SPEC §23.5): the fetched
/// base `fetched` when it is an ancestor of the tree's HEAD, else their merge base (`fetched`
/// itself when they share no history or HEAD cannot be read: nothing better is known).
pub fn base_of_kept_branch(tree: &Path, fetched: &str) -> String {
    let Some(tip) = git::head_oid(tree) else {
        return fetched.to_owned();
    };
    if git::is_ancestor(tree, fetched, &tip) {
        return fetched.to_owned();
    }
    git::merge_base(tree, fetched, &tip).unwrap_or_else(|| fetched.to_owned())
}

/// How many commits of the base's remote-tracking ref (`refs/remotes/<remote>/<branch>` of
/// the record, as last fetched) the tree's HEAD lacks; `None` when either cannot be read.
pub fn behind(tree: &Path, rec: &crate::state::record::Record) -> Option<u64> {
    let branch = rec.base_ref.strip_prefix("refs/heads/")?;
    let tracking = format!("refs/remotes/{}/{branch}", rec.base_remote);
    // Program-made operands: `HEAD..` first, so nothing can read as an option.
    let args = ["rev-list", "--count", &format!("HEAD..{tracking}"), "--"];
    let out = git::raw_no_replace(tree, args.map(Into::into).to_vec(), None).ok()?;
    String::from_utf8_lossy(&out).trim().parse().ok()
}
