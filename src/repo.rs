//! Locating the repository with gix: the common dir (canonicalized: gix leaves it as
//! `…/worktrees/x/../..`), the base (main worktree), the worktree the caller stands in, the
//! registered linked worktrees and their admin dirs. Reads only; never mutates.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::usage;

/// The repository kardwt works on, as seen from the caller's directory.
pub struct Repo {
    /// `git rev-parse --git-common-dir`, absolute and canonical.
    pub common_dir: PathBuf,
    /// The main worktree (the trusted checkout), canonical.
    pub base: PathBuf,
    /// Top level of the worktree the caller stands in, canonical, if any.
    pub current: Option<PathBuf>,
    gix: gix::Repository,
}

/// One linked worktree as git administers it.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The admin dir name (`<common dir>/worktrees/<id>`).
    pub id: String,
    /// The admin dir, canonical.
    pub admin: PathBuf,
    /// Where the admin dir's `gitdir` says the worktree is (without `/.git`), if readable.
    pub path: Option<PathBuf>,
    pub locked: bool,
    /// Directory gone (or `gitdir` unreadable) and not locked: `git worktree prune` would drop it.
    pub prunable: bool,
}

/// What a worktree's HEAD names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// A branch, short name (`card/42`).
    Branch(String),
    /// A detached HEAD at this object id.
    Detached(String),
}

impl Head {
    /// The branch or the object id, as `status` and `verify --json` print it.
    pub fn display(&self) -> &str {
        match self {
            Head::Branch(b) | Head::Detached(b) => b,
        }
    }
}

impl Repo {
    /// Find the repository containing `cwd`.
    pub fn discover(cwd: &Path) -> Result<Repo> {
        let gix = gix::discover(cwd).map_err(|e| {
            usage(format!("not in a git repository ({}): {e}", cwd.display()))
                .hint("run git kardwt from inside the repository whose worktrees it manages")
        })?;
        let common_dir = canonical(gix.common_dir())?;
        let current = match gix.workdir() {
            Some(w) => Some(canonical(w)?),
            None => None,
        };
        let base = if gix.kind() != gix::repository::Kind::LinkedWorkTree {
            current.clone()
        } else if common_dir.file_name().is_some_and(|n| n == ".git") {
            common_dir.parent().map(Path::to_path_buf)
        } else {
            let main = gix
                .main_repo()
                .context("could not open the main worktree")?;
            main.workdir().map(canonical).transpose()?
        };
        let base = base.ok_or_else(|| {
            usage(format!(
                "the repository at {} has no main worktree (it is bare)",
                common_dir.display()
            ))
            .hint("git kardwt needs a non-bare base checkout to create worktrees from")
        })?;
        Ok(Repo {
            common_dir,
            base,
            current,
            gix,
        })
    }

    /// A git config value as a string, if set.
    pub fn config_string(&self, key: &str) -> Option<String> {
        self.gix
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// Does `refs/heads/<branch>` exist?
    pub fn branch_exists(&self, branch: &str) -> bool {
        matches!(
            self.gix
                .try_find_reference(format!("refs/heads/{branch}").as_str()),
            Ok(Some(_))
        )
    }

    /// The directory holding admin dirs of linked worktrees.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.common_dir.join("worktrees")
    }

    /// Every linked worktree git lists (admin dirs with a `gitdir` file), sorted by admin dir.
    pub fn linked(&self) -> Result<Vec<Linked>> {
        let proxies = self
            .gix
            .worktrees()
            .context("could not list the repository's worktrees")?;
        Ok(proxies
            .iter()
            .map(|p| {
                let admin = p.git_dir().to_path_buf();
                let admin = std::fs::canonicalize(&admin).unwrap_or(admin);
                Linked {
                    id: admin
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    path: p
                        .base()
                        .ok()
                        .map(|b| std::fs::canonicalize(&b).unwrap_or(b)),
                    locked: p.is_locked(),
                    prunable: p.is_prunable(),
                    admin,
                }
            })
            .collect())
    }
}

/// Canonicalize a path that must exist, with a message naming it.
pub fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).with_context(|| format!("could not resolve {}", path.display()))
}

/// Canonicalize as much of `path` as exists and append the rest, so paths of directories that
/// do not exist yet compare equal to what they will be.
pub fn absolutize(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = abs.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
}

/// Read a worktree's HEAD from its admin dir (`ref: refs/heads/x` or an object id).
pub fn read_head(admin: &Path) -> Option<Head> {
    let text = std::fs::read_to_string(admin.join("HEAD")).ok()?;
    parse_head(&text)
}

/// Parse the text of a HEAD file.
pub fn parse_head(text: &str) -> Option<Head> {
    let text = text.trim();
    if let Some(r) = text.strip_prefix("ref:") {
        let r = r.trim();
        return Some(Head::Branch(
            r.strip_prefix("refs/heads/").unwrap_or(r).to_owned(),
        ));
    }
    (!text.is_empty() && text.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| Head::Detached(text.to_owned()))
}

/// Read the `gitdir: X` line of a worktree's `.git` file, resolved against the worktree.
pub fn read_dot_git(worktree: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(worktree.join(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        assert_eq!(
            parse_head("ref: refs/heads/card/42\n"),
            Some(Head::Branch("card/42".into()))
        );
        assert_eq!(
            parse_head("0123abcd\n"),
            Some(Head::Detached("0123abcd".into()))
        );
        assert_eq!(parse_head("garbage here"), None);
        assert_eq!(parse_head(""), None);
    }

    #[test]
    fn absolutize_keeps_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(absolutize(&dir.path().join("a/b")), real.join("a/b"));
    }
}
