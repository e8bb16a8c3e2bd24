//! Pure parsers of git's machine output, on bytes (names may hold any byte): never slice a
//! line by position in a `String`. Also object ids, `.env` names and CRLF, which the pre-push
//! check and the seeding both read.
use std::collections::BTreeMap;

/// The `(worktree path, branch ref)` of each worktree with a branch checked out, from
/// `git worktree list --porcelain -z` (pure): NUL-separated fields, an empty field between
/// worktrees; `worktree <path>` opens one, `branch <ref>` names its branch.
pub(crate) fn worktree_branches(raw: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut path = String::new();
    for field in raw.split(|b| *b == 0) {
        if let Some(p) = field.strip_prefix(b"worktree ") {
            path = display_path(p);
        } else if let Some(r) = field.strip_prefix(b"branch ") {
            out.push((path.clone(), String::from_utf8_lossy(r).into_owned()));
        }
    }
    out
}

/// One entry of `git status --porcelain -z` (v1): the two status letters, the path, and for
/// a rename or copy the original path (git writes it as the next NUL-separated field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusEntry {
    pub xy: [u8; 2],
    pub path: Vec<u8>,
    pub orig: Option<Vec<u8>>,
}

impl StatusEntry {
    /// Is this an ignored entry (`!!`, with `--ignored`)?
    pub(crate) fn ignored(&self) -> bool {
        &self.xy == b"!!"
    }
}

/// Why output of git's that kardwt reads strictly is not what it seems: never a shorter list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Garbled {
    /// The output does not end with the NUL of its last entry: it was cut short.
    #[error(
        "its output ends in the middle of an entry ({0} bytes, no final NUL): it was cut short"
    )]
    CutShort(usize),
    /// A field this git command never writes (shown as people read paths).
    #[error("an entry git {command} never writes: {entry}")]
    Strange {
        command: &'static str,
        entry: String,
    },
    #[error("an entry without a path")]
    NoPath,
    #[error("a rename of {0} without its original path")]
    NoOriginal(String),
}

/// A field `git <command>` never writes.
fn strange(command: &'static str, entry: &[u8]) -> Garbled {
    Garbled::Strange {
        command,
        entry: display_path(entry),
    }
}

/// The entries of `git status --porcelain -z` output, read strictly: output that does not end
/// with the NUL of its last entry was cut short, and a field git never writes means the output
/// is not what it seems; either is an error, never a shorter list.
pub(crate) fn status_z(raw: &[u8]) -> Result<Vec<StatusEntry>, Garbled> {
    let mut entries = Vec::new();
    let Some(body) = complete_z(raw)? else {
        return Ok(entries);
    };
    let mut fields = body.split(|b| *b == 0);
    while let Some(field) = fields.next() {
        // "XY PATH": two status bytes, a space, then the path (at least one byte).
        let [x, y, b' ', path @ ..] = field else {
            return Err(strange("status", field));
        };
        if path.is_empty() {
            return Err(Garbled::NoPath);
        }
        let xy = [*x, *y];
        let orig = if xy.contains(&b'R') || xy.contains(&b'C') {
            match fields.next() {
                Some(o) if !o.is_empty() => Some(o.to_vec()),
                _ => return Err(Garbled::NoOriginal(display_path(path))),
            }
        } else {
            None
        };
        entries.push(StatusEntry {
            xy,
            path: path.to_vec(),
            orig,
        });
    }
    Ok(entries)
}

/// `raw` without the NUL that ends its last field (`None` when empty); an error when it does
/// not end with one: the output was cut short.
fn complete_z(raw: &[u8]) -> Result<Option<&[u8]>, Garbled> {
    match raw.split_last() {
        None => Ok(None),
        Some((0, body)) => Ok(Some(body)),
        Some(_) => Err(Garbled::CutShort(raw.len())),
    }
}

/// One entry of `git ls-files --stage -z`: `<mode> <oid> <stage>\t<path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// The octal mode as git writes it (`100644`, `120000`, `160000` for a gitlink).
    pub mode: Vec<u8>,
    pub path: Vec<u8>,
}

impl IndexEntry {
    /// A submodule's commit (mode 160000).
    pub(crate) fn is_gitlink(&self) -> bool {
        self.mode == b"160000"
    }
}

