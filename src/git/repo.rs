//! Locating the repository with gix: the common dir (canonicalized: gix leaves it as
//! `…/worktrees/x/../..`), the base (main worktree), the worktree the caller stands in, refs;
//! and the registered linked worktrees, their admin dirs, `.git` files and HEADs, each file
//! read once by hand and parsed by gix, byte for byte (tests/scripts/PERFORMANCE.md: gix's own readers
//! cost more system calls per worktree). Reads only; never mutates.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::ground::error::Fail;

mod bare;
mod elsewhere;
mod no_repo;
mod paths;
use bare::bare_project;
pub(crate) use bare::Layout;
use elsewhere::configured_work_tree;
pub(crate) use elsewhere::remembered_base;
pub(crate) use no_repo::NoRepo;
pub(crate) use paths::{absolutize, absolutize_keep_last, canonical, Parents};

/// The repository kardwt works on, as seen from the caller's directory.
pub(crate) struct Repo {
    /// `git rev-parse --git-common-dir`, absolute and canonical.
    pub common_dir: PathBuf,
    /// The main worktree (the trusted checkout), canonical; in the bare layout the common dir
    /// itself, where kardwt runs git (see [`Layout::Bare`]).
    pub base: PathBuf,
    /// Whether a checkout holds the rules and the shared files, or the repository is bare.
    pub layout: Layout,
    /// The base `add` fetched in this process in the bare layout (`(what was asked, base_ref,
    /// commit)`), so that it is fetched once: the rules are read from it before the tree is
    /// made at it.
    pub fetched: std::sync::OnceLock<(String, String, String)>,
    /// Top level of the worktree the caller stands in, canonical, if any.
    pub current: Option<PathBuf>,
    /// Refs kept in reftable (`extensions.refStorage=reftable`): gix reads only loose and
    /// packed refs, so refs are asked of git there.
    reftable: bool,
    gix: gix::Repository,
}

/// One linked worktree as git administers it.
#[derive(Debug, Clone)]
pub(crate) struct Linked {
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

/// The post-checkout hooks of a repository, as far as kardwt's own checkout cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PostCheckout {
    None,
    /// kardwt's shim as shipped: it returns at once for the tree `add` makes.
    KardwtOnly,
    Other,
}

/// Is `bytes` kardwt's post-checkout shim as shipped, whatever binary its `kardwt=` line names
/// and whether its first line starts that binary itself (`#!<binary> hook-shim`) (pure)?
pub(crate) fn is_shipped_shim(bytes: &[u8]) -> bool {
    const SHIPPED: &str = include_str!("../../githooks/post-checkout");
    let strip = |text: &str| -> Vec<String> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.starts_with("kardwt="))
            .map(
                |(at, l)| match at == 0 && l.starts_with("#!/") && l.ends_with(" hook-shim") {
                    true => "#!/bin/sh".to_owned(),
                    false => l.to_owned(),
                },
            )
            .collect()
    };
    std::str::from_utf8(bytes).is_ok_and(|text| strip(text) == strip(SHIPPED))
}

/// What a worktree's HEAD names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Head {
    /// A branch, short name (`card/42`).
    Branch(String),
    /// A detached HEAD at this object id.
    Detached(String),
}

impl Head {
    /// The branch or the object id, as `status` and `verify --json` print it.
    pub(crate) fn display(&self) -> &str {
        match self {
            Head::Branch(b) | Head::Detached(b) => b,
        }
    }
}

/// The repositories this process found from a worktree (without `GIT_DIR`), by that worktree:
/// a second look at the same tree (the check of its checkout) reuses the handle, its config
/// already read, instead of opening the repository again.
static FOUND: std::sync::OnceLock<std::sync::Mutex<Vec<(PathBuf, gix::ThreadSafeRepository)>>> =
    std::sync::OnceLock::new();

