//! Where copies may land: judged in the new tree, after its
//! checkout. A path is copied only where nothing on the way is a symlink, a file or anything
//! else that is not a real directory, and only where the new tree's own ignore rules ignore it
//! (so `git add -A` cannot publish it); a directory the new tree does not ignore is looked into,
//! one git call per level, and only what it ignores is copied. Everything left out is reported.
use crate::sys;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use rustix::fs::FileType;

/// A path to copy, relative to both trees.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub rel: PathBuf,
    pub is_dir: bool,
    /// Came from `.worktreeinclude` (its negations apply beneath it).
    pub included: bool,
    /// The path the record lists for it.
    pub shown: String,
}

/// The candidates that may be copied into the tree at `root` (`to` on disk), and a line for
/// each left out.
pub(super) fn admitted(
    from: &Path,
    to: &Path,
    root: &OwnedFd,
    mut todo: Vec<Candidate>,
) -> Result<(Vec<Candidate>, Vec<String>)> {
    let (mut ok, mut skipped) = (Vec::new(), Vec::new());
    while !todo.is_empty() {
        let mut ask: Vec<Candidate> = Vec::new();
        for c in todo.drain(..) {
            if let Some(blocked) = sys::beneath_probe(root, &c.rel)? {
                skipped.push(format!("skipped {}: {blocked}", c.rel.display()));
                continue;
            }
            match existing(root, &c.rel) {
                // What is there is kept: the copier counts it and leaves it.
                Some(_) if !c.is_dir => ok.push(c),
                Some(FileType::Directory) | None => ask.push(c),
                Some(kind) => skipped.push(format!(
                    "skipped {}: {} is {} in the new tree",
                    c.rel.display(),
                    c.rel.display(),
                    sys::beneath_describe(Some(kind))
                )),
            }
        }
        let ignored = ignored_in(to, &ask)?;
        for (c, ignored) in ask.into_iter().zip(ignored) {
            if ignored {
                ok.push(c);
            } else if c.is_dir {
                todo.extend(children(from, &c)?);
            } else {
                skipped.push(format!(
                    "skipped {}: the new tree's ignore rules do not ignore it, so git would pick it up",
                    c.rel.display()
                ));
            }
        }
    }
    Ok((ok, skipped))
}

/// What is at `rel` in the tree, not following a symlink (its parents are real directories).
fn existing(root: &OwnedFd, rel: &Path) -> Option<FileType> {
    let (parent, name) = sys::beneath_split(rel)?;
    match sys::beneath_open_dir(root, parent, None) {
        Ok(Ok(dir)) => sys::beneath_kind_at(&dir, name),
        _ => None,
    }
}

/// For each candidate, whether the ignore rules of the tree `to` ignore it (tracked paths are
/// not ignored): one `git check-ignore --stdin -z`, directories asked as `dir/`.
fn ignored_in(to: &Path, asked: &[Candidate]) -> Result<Vec<bool>> {
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    let key = |c: &Candidate| {
        let mut k = c.rel.as_os_str().as_bytes().to_vec();
        if c.is_dir {
            k.push(b'/');
        }
        k
    };
    let input: Vec<u8> = asked
        .iter()
        .flat_map(|c| {
            let mut k = key(c);
            k.push(0);
            k
        })
        .collect();
    let out = crate::git::check_ignore_z(to, input, false)?;
    let hits: std::collections::HashSet<&[u8]> = out.split(|b| *b == 0).collect();
    Ok(asked.iter().map(|c| hits.contains(&key(c)[..])).collect())
}

/// The entries of the base's directory `c`, as candidates of their own (none when it is gone
/// since it was listed). A listing that fails otherwise is an error: what it
/// would have held must not be left out in silence.
fn children(from: &Path, c: &Candidate) -> Result<Vec<Candidate>> {
    let dir = from.join(&c.rel);
    let unreadable = || format!("cannot list {}", dir.display());
    let listing = match std::fs::read_dir(&dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(unreadable),
    };
    let mut out = Vec::new();
    for entry in listing {
        let e = entry.with_context(unreadable)?;
        if e.file_name() == OsStr::new(".git") {
            continue;
        }
        let kind = e.file_type().with_context(unreadable)?;
        out.push(Candidate {
            rel: c.rel.join(e.file_name()),
            is_dir: kind.is_dir(),
            included: c.included,
            shown: c.shown.clone(),
        });
    }
    Ok(out)
}
