//! `git kardwt runner claude worktree-create | worktree-remove` (SPEC §19 R-RUNNER): Claude
//! Code's WorktreeCreate and WorktreeRemove hook events. Create turns the payload's `name` into
//! a card id (pure, deterministic), runs `add` in the repository of the payload's `cwd` and
//! prints the worktree's canonical path as the last stdout line. Remove releases first, removes
//! a clean tree, keeps a dirty one (event `remove-refused`), releases what an already-deleted
//! tree's record still holds, and always exits 0: the event has no decision control.
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Parser;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::card::CardId;
use crate::cli::{ClaudeCommand, Cli, Command, GlobalArgs};
use crate::context::Context;
use crate::error::{self, usage};
use crate::verify::{self, Verdict};
use crate::{commands, dirty, events, repo};

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
        ClaudeCommand::WorktreeRemove(_) => match remove(global) {
            Ok(code) => Ok(code),
            Err(err) => {
                eprint!("{}", error::render(&err));
                Ok(0)
            }
        },
    }
}

/// The card id for a Claude worktree name (pure, deterministic): see [`CardId::sanitize`].
pub fn card_for(name: &str) -> CardId {
    CardId::sanitize(name)
}

/// Read the hook's JSON payload from stdin (only the first value; unknown fields ignored).
fn payload<T: DeserializeOwned>(event: &str) -> Result<T> {
    let mut text = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_CAP)
        .read_to_end(&mut text)?;
    let mut values = serde_json::Deserializer::from_slice(&text).into_iter::<T>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(usage(format!(
            "the {event} payload on stdin is not the JSON Claude Code sends: {e}"
        ))
        .hint("git kardwt runner claude is run by Claude Code's hooks (githooks/runners/claude/hooks.json)")
        .into()),
        None => Err(usage(format!("no {event} payload on stdin"))
            .hint("Claude Code sends the hook's JSON on stdin")
            .into()),
    }
}

fn chdir(dir: &Path) -> Result<()> {
    std::env::set_current_dir(dir).map_err(|e| {
        usage(format!(
            "cannot enter the payload's cwd {}: {e}",
            dir.display()
        ))
        .hint("Claude Code runs the hook with the session's project directory as cwd")
        .into()
    })
}