/// The entries of `git ls-files --stage -z` output, read strictly like [`status_z`].
pub(crate) fn index_z(raw: &[u8]) -> Result<Vec<IndexEntry>, Garbled> {
    let Some(body) = complete_z(raw)? else {
        return Ok(Vec::new());
    };
    body.split(|b| *b == 0)
        .map(|e| {
            let tab = e.iter().position(|b| *b == b'\t');
            let (head, path) = match tab {
                Some(t) => (&e[..t], &e[t + 1..]),
                None => (e, &b""[..]),
            };
            let mode = head.split(|b| *b == b' ').next().unwrap_or_default();
            if path.is_empty() || mode.is_empty() {
                return Err(strange("ls-files", e));
            }
            Ok(IndexEntry {
                mode: mode.to_vec(),
                path: path.to_vec(),
            })
        })
        .collect()
}

/// An index entry git keeps out of `git status`: marked skip-worktree or assume-unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlaggedEntry {
    /// The octal mode as git writes it.
    pub mode: Vec<u8>,
    /// The blob id the index holds for it.
    pub oid: String,
    pub path: Vec<u8>,
}

/// The stage-0 entries of `git ls-files -v --stage -z` output tagged skip-worktree (`S`) or
/// assume-unchanged (a lowercase tag), read strictly like [`status_z`] (pure).
pub(crate) fn flagged_z(raw: &[u8]) -> Result<Vec<FlaggedEntry>, Garbled> {
    let Some(body) = complete_z(raw)? else {
        return Ok(Vec::new());
    };
    let mut flagged = Vec::new();
    for e in body.split(|b| *b == 0) {
        let strange = || strange("ls-files", e);
        let tab = e.iter().position(|b| *b == b'\t').ok_or_else(strange)?;
        let (head, path) = (&e[..tab], &e[tab + 1..]);
        let fields: Vec<&[u8]> = head.split(|b| *b == b' ').collect();
        let [tag, mode, oid, stage] = fields[..] else {
            return Err(strange());
        };
        let [tag] = tag else {
            return Err(strange());
        };
        let marked = *tag == b'S' || tag.is_ascii_lowercase();
        if path.is_empty() || !marked || stage != b"0" {
            continue;
        }
        flagged.push(FlaggedEntry {
            mode: mode.to_vec(),
            oid: String::from_utf8_lossy(oid).into_owned(),
            path: path.to_vec(),
        });
    }
    Ok(flagged)
}

/// `git rev-list --left-right --count`'s one line, `<left>\t<right>\n`, as two numbers.
pub(crate) fn left_right_count(out: &str) -> Option<(u64, u64)> {
    let (left, right) = out.trim_end_matches('\n').split_once('\t')?;
    Some((left.parse().ok()?, right.parse().ok()?))
}

/// A path as people read it: UTF-8 kept as is, every other byte (and control characters)
/// written the way git quotes them, `\ooo` in octal.
pub(crate) fn display_path(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out
}

