//! What removal does with a card's branch: kept unless `--delete-branch`, and then deleted only
//! when merged into the recorded base (or `--force`) and no commit on it or named by its reflog
//! would be lost ([`crate::git::may_delete_branch`], the decision `gc --branches` uses too).
use crate::context::Context;
use crate::git;
use crate::lifecycle::step::Step;
use crate::state::Record;
use crate::sys;

/// What removal was asked to do with the card's branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchAsked {
    /// Keep it (no `--delete-branch`).
    Keep,
    /// `--delete-branch`: delete it when merged into the recorded base.
    Delete,
    /// `--delete-branch --force`: merged or not.
    DeleteForced,
}

/// Delete the branch when asked, merged into the recorded base (or forced), and nothing on it
/// would be lost; otherwise keep it, saying why and how to delete it by hand.
pub fn branch_step(
    repo_lock: &sys::RepoLock,
    ctx: &Context,
    rec: &Record,
    asked: BranchAsked,
) -> Step {
    let step = |ok, detail: String| Step {
        step: "branch",
        ms: None,
        ok,
        detail,
    };
    let branch = &rec.branch;
    if branch.is_empty() {
        return step(true, "no branch recorded".into());
    }
    if asked == BranchAsked::Keep {
        return step(true, format!("{branch} kept"));
    }
    let merged = merged_into_base(ctx, rec);
    if !merged && asked != BranchAsked::DeleteForced {
        return step(
            false,
            format!(
                "{branch} kept: not merged into {} (use --force to delete it anyway, once every \
                 commit on it is on another ref)",
                rec.base_ref
            ),
        );
    }
    let dir = &ctx.repo.base;
    let base = base_of(ctx, rec);
    let base = base
        .as_ref()
        .map(|(oid, name)| (oid.as_str(), name.as_str()));
    if let Err(lose) = git::may_delete_branch(dir, base, branch) {
        let quoted = crate::ground::quote::sh_path(dir);
        return step(
            false,
            format!(
                "{branch} kept: {lose}; check it with git -C {quoted} log {branch} (and git -C \
                 {quoted} reflog {branch}), then delete it by hand: git -C {quoted} branch -D \
                 {branch}"
            ),
        );
    }
    match git::branch_delete(repo_lock, dir, branch) {
        Ok(_) => step(
            true,
            format!("{branch} deleted{}", if merged { "" } else { " (forced)" }),
        ),
        Err(e) => step(false, format!("{branch} kept: {e:#}")),
    }
}

/// The base whose commits' changes count as kept: the recorded base's remote-tracking ref, or
/// the recorded base itself when it is a ref outside kardwt's branches. `(commit, name)`.
fn base_of(ctx: &Context, rec: &Record) -> Option<(String, String)> {
    let tracking = crate::config::tracking_ref_of(&rec.base_remote, &rec.base_ref);
    let own = rec
        .base_ref
        .starts_with("refs/")
        .then(|| rec.base_ref.clone())
        .filter(|r| !r.starts_with(&format!("refs/heads/{}", git::CARD_BRANCHES)));
    tracking.into_iter().chain(own).find_map(|r| {
        let oid = git::ref_commit(&ctx.repo.base, &r)?;
        let name = r
            .strip_prefix("refs/remotes/")
            .or_else(|| r.strip_prefix("refs/heads/"))
            .unwrap_or(&r)
            .to_owned();
        Some((oid, name))
    })
}

/// Is the branch's tip contained in the recorded base (its remote-tracking ref, or the
/// recorded base commit)?
pub fn merged_into_base(ctx: &Context, rec: &Record) -> bool {
    let branch = format!("refs/heads/{}", rec.branch);
    let tracking = crate::config::tracking_ref_of(&rec.base_remote, &rec.base_ref);
    tracking
        .into_iter()
        .chain((!rec.base_oid.is_empty()).then(|| rec.base_oid.clone()))
        .any(|base| git::is_ancestor(&ctx.repo.base, &branch, &base))
}
