//! What the pre-push check inspects, pure: git's ref lines on stdin, the objects a push sends,
//! the entries `git log --raw -z --diff-merges=separate` reports (paths as raw bytes), the
//! symlinks of a pushed tree, and whether a path or a symlink target must not leave the machine.
use std::collections::BTreeMap;

use crate::git::is_oid;
use crate::ground::error::{Code, Kind};

/// One line git gives pre-push on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefUpdate {
    pub local_ref: String,
    pub local_oid: String,
    pub remote_ref: String,
    pub remote_oid: String,
}

fn is_null(oid: &str) -> bool {
    !oid.is_empty() && oid.bytes().all(|b| b == b'0')
}

impl RefUpdate {
    /// A deletion pushes nothing.
    pub(crate) fn is_deletion(&self) -> bool {
        is_null(&self.local_oid)
    }
    /// A new remote ref: the remote gave no old tip to stop at.
    pub(crate) fn is_new(&self) -> bool {
        is_null(&self.remote_oid)
    }
}

/// A line on pre-push's stdin that is not `<local ref> <local oid> <remote ref> <remote oid>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected pre-push input line {0:?}")]
pub(crate) struct BadLine(pub String);

impl Kind for BadLine {
    fn code(&self) -> Code {
        Code::Failed
    }
}

/// Parse git's `<local ref> <local oid> <remote ref> <remote oid>` lines; blank lines are
/// skipped, a malformed one (or an object id that is not hex) is an error naming it.
pub(crate) fn parse_updates(input: &str) -> Result<Vec<RefUpdate>, BadLine> {
    input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                [a, b, c, d] if is_oid(b) && is_oid(d) => Ok(RefUpdate {
                    local_ref: (*a).to_owned(),
                    local_oid: (*b).to_owned(),
                    remote_ref: (*c).to_owned(),
                    remote_oid: (*d).to_owned(),
                }),
                _ => Err(BadLine(l.to_owned())),
            },
        )
        .collect()
}

/// One entry of a pushed commit's diff against one of its parents (or the empty tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub commit: String,
    pub old_mode: String,
    pub mode: String,
    pub blob: String,
    /// `A`, `M`, `T`, `D`, … (renames and copies are off: they come as `D` + `A`).
    pub status: u8,
    pub path: Vec<u8>,
    /// How many parents the commit has (at least 1: a root commit is diffed against the empty
    /// tree). A merge has one diff, so one entry for a path, per parent.
    pub parents: usize,
}

impl Entry {
    /// Does this entry put content into the pushed tree (anything but a deletion)?
    pub(crate) fn brings(&self) -> bool {
        self.status != b'D'
    }
    /// Does it touch a symlink (made, retargeted, or replaced by something else)?
    pub(crate) fn touches_symlink(&self) -> bool {
        self.mode == "120000" || self.old_mode == "120000"
    }
}

/// Parse `git log --format='%H %P' --raw -z --no-renames --no-abbrev` output (with
/// `--diff-merges=separate`, a merge's header repeats before its diff against each parent).
/// A path is the token after each `:` meta token, so any byte in a name is read as is.
pub(crate) fn parse_entries(raw: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut commit = String::new();
    let mut parents = 1;
    let mut tokens = raw.split(|b| *b == 0);
    while let Some(tok) = tokens.next() {
        let start = tok.iter().position(|b| *b != b'\n').unwrap_or(tok.len());
        let tok = &tok[start..];
        if let Some(meta) = tok.strip_prefix(b":") {
            let meta = String::from_utf8_lossy(meta);
            let fields: Vec<&str> = meta.split(' ').collect();
            let path = tokens.next().unwrap_or_default().to_vec();
            if let [old_mode, mode, _, blob, status, ..] = fields.as_slice() {
                out.push(Entry {
                    commit: commit.clone(),
                    old_mode: (*old_mode).to_owned(),
                    mode: (*mode).to_owned(),
                    blob: (*blob).to_owned(),
                    status: status.bytes().next().unwrap_or(b'?'),
                    path,
                    parents,
                });
            }
        } else if tok.first().is_some_and(u8::is_ascii_hexdigit)
            && tok.iter().all(|b| b.is_ascii_hexdigit() || *b == b' ')
        {
            let header = String::from_utf8_lossy(tok);
            let mut ids = header.split_whitespace();
            commit = ids.next().unwrap_or_default().to_owned();
            parents = ids.count().max(1);
        }
    }
    out
}

