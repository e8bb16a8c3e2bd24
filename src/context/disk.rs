//! The agent command guard's [`World`] as the disk has it, for `git kardwt guard`: which paths
//! are worktrees kardwt manages (verified the way every other command verifies them), what a
//! directory holds, a repository's aliases. Reads only, in time linear in what it is asked.
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::git::{self, Repo};
use crate::guard::{self, Managed, World};
use crate::state::Loaded;
use crate::verify::{self, Verdict};

/// The world as the disk has it: repositories found with gix, worktrees verified the way every
/// other command verifies them. Reads only.
///
/// Linear time, whatever the depth of the directory: the process stands in the judged
/// directory, and a path under it goes to the kernel relative to it, so a lookup costs the
/// operand's length; directories are listed once, so a path that does not exist costs no
/// system call. Each repository is read once, and a worktree verified the first time a path
/// names it; a candidate path is matched by the admin dir its `.git` file names and by its
/// inode, never resolved component by component.
pub(crate) struct Disk {
    /// The directory the process stands in (canonical), when it could move there.
    here: Option<PathBuf>,
    /// Repositories by the worktrees dir a `.git` file named.
    by_admin_parent: Cache<PathBuf>,
    /// Repositories by the directory (or git dir: `true`) they were looked up from.
    by_dir: Cache<(PathBuf, bool)>,
    /// Every repository read, by canonical common dir.
    loaded: RefCell<HashMap<PathBuf, Rc<Known>>>,
    /// Directory listings as a tree (node 0 the directory the process stands in, node 1 the
    /// root): most operands of a long line do not exist, and a listing answers for all of them
    /// without a system call each.
    nodes: RefCell<Vec<Node>>,
    /// The last answer of [`Disk::kind`]: the rules ask about one path several times in a row.
    last_kind: RefCell<Option<(PathBuf, Option<Kind>)>>,
    /// Answers of [`World::managed_worktree`] by path.
    managed: RefCell<HashMap<PathBuf, Option<Managed>>>,
    /// Answers of [`World::git_program`] by name.
    programs: RefCell<HashMap<String, bool>>,
    /// Answers of [`World::entries`] by directory.
    listed: RefCell<HashMap<PathBuf, Option<Vec<String>>>>,
}

/// A directory as listed once.
struct Node {
    /// How to reach it: relative to the process's directory, or absolute.
    path: PathBuf,
    /// The node `..` leads to, once known.
    parent: Option<usize>,
    /// Its entries: what each is, and its node once made; `None` when it cannot be listed.
    entries: Option<HashMap<OsString, (Kind, Option<usize>)>>,
}

impl Node {
    fn new(path: PathBuf, parent: Option<usize>) -> Node {
        let entries = std::fs::read_dir(&path).ok().map(|list| {
            list.filter_map(|e| e.ok())
                .map(|e| {
                    let kind = match e.file_type() {
                        Ok(t) if t.is_symlink() => Kind::Symlink,
                        Ok(t) if t.is_dir() => Kind::Dir,
                        Ok(t) if t.is_file() => Kind::File,
                        _ => Kind::Unknown,
                    };
                    (e.file_name(), (kind, None))
                })
                .collect()
        });
        Node {
            path,
            parent,
            entries,
        }
    }
}

/// What a directory listing says a name is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    /// Something the listing cannot tell (ask the file system itself).
    Unknown,
}

/// Repositories found by some key; `None` where there is none.
type Cache<K> = RefCell<HashMap<K, Option<Rc<Known>>>>;

/// A worktree's recorded path and its directory's (device, inode).
type Identified = (PathBuf, (u64, u64));

/// One repository as read once.
struct Known {
    info: Rc<guard::Repository>,
    repo: Repo,
    entries: Vec<verify::Entry>,
    /// Index into `entries` by admin dir name.
    by_id: HashMap<OsString, usize>,
    /// Verdicts asked for so far, by admin dir name: for a managed worktree that verifies,
    /// its recorded path and its directory's (device, inode).
    verified: RefCell<HashMap<OsString, Option<Identified>>>,
}

