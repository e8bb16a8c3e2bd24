//! The single spawner of `git`: every call runs through `sys/child.rs` (no helper threads, no
//! signal wakeups) with the variables that `git rev-parse --local-env-vars` lists removed (an
//! inherited `GIT_INDEX_FILE` from a hook would otherwise corrupt another worktree's index) but
//! the settings given on git's command line or in `GIT_CONFIG_COUNT`, and
//! is traced on stderr under `KARDWT_TRACE=1` (command and duration, one line). Nothing outside
//! `git/` builds a [`Call`].
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::ground::error::Fail;

/// A work tree tied to its git dir by configuration (`core.worktree`) rather than by a `.git`
/// entry in it: (work tree, git dir), set once the repository is found. git run there finds no
/// repository by itself, so it is named on git's command line.
static DETACHED: OnceLock<(std::path::PathBuf, std::path::PathBuf)> = OnceLock::new();

/// Say that `work_tree` has no `.git` and its git dir is `git_dir` (the first call wins).
pub(super) fn detached_work_tree(work_tree: &Path, git_dir: &Path) {
    let _ = DETACHED.set((work_tree.to_path_buf(), git_dir.to_path_buf()));
}

/// Is `KARDWT_TRACE=1` set?
fn tracing() -> bool {
    crate::ground::trace::on()
}

/// One trace line for a finished git call: `kardwt trace: git -C <dir> <args> (<ms> ms, exit <code>)`.
fn trace(dir: Option<&Path>, args: &[OsString], started: Instant, code: Option<i32>) {
    if !tracing() {
        return;
    }
    let mut line = String::from("kardwt trace: git");
    if let Some(d) = dir {
        line.push_str(&format!(" -C {}", d.display()));
    }
    for a in args {
        line.push(' ');
        line.push_str(&a.to_string_lossy());
    }
    let exit = code.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}"));
    line.push_str(&format!(" ({} ms, {exit})", started.elapsed().as_millis()));
    eprintln!("{line}");
}
/// Variables git reads that are never local to a repository: what git itself exports to a
/// command it runs (`GIT_EXEC_PATH`), identities, prompts, transports, tracing and the global
/// config's place. Exact names, or prefixes ending in `_` or `TRACE`.
const NEVER_LOCAL: &[&str] = &[
    "GIT_EXEC_PATH",
    "GIT_AUTHOR_",
    "GIT_COMMITTER_",
    "GIT_SSL_",
    "GIT_TRACE",
    "GIT_ASKPASS",
    "GIT_TERMINAL_PROMPT",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_HTTP_USER_AGENT",
    "GIT_MERGE_VERBOSITY",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_OPTIONAL_LOCKS",
];

/// The variables git 2.47 treats as local to one repository (`git rev-parse --local-env-vars`).
const KNOWN_LOCAL: &[&str] = &[
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
];

fn known_local() -> Vec<String> {
    KNOWN_LOCAL.iter().map(|s| (*s).to_owned()).collect()
}

/// Could `name` be a variable git treats as local to one repository? Every one git lists starts
/// with `GIT_`; any `GIT_` name not known to be global counts, so a variable a newer git adds
/// is still asked about.
fn may_be_local(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return name.as_encoded_bytes().starts_with(b"GIT_");
    };
    name.starts_with("GIT_")
        && !NEVER_LOCAL.iter().any(|known| {
            if known.ends_with('_') || known.ends_with("TRACE") {
                name.starts_with(known)
            } else {
                name == *known
            }
        })
}

