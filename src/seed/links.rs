//! Sharing: link the base's ignored `.env`/`.env.*` files and, when the worktree
//! has none, the base's `.claude/skills` and `.agents/skills` into a worktree. Never overwrites
//! or unlinks anything, and never writes through a symlink or file planted on a link's path
//! (it is skipped and reported); returns the links it created (relative paths) for the
//! record. A link git would show as untracked is kept out of `git status` by an anchored
//! pattern in a marked block of `<common dir>/info/exclude`, followed by a re-include of a real
//! directory at that path, so the block hides kardwt's symlink and never a user's directory.
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::config::{EnvSharing, Sharing, SkillsSharing};
use crate::git;
use crate::ground::error::{Code, Fail, Kind};
use crate::sys;

/// The skills directories shared by the fallback rule.
pub(crate) const SKILLS: [&str; 2] = [".claude/skills", ".agents/skills"];

const BLOCK_START: &str = "# >>> git-kardwt: shared links (managed by git kardwt) >>>";
const BLOCK_END: &str = "# <<< git-kardwt <<<";

/// Is `name` one of the root-level files `sharing.env: link` shares?
pub(super) fn is_env_name(name: &str) -> bool {
    name == ".env" || (name.starts_with(".env.") && name.len() > ".env.".len())
}

/// Create the links `sharing` asks for in `worktree`, from `base`. Returns what was linked.
/// A `base` that is no checkout (`checkout` false: the bare layout's shared directory) has no
/// ignore rules: every `.env`/`.env.*` file in it is shared.
/// The exclude block is written first (under the repository lock, waiting until `deadline`):
/// when it cannot be, no link is made and the error says why.
pub(super) fn share(
    sharing: &Sharing,
    base: &Path,
    checkout: bool,
    worktree: &Path,
    common_dir: &Path,
    deadline: Instant,
) -> Result<Vec<String>> {
    let absent_in_tree = |rel: &str| worktree.join(rel).symlink_metadata().is_err();
    let mut skills: Vec<&str> = Vec::new();
    if sharing.skills == SkillsSharing::Fallback {
        for rel in SKILLS {
            if in_base(base, rel)?.is_some_and(|m| m.is_dir()) && absent_in_tree(rel) {
                skills.push(rel);
            }
        }
    }
    // `sharing.link`: whole base paths, linked where the tree has nothing at that path yet.
    let mut linked: Vec<&str> = Vec::new();
    for rel in sharing.link.iter().filter_map(|p| p.to_str()) {
        if in_base(base, rel)?.is_some() && absent_in_tree(rel) {
            linked.push(rel);
        }
    }
    let hidden: Vec<&str> = skills.iter().chain(&linked).copied().collect();
    if !hidden.is_empty() || has_old_block(common_dir) {
        let repo_lock = crate::state::Cards::at(common_dir)
            .lock(deadline, "git kardwt (sharing: info/exclude)")?;
        ensure_excluded(&repo_lock, common_dir, &hidden)?;
    }
    let mut links = Vec::new();
    let names = match sharing.env {
        EnvSharing::Link => ignored_env_files(base, checkout)?,
        EnvSharing::Disabled => Vec::new(),
    };
    if names.is_empty() && hidden.is_empty() {
        return Ok(links);
    }
    let root = sys::beneath_root(worktree)
        .with_context(|| format!("could not open {}", worktree.display()))?;
    for rel in names.iter().map(String::as_str).chain(hidden) {
        if link_if_absent(&root, &base.join(rel), rel)? {
            links.push(rel.to_owned());
        }
    }
    Ok(links)
}

/// Say once, where a person watches (`watched`), that the rules ask for sharing into
/// `worktree` and the bare layout names no directory to share from (`kardwt.sharedFrom`).
pub(super) fn nothing_shared(sharing: &Sharing, worktree: &Path, watched: bool) {
    let asked =
        sharing.env == EnvSharing::Link || !sharing.link.is_empty() || !sharing.copy.is_empty();
    if asked && watched {
        eprintln!(
            "kardwt: nothing shared into {}: the repository is bare and git config \
             kardwt.sharedFrom names no directory to share from",
            worktree.display()
        );
    }
}