impl Known {
    /// The managed worktree registered under the admin dir `id`, if it verifies (once).
    fn managed(&self, id: &OsStr) -> Option<Identified> {
        if let Some(found) = self.verified.borrow().get(id) {
            return found.clone();
        }
        let found = self.by_id.get(id).and_then(|&i| {
            let e = &self.entries[i];
            let (Loaded::Parsed(_), Some(path)) = (&e.record, &e.linked.path) else {
                return None;
            };
            let report = verify::verify(&self.repo, &self.entries, path, None);
            let meta = std::fs::metadata(&report.path).ok()?;
            (report.verdict == Verdict::Verified).then(|| (report.path, (meta.dev(), meta.ino())))
        });
        self.verified
            .borrow_mut()
            .insert(id.to_owned(), found.clone());
        found
    }
}

impl Disk {
    pub(crate) fn new(here: Option<PathBuf>) -> Disk {
        Disk {
            here: here.filter(|h| h.as_os_str().len() > 1),
            by_admin_parent: RefCell::default(),
            by_dir: RefCell::default(),
            loaded: RefCell::default(),
            nodes: RefCell::default(),
            last_kind: RefCell::default(),
            managed: RefCell::default(),
            programs: RefCell::default(),
            listed: RefCell::default(),
        }
    }

    /// What `local` is according to its parent's listing: `None` when it does not exist.
    fn kind(&self, local: &Path) -> Option<Kind> {
        if let Some((path, kind)) = &*self.last_kind.borrow() {
            if path.as_os_str() == local.as_os_str() {
                return *kind;
            }
        }
        let kind = self.kind_uncached(local);
        *self.last_kind.borrow_mut() = Some((local.to_path_buf(), kind));
        kind
    }

    /// Walk `local` down the tree of listings, one component at a time (`..` goes back up the
    /// way it came): `None` when it does not exist, [`Kind::Unknown`] when only the file system
    /// can tell (through a symbolic link, an unreadable directory). Each directory is listed
    /// once, and a path costs one lookup per component, so `a1/x a2/x …` or `../x` cost no
    /// system call each.
    fn kind_uncached(&self, local: &Path) -> Option<Kind> {
        let bytes = local.as_os_str().as_bytes();
        let mut nodes = self.nodes.borrow_mut();
        if nodes.is_empty() {
            nodes.push(Node::new(PathBuf::from("."), None));
            nodes.push(Node::new(PathBuf::from("/"), Some(1)));
        }
        let mut at = usize::from(bytes.starts_with(b"/"));
        let components: Vec<&[u8]> = bytes
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
            .collect();
        let Some((&last, dirs)) = components.split_last() else {
            return Some(Kind::Unknown);
        };
        if last == b".." {
            return Some(Kind::Unknown);
        }
        for &c in dirs {
            at = if c == b".." {
                match nodes[at].parent {
                    Some(up) => up,
                    None => {
                        let up = Node::new(nodes[at].path.join(".."), None);
                        nodes.push(up);
                        let id = nodes.len() - 1;
                        nodes[at].parent = Some(id);
                        id
                    }
                }
            } else {
                let name = OsStr::from_bytes(c);
                let Some(entries) = nodes[at].entries.as_ref() else {
                    return Some(Kind::Unknown);
                };
                match entries.get(name) {
                    None | Some((Kind::File, _)) => return None,
                    Some((Kind::Symlink | Kind::Unknown, _)) => return Some(Kind::Unknown),
                    Some((Kind::Dir, Some(child))) => *child,
                    Some((Kind::Dir, None)) => {
                        let child = Node::new(nodes[at].path.join(name), Some(at));
                        nodes.push(child);
                        let id = nodes.len() - 1;
                        if let Some(entry) =
                            nodes[at].entries.as_mut().and_then(|e| e.get_mut(name))
                        {
                            entry.1 = Some(id);
                        }
                        id
                    }
                }
            };
        }
        match &nodes[at].entries {
            Some(entries) => entries.get(OsStr::from_bytes(last)).map(|e| e.0),
            None => Some(Kind::Unknown),
        }
    }