/// The entries that put into their commit's tree content that differs from every parent's:
/// all but deletions of an ordinary commit; of a merge, only a path whose result shows in its
/// diff against each parent (what it brought from one parent is that parent's, checked with
/// that parent's own commits or already on the remote). Each once, in order.
pub(crate) fn introduced(entries: &[Entry]) -> Vec<&Entry> {
    let key = |e: &Entry| {
        (
            e.commit.clone(),
            e.path.clone(),
            e.mode.clone(),
            e.blob.clone(),
        )
    };
    let mut seen: BTreeMap<(String, Vec<u8>, String, String), usize> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.parents > 1) {
        *seen.entry(key(e)).or_default() += 1;
    }
    entries
        .iter()
        .filter(|e| e.brings())
        .filter(|e| e.parents <= 1 || seen.remove(&key(e)).is_some_and(|n| n >= e.parents))
        .collect()
}

/// The last component of a slash-separated path.
pub(crate) fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|b| *b == b'/').next().unwrap_or(path)
}

/// Do two paths name the same file (ASCII case folded when `ignorecase`)?
pub(crate) fn same_path(a: &[u8], b: &[u8], ignorecase: bool) -> bool {
    if ignorecase {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// Is `path` the shared path `shared` or beneath it?
pub(crate) fn reaches(path: &[u8], shared: &[u8], ignorecase: bool) -> bool {
    same_path(path, shared, ignorecase)
        || (path.len() > shared.len()
            && path[shared.len()] == b'/'
            && same_path(&path[..shared.len()], shared, ignorecase))
}

/// Where a symlink of a pushed tree leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// Out of the repository (absolute, or `..` past the root at some step).
    Leaves,
    /// More than 40 symlinks followed: a loop, refused like git and the kernel refuse it.
    Loop,
    /// To this path inside the repository.
    Inside(Vec<u8>),
}

/// Follow the symlink at `path` (relative to the root, target `target`) through the tree's
/// other symlinks (`links`: path → target), component by component as the kernel would.
pub(crate) fn resolve_link(
    path: &[u8],
    target: &[u8],
    links: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> Resolved {
    let components = |t: &[u8]| -> Vec<Vec<u8>> {
        t.split(|b| *b == b'/')
            .filter(|c| !c.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    if target.starts_with(b"/") {
        return Resolved::Leaves;
    }
    let mut at: Vec<Vec<u8>> = components(path);
    at.pop();
    let mut todo: Vec<Vec<u8>> = components(target);
    todo.reverse();
    let mut hops = 0;
    while let Some(c) = todo.pop() {
        match &c[..] {
            b"." => {}
            b".." => {
                if at.pop().is_none() {
                    return Resolved::Leaves;
                }
            }
            _ => {
                at.push(c);
                if let Some(next) = links.get(&at.join(&b'/')) {
                    hops += 1;
                    if hops > 40 {
                        return Resolved::Loop;
                    }
                    if next.starts_with(b"/") {
                        return Resolved::Leaves;
                    }
                    at.pop();
                    todo.extend(components(next).into_iter().rev());
                }
            }
        }
    }
    Resolved::Inside(at.join(&b'/'))
}

/// A tree's symlinks: (path, blob id).
pub(crate) type TreeLinks = Vec<(Vec<u8>, String)>;

/// The symlinks in `git ls-tree -r -z --full-tree` output.
pub(crate) fn parse_tree_links(raw: &[u8]) -> TreeLinks {
    raw.split(|b| *b == 0)
        .filter_map(|rec| {
            let tab = rec.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&rec[..tab]);
            match meta.split(' ').collect::<Vec<_>>().as_slice() {
                ["120000", "blob", oid] => Some((rec[tab + 1..].to_vec(), (*oid).to_owned())),
                _ => None,
            }
        })
        .collect()
}

/// What the push sends: the pushed commits' entries that bring content, and every object.
pub(crate) struct Sent<'a> {
    pub brought: Vec<&'a Entry>,
    /// Object id → the path `rev-list` first reached it at.
    pub objects: &'a BTreeMap<String, Vec<u8>>,
    /// The pushed refs, to name the one that names an object itself.
    pub updates: &'a [RefUpdate],
}

impl Sent<'_> {
    /// Where the object `oid` is sent: the pushed commit that brings it, by path, or the object
    /// with the path it was reached at (a tag or a notes ref may send it without a commit).
    pub(crate) fn site(&self, oid: &str) -> String {
        if let Some(e) = self.brought.iter().find(|e| e.blob == oid) {
            return format!("commit {} {} {}", e.commit, says(e), show(&e.path));
        }
        match self.objects.get(oid) {
            Some(path) if !path.is_empty() => {
                format!("the push sends {} as {oid}", show(path))
            }
            _ => match self.updates.iter().find(|u| u.local_oid == oid) {
                Some(u) => format!("the push sends {} as {oid}", u.local_ref),
                None => format!("the push sends the object {oid}"),
            },
        }
    }
}

pub(crate) fn says(e: &Entry) -> &'static str {
    if e.status == b'A' {
        "adds"
    } else {
        "changes"
    }
}

