//! `git kardwt runner claude worktree-create | worktree-remove`: Claude
//! Code's WorktreeCreate and WorktreeRemove hook events. Create turns the payload's `name` into
//! a card id (pure, deterministic), runs `add` in the repository of the payload's `cwd` and
//! prints the worktree's canonical path as the last stdout line. Remove releases first, removes
//! a clean tree (with its branch when that has no commits beyond its base, as Claude does for
//! its own worktrees), keeps one the removability decision refuses (event `remove-refused`;
//! released first when what it holds is known, as a dirty tree), and releases what an
//! already-deleted tree's record still holds. Claude Code reads the exit status:
//! 0 only when the worktree is gone afterwards, else 1 and one stderr line
//! `kept <path>: <why>; <the command that finishes the job>`.
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::cli::{ClaudeCommand, GlobalArgs};
use crate::context::Context;
use crate::git;
use crate::ground::card::CardId;
use crate::ground::error::{self, Code, Fail, Kind};
use crate::guard::shell_quote;
use crate::lifecycle::Unremovable;
use crate::state::Record;
use crate::verify::{self, Verdict};

/// The most a hook payload may hold.
const STDIN_CAP: u64 = 1 << 20;

/// Seconds between SIGTERM and SIGKILL for the processes of a tree Claude removes.
const GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Deserialize)]
struct CreatePayload {
    name: String,
    #[serde(default)]
    cwd: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct RemovePayload {
    worktree_path: PathBuf,
    #[serde(default)]
    cwd: Option<PathBuf>,
}

pub fn claude(global: GlobalArgs, cmd: &ClaudeCommand, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        ClaudeCommand::WorktreeCreate(_) => create(global, out),
        ClaudeCommand::WorktreeRemove(_) => Ok(worktree_remove(global)),
    }
}

/// The card id for a Claude worktree name (pure, deterministic, injective): see
/// [`CardId::for_name`].
pub fn card_for(name: &str) -> CardId {
    CardId::for_name(name)
}

/// Read the hook's JSON payload from stdin (only the first value; unknown fields ignored).
fn payload<T: DeserializeOwned>(event: &'static str) -> Result<T> {
    let mut text = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_CAP)
        .read_to_end(&mut text)?;
    let mut values = serde_json::Deserializer::from_slice(&text).into_iter::<T>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(error)) => Err(Payload::NotJson { event, error }.into()),
        None => Err(Payload::Missing { event }.into()),
    }
}

/// WorktreeCreate: `add` the card, print its canonical path last.
fn create(global: GlobalArgs, out: &mut dyn Write) -> Result<i32> {
    let p: CreatePayload = payload("WorktreeCreate")?;
    let card = card_for(&p.name);
    let cwd = match p.cwd {
        Some(cwd) if cwd.is_absolute() => cwd,
        Some(cwd) => return Err(Payload::RelativeCwd(cwd).into()),
        None => std::env::current_dir()?,
    };
    if !cwd.is_dir() {
        return Err(Payload::NoCwd(cwd).into());
    }
    let ctx = Context::at(global, cwd, None)?;
    // The library `add` with `add`'s own defaults: no command line, no printed path.
    let added = crate::lifecycle::add(
        &ctx,
        &crate::lifecycle::AddOptions {
            card: card.clone(),
            board: String::new(),
            timeout: None,
            quiet: false,
            base: None,
        },
    )?;
    let path = added.record.path;
    // Claude refuses a path with `.`/`..` or passing through a symlink.
    let canonical = git::canonical(&path)?;
    eprintln!(
        "kardwt: Claude worktree {:?} is card {card} at {}",
        p.name,
        canonical.display()
    );
    writeln!(out, "{}", canonical.display())?;
    Ok(0)
}

