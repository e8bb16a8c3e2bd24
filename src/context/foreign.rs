//! Records for worktrees kardwt did not create itself (the post-checkout hook, `prepare
//! --path`, `adopt`, the runners): which card such a tree stands for, and which base it names
//! (never silently empty).
use std::path::Path;
use std::time::Instant;

use crate::config::Config;
use crate::context::Context;
use crate::git;
use crate::ground::card::CardId;
use crate::state::{Record, State};

/// The card a worktree created outside `git kardwt add` stands for: `<id>` when its branch is
/// `card/<id>`, else its admin dir name made a valid id, with `-2`, `-3`… on a clash with a
/// card another record already claims.
pub(crate) fn derive_card(
    entries: &[crate::verify::Entry],
    admin: &Path,
    head: Option<&crate::git::Head>,
) -> CardId {
    if let Some(crate::git::Head::Branch(b)) = head {
        if let Some(card) = CardId::from_branch(b) {
            return card;
        }
    }
    let id = admin
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = CardId::sanitize(&id);
    let taken = |c: &CardId| !crate::verify::claims(entries, c.as_str()).is_empty();
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| CardId::sanitize(&format!("{}-{n}", base.as_str())))
        .find(|c| !taken(c))
        .unwrap_or(base)
}

/// How long a record written outside `add` waits for the remote to name its HEAD, at most
/// (within the action timeout): `outside_record`'s callers do not hand it their deadline.
pub(super) const REMOTE_ASK_SECS: u64 = 20;

/// The base a record written by the hook, `adopt` or `prepare --path` names, never silently empty:
/// the configured `base.ref`, else `refs/remotes/<remote>/HEAD`, else what the remote says its
/// HEAD is (asked once, until `deadline`), else `init.defaultBranch` when the remote has it (its
/// remote-tracking ref exists); and the merge base of HEAD with it. Falls back to HEAD itself
/// when the remote's branch is not known locally. An empty ref means all of these failed:
/// [`empty_base_why`] says so.
pub(crate) fn recorded_base(
    repo: &crate::git::Repo,
    cfg: &Config,
    worktree: &Path,
    deadline: Instant,
) -> (String, String) {
    let remote = &cfg.base.remote;
    let tracking = |r: &str| {
        format!(
            "refs/remotes/{remote}/{}",
            r.strip_prefix("refs/heads/").unwrap_or(r)
        )
    };
    let sound = |r: String| crate::config::check_branch_ref(&r).is_ok().then_some(r);
    let base_ref = cfg
        .base
        .git_ref
        .clone()
        .or_else(|| {
            let head = format!("refs/remotes/{remote}/HEAD");
            repo.symbolic_target(&head).and_then(|t| {
                t.strip_prefix(&format!("refs/remotes/{remote}/"))
                    .map(|b| format!("refs/heads/{b}"))
            })
        })
        .or_else(|| {
            // `git remote add` + `git push -u` leaves no origin/HEAD: ask the remote.
            git::ls_remote_head(worktree, remote, Some(deadline))
                .ok()
                .filter(|o| o.ok)
                .and_then(|o| git::symref_head(&o.stdout))
                .and_then(sound)
        })
        .or_else(|| {
            git::config_get(worktree, "init.defaultBranch")
                .map(|b| format!("refs/heads/{b}"))
                .and_then(sound)
                .filter(|r| git::ref_exists(worktree, &tracking(r)))
        });
    // A tree made at the base's tip (the usual case) needs no git to say so.
    let merge_base = base_ref.as_ref().and_then(|r| {
        let tracking = tracking(r);
        repo.head_at_ref(worktree, &tracking)
            .or_else(|| git::merge_base(worktree, "HEAD", &tracking))
    });
    let oid = merge_base.or_else(|| git::head_oid(worktree));
    (base_ref.unwrap_or_default(), oid.unwrap_or_default())
}

/// Why a record names no base ref, for `status` and `gc` (pure): every way of finding one
/// failed when the record was written.
pub(crate) fn empty_base_why(remote: &str) -> String {
    format!(
        "no base ref was found when the record was written (no worktree.base.ref, no refs/remotes/{remote}/HEAD, {remote} named no HEAD, init.defaultBranch is unset or {remote} lacks it); set worktree.base.ref, or run git remote set-head {remote} --auto, then git kardwt prepare --path <worktree> records it"
    )
}

/// A fresh record (state `preparing`) for a worktree kardwt did not create itself.
pub(crate) fn outside_record(
    ctx: &Context,
    cfg: &Config,
    card: &CardId,
    path: &Path,
    head: Option<&crate::git::Head>,
    origin: crate::state::Origin,
    reason: crate::state::Reason,
) -> Record {
    let ask = cfg.action_timeout_seconds.min(REMOTE_ASK_SECS);
    let (base_ref, base_oid) = recorded_base(
        &ctx.repo,
        cfg,
        path,
        crate::context::after(Instant::now(), ask),
    );
    let now = crate::sys::now();
    let branch = match head {
        Some(crate::git::Head::Branch(b)) => b.clone(),
        _ => String::new(),
    };
    Record {
        schema: 1,
        card: card.clone(),
        board: String::new(),
        branch,
        path: path.to_path_buf(),
        common_dir: ctx.repo.common_dir.clone(),
        base_remote: cfg.base.remote.clone(),
        base_ref,
        base_oid,
        state: State::Preparing,
        origin,
        reason,
        created_at: now.clone(),
        updated_at: now,
        config_fingerprint: cfg.fingerprint(),
        links: Vec::new(),
        copies: Vec::new(),
        copy_method: String::new(),
        ports: Vec::new(),
        last_hook: None,
        prepare_cache: None,
    }
}