/// Variables git treats as local to one repository; fetched once per process, and only when a
/// git process is actually spawned (reading commands never pay for it) and the environment
/// holds a variable that could be one (else there is nothing to remove, and no `git rev-parse`
/// is started: most commands run with only `GIT_EXEC_PATH`, which git sets itself).
fn local_env_vars() -> &'static [String] {
    static VARS: OnceLock<Vec<String>> = OnceLock::new();
    VARS.get_or_init(|| {
        let mut present = std::env::vars_os().filter(|(name, _)| may_be_local(name));
        let Some(first) = present.next() else {
            return Vec::new();
        };
        // Only variables git's list as of 2.47 names (git sets `GIT_PREFIX` for every hook):
        // that list is the answer for them, and no `git rev-parse` is started.
        let known = |name: &OsStr| KNOWN_LOCAL.iter().any(|k| name == OsStr::new(k));
        if std::iter::once(first)
            .chain(present)
            .all(|(name, _)| known(&name))
        {
            return known_local();
        }
        let started = Instant::now();
        let mut cmd = Command::new("git");
        cmd.args(["rev-parse", "--local-env-vars"])
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = crate::sys::start_child(&mut cmd, Vec::new(), "git")
            .ok()
            .and_then(|child| child.capture(None).ok().flatten());
        let args: Vec<OsString> = vec!["rev-parse".into(), "--local-env-vars".into()];
        trace(
            None,
            &args,
            started,
            output.as_ref().and_then(|o| o.status.code()),
        );
        let listed = output.filter(|o| o.status.success()).map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        });
        // git's own list as of 2.47, in case asking git failed.
        listed.unwrap_or_else(known_local)
    })
}

/// Does the variable `name` carry configuration given on git's command line or through
/// `GIT_CONFIG_COUNT` (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
/// `GIT_CONFIG_VALUE_<n>`)? (pure)
fn is_command_line_config(name: &str) -> bool {
    name == "GIT_CONFIG_PARAMETERS"
        || name == "GIT_CONFIG_COUNT"
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
}

/// One git call being built: `git -C dir args…`, with optional extra variables, stdin and
/// deadline. Private to `git/`: nothing else spawns git.
pub(super) struct Call<'a> {
    dir: &'a Path,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    deadline: Option<Instant>,
    untraced: bool,
    own_group: bool,
}

/// The outcome of a finished git call.
pub(crate) struct Output {
    pub ok: bool,
    /// The exit code (None when a signal ended it).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// stdout as git wrote it (names with any byte).
    pub bytes: Vec<u8>,
}

impl Output {
    /// A step kardwt did in git's place that failed, told as git would tell it (on stderr).
    pub(crate) fn failed(stderr: String) -> Output {
        Output {
            ok: false,
            code: None,
            stdout: String::new(),
            stderr,
            bytes: Vec::new(),
        }
    }
}

impl<'a> Call<'a> {
    pub(super) fn new<I, S>(dir: &'a Path, args: I) -> Call<'a>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Call {
            dir,
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            stdin: None,
            deadline: None,
            untraced: false,
            own_group: false,
        }
    }

