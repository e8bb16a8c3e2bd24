//! [`TestRepo`]: the template repository built once, copied per test, and every helper that acts on it.
#![allow(unused_imports)]
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::*;

/// The template every [`TestRepo`] copies: origin, scratch and base as `TestRepo::new` used to
/// build them per test, built once per test run in a directory kept until the process ends.
pub(crate) fn template() -> &'static Path {
    static TEMPLATE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // Under cargo's own scratch dir, one per test process; those of finished runs go.
        let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
        for old in std::fs::read_dir(scratch).into_iter().flatten().flatten() {
            let name = old.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("kardwt-template-") {
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
        }
        let dir = scratch.join(format!("kardwt-template-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let t = TestRepo {
            origin: dir.join("origin.git"),
            scratch: dir.join("scratch"),
            base: dir.join("base"),
            home: dir.join("home"),
            tmp: dir.clone(),
            _tmp: tempfile::tempdir().unwrap(),
            commits: std::cell::Cell::new(0),
        };
        std::fs::create_dir(&t.home).unwrap();
        t.git(
            &t.tmp,
            &["init", "--quiet", "--bare", "-b", "main", "origin.git"],
        );
        t.git(&t.tmp, &["clone", "--quiet", "origin.git", "scratch"]);
        t.git(&t.scratch, &["switch", "--quiet", "-c", "main"]);
        std::fs::write(t.scratch.join("README.md"), "# project\n").unwrap();
        std::fs::create_dir(t.scratch.join("src")).unwrap();
        std::fs::write(t.scratch.join("src/lib.txt"), "one\n").unwrap();
        std::fs::write(t.scratch.join(".gitignore"), ".env\n.env.*\n").unwrap();
        t.git(&t.scratch, &["add", "-A"]);
        t.git(&t.scratch, &["commit", "--quiet", "-m", "first"]);
        std::fs::write(t.scratch.join("src/lib.txt"), "one\ntwo\n").unwrap();
        t.git(&t.scratch, &["commit", "--quiet", "-am", "second"]);
        t.git(&t.scratch, &["push", "--quiet", "-u", "origin", "main"]);
        t.git(&t.tmp, &["clone", "--quiet", "origin.git", "base"]);
        let exclude = t.common_dir().join("info/exclude");
        std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
        let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
        text.push_str("/kardbrd.yml\n");
        std::fs::write(&exclude, text).unwrap();
        dir
    })
}

/// A throwaway repository: `<tmp>/origin.git` (bare, branch main), `<tmp>/scratch` (a clone
/// used to move origin ahead), `<tmp>/base` (the base clone kardwt works from).
pub struct TestRepo {
    _tmp: tempfile::TempDir,
    /// The canonical tempdir path (it contains a space).
    pub tmp: PathBuf,
    pub origin: PathBuf,
    pub scratch: PathBuf,
    pub base: PathBuf,
    pub home: PathBuf,
    commits: std::cell::Cell<u32>,
}

impl TestRepo {
    pub fn new() -> TestRepo {
        let tmp_dir = tempfile::Builder::new()
            .prefix("kardwt test ")
            .tempdir()
            .unwrap();
        let tmp = tmp_dir.path().canonicalize().unwrap();
        assert!(tmp.to_string_lossy().contains(' '));
        let home = tmp.join("home");
        std::fs::create_dir(&home).unwrap();
        // The user's own git config: a file of this test's (never /dev/null, which a write
        // through `git config --global` would replace with a regular file).
        std::fs::write(home.join(".gitconfig"), "").unwrap();
        let repo = TestRepo {
            origin: tmp.join("origin.git"),
            scratch: tmp.join("scratch"),
            base: tmp.join("base"),
            home,
            tmp,
            _tmp: tmp_dir,
            commits: std::cell::Cell::new(0),
        };
        // The same origin, scratch and base for every test: built once per run, copied here
        // (fixtures built once), their remotes pointed at this copy's origin.
        let template = template();
        let status = Command::new("cp")
            .arg("-a")
            .arg(template.join("origin.git"))
            .arg(template.join("scratch"))
            .arg(template.join("base"))
            .arg(&repo.tmp)
            .status()
            .unwrap();
        assert!(status.success(), "copying the template repository failed");
        let origin = repo.origin.to_str().unwrap().to_owned();
        for clone in [&repo.scratch, &repo.base] {
            repo.git(clone, &["config", "remote.origin.url", &origin]);
        }
        repo
    }

