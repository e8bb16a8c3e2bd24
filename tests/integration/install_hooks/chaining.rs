//! `install-hooks` / `uninstall-hooks`: where git really looks (`core.hooksPath`),
//! chaining the user's own hook (run first, its failure stops ours), idempotence, a byte for
//! byte restore, the shim's fast path, and the real hook managers (pre-commit, lefthook, husky).
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{sh_quote, Output, TestRepo};

const MARKER: &str = "git-kardwt post-checkout shim";

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Write the user's own post-checkout into `dir` (logs its arguments into `log`, exits
/// `code`); returns its path.
fn user_hook(dir: &Path, log: &Path, code: i32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let hook = dir.join("post-checkout");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n# the user's own hook\necho \"user $*\" >> {}\nexit {code}\n",
            sh_quote(log)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o750)).unwrap();
    hook
}

#[test]
fn install_writes_the_shim_idempotently_and_uninstall_removes_it() {
    let repo = TestRepo::new();
    let hook = repo.common_dir().join("hooks/post-checkout");
    let out = repo.install_hooks();
    assert!(out.contains(hook.to_str().unwrap()), "{out}");
    let shim = std::fs::read_to_string(&hook).unwrap();
    assert!(shim.contains(MARKER), "{shim}");
    // A shell script naming the installing binary; with --direct, git starts that binary
    // itself (no shell in between), and a run without it makes the shim a script again.
    let exe = std::fs::canonicalize(crate::support::BIN).unwrap();
    assert!(shim.starts_with("#!/bin/sh\n"), "{shim}");
    let named = shim
        .lines()
        .find_map(|l| l.strip_prefix("kardwt="))
        .unwrap_or_else(|| panic!("{shim}"));
    assert!(
        std::fs::canonicalize(named.trim_matches('\'')).is_ok_and(|c| c == exe),
        "{shim}"
    );
    let said = repo.kardwt_ok(&repo.base, &["install-hooks", "--direct"]);
    assert!(
        said.contains(&format!("updated {}", hook.display())),
        "{said}"
    );
    let direct = std::fs::read_to_string(&hook).unwrap();
    let first = direct.lines().next().unwrap();
    let interpreter = first
        .strip_prefix("#!")
        .and_then(|l| l.strip_suffix(" hook-shim"))
        .unwrap_or_else(|| panic!("{direct}"));
    assert!(
        std::fs::canonicalize(interpreter).is_ok_and(|c| c == exe),
        "{direct}"
    );
    assert_eq!(
        direct.lines().skip(1).collect::<Vec<_>>(),
        shim.lines().skip(1).collect::<Vec<_>>()
    );
    let said = repo.install_hooks();
    assert!(
        said.contains(&format!("updated {}", hook.display())),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), shim);
    assert_ne!(mode(&hook) & 0o111, 0, "the shim is not executable");
    let listing = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let before = listing(hook.parent().unwrap());
    repo.install_hooks();
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), shim);
    assert_eq!(
        listing(hook.parent().unwrap()),
        before,
        "a second install added files"
    );

    repo.kardwt_ok(&repo.base, &["uninstall-hooks"]);
    assert!(!hook.exists(), "uninstall left the shim");
    // And a second uninstall is harmless.
    repo.kardwt_ok(&repo.base, &["uninstall-hooks"]);
}