/// The repository of the worktree `tree`, as `gix::open(tree)` opens it: the handle
/// [`Repo::discover`] found there when there is one.
pub fn open_worktree(tree: &Path) -> gix::Result<gix::Repository> {
    let found = FOUND.get().and_then(|f| {
        let f = f.lock().ok()?;
        f.iter()
            .find(|(at, _)| at == tree)
            .map(|(_, r)| r.to_thread_local())
    });
    match found {
        Some(repo) => Ok(repo),
        None => gix::open(tree),
    }
}

impl Repo {
    /// Find the repository containing `cwd`, or the one git's own environment names:
    /// `git --git-dir=X kardwt …` exports `GIT_DIR` (and `GIT_WORK_TREE`) to us, and acts on X
    /// exactly as `git --git-dir=X worktree add` would.
    pub(crate) fn discover(cwd: &Path) -> Result<Repo> {
        let found = if std::env::var_os("GIT_DIR").is_some() {
            gix::discover_with_environment_overrides(cwd)
        } else {
            gix::discover(cwd)
        };
        let gix = found.map_err(|e| {
            Fail::from(NoRepo::Outside {
                cwd: cwd.to_owned(),
                why: e.to_string(),
            })
        })?;
        let common_dir = canonical(gix.common_dir())?;
        // A bare common dir (`core.bare`): gix gives `project/` a work dir when it finds
        // `project/.git` from there, but that directory is no checkout.
        let bare = gix.config_snapshot().boolean("core.bare") == Some(true)
            || (gix.kind() != gix::repository::Kind::LinkedWorkTree && gix.workdir().is_none());
        let linked = gix.kind() == gix::repository::Kind::LinkedWorkTree;
        let current = match gix.workdir() {
            Some(_) if bare && !linked => None,
            Some(w) => Some(canonical(w)?),
            None => None,
        };
        let (base, layout) = if bare {
            match bare_project(&common_dir) {
                Some(project) => (Some(common_dir.clone()), Layout::Bare { project }),
                None => (None, Layout::Checkout),
            }
        } else if !linked {
            (current.clone(), Layout::Checkout)
        } else if common_dir.file_name().is_some_and(|n| n == ".git") {
            (common_dir.parent().map(Path::to_path_buf), Layout::Checkout)
        } else {
            let main = gix
                .main_repo()
                .context("could not open the main worktree")?;
            let base = match main.workdir() {
                Some(w) => Some(canonical(w)?),
                None => remembered_base(&common_dir).or_else(|| configured_work_tree(&main)),
            };
            (base, Layout::Checkout)
        };
        let base = base.ok_or_else(|| {
            let common_dir = common_dir.clone();
            Fail::from(match bare {
                true => NoRepo::Bare { common_dir },
                false => NoRepo::Elsewhere { common_dir },
            })
        })?;
        // A main worktree git finds through `core.worktree` (or `GIT_DIR` and
        // `GIT_WORK_TREE`), with no `.git` in it: kardwt names the git dir to the git it runs.
        if layout == Layout::Checkout && base.join(".git").symlink_metadata().is_err() {
            super::call::detached_work_tree(&base, &common_dir);
        }
        let reftable = is_reftable(&gix);
        if let (Some(at), None) = (&current, std::env::var_os("GIT_DIR")) {
            if let Ok(mut found) = FOUND.get_or_init(Default::default).lock() {
                found.push((at.clone(), gix.clone().into_sync()));
            }
        }
        Ok(Repo {
            common_dir,
            base,
            layout,
            fetched: std::sync::OnceLock::new(),
            current,
            reftable,
            gix,
        })
    }

    /// Is the base's git dir elsewhere (its `.git` a file naming it, as `git clone
    /// --separate-git-dir` makes it)? Then git records the base nowhere a linked worktree can
    /// read, and kardwt remembers it ([`remembered_base`]).
    pub(crate) fn git_dir_elsewhere(&self) -> bool {
        self.base
            .join(".git")
            .symlink_metadata()
            .is_ok_and(|m| m.is_file())
    }

