//! The bare layout (`git clone --bare <url> project/.git`, cards beside it): which bare
//! repositories have it, and what kardwt reads there instead of a main worktree's files (the
//! rules committed in the base commit).
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::Repo;

/// How the repository is laid out around its common dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A main worktree (the base) holds the rules and the files shared into cards.
    Checkout,
    /// `git clone --bare <url> <project>/.git` with the cards' trees beside it in `<project>`:
    /// no main worktree. The rules come from the base commit, shared files from the directory
    /// `kardwt.sharedFrom` names; nothing is read from or written to `<project>` itself.
    Bare { project: PathBuf },
}

/// The project directory of a bare common dir named `.git` (`git clone --bare <url>
/// project/.git`); `None` for any other bare repository (`foo.git`), which has no place for
/// cards kardwt could assume.
pub(super) fn bare_project(common_dir: &Path) -> Option<PathBuf> {
    (common_dir.file_name()? == ".git").then(|| common_dir.parent().map(Path::to_path_buf))?
}

impl Repo {
    /// The directory relative paths of git config (`kardwt.root`, `kardwt.sharedFrom`…) are
    /// resolved against: the base, or in the bare layout the project directory.
    pub(crate) fn project_dir(&self) -> &Path {
        match &self.layout {
            Layout::Checkout => &self.base,
            Layout::Bare { project } => project,
        }
    }

    /// Is this the bare layout (no main worktree)?
    pub(crate) fn is_bare_layout(&self) -> bool {
        matches!(self.layout, Layout::Bare { .. })
    }

    /// The bytes of the regular file `name` at the root of `commit`'s tree: `Ok(None)` when
    /// there is none; an error when it is something else (a symlink, a directory) or larger
    /// than `max` bytes.
    pub(crate) fn committed_file(
        &self,
        commit: &str,
        name: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>> {
        use gix::object::tree::EntryKind;
        let id = gix::ObjectId::from_hex(commit.as_bytes())
            .with_context(|| format!("{commit} is not an object id"))?;
        let tree = self
            .gix
            .find_commit(id)
            .with_context(|| format!("could not read the commit {commit}"))?
            .tree()
            .with_context(|| format!("could not read the tree of {commit}"))?;
        let Some(entry) = tree.find_entry(name) else {
            return Ok(None);
        };
        if !matches!(
            entry.mode().kind(),
            EntryKind::Blob | EntryKind::BlobExecutable
        ) {
            anyhow::bail!("{name} in commit {commit} is not a regular file");
        }
        let oid = entry.object_id();
        let size = self
            .gix
            .find_header(oid)
            .with_context(|| format!("could not read {name} in commit {commit}"))?
            .size();
        if size > max {
            anyhow::bail!("{name} in commit {commit} is larger than {max} bytes");
        }
        let blob = self
            .gix
            .find_object(oid)
            .with_context(|| format!("could not read {name} in commit {commit}"))?;
        Ok(Some(blob.data.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bare_common_dir_named_dot_git_has_a_project() {
        assert_eq!(
            bare_project(Path::new("/w/project/.git")),
            Some(PathBuf::from("/w/project"))
        );
        assert_eq!(bare_project(Path::new("/w/project.git")), None);
        assert_eq!(bare_project(Path::new("/w/project/.git/modules/x")), None);
    }
}