/// The shim git starts through the binary itself: an ordinary checkout starts kardwt (no
/// shell in between), which leaves before it opens anything of the repository.
#[test]
fn the_direct_shim_leaves_ordinary_checkouts_having_opened_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.kardwt_ok(&repo.base, &["install-hooks", "--direct"]);
    let log = repo.tmp.join("opens.log");
    let out = repo
        .command(crate::support::strace::strace(), &repo.base)
        .args(["-f", "-qq", "-e", "trace=execve,openat", "-o"])
        .arg(&log)
        .args(["git", "switch", "--quiet", "-c", "topic"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    // The process git started for the hook (the kernel ran kardwt as its interpreter).
    let pid = text
        .lines()
        .find(|l| l.contains("execve(") && l.contains("hooks/post-checkout\""))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("git started no post-checkout hook:\n{text}"));
    let base = repo.base.to_string_lossy().into_owned();
    let opened: Vec<&str> = text
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(pid) && l.contains("openat("))
        .filter(|l| l.contains(&base) || l.contains(".git/") || l.contains("kardbrd"))
        .collect();
    assert!(opened.is_empty(), "{opened:#?}");
    assert!(
        !text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(pid)
                && l.contains("execve(")
                && !l.contains("hooks/post-checkout")),
        "the hook started another program:\n{text}"
    );
    assert!(repo.events(None).is_empty(), "{:?}", repo.events(None));
    assert!(repo.prepare_runs().is_empty());
}

/// The shim as written where the binary's path cannot be a first line (it holds a space):
/// the shell, which leaves every ordinary checkout without starting a process.
#[test]
fn the_shell_shim_leaves_ordinary_checkouts_without_running_kardwt() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    // A spy `git-kardwt` first on PATH records every start, then runs the real binary.
    let spy_dir = repo.tmp.join("spy");
    std::fs::create_dir(&spy_dir).unwrap();
    let spy_log = repo.tmp.join("spy.log");
    let spy = spy_dir.join("git-kardwt");
    std::fs::write(
        &spy,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            sh_quote(&spy_log),
            sh_quote(Path::new(crate::support::BIN))
        ),
    )
    .unwrap();
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The shim names the binary that installed it: name the spy instead.
    let hook = repo.common_dir().join("hooks/post-checkout");
    let text = std::fs::read_to_string(&hook).unwrap();
    let named = text.lines().find(|l| l.starts_with("kardwt=")).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(
        &hook,
        text.replacen(named, &format!("kardwt={}", sh_quote(&spy)), 1)
            .replacen(first, "#!/bin/sh", 1),
    )
    .unwrap();
    let path = path_with(&repo, &spy_dir);
    for args in [
        &["git", "switch", "--quiet", "-c", "topic"][..],
        &["git", "switch", "--quiet", "main"],
        &["git", "checkout", "--quiet", "HEAD", "--", "README.md"],
    ] {
        run_with_path(&repo, &repo.base, &path, args).expect_code(0);
    }
    assert!(
        !spy_log.exists(),
        "the shim started kardwt for an ordinary checkout: {:?}",
        std::fs::read_to_string(&spy_log)
    );
    assert!(repo.prepare_runs().is_empty());
    // The control: a worktree add does reach kardwt through the same PATH.
    run_with_path(
        &repo,
        &repo.base,
        &path,
        &["git", "worktree", "add", "--quiet", "../s", "-b", "card/1"],
    )
    .expect_code(0);
    let log = std::fs::read_to_string(&spy_log).unwrap_or_default();
    assert!(log.starts_with("hook post-checkout "), "{log:?}");
    assert_eq!(repo.prepare_runs(), vec!["1 create prepare"]);
}