/// Is `oid` a full hexadecimal object id (SHA-1 or SHA-256)?
pub(crate) fn is_oid(oid: &str) -> bool {
    (oid.len() == 40 || oid.len() == 64) && oid.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Is `name` (one component) a `.env` or `.env.*` name? Compared without regard to ASCII
/// case when `ignorecase` (git's `core.ignorecase`).
pub(crate) fn is_env_name(name: &[u8], ignorecase: bool) -> bool {
    let lower;
    let name = if ignorecase {
        lower = name.to_ascii_lowercase();
        &lower[..]
    } else {
        name
    };
    name == b".env" || (name.starts_with(b".env.") && name.len() > b".env.".len())
}

/// `data` with every CRLF made LF (what git's text conversion commits).
pub(crate) fn crlf_to_lf(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for (i, b) in data.iter().enumerate() {
        if !(*b == b'\r' && data.get(i + 1) == Some(&b'\n')) {
            out.push(*b);
        }
    }
    out
}

/// The contents `git cat-file --batch` printed, by object id (missing objects are left out).
pub(crate) fn parse_batch(raw: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut rest = raw;
    while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
        let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
        rest = &rest[nl + 1..];
        let fields: Vec<&str> = header.split(' ').collect();
        if let [oid, _, size] = fields.as_slice() {
            let Ok(size) = size.parse::<usize>() else {
                break;
            };
            if size > rest.len() {
                break;
            }
            out.insert((*oid).to_owned(), rest[..size].to_vec());
            rest = rest.get(size + 1..).unwrap_or_default();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_right_counts_are_two_numbers_or_nothing() {
        assert_eq!(left_right_count("3\t12\n"), Some((3, 12)));
        assert_eq!(left_right_count("0\t0"), Some((0, 0)));
        assert_eq!(left_right_count("3 12\n"), None);
        assert_eq!(left_right_count("x\t1\n"), None);
        assert_eq!(left_right_count(""), None);
    }

    #[test]
    fn only_flagged_stage_zero_entries_are_kept() {
        let raw = b"H 100644 aa 0\tplain\0S 100644 bb 0\tsparse\0h 120000 cc 0\tlink\0s 100755 dd 0\tboth\0M 100644 ee 1\tconflict\0";
        let got = flagged_z(raw).unwrap();
        let paths: Vec<&[u8]> = got.iter().map(|e| e.path.as_slice()).collect();
        assert_eq!(paths, vec![&b"sparse"[..], b"link", b"both"]);
        assert_eq!(got[1].mode, b"120000");
        assert_eq!(got[1].oid, "cc");
        assert!(flagged_z(b"S 100644 bb 0\tcut").is_err());
        assert!(flagged_z(b"S 100644 0\tbad\0").is_err());
    }

    #[test]
    fn worktree_branches_skip_detached_and_bare_trees() {
        let raw = b"worktree /r\0HEAD 1111\0branch refs/heads/main\0\0worktree /r.w/a b\0HEAD 2222\0detached\0\0worktree /r.w/c\0HEAD 3333\0branch refs/heads/card/c\0locked\0\0";
        assert_eq!(
            worktree_branches(raw),
            [
                ("/r".to_owned(), "refs/heads/main".to_owned()),
                ("/r.w/c".to_owned(), "refs/heads/card/c".to_owned())
            ]
        );
    }

    #[test]
    fn renames_keep_their_original_and_any_byte() {
        let raw = b"R  \xc3\xb6c.txt\0\xc3\xa4b.txt\0?? n\xff.txt\0 M src/lib.txt\0!! .env\0";
        let e = status_z(raw).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(display_path(&e[0].path), "öc.txt");
        assert_eq!(
            e[0].orig.as_deref().map(display_path).as_deref(),
            Some("äb.txt")
        );
        assert_eq!(display_path(&e[1].path), "n\\377.txt");
        assert_eq!(display_path(&e[2].path), "src/lib.txt");
        assert!(e[3].ignored());
        assert!(status_z(b"").unwrap().is_empty());
    }

    #[test]
    fn status_output_cut_short_or_malformed_is_an_error() {
        // The last entry's NUL is missing: git stopped writing (or kardwt reading) midway.
        assert_eq!(
            status_z(b"?? a.txt\0?? b.t").unwrap_err(),
            Garbled::CutShort(15)
        );
        assert!(status_z(b"?? a.txt").is_err());
        assert!(status_z(b"R\0x\0").is_err());
        assert!(
            status_z(b"R  new\0").is_err(),
            "a rename without its original"
        );
        assert!(status_z(b"?? \0").is_err());
        assert!(status_z(b"\0").is_err());
    }

    #[test]
    fn control_characters_are_quoted() {
        assert_eq!(display_path(b"a\nb\tc"), "a\\012b\\011c");
    }

    #[test]
    fn index_entries_with_modes_and_any_byte() {
        let z = b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tsrc/a b\0\
                  160000 0123456789012345678901234567890123456789 0\tvendor/s\xffm\0";
        let e = index_z(z).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].path, b"src/a b");
        assert!(!e[0].is_gitlink() && e[1].is_gitlink());
        assert_eq!(e[1].path, b"vendor/s\xffm");
        assert!(index_z(b"").unwrap().is_empty());
        assert!(index_z(b"160000 x 0\0").is_err());
        assert_eq!(
            index_z(b"100644 x 0\ta").unwrap_err(),
            Garbled::CutShort(12)
        );
    }
}
