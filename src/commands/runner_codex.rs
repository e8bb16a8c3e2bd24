//! `git kardwt runner codex session-start`: Codex's SessionStart hook event.
//! `codex exec --worktree` (Codex CLI 0.169.0) makes its tree with
//! `git -c core.hooksPath=/dev/null worktree add --detach --no-checkout` and
//! `git reset --hard`, so kardwt's post-checkout shim never runs, and the CLI runs no
//! local-environment setup script. SessionStart is the first thing that runs inside that tree
//! (payload `cwd` = the tree): this seeds and prepares it.
//!
//! Invariants: only a tree under Codex's own worktrees directory (`$CODEX_HOME/worktrees/`,
//! else `~/.codex/worktrees/`) that is not ready is prepared (an unseeded one is recorded
//! detached, with no expected branch); the base and a ready tree are left alone without a
//! word; anything else (no repository, a tree kardwt does not manage, a payload it cannot
//! read) gets one stderr line and nothing is written. The exit status is always 0: Codex would
//! only warn about another. A failed prepare (the tree recorded `failed`) prints kardwt's
//! verdict on stderr and Codex's `{"continue": false, "stopReason": …}` on stdout, so no agent
//! works in a tree that is not ready; otherwise stdout stays empty (Codex reads it as the
//! hook's answer).
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::cli::{CodexCommand, GlobalArgs};
use crate::context::Context;
use crate::state::State;
use crate::verify::{self, Verdict};

/// The most a hook payload may hold.
const STDIN_CAP: u64 = 1 << 20;

/// The part of Codex's SessionStart payload kardwt reads (the rest is ignored).
#[derive(Debug, Deserialize)]
struct SessionStart {
    #[serde(default)]
    cwd: Option<PathBuf>,
}

pub fn codex(global: GlobalArgs, cmd: &CodexCommand, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        CodexCommand::SessionStart(_) => {
            if let Err(e) = session_start(global, out) {
                eprintln!(
                    "kardwt: SessionStart: {}; nothing was prepared",
                    one_line(&format!("{e:#}"))
                );
            }
            Ok(0)
        }
    }
}

/// Prepare the session's tree when it is Codex's and not ready; say why not on stderr.
fn session_start(global: GlobalArgs, out: &mut dyn Write) -> Result<()> {
    let started = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let cwd = match payload_cwd() {
        Ok(Some(cwd)) if cwd.is_absolute() => cwd,
        Ok(_) => started,
        Err(why) => {
            eprintln!("kardwt: {why}; using the hook's working directory");
            started
        }
    };
    let ctx = match Context::at(global, cwd.clone(), None) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!(
                "kardwt: {} is not in a git repository kardwt can read ({}); nothing to prepare",
                cwd.display(),
                one_line(&format!("{e:#}"))
            );
            return Ok(());
        }
    };
    let Some(tree) = ctx.repo.current.clone() else {
        eprintln!(
            "kardwt: {} is not inside a worktree; nothing to prepare",
            cwd.display()
        );
        return Ok(());
    };
    let entries = verify::scan(&ctx.repo)?;
    let report = verify::verify(&ctx.repo, &entries, &tree, None);
    let ready = report.verdict == Verdict::Verified && report.state() == Some(State::Ready);
    if report.verdict == Verdict::Base || ready {
        return Ok(());
    }
    let retry = format!(
        "git -C {} kardwt prepare --path {}",
        crate::ground::quote::sh_path(&ctx.repo.base),
        crate::ground::quote::sh_path(&tree)
    );
    let codex_tree = codex_worktrees().is_some_and(|dir| tree.starts_with(dir));
    if !codex_tree || !matches!(report.verdict, Verdict::Unseeded | Verdict::Verified) {
        eprintln!(
            "kardwt: {}; not a tree of `codex --worktree`, so left as it is ({retry} prepares it)",
            one_line(&report.explain())
        );
        return Ok(());
    }
    match crate::lifecycle::prepare(&ctx, &tree, None) {
        Ok(rec) => {
            eprintln!(
                "kardwt: Codex worktree {} is card {}, prepared and ready",
                tree.display(),
                rec.card
            );
        }
        Err(e) => {
            eprint!("{}", crate::ground::error::render(&e));
            let why = format!(
                "kardwt could not prepare the Codex worktree {}: {}; fix it, then: {retry}",
                tree.display(),
                one_line(&format!("{e:#}"))
            );
            let answer =
                serde_json::json!({"continue": false, "stopReason": why, "systemMessage": why});
            writeln!(out, "{answer}")?;
        }
    }
    Ok(())
}

/// Why the SessionStart payload gave no directory (the hook's own is used then).
#[derive(Debug, thiserror::Error)]
enum PayloadError {
    #[error("could not read the SessionStart payload: {0}")]
    Read(std::io::Error),
    #[error("the SessionStart payload on stdin is not the JSON Codex sends: {0}")]
    NotJson(serde_json::Error),
}

/// The payload's `cwd`, `Ok(None)` when stdin holds none.
fn payload_cwd() -> Result<Option<PathBuf>, PayloadError> {
    let mut text = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_CAP)
        .read_to_end(&mut text)
        .map_err(PayloadError::Read)?;
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let mut values = serde_json::Deserializer::from_slice(&text).into_iter::<SessionStart>();
    match values.next() {
        Some(Ok(p)) => Ok(p.cwd),
        Some(Err(e)) => Err(PayloadError::NotJson(e)),
        None => Ok(None),
    }
}

/// Codex's own worktrees directory, canonical: `$CODEX_HOME/worktrees`, else
/// `~/.codex/worktrees`; `None` when it does not exist.
fn codex_worktrees() -> Option<PathBuf> {
    let home = match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => Path::new(&std::env::var_os("HOME")?).join(".codex"),
    };
    home.join("worktrees").canonicalize().ok()
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}