    /// A git config value as a string, if set.
    pub(crate) fn config_string(&self, key: &str) -> Option<String> {
        self.gix
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// Will kardwt check out `commit` itself for a new tree (see [`super::materialize`])?
    pub(crate) fn plan_checkout(
        &self,
        commit: &str,
    ) -> Result<super::materialize::Planned, super::materialize::Declined> {
        super::materialize::plan(&self.gix, &self.common_dir, commit)
    }

    /// Which post-checkout hooks git would run after a checkout here: none, only kardwt's own
    /// shim exactly as shipped (nothing chained behind it), or any other (`core.hooksPath` or a
    /// `hook.*` setting set, or any other file at `hooks/post-checkout`).
    pub(crate) fn post_checkout_hooks(&self) -> PostCheckout {
        let config = self.gix.config_snapshot();
        let configured = config.string("core.hooksPath").is_some()
            || config
                .plumbing()
                .sections_by_name("hook")
                .is_some_and(|mut s| s.next().is_some());
        if configured {
            return PostCheckout::Other;
        }
        let hook = self.common_dir.join("hooks").join("post-checkout");
        if hook.symlink_metadata().is_err() {
            return PostCheckout::None;
        }
        let chained = self
            .common_dir
            .join("hooks")
            .join("post-checkout.kardwt-chained");
        match std::fs::read(&hook) {
            Ok(bytes) if is_shipped_shim(&bytes) && chained.symlink_metadata().is_err() => {
                PostCheckout::KardwtOnly
            }
            _ => PostCheckout::Other,
        }
    }

    /// The ref the symbolic ref `name` (shared by every worktree, like
    /// `refs/remotes/origin/HEAD`) points to, as `git symbolic-ref --quiet` prints it; read
    /// without starting git except where refs are git's to read (reftable). `None` when `name`
    /// is missing or not symbolic.
    pub(crate) fn symbolic_target(&self, name: &str) -> Option<String> {
        if self.reftable {
            return super::query::symbolic_ref(&self.base, name);
        }
        match self.gix.try_find_reference(name).ok()??.target() {
            gix::refs::TargetRef::Symbolic(to) => Some(to.as_bstr().to_string()),
            gix::refs::TargetRef::Object(_) => None,
        }
    }

    /// Does `refs/heads/<branch>` exist?
    pub(crate) fn branch_exists(&self, branch: &str) -> bool {
        if self.reftable {
            return super::query::ref_exists(&self.base, &format!("refs/heads/{branch}"));
        }
        matches!(
            self.gix
                .try_find_reference(format!("refs/heads/{branch}").as_str()),
            Ok(Some(_))
        )
    }

    /// The commit a ref points at (peeled), read without starting git.
    pub(crate) fn ref_oid(&self, name: &str) -> Result<String> {
        if self.reftable {
            return super::query::ref_commit(&self.base, name)
                .with_context(|| format!("{name} does not exist"));
        }
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

    /// The commit HEAD of the worktree at `worktree` names, when the ref `name` names the same
    /// commit (a tree made at the base's tip: then that commit is their merge base), read
    /// without starting git. `None` when they differ, or where refs are git's to read
    /// (reftable).
    pub(crate) fn head_at_ref(&self, worktree: &Path, name: &str) -> Option<String> {
        if self.reftable {
            return None;
        }
        let at = match read_head(&read_dot_git(worktree)?)? {
            Head::Detached(oid) => oid,
            Head::Branch(b) => self.ref_oid(&format!("refs/heads/{b}")).ok()?,
        };
        (self.ref_oid(name).ok()? == at).then_some(at)
    }

    /// Is the object with this hex id in the object database?
    pub(crate) fn has_object(&self, hex: &str) -> bool {
        gix::ObjectId::from_hex(hex.as_bytes()).is_ok_and(|id| self.gix.has_object(id))
    }

    /// The directory holding admin dirs of linked worktrees.
    pub(crate) fn worktrees_dir(&self) -> PathBuf {
        self.common_dir.join("worktrees")
    }

    /// Every linked worktree git lists (admin dirs with a `gitdir` file), sorted by admin dir.
    ///
    /// Listed with one `read_dir` and one read of each `gitdir`, the way git decides (an entry
    /// whose `gitdir` cannot be read is not listed; prunable when it names a `.git` that is
    /// gone and the entry is not locked). gix's `repo.worktrees()` is not used: it stats each
    /// `gitdir` before it is read, and its proxies read it again for `base()` and
    /// `is_prunable()` (bench P3/P7 in tests/scripts/PERFORMANCE.md).
    pub(crate) fn linked(&self) -> Result<Vec<Linked>> {
        Ok(self
            .admin_dirs()?
            .into_iter()
            .filter_map(linked_at)
            .collect())
    }

    /// Every entry of `<common dir>/worktrees`, sorted: the admin dirs [`linked_at`] reads
    /// (one `read_dir`; none when the directory does not exist).
    pub(crate) fn admin_dirs(&self) -> Result<Vec<PathBuf>> {
        let dir = self.worktrees_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("could not list {}", dir.display())),
        };
        let mut out: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        out.sort();
        Ok(out)
    }
}

