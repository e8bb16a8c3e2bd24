//! What names a tree, in the spellings the prepare cache looks for in outputs before storing
//! them, so a hit never hands one tree another's identity: its absolute path and its git dir's
//! (as given and with symlinks resolved), its directory name, its git dir's name, its branch and
//! its card id, each name also with its separators (`/ . _ -`) turned into `-`, into `_` or
//! dropped, and the fields of the locks held while the hook ran, all matched in any ASCII case. A spelling shorter than [`SHORTEST`] bytes is not
//! looked for (it would turn up by chance in large outputs): a tree whose directory name, git
//! dir name or branch is that short never stores its outputs; a card id that short is looked
//! for only inside the longer names (a prepare whose outputs are cached is not given it).
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use anyhow::{Context as _, Result};

/// The shortest spelling looked for, in bytes: `card-1`, the shortest directory name of a tree
/// `add` makes, is one.
pub const SHORTEST: usize = 6;

/// The tree whose outputs are stored.
pub struct Tree<'a> {
    pub path: &'a Path,
    /// Its admin dir (`<common dir>/worktrees/<name>`).
    pub admin: &'a Path,
    pub card: &'a str,
    /// Empty when its HEAD was detached.
    pub branch: &'a str,
}

/// One spelling looked for, and what it spells.
#[derive(Debug)]
struct Needle {
    bytes: Vec<u8>,
    what: &'static str,
}

/// Every spelling of a tree's identity, searched for in one pass.
#[derive(Debug)]
pub struct Finder {
    needles: Vec<Needle>,
    automaton: AhoCorasick,
}

impl Finder {
    /// The spellings of `tree`'s identity, or why its outputs cannot be searched for them.
    pub fn of(tree: &Tree<'_>) -> Result<Finder> {
        let mut needles: Vec<Needle> = Vec::new();
        let mut add = |bytes: Vec<u8>, what: &'static str| {
            if bytes.len() >= SHORTEST
                && !needles.iter().any(|n| n.bytes.eq_ignore_ascii_case(&bytes))
            {
                needles.push(Needle { bytes, what });
            }
        };
        let real = |p: &Path| std::fs::canonicalize(p).ok();
        let tree_paths = [Some(tree.path.to_path_buf()), real(tree.path)];
        let admin_paths = [Some(tree.admin.to_path_buf()), real(tree.admin)];
        // Whole paths first: a match that starts at the same byte is named by the longest.
        for (paths, what) in [(&tree_paths, "path"), (&admin_paths, "git dir")] {
            for p in paths.iter().flatten() {
                add(p.as_os_str().as_bytes().to_vec(), what);
            }
        }
        let name = |p: &Path| p.file_name().map(|n| n.as_bytes().to_vec());
        let mut names: Vec<(Vec<u8>, &'static str)> = Vec::new();
        for p in tree_paths.iter().flatten() {
            names.extend(name(p).map(|n| (n, "directory name")));
        }
        for p in admin_paths.iter().flatten() {
            names.extend(name(p).map(|n| (n, "git dir name")));
        }
        if !tree.branch.is_empty() {
            names.push((tree.branch.as_bytes().to_vec(), "branch"));
        }
        for (n, what) in &names {
            if n.len() < SHORTEST {
                anyhow::bail!(
                    "this tree's {what} {:?} is shorter than {SHORTEST} bytes, too short to \
                     look for in its outputs",
                    String::from_utf8_lossy(n)
                );
            }
        }
        names.push((tree.card.as_bytes().to_vec(), "card"));
        for (n, what) in names {
            for spelled in spellings(&n) {
                add(spelled, what);
            }
        }
        // The locks held while the hook ran (`KARDWT_HELD_LOCKS`, given to it so a kardwt command
        // it runs fails at once): each field names this card's lock or the command holding it.
        for line in crate::sys::held_for_hooks().lines() {
            for field in line.split('\t') {
                add(field.as_bytes().to_vec(), "held lock");
            }
        }
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .build(needles.iter().map(|n| &n.bytes))
            .context("cannot build the search for this tree's names")?;
        Ok(Finder { needles, automaton })
    }

