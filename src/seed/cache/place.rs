//! Cloning a cache entry's outputs into a tree, nothing followed on the way: all or nothing. The
//! outputs are cloned through the copier into a staging directory at the tree's root
//! (`.kardwt-cache-…`, on the tree's own file system), checked against the manifest, then each
//! is renamed into place without replacing anything; before that the bytes are checked against
//! the manifest's hashes (one read of each: of the copy being placed, or when every file was
//! cloned, of the entry's files after the clone, whose blocks the clones share), and a mismatch
//! is a damaged entry. Any failure removes what was placed and the staging directory, so
//! prepare then runs in a tree without a partial output. Nothing is written through a symlink
//! in the tree; the deadline and signals stop the clone (exit 5, 128 + signal) after the same
//! cleanup. A fetch from the shared store writes its checked files into a [`Staging`] directory
//! itself, which is then placed the same way.
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use super::manifest::{Kind, Manifest};
use crate::seed::copy::{Copier, Method, Summary};
use crate::sys;

/// The prefix of staging directories; one left by an interrupted restore is removed by the next.
pub const STAGING_PREFIX: &str = ".kardwt-cache-";

/// Why nothing was placed.
#[derive(Debug)]
pub struct Unplaced {
    pub why: String,
    /// The entry's bytes do not match its manifest: drop it.
    pub damaged: bool,
}

impl From<String> for Unplaced {
    fn from(why: String) -> Unplaced {
        Unplaced {
            why,
            damaged: false,
        }
    }
}

/// The outputs `m` lists as present, when each can be placed in the tree at `root`: nothing
/// in the way (not even a dangling symlink) and nothing blocking the way there.
fn targets(root: &OwnedFd, m: &Manifest) -> Result<Result<Vec<PathBuf>, Unplaced>> {
    let outputs: Vec<PathBuf> = m
        .outputs
        .iter()
        .filter(|o| o.present)
        .map(|o| PathBuf::from(&o.path))
        .collect();
    for out in &outputs {
        if let Some(blocked) = sys::beneath_probe(root, out)? {
            return Ok(Err(format!("{}: {blocked}", out.display()).into()));
        }
        if exists(root, out) {
            return Ok(Err(
                format!("{} is already in the tree", out.display()).into()
            ));
        }
    }
    Ok(Ok(outputs))
}

/// A new staging directory at the root of a tree (stale ones removed first), for outputs
/// written there before they are moved into place.
pub struct Staging {
    root: OwnedFd,
    name: OsString,
    /// Where it is.
    pub path: PathBuf,
}

impl Staging {
    pub fn new(tree: &Path) -> Result<Staging> {
        let root = sys::beneath_root(tree)?;
        remove_stale_staging(&root);
        let name = OsString::from(format!(
            "{STAGING_PREFIX}{}-{}",
            std::process::id(),
            crate::sys::now_secs()
        ));
        rustix::fs::mkdirat(&root, &name, rustix::fs::Mode::from_raw_mode(0o700))?;
        Ok(Staging {
            path: tree.join(&name),
            root,
            name,
        })
    }

    /// Remove it and whatever is left in it.
    pub fn remove(&self) {
        let _ = sys::beneath_remove_tree(&self.root, &self.name);
    }

    /// Move the outputs `m` lists as present from here into the tree (their files written and
    /// checked here already), then remove what is left. `Ok(Err(why))`: nothing was placed.
    pub fn place(&self, m: &Manifest) -> Result<Result<Summary, Unplaced>> {
        let placed = targets(&self.root, m).and_then(|outputs| match outputs {
            Ok(outputs) => move_into_place(&self.root, &self.name, &outputs),
            Err(why) => Ok(Err(why)),
        });
        self.remove();
        let files = m.entries.iter().filter(|e| e.kind == Kind::File).count() as u64;
        Ok(placed?.map(|()| Summary {
            files,
            links: m.copied() - files,
            bytes: m.bytes(),
            ..Summary::default()
        }))
    }
}