/// The repository to act in: found from the worktree itself, else the payload's cwd, else
/// the nearest existing parent of the path, else where we were started.
fn context_for(global: &GlobalArgs, path: &Path, cwd: Option<&Path>) -> Result<Context> {
    let started = std::env::current_dir()?;
    let nearest = path.ancestors().find(|a| a.is_dir()).map(Path::to_path_buf);
    let mut tries: Vec<PathBuf> = Vec::new();
    if path.is_dir() {
        tries.push(path.to_path_buf());
    }
    tries.extend(cwd.map(Path::to_path_buf));
    // A tree already gone is found through the payload's cwd, then the project
    // Claude Code names, then where we were started.
    tries.extend(std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from));
    tries.extend(nearest);
    tries.push(started);
    let mut last = None;
    for dir in tries {
        match Context::at(global.clone(), dir, None) {
            Ok(ctx) => {
                // Never stand inside the tree we may remove (our own cwd is never released,
                // but a removed cwd would make every later path relative to nothing).
                std::env::set_current_dir(&ctx.repo.base)?;
                return Ok(ctx);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no repository found for {}", path.display())))
}

/// What WorktreeRemove left: the tree gone, or kept with why and the command that finishes.
enum Disposal {
    Gone,
    Kept { why: String, fix: String },
}

fn kept(why: impl Into<String>, fix: impl Into<String>) -> Disposal {
    Disposal::Kept {
        why: why.into(),
        fix: fix.into(),
    }
}

/// WorktreeRemove, as an exit status Claude Code acts on: 0 only when the tree is gone
/// afterwards. Every other outcome is 1, never 2 (2 is Claude's "blocking error").
fn worktree_remove(global: GlobalArgs) -> i32 {
    let p: RemovePayload = match payload("WorktreeRemove") {
        Ok(p) => p,
        Err(e) => {
            eprint!("{}", error::render(&e));
            return 1;
        }
    };
    let started = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let base_dir = p.cwd.clone().unwrap_or(started);
    // The last component unresolved: a symlink to a worktree is refused, never followed.
    let path = git::absolutize_keep_last(&base_dir.join(&p.worktree_path));
    if let Ok(target) = std::fs::read_link(&path) {
        eprintln!(
            "kardwt: refused {}: it is a symbolic link (to {}), not a worktree; nothing was removed",
            path.display(),
            target.display()
        );
        return 3;
    }
    let disposal = match context_for(&global, &path, p.cwd.as_deref()) {
        Ok(ctx) => remove(&ctx, &path).unwrap_or_else(|e| {
            kept(
                format!("{e:#}"),
                format!(
                    "fix that, then: {} (--force discards changes and skips a failing cleanup hook)",
                    remove_command(&ctx.repo.base, &path)
                ),
            )
        }),
        Err(_) if !exists(&path) => {
            eprintln!(
                "kardwt: {} is already gone and no repository was found to release what it held (git kardwt gc does, from the repository)",
                path.display()
            );
            Disposal::Gone
        }
        Err(e) => kept(
            format!("no git repository found from it, the payload's cwd or the hook's cwd: {e:#}"),
            format!(
                "from its repository: git kardwt remove --path {}",
                shell_quote(&path.to_string_lossy())
            ),
        ),
    };
    let (why, fix) = match disposal {
        Disposal::Gone if !exists(&path) => return 0,
        Disposal::Gone => (
            "it is still there after removal".to_owned(),
            format!(
                "inspect it: git worktree list; ls -la {}",
                shell_quote(&path.to_string_lossy())
            ),
        ),
        Disposal::Kept { why, fix } => (why, fix),
    };
    // One line, whatever a file name or git's message holds.
    let line = format!("kept {}: {why}; {fix}", path.display()).replace(['\n', '\r'], " ");
    eprintln!("{line}");
    1
}

/// Is there anything at `path` (a dangling symlink counts)?
fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// `git -C <base> kardwt remove --path <path>`, quoted for the shell.
fn remove_command(base: &Path, path: &Path) -> String {
    format!(
        "git -C {} kardwt remove --path {}",
        shell_quote(&base.to_string_lossy()),
        shell_quote(&path.to_string_lossy())
    )
}

/// Dispose of the worktree at `path` the way Claude does, releasing first.
fn remove(ctx: &Context, path: &Path) -> Result<Disposal> {
    let entries = verify::scan(&ctx.repo)?;
    let report = verify::verify(&ctx.repo, &entries, path, None);
    let shown = path.display();
    let quoted = shell_quote(&path.to_string_lossy());
    let finish = remove_command(&ctx.repo.base, path);
    match report.verdict {
        Verdict::Verified => {
            let (Some(rec), Some(admin)) = (&report.record, &report.admin) else {
                anyhow::bail!("internal error: a verified worktree without record");
            };
            let tree = crate::lifecycle::RemovalTree {
                path,
                admin,
                rec,
                locked: report.locked,
            };
            let how = crate::lifecycle::RemovalHow {
                force: false,
                processes: crate::lifecycle::Processes::Release(GRACE),
            };
            let why = match crate::lifecycle::decide_removal(ctx, &tree, how) {
                Ok(_) => return remove_clean(ctx, &report, rec),
                Err(why) => why,
            };
            // Claude is done with the tree: what it holds stays, what it ran is released,
            // unless that is unknown or not safe.
            let what = if why.releasable() {
                match crate::lifecycle::release_verified(ctx, &report, GRACE) {
                    Ok(_) => "its processes, cleanup hook and ports were released".to_owned(),
                    Err(e) => format!("releasing it failed: {e:#}"),
                }
            } else {
                "nothing was released".to_owned()
            };
            let said = why.said_whole("it");
            ctx.cards.log(
                crate::state::EventKind::RemoveRefused,
                &rec.card,
                path,
                &format!("kept: {said}"),
                Duration::ZERO,
            );
            let first = match &why {
                Unremovable::WouldRefuse { blockers } => blockers
                    .iter()
                    .map(|b| b.fix.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
                Unremovable::Nested { .. } => {
                    "move the nested repository or worktree out of the tree".to_owned()
                }
                Unremovable::Mounted { .. } => "unmount what is mounted in it".to_owned(),
                Unremovable::Unseen { .. } => "end the processes working in it yourself".to_owned(),
                Unremovable::Unproven { .. } => "fix that".to_owned(),
                Unremovable::Dirty { .. } | Unremovable::InUse { .. } => {
                    "commit or stash what you want to keep".to_owned()
                }
            };
            Ok(kept(
                format!("{said}; {what}"),
                format!("{first}, then: {finish}"),
            ))
        }
        Verdict::Prunable => {
            // Released, then pruned, so no `prunable` entry is left behind.
            let done = crate::lifecycle::release_gone(ctx, &report, GRACE)?;
            let details: Vec<String> = done
                .steps
                .iter()
                .map(|s| format!("{}: {}", s.step, s.detail))
                .collect();
            let timeout = ctx.rules()?.config.action_timeout_seconds;
            let deadline = crate::context::after(std::time::Instant::now(), timeout);
            let note = "runner: directory was gone";
            let pruned = match crate::lifecycle::prune_gone(ctx, &done.card, path, deadline, note)? {
                None => "its registration was pruned".to_owned(),
                Some(why) => format!(
                    "git could not prune its registration ({why}): git kardwt gc --prunable --apply does"
                ),
            };
            eprintln!(
                "kardwt: {shown} was already deleted; released what card {}'s record held ({}); {pruned}",
                done.card,
                details.join("; ")
            );
            Ok(Disposal::Gone)
        }
        Verdict::Absent => {
            // An orphan: git no longer knows it, but the card's claim still names it.
            let orphan = ctx
                .cards
                .orphans(&ctx.repo.base)
                .into_iter()
                .map(|(c, _)| c)
                .find(|c| c.path == path);
            let Some(claim) = orphan else {
                if exists(path) {
                    return Ok(kept(
                        "no worktree is registered there and kardwt deletes only worktrees",
                        format!("inspect it, and delete it by hand if it is yours: rm -r {quoted}"),
                    ));
                }
                eprintln!("kardwt: no worktree is registered at {shown}; nothing to release");
                return Ok(Disposal::Gone);
            };
            let cfg = ctx.rules()?.config;
            let deadline =
                crate::context::after(std::time::Instant::now(), cfg.action_timeout_seconds);
            let steps = crate::lifecycle::release_orphan(ctx, &cfg, &claim, deadline)?;
            ctx.cards.delete_claim(&claim.card);
            let details: Vec<String> = steps
                .iter()
                .map(|s| format!("{}: {}", s.step, s.detail))
                .collect();
            eprintln!(
                "kardwt: {shown} was already removed; released what card {}'s claim held ({})",
                claim.card,
                details.join("; ")
            );
            Ok(Disposal::Gone)
        }
        Verdict::Unseeded => Ok(kept(
            "it is a linked worktree kardwt has no record of, so kardwt leaves it alone",
            format!(
                "git -C {} worktree remove {quoted}",
                shell_quote(&ctx.repo.base.to_string_lossy())
            ),
        )),
        Verdict::Base => Ok(kept(
            "it is the base checkout, which kardwt never removes",
            "nothing to run: it is not a Claude worktree",
        )),
        Verdict::Foreign => Ok(kept(report.explain(), report.fix_hint())),
    }
}

/// A clean, verified tree: released and removed, with its branch when that is kardwt's own
/// `card/<id>` and has no commits beyond its base (`remove --delete-branch`'s
/// rule, so a branch with commits of its own is kept and named). A branch kardwt did not
/// create (a hook-recorded tree on the user's branch) is never deleted here.
fn remove_clean(ctx: &Context, report: &verify::Report, rec: &Record) -> Result<Disposal> {
    let own_branch = rec.card.branch() == rec.branch;
    let opts = crate::lifecycle::RemoveOptions {
        force: false,
        delete_branch: own_branch,
        processes: crate::lifecycle::Processes::Release(GRACE),
        recheck: None,
    };
    let done = crate::lifecycle::remove_verified(ctx, report, &opts)?;
    let shown = done.path.display();
    let branch = &rec.branch;
    if branch.is_empty() {
        eprintln!("kardwt: removed {shown} (released first; it was detached)");
    } else if !crate::git::ref_exists(&ctx.repo.base, &format!("refs/heads/{branch}")) {
        eprintln!("kardwt: removed {shown} and its branch {branch} (released first; it had no commits beyond its base)");
    } else if !own_branch {
        eprintln!("kardwt: removed {shown} (released first); kept branch {branch}: kardwt did not create it");
    } else if !crate::lifecycle::merged_into_base(ctx, rec) {
        eprintln!(
            "kardwt: removed {shown} (released first); kept branch {branch}: it has commits beyond its base {} (delete it with git -C {} branch -D {branch})",
            rec.base_ref,
            shell_quote(&ctx.repo.base.to_string_lossy())
        );
    } else {
        let why = done.steps.iter().find(|s| s.step == "branch");
        eprintln!(
            "kardwt: removed {shown} (released first); kept branch {branch}: {}",
            why.map_or("deleting it failed", |s| s.detail.as_str())
        );
    }
    Ok(Disposal::Gone)
}

/// What is wrong with the payload Claude Code sent a hook on stdin: a usage error (exit 2). Not
/// an error type itself: `?` makes it the [`Fail`] that says so, never a plain exit 1.
#[derive(Debug)]
enum Payload {
    NotJson {
        event: &'static str,
        error: serde_json::Error,
    },
    Missing {
        event: &'static str,
    },
    RelativeCwd(PathBuf),
    NoCwd(PathBuf),
}

impl std::fmt::Display for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::NotJson { event, error } => write!(
                f,
                "the {event} payload on stdin is not the JSON Claude Code sends: {error}"
            ),
            Payload::Missing { event } => write!(f, "no {event} payload on stdin"),
            Payload::RelativeCwd(cwd) => {
                write!(
                    f,
                    "the payload's cwd {} is not an absolute path",
                    cwd.display()
                )
            }
            Payload::NoCwd(cwd) => write!(f, "cannot enter the payload's cwd {}", cwd.display()),
        }
    }
}

/// [`Payload`] as an error of its kind.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadPayload(Payload);

impl From<Payload> for anyhow::Error {
    fn from(payload: Payload) -> anyhow::Error {
        anyhow::Error::new(Fail::from(BadPayload(payload)))
    }
}

impl Kind for BadPayload {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec![match self.0 {
            Payload::NotJson { .. } => {
                "git kardwt runner claude is run by Claude Code's hooks \
                                        (githooks/runners/claude/hooks.json)"
            }
            Payload::Missing { .. } => "Claude Code sends the hook's JSON on stdin",
            Payload::RelativeCwd(_) | Payload::NoCwd(_) => {
                "Claude Code runs the hook with the session's project directory as cwd"
            }
        }
        .into()]
    }
}

#[cfg(test)]
mod tests {
    use super::card_for;

    #[test]
    fn names_become_distinct_valid_card_ids_deterministically() {
        assert_eq!(card_for("bold-oak-a3f2").as_str(), "bold-oak-a3f2");
        assert_eq!(card_for("feat/x y").as_str(), "feat-x-y-106dd400");
        assert_ne!(card_for("feat/x-y"), card_for("feat-x-y"));
        assert_eq!(card_for("feat/x y"), card_for("feat/x y"));
    }
}
