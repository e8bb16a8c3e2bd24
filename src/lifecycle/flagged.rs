//! Edits `git status` is told not to show: a tracked file marked skip-worktree or
//! assume-unchanged is compared with its index entry by content (through the filters `git add`
//! applies), and a difference is uncommitted work that removing the tree would delete. An entry
//! with nothing at its path (what sparse-checkout leaves absent) loses nothing.
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::{Context, Result};

use crate::git::{self, FlaggedEntry};

/// The flagged entries of the index of the worktree at `worktree` whose file differs from the
/// index, each with why, as people read them; empty when none does.
pub(super) fn changed(worktree: &Path) -> Result<Vec<String>> {
    flagged_paths(worktree).with_context(|| {
        format!(
            "could not compare the files marked skip-worktree or assume-unchanged in {} with the index",
            worktree.display()
        )
    })
}

fn flagged_paths(worktree: &Path) -> Result<Vec<String>> {
    let mut dirt = Vec::new();
    let mut files: Vec<&FlaggedEntry> = Vec::new();
    let mut links: Vec<(&FlaggedEntry, Vec<u8>)> = Vec::new();
    let entries = git::flagged_z(worktree)?;
    for e in &entries {
        let at = worktree.join(std::ffi::OsStr::from_bytes(&e.path));
        let shown = git::display_path(&e.path);
        let Ok(meta) = at.symlink_metadata() else {
            continue;
        };
        let kind = meta.file_type();
        match e.mode.as_slice() {
            // A submodule is judged by git's own submodule check.
            b"160000" => {}
            b"120000" if kind.is_symlink() => {
                let target = std::fs::read_link(&at)
                    .with_context(|| format!("could not read the symlink {}", at.display()))?;
                links.push((e, target.as_os_str().as_bytes().to_vec()));
            }
            b"100644" | b"100755" if kind.is_file() && !e.path.contains(&b'\n') => files.push(e),
            _ => dirt.push(format!("{shown} (flagged in the index and replaced)")),
        }
    }
    let paths: Vec<&[u8]> = files.iter().map(|e| e.path.as_slice()).collect();
    for (e, oid) in files.iter().zip(git::hash_paths(worktree, &paths)?) {
        if oid != e.oid {
            dirt.push(flagged_edit(&e.path));
        }
    }
    if !links.is_empty() {
        let oids: Vec<u8> = links
            .iter()
            .flat_map(|(e, _)| [e.oid.as_bytes(), b"\n"].concat())
            .collect();
        let blobs = blobs(&git::cat_file_batch(worktree, oids)?)?;
        if blobs.len() != links.len() {
            anyhow::bail!("git cat-file did not return every symlink's blob");
        }
        for ((e, target), blob) in links.iter().zip(blobs) {
            if blob.as_deref() != Some(target.as_slice()) {
                dirt.push(flagged_edit(&e.path));
            }
        }
    }
    Ok(dirt)
}

fn flagged_edit(path: &[u8]) -> String {
    format!(
        "{} (changed, but marked skip-worktree or assume-unchanged, so git status hides it)",
        git::display_path(path)
    )
}

/// The objects of `git cat-file --batch` output, in order (`None` for a missing one) (pure).
fn blobs(mut raw: &[u8]) -> Result<Vec<Option<Vec<u8>>>> {
    let mut out = Vec::new();
    while !raw.is_empty() {
        let nl = raw
            .iter()
            .position(|b| *b == b'\n')
            .context("git cat-file --batch output ends inside a header")?;
        let header = std::str::from_utf8(&raw[..nl]).unwrap_or_default();
        raw = &raw[nl + 1..];
        let fields: Vec<&str> = header.split(' ').collect();
        match fields[..] {
            [_, "missing"] => out.push(None),
            [_, _, size] => {
                let size: usize = size.parse().context("a size git cat-file never writes")?;
                let body = raw
                    .get(..size)
                    .context("git cat-file --batch output was cut short")?;
                out.push(Some(body.to_vec()));
                raw = raw.get(size + 1..).unwrap_or_default();
            }
            _ => anyhow::bail!("a header git cat-file never writes: {header}"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_output_is_read_object_by_object() {
        let raw = b"aa blob 3\nx\ny\nbb missing\ncc blob 0\n\n";
        assert_eq!(
            blobs(raw).unwrap(),
            vec![Some(b"x\ny".to_vec()), None, Some(Vec::new())]
        );
        assert!(blobs(b"aa blob 9\nshort\n").is_err());
    }
}
