//! Pure parsers of git's machine output, on bytes (names may hold any byte): never slice a
//! line by position in a `String`.

/// The `(worktree path, branch ref)` of each worktree with a branch checked out, from
/// `git worktree list --porcelain -z` (pure): NUL-separated fields, an empty field between
/// worktrees; `worktree <path>` opens one, `branch <ref>` names its branch.
pub fn worktree_branches(raw: &[u8]) -> Vec<(String, String)> {
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
pub struct StatusEntry {
    pub xy: [u8; 2],
    pub path: Vec<u8>,
    pub orig: Option<Vec<u8>>,
}

impl StatusEntry {
    /// Is this an ignored entry (`!!`, with `--ignored`)?
    pub fn ignored(&self) -> bool {
        &self.xy == b"!!"
    }
}

/// The entries of `git status --porcelain -z` output; malformed fields are skipped.
pub fn status_z(raw: &[u8]) -> Vec<StatusEntry> {
    let mut entries = Vec::new();
    let mut fields = raw.split(|b| *b == 0);
    while let Some(field) = fields.next() {
        // "XY PATH": two status bytes, a space, then the path (at least one byte).
        let [x, y, b' ', path @ ..] = field else {
            continue;
        };
        if path.is_empty() {
            continue;
        }
        let xy = [*x, *y];
        let orig = if xy.contains(&b'R') || xy.contains(&b'C') {
            fields.next().map(<[u8]>::to_vec)
        } else {
            None
        };
        entries.push(StatusEntry {
            xy,
            path: path.to_vec(),
            orig,
        });
    }
    entries
}

/// A path as people read it: UTF-8 kept as is, every other byte (and control characters)
/// written the way git quotes them, `\ooo` in octal.
pub fn display_path(bytes: &[u8]) -> String {
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

/// The non-empty NUL-separated fields of `raw`, as display paths.
pub fn nul_paths(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(display_path)
        .collect()
}

/// The paths of gitlink (mode 160000) entries in `git ls-files --stage -z` output
/// (`<mode> <oid> <stage>\t<path>` per entry).
pub fn gitlinks(stage_z: &[u8]) -> Vec<Vec<u8>> {
    stage_z
        .split(|b| *b == 0)
        .filter(|e| e.starts_with(b"160000 "))
        .filter_map(|e| {
            let tab = e.iter().position(|b| *b == b'\t')?;
            e.get(tab + 1..).map(<[u8]>::to_vec)
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = status_z(raw);
        assert_eq!(e.len(), 4);
        assert_eq!(display_path(&e[0].path), "öc.txt");
        assert_eq!(
            e[0].orig.as_deref().map(display_path).as_deref(),
            Some("äb.txt")
        );
        assert_eq!(display_path(&e[1].path), "n\\377.txt");
        assert_eq!(display_path(&e[2].path), "src/lib.txt");
        assert!(e[3].ignored());
        assert!(status_z(b"").is_empty());
        assert!(status_z(b"R\0x\0").is_empty());
    }

    #[test]
    fn control_characters_are_quoted() {
        assert_eq!(display_path(b"a\nb\tc"), "a\\012b\\011c");
        assert_eq!(nul_paths(b"a\0\0b\xfe\0"), ["a", "b\\376"]);
    }

    #[test]
    fn gitlinks_are_found_by_mode() {
        let z = b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tsrc/a b\0\
                  160000 0123456789012345678901234567890123456789 0\tvendor/s\xffm\0";
        assert_eq!(gitlinks(z), vec![b"vendor/s\xffm".to_vec()]);
        assert!(gitlinks(b"160000 x 0\0").is_empty());
    }
}