/// What is at `rel` in the base (not following a symlink), `None` when nothing is. A read
/// that fails otherwise is an error: a link left out in silence is a tree that
/// looks ready and is not.
fn in_base(base: &Path, rel: &str) -> Result<Option<std::fs::Metadata>> {
    let path = base.join(rel);
    match path.symlink_metadata() {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("could not read {}", path.display())),
    }
}

/// The base's root-level `.env`/`.env.*` files that git ignores and does not track. Every
/// entry of the base's root is read, or the listing is an error (never a shorter list).
fn ignored_env_files(base: &Path, checkout: bool) -> Result<Vec<String>> {
    let unreadable = || format!("could not read the directory {}", base.display());
    let mut candidates: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(base).with_context(unreadable)? {
        let entry = entry.with_context(unreadable)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !is_env_name(&name) {
            continue;
        }
        let kind = entry
            .file_type()
            .with_context(|| format!("could not read {}", entry.path().display()))?;
        if kind.is_file() || kind.is_symlink() {
            candidates.push(name);
        }
    }
    candidates.sort();
    if candidates.is_empty() || !checkout {
        return Ok(candidates);
    }
    // check-ignore leaves tracked files out, so what it prints is ignored and untracked.
    let ignored = git::check_ignore(base, &candidates)?;
    Ok(candidates
        .into_iter()
        .filter(|c| ignored.contains(c))
        .collect())
}

/// Symlink `rel` beneath the worktree's `root` to `source` unless something (even a dangling
/// link) is there, making its missing parent directories through real directories only:
/// a parent that is a symlink, a file or anything else is reported and skipped.
fn link_if_absent(root: &OwnedFd, source: &Path, rel: &str) -> Result<bool> {
    let Some((parent, name)) = sys::beneath_split(Path::new(rel)) else {
        return Ok(false);
    };
    let mut made = |_: &Path| {};
    let dir = match sys::beneath_open_dir(root, parent, Some(&mut made)) {
        Ok(Ok(dir)) => dir,
        Ok(Err(blocked)) => {
            eprintln!("kardwt: skipped {rel}: {blocked}");
            return Ok(false);
        }
        Err(e) => return Err(e).with_context(|| format!("could not create the parent of {rel}")),
    };
    sys::beneath_symlink(&dir, name, source)
        .with_context(|| format!("could not link {rel} to {}", source.display()))
}

/// The largest `info/exclude` read (and so rewritten).
const MAX_EXCLUDE_BYTES: u64 = 16 << 20;

/// `<common dir>/info/exclude`.
pub(super) fn exclude_path(common_dir: &Path) -> PathBuf {
    common_dir.join("info").join("exclude")
}

/// Make sure the marked block of `<common dir>/info/exclude` hides kardwt's links at `rels`,
/// under the repository lock, by a temporary file renamed over it. Every byte outside the block
/// is kept; a file that cannot be read is never written.
fn ensure_excluded(_repo_lock: &sys::RepoLock, common_dir: &Path, rels: &[&str]) -> Result<()> {
    let path = exclude_path(common_dir);
    // A symlinked exclude file is updated where it points, and stays a symlink.
    let target = match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(&path).map_err(|e| unreadable(&path, &e))?
        }
        _ => path.clone(),
    };
    // Bounded, and never waiting on a FIFO planted as it.
    let text = crate::sys::read_bounded(&target, MAX_EXCLUDE_BYTES)
        .map_err(|e| unreadable(&path, &e))?
        .unwrap_or_default();
    let updated = with_block(&text, rels);
    if updated == text {
        return Ok(());
    }
    let dir = target.parent().unwrap_or(common_dir);
    std::fs::create_dir_all(dir).with_context(|| format!("could not create {}", dir.display()))?;
    let name = target
        .file_name()
        .unwrap_or(std::ffi::OsStr::new("exclude"));
    // Its mode is kept.
    crate::sys::write_atomic(dir, name, &updated)
        .with_context(|| format!("could not update {}; it was left as it was", path.display()))
}

