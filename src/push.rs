//! What the pre-push check inspects (SPEC R-PUSH), pure: git's ref lines on stdin, the added
//! files `git log --raw -z` reports, and whether a path or symlink target must not leave the
//! machine.
use std::path::{Component, Path, PathBuf};

use crate::seed::is_env_name;

/// One line git gives pre-push on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
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
    pub fn is_deletion(&self) -> bool {
        is_null(&self.local_oid)
    }
    /// A new remote ref: everything not yet on any remote-tracking ref is pushed.
    pub fn is_new(&self) -> bool {
        is_null(&self.remote_oid)
    }
}

/// Parse git's `<local ref> <local oid> <remote ref> <remote oid>` lines; blank lines are
/// skipped, a malformed one is an error naming it.
pub fn parse_updates(input: &str) -> Result<Vec<RefUpdate>, String> {
    input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(
            |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                [a, b, c, d] => Ok(RefUpdate {
                    local_ref: (*a).to_owned(),
                    local_oid: (*b).to_owned(),
                    remote_ref: (*c).to_owned(),
                    remote_oid: (*d).to_owned(),
                }),
                _ => Err(format!("unexpected pre-push input line {l:?}")),
            },
        )
        .collect()
}

/// A file a pushed commit adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub commit: String,
    pub mode: String,
    pub blob: String,
    pub path: String,
}

/// Parse `git log --format=%H --raw --no-renames --diff-filter=A -z --no-abbrev` output.
pub fn parse_added(raw: &str) -> Vec<Added> {
    let mut out = Vec::new();
    let mut commit = String::new();
    let mut tokens = raw.split('\0');
    while let Some(tok) = tokens.next() {
        let tok = tok.trim_start_matches('\n');
        if let Some(meta) = tok.strip_prefix(':') {
            let fields: Vec<&str> = meta.split(' ').collect();
            let path = tokens.next().unwrap_or_default().to_owned();
            if let [_, new_mode, _, new_oid, ..] = fields.as_slice() {
                out.push(Added {
                    commit: commit.clone(),
                    mode: (*new_mode).to_owned(),
                    blob: (*new_oid).to_owned(),
                    path,
                });
            }
        } else if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_hexdigit()) {
            commit = tok.to_owned();
        }
    }
    out
}

/// A root-level `.env` or `.env.*` path (whether ignore rules catch it is asked of git).
pub fn is_root_env(path: &str) -> bool {
    !path.contains('/') && is_env_name(path)
}

/// Does a symlink at `path` (relative to the repository root) with this target point outside
/// the repository?
pub fn link_leaves_repo(path: &str, target: &str) -> bool {
    if Path::new(target).is_absolute() {
        return true;
    }
    let mut at: PathBuf = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for c in Path::new(target).components() {
        match c {
            Component::ParentDir => {
                if !at.pop() {
                    return true;
                }
            }
            Component::Normal(n) => at.push(n),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn added_files_from_raw_log() {
        let raw = "8ec4\0\n:000000 100644 0000 6178 A\0b c\0:000000 120000 0000 9b40 A\0lnk\0f2b8\0\n:000000 100644 0000 7898 A\0a\0";
        let added = parse_added(raw);
        assert_eq!(added.len(), 3);
        assert_eq!(
            added[0],
            Added {
                commit: "8ec4".into(),
                mode: "100644".into(),
                blob: "6178".into(),
                path: "b c".into()
            }
        );
        assert_eq!(added[1].mode, "120000");
        assert_eq!(added[2].commit, "f2b8");
    }

    #[test]
    fn env_paths_and_escaping_links() {
        assert!(is_root_env(".env.prod"));
        assert!(!is_root_env("sub/.env"));
        assert!(!is_root_env(".env.example/x"));
        assert!(link_leaves_repo("lnk", "/etc/passwd"));
        assert!(link_leaves_repo("lnk", "../outside"));
        assert!(link_leaves_repo("a/lnk", "../../outside"));
        assert!(!link_leaves_repo("a/lnk", "../inside"));
        assert!(!link_leaves_repo("lnk", "docs/readme"));
        assert!(!link_leaves_repo("a/b/lnk", "./../c"));
    }
}