#[test]
fn core_hooks_path_with_the_users_own_hook_is_chained_and_restored_byte_for_byte() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    let dir = repo.tmp.join("my hooks");
    let log = repo.tmp.join("user-hook.log");
    let hook = user_hook(&dir, &log, 0);
    let original = std::fs::read(&hook).unwrap();
    repo.git(
        &repo.base,
        &["config", "core.hooksPath", dir.to_str().unwrap()],
    );

    let out = repo.install_hooks();
    assert!(out.contains(dir.to_str().unwrap()), "{out}");
    let chained = dir.join("post-checkout.kardwt-chained");
    assert_eq!(std::fs::read(&chained).unwrap(), original);
    assert!(std::fs::read_to_string(&hook).unwrap().contains(MARKER));
    assert!(
        !repo.common_dir().join("hooks/post-checkout").exists(),
        "installed where git does not look"
    );
    repo.install_hooks(); // idempotent: the chained original stays as it was.
    assert_eq!(std::fs::read(&chained).unwrap(), original);
    assert!(!dir
        .join("post-checkout.kardwt-chained.kardwt-chained")
        .exists());

    let out = repo.worktree_add(&["../w", "-b", "card/12"]);
    out.expect_code(0);
    let wt = repo.sibling("w");
    let lines = std::fs::read_to_string(&log).unwrap();
    assert!(
        lines.contains(&format!("user {} ", "0".repeat(40))),
        "the user's hook did not run: {lines:?}"
    );
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("hook"));
    assert_eq!(rec["card"].as_str(), Some("12"));
    assert!(wt.join(".env").symlink_metadata().unwrap().is_symlink());
    assert_eq!(repo.prepare_runs(), vec!["12 create prepare"]);

    // An ordinary checkout still reaches the user's hook.
    repo.git(&repo.base, &["switch", "--quiet", "-c", "topic"]);
    let n = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(n, 2, "the user's hook missed an ordinary checkout");

    repo.kardwt_ok(&repo.base, &["uninstall-hooks"]);
    assert_eq!(
        std::fs::read(&hook).unwrap(),
        original,
        "not restored byte for byte"
    );
    assert_eq!(mode(&hook), 0o750, "the mode was not restored");
    assert!(!chained.exists());
    let out = repo.worktree_add(&["../w2", "-b", "card/13"]);
    out.expect_code(0);
    assert_eq!(
        repo.list_row(&repo.sibling("w2")).unwrap()["state"],
        "unseeded"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
}

#[test]
fn a_failing_chained_hook_stops_kardwt() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let log = repo.tmp.join("user-hook.log");
    user_hook(&repo.common_dir().join("hooks"), &log, 3);
    repo.install_hooks();
    let out = repo.worktree_add(&["../f", "-b", "card/14"]);
    assert_eq!(
        out.code, 3,
        "the user's hook's status must be git's:\n{out}"
    );
    assert!(std::fs::read_to_string(&log).unwrap().contains("user "));
    assert!(
        repo.prepare_runs().is_empty(),
        "kardwt ran after a failing chained hook"
    );
}

#[test]
fn a_relative_core_hooks_path_resolves_against_the_base_and_doctor_warns() {
    let repo = TestRepo::new();
    repo.git(&repo.base, &["config", "core.hooksPath", ".githooks"]);
    repo.install_hooks();
    let hook = repo.base.join(".githooks/post-checkout");
    assert!(std::fs::read_to_string(&hook).unwrap().contains(MARKER));
    let out = repo.kardwt(&repo.base, &["doctor", "--json"]);
    out.expect_code(1);
    let v = out.json();
    let checks = v["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["ok"] == false && c["detail"].as_str().unwrap().contains("relative")),
        "doctor does not warn about a relative core.hooksPath:\n{out}"
    );
}

// ---- The real hook managers, installed by the tests themselves into a temp dir. ----
// They reach PyPI and npm, so the offline `make test` leaves them out (ignored); `make
// test-managers` runs them, and CI runs that as its own step.

/// Run `cmd`; `None` (after printing a notice) when it failed, e.g. without network.
/// Under CI (which reaches the package registries) a failed install fails the test; on a
/// machine without them the test is skipped with a notice.
fn try_install(what: &str, cmd: &mut Command) -> Option<()> {
    let why = match cmd.output() {
        Ok(o) if o.status.success() => return Some(()),
        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "installing {what} failed under CI: {why}"
    );
    eprintln!("SKIPPED: installing {what} failed (no registry?): {why}");
    None
}

/// PATH with `extra` in front of the harness's PATH (which starts with the binary's dir).
fn path_with(repo: &TestRepo, extra: &Path) -> OsString {
    let cmd = repo.command("true", &repo.base);
    let harness = cmd
        .get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v)
        .unwrap()
        .to_owned();
    let mut paths = vec![extra.to_path_buf()];
    paths.extend(std::env::split_paths(&harness));
    std::env::join_paths(paths).unwrap()
}

fn run_with_path(repo: &TestRepo, dir: &Path, path: &OsString, args: &[&str]) -> Output {
    repo.spawn_with_env(args[0], dir, &args[1..], &[("PATH", path.as_os_str())])
        .wait(std::time::Duration::from_secs(120))
}