/// Does `info/exclude` hold a block an earlier kardwt wrote (a `/P` line without its `!/P/`,
/// which hides a real directory too)? It is then rewritten even when no link is made. A file
/// that cannot be read has none (no link needs it).
fn has_old_block(common_dir: &Path) -> bool {
    let read = crate::sys::read_bounded_following(&exclude_path(common_dir), MAX_EXCLUDE_BYTES);
    read.ok().flatten().is_some_and(|text| {
        let block = BLOCK_START.as_bytes();
        text.windows(block.len()).any(|w| w == block) && with_block(&text, &[]) != text
    })
}

/// The error for an exclude file that cannot be read: nothing is written, no link is made.
fn unreadable(path: &Path, e: &std::io::Error) -> Fail {
    Fail::from(ExcludeUnread {
        path: path.to_owned(),
        error: e.to_string(),
    })
}

/// The exclude file could not be read: nothing is written, no link is made (exit 1).
#[derive(Debug, thiserror::Error)]
#[error(
    "could not read {} ({error}), so it was not written and no skills link was made (the link \
     would show in git status); make it a readable file, or set sharing.skills: disabled",
    path.display()
)]
pub(super) struct ExcludeUnread {
    pub path: std::path::PathBuf,
    pub error: String,
}

impl Kind for ExcludeUnread {
    fn code(&self) -> Code {
        Code::Failed
    }
}