/// The linked worktree administered in `admin` (`<common dir>/worktrees/<id>`), as
/// [`Repo::linked`] lists it; `None` when git would not list it (no readable `gitdir`).
pub(crate) fn linked_at(admin: PathBuf) -> Option<Linked> {
    let dot_git = read_admin_gitdir(&admin)?;
    let locked = admin.join("locked").symlink_metadata().is_ok();
    let prunable = !locked && dot_git.symlink_metadata().is_err();
    let path = gix::discover::path::without_dot_git_dir(dot_git);
    let path = if is_plain_absolute(&path) {
        path
    } else {
        std::fs::canonicalize(&path).unwrap_or(path)
    };
    Some(Linked {
        id: admin.file_name()?.to_string_lossy().into_owned(),
        admin,
        path: Some(path),
        locked,
        prunable,
    })
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

/// Does the repository `gix` opened keep its refs in reftable (`extensions.refStorage`)? gix
/// reads only loose and packed refs: there `HEAD` is a placeholder and every ref it reads is
/// missing or wrong, so kardwt asks git.
pub(crate) fn is_reftable(gix: &gix::Repository) -> bool {
    gix.config_snapshot()
        .string("extensions.refStorage")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"reftable"))
}

/// What git writes as HEAD in a reftable repository, for older tools: the real HEAD is in
/// the reftable beside it.
const REFTABLE_HEAD: &[u8] = b"ref: refs/heads/.invalid\n";

/// Read a worktree's HEAD from its admin dir (`ref: refs/heads/x` or an object id), with gix's
/// loose-ref decoder: a HEAD it cannot decode (not a ref name, not a whole object id of either
/// hash) is `None`. In a reftable repository, where the file is a placeholder, git says.
pub(crate) fn read_head(admin: &Path) -> Option<Head> {
    let bytes = read_small(&admin.join("HEAD"))?;
    if bytes == REFTABLE_HEAD {
        return super::query::head_of(admin);
    }
    parse_head(&bytes)
}

/// Decode the bytes of a HEAD file with gix (SHA-1 or SHA-256 object ids).
fn parse_head(bytes: &[u8]) -> Option<Head> {
    use gix::bstr::ByteSlice;
    let name: gix::refs::FullName = "HEAD".try_into().ok()?;
    let reference = [gix::hash::Kind::Sha1, gix::hash::Kind::Sha256]
        .into_iter()
        .find_map(|kind| {
            gix::refs::file::loose::Reference::try_from_path(name.clone(), bytes, kind).ok()
        })?;
    Some(match reference.target {
        gix::refs::Target::Symbolic(target) => {
            let full = target.as_bstr();
            let short = full.strip_prefix(b"refs/heads/").unwrap_or(full);
            Head::Branch(short.to_str_lossy().into_owned())
        }
        gix::refs::Target::Object(id) => Head::Detached(id.to_string()),
    })
}