#[test]
#[ignore = "installs pre-commit from PyPI: make test-managers"]
fn real_hook_managers_pre_commit_runs_kardwt_as_its_legacy_hook() {
    let repo = TestRepo::new();
    let venv = repo.tmp.join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(
        made.success(),
        "python3 -m venv failed (not a network problem)"
    );
    if try_install(
        "pre-commit from PyPI",
        Command::new(venv.join("bin/pip")).args(["install", "--quiet", "pre-commit"]),
    )
    .is_none()
    {
        return;
    }
    let marker = repo.tmp.join("pre-commit-hook-ran");
    repo.commit_files(
        &[(
            ".pre-commit-config.yaml",
            &format!(
                "repos:\n- repo: local\n  hooks:\n  - id: mine\n    name: mine\n    language: system\n    entry: sh -c 'echo \"$PWD\" >> \"{}\"'\n    always_run: true\n    pass_filenames: false\n    stages: [post-checkout]\n",
                marker.display()
            ),
        )],
        "pre-commit config",
    );
    repo.share_env_with_prepare();
    let path = path_with(&repo, &venv.join("bin"));
    let out = run_with_path(
        &repo,
        &repo.base,
        &path,
        &["pre-commit", "install", "--hook-type", "post-checkout"],
    );
    out.expect_code(0);
    let hook = repo.common_dir().join("hooks/post-checkout");
    let pre_commit_script = std::fs::read(&hook).unwrap();
    assert!(String::from_utf8_lossy(&pre_commit_script).contains("File generated by pre-commit"));

    let out = repo.install_hooks();
    let legacy = repo.common_dir().join("hooks/post-checkout.legacy");
    assert!(out.contains("post-checkout.legacy"), "{out}");
    assert!(std::fs::read_to_string(&legacy).unwrap().contains(MARKER));
    assert_eq!(
        std::fs::read(&hook).unwrap(),
        pre_commit_script,
        "pre-commit's own script was touched"
    );

    add_through_manager(
        &repo,
        &path,
        ("pc", "20"),
        &marker,
        "pre-commit's own hook stopped working",
    );

    repo.kardwt_ok(&repo.base, &["uninstall-hooks"]);
    assert!(!legacy.exists());
    assert_eq!(std::fs::read(&hook).unwrap(), pre_commit_script);
}

/// `git worktree add ../<name> -b card/<card>` run through a hook manager on `path`; asserts
/// kardwt seeded it from the hook (ready record, `.env` linked, one create prepare, verifies)
/// and that the user's own command logged the tree into `marker` (`why` when it did not).
#[track_caller]
fn add_through_manager(
    repo: &TestRepo,
    path: &OsString,
    (name, card): (&str, &str),
    marker: &Path,
    why: &str,
) {
    let out = run_with_path(
        repo,
        &repo.base,
        path,
        &[
            "git",
            "worktree",
            "add",
            &format!("../{name}"),
            "-b",
            &format!("card/{card}"),
        ],
    );
    out.expect_code(0);
    let wt = repo.sibling(name);
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("hook"), "{out}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{out}");
    assert!(wt.join(".env").symlink_metadata().unwrap().is_symlink());
    assert_eq!(repo.prepare_runs(), vec![format!("{card} create prepare")]);
    let ran = std::fs::read_to_string(marker).unwrap_or_default();
    assert!(ran.contains(wt.to_str().unwrap()), "{why}: {ran:?}\n{out}");
    repo.kardwt_ok(&repo.base, &["verify", card]);
}

