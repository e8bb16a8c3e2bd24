//! Which hooks a tree's preparation and cleanup run, and with what: the programs resolved
//! (committed helpers only where trusted for the tree's commit) and the `KARDWT_*` facts.
use std::path::PathBuf;

use anyhow::Result;

use crate::config::Config;
use crate::context::Context;
use crate::sandbox::{self, Facts};
use crate::state::Record;

/// Resolve the prepare hook's program, if one is configured (exit 2 when refused). Committed
/// helpers resolve only for a known `site` (the tree's commit); without one this is `None`
/// and [`super::Prep`] resolves them for the record's base commit before the hook runs.
pub fn prepare_program(cfg: &Config, site: Option<sandbox::Site<'_>>) -> Result<Option<PathBuf>> {
    Ok(match &cfg.prepare {
        Some(p) => sandbox::resolve_hook(&p.argv, &cfg.helpers, "worktree.prepare.argv", site)?,
        None => None,
    })
}

/// Refuse, before anything is created, hooks that would not run for a tree at `commit`
/// (committed helpers not trusted for it included); both hooks, so that a tree made now can
/// also be removed.
pub fn check_hooks(ctx: &Context, cfg: &Config, commit: Option<&str>) -> Result<()> {
    let site = commit.map(|commit| sandbox::Site {
        common_dir: &ctx.repo.common_dir,
        repo_dir: &ctx.repo.base,
        commit,
    });
    for (key, argv) in [
        (
            "worktree.prepare.argv",
            cfg.prepare.as_ref().map(|p| &p.argv),
        ),
        (
            "worktree.cleanup.argv",
            cfg.cleanup.as_ref().map(|c| &c.argv),
        ),
    ] {
        if let Some(argv) = argv {
            sandbox::resolve_hook(argv, &cfg.helpers, key, site)?;
        }
    }
    Ok(())
}

/// The site whose committed helpers prepare or clean the tree `rec` records: its base commit.
pub fn site_of<'a>(ctx: &'a Context, rec: &'a Record) -> sandbox::Site<'a> {
    sandbox::Site {
        common_dir: &ctx.repo.common_dir,
        repo_dir: &ctx.repo.base,
        commit: &rec.base_oid,
    }
}

/// The `KARDWT_*` facts of a record, for a hook run with the record's current reason.
pub fn facts(ctx: &Context, rec: &Record) -> Facts {
    Facts {
        card: rec.card.to_string(),
        board: rec.board.clone(),
        worktree: rec.path.clone(),
        base: ctx.base_shown(),
        common_dir: rec.common_dir.clone(),
        branch: rec.branch.clone(),
        base_oid: rec.base_oid.clone(),
        reason: rec.reason.as_str(),
        ports: rec.ports.clone(),
    }
}