    /// The base's common dir (`base/.git`).
    pub fn common_dir(&self) -> PathBuf {
        self.base.join(".git")
    }

    /// Wait until every tree `remove` moved aside is deleted (its record gone): the deleter is a
    /// detached process that may still run when `remove` has returned, and a report made
    /// meanwhile (gc's `moved_aside`) lists its tree as being deleted.
    #[track_caller]
    pub fn wait_for_deleters(&self) {
        let aside = self.common_dir().join("kardwt/aside");
        let pending = || {
            std::fs::read_dir(&aside).map_or(0, |d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
        };
        assert!(
            wait_until(COMMAND_TIMEOUT, || pending() == 0),
            "{} trees moved aside are still not deleted after {COMMAND_TIMEOUT:?}",
            pending()
        );
    }

    /// The default worktree root: `<parent of base>/base.worktrees`.
    pub fn root(&self) -> PathBuf {
        self.tmp.join("base.worktrees")
    }

    /// A worktree of the base nested in `outer` at `build/inner` (branch `inner`), holding an
    /// uncommitted `notes.txt`; the caller makes `build/` ignored.
    pub fn nested_worktree(&self, outer: &Path) -> PathBuf {
        let inner = outer.join("build/inner");
        self.git(
            &self.base,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                "inner",
                inner.to_str().unwrap(),
            ],
        );
        std::fs::write(inner.join("notes.txt"), "uncommitted\n").unwrap();
        inner
    }

    /// `<root>/card-<id>` under the default root.
    pub fn card_path(&self, card: &str) -> PathBuf {
        self.root().join(format!("card-{card}"))
    }