    /// One more variable for git (and the hooks it runs).
    pub(super) fn env(mut self, key: impl Into<OsString>, value: impl AsRef<OsStr>) -> Call<'a> {
        self.env.push((key.into(), value.as_ref().to_owned()));
        self
    }

    /// Bytes for git's stdin (else stdin is empty).
    pub(super) fn stdin(mut self, bytes: Vec<u8>) -> Call<'a> {
        self.stdin = Some(bytes);
        self
    }

    /// Without the caller's `GIT_TRACE*` variables: for a reader whose stderr must stay empty
    /// to prove it completed, a user's tracing is not a failure.
    pub(super) fn untraced(mut self) -> Call<'a> {
        self.untraced = true;
        self
    }

    /// Start git in a process group of its own; killed at the deadline, the whole group goes
    /// (a hook git started and left in it), and only that group: what git or its hooks moved
    /// into a session of its own (a daemon) is not this call's to end.
    pub(super) fn own_group(mut self) -> Call<'a> {
        self.own_group = true;
        self
    }

    /// Kill git when `deadline` passes (exit 5).
    pub(super) fn deadline(mut self, deadline: Option<Instant>) -> Call<'a> {
        self.deadline = deadline;
        self
    }

    /// Run git to completion, capturing both streams.
    pub(super) fn output(self) -> Result<Output> {
        let started = Instant::now();
        let mut all: Vec<OsString> = Vec::new();
        if let Some((work_tree, git_dir)) = DETACHED.get().filter(|(w, _)| w == self.dir) {
            for (option, path) in [("--git-dir=", git_dir), ("--work-tree=", work_tree)] {
                let mut arg = OsString::from(option);
                arg.push(path);
                all.push(arg);
            }
        }
        all.extend(["-C".into(), self.dir.as_os_str().to_owned()]);
        all.extend(self.args.iter().cloned());
        let mut cmd = Command::new("git");
        cmd.args(all)
            .stdin(match self.stdin {
                Some(_) => Stdio::piped(),
                None => Stdio::null(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Settings the user gave git on its command line (`git -c x=y kardwt …`) or in
        // `GIT_CONFIG_COUNT` stay: they apply to every git this command runs, as they do to
        // the processes git itself starts (git keeps them even for a submodule's repository).
        // Without them kardwt's `git status` of a tree checked out under
        // `-c core.autocrlf=true` would call its files modified.
        for var in local_env_vars() {
            if !is_command_line_config(var) {
                cmd.env_remove(var);
            }
        }
        if self.untraced {
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("GIT_TRACE") {
                    cmd.env_remove(key);
                }
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if self.own_group {
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        }
        let mut child = crate::sys::start_child(&mut cmd, self.stdin.unwrap_or_default(), "git")?;
        if self.own_group {
            child = child.leads_group();
        }
        let captured = child
            .capture(self.deadline)
            .with_context(|| format!("`git {}` did not complete", shown(&self.args)))?;
        let Some(out) = captured else {
            trace(Some(self.dir), &self.args, started, None);
            return Err(Fail::from(crate::sys::Overran {
                during: "while git ran".into(),
            })
            .into());
        };
        trace(Some(self.dir), &self.args, started, out.status.code());
        Ok(Output {
            ok: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            bytes: out.stdout,
        })
    }

    /// Run git; its trimmed stdout, or an error quoting git's stderr.
    pub(super) fn run(self) -> Result<String> {
        let shown = shown(&self.args);
        let out = self.output()?;
        if !out.ok {
            anyhow::bail!("`git {shown}` failed: {}", out.stderr.trim());
        }
        Ok(out.stdout.trim_end_matches('\n').to_owned())
    }
}

fn shown(args: &[OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `git -C dir args…` and return its trimmed stdout, or an error quoting git's stderr.
/// Private to `git/`: everyone else calls the typed operations.
pub(super) fn run<I, S>(dir: &Path, args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    Call::new(dir, args).run()
}

/// `git --no-replace-objects args…` in `dir` with `input` on stdin; its stdout as bytes. Exit
/// 0 and 1 (check-ignore's "nothing matched") are answers, anything else an error quoting
/// git's stderr. Replace refs are off because the pack git pushes ignores them (pre-push's
/// `log -z --raw`, `check-ignore`, `ls-files`, `cat-file`).
pub(crate) fn raw_no_replace(
    dir: &Path,
    args: Vec<OsString>,
    input: Option<Vec<u8>>,
) -> Result<Vec<u8>> {
    let shown = args
        .iter()
        .take(2)
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut all: Vec<OsString> = vec!["--no-replace-objects".into()];
    all.extend(args);
    let mut call = Call::new(dir, all);
    if let Some(bytes) = input {
        call = call.stdin(bytes);
    }
    let out = call.output()?;
    match out.code {
        Some(0 | 1) => Ok(out.bytes),
        _ => anyhow::bail!("`git {shown}` failed: {}", out.stderr.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::may_be_local;
    use std::ffi::OsStr;

    #[test]
    fn every_variable_git_lists_as_local_may_be_local() {
        // git's own list (2.47) and names a newer git could add: all are asked about.
        for name in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_CONFIG",
            "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT",
            "GIT_OBJECT_DIRECTORY",
            "GIT_COMMON_DIR",
            "GIT_PREFIX",
            "GIT_SOMETHING_NEW",
        ] {
            assert!(may_be_local(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn global_variables_and_others_are_not_local() {
        for name in [
            "GIT_EXEC_PATH",
            "GIT_AUTHOR_NAME",
            "GIT_COMMITTER_EMAIL",
            "GIT_SSL_CAINFO",
            "GIT_TRACE2_PERF",
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_NOSYSTEM",
            "GIT_CEILING_DIRECTORIES",
            "HOME",
            "KARDWT_TRACE",
        ] {
            assert!(!may_be_local(OsStr::new(name)), "{name}");
        }
    }
}
