//! Whether a worktree's checkout matches its HEAD, judged by kardwt itself after git returned:
//! git can exit 0 with an empty index when one of its own reads fails, so
//! the index and HEAD's tree are read in-process (gix) and every tracked path is looked for
//! in its directory's listing; no file is read or hashed. Entries git leaves out of the tree on purpose
//! (skip-worktree, sparse directories) and submodules are not looked for on disk. A read that
//! fails is never taken for a match. [`unmatched`] is pure.
use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::Path;

use gix::hash::{oid, ObjectId};
use gix::index::entry::{Flags, Mode, Stage};

/// How closely the index must follow HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// Exactly HEAD's entries: a tree git has just checked out, which nobody worked in yet.
    Exactly,
    /// Not empty when HEAD is not: a tree someone may have worked in (a staged change or
    /// deletion is theirs).
    Loosely,
}

/// Why a checkout does not match HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gap {
    /// The index has no entry while HEAD's tree has some.
    EmptyIndex,
    /// How many entries of HEAD the index lacks or holds otherwise, plus entries HEAD lacks;
    /// out of how many HEAD has; the first few paths.
    Unmatched(usize, usize, Vec<String>),
    /// Tracked files missing from the tree (how many, the first few).
    Missing(usize, Vec<String>),
    /// Something the judgement needs could not be read.
    Unreadable(String),
}

/// One tracked path as HEAD or the index holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tracked<'a> {
    pub path: &'a [u8],
    pub id: &'a oid,
    pub mode: u32,
}

/// How many of `head`'s entries `staged` (the index's unconflicted entries) lacks or holds with
/// another id or mode, plus the entries it holds that HEAD lacks, with the first few paths
/// (pure). A HEAD path beneath one of `sparse` (the index's sparse directories, `dir/`) is
/// covered by it.
pub(crate) fn unmatched(
    head: &[Tracked<'_>],
    staged: &[Tracked<'_>],
    sparse: &[&[u8]],
) -> (usize, Vec<String>) {
    let index: HashMap<&[u8], (&oid, u32)> =
        staged.iter().map(|t| (t.path, (t.id, t.mode))).collect();
    let in_head: HashSet<&[u8]> = head.iter().map(|t| t.path).collect();
    let mut off: Vec<&[u8]> = Vec::new();
    for h in head {
        match index.get(h.path) {
            Some((id, mode)) if *id == h.id && *mode == h.mode => {}
            None if sparse.iter().any(|d| h.path.starts_with(d)) => {}
            _ => off.push(h.path),
        }
    }
    off.extend(
        staged
            .iter()
            .map(|t| t.path)
            .filter(|p| !in_head.contains(p)),
    );
    let first = off
        .iter()
        .take(3)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    (off.len(), first)
}

/// Does the checkout of the worktree at `tree` (its index at `<admin>/index`, which exists)
/// follow HEAD as `follow` asks, with every tracked file on disk? `None` when it does.
pub(crate) fn gap(tree: &Path, admin: &Path, follow: Follow) -> Option<Gap> {
    let unreadable =
        |what: &str, e: &dyn std::fmt::Display| Some(Gap::Unreadable(format!("{what}: {e}")));
    let repo = match super::repo::open_worktree(tree) {
        Ok(r) => r,
        Err(e) => return unreadable("cannot open the repository", &e),
    };
    // An unborn HEAD (`git worktree add --orphan`) has the empty tree. Refs in reftable,
    // which gix cannot read, are asked of git.
    let head_tree = if super::repo::is_reftable(&repo) {
        let id =
            super::query::head_tree(tree).and_then(|hex| Ok(ObjectId::from_hex(hex.as_bytes())?));
        match id {
            Ok(id) => id,
            Err(e) => return unreadable("cannot read HEAD's tree", &e),
        }
    } else {
        match repo.head_tree_id_or_empty() {
            Ok(id) => id.detach(),
            Err(e) => return unreadable("cannot read HEAD's tree", &e),
        }
    };
    // Never an index a GIT_INDEX_FILE names: the worktree's own.
    let skip_hash = repo
        .config_snapshot()
        .boolean("index.skipHash")
        .unwrap_or(false);
    let index = match gix::index::File::at(
        admin.join("index"),
        repo.object_hash(),
        skip_hash,
        Default::default(),
    ) {
        Ok(i) => i,
        Err(e) => return unreadable("cannot read the index", &e),
    };
    crate::ground::trace::phase("checkout: repository and index read");
    let head_is_empty = head_tree == ObjectId::empty_tree(repo.object_hash());
    if index.entries().is_empty() && !head_is_empty {
        return Some(Gap::EmptyIndex);
    }
    if follow == Follow::Exactly && !git_says_it_matches(&index, &head_tree) {
        let expected = match repo.index_from_tree(&head_tree) {
            Ok(i) => i,
            Err(e) => return unreadable("cannot read HEAD's tree", &e),
        };
        let head: Vec<Tracked<'_>> = tracked(&expected, |_| true);
        let staged = tracked(&index, |e| {
            e.stage() == Stage::Unconflicted && e.mode != Mode::DIR
        });
        let conflicted = index
            .entries()
            .iter()
            .filter(|e| e.stage() != Stage::Unconflicted);
        let sparse: Vec<&[u8]> = index
            .entries()
            .iter()
            .filter(|e| e.mode == Mode::DIR)
            .map(|e| e.path(&index).as_ref())
            .collect();
        let (mut n, mut first) = unmatched(&head, &staged, &sparse);
        for e in conflicted {
            n += 1;
            if first.len() < 3 {
                first.push(e.path(&index).to_string());
            }
        }
        if n > 0 {
            return Some(Gap::Unmatched(n, head.len(), first));
        }
    }
    crate::ground::trace::phase("checkout: index judged");
    missing_files(tree, &index)
}

/// git's own bookkeeping says the index is HEAD's tree: its cache tree (written by the
/// checkout) names HEAD's tree id and covers every entry. The one-lookup path for a fresh tree.
fn git_says_it_matches(index: &gix::index::File, head_tree: &oid) -> bool {
    let entries = index.entries();
    index.tree().is_some_and(|t| {
        t.id == head_tree
            && t.num_entries.is_some_and(|n| n as usize == entries.len())
            && entries.iter().all(|e| e.stage() == Stage::Unconflicted)
    })
}

/// The entries of `state` that `keep` keeps, as [`Tracked`].
fn tracked<'s>(
    state: &'s gix::index::State,
    keep: impl Fn(&gix::index::Entry) -> bool,
) -> Vec<Tracked<'s>> {
    state
        .entries()
        .iter()
        .filter(|e| keep(e))
        .map(|e| Tracked {
            path: e.path(state).as_ref(),
            id: &e.id,
            mode: e.mode.bits(),
        })
        .collect()
}

