//! `.worktreeinclude`: the file at the base's root naming, in gitignore
//! syntax, the ignored files a new worktree needs (the convention several agent runners share).
//! Matching costs what the patterns reach: git lists the base's ignored, untracked paths with
//! `--directory` (an ignored directory is one line, never walked by git), and kardwt looks
//! inside such a directory only when a pattern names it (it is copied whole, less what a
//! negation leaves out) or a pattern with a slash leads into it (`build/keep/*.bin`). A
//! pattern without a slash (`.env.local`) matches at any depth outside ignored directories, as
//! git's own rules cannot re-include a file inside an excluded directory.
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The file's name at the base's root.
pub(crate) const FILE: &str = ".worktreeinclude";

/// `.worktreeinclude`, read.
pub(crate) struct Include {
    matcher: Gitignore,
    /// The directories patterns with a slash lead into (their leading components).
    reach: Gitignore,
}

impl Include {
    /// The base's `.worktreeinclude`; `None` when there is none or it names nothing.
    pub(crate) fn load(base: &Path) -> Result<Option<Include>> {
        let file = base.join(FILE);
        match std::fs::symlink_metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
            Ok(m) if !m.is_file() => anyhow::bail!(
                "{} is not a regular file; it must list, in gitignore syntax, what to copy",
                file.display()
            ),
            Ok(_) => {}
        }
        let text = crate::git::read_bounded(&file, 1 << 20)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let (mut builder, mut reach) = (GitignoreBuilder::new(base), GitignoreBuilder::new(base));
        for line in String::from_utf8_lossy(&text).lines() {
            builder
                .add_line(None, line)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            for prefix in reach_lines(line) {
                let _ = reach.add_line(None, &prefix);
            }
        }
        let read = |b: GitignoreBuilder| {
            b.build()
                .with_context(|| format!("cannot read {}", file.display()))
        };
        let matcher = read(builder)?;
        if matcher.is_empty() {
            return Ok(None);
        }
        Ok(Some(Include {
            matcher,
            reach: read(reach)?,
        }))
    }

    /// Does a pattern include `rel` or one of its parents (and no negation leave it out)?
    pub(crate) fn includes(&self, rel: &Path, is_dir: bool) -> bool {
        self.matcher
            .matched_path_or_any_parents(rel, is_dir)
            .is_ignore()
    }

    /// Inside an included directory: does a negation leave `rel` out?
    pub(crate) fn leaves_out(&self, rel: &Path, is_dir: bool) -> bool {
        self.matcher.matched(rel, is_dir).is_whitelist()
    }

    fn reaches(&self, dir: &Path) -> bool {
        self.reach.matched(dir, true).is_ignore()
    }

    /// The path to record for an included `rel`: the highest directory above it that a
    /// pattern names, else `rel` itself (pure).
    pub(crate) fn record_root<'a>(&self, rel: &'a Path) -> &'a Path {
        rel.ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .filter(|a| self.matcher.matched(a, true).is_ignore())
            .last()
            .unwrap_or(rel)
    }

    /// What to copy from `base`: included files, and included directories (to be copied whole,
    /// less what [`Include::leaves_out`]), with whether each is a directory.
    pub(crate) fn roots(&self, base: &Path) -> Result<Vec<(PathBuf, bool)>> {
        let listed = crate::git::ls_ignored_untracked_z(base)?;
        self.confirm_listing(base, &listed)?;
        let mut out: Vec<(PathBuf, bool)> = Vec::new();
        for raw in listed.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            let (raw, is_dir) = match raw.strip_suffix(b"/") {
                Some(dir) => (dir, true),
                None => (raw, false),
            };
            let rel = PathBuf::from(std::ffi::OsStr::from_bytes(raw));
            // git lists an untracked directory and then what it holds: once is enough.
            if out
                .last()
                .is_some_and(|(d, dir)| *dir && rel.starts_with(d))
            {
                continue;
            }
            if self.includes(&rel, is_dir) {
                out.push((rel, is_dir));
            } else if is_dir && self.reaches(&rel) {
                self.reach_into(base, &rel, &mut out)?;
            }
        }
        Ok(out)
    }

    /// Git lists a directory it could not read as empty and exits 0, so its
    /// listing is checked against kardwt's own walk of the base (every directory git did not
    /// list as ignored, where a failed read is an error): a path a pattern includes that git
    /// did not list is asked about once more (`git check-ignore`), and one that is ignored
    /// after all means git's listing missed it: an error, never fewer copies.
    fn confirm_listing(&self, base: &Path, listed: &[u8]) -> Result<()> {
        let listed: std::collections::HashSet<&[u8]> = listed
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| p.strip_suffix(b"/").unwrap_or(p))
            .collect();
        let mut unlisted: Vec<u8> = Vec::new();
        let mut pending = vec![PathBuf::new()];
        while let Some(dir) = pending.pop() {
            let path = base.join(&dir);
            let unreadable = || format!("cannot list {}", path.display());
            let listing = match std::fs::read_dir(&path) {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(unreadable),
            };
            for entry in listing {
                let entry = entry.with_context(unreadable)?;
                let rel = dir.join(entry.file_name());
                let bytes = rel.as_os_str().as_bytes();
                if bytes == b".git" || listed.contains(bytes) {
                    continue;
                }
                let is_dir = entry.file_type().with_context(unreadable)?.is_dir();
                if self.includes(&rel, is_dir) {
                    unlisted.extend_from_slice(bytes);
                    unlisted.push(0);
                } else if is_dir && !base.join(&rel).join(".git").exists() {
                    pending.push(rel);
                }
            }
        }
        if unlisted.is_empty() {
            return Ok(());
        }
        let missed = crate::git::check_ignore_z(base, unlisted, false)?;
        let first: Vec<String> = missed
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .take(3)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        if first.is_empty() {
            return Ok(());
        }
        anyhow::bail!(
            "git's listing of the base's ignored files was incomplete: it left out {} (a directory git could not read looks empty to it)",
            first.join(", ")
        )
    }

    /// Look inside the ignored directory `dir`, which a pattern leads into.
    fn reach_into(&self, base: &Path, dir: &Path, out: &mut Vec<(PathBuf, bool)>) -> Result<()> {
        let mut pending = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let path = base.join(&dir);
            let unreadable = || format!("cannot list {}", path.display());
            let listing = match std::fs::read_dir(&path) {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // gone since listed
                // A failed read of the base is a failure, never fewer copies.
                Err(e) => return Err(e).with_context(unreadable),
            };
            for entry in listing {
                let entry = entry.with_context(unreadable)?;
                let rel = dir.join(entry.file_name());
                let is_dir = entry.file_type().with_context(unreadable)?.is_dir();
                if self.includes(&rel, is_dir) {
                    out.push((rel, is_dir));
                } else if is_dir && self.reaches(&rel) {
                    pending.push(rel);
                }
            }
        }
        Ok(())
    }
}

