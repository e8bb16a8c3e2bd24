//! What the guard's rules ask of the disk, as a trait ([`World`]) and the plain answers it
//! gives ([`Managed`], [`Repository`]). The implementation that reads the disk lives with the
//! command (`commands::guard`); unit tests use a fake.
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What only the disk can answer. Paths handed in are absolute but not normalized: symlinks
/// and `..` are the world's to resolve. An answer should cost about the length of the path
/// asked about, not the depth of the directory it sits in, so that a line is judged in time
/// linear in its length.
pub(crate) trait World {
    /// The managed (verified) worktree `path` names, if it names one.
    fn managed_worktree(&self, path: &Path) -> Option<Managed>;
    /// The repository git would use: discovered from the directory `at`, or with `git_dir`
    /// the git directory `at` itself (`git --git-dir=…`); `None` when there is none.
    fn repository(&self, at: &Path, git_dir: bool) -> Option<Rc<Repository>>;
    /// Is `path` itself a symbolic link (not followed)?
    fn is_symlink(&self, path: &Path) -> bool;
    /// The managed worktrees directly inside `dir` (the worktree root holds them as
    /// `card-<id>`), sorted.
    fn managed_within(&self, dir: &Path) -> Vec<PathBuf>;
    /// When `dir` is the base of a repository (its main worktree), the worktrees kardwt manages
    /// in that repository, sorted: deleting the base deletes their repository.
    fn managed_of_base(&self, dir: &Path) -> Vec<PathBuf>;
    /// The names in the directory `dir` (symbolic links followed; `.` and `..` left out), in
    /// any order; `None` when it is not a directory that can be listed.
    fn entries(&self, dir: &Path) -> Option<Vec<String>>;
    /// The value of `alias.NAME` (the name matched as git matches it, regardless of case) in
    /// the configuration git reads in `repo`, if set.
    fn alias(&self, repo: &Repository, name: &str) -> Option<String>;
    /// Is there a `git-NAME` program on the PATH? git runs it rather than an alias `NAME`.
    fn git_program(&self, name: &str) -> bool;
}

/// A worktree kardwt manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Managed {
    /// Its recorded absolute path.
    pub path: PathBuf,
    /// The common dir of its repository (canonical).
    pub common_dir: PathBuf,
}

/// What the rules need to know of a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Repository {
    /// Canonical.
    pub common_dir: PathBuf,
    /// The base and every linked worktree (for git's suffix lookup).
    pub worktree_paths: Vec<PathBuf>,
    /// It has a worktree kardwt manages whose directory is gone: an entry `git worktree prune`
    /// would drop before what its record holds is released.
    pub managed_gone: bool,
    /// Indexes into `worktree_paths` by last component, so a suffix lookup costs the length
    /// of the argument, not the number of worktrees.
    by_name: HashMap<OsString, Vec<usize>>,
}

impl Repository {
    pub(crate) fn new(
        common_dir: PathBuf,
        worktree_paths: Vec<PathBuf>,
        managed_gone: bool,
    ) -> Self {
        let mut by_name: HashMap<OsString, Vec<usize>> = HashMap::new();
        for (i, p) in worktree_paths.iter().enumerate() {
            if let Some(name) = p.file_name() {
                by_name.entry(name.to_owned()).or_default().push(i);
            }
        }
        Repository {
            common_dir,
            worktree_paths,
            managed_gone,
            by_name,
        }
    }

    /// The worktrees `suffix` ends at a directory boundary (git's `find_worktree_by_suffix`).
    pub(super) fn suffixed<'r>(
        &'r self,
        suffix: &'r str,
    ) -> impl Iterator<Item = &'r PathBuf> + 'r {
        let last = suffix.rsplit('/').next().unwrap_or(suffix);
        self.by_name
            .get(OsStr::new(last))
            .into_iter()
            .flatten()
            .map(|&i| &self.worktree_paths[i])
            .filter(move |p| has_suffix(p, suffix))
    }
}

/// git's `find_worktree_by_suffix`: `suffix` ends `path` at a directory boundary.
fn has_suffix(path: &Path, suffix: &str) -> bool {
    let path = path.to_string_lossy();
    path.strip_suffix(suffix)
        .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}