/// Clone the outputs `m` lists as present from `files` into `tree`. `Ok(Err(why))`: nothing was
/// placed (a miss); `Err`: interrupted or past the deadline, nothing placed either.
pub fn place(
    files: &Path,
    tree: &Path,
    m: &Manifest,
    deadline: Instant,
    progress: bool,
) -> Result<Result<Summary, Unplaced>> {
    let root = sys::beneath_root(tree)?;
    let outputs = match targets(&root, m)? {
        Ok(outputs) => outputs,
        Err(why) => return Ok(Err(why)),
    };
    drop(root);
    let stage = Staging::new(tree)?;
    let (root, staging) = (&stage.root, &stage.name);
    let totals = progress.then(|| (m.copied(), m.bytes()));
    let cloned = clone_into(files, &stage.path, &outputs, deadline, totals);
    let placed = match cloned {
        Ok(summary) if summary.files + summary.links == m.copied() => {
            // Every file cloned: the staged files share the entry's blocks, taken as they were
            // at the clone, so hashing the entry's files now checks the very bytes placed
            // (a damaged entry is a miss all the same) without reading each clone back
            // through the disk, where a fresh clone has no cached page. Copies are checked as
            // written, in the staging directory.
            crate::ground::trace::phase("prepare cache: cloned into the tree");
            let checked = if summary.cloned == summary.files {
                files.to_path_buf()
            } else {
                stage.path.clone()
            };
            match super::manifest::verify(&checked, m) {
                Ok(()) => {
                    move_into_place(root, staging, &outputs).map(|moved| moved.map(|()| summary))
                }
                Err(why) => Ok(Err(Unplaced {
                    why: why.to_string(),
                    damaged: true,
                })),
            }
        }
        Ok(summary) => Ok(Err(format!(
            "{} of the {} files and symlinks listed were cloned",
            summary.files + summary.links,
            m.copied()
        )
        .into())),
        Err(e) => Err(e),
    };
    stage.remove();
    match placed {
        Ok(placed) => Ok(placed),
        Err(e) if stopped() || Instant::now() >= deadline => Err(e),
        Err(e) => Ok(Err(format!("cloning failed: {e:#}").into())),
    }
}

/// Was kardwt interrupted?
fn stopped() -> bool {
    crate::sys::interrupted().is_some()
}

fn clone_into(
    files: &Path,
    staging: &Path,
    outputs: &[PathBuf],
    deadline: Instant,
    totals: Option<(u64, u64)>,
) -> Result<Summary> {
    let mut copier = Copier::new(
        files,
        staging,
        Method::Auto,
        totals.is_some(),
        Some(deadline),
        None,
    )?;
    if let Some((files, bytes)) = totals {
        copier.expect("kardwt: restoring the cache", files, bytes);
    }
    for out in outputs {
        copier.path(out, None)?;
    }
    Ok(copier.finish()?.0)
}

/// Rename each output from the staging directory into the tree; on any refusal, remove the
/// ones already moved and say why.
fn move_into_place(
    root: &OwnedFd,
    staging: &OsStr,
    outputs: &[PathBuf],
) -> Result<Result<(), Unplaced>> {
    let stage_root = sys::beneath_child(root, staging, Path::new(staging), None)?
        .map_err(|b| anyhow::anyhow!("{b}"))?;
    let mut moved: Vec<&PathBuf> = Vec::new();
    let mut refused = None;
    for out in outputs {
        let Some((parent, name)) = sys::beneath_split(out) else {
            continue;
        };
        let from = sys::beneath_open_dir(&stage_root, parent, None)?
            .map_err(|b| anyhow::anyhow!("{b}"))?;
        let mut made = |_: &Path| {};
        let to = match sys::beneath_open_dir(root, parent, Some(&mut made))? {
            Ok(fd) => fd,
            Err(blocked) => {
                refused = Some(format!("{}: {blocked}", out.display()));
                break;
            }
        };
        match sys::rename_noreplace(&from, name, &to, name) {
            Ok(true) => moved.push(out),
            Ok(false) => {
                refused = Some(format!("{} appeared in the tree", out.display()));
                break;
            }
            Err(e) => {
                refused = Some(format!("cannot move {} into place: {e}", out.display()));
                break;
            }
        }
    }
    let Some(why) = refused else {
        return Ok(Ok(()));
    };
    for out in moved {
        if let Some((parent, name)) = sys::beneath_split(out) {
            if let Ok(Ok(dir)) = sys::beneath_open_dir(root, parent, None) {
                let _ = sys::beneath_remove_tree(&dir, name);
            }
        }
    }
    Ok(Err(Unplaced::from(why)))
}

/// Is anything (even a dangling symlink) at `rel` beneath `root`?
fn exists(root: &OwnedFd, rel: &Path) -> bool {
    let Some((parent, name)) = sys::beneath_split(rel) else {
        return false;
    };
    matches!(sys::beneath_open_dir(root, parent, None), Ok(Ok(dir)) if sys::beneath_kind_at(&dir, name).is_some())
}

