//! kardwt's own walk of a worktree, confirming `git status` before `remove` or `gc` deletes it:
//! the files git should have listed and did not. git treats a directory whose
//! read fails as empty (a failed `getdents` is silent, and git still exits 0), so one failed
//! read inside `git status` hides the untracked work beneath it, from git's own check in
//! `git worktree remove` too. This walk reads, in kardwt's own process where a failed read is
//! an error, every directory git does not ignore, and names each regular file or symlink that
//! is neither in the index nor in git's answer (listed or ignored). Whatever git missed, for
//! any reason, makes the tree dirty; a failed read here refuses. It trusts git only in the safe
//! direction: a directory git's ignore listing lost is walked, and an index entry git's index
//! listing lost makes its file look untracked.
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::git::{IndexEntry, StatusEntry};

/// What git said about the tree: its index, and `git status --ignored=matching` (a path per
/// entry; a directory ends with `/`).
pub(super) struct Known {
    tracked: HashSet<Vec<u8>>,
    gitlinks: HashSet<Vec<u8>>,
    listed: HashSet<Vec<u8>>,
    ignored: HashSet<Vec<u8>>,
}

/// What kind of entry the walk met (from the directory entry, never following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    /// A regular file or a symlink: what git status reports.
    File,
    /// A FIFO, socket or device: git never reports one, and nothing in it is work to lose.
    Other,
}

/// What to do with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Visit {
    /// Known to git (tracked, listed, ignored) or nothing git reports.
    Skip,
    /// A directory git neither ignores nor listed whole: read it.
    Descend,
    /// A file git should have listed and did not.
    Unseen,
}

impl Known {
    pub(super) fn new(index: &[IndexEntry], status: &[StatusEntry]) -> Known {
        let (ignored, listed): (Vec<&StatusEntry>, Vec<&StatusEntry>) =
            status.iter().partition(|e| e.ignored());
        Known {
            tracked: index.iter().map(|e| e.path.clone()).collect(),
            gitlinks: index
                .iter()
                .filter(|e| e.is_gitlink())
                .map(|e| e.path.clone())
                .collect(),
            listed: listed.into_iter().map(|e| e.path.clone()).collect(),
            ignored: ignored.into_iter().map(|e| e.path.clone()).collect(),
        }
    }

    /// Is `rel` (a path relative to the tree) or one of its parent directories ignored?
    pub(super) fn ignored_at_or_above(&self, rel: &[u8]) -> bool {
        self.ignored.contains(rel)
            || rel
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'/')
                .any(|(i, _)| self.ignored.contains(&rel[..=i]))
    }

    /// The step for the entry at `rel` of kind `kind` (pure).
    pub(super) fn step(&self, rel: &[u8], kind: Kind) -> Visit {
        match kind {
            Kind::Other => Visit::Skip,
            Kind::Dir => {
                let mut slashed = rel.to_vec();
                slashed.push(b'/');
                // Ignored whole, a submodule's tree, or listed whole (a nested repository).
                let known = self.ignored.contains(&slashed)
                    || self.gitlinks.contains(rel)
                    || self.listed.contains(&slashed);
                if known {
                    Visit::Skip
                } else {
                    Visit::Descend
                }
            }
            Kind::File => {
                let known = self.tracked.contains(rel)
                    || self.listed.contains(rel)
                    || self.ignored.contains(rel);
                if known {
                    Visit::Skip
                } else {
                    Visit::Unseen
                }
            }
        }
    }
}

