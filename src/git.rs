//! The only place that spawns `git`: every call runs with the variables that
//! `git rev-parse --local-env-vars` lists removed (an inherited `GIT_INDEX_FILE` from a hook
//! would otherwise corrupt another worktree's index), through duct.
use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::error::{Code, Fail};

/// Variables git treats as local to one repository; fetched once per process, and only when a
/// git process is actually spawned (reading commands never pay for it).
fn local_env_vars() -> &'static [String] {
    static VARS: OnceLock<Vec<String>> = OnceLock::new();
    VARS.get_or_init(|| {
        let listed = std::process::Command::new("git")
            .args(["rev-parse", "--local-env-vars"])
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::to_owned)
                    .collect()
            });
        // git's own list as of 2.47, in case asking git failed.
        listed.unwrap_or_else(|| {
            [
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                "GIT_CONFIG",
                "GIT_CONFIG_PARAMETERS",
                "GIT_CONFIG_COUNT",
                "GIT_OBJECT_DIRECTORY",
                "GIT_DIR",
                "GIT_WORK_TREE",
                "GIT_IMPLICIT_WORK_TREE",
                "GIT_GRAFT_FILE",
                "GIT_INDEX_FILE",
                "GIT_NO_REPLACE_OBJECTS",
                "GIT_REPLACE_REF_BASE",
                "GIT_PREFIX",
                "GIT_SHALLOW_FILE",
                "GIT_COMMON_DIR",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
        })
    })
}

/// A `git` invocation in `dir` with the scrubbed environment. Extra variables can be added
/// by the caller (e.g. the marker `add` sets for its own `git worktree add`).
pub fn cmd<I, S>(dir: &Path, args: I) -> duct::Expression
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut all: Vec<OsString> = vec!["-C".into(), dir.as_os_str().to_owned()];
    all.extend(args.into_iter().map(Into::into));
    let mut expr = duct::cmd("git", all);
    for var in local_env_vars() {
        expr = expr.env_remove(var);
    }
    expr
}

/// The outcome of a finished git call.
pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Run `git` to completion, capturing both streams; `deadline` kills it when it passes.
pub fn run_until(expr: duct::Expression, deadline: Option<Instant>) -> Result<Output> {
    let handle = expr
        .stdout_capture()
        .stderr_capture()
        .stdin_null()
        .unchecked()
        .start()
        .context("could not start git: is it installed and on PATH?")?;
    let out = match deadline {
        None => handle.wait()?.clone(),
        Some(d) => match handle.wait_deadline(d)? {
            Some(out) => out.clone(),
            None => {
                let _ = handle.kill();
                return Err(
                    Fail::new(Code::Deadline, "the action deadline passed while git ran")
                        .hint("raise --timeout or worktree.action_timeout_seconds")
                        .into(),
                );
            }
        },
    };
    Ok(Output {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Run `git -C dir args…` and return its trimmed stdout, or an error quoting git's stderr.
pub fn run<I, S>(dir: &Path, args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let shown = args
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let out = run_until(cmd(dir, args), None)?;
    if !out.ok {
        anyhow::bail!("`git {shown}` failed: {}", out.stderr.trim());
    }
    Ok(out.stdout.trim_end_matches('\n').to_owned())
}
