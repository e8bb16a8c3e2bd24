//! Sharing (SPEC R-SEED): link the base's ignored `.env`/`.env.*` files and, when the worktree
//! has none, the base's `.claude/skills` and `.agents/skills` into a worktree. Never overwrites
//! or unlinks anything; returns the links it created (relative paths) for the record. A link
//! git would show as untracked is kept out of `git status` by an anchored pattern in a marked
//! block of `<common dir>/info/exclude`.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::config::{EnvSharing, Sharing, SkillsSharing};
use crate::git;

/// The skills directories shared by the fallback rule.
pub const SKILLS: [&str; 2] = [".claude/skills", ".agents/skills"];

const BLOCK_START: &str = "# >>> git-kardwt: shared links (managed by git kardwt) >>>";
const BLOCK_END: &str = "# <<< git-kardwt <<<";

/// Is `name` one of the root-level files `sharing.env: link` shares?
pub fn is_env_name(name: &str) -> bool {
    name == ".env" || (name.starts_with(".env.") && name.len() > ".env.".len())
}

/// Create the links `sharing` asks for in `worktree`, from `base`. Returns what was linked.
pub fn share(
    sharing: &Sharing,
    base: &Path,
    worktree: &Path,
    common_dir: &Path,
) -> Result<Vec<String>> {
    let mut links = Vec::new();
    if sharing.env == EnvSharing::Link {
        for name in ignored_env_files(base)? {
            if link_if_absent(&base.join(&name), &worktree.join(&name))? {
                links.push(name);
            }
        }
    }
    if sharing.skills == SkillsSharing::Fallback {
        let mut excluded = Vec::new();
        for rel in SKILLS {
            let source = base.join(rel);
            let dest = worktree.join(rel);
            if !source.is_dir() || dest.symlink_metadata().is_ok() {
                continue;
            }
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("could not create {}", parent.display()))?;
            }
            if link_if_absent(&source, &dest)? {
                links.push(rel.to_owned());
                excluded.push(format!("/{rel}"));
            }
        }
        if !excluded.is_empty() {
            ensure_excluded(common_dir, &excluded)?;
        }
    }
    Ok(links)
}

/// The base's root-level `.env`/`.env.*` files that git ignores and does not track.
fn ignored_env_files(base: &Path) -> Result<Vec<String>> {
    let mut candidates: Vec<String> = std::fs::read_dir(base)
        .with_context(|| format!("could not read {}", base.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_env_name(n))
        .collect();
    if candidates.is_empty() {
        return Ok(candidates);
    }
    candidates.sort();
    // check-ignore leaves tracked files out, so what it prints is ignored and untracked.
    let args = git::Argv::new(["check-ignore"]).paths(&candidates);
    let out = git::run_until(git::cmd(base, &args), None)?;
    let ignored: Vec<String> = out.stdout.lines().map(str::to_owned).collect();
    Ok(candidates
        .into_iter()
        .filter(|c| ignored.contains(c))
        .collect())
}

/// Symlink `dest` to `source` unless something (even a dangling link) is at `dest`.
fn link_if_absent(source: &Path, dest: &Path) -> Result<bool> {
    if dest.symlink_metadata().is_ok() {
        return Ok(false);
    }
    match std::os::unix::fs::symlink(source, dest) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e)
            .with_context(|| format!("could not link {} to {}", dest.display(), source.display())),
    }
}

/// Make sure the marked block of `<common dir>/info/exclude` holds `patterns`.
fn ensure_excluded(common_dir: &Path, patterns: &[String]) -> Result<()> {
    let path: PathBuf = common_dir.join("info").join("exclude");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let updated = with_block(&text, patterns);
    if updated == text {
        return Ok(());
    }
    std::fs::create_dir_all(common_dir.join("info"))?;
    let tmp = path.with_extension(format!("kardwt-tmp-{}", std::process::id()));
    std::fs::write(&tmp, &updated).with_context(|| format!("could not write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("could not update {}", path.display()))
}

/// `text` with the marked block holding its old patterns plus `patterns` (pure).
pub fn with_block(text: &str, patterns: &[String]) -> String {
    let mut before = Vec::new();
    let mut inside = Vec::new();
    let mut after = Vec::new();
    let mut state = 0;
    for line in text.lines() {
        match (state, line) {
            (0, BLOCK_START) => state = 1,
            (1, BLOCK_END) => state = 2,
            (0, l) => before.push(l.to_owned()),
            (1, l) => inside.push(l.to_owned()),
            (_, l) => after.push(l.to_owned()),
        }
    }
    for p in patterns {
        if !inside.contains(p) {
            inside.push(p.clone());
        }
    }
    let mut lines = before;
    lines.push(BLOCK_START.to_owned());
    lines.extend(inside);
    lines.push(BLOCK_END.to_owned());
    lines.extend(after);
    let mut out = lines.join("\n");
    out.push('\n');
    out
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
    fn block_is_added_once_and_keeps_other_lines() {
        let pats = vec!["/.claude/skills".to_owned()];
        let once = with_block("# git's own\n*.log\n", &pats);
        assert!(
            once.starts_with("# git's own\n*.log\n# >>> git-kardwt"),
            "{once}"
        );
        assert_eq!(with_block(&once, &pats), once);
        let twice = with_block(&once, &["/.agents/skills".to_owned()]);
        assert_eq!(twice.matches(BLOCK_START).count(), 1);
        assert!(
            twice.contains("/.claude/skills\n/.agents/skills\n"),
            "{twice}"
        );
    }
}