/// WorktreeCreate: `add` the card, print its canonical path last.
fn create(global: GlobalArgs, out: &mut dyn Write) -> Result<i32> {
    let p: CreatePayload = payload("WorktreeCreate")?;
    let card = card_for(&p.name);
    if let Some(cwd) = &p.cwd {
        chdir(cwd)?;
    }
    let ctx = Context::new(global)?;
    // Through clap, so `add`'s defaults are the ones its command line has.
    let cli = Cli::try_parse_from(["git-kardwt", "add", card.as_str()])?;
    let Command::Add(args) = cli.command else {
        anyhow::bail!("internal error: add did not parse as add");
    };
    let mut printed = Vec::new();
    let code = commands::add::run(&ctx, &args, &mut printed)?;
    if code != 0 {
        return Ok(code);
    }
    let text = String::from_utf8_lossy(&printed);
    let Some(path) = text.lines().rfind(|l| !l.trim().is_empty()) else {
        anyhow::bail!("internal error: add printed no path");
    };
    // Claude refuses a path with `.`/`..` or passing through a symlink.
    let canonical = repo::canonical(Path::new(path))?;
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
    tries.extend(nearest);
    tries.push(started);
    let mut last = None;
    for dir in tries {
        if std::env::set_current_dir(&dir).is_err() {
            continue;
        }
        match Context::new(global.clone()) {
            Ok(ctx) => {
                // Never stand inside the tree we may remove.
                std::env::set_current_dir(&ctx.repo.base)?;
                return Ok(ctx);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no repository found for {}", path.display())))
}

/// WorktreeRemove: errors are reported on stderr by the caller, and the exit is 0 anyway;
/// a symlink named as the worktree is refused with exit 3 (SPEC §22.8).
fn remove(global: GlobalArgs) -> Result<i32> {
    let p: RemovePayload = payload("WorktreeRemove")?;
    let started = std::env::current_dir()?;
    let base_dir = p.cwd.clone().unwrap_or_else(|| started.clone());
    // The last component unresolved: a symlink to a worktree is refused, never followed.
    let path = repo::absolutize_keep_last(&base_dir.join(&p.worktree_path));
    if let Ok(target) = std::fs::read_link(&path) {
        eprintln!(
            "kardwt: refused {}: it is a symbolic link (to {}), not a worktree; nothing was removed",
            path.display(),
            target.display()
        );
        return Ok(3);
    }
    let ctx = context_for(&global, &path, p.cwd.as_deref())?;
    let entries = verify::scan(&ctx.repo)?;
    let report = verify::verify(&ctx.repo, &entries, &path, None);
    let shown = path.display();
    match report.verdict {
        Verdict::Verified => {
            let (Some(rec), Some(admin)) = (&report.record, &report.admin) else {
                anyhow::bail!("internal error: a verified worktree without record");
            };
            let dirt = dirty::dirty(&ctx.repo.base, &path, rec)?;
            let blockers =
                dirty::removal_blockers(&ctx.repo.base, &path, admin, report.locked, false)?;
            if dirt.is_empty() && blockers.is_empty() {
                let opts = commands::remove::Options {
                    force: false,
                    delete_branch: false,
                    processes: commands::remove::Processes::Release(GRACE),
                };
                commands::remove::remove_verified(&ctx, &report, &opts)?;
                eprintln!(
                    "kardwt: removed {shown} (released first; branch {} kept)",
                    rec.branch
                );
                return Ok(0);
            }
            let mut why: Vec<String> = dirt.iter().take(5).cloned().collect();
            if dirt.len() > 5 {
                why.push("…".into());
            }
            why.extend(blockers.iter().map(|b| b.check.clone()));
            let released = commands::release::release_verified(&ctx, &report, GRACE);
            events::append(
                &ctx.repo.common_dir,
                "remove-refused",
                &rec.card,
                &path,
                &format!("kept: {}", why.join(", ")),
                Duration::ZERO,
            );
            let what = match &released {
                Ok(_) => "its processes, cleanup hook and ports were released".to_owned(),
                Err(e) => format!("releasing it failed: {}", error::render(e).trim()),
            };
            eprintln!(
                "kardwt: kept {shown}: it has uncommitted changes or untracked files, or git would refuse to remove it ({}); {what}. Commit or stash what you want, then: git kardwt remove --path '{shown}'",
                why.join(", ")
            );
        }
        Verdict::Prunable => {
            let done = commands::release::release_gone(&ctx, &report, GRACE)?;
            let details: Vec<String> = done
                .steps
                .iter()
                .map(|s| format!("{}: {}", s.step, s.detail))
                .collect();
            eprintln!(
                "kardwt: {shown} was already deleted; released what card {}'s record held ({}); git kardwt gc --prunable --apply clears its registration",
                done.card,
                details.join("; ")
            );
        }
        Verdict::Absent => {
            // R-ORPHAN: git no longer knows it, but the card's claim still names it.
            let common = &ctx.repo.common_dir;
            let orphan = crate::claim::orphans(common, &ctx.repo.base)
                .into_iter()
                .map(|(c, _)| c)
                .find(|c| c.path == path);
            let Some(claim) = orphan else {
                eprintln!("kardwt: no worktree is registered at {shown}; nothing to release");
                return Ok(0);
            };
            let cfg = ctx.rules()?.config;
            let deadline =
                crate::lifecycle::after(std::time::Instant::now(), cfg.action_timeout_seconds);
            let steps = commands::release::release_orphan(&ctx, &cfg, &claim, deadline)?;
            crate::claim::delete(common, &claim.card);
            let details: Vec<String> = steps
                .iter()
                .map(|s| format!("{}: {}", s.step, s.detail))
                .collect();
            eprintln!(
                "kardwt: {shown} was already removed; released what card {}'s claim held ({})",
                claim.card,
                details.join("; ")
            );
        }
        Verdict::Unseeded | Verdict::Base | Verdict::Foreign => {
            eprintln!("kardwt: {}; kardwt leaves it alone", report.explain());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::card_for;

    #[test]
    fn names_become_valid_card_ids_deterministically() {
        assert_eq!(card_for("bold-oak-a3f2").as_str(), "bold-oak-a3f2");
        assert_eq!(card_for("feat/x y").as_str(), "feat-x-y");
        assert_eq!(card_for("-x").as_str(), "w-x");
        assert_eq!(card_for("a..b.lock").as_str(), "a.-b-lock");
        assert_eq!(card_for("é").as_str(), "w-");
        let long = "a".repeat(127) + ".b";
        assert_eq!(card_for(&long).as_str(), "a".repeat(127) + "-");
        for raw in [
            "",
            ".",
            "..",
            "x.",
            "x.lock.",
            &"z".repeat(300),
            "日本語",
            "a b\n",
        ] {
            let id = card_for(raw);
            assert!(CardIdCheck::ok(id.as_str()), "{raw:?} -> {id}");
            assert_eq!(card_for(raw), id, "deterministic");
        }
    }

    struct CardIdCheck;
    impl CardIdCheck {
        fn ok(s: &str) -> bool {
            crate::card::CardId::parse(s).is_ok() && s.len() <= 128
        }
    }
}
