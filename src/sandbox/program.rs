//! Where a hook's program comes from: beneath `helpers.stable_root`, or the trusted copy of the
//! committed helpers (`helpers.from_repository`, see `trusted`) for the tree's commit; an
//! executable regular file, resolved before anything runs.
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{trusted, Unrunnable};
use crate::ground::error::Fail;

/// The tree a hook is for, when its program may come from the committed helpers: the
/// repository (its common dir, a directory git runs in) and the commit whose helpers run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Site<'a> {
    pub common_dir: &'a Path,
    pub repo_dir: &'a Path,
    pub commit: &'a str,
}

impl<'a> Site<'a> {
    /// The site whose committed helpers prepare or clean the tree `rec` records in `repo`: its
    /// base commit.
    pub(crate) fn of(repo: &'a crate::git::Repo, rec: &'a crate::state::Record) -> Site<'a> {
        Site {
            common_dir: &repo.common_dir,
            repo_dir: &repo.base,
            commit: &rec.base_oid,
        }
    }
}

/// Resolve a hook's program from where the rules say programs come from: beneath
/// `helpers.stable_root`, or the trusted copy of `helpers.from_repository` as committed at
/// `site.commit` (`Ok(None)` when no site is known yet: the caller resolves it once the
/// commit is). Refusals happen before anything runs.
pub(crate) fn resolve_hook(
    argv: &[String],
    helpers: &crate::config::Helpers,
    key: &str,
    site: Option<Site<'_>>,
) -> Result<Option<PathBuf>, Fail> {
    let Some(dir) = &helpers.from_repository else {
        return resolve_program(argv, helpers.stable_root.as_deref(), key).map(Some);
    };
    let Some(site) = site else {
        return Ok(None);
    };
    let argv0 = argv.first().ok_or_else(|| {
        Fail::from(Unrunnable::EmptyArgv {
            key: key.to_owned(),
        })
    })?;
    let (root, files) = trusted::trusted_root(site.common_dir, site.repo_dir, site.commit, dir)?;
    let program = trusted::program_in(&root, &files, argv0, key, dir)?;
    // The store's path is the user's and need not be UTF-8: it is checked as a path.
    resolve_path(&program, Some(&root), key).map(Some)
}

/// Resolve `argv[0]` and check it lies beneath `stable_root` as an executable regular file.
/// Refusals are usage errors (exit 2) and happen before anything runs.
pub(super) fn resolve_program(
    argv: &[String],
    stable_root: Option<&Path>,
    key: &str,
) -> Result<PathBuf, Fail> {
    let program = argv.first().ok_or_else(|| {
        Fail::from(Unrunnable::EmptyArgv {
            key: key.to_owned(),
        })
    })?;
    resolve_path(Path::new(program), stable_root, key)
}

/// [`resolve_program`] for a program given as a path.
fn resolve_path(path: &Path, stable_root: Option<&Path>, key: &str) -> Result<PathBuf, Fail> {
    let program = path.display().to_string();
    let root = stable_root.ok_or_else(|| {
        Fail::from(Unrunnable::NoStableRoot {
            key: key.to_owned(),
        })
    })?;
    // Why, then how: a relative argv[0] is shown where it would go beneath the root.
    let example = root.join(path.file_name().unwrap_or_default());
    let refuse = |why: String| {
        Fail::from(Unrunnable::Refused {
            key: key.to_owned(),
            program: program.clone(),
            why,
            root: root.to_owned(),
            example: example.clone(),
        })
    };
    if !root.is_absolute() {
        return Err(refuse(format!(
            "stable_root {} is not absolute",
            root.display()
        )));
    }
    if !path.is_absolute() {
        return Err(refuse("argv[0] is not an absolute path".into()));
    }
    let root = std::fs::canonicalize(root)
        .map_err(|e| refuse(format!("stable_root {}: {e}", root.display())))?;
    let resolved =
        std::fs::canonicalize(path).map_err(|e| refuse(format!("cannot resolve it: {e}")))?;
    if !resolved.starts_with(&root) {
        return Err(refuse(format!(
            "it resolves to {}, outside {}",
            resolved.display(),
            root.display()
        )));
    }
    let meta = std::fs::metadata(&resolved).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "{} is not a regular file",
            resolved.display()
        )));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(refuse(format!("{} is not executable", resolved.display())));
    }
    Ok(resolved)
}