/// Install lefthook and husky from npm into `<tmp>/npm`; `None` when that is impossible.
fn npm_install(repo: &TestRepo, packages: &[&str]) -> Option<PathBuf> {
    let prefix = repo.tmp.join("npm");
    std::fs::create_dir_all(&prefix).unwrap();
    let mut cmd = Command::new("npm");
    // Run from the temporary prefix, outside any repository, and without install scripts:
    // lefthook's postinstall would otherwise install itself into the repository npm was
    // started from (this crate's own checkout).
    cmd.current_dir(&prefix)
        .args([
            "install",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&prefix)
        .args(packages)
        .env("HOME", &repo.home);
    try_install(&format!("{packages:?} from npm"), &mut cmd)?;
    Some(prefix.join("node_modules"))
}

#[test]
#[ignore = "installs lefthook from npm: make test-managers"]
fn real_hook_managers_lefthook_gets_the_printed_lines_and_seeds() {
    let repo = TestRepo::new();
    let Some(modules) = npm_install(&repo, &["lefthook"]) else {
        return;
    };
    let path = path_with(&repo, &modules.join(".bin"));
    let marker = repo.tmp.join("lefthook-user-ran");
    let user_block = format!(
        "    mine:\n      run: echo \"$PWD\" >> {}\n",
        sh_quote(&marker)
    );
    repo.commit_files(
        &[(
            "lefthook.yml",
            &format!("post-checkout:\n  commands:\n{user_block}"),
        )],
        "lefthook config",
    );
    repo.share_env_with_prepare();
    run_with_path(&repo, &repo.base, &path, &["lefthook", "install"]).expect_code(0);
    let hook = repo.common_dir().join("hooks/post-checkout");
    let lefthook_script = std::fs::read(&hook).unwrap();

    let out = repo.install_hooks();
    let block = "post-checkout:\n  commands:\n    kardwt:\n      run: git kardwt hook post-checkout {1} {2} {3}\n";
    assert!(
        out.contains(block),
        "the lefthook lines are not printed:\n{out}"
    );
    assert_eq!(
        std::fs::read(&hook).unwrap(),
        lefthook_script,
        "lefthook's script was touched"
    );

    // Add the printed lines (the user's own command stays).
    repo.commit_files(
        &[("lefthook.yml", &format!("{block}{user_block}"))],
        "kardwt in lefthook",
    );
    add_through_manager(
        &repo,
        &path,
        ("lh", "21"),
        &marker,
        "lefthook's own command did not run",
    );
}

#[test]
#[ignore = "installs husky from npm: make test-managers"]
fn real_hook_managers_husky_gets_the_printed_line_and_seeds() {
    let repo = TestRepo::new();
    let Some(modules) = npm_install(&repo, &["husky"]) else {
        return;
    };
    let path = path_with(&repo, &modules.join(".bin"));
    repo.share_env_with_prepare();
    run_with_path(&repo, &repo.base, &path, &["husky"]).expect_code(0);
    assert_eq!(
        repo.git(&repo.base, &["config", "core.hooksPath"]).trim(),
        ".husky/_"
    );
    let husky_dir = repo.base.join(".husky/_");
    let husky_script = std::fs::read(husky_dir.join("post-checkout")).unwrap();

    let out = repo.install_hooks();
    let line =
        "case \"$1\" in *[!0]*) ;; *) git kardwt hook post-checkout \"$@\" || exit $? ;; esac";
    assert!(
        out.lines().any(|l| l == line),
        "the husky line is not printed:\n{out}"
    );
    assert_eq!(
        std::fs::read(husky_dir.join("post-checkout")).unwrap(),
        husky_script,
        "husky's own file was touched"
    );
    // Add the printed line to .husky/post-checkout, next to the user's own command.
    let marker = repo.tmp.join("husky-user-ran");
    std::fs::write(
        repo.base.join(".husky/post-checkout"),
        format!("echo \"$PWD\" >> {}\n{line}\n", sh_quote(&marker)),
    )
    .unwrap();
    add_through_manager(
        &repo,
        &path,
        ("hk", "22"),
        &marker,
        "the user's husky hook did not run",
    );
    // An ordinary checkout through husky does not reach kardwt.
    run_with_path(
        &repo,
        &repo.base,
        &path,
        &["git", "switch", "--quiet", "-c", "t"],
    )
    .expect_code(0);
    assert_eq!(repo.list_json().len(), 1);
}