/// The tracked files of `index` that are not on disk beneath `tree`: each directory holding
/// tracked files is listed once (a few `getdents` calls where one `lstat` per file cost 5,000
/// calls for 5,000 files), and a name whose type the listing does not give is looked at with
/// `lstat`. A directory where a file belongs counts as missing; a directory that cannot be
/// listed (but is there) or a path that cannot be looked at makes the whole judgement
/// unreadable.
fn missing_files(tree: &Path, index: &gix::index::File) -> Option<Gap> {
    let root: OwnedFd = match rustix::fs::open(
        tree,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => {
            return Some(Gap::Unreadable(format!(
                "cannot open {}: {e}",
                tree.display()
            )))
        }
    };
    let mut listings: HashMap<&[u8], Option<HashMap<Vec<u8>, Kind>>> = HashMap::new();
    let mut missing: Vec<String> = Vec::new();
    let mut count = 0;
    for e in index.entries() {
        let on_disk = e.stage() == Stage::Unconflicted
            && !e.flags.contains(Flags::SKIP_WORKTREE)
            && !matches!(e.mode, Mode::DIR | Mode::COMMIT);
        if !on_disk {
            continue;
        }
        let path: &[u8] = e.path(index).as_ref();
        let (parent, name) = match path.iter().rposition(|b| *b == b'/') {
            Some(at) => (&path[..at], &path[at + 1..]),
            None => (&b""[..], path),
        };
        let listing = match listings.get(parent) {
            Some(l) => l,
            None => match list(&root, parent) {
                Ok(l) => listings.entry(parent).or_insert(l),
                Err(why) => return Some(Gap::Unreadable(why.to_string())),
            },
        };
        let there = match listing.as_ref().and_then(|l| l.get(name)) {
            None => false,
            Some(Kind::Dir) => false,
            Some(Kind::NotDir) => true,
            Some(Kind::Unknown) => match look_at(&root, path) {
                Ok(there) => there,
                Err(why) => return Some(Gap::Unreadable(why.to_string())),
            },
        };
        if !there {
            count += 1;
            if missing.len() < 3 {
                missing.push(String::from_utf8_lossy(path).into_owned());
            }
        }
    }
    (count > 0).then_some(Gap::Missing(count, missing))
}