    /// A command with the hermetic environment, run in `dir`.
    pub fn command(&self, program: impl AsRef<OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir);
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin_dir.to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env("LANG", "C");
        cmd
    }

    /// Start `program args…` in `dir` with the hermetic environment.
    pub fn spawn(&self, program: impl AsRef<OsStr>, dir: &Path, args: &[&str]) -> Running {
        self.spawn_with_env(program, dir, args, &[])
    }

    /// Like [`TestRepo::spawn`], with extra variables set on top of the hermetic environment
    /// (to show that a caller's variables do not leak into kardwt's own git calls).
    pub fn spawn_with_env(
        &self,
        program: impl AsRef<OsStr>,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &OsStr)],
    ) -> Running {
        let program = program.as_ref().to_owned();
        let mut cmd = self.command(&program, dir);
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.start(cmd, &program, dir, args)
    }

    /// Start a command made by [`TestRepo::command`] (its program is `args[0]`'s caller's
    /// business) with `args`, pipes drained.
    pub(crate) fn start_command(&self, cmd: Command, dir: &Path, args: &[&str]) -> Running {
        let program = cmd.get_program().to_owned();
        self.start(cmd, &program, dir, args)
    }

    /// Start `cmd` (built by [`TestRepo::command`] for `program` in `dir`) with `args`.
    fn start(&self, mut cmd: Command, program: &OsStr, dir: &Path, args: &[&str]) -> Running {
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program:?}: {e}"));
        let out = drain(child.stdout.take().unwrap());
        let err = drain(child.stderr.take().unwrap());
        let mut all = vec![program.to_string_lossy().into_owned()];
        all.extend(args.iter().map(|a| a.to_string()));
        all.push(format!("(in {})", dir.display()));
        Running {
            child,
            out,
            err,
            args: all,
        }
    }

    /// Run git; assert success; return stdout.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.spawn("git", dir, args).wait(COMMAND_TIMEOUT);
        assert_eq!(out.code, 0, "git failed:\n{out}");
        out.stdout
    }

    /// Run git without asserting.
    pub fn git_output(&self, dir: &Path, args: &[&str]) -> Output {
        self.spawn("git", dir, args).wait(COMMAND_TIMEOUT)
    }

    /// `git kardwt args…` in `dir` (through git, as a user would). Does not assert.
    pub fn kardwt(&self, dir: &Path, args: &[&str]) -> Output {
        let mut all = vec!["kardwt"];
        all.extend_from_slice(args);
        self.spawn("git", dir, &all).wait(COMMAND_TIMEOUT)
    }

    /// The `git-kardwt` binary (by name, found on `PATH`) in `dir` with `stdin` piped in, as a
    /// hook or a runner calls it. Does not assert.
    pub fn kardwt_with_stdin(&self, dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
        use std::io::Write as _;
        let mut cmd = self.command("git-kardwt", dir);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let input = stdin.to_vec();
        // The command may stop reading early: a closed pipe is expected then.
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let mut all = vec!["git-kardwt".to_owned()];
        all.extend(args.iter().map(|a| a.to_string()));
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            args: all,
        }
    }

    /// `git kardwt args…` in `dir`, asserting exit 0; returns stdout.
    #[track_caller]
    pub fn kardwt_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.kardwt(dir, args);
        assert_eq!(out.code, 0, "git kardwt failed:\n{out}");
        out.stdout
    }

    /// Start the `git-kardwt` binary itself (not through git), so its pid is the child's.
    pub fn spawn_kardwt_bin(&self, dir: &Path, args: &[&str]) -> Running {
        self.spawn(BIN, dir, args)
    }

    /// [`TestRepo::spawn_kardwt_bin`] as the leader of a process group of its own (its pid is
    /// the group's id), so a test can signal the group as a terminal's Ctrl-C does.
    pub fn spawn_kardwt_leader(&self, dir: &Path, args: &[&str]) -> Running {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command(BIN, dir);
        cmd.process_group(0);
        self.start(cmd, OsStr::new(BIN), dir, args)
    }

    /// Push `branch` from `wt` to origin, merge it into origin's main through the scratch clone,
    /// and fetch in the base so `refs/remotes/origin/main` contains it.
    pub fn push_and_merge(&self, wt: &Path, branch: &str) {
        self.git(wt, &["push", "--quiet", "origin", branch]);
        self.git(&self.scratch, &["fetch", "--quiet", "origin"]);
        self.git(
            &self.scratch,
            &[
                "merge",
                "--quiet",
                "--no-ff",
                "-m",
                &format!("merge {branch}"),
                &format!("origin/{branch}"),
            ],
        );
        self.git(&self.scratch, &["push", "--quiet", "origin", "main"]);
        self.git(&self.base, &["fetch", "--quiet", "origin"]);
    }

    /// Move origin's main one commit ahead (through the scratch clone); returns the new oid.
    pub fn commit_on_origin(&self, message: &str) -> String {
        let n = self.commits.get() + 1;
        self.commits.set(n);
        std::fs::write(
            self.scratch.join(format!("change-{n}.txt")),
            format!("{message}\n"),
        )
        .unwrap();
        self.git(&self.scratch, &["add", "-A"]);
        self.git(&self.scratch, &["commit", "--quiet", "-m", message]);
        self.git(&self.scratch, &["push", "--quiet", "origin", "main"]);
        self.origin_main()
    }

    /// The oid of origin's main as origin itself has it.
    pub fn origin_main(&self) -> String {
        self.git(&self.origin, &["rev-parse", "refs/heads/main"])
            .trim()
            .to_owned()
    }

    /// Write `base/kardbrd.yml` (kept out of the base's status by info/exclude).
    pub fn write_rules(&self, yaml: &str) {
        std::fs::write(self.rules_path(), yaml).unwrap();
    }

    pub fn rules_path(&self) -> PathBuf {
        self.base.join("kardbrd.yml")
    }

    /// `<tmp>/helpers`, the stable root of helper scripts (created on demand).
    pub fn stable_root(&self) -> PathBuf {
        let dir = self.tmp.join("helpers");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Write an executable `#!/bin/sh` script `<stable root>/<name>`; returns its path.
    pub fn write_helper(&self, name: &str, body: &str) -> PathBuf {
        let path = self.stable_root().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The log the standard prepare script appends `<card> <reason> <phase>` lines to.
    pub fn prepare_log(&self) -> PathBuf {
        self.tmp.join("prepare.log")
    }

    /// Lines of the prepare log (empty when prepare never ran).
    pub fn prepare_runs(&self) -> Vec<String> {
        std::fs::read_to_string(self.prepare_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The standard prepare script: logs one line, then runs `extra` (shell).
    pub fn write_prepare(&self, extra: &str) -> PathBuf {
        let log = sh_quote(&self.prepare_log());
        self.write_helper(
            "prepare",
            &format!("echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_PHASE\" >> {log}\n{extra}"),
        )
    }

    /// The base gets an ignored `.env` (`TOKEN=base`), the rules share it (`sharing.env: link`)
    /// and run the standard prepare script; returns that script.
    pub fn share_env_with_prepare(&self) -> PathBuf {
        std::fs::write(self.base.join(".env"), "TOKEN=base\n").unwrap();
        let script = self.write_prepare("");
        self.write_rules(&self.rules_sharing(&script));
        script
    }

    /// The standard prepare script, failing (`message` on stderr, exit `code`) while the flag
    /// file `<tmp>/<flag>` exists; creates the flag. Returns (flag, script).
    pub fn write_failing_prepare(
        &self,
        flag: &str,
        message: &str,
        code: i32,
    ) -> (PathBuf, PathBuf) {
        let flag = self.tmp.join(flag);
        std::fs::write(&flag, "").unwrap();
        let script = self.write_prepare(&format!(
            "if [ -e {} ]; then echo '{message}' >&2; exit {code}; fi",
            sh_quote(&flag)
        ));
        (flag, script)
    }

    /// Rules with the standard prepare script and the given `on_reuse`.
    pub fn rules_with_prepare(&self, on_reuse: bool) -> String {
        let script = self.write_prepare("");
        self.rules_for(&script, on_reuse)
    }

    /// Rules running `script` as prepare, with the given `on_reuse`.
    pub fn rules_for(&self, script: &Path, on_reuse: bool) -> String {
        format!(
            "worktree:\n  helpers:\n    stable_root: {}\n  prepare:\n    argv: [{}]\n    on_reuse: {on_reuse}\n",
            yaml_str(&self.stable_root()),
            yaml_str(script),
        )
    }

    /// `git kardwt args…` in the base (capped at 60 s), asserting exit `code` and that it took
    /// less than `limit`; returns the output and when it started.
    #[track_caller]
    pub fn kardwt_within(&self, args: &[&str], code: i32, limit: Duration) -> (Output, Instant) {
        let mut all = vec!["kardwt"];
        all.extend_from_slice(args);
        let t = Instant::now();
        let out = self
            .spawn("git", &self.base, &all)
            .wait(Duration::from_secs(60));
        out.expect_code(code);
        assert!(t.elapsed() < limit, "took {:?}:\n{out}", t.elapsed());
        (out, t)
    }

    /// Add card `card` in the base with the standard prepare rules; returns its path.
    #[track_caller]
    pub fn add_card(&self, card: &str) -> PathBuf {
        let out = self.kardwt_ok(&self.base, &["add", card]);
        let path = PathBuf::from(out.strip_suffix('\n').unwrap_or(&out));
        assert_eq!(path, self.card_path(card));
        path
    }

    /// The admin dir a linked worktree's `.git` file names.
    #[track_caller]
    pub fn admin_dir(&self, worktree: &Path) -> PathBuf {
        let text = std::fs::read_to_string(worktree.join(".git")).unwrap();
        let dir = text
            .trim_end()
            .strip_prefix("gitdir: ")
            .unwrap_or_else(|| panic!("not a gitdir file: {text:?}"));
        PathBuf::from(dir).canonicalize().unwrap()
    }

    /// The path of a worktree's record.
    pub fn record_path(&self, worktree: &Path) -> PathBuf {
        self.admin_dir(worktree).join("kardwt.toml")
    }

    /// The worktree's record, parsed.
    #[track_caller]
    pub fn record(&self, worktree: &Path) -> toml::Table {
        let path = self.record_path(worktree);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        text.parse::<toml::Table>()
            .unwrap_or_else(|e| panic!("record {} is not TOML ({e}):\n{text}", path.display()))
    }

    /// Rewrite one string key of a worktree's record.
    pub fn edit_record(&self, worktree: &Path, key: &str, value: &str) {
        let mut rec = self.record(worktree);
        assert!(rec.contains_key(key), "record has no {key}: {rec:?}");
        rec.insert(key.to_owned(), toml::Value::String(value.to_owned()));
        std::fs::write(self.record_path(worktree), toml::to_string(&rec).unwrap()).unwrap();
    }

    /// Branch names under `refs/heads/card/`.
    pub fn card_branches(&self) -> Vec<String> {
        self.git(
            &self.base,
            &["for-each-ref", "--format=%(refname)", "refs/heads/card/"],
        )
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// `git worktree list --porcelain` parsed into (path, branch ref or "", prunable) records.
    pub fn worktrees(&self) -> Vec<(PathBuf, String, bool)> {
        let text = self.git(&self.base, &["worktree", "list", "--porcelain"]);
        let mut out = Vec::new();
        for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut path = PathBuf::new();
            let mut branch = String::new();
            let mut prunable = false;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = PathBuf::from(p);
                } else if let Some(b) = line.strip_prefix("branch ") {
                    branch = b.to_owned();
                } else if line.starts_with("prunable") {
                    prunable = true;
                }
            }
            out.push((path, branch, prunable));
        }
        out
    }

    /// The base's files (without `.git/`) plus its HEAD, index, status and branch.
    pub fn snapshot_base(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut snap = snapshot_excluding(&self.base, Some(Path::new(".git")));
        for name in ["HEAD", "index"] {
            let p = self.common_dir().join(name);
            snap.insert(PathBuf::from(".git").join(name), std::fs::read(&p).unwrap());
        }
        let status = self.git(
            &self.base,
            &["--no-optional-locks", "status", "--porcelain", "--ignored"],
        );
        snap.insert("<status>".into(), status.into_bytes());
        let head = self.git(&self.base, &["rev-parse", "HEAD"]);
        snap.insert("<rev-parse HEAD>".into(), head.into_bytes());
        let sym = self.git(&self.base, &["symbolic-ref", "HEAD"]);
        snap.insert("<symbolic-ref HEAD>".into(), sym.into_bytes());
        snap
    }
}

// Helpers for the seeding, hook installation, sandbox and doctor suites (post-checkout trigger).
impl TestRepo {
    /// `<tmp>/<name>`: what `../<name>` means from the base.
    pub fn sibling(&self, name: &str) -> PathBuf {
        self.tmp.join(name)
    }

    /// `git kardwt install-hooks` in the base, asserting success; returns stdout.
    #[track_caller]
    pub fn install_hooks(&self) -> String {
        self.kardwt_ok(&self.base, &["install-hooks"])
    }

    /// Plain `git worktree add args…` in the base (no kardwt command involved). Does not
    /// assert.
    pub fn worktree_add(&self, args: &[&str]) -> Output {
        let mut all = vec!["worktree", "add"];
        all.extend_from_slice(args);
        self.git_output(&self.base, &all)
    }

    /// Commit `files` (path, content; force-added, so ignored names are committed too) on
    /// origin's main through the scratch clone, then fast-forward the base to it.
    pub fn commit_files(&self, files: &[(&str, &str)], message: &str) -> String {
        for (rel, content) in files {
            let p = self.scratch.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
            self.git(&self.scratch, &["add", "-f", "--", rel]);
        }
        self.git(&self.scratch, &["commit", "--quiet", "-m", message]);
        self.git(&self.scratch, &["push", "--quiet", "origin", "main"]);
        self.git(&self.base, &["pull", "--quiet", "--ff-only"]);
        self.origin_main()
    }

    /// `git kardwt list --json`, parsed (asserting exit 0).
    #[track_caller]
    pub fn list_json(&self) -> Vec<serde_json::Value> {
        let out = self.kardwt(&self.base, &["list", "--json"]);
        out.expect_code(0);
        out.json()
            .as_array()
            .unwrap_or_else(|| panic!("list --json is not an array:\n{out}"))
            .clone()
    }

    /// The `list --json` row of the worktree at `path`, if listed.
    pub fn list_row(&self, path: &Path) -> Option<serde_json::Value> {
        self.list_json()
            .into_iter()
            .find(|e| e["path"] == path.to_str().unwrap())
    }

    /// `git kardwt log [card] --json`, parsed (asserting exit 0).
    #[track_caller]
    pub fn events(&self, card: Option<&str>) -> Vec<serde_json::Value> {
        let mut args = vec!["log"];
        args.extend(card);
        args.push("--json");
        let out = self.kardwt(&self.base, &args);
        out.expect_code(0);
        out.json()
            .as_array()
            .unwrap_or_else(|| panic!("log --json is not an array:\n{out}"))
            .clone()
    }

    /// `git worktree add --quiet <path> -b <branch>` in the base with every hook bypassed, so
    /// nothing seeds the tree (asserting success).
    #[track_caller]
    pub fn add_unhooked_worktree(&self, path: &str, branch: &str) {
        self.worktree_add_unhooked(&[path, "-b", branch]);
    }

    /// `git worktree add --quiet args…` in the base with every hook bypassed (as a tool that
    /// never meets kardwt would); asserts success.
    #[track_caller]
    pub fn worktree_add_unhooked(&self, args: &[&str]) {
        let mut all = vec![
            "-c",
            "core.hooksPath=/nonexistent",
            "worktree",
            "add",
            "--quiet",
        ];
        all.extend_from_slice(args);
        self.git(&self.base, &all);
    }

    /// A worktree `<tmp>/gone` on `feature/gone` whose directory is then deleted (prunable);
    /// returns its path.
    #[track_caller]
    pub fn add_gone_worktree(&self) -> PathBuf {
        let gone = self.tmp.join("gone");
        self.git(
            &self.base,
            &[
                "worktree",
                "add",
                "--quiet",
                gone.to_str().unwrap(),
                "-b",
                "feature/gone",
            ],
        );
        std::fs::remove_dir_all(&gone).unwrap();
        gone
    }

    /// Assert a refused command created nothing: no worktree root, no card branch, no worktree
    /// besides the base, and the base as `base_before` (`what` names the case).
    #[track_caller]
    pub fn assert_nothing_created(&self, base_before: &BTreeMap<PathBuf, Vec<u8>>, what: &str) {
        assert!(!self.root().exists(), "{what}: the root was created");
        assert!(
            self.card_branches().is_empty(),
            "{what}: a card branch was created"
        );
        assert_eq!(self.worktrees().len(), 1, "{what}: a worktree was created");
        assert_eq!(
            &self.snapshot_base(),
            base_before,
            "{what}: the base changed"
        );
    }

    /// Is `path` registered in `git worktree list`?
    pub fn is_registered(&self, path: &Path) -> bool {
        self.worktrees().iter().any(|(p, _, _)| p == path)
    }

    /// Does the branch `refs/heads/<name>` exist?
    pub fn branch_exists(&self, name: &str) -> bool {
        self.git_output(
            &self.base,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{name}"),
            ],
        )
        .code
            == 0
    }

    /// Every ref of the base with its oid (`git for-each-ref`), for before/after comparisons.
    pub fn all_refs(&self) -> String {
        self.git(
            &self.base,
            &["for-each-ref", "--format=%(objectname) %(refname)"],
        )
    }

    /// Rules running `script` as prepare with `sharing.env: link` (skills: the default).
    pub fn rules_sharing(&self, script: &Path) -> String {
        format!(
            "{}  sharing:\n    env: link\n",
            self.rules_for(script, false)
        )
    }
}