    /// `path` as the kernel should get it: relative to `here` when it lies under it.
    fn local<'p>(&self, path: &'p Path) -> &'p Path {
        let Some(here) = &self.here else { return path };
        let (p, h) = (path.as_os_str().as_bytes(), here.as_os_str().as_bytes());
        match p.strip_prefix(h) {
            Some([]) => Path::new("."),
            Some([b'/', rest @ ..]) => {
                let start = rest.iter().take_while(|&&b| b == b'/').count();
                match &rest[start..] {
                    [] => Path::new("."),
                    rest => Path::new(OsStr::from_bytes(rest)),
                }
            }
            _ => path,
        }
    }

    /// Read `repo` once: its worktrees and their records (verified only when asked about).
    fn load(&self, repo: Repo) -> Rc<Known> {
        if let Some(known) = self.loaded.borrow().get(&repo.common_dir) {
            return known.clone();
        }
        let entries = verify::scan(&repo).unwrap_or_default();
        let info = guard::Repository::new(
            repo.common_dir.clone(),
            std::iter::once(repo.base.clone())
                .chain(entries.iter().filter_map(|e| e.linked.path.clone()))
                .collect(),
            entries
                .iter()
                .any(|e| e.linked.prunable && matches!(e.record, Loaded::Parsed(_))),
        );
        let known = Rc::new(Known {
            info: Rc::new(info),
            by_id: entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.linked.admin.file_name()?.to_owned(), i)))
                .collect(),
            entries,
            verified: RefCell::default(),
            repo,
        });
        self.loaded
            .borrow_mut()
            .insert(known.info.common_dir.clone(), known.clone());
        known
    }

    /// [`World::managed_worktree`] without the memo.
    fn managed_uncached(&self, path: &Path) -> Option<Managed> {
        let local = self.local(path);
        let meta = std::fs::metadata(local).ok()?;
        if !meta.is_dir() {
            return None;
        }
        let admin = git::read_dot_git(local)?;
        let (parent, id) = (admin.parent()?.to_path_buf(), admin.file_name()?);
        let cached = self.by_admin_parent.borrow().get(&parent).cloned();
        let known = match cached {
            Some(known) => known,
            None => {
                let known = Repo::discover(&git::absolutize(path))
                    .ok()
                    .map(|repo| self.load(repo));
                self.by_admin_parent
                    .borrow_mut()
                    .insert(parent, known.clone());
                known
            }
        }?;
        let (recorded, identity) = known.managed(id)?;
        (identity == (meta.dev(), meta.ino())).then(|| Managed {
            path: recorded,
            common_dir: known.info.common_dir.clone(),
        })
    }

    /// The repository found from the existing directory `at` (or the git dir `at`).
    fn find(&self, at: &Path, git_dir: bool) -> Option<Rc<Known>> {
        let local = self.local(at);
        if !std::fs::metadata(local).is_ok_and(|m| m.is_dir()) {
            return None;
        }
        // `--git-dir` must name a git directory itself: git does not search from it.
        if git_dir
            && !(local.join("HEAD").is_file()
                && (local.join("objects").is_dir() || local.join("commondir").is_file()))
        {
            return None;
        }
        let start = std::fs::canonicalize(local).ok()?;
        let repo = Repo::discover(&start).ok()?;
        Some(self.load(repo))
    }
}