    /// The longest spelling's length (a search across two reads keeps one byte less of the
    /// first).
    pub fn longest(&self) -> usize {
        self.automaton.max_pattern_len()
    }

    /// What `hay` names first, in words ("this tree's directory name card-1").
    pub fn find(&self, hay: &[u8]) -> Option<String> {
        let m = self.automaton.find(hay)?;
        let n = &self.needles[m.pattern().as_usize()];
        Some(format!(
            "this tree's {} {}",
            n.what,
            String::from_utf8_lossy(&n.bytes)
        ))
    }
}

/// `name` as is, and with its separators turned into `-`, into `_`, and dropped.
fn spellings(name: &[u8]) -> Vec<Vec<u8>> {
    let sep = |b: &u8| matches!(b, b'/' | b'.' | b'_' | b'-');
    let turned =
        |to: u8| -> Vec<u8> { name.iter().map(|b| if sep(b) { to } else { *b }).collect() };
    vec![
        name.to_vec(),
        turned(b'-'),
        turned(b'_'),
        name.iter().copied().filter(|b| !sep(b)).collect(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finder(path: &str, card: &str, branch: &str) -> Result<Finder> {
        let admin = format!(
            "/nowhere/repo/.git/worktrees/{}",
            &path[path.rfind('/').unwrap() + 1..]
        );
        Finder::of(&Tree {
            path: Path::new(path),
            admin: Path::new(&admin),
            card,
            branch,
        })
    }

    #[test]
    fn every_name_is_found_in_its_spellings_and_any_case() {
        let f = finder("/nowhere/trees/card-1", "1", "card/1").unwrap();
        let found = |hay: &str| f.find(hay.as_bytes());
        assert_eq!(
            found("x=/nowhere/trees/card-1/lib").as_deref(),
            Some("this tree's path /nowhere/trees/card-1")
        );
        assert_eq!(
            found("COMPOSE_PROJECT_NAME=card-1").as_deref(),
            Some("this tree's directory name card-1")
        );
        assert_eq!(
            found("PROJECT=CARD_1").as_deref(),
            Some("this tree's directory name card_1")
        );
        assert_eq!(
            found("ref: card/1\n").as_deref(),
            Some("this tree's branch card/1")
        );
        assert_eq!(
            found("gitdir: /nowhere/repo/.git/worktrees/card-1").as_deref(),
            Some("this tree's git dir /nowhere/repo/.git/worktrees/card-1")
        );
        // `card1` and the id `1` are shorter than 6 bytes: not looked for.
        for hay in ["card1", "id = 1", "/nowhere/trees/card-", "card-2"] {
            assert_eq!(found(hay), None, "{hay}");
        }
        let f = finder("/t/card-login.form", "login.form", "card/login.form").unwrap();
        for hay in ["LOGIN_FORM", "loginform", "login-form", "login.form"] {
            assert!(
                f.find(hay.as_bytes())
                    .is_some_and(|s| s.starts_with("this tree's card login")),
                "{hay}"
            );
        }
    }

    #[test]
    fn a_name_too_short_to_look_for_is_a_refusal_a_short_card_is_not() {
        let err = finder("/t/wt1", "wt1", "wt1").unwrap_err();
        assert!(
            format!("{err:#}").contains("directory name \"wt1\" is shorter than 6 bytes"),
            "{err:#}"
        );
        let err = finder("/t/a-long-tree", "a-long-tree", "dev").unwrap_err();
        assert!(format!("{err:#}").contains("branch \"dev\""), "{err:#}");
        // A detached tree has no branch to look for; a short card is not looked for alone.
        assert!(finder("/t/card-7", "7", "").is_ok());
    }
}
