//! The only place that builds git's argv and spawns `git` (issue 11): every call runs with the
//! variables that `git rev-parse --local-env-vars` lists removed (an inherited
//! `GIT_INDEX_FILE` from a hook would otherwise corrupt another worktree's index), through
//! duct, and is traced on stderr under `KARDWT_TRACE=1` (command and duration, one line).
//! Typed operations live here; every one that mutates the repository (worktree add, remove,
//! prune, branch delete, fetch) takes a [`RepoLock`], which only [`crate::lock::take_repo`]
//! creates, so SPEC R-LOCK is checked by the compiler. Output parsers are pure, in [`parse`].
pub mod parse;

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::error::{Code, Fail};
use crate::lock::RepoLock;

/// Is `KARDWT_TRACE=1` set? Read once.
fn tracing() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("KARDWT_TRACE").is_some_and(|v| v == "1"))
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
/// Variables git treats as local to one repository; fetched once per process, and only when a
/// git process is actually spawned (reading commands never pay for it).
fn local_env_vars() -> &'static [String] {
    static VARS: OnceLock<Vec<String>> = OnceLock::new();
    VARS.get_or_init(|| {
        let started = Instant::now();
        let output = std::process::Command::new("git")
            .args(["rev-parse", "--local-env-vars"])
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .ok();
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

/// One git call being built: `git -C dir args…`, with optional extra variables, stdin and
/// deadline. Private: nothing outside this module spawns git.
struct Call<'a> {
    dir: &'a Path,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    deadline: Option<Instant>,
}

/// The outcome of a finished git call.
pub struct Output {
    pub ok: bool,
    /// The exit code (None when a signal ended it).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// stdout as git wrote it (names with any byte).
    pub bytes: Vec<u8>,
}

impl<'a> Call<'a> {
    pub fn new<I, S>(dir: &'a Path, args: I) -> Call<'a>
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
        }
    }

    /// One more variable for git (and the hooks it runs).
    pub fn env(mut self, key: impl Into<OsString>, value: impl AsRef<OsStr>) -> Call<'a> {
        self.env.push((key.into(), value.as_ref().to_owned()));
        self
    }

    /// Bytes for git's stdin (else stdin is empty).
    pub fn stdin(mut self, bytes: Vec<u8>) -> Call<'a> {
        self.stdin = Some(bytes);
        self
    }

    /// Kill git when `deadline` passes (exit 5).
    pub fn deadline(mut self, deadline: Option<Instant>) -> Call<'a> {
        self.deadline = deadline;
        self
    }

    /// Run git to completion, capturing both streams.
    pub fn output(self) -> Result<Output> {
        let started = Instant::now();
        let mut all: Vec<OsString> = vec!["-C".into(), self.dir.as_os_str().to_owned()];
        all.extend(self.args.iter().cloned());
        let mut expr = duct::cmd("git", all);
        for var in local_env_vars() {
            expr = expr.env_remove(var);
        }
        for (k, v) in &self.env {
            expr = expr.env(k, v);
        }
        let expr = expr.stdout_capture().stderr_capture().unchecked();
        let expr = match self.stdin {
            Some(bytes) => expr.stdin_bytes(bytes),
            None => expr.stdin_null(),
        };
        let handle = expr
            .start()
            .context("could not start git: is it installed and on PATH?")?;
        let out = match self.deadline {
            None => handle.wait()?.clone(),
            Some(d) => match handle.wait_deadline(d)? {
                Some(out) => out.clone(),
                None => {
                    let _ = handle.kill();
                    trace(Some(self.dir), &self.args, started, None);
                    return Err(Fail::new(
                        Code::Deadline,
                        "the action deadline passed while git ran",
                    )
                    .hint("raise --timeout or worktree.action_timeout_seconds")
                    .into());
                }
            },
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
    pub fn run(self) -> Result<String> {
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
/// Private: callers use the typed operations below.
fn run<I, S>(dir: &Path, args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    Call::new(dir, args).run()
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

/// How hard `git worktree remove` pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Force {
    /// Refuse a dirty or locked tree (git's default).
    No,
    /// `--force`: discard changes.
    Once,
    /// `--force --force`: also a locked tree (one git left `initializing`).
    Twice,
}

/// What `git worktree add` creates.
pub struct NewWorktree<'p> {
    pub path: &'p Path,
    /// `--no-checkout` (the delegated checkout mode).
    pub no_checkout: bool,
    /// `-b <branch>` at `start`; `None` checks out `start` (an existing branch) as it is.
    pub new_branch: Option<&'p str>,
    pub start: &'p str,
    /// A variable set to `path` for git and its hooks (the marker of `git kardwt add`).
    pub marker: &'p str,
}

/// `git worktree add` (mutates: under the repository lock).
pub fn worktree_add(
    _lock: &RepoLock,
    base: &Path,
    new: &NewWorktree<'_>,
    deadline: Option<Instant>,
) -> Result<Output> {
    let mut args = Argv::new(["worktree", "add", "--quiet"]);
    if new.no_checkout {
        args = args.fixed("--no-checkout");
    }
    if let Some(branch) = new.new_branch {
        args = args.fixed("-b").fixed(branch);
    }
    let args = args.outside(new.path).outside(new.start);
    Call::new(base, args)
        .env(new.marker, new.path)
        .deadline(deadline)
        .output()
}

/// `git worktree remove [--force [--force]] <path>` from `base` (mutates: under the
/// repository lock).
pub fn worktree_remove(
    _lock: &RepoLock,
    base: &Path,
    path: &Path,
    force: Force,
    deadline: Option<Instant>,
) -> Result<Output> {
    let mut args = Argv::new(["worktree", "remove"]);
    if force != Force::No {
        args = args.fixed("--force");
    }
    if force == Force::Twice {
        args = args.fixed("--force");
    }
    Call::new(base, args.outside(path))
        .deadline(deadline)
        .output()
}

/// `git branch -D <branch>` (mutates: under the repository lock).
pub fn branch_delete(_lock: &RepoLock, base: &Path, branch: &str) -> Result<()> {
    Call::new(base, Argv::new(["branch", "-D", "--quiet"]).outside(branch))
        .run()
        .map(drop)
}

/// Fetch exactly `refspec` from `remote`: no tags, no pruning, no FETCH_HEAD, no submodules,
/// no maintenance (mutates refs: under the repository lock).
pub fn fetch_ref(
    _lock: &RepoLock,
    base: &Path,
    remote: &str,
    refspec: &str,
    deadline: Option<Instant>,
) -> Result<Output> {
    let args = Argv::new([
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-prune",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--no-auto-maintenance",
    ])
    .outside(remote)
    .outside(refspec);
    Call::new(base, args).deadline(deadline).output()
}

/// `git ls-remote --symref <remote> HEAD`.
pub fn ls_remote_head(base: &Path, remote: &str, deadline: Option<Instant>) -> Result<Output> {
    let args = Argv::new(["ls-remote", "--symref"])
        .outside(remote)
        .outside("HEAD");
    Call::new(base, args).deadline(deadline).output()
}

/// `git status --porcelain -z <options…> [-- <paths…>]` in `worktree`, parsed; an error when git
/// fails.
pub fn status_z(
    worktree: &Path,
    options: &[&str],
    paths: &[&str],
) -> Result<Vec<parse::StatusEntry>> {
    let mut args = Argv::new(["status", "--porcelain", "-z"]);
    for o in options {
        args = args.fixed(*o);
    }
    if !paths.is_empty() {
        args = args.paths(paths.iter().copied());
    }
    let out = Call::new(worktree, args).output()?;
    if !out.ok {
        anyhow::bail!(
            "`git status` failed in {}: {}",
            worktree.display(),
            out.stderr.trim()
        );
    }
    Ok(parse::status_z(&out.bytes))
}

/// Is `ancestor` an ancestor of (or equal to) `descendant`?
pub fn is_ancestor(dir: &Path, ancestor: &str, descendant: &str) -> bool {
    let args = Argv::new(["merge-base", "--is-ancestor"])
        .outside(ancestor)
        .outside(descendant);
    Call::new(dir, args).output().is_ok_and(|o| o.ok)
}

/// Does `base` already contain the changes of `branch` (R-GC, SPEC §20: a squash or rebase
/// merge)? True when merging `branch` into `base` (`git merge-tree --write-tree`, which touches
/// no worktree and no ref) merges cleanly and yields exactly `base`'s tree.
pub fn changes_contained(dir: &Path, base: &str, branch: &str) -> bool {
    let merged = Call::new(
        dir,
        Argv::new(["merge-tree", "--write-tree", "--no-messages"])
            .outside(base)
            .outside(branch),
    )
    .output();
    let Some(merged) = merged.ok().filter(|o| o.ok) else {
        return false;
    };
    let tree = merged.stdout.lines().next().unwrap_or_default().trim();
    let base_tree = run(
        dir,
        Argv::new(["rev-parse", "--verify", "--quiet"]).outside(format!("{base}^{{tree}}")),
    );
    !tree.is_empty() && base_tree.is_ok_and(|t| t == tree)
}

/// The merge base of `a` and `b`, if they have one.
pub fn merge_base(dir: &Path, a: &str, b: &str) -> Option<String> {
    run(dir, Argv::new(["merge-base"]).outside(a).outside(b)).ok()
}

/// The commit HEAD names in `dir`, if any.
pub fn head_oid(dir: &Path) -> Option<String> {
    run(dir, ["rev-parse", "--verify", "--quiet", "HEAD"]).ok()
}

/// Which of `paths` (relative to `dir`) git ignores and does not track.
pub fn check_ignore(dir: &Path, paths: &[String]) -> Result<Vec<String>> {
    let out = Call::new(dir, Argv::new(["check-ignore"]).paths(paths)).output()?;
    Ok(out.stdout.lines().map(str::to_owned).collect())
}

/// `git ls-files --deleted -z` in `dir`: tracked files missing from the tree.
pub fn ls_files_deleted(dir: &Path) -> Result<Output> {
    Call::new(dir, ["ls-files", "--deleted", "-z"]).output()
}

/// `git ls-files -z --others --ignored --exclude-standard --directory`: every untracked path
/// the ignore rules ignore, as NUL-separated paths relative to `dir`, an ignored directory as
/// one `dir/` that git does not walk (R-COPY's `.worktreeinclude`, §22.9).
pub fn ls_ignored_untracked_z(dir: &Path) -> Result<Vec<u8>> {
    let out = Call::new(
        dir,
        [
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
    )
    .output()?;
    if !out.ok {
        anyhow::bail!(
            "git ls-files --others --ignored failed: {}",
            out.stderr.trim()
        );
    }
    Ok(out.bytes)
}

/// `git ls-files --stage -z` in `dir`.
pub fn ls_files_stage(dir: &Path) -> Result<Output> {
    Call::new(dir, ["ls-files", "--stage", "-z"]).output()
}

/// `git --no-replace-objects args…` in `dir` with `input` on stdin; its stdout as bytes. Exit
/// 0 and 1 (check-ignore's "nothing matched") are answers, anything else an error quoting
/// git's stderr. Replace refs are off because the pack git pushes ignores them (pre-push's
/// `log -z --raw`, `check-ignore`, `ls-files`, `cat-file`).
pub fn raw_no_replace(dir: &Path, args: Vec<OsString>, input: Option<Vec<u8>>) -> Result<Vec<u8>> {
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

/// The ref the symbolic ref `name` points to, if it is one.
pub fn symbolic_ref(dir: &Path, name: &str) -> Option<String> {
    run(dir, Argv::new(["symbolic-ref", "--quiet"]).outside(name)).ok()
}

/// `git rev-parse --git-path <what>` (the program's own name: `hooks`), as git prints it.
pub fn git_path(dir: &Path, what: &str) -> Result<String> {
    run(dir, ["rev-parse", "--git-path", what])
}

/// One commit HEAD has that no remote-tracking ref reaches, if any.
pub fn unpushed_commit(dir: &Path) -> Result<Option<String>> {
    let out = run(dir, ["rev-list", "-n", "1", "HEAD", "--not", "--remotes"])?;
    let oid = out.trim();
    Ok((!oid.is_empty()).then(|| oid.to_owned()))
}

/// pre-push's one pass over the pushed commits (`revs`: tips, `^boundaries`, `--not
/// --remotes=<name>`, all made by the program from git's own output): every commit with its
/// parents and its raw diff against each parent (a root against the empty tree), `-z`.
pub fn log_raw_z(dir: &Path, revs: Vec<OsString>) -> Result<Vec<u8>> {
    let mut args: Vec<OsString> = [
        "log",
        "-z",
        "--format=%H %P",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        "--diff-merges=separate",
        "--root",
        "--no-show-signature",
        "--no-relative",
    ]
    .map(OsString::from)
    .to_vec();
    args.extend(revs);
    args.push("--".into());
    raw_no_replace(dir, args, None)
}

/// `git ls-tree -r -z --full-tree <commit>`: every entry of a commit's tree.
pub fn ls_tree_z(dir: &Path, commit: &str) -> Result<Vec<u8>> {
    let args = ["ls-tree", "-r", "-z", "--full-tree", commit, "--"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// `git cat-file --batch` with one object id a line on stdin.
pub fn cat_file_batch(dir: &Path, oids: Vec<u8>) -> Result<Vec<u8>> {
    let args = ["cat-file", "--batch"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), Some(oids))
}

/// `git check-ignore -z --stdin [--no-index]` with NUL-terminated paths on stdin: the ones the
/// ignore rules ignore, NUL-separated.
pub fn check_ignore_z(dir: &Path, paths: Vec<u8>, no_index: bool) -> Result<Vec<u8>> {
    let mut args: Vec<OsString> = vec!["check-ignore".into()];
    if no_index {
        args.push("--no-index".into());
    }
    args.extend(["-z".into(), "--stdin".into()]);
    raw_no_replace(dir, args, Some(paths))
}

/// `git ls-files --stage -z`, replace refs off.
pub fn ls_files_stage_raw(dir: &Path) -> Result<Vec<u8>> {
    let args = ["ls-files", "--stage", "-z"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// `git config -z --get-regexp <regexp>` (the program's own pattern).
pub fn config_regexp_z(dir: &Path, regexp: &str) -> Result<Vec<u8>> {
    let args = ["config", "-z", "--get-regexp", regexp].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// The URL of remote `remote` (`git remote get-url`), or `None` when no such remote is
/// configured.
pub fn remote_url(dir: &Path, remote: &str) -> Option<String> {
    run(dir, Argv::new(["remote", "get-url"]).outside(remote))
        .ok()
        .filter(|u| !u.is_empty())
}

/// Does ref `name` (a full ref name) exist in `dir`'s repository?
pub fn ref_exists(dir: &Path, name: &str) -> bool {
    run(
        dir,
        Argv::new(["rev-parse", "--verify", "--quiet"]).outside(name),
    )
    .is_ok()
}

/// The value of git config `key` (the program's own key name), if it is set.
pub fn config_get(dir: &Path, key: &str) -> Option<String> {
    run(dir, Argv::new(["config", "--get"]).outside(key))
        .ok()
        .filter(|v| !v.is_empty())
}

/// The branch ref (`refs/heads/…`) that `git ls-remote --symref <remote> HEAD` names, from its
/// stdout (pure).
pub fn symref_head(stdout: &str) -> Option<String> {
    stdout.lines().find_map(|l| {
        l.strip_prefix("ref: ")
            .and_then(|r| r.strip_suffix("\tHEAD"))
            .map(str::to_owned)
    })
}

/// What a failed fetch or ls-remote of `remote` tells the user (R-DISPATCH 9): one line
/// naming the cause and one hint naming the fix, never git's multi-line text. `url` is the
/// remote's configured URL (`None`: no such remote); `what` names what was asked
/// (`its HEAD`, `refs/heads/main`); `stderr` is git's own.
pub fn remote_failure(remote: &str, url: Option<&str>, what: &str, stderr: &str) -> Fail {
    let Some(url) = url else {
        return Fail::new(
            Code::Usage,
            format!("this repository has no remote named {remote} to fetch the base from"),
        )
        .hint(format!(
            "add it (git remote add {remote} <url>) or name another one with worktree.base.remote"
        ));
    };
    if stderr.contains("couldn't find remote ref") {
        return Fail::new(
            Code::Usage,
            format!("the remote {remote} ({url}) has no {what}"),
        )
        .hint(format!(
            "set worktree.base.ref to a branch {remote} has (git ls-remote --heads {remote} lists them)"
        ));
    }
    Fail::new(
        Code::Failed,
        format!(
            "could not reach the remote {remote} ({url}) to fetch {what}: {}",
            git_cause(stderr)
        ),
    )
    .hint(format!(
        "check the URL (git remote set-url {remote} <url>), the network and your credentials, then retry"
    ))
}

/// git's first `fatal:`/`error:` line without its prefix, on one line and capped (pure).
pub fn git_cause(stderr: &str) -> String {
    let line = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| stderr.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("git gave no reason");
    let line = line
        .trim_start_matches("fatal:")
        .trim_start_matches("error:")
        .trim();
    crate::programs::tail_chars(line, 200)
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

    #[test]
    fn remote_failures_are_one_line_with_a_hint() {
        let raw = "fatal: '/gone/x.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        let f = super::remote_failure("origin", Some("/gone/x.git"), "its HEAD", raw);
        assert_eq!(f.code as i32, 1);
        assert!(!f.message.contains('\n'), "{}", f.message);
        assert!(f.message.contains("does not appear to be a git repository"));
        assert_eq!(f.hints.len(), 1);
        let f = super::remote_failure("origin", None, "its HEAD", raw);
        assert_eq!(f.code as i32, 2);
        assert!(
            f.message.contains("no remote named origin"),
            "{}",
            f.message
        );
        let f = super::remote_failure(
            "origin",
            Some("u"),
            "refs/heads/nope",
            "fatal: couldn't find remote ref refs/heads/nope\n",
        );
        assert_eq!(f.code as i32, 2);
        assert!(
            f.message.contains("has no refs/heads/nope"),
            "{}",
            f.message
        );
    }

    #[test]
    fn the_remote_head_is_read_from_ls_remote() {
        let out = "ref: refs/heads/main\tHEAD\n0123abcd\tHEAD\n";
        assert_eq!(super::symref_head(out).as_deref(), Some("refs/heads/main"));
        assert_eq!(super::symref_head("0123abcd\tHEAD\n"), None);
    }
}
