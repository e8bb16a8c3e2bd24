//! Which hooks a tree's preparation and cleanup run: the programs resolved (committed helpers
//! only where trusted for the tree's commit).
use std::path::PathBuf;

use anyhow::Result;

use crate::config::Config;
use crate::context::Context;
use crate::sandbox;

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
