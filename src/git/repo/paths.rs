//! Paths made absolute the way worktrees are compared: what exists canonicalized, what does not
//! yet appended, a last component kept as given (a symlink to a worktree is not that worktree).
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Canonicalize a path that must exist, with a message naming it.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).with_context(|| format!("could not resolve {}", path.display()))
}

/// `path` made absolute with its parent resolved as [`absolutize`] does but its last
/// component kept as given, so a symlink there stays visible to the caller (a
/// symlink to a worktree is not that worktree). A last component of `..` (or none) is resolved.
pub(crate) fn absolutize_keep_last(path: &Path) -> PathBuf {
    keep_last_with(path, absolutize)
}

/// [`absolutize_keep_last`] with the parent resolved by `resolve_parent`.
fn keep_last_with(path: &Path, resolve_parent: impl FnOnce(&Path) -> PathBuf) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => resolve_parent(parent).join(name),
        _ => absolutize(&abs),
    }
}

/// [`absolutize_keep_last`] for many paths, each parent directory resolved once: a thousand
/// worktrees under one root cost one `realpath` of it, not a thousand (`list`).
#[derive(Default)]
pub(crate) struct Parents {
    resolved: std::collections::HashMap<PathBuf, PathBuf>,
}

impl Parents {
    /// `path` resolved as [`absolutize_keep_last`] resolves it.
    pub(crate) fn keep_last(&mut self, path: &Path) -> PathBuf {
        keep_last_with(path, |parent| match self.resolved.get(parent) {
            Some(p) => p.clone(),
            None => {
                let p = absolutize(parent);
                self.resolved.insert(parent.to_path_buf(), p.clone());
                p
            }
        })
    }
}

/// Canonicalize as much of `path` as exists and append the rest, so paths of directories that
/// do not exist yet compare equal to what they will be.
pub(crate) fn absolutize(path: &Path) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_resolve_as_absolutize_keep_last_does() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("real")).unwrap();
        std::os::unix::fs::symlink(real.join("real"), real.join("link")).unwrap();
        let mut parents = Parents::default();
        for p in ["link/a", "link/b", "link", "real/a", "missing/a", "link/.."] {
            let p = dir.path().join(p);
            assert_eq!(parents.keep_last(&p), absolutize_keep_last(&p), "{p:?}");
        }
        assert_eq!(parents.keep_last(&real.join("link/b")), real.join("real/b"));
        assert_eq!(parents.keep_last(&real.join("link")), real.join("link"));
    }

    #[test]
    fn absolutize_keeps_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(absolutize(&dir.path().join("a/b")), real.join("a/b"));
    }
}
