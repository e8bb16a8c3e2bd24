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
    /// Find the repository containing `cwd`, or the one git's own environment names:
    /// `git --git-dir=X kardwt …` exports `GIT_DIR` (and `GIT_WORK_TREE`) to us, and acts on X
    /// exactly as `git --git-dir=X worktree add` would (R-TRUST 11).
    pub fn discover(cwd: &Path) -> Result<Repo> {
        let found = if std::env::var_os("GIT_DIR").is_some() {
            gix::discover_with_environment_overrides(cwd)
        } else {
            gix::discover(cwd)
        };
        let gix = found.map_err(|e| {
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

    /// The commit a ref points at (peeled), read without starting git.
    pub fn ref_oid(&self, name: &str) -> Result<String> {
        let reference = self
            .gix
            .try_find_reference(name)
            .with_context(|| format!("could not read {name}"))?
            .with_context(|| format!("{name} does not exist"))?;
        let id = reference
            .into_fully_peeled_id()
            .with_context(|| format!("could not peel {name}"))?;
        Ok(id.to_string())
    }

    /// Is the object with this hex id in the object database?
    pub fn has_object(&self, hex: &str) -> bool {
        gix::ObjectId::from_hex(hex.as_bytes()).is_ok_and(|id| self.gix.has_object(id))
    }

    /// The directory holding admin dirs of linked worktrees.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.common_dir.join("worktrees")
    }

    /// Every linked worktree git lists (admin dirs with a `gitdir` file), sorted by admin dir.
    ///
    /// Read directly, the way git itself decides (`gitdir` present; prunable when it names a
    /// `.git` that is gone and the entry is not locked): gix's worktree proxies read the same
    /// files several times each, which `list` and `verify` pay for once per worktree.
    pub fn linked(&self) -> Result<Vec<Linked>> {
        let dir = self.worktrees_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("could not list {}", dir.display())),
        };
        let mut out: Vec<Linked> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let admin = e.path();
                let gitdir = std::fs::read_to_string(admin.join("gitdir")).ok()?;
                let dot_git = admin.join(gitdir.trim_end_matches(['\n', '\r']));
                let locked = admin.join("locked").symlink_metadata().is_ok();
                let prunable = !locked && dot_git.symlink_metadata().is_err();
                let path = dot_git.parent().map(|p| {
                    if is_plain_absolute(p) {
                        p.to_path_buf()
                    } else {
                        std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
                    }
                });
                Some(Linked {
                    id: e.file_name().to_string_lossy().into_owned(),
                    admin,
                    path,
                    locked,
                    prunable,
                })
            })
            .collect();
        out.sort_by(|a, b| a.admin.cmp(&b.admin));
        Ok(out)
    }
}

/// An absolute path without `.` or `..` components (git writes such paths; others are
/// resolved before they are compared).
fn is_plain_absolute(p: &Path) -> bool {
    p.is_absolute()
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        })
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