/// Read the `gitdir: X` line of a worktree's `.git` file (parsed by gix, byte for byte),
/// resolved against the worktree.
pub(crate) fn read_dot_git(worktree: &Path) -> Option<PathBuf> {
    let bytes = read_small(&worktree.join(".git"))?;
    let target = gix::discover::parse::gitdir(&bytes).ok()?;
    Some(worktree.join(target))
}

/// The path an admin dir's `gitdir` file names (the worktree's `.git`), read byte for byte
/// (trailing whitespace trimmed, as git does) and resolved against the admin dir.
pub(crate) fn read_admin_gitdir(admin: &Path) -> Option<PathBuf> {
    use gix::bstr::ByteSlice;
    let bytes = read_small(&admin.join("gitdir"))?;
    let path = gix::path::from_byte_slice(bytes.trim_end()).ok()?;
    (!path.as_os_str().is_empty()).then(|| admin.join(path))
}

/// The most kardwt reads of a `.git` or `gitdir` file (gix's limit too).
const MAX_PATH_FILE: u64 = 64 * 1024;

/// A small file's bytes in one open and read, or `None` when it is unreadable or larger than
/// [`MAX_PATH_FILE`]. gix's readers stat the file first, which costs a system call per
/// worktree for nothing. Opened without blocking, so a FIFO planted as `.git` reads as empty
/// (and fails to parse) instead of hanging `list` or the pre-push check; a device is cut at
/// the limit.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    read_bounded(path, MAX_PATH_FILE).ok()
}