/// The files under `worktree` that git's answer `known` should have named and did not,
/// relative to it; an error naming the directory when one cannot be read.
pub(super) fn unseen(worktree: &Path, known: &Known) -> Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    let mut dirs: Vec<(PathBuf, Vec<u8>)> = vec![(worktree.to_path_buf(), Vec::new())];
    while let Some((dir, rel)) = dirs.pop() {
        let cannot = || {
            format!(
                "could not read the directory {} while checking what git status reported",
                dir.display()
            )
        };
        for entry in std::fs::read_dir(&dir).with_context(cannot)? {
            let entry = entry.with_context(cannot)?;
            let name = entry.file_name();
            // git skips every `.git` (the tree's own link to its admin dir, a nested
            // repository's) and never reports one.
            if name.as_bytes() == b".git" {
                continue;
            }
            let mut path = rel.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name.as_bytes());
            let kind = entry.file_type().with_context(cannot)?;
            let kind = if kind.is_dir() {
                Kind::Dir
            } else if kind.is_file() || kind.is_symlink() {
                Kind::File
            } else {
                Kind::Other
            };
            match known.step(&path, kind) {
                Visit::Skip => {}
                Visit::Descend => dirs.push((entry.path(), path)),
                Visit::Unseen => found.push(path),
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The directories beneath `worktree` (relative to it) that hold a `.git` of their own: a
/// nested repository or worktree, ignored or not, whose work and history no check of the outer
/// tree sees. Every directory is read (ignored ones too, never through a symlink) except the
/// submodules in `gitlinks`, which git's own submodule check answers for; a nested tree's own
/// contents are not read. An error names a directory that cannot be read.
pub(super) fn nested_trees(worktree: &Path, gitlinks: &HashSet<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    let mut dirs: Vec<(PathBuf, Vec<u8>)> = vec![(worktree.to_path_buf(), Vec::new())];
    while let Some((dir, rel)) = dirs.pop() {
        let cannot = || {
            format!(
                "could not read the directory {} while looking for repositories inside the tree",
                dir.display()
            )
        };
        let mut subdirs = Vec::new();
        let mut holds_git = false;
        for entry in std::fs::read_dir(&dir).with_context(cannot)? {
            let entry = entry.with_context(cannot)?;
            let name = entry.file_name();
            if name.as_bytes() == b".git" {
                holds_git = true;
                continue;
            }
            if entry.file_type().with_context(cannot)?.is_dir() {
                let mut path = rel.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name.as_bytes());
                if !gitlinks.contains(&path) {
                    subdirs.push((entry.path(), path));
                }
            }
        }
        if holds_git && !rel.is_empty() {
            found.push(rel);
        } else {
            dirs.extend(subdirs);
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{parse_index_z as index_z, parse_status_z as status_z};

    fn known() -> Known {
        let index = [
            "100644 a 0\tsrc/lib.txt",
            "160000 b 0\tvendor/sm",
            "100644 c 0\tbuild/kept.txt",
        ]
        .map(|e| format!("{e}\0"))
        .concat();
        let index = index_z(index.as_bytes()).unwrap();
        let status =
            status_z(b"?? notes.txt\0?? nested/\0!! .env\0!! node_modules/\0!! build/x.o\0")
                .unwrap();
        Known::new(&index, &status)
    }

    #[test]
    fn what_git_knows_is_skipped_and_the_rest_is_unseen() {
        let k = known();
        assert_eq!(k.step(b"src/lib.txt", Kind::File), Visit::Skip);
        assert_eq!(k.step(b"notes.txt", Kind::File), Visit::Skip);
        assert_eq!(k.step(b".env", Kind::File), Visit::Skip);
        assert_eq!(k.step(b"build/x.o", Kind::File), Visit::Skip);
        assert_eq!(k.step(b"src/new.txt", Kind::File), Visit::Unseen);
        assert_eq!(k.step(b"build/y.o", Kind::File), Visit::Unseen);
        assert_eq!(k.step(b"run.sock", Kind::Other), Visit::Skip);
    }

    #[test]
    fn directories_are_read_unless_git_answered_for_them_whole() {
        let k = known();
        assert_eq!(k.step(b"node_modules", Kind::Dir), Visit::Skip);
        assert_eq!(k.step(b"vendor/sm", Kind::Dir), Visit::Skip);
        assert_eq!(k.step(b"nested", Kind::Dir), Visit::Skip);
        assert_eq!(k.step(b"src", Kind::Dir), Visit::Descend);
        // Listed as files, not whole: read (its files are each checked).
        assert_eq!(k.step(b"build", Kind::Dir), Visit::Descend);
        assert_eq!(k.step(b"node_module", Kind::Dir), Visit::Descend);
    }

    #[test]
    fn ignored_parents() {
        let k = known();
        assert!(k.ignored_at_or_above(b"node_modules/x/y"));
        assert!(k.ignored_at_or_above(b".env"));
        assert!(!k.ignored_at_or_above(b"node_modulesx/y"));
        assert!(!k.ignored_at_or_above(b"src/lib.txt"));
    }

    #[test]
    fn the_walk_names_what_git_did_not_and_fails_on_an_unreadable_directory() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path();
        for (p, text) in [
            ("src/lib.txt", "t"),
            ("src/new.txt", "mine"),
            ("notes.txt", "n"),
            ("node_modules/p/i.js", "x"),
            (".git", "gitdir: /x"),
            ("deep/er/still.txt", "mine too"),
        ] {
            let at = wt.join(p);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
        std::fs::create_dir_all(wt.join("empty/dir")).unwrap();
        assert_eq!(
            unseen(wt, &known()).unwrap(),
            vec![b"deep/er/still.txt".to_vec(), b"src/new.txt".to_vec()]
        );
        let err = unseen(&wt.join("absent"), &known()).unwrap_err();
        assert!(format!("{err:#}").contains("could not read the directory"));
    }

    #[test]
    fn nested_trees_are_found_at_any_depth_but_not_inside_one_another_or_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path();
        for p in [
            ".git",
            "build/out/inner/.git/HEAD",
            "build/out/inner/deeper/.git",
            "wt2/.git",
            "vendor/sm/.git",
            "src/lib.txt",
        ] {
            let at = wt.join(p);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, "x").unwrap();
        }
        std::os::unix::fs::symlink(wt.join("wt2"), wt.join("via-link")).unwrap();
        let gitlinks: HashSet<Vec<u8>> = [b"vendor/sm".to_vec()].into();
        assert_eq!(
            nested_trees(wt, &gitlinks).unwrap(),
            vec![b"build/out/inner".to_vec(), b"wt2".to_vec()]
        );
        assert!(nested_trees(&wt.join("absent"), &gitlinks).is_err());
    }
}
