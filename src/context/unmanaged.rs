//! Where kardwt's hooks have nothing to do and leave git's operation as it was: a repository
//! with no main worktree kardwt can find (bare, or a git dir elsewhere whose checkout kardwt
//! has not seen) or one kardwt cannot open, unless
//! kardwt is set up there (then the hook fails closed, as before). Such a hook exits 0, deletes
//! nothing, and leaves a note in the event log, and on stderr only when that is a terminal.
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::cli::GlobalArgs;
use crate::context::Context;
use crate::git::{self, NoRepo};
use crate::ground::error::Fail;

/// The repository the hook `hook` acts in, or `None` where kardwt has nothing to do there
/// (noted). An error only where kardwt is set up but cannot read the repository.
pub(crate) fn hook_context(global: GlobalArgs, hook: &str) -> Result<Option<Context>> {
    let err = match Context::new(global) {
        Ok(ctx) => return Ok(Some(ctx)),
        Err(err) => err,
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let no_repo = err
        .chain()
        .find_map(|e| e.downcast_ref::<Fail>())
        .and_then(|f| f.kind::<NoRepo>());
    let (common_dir, why) = match no_repo {
        Some(NoRepo::Bare { common_dir }) => (
            Some(common_dir.clone()),
            "the repository has no main worktree (it is bare)".to_owned(),
        ),
        Some(NoRepo::Elsewhere { common_dir }) => (
            Some(common_dir.clone()),
            "the repository's git dir is elsewhere and names no main worktree (core.worktree \
             is not set)"
                .to_owned(),
        ),
        _ => (
            git::common_dir_of(&cwd),
            format!("kardwt cannot read the repository ({err:#})"),
        ),
    };
    if common_dir
        .as_deref()
        .is_some_and(|c| set_up_for_kardwt(c, &cwd))
    {
        return Err(err);
    }
    note(common_dir.as_deref(), &cwd, hook, &why);
    Ok(None)
}

/// Has kardwt been set up in the repository whose common dir is `common_dir`: its own config
/// names a `kardwt.*` setting, or a linked worktree holds kardwt's record?
fn set_up_for_kardwt(common_dir: &Path, dir: &Path) -> bool {
    let recorded = std::fs::read_dir(common_dir.join("worktrees")).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            crate::state::record_path(&e.path())
                .symlink_metadata()
                .is_ok()
        })
    });
    recorded || git::local_config_names_kardwt(dir)
}

/// Note that the hook `hook` left git's operation as it was at `path`, and why: in the event
/// log of `common_dir` (when known), and on stderr when it is a terminal.
pub(crate) fn note(common_dir: Option<&Path>, path: &Path, hook: &str, why: &str) {
    let said = format!("{hook}: nothing to do: {why}");
    if let Some(common_dir) = common_dir {
        crate::state::Cards::at(common_dir).log(
            crate::state::EventKind::HookNoop,
            "",
            path,
            &said,
            Duration::ZERO,
        );
    }
    if std::io::stderr().is_terminal() {
        eprintln!("kardwt: {said}; git goes on as without kardwt");
    }
}