/// `text` (the exclude file's bytes) with kardwt's marked block first, holding the patterns of
/// the links it held plus `rels` (pure). For each link path `/P` hides kardwt's symlink and
/// `!/P/` re-includes a real directory there (a symlink is not a directory for git), so user
/// work at that path stays visible in every worktree. The block goes first so that every line
/// of the user's wins over it; every other byte is kept as it was, in its order (a last line
/// without a newline gets one).
pub(super) fn with_block(text: &[u8], rels: &[&str]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let bare = |l: &[u8]| -> Vec<u8> {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        l.strip_suffix(b"\r").unwrap_or(l).to_vec()
    };
    let start = lines.iter().position(|l| bare(l) == BLOCK_START.as_bytes());
    let end = start.and_then(|s| {
        lines[s..]
            .iter()
            .position(|l| bare(l) == BLOCK_END.as_bytes())
            .map(|e| s + e)
    });
    let mut held: Vec<String> = Vec::new();
    let mut user: Vec<&[u8]> = Vec::new();
    let mut stray: Vec<&[u8]> = Vec::new();
    match (start, end) {
        (Some(s), Some(e)) => {
            user.extend(&lines[..s]);
            for l in &lines[s + 1..e] {
                let line = bare(l);
                match block_rel(&line) {
                    Some(rel) => {
                        if !held.contains(&rel) {
                            held.push(rel);
                        }
                    }
                    // A re-include line is rewritten with its pattern below.
                    None if line.starts_with(b"!/") && line.ends_with(b"/") => {}
                    None => stray.push(l),
                }
            }
            user.extend(stray);
            user.extend(&lines[e + 1..]);
        }
        _ => user.extend(&lines),
    }
    for rel in rels {
        if !held.iter().any(|h| h == rel) {
            held.push((*rel).to_owned());
        }
    }
    let mut out = Vec::with_capacity(text.len() + 128);
    out.extend_from_slice(BLOCK_START.as_bytes());
    out.push(b'\n');
    for rel in &held {
        out.extend_from_slice(format!("/{rel}\n!/{rel}/\n").as_bytes());
    }
    out.extend_from_slice(BLOCK_END.as_bytes());
    out.push(b'\n');
    for l in user {
        out.extend_from_slice(l);
        if !l.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    out
}

/// The link paths kardwt's block in `<common dir>/info/exclude` hides, in every worktree of
/// the repository and in the base: empty when there is no file or no block. A file that exists
/// and cannot be read is an error (what it hides cannot be told).
pub(crate) fn block_paths(common_dir: &Path) -> Result<Vec<String>> {
    let path = exclude_path(common_dir);
    let text = crate::sys::read_bounded_following(&path, MAX_EXCLUDE_BYTES)
        .with_context(|| format!("could not read {}", path.display()))?
        .unwrap_or_default();
    Ok(paths_in_block(&text))
}

/// The link paths the marked block of `text` names, in order (pure).
fn paths_in_block(text: &[u8]) -> Vec<String> {
    let bare = |l: &[u8]| -> Vec<u8> { l.strip_suffix(b"\r").unwrap_or(l).to_vec() };
    let mut inside = false;
    let mut rels = Vec::new();
    for line in text.split(|&b| b == b'\n').map(bare) {
        if line == BLOCK_START.as_bytes() {
            inside = true;
        } else if line == BLOCK_END.as_bytes() {
            inside = false;
        } else if let Some(rel) = block_rel(&line).filter(|_| inside) {
            rels.push(rel);
        }
    }
    rels
}

/// Every path kardwt's block in `info/exclude` hides: the links it made in any tree, the
/// removed ones' included (none when the file cannot be read).
pub(crate) fn excluded_links(common_dir: &Path) -> Vec<String> {
    block_paths(common_dir).unwrap_or_default()
}

/// The link path a line of kardwt's block names (`/P`), or `None` for anything else (pure).
fn block_rel(line: &[u8]) -> Option<String> {
    let rel = std::str::from_utf8(line.strip_prefix(b"/")?).ok()?;
    (!rel.is_empty() && !rel.ends_with('/')).then(|| rel.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        for n in [".env", ".env.local", ".env.prod"] {
            assert!(is_env_name(n), "{n}");
        }
        for n in [".env.", ".envrc", "env", ".environment", "x.env"] {
            assert!(!is_env_name(n), "{n}");
        }
    }

    #[test]
    fn block_is_added_once_first_and_keeps_every_other_byte() {
        let user: &[u8] = b"# git's own\n*.log\nlatin1-\xe9t\xe9\r\n";
        let once = with_block(user, &[".claude/skills"]);
        let block = format!("{BLOCK_START}\n/.claude/skills\n!/.claude/skills/\n{BLOCK_END}\n");
        assert_eq!(once, [block.as_bytes(), user].concat());
        assert_eq!(with_block(&once, &[".claude/skills"]), once);
        let twice = with_block(&once, &[".agents/skills"]);
        assert_eq!(
            twice
                .windows(BLOCK_START.len())
                .filter(|w| *w == BLOCK_START.as_bytes())
                .count(),
            1
        );
        assert!(twice.ends_with(user));
        let text = String::from_utf8_lossy(&twice).into_owned();
        assert!(
            text.contains(
                "/.claude/skills\n!/.claude/skills/\n/.agents/skills\n!/.agents/skills/\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_old_block_in_the_middle_is_upgraded_and_moved_first() {
        let old = format!("a\n{BLOCK_START}\n/.claude/skills\n# mine\n{BLOCK_END}\nb");
        let new = with_block(old.as_bytes(), &[]);
        let expected = format!(
            "{BLOCK_START}\n/.claude/skills\n!/.claude/skills/\n{BLOCK_END}\na\n# mine\nb\n"
        );
        assert_eq!(String::from_utf8(new).unwrap(), expected);
    }

    #[test]
    fn the_paths_of_the_block_and_only_those() {
        let text = with_block(b"/outside\n", &["seed.sql", ".claude/skills"]);
        assert_eq!(paths_in_block(&text), vec!["seed.sql", ".claude/skills"]);
        assert!(paths_in_block(b"/outside\n").is_empty());
    }

    #[test]
    fn an_empty_file_gets_only_the_block() {
        let new = with_block(b"", &[".agents/skills"]);
        assert_eq!(
            String::from_utf8(new).unwrap(),
            format!("{BLOCK_START}\n/.agents/skills\n!/.agents/skills/\n{BLOCK_END}\n")
        );
    }
}