/// The blob ids in `git ls-tree -r -z --full-tree` output (symlinks included).
pub(crate) fn tree_blobs(raw: &[u8]) -> std::collections::BTreeSet<String> {
    raw.split(|b| *b == 0)
        .filter_map(|rec| {
            let tab = rec.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&rec[..tab]);
            match meta.split(' ').collect::<Vec<_>>().as_slice() {
                [_, "blob", oid] => Some((*oid).to_owned()),
                _ => None,
            }
        })
        .collect()
}

/// The objects `git rev-list --objects` printed, each with the path it was first reached at
/// (empty for a commit, a tag, a root tree or an object a ref names).
pub(crate) fn parse_objects(raw: &[u8]) -> BTreeMap<String, Vec<u8>> {
    raw.split(|b| *b == b'\n')
        .filter_map(|line| {
            let sp = line.iter().position(|b| *b == b' ').unwrap_or(line.len());
            let oid = std::str::from_utf8(&line[..sp]).ok()?;
            let path = line.get(sp + 1..).unwrap_or_default().to_vec();
            is_oid(oid).then(|| (oid.to_owned(), path))
        })
        .collect()
}

/// The sizes `git cat-file --batch-check` printed for blobs, by object id (anything else, and
/// missing objects, left out).
pub(crate) fn parse_batch_check(raw: &[u8]) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(raw)
        .lines()
        .filter_map(|l| match l.split(' ').collect::<Vec<_>>().as_slice() {
            [oid, "blob", size] => Some(((*oid).to_owned(), size.parse().ok()?)),
            _ => None,
        })
        .collect()
}