/// The directory patterns a `.worktreeinclude` line leads through: for `a/b/*.toml`, `/a/`
/// and `/a/b/`; for `a/**/x`, everything beneath `a` (pure). A line without a slash but at its
/// end, a comment or a negation leads nowhere.
fn reach_lines(line: &str) -> Vec<String> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
        return Vec::new();
    }
    let body = line.trim_end_matches('/');
    if !body.contains('/') {
        return Vec::new();
    }
    let comps: Vec<&str> = body.trim_start_matches('/').split('/').collect();
    let mut out = Vec::new();
    for k in 1..comps.len() {
        if comps[k - 1] == "**" {
            out.push(match k {
                1 => "*".to_owned(),
                _ => format!("/{}/**", comps[..k - 1].join("/")),
            });
            break;
        }
        out.push(format!("/{}/", comps[..k].join("/")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn include(lines: &[&str]) -> Include {
        let (mut b, mut r) = (
            GitignoreBuilder::new("/base"),
            GitignoreBuilder::new("/base"),
        );
        for line in lines {
            b.add_line(None, line).unwrap();
            for p in reach_lines(line) {
                r.add_line(None, &p).unwrap();
            }
        }
        Include {
            matcher: b.build().unwrap(),
            reach: r.build().unwrap(),
        }
    }

    #[test]
    fn matches_files_and_records_the_named_directory() {
        let m = include(&[
            ".env.local",
            "node_modules/",
            "!node_modules/.cache/",
            "config/*.toml",
        ]);
        let root = |p: &str| {
            m.includes(Path::new(p), false)
                .then(|| m.record_root(Path::new(p)).display().to_string())
        };
        assert_eq!(root(".env.local").as_deref(), Some(".env.local"));
        assert_eq!(root("sub/.env.local").as_deref(), Some("sub/.env.local"));
        assert_eq!(root("node_modules/a/b.js").as_deref(), Some("node_modules"));
        assert_eq!(root("node_modules/.cache/x"), None);
        assert_eq!(root("config/dev.toml").as_deref(), Some("config/dev.toml"));
        assert_eq!(root("config/sub/dev.toml"), None);
        assert_eq!(root("notes.txt"), None);
        assert!(m.leaves_out(Path::new("node_modules/.cache"), true));
    }

    #[test]
    fn only_patterns_with_a_slash_lead_into_ignored_directories() {
        assert!(reach_lines(".env.local").is_empty());
        assert!(reach_lines("node_modules/").is_empty());
        assert!(reach_lines("!build/x").is_empty());
        assert_eq!(reach_lines("build/keep/*.bin"), ["/build/", "/build/keep/"]);
        assert_eq!(reach_lines("/a/**/x"), ["/a/", "/a/**"]);
        assert_eq!(reach_lines("**/.env"), ["*"]);
        let m = include(&[".env.local", "build/keep/*.bin"]);
        assert!(!m.reaches(Path::new("node_modules")));
        assert!(m.reaches(Path::new("build")) && m.reaches(Path::new("build/keep")));
        assert!(!m.reaches(Path::new("build/other")));
    }
}