/// At most `max` bytes of the file at `path`, opened without blocking (a FIFO or a device
/// planted where kardwt expects a small file never hangs it: a FIFO reads as empty); a larger
/// file is an error (`InvalidData`), a missing one `NotFound`.
pub(crate) fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let mut buf = Vec::with_capacity(512);
    let read = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?
        .take(max + 1)
        .read_to_end(&mut buf);
    match read {
        Ok(_) if buf.len() as u64 <= max => Ok(buf),
        Ok(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        )),
        // A FIFO with no writer, opened without blocking: nothing to read.
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Does `named` (what a worktree's `.git` file names) name an admin dir of this repository
/// (`<common dir>/worktrees/<id>`) that git no longer has: gone, or left without its `gitdir`
/// file (which git neither lists nor keeps: `prune` deletes it)? The mark of a tree git forgot,
/// as a failed `git worktree remove` leaves it; another repository's is never one.
pub(crate) fn names_gone_admin(common_dir: &Path, named: &Path) -> bool {
    let forgotten = |p: &Path| match p.symlink_metadata() {
        Ok(m) => m.is_dir() && p.join("gitdir").symlink_metadata().is_err(),
        Err(_) => true,
    };
    // Resolved by the file system and by name alone (they differ across a symlink): both
    // must say so.
    let normal = lexically_normal(named);
    if !forgotten(named) || !forgotten(&normal) {
        return false;
    }
    let named = normal;
    let Some(worktrees) = named.parent().filter(|_| named.file_name().is_some()) else {
        return false;
    };
    if worktrees.file_name() != Some(std::ffi::OsStr::new("worktrees")) {
        return false;
    }
    // git deletes an empty `worktrees/` too: compare the common dir it sits in.
    worktrees.parent().is_some_and(|common| {
        common == common_dir
            || std::fs::canonicalize(common)
                .ok()
                .zip(std::fs::canonicalize(common_dir).ok())
                .is_some_and(|(a, b)| a == b)
    })
}

/// `p` with `.` and `..` resolved by name alone (a `.git` file may name its admin dir by a
/// relative path, which ends up joined to the worktree's).
fn lexically_normal(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_admin_dir_of_this_repository_that_git_no_longer_has_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("repo/.git");
        let live = common.join("worktrees/live");
        std::fs::create_dir_all(&live).unwrap();
        std::fs::write(live.join("gitdir"), "/t/live/.git\n").unwrap();
        let stub = common.join("worktrees/stub");
        std::fs::create_dir_all(&stub).unwrap();
        assert!(names_gone_admin(&common, &common.join("worktrees/gone")));
        assert!(names_gone_admin(&common, &stub), "no gitdir: git prunes it");
        assert!(!names_gone_admin(&common, &live));
        // Named by a relative path, through the worktree.
        let rel = dir.path().join("t/card-1/../../repo/.git/worktrees/gone");
        assert!(names_gone_admin(&common, &rel));
        // Another repository's, or not an admin dir at all.
        let other = dir.path().join("other/.git/worktrees/gone");
        assert!(!names_gone_admin(&common, &other));
        assert!(!names_gone_admin(&common, &common.join("modules/gone")));
        // git deletes an empty worktrees/ too.
        std::fs::remove_dir_all(common.join("worktrees")).unwrap();
        assert!(names_gone_admin(&common, &live));
    }

    #[test]
    fn heads() {
        assert_eq!(
            parse_head(b"ref: refs/heads/card/42\n"),
            Some(Head::Branch("card/42".into()))
        );
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            parse_head(format!("{sha1}\n").as_bytes()),
            Some(Head::Detached(sha1.into()))
        );
        let sha256 = sha1.repeat(2)[..64].to_owned();
        assert_eq!(
            parse_head(sha256.as_bytes()),
            Some(Head::Detached(sha256.clone()))
        );
        // A cut object id or a ref name git would refuse is not a HEAD.
        assert_eq!(parse_head(b"0123abcd\n"), None);
        assert_eq!(parse_head(b"ref: refs/heads/a..b\n"), None);
        assert_eq!(parse_head(b"garbage here"), None);
        assert_eq!(parse_head(b""), None);
    }

    #[test]
    fn path_files_are_read_byte_for_byte_and_bounded() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let gitdir = d.join("gitdir");
        std::fs::write(&gitdir, b"/w/plain-\xff/.git\n").unwrap();
        let want = Path::new(std::ffi::OsStr::from_bytes(b"/w/plain-\xff/.git"));
        assert_eq!(read_admin_gitdir(d).as_deref(), Some(want));
        // Relative to the admin dir, as git >= 2.48 may write it.
        std::fs::write(&gitdir, "../../../w/.git \n").unwrap();
        assert_eq!(read_admin_gitdir(d), Some(d.join("../../../w/.git")));
        std::fs::write(&gitdir, " \n").unwrap();
        assert_eq!(read_admin_gitdir(d), None);
        std::fs::write(&gitdir, vec![b'a'; 64 * 1024 + 1]).unwrap();
        assert_eq!(read_admin_gitdir(d), None);

        let dot_git = d.join(".git");
        std::fs::write(&dot_git, b"gitdir: /c/.git/worktrees/x\xff\n").unwrap();
        let want = Path::new(std::ffi::OsStr::from_bytes(b"/c/.git/worktrees/x\xff"));
        assert_eq!(read_dot_git(d).as_deref(), Some(want));
        std::fs::write(&dot_git, "gitdir: ../c/.git/worktrees/x\n").unwrap();
        assert_eq!(read_dot_git(d), Some(d.join("../c/.git/worktrees/x")));
        // git wants `gitdir: ` exactly; a directory is a repository of its own.
        std::fs::write(&dot_git, "gitdir:/c\n").unwrap();
        assert_eq!(read_dot_git(d), None);
        std::fs::remove_file(&dot_git).unwrap();
        std::fs::create_dir(&dot_git).unwrap();
        assert_eq!(read_dot_git(d), None);
    }
}