/// A path for a message: valid UTF-8 as is, other bytes as `\xNN`.
pub(crate) fn show(path: &[u8]) -> String {
    String::from_utf8(path.to_vec()).unwrap_or_else(|_| {
        path.iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    (*b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{crlf_to_lf, is_env_name, parse_batch};

    #[test]
    fn updates() {
        let z = "0".repeat(40);
        let a = "a".repeat(40);
        let input =
            format!("refs/heads/x {a} refs/heads/x {z}\n\nrefs/heads/y {z} refs/heads/y {a}\n");
        let u = parse_updates(&input).unwrap();
        assert_eq!(u.len(), 2);
        assert!(u[0].is_new() && !u[0].is_deletion());
        assert!(u[1].is_deletion());
        assert!(parse_updates("one two\n").is_err());
        assert!(parse_updates(&format!("a --all b {z}\n")).is_err());
    }

    #[test]
    fn entries_from_raw_log() {
        let raw = [
            &b"8ec4\0\n:000000 100644 0000 6178 A\0b c\0:100644 120000 1111 9b40 T\0lnk\0"[..],
            b"f2b8\0\n:100644 100644 2222 7898 M\0.env.\xc3\xa9\0",
            b"f2b8\0\n:000000 100644 0000 7898 A\0:x\0",
            b"aa11 8ec4 f2b8\0\n:000000 100644 0000 7898 A\0m\0:100644 100644 3333 5555 M\0n\0",
            b"aa11 8ec4 f2b8\0\n:000000 100644 0000 7898 A\0m\0",
        ]
        .concat();
        let e = parse_entries(&raw);
        assert_eq!(e.len(), 7);
        assert_eq!(
            (e[4].commit.as_str(), e[4].parents, e[0].parents),
            ("aa11", 2, 1)
        );
        // The merge: `m` differs from both parents, `n` is one parent's version.
        let new: Vec<&[u8]> = introduced(&e).iter().map(|e| &e.path[..]).collect();
        assert_eq!(
            new,
            [&b"b c"[..], b"lnk", ".env.\u{e9}".as_bytes(), b":x", b"m"]
        );
        assert_eq!(
            e[0],
            Entry {
                commit: "8ec4".into(),
                old_mode: "000000".into(),
                mode: "100644".into(),
                blob: "6178".into(),
                status: b'A',
                path: b"b c".to_vec(),
                parents: 1,
            }
        );
        assert!(e[1].touches_symlink() && e[1].status == b'T');
        assert_eq!(e[2].commit, "f2b8");
        assert_eq!(e[2].path, ".env.é".as_bytes());
        assert_eq!(e[3].path, b":x");
    }

    #[test]
    fn env_names() {
        assert!(is_env_name(b".env.prod", false));
        assert!(is_env_name(basename(b"s/.env"), false));
        assert!(!is_env_name(b".ENV", false));
        assert!(is_env_name(b".ENV", true));
        assert!(!is_env_name(b".env.", false));
        assert!(!is_env_name(b"x.env", false));
        assert!(reaches(b".claude/skills/x", b".claude/skills", false));
        assert!(!reaches(b".claude/skillsx", b".claude/skills", false));
        assert!(reaches(b".Env", b".env", true));
    }

    #[test]
    fn links_resolve_through_the_tree() {
        let none = BTreeMap::new();
        let r = |p: &str, t: &str, l: &BTreeMap<Vec<u8>, Vec<u8>>| {
            resolve_link(p.as_bytes(), t.as_bytes(), l)
        };
        let inside = |s: &str| Resolved::Inside(s.as_bytes().to_vec());
        assert_eq!(r("lnk", "/etc/passwd", &none), Resolved::Leaves);
        assert_eq!(r("lnk", "../outside", &none), Resolved::Leaves);
        assert_eq!(r("a/lnk", "../../outside", &none), Resolved::Leaves);
        assert_eq!(r("a/lnk", "../inside", &none), inside("inside"));
        assert_eq!(r("lnk", "docs/readme", &none), inside("docs/readme"));
        assert_eq!(r("a/b/lnk", "./../c", &none), inside("a/c"));
        assert_eq!(r("lnk", "dot/../.env", &none), inside(".env"));
        let mut tree = BTreeMap::new();
        tree.insert(b"dot".to_vec(), b".".to_vec());
        assert_eq!(r("leak", "dot/../.env", &tree), Resolved::Leaves);
        assert_eq!(r("ok", "dot/dot/README.md", &tree), inside("README.md"));
        tree.insert(b"d/up".to_vec(), b"..".to_vec());
        assert_eq!(r("x", "d/up/d/up/.env", &tree), inside(".env"));
        tree.insert(b"abs".to_vec(), b"/etc".to_vec());
        assert_eq!(r("x", "abs/passwd", &tree), Resolved::Leaves);
        tree.insert(b"loop".to_vec(), b"loop".to_vec());
        assert_eq!(r("x", "loop", &tree), Resolved::Loop);
    }

    #[test]
    fn trees_and_batches() {
        let tree = b"100644 blob aaaa\tREADME\x00120000 blob bbbb\tl\xffnk\x00040000 tree cccc\td";
        assert_eq!(
            parse_tree_links(tree),
            vec![(b"l\xffnk".to_vec(), "bbbb".to_owned())]
        );
        let batch = b"bbbb blob 3\n../\nxx missing\ncccc blob 0\n\n";
        let m = parse_batch(batch);
        assert_eq!(m["bbbb"], b"../");
        assert_eq!(m["cccc"], b"");
        assert_eq!(show(b"a\xffb"), "a\\xffb");
        assert_eq!(crlf_to_lf(b"a\r\nb\rc\r\n"), b"a\nb\rc\n");
        let blobs = tree_blobs(b"100644 blob aaaa\t.env.example\x00120000 blob bbbb\tl\tnk\x00160000 commit cccc\tsub\x00");
        assert!(blobs.contains("aaaa") && blobs.contains("bbbb") && blobs.len() == 2);
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let objects = parse_objects(format!("{a}\n{b} d/e f\nnot an oid\n").as_bytes());
        assert_eq!(objects.len(), 2);
        assert_eq!(
            (&objects[&a][..], &objects[&b][..]),
            (&b""[..], &b"d/e f"[..])
        );
        let sizes = parse_batch_check(b"aaaa blob 12\nbbbb missing\ncccc tree 40\n");
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [("aaaa".into(), 12)]);
    }
}
