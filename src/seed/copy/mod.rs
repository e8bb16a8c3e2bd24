//! Copying what a new worktree needs from the base: whole paths
//! (`sharing.copy`) and `.worktreeinclude` matches, judged where they would land in the new
//! tree ([`land`]), then copied ([`walk`], one file at a time by `file`) beneath its root
//! without following anything planted there, atomically, sparse files kept sparse, within the
//! action's deadline. Nothing existing is ever overwritten; what cannot be copied is skipped and
//! reported, never a failure. The blob ids of the copies pre-push protects (each file copied
//! by name, and `.env`/`.env.*` files at any depth of a copied directory, up to 1 MiB; not the
//! thousands of dependency files a copied directory holds) are kept beside the record, so
//! pre-push can block them under any name.
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

pub(crate) use crate::config::CopyMethod as Method;
pub(crate) use include::{Include, FILE as INCLUDE_FILE};
pub(crate) use walk::Copier;

mod file;
mod include;
mod land;
mod walk;

/// What one copy did, for the record, the event log and progress lines.
#[derive(Debug, Default)]
pub(super) struct Summary {
    pub files: u64,
    pub links: u64,
    pub bytes: u64,
    /// Files cloned (blocks shared with the base).
    pub cloned: u64,
    /// Existing entries left as they were (never overwritten).
    pub kept: u64,
    /// Paths left out (reported): blocked in the new tree, or not ignored there.
    pub skipped: u64,
    pub duration: Duration,
}

impl Summary {
    /// `clone` when every file was cloned, `copy` when none was, `mixed` otherwise.
    pub(super) fn method_used(&self) -> &'static str {
        match (self.cloned, self.files) {
            (_, 0) => "none",
            (c, f) if c == f => "clone",
            (0, _) => "copy",
            _ => "mixed",
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} files ({} cloned), {} links, {} in {}{}{}",
            self.files,
            self.cloned,
            self.links,
            crate::ground::human::size(self.bytes),
            crate::ground::human::duration(self.duration),
            if self.kept > 0 {
                format!(", {} existing entries kept", self.kept)
            } else {
                String::new()
            },
            if self.skipped > 0 {
                format!(", {} paths skipped", self.skipped)
            } else {
                String::new()
            }
        )
    }
}

/// What [`seed`] copied.
pub(super) struct Seeded {
    /// Paths copied, relative to the worktree: `sharing.copy` entries as written, and each
    /// `.worktreeinclude` match (a whole matched directory once, not its files).
    pub copies: Vec<String>,
    pub summary: Summary,
}

/// What a copy's `from` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A checkout: its ignore rules and `.worktreeinclude` apply.
    Checkout,
    /// The bare layout's shared directory.
    Shared,
}

/// Copy into the new worktree `to` (administered in `admin`) what it needs from the base
/// `from`: every ignored, untracked base path matching `.worktreeinclude`, then each
/// `sharing.copy` path, where the new tree ignores it and nothing on the way is planted. Each
/// path left out is reported on stderr. `None` when there is nothing to copy. A `from` that is
/// no checkout ([`Source::Shared`]) has no ignore rules: only `sharing.copy` is copied from it.
#[allow(clippy::too_many_arguments)]
pub(super) fn seed(
    sharing: &crate::config::Sharing,
    from: &Path,
    source: Source,
    to: &Path,
    admin: &Path,
    progress: bool,
    deadline: Instant,
) -> Result<Option<Seeded>> {
    let include = match source {
        Source::Checkout => Include::load(from)?,
        Source::Shared => None,
    };
    if include.is_none() && sharing.copy.is_empty() {
        return Ok(None);
    }
    let mut wanted: Vec<land::Candidate> = Vec::new();
    if let Some(include) = &include {
        for (rel, is_dir) in include.roots(from)? {
            let shown = include.record_root(&rel).to_string_lossy().into_owned();
            wanted.push(land::Candidate {
                rel,
                is_dir,
                included: true,
                shown,
            });
        }
    }
    for rel in &sharing.copy {
        let meta = match std::fs::symlink_metadata(from.join(rel)) {
            Ok(meta) => meta,
            // Nothing of that name in the base (yet): nothing to copy.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // A base path that cannot be read is a failure, never left out.
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", from.join(rel).display()))
            }
        };
        wanted.push(land::Candidate {
            rel: rel.clone(),
            is_dir: meta.is_dir(),
            included: false,
            shown: rel.to_string_lossy().into_owned(),
        });
    }
    let common_dir = crate::state::common_dir_of(admin);
    let hash = Some(crate::state::Cards::at(&common_dir).hash_kind());
    // A retry does not read again what an interrupted copy completed and kept the id of.
    let known = crate::state::copied_blobs(admin)
        .into_values()
        .map(std::path::PathBuf::from)
        .collect();
    let mut copier = Copier::new(
        from,
        to,
        sharing.copy_method,
        progress,
        Some(deadline),
        hash,
    )?
    .with_known(known);
    let root =
        crate::sys::beneath_root(to).with_context(|| format!("cannot open {}", to.display()))?;
    let (approved, mut skipped) = land::admitted(from, to, &root, wanted)?;
    if progress && crate::sys::progress_on() {
        let (mut files, mut bytes) = (0, 0);
        for c in &approved {
            let leave = |rel: &Path, is_dir: bool| {
                include.as_ref().is_some_and(|i| i.leaves_out(rel, is_dir))
            };
            let (f, b) = walk::measure(
                from,
                &c.rel,
                c.included.then_some(&leave as &walk::Leave<'_>),
            );
            files += f;
            bytes += b;
        }
        copier.expect("kardwt: copying", files, bytes);
    }
    let mut copies: Vec<String> = Vec::new();
    for c in &approved {
        let leave =
            |rel: &Path, is_dir: bool| include.as_ref().is_some_and(|i| i.leaves_out(rel, is_dir));
        if c.is_dir {
            copier.path(&c.rel, c.included.then_some(&leave as &walk::Leave<'_>))?;
        } else {
            let meta = match std::fs::symlink_metadata(from.join(&c.rel)) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // gone since listed
                Err(e) => {
                    let path = from.join(&c.rel);
                    return Err(e).with_context(|| format!("cannot read {}", path.display()));
                }
            };
            copier.entry(c.rel.clone(), meta)?;
        }
        if !copies.contains(&c.shown) {
            copies.push(c.shown.clone());
        }
    }
    skipped.append(&mut copier.skipped);
    let (mut summary, blobs) = copier.finish()?;
    summary.skipped = skipped.len() as u64;
    for line in &skipped {
        eprintln!("kardwt: {line}");
    }
    crate::state::keep_blobs(admin, blobs)?;
    Ok(Some(Seeded { copies, summary }))
}

/// With `sharing.copy_method: clone`, fail before anything is copied when `from` and `to` are
/// on different file systems (a clone cannot cross them).
fn same_file_system(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (std::fs::metadata(from)?, std::fs::metadata(to)?);
    if a.dev() != b.dev() {
        anyhow::bail!(
            "sharing.copy_method is clone, but {} ({}) and {} ({}) are on different file systems, and a clone cannot cross them",
            from.display(),
            crate::sys::fs_type_of_path(from),
            to.display(),
            crate::sys::fs_type_of_path(to)
        );
    }
    Ok(())
}
