//! `git kardwt runner codex session-start` and `runner gemini session-start`: the SessionStart
//! hook event of the clients that make their own worktrees with git's hooks switched off.
//! `codex exec --worktree` (Codex CLI 0.169.0) makes its tree with
//! `git -c core.hooksPath=/dev/null worktree add --detach --no-checkout` and
//! `git reset --hard`; `gemini --worktree` (Gemini CLI 0.61.0) runs `git worktree add
//! <repo>/.gemini/worktrees/<name> -b worktree-<name>` with `core.hooksPath` emptied: kardwt's
//! post-checkout shim never runs, and neither runs a setup script. SessionStart is the first
//! thing that runs inside that tree (payload `cwd` = the tree): this seeds and prepares it.
//!
//! Invariants: only a tree under the client's own worktrees directory (Codex:
//! `$CODEX_HOME/worktrees/`, else `~/.codex/worktrees/`; Gemini CLI: the repository's
//! `.gemini/worktrees/`) that is not ready is prepared (an unseeded one is recorded, detached
//! or on its branch); the base and a ready tree are left alone without a word; anything else (no
//! repository, a tree kardwt does not manage, a payload it cannot read) gets one stderr line and
//! nothing is written. The exit status is always 0: the clients would only warn about another.
//! A failed prepare (the tree recorded `failed`) prints kardwt's verdict on stderr and the
//! client's answer on stdout: Codex's `{"continue": false, "stopReason": …}`, so no agent works
//! in a tree that is not ready; Gemini CLI, which reads only `systemMessage` and
//! `additionalContext` of a SessionStart answer, is told through both. Otherwise stdout stays
//! empty (the clients read it as the hook's answer).
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::cli::{CodexCommand, GeminiCommand, GlobalArgs};
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

/// The client whose SessionStart this is.
#[derive(Debug, Clone, Copy)]
enum Client {
    Codex,
    Gemini,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }
    fn program(self) -> &'static str {
        match self {
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }
}

pub fn codex(global: GlobalArgs, cmd: &CodexCommand, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        CodexCommand::SessionStart(_) => Ok(hook(global, Client::Codex, out)),
    }
}

pub fn gemini(global: GlobalArgs, cmd: &GeminiCommand, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        GeminiCommand::SessionStart(_) => Ok(hook(global, Client::Gemini, out)),
    }
}

fn hook(global: GlobalArgs, client: Client, out: &mut dyn Write) -> i32 {
    if let Err(e) = session_start(global, client, out) {
        eprintln!(
            "kardwt: SessionStart: {}; nothing was prepared",
            one_line(&format!("{e:#}"))
        );
    }
    0
}

/// Prepare the session's tree when it is the client's and not ready; say why not on stderr.
fn session_start(global: GlobalArgs, client: Client, out: &mut dyn Write) -> Result<()> {
    let started = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let cwd = match payload_cwd(client) {
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
    let name = client.name();
    let dir = match client {
        Client::Codex => codex_worktrees(),
        Client::Gemini => ctx.repo.base.join(".gemini/worktrees").canonicalize().ok(),
    };
    let theirs = dir.is_some_and(|dir| tree.starts_with(dir));
    if !theirs || !matches!(report.verdict, Verdict::Unseeded | Verdict::Verified) {
        eprintln!(
            "kardwt: {}; not a tree of `{} --worktree`, so left as it is ({retry} prepares it)",
            one_line(&report.explain()),
            client.program()
        );
        return Ok(());
    }
    match crate::lifecycle::prepare(&ctx, &tree, None) {
        Ok(rec) => {
            eprintln!(
                "kardwt: {name} worktree {} is card {}, prepared and ready",
                tree.display(),
                rec.card
            );
        }
        Err(e) => {
            eprint!("{}", crate::ground::error::render(&e));
            let why = format!(
                "kardwt could not prepare the {name} worktree {}: {}; fix it, then: {retry}",
                tree.display(),
                one_line(&format!("{e:#}"))
            );
            let answer = match client {
                Client::Codex => {
                    serde_json::json!({"continue": false, "stopReason": why, "systemMessage": why})
                }
                Client::Gemini => serde_json::json!({
                    "systemMessage": why,
                    "hookSpecificOutput": {
                        "hookEventName": "SessionStart",
                        "additionalContext": format!(
                            "{why}. This worktree is not prepared: do not work in it; tell the \
                             user, and stop."
                        ),
                    },
                }),
            };
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
    #[error("the SessionStart payload on stdin is not the JSON {0} sends: {1}")]
    NotJson(&'static str, serde_json::Error),
}

/// The payload's `cwd`, `Ok(None)` when stdin holds none.
fn payload_cwd(client: Client) -> Result<Option<PathBuf>, PayloadError> {
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
        Some(Err(e)) => Err(PayloadError::NotJson(client.name(), e)),
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