/// A directory or file of the tree that could not be read: the checkout cannot be confirmed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} {path}: {errno}")]
struct Unread {
    op: &'static str,
    path: String,
    errno: rustix::io::Errno,
}

/// What a directory listing says a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    NotDir,
    /// The file system did not say (`DT_UNKNOWN`): looked at with `lstat`.
    Unknown,
}

/// The names in directory `dir` beneath `root` (`""`: the root itself) with their kinds;
/// `Ok(None)` when it is not there (or not a directory), an error naming it when it is there
/// but cannot be listed.
fn list(root: &OwnedFd, dir: &[u8]) -> Result<Option<HashMap<Vec<u8>, Kind>>, Unread> {
    use rustix::fs::{FileType, OFlags};
    let failed = |op, errno| Unread {
        op,
        path: String::from_utf8_lossy(dir).into_owned(),
        errno,
    };
    let rel: &[u8] = if dir.is_empty() { b"." } else { dir };
    let fd = match rustix::fs::openat(
        root,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            return Ok(None)
        }
        Err(e) => return Err(failed("open", e)),
    };
    // The stream takes the descriptor itself (`read_from` would open it a second time).
    let mut dir_stream = rustix::fs::Dir::new(fd).map_err(|e| failed("list", e))?;
    let mut names = HashMap::new();
    while let Some(entry) = dir_stream.read() {
        let entry = entry.map_err(|e| failed("list", e))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Directory => Kind::Dir,
            FileType::Unknown => Kind::Unknown,
            _ => Kind::NotDir,
        };
        names.insert(name.to_vec(), kind);
    }
    Ok(Some(names))
}

/// One `lstat` of `path` beneath `root`: is a non-directory there?
fn look_at(root: &OwnedFd, path: &[u8]) -> Result<bool, Unread> {
    use rustix::fs::{statat, AtFlags, FileType};
    match statat(root, path, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(FileType::from_raw_mode(st.st_mode) != FileType::Directory),
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(false),
        Err(errno) => Err(Unread {
            op: "look at",
            path: String::from_utf8_lossy(path).into_owned(),
            errno,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(byte: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[byte; 20])
    }

    fn t<'a>(path: &'a str, id: &'a ObjectId, mode: u32) -> Tracked<'a> {
        Tracked {
            path: path.as_bytes(),
            id,
            mode,
        }
    }

    #[test]
    fn the_index_follows_head_only_with_every_entry_alike() {
        let (a, b, c) = (&id(1), &id(2), &id(3));
        let head = [
            t("README", a, 0o100644),
            t("src/x", b, 0o100755),
            t("src/y", c, 0o120000),
        ];
        assert_eq!(unmatched(&head, &head, &[]), (0, vec![]));
        // An empty index lacks everything.
        assert_eq!(unmatched(&head, &[], &[]).0, 3);
        // Another id, another mode, an extra entry.
        let staged = [
            t("README", b, 0o100644),
            t("src/x", b, 0o100644),
            t("src/y", c, 0o120000),
            t("new", a, 0o100644),
        ];
        let (n, first) = unmatched(&head, &staged, &[]);
        assert_eq!(n, 3);
        assert_eq!(first, ["README", "src/x", "new"]);
        // A sparse directory covers what HEAD has beneath it.
        let sparse_index = [t("README", a, 0o100644)];
        assert_eq!(unmatched(&head, &sparse_index, &[b"src/"]), (0, vec![]));
        assert_eq!(unmatched(&head, &sparse_index, &[b"sr/"]).0, 2);
    }
}