/// Remove staging directories an interrupted restore left at the tree's root.
fn remove_stale_staging(root: &OwnedFd) {
    let Ok(listing) = rustix::fs::Dir::read_from(root) else {
        return;
    };
    let stale: Vec<OsString> = listing
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_bytes()
                .starts_with(STAGING_PREFIX.as_bytes())
        })
        .map(|e| {
            use std::os::unix::ffi::OsStrExt;
            OsStr::from_bytes(e.file_name().to_bytes()).to_owned()
        })
        .collect();
    for name in stale {
        let _ = sys::beneath_remove_tree(root, &name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::cache::manifest::{new, scan, seal, Output};

    /// An entry's `files/` with `node_modules` and `vendor/lib`, and its manifest.
    fn entry(files: &Path) -> Manifest {
        std::fs::create_dir_all(files.join("node_modules/pkg")).unwrap();
        std::fs::write(files.join("node_modules/pkg/index.js"), "x\n").unwrap();
        std::fs::create_dir_all(files.join("vendor/lib")).unwrap();
        std::fs::write(files.join("vendor/lib/a.so"), "so\n").unwrap();
        let out = |p: &str| Output {
            path: p.into(),
            present: true,
        };
        let mut entries = scan(files).unwrap();
        let tree = crate::seed::cache::identity::Tree {
            path: Path::new("/nowhere/card-1"),
            admin: Path::new("/nowhere/.git/worktrees/card-1"),
            card: "1",
            branch: "card/1",
        };
        let finder = crate::seed::cache::identity::Finder::of(&tree).unwrap();
        seal(files, &mut entries, &finder).unwrap();
        let outputs = vec![
            out("node_modules"),
            out("vendor/lib"),
            Output {
                path: "gone".into(),
                present: false,
            },
        ];
        new("k", outputs, entries)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn the_outputs_are_placed_whole_or_not_at_all() {
        let (cache, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = entry(cache.path());
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let placed = place(cache.path(), tree.path(), &m, later, false).unwrap();
        assert_eq!(placed.unwrap().files, 2);
        assert_eq!(names(tree.path()), ["node_modules", "vendor"]);
        assert_eq!(
            std::fs::read_to_string(tree.path().join("vendor/lib/a.so")).unwrap(),
            "so\n"
        );

        // A file missing from the entry: nothing is placed, no staging is left.
        let tree = tempfile::tempdir().unwrap();
        std::fs::remove_file(cache.path().join("vendor/lib/a.so")).unwrap();
        let why = place(cache.path(), tree.path(), &m, later, false)
            .unwrap()
            .unwrap_err()
            .why;
        assert!(why.contains("1 of the 2"), "{why}");
        assert!(names(tree.path()).is_empty(), "{:?}", names(tree.path()));

        // An output already in the tree: a miss, and what is there is kept.
        std::fs::write(cache.path().join("vendor/lib/a.so"), "so\n").unwrap();
        std::fs::create_dir(tree.path().join("node_modules")).unwrap();
        let why = place(cache.path(), tree.path(), &m, later, false)
            .unwrap()
            .unwrap_err()
            .why;
        assert!(why.contains("already in the tree"), "{why}");
        assert_eq!(names(tree.path()), ["node_modules"]);

        // One byte changed, same size: damaged, nothing placed.
        std::fs::remove_dir(tree.path().join("node_modules")).unwrap();
        std::fs::write(cache.path().join("vendor/lib/a.so"), "sO\n").unwrap();
        let miss = place(cache.path(), tree.path(), &m, later, false)
            .unwrap()
            .unwrap_err();
        assert!(miss.damaged && miss.why.contains("a.so"), "{miss:?}");
        assert!(names(tree.path()).is_empty(), "{:?}", names(tree.path()));
    }

    #[test]
    fn a_past_deadline_stops_with_exit_5_and_leaves_nothing() {
        let (cache, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let m = entry(cache.path());
        std::fs::create_dir(tree.path().join(format!("{STAGING_PREFIX}1-2"))).unwrap();
        let err = place(cache.path(), tree.path(), &m, Instant::now(), false).unwrap_err();
        assert_eq!(crate::ground::error::exit_code(&err), 5, "{err:#}");
        assert!(names(tree.path()).is_empty(), "{:?}", names(tree.path()));
    }
}
