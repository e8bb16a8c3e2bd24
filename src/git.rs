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

/// The argv of one git call (SPEC R-TRUST 1): the subcommand and the program's own fixed
/// options first, then the operands that come from outside the program (paths, refs, remote
/// and branch names, from the rules file, records, git config or the command line) after a
/// single `--end-of-options`, so no value can ever be read as an option. Pathspecs go after
/// `--` instead, which is git's convention for them.
#[derive(Debug, Clone, Default)]
pub struct Argv {
    args: Vec<OsString>,
    ended: bool,
}

impl Argv {
    /// The subcommand and its fixed options, all written in the program itself.
    pub fn new<I, S>(fixed: I) -> Argv
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Argv {
            args: fixed.into_iter().map(Into::into).collect(),
            ended: false,
        }
    }

    /// One more fixed option, written in the program itself (before any outside operand).
    pub fn fixed(mut self, arg: impl Into<OsString>) -> Argv {
        debug_assert!(!self.ended, "a fixed option after an outside operand");
        self.args.push(arg.into());
        self
    }

    /// One operand from outside the program; the first one is preceded by `--end-of-options`.
    pub fn outside(mut self, arg: impl Into<OsString>) -> Argv {
        if !self.ended {
            self.args.push("--end-of-options".into());
            self.ended = true;
        }
        self.args.push(arg.into());
        self
    }

    /// Pathspecs, after `--` (git reads nothing after it as an option or a revision).
    pub fn paths<I, S>(mut self, paths: I) -> Argv
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.push("--".into());
        self.args.extend(paths.into_iter().map(Into::into));
        self.ended = true;
        self
    }
}

impl IntoIterator for Argv {
    type Item = OsString;
    type IntoIter = std::vec::IntoIter<OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.args.into_iter()
    }
}

impl<'a> IntoIterator for &'a Argv {
    type Item = &'a OsString;
    type IntoIter = std::slice::Iter<'a, OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.args.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::Argv;

    fn strings(argv: &Argv) -> Vec<String> {
        argv.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn outside_operands_follow_a_single_end_of_options() {
        let argv = Argv::new(["fetch", "--quiet"])
            .fixed("--no-tags")
            .outside("--upload-pack=touch x")
            .outside("+refs/heads/main:refs/remotes/o/main");
        assert_eq!(
            strings(&argv),
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--end-of-options",
                "--upload-pack=touch x",
                "+refs/heads/main:refs/remotes/o/main"
            ]
        );
    }

    #[test]
    fn without_outside_operands_nothing_is_added() {
        assert_eq!(strings(&Argv::new(["status"])), ["status"]);
    }

    #[test]
    fn pathspecs_follow_a_double_dash() {
        let argv = Argv::new(["check-ignore"]).paths(["-x", ".env"]);
        assert_eq!(strings(&argv), ["check-ignore", "--", "-x", ".env"]);
    }
}