impl World for Disk {
    fn managed_worktree(&self, path: &Path) -> Option<Managed> {
        // Most paths do not exist: the listings say so before anything is hashed or stored.
        let local = self.local(path);
        if matches!(self.kind(local), None | Some(Kind::File)) {
            return None;
        }
        if let Some(found) = self.managed.borrow().get(local) {
            return found.clone();
        }
        let found = self.managed_uncached(path);
        self.managed
            .borrow_mut()
            .insert(local.to_path_buf(), found.clone());
        found
    }

    fn repository(&self, at: &Path, git_dir: bool) -> Option<Rc<guard::Repository>> {
        let key = (at.to_path_buf(), git_dir);
        let cached = self.by_dir.borrow().get(&key).cloned();
        let known = match cached {
            Some(known) => known,
            None => {
                let known = self.find(at, git_dir);
                self.by_dir.borrow_mut().insert(key, known.clone());
                known
            }
        };
        known.map(|k| k.info.clone())
    }

    fn managed_within(&self, dir: &Path) -> Vec<PathBuf> {
        let local = self.local(dir);
        if matches!(self.kind(local), None | Some(Kind::File)) {
            return Vec::new();
        }
        // A worktree itself is judged by `managed_worktree`; only plain directories are looked
        // into, one level deep, where the worktree root keeps `card-<id>`.
        if local.join(".git").exists() {
            return Vec::new();
        }
        let Ok(children) = std::fs::read_dir(local) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = children
            .filter_map(|c| c.ok())
            .filter(|c| c.path().join(".git").is_file())
            .filter_map(|c| self.managed_worktree(&dir.join(c.file_name())))
            .map(|m| m.path)
            .collect();
        found.sort();
        found
    }

    fn managed_of_base(&self, dir: &Path) -> Vec<PathBuf> {
        let local = self.local(dir);
        if matches!(self.kind(local), None | Some(Kind::File)) {
            return Vec::new();
        }
        // The base holds the repository itself: a `.git` directory, not a file.
        if !std::fs::symlink_metadata(local.join(".git")).is_ok_and(|m| m.is_dir()) {
            return Vec::new();
        }
        let Some(known) = self.find(dir, false) else {
            return Vec::new();
        };
        let same =
            |a: &Path, b: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
        if !same(local, &known.repo.base) {
            return Vec::new();
        }
        let mut found: Vec<PathBuf> = known
            .entries
            .iter()
            .filter_map(|e| {
                known
                    .managed(e.linked.admin.file_name()?)
                    .map(|(path, _)| path)
            })
            .collect();
        found.sort();
        found
    }

    fn entries(&self, dir: &Path) -> Option<Vec<String>> {
        if let Some(names) = self.listed.borrow().get(dir) {
            return names.clone();
        }
        let names = std::fs::read_dir(self.local(dir)).ok().map(|list| {
            list.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        });
        self.listed
            .borrow_mut()
            .insert(dir.to_path_buf(), names.clone());
        names
    }

    fn alias(&self, repo: &guard::Repository, name: &str) -> Option<String> {
        // Read with gix, as git reads it: every file of the cascade, includes followed.
        let loaded = self.loaded.borrow();
        let known = loaded.get(&repo.common_dir)?;
        known.repo.config_string(&format!("alias.{name}"))
    }

    fn git_program(&self, name: &str) -> bool {
        if let Some(&found) = self.programs.borrow().get(name) {
            return found;
        }
        // git searches the PATH it runs with (its exec path first, which `git kardwt` is
        // handed too); anything there but a directory stops the alias from running.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let found = std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(format!("git-{name}"))).is_ok_and(|m| !m.is_dir())
        });
        self.programs.borrow_mut().insert(name.to_owned(), found);
        found
    }

    fn is_symlink(&self, path: &Path) -> bool {
        let local = self.local(path);
        match self.kind(local) {
            None | Some(Kind::Dir | Kind::File) => false,
            Some(Kind::Symlink) => true,
            Some(Kind::Unknown) => {
                std::fs::symlink_metadata(local).is_ok_and(|m| m.file_type().is_symlink())
            }
        }
    }
}
