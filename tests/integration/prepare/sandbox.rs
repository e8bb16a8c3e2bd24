//! The hook sandbox on both paths (`git kardwt add` and a plain
//! `git worktree add` through the installed post-checkout hook): `argv[0]` refusals before
//! anything runs or is created, the minimal environment, and the whole process group killed at
//! the cap or the action deadline.
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::procs::{assert_nothing_running_under, Reaper};
use crate::support::{sh_quote, yaml_str, TestRepo, COMMAND_TIMEOUT};

/// An executable script at `path` that touches `marker` when it runs.
fn marker_script(path: &Path, marker: &Path, mode: u32) {
    std::fs::write(path, format!("#!/bin/sh\n: > {}\n", sh_quote(marker))).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Rules with the given (raw YAML) stable_root and argv[0].
fn rules(stable_root: &str, argv0: &str) -> String {
    format!(
        "worktree:\n  helpers:\n    stable_root: {stable_root}\n  prepare:\n    argv: [{argv0}]\n"
    )
}

#[test]
fn argv0_that_escapes_or_is_not_an_executable_file_is_refused_before_it_runs() {
    let repo = TestRepo::new();
    let root = repo.stable_root();
    let marker = repo.tmp.join("ran");
    let outside = repo.tmp.join("outside.sh");
    marker_script(&outside, &marker, 0o755);
    // Inside the root: executable, but only reachable by the relative path.
    marker_script(&root.join("inside"), &marker, 0o755);
    std::os::unix::fs::symlink(&outside, root.join("link-out")).unwrap();
    std::fs::create_dir(root.join("a-dir")).unwrap();
    marker_script(&root.join("not-executable"), &marker, 0o644);
    let root_yaml = yaml_str(&root);
    let cases: Vec<(&str, String)> = vec![
        (
            "a symlink leaving the root",
            rules(&root_yaml, &yaml_str(&root.join("link-out"))),
        ),
        (
            "a .. path",
            rules(&root_yaml, &yaml_str(&root.join("..").join("outside.sh"))),
        ),
        // From the base (add's cwd) `../helpers/inside` names the executable in the root.
        (
            "a relative path",
            rules(&root_yaml, "\"../helpers/inside\""),
        ),
        (
            "a directory",
            rules(&root_yaml, &yaml_str(&root.join("a-dir"))),
        ),
        (
            "a non-executable file",
            rules(&root_yaml, &yaml_str(&root.join("not-executable"))),
        ),
        (
            "a relative stable_root",
            rules("\"../helpers\"", &yaml_str(&root.join("inside"))),
        ),
    ];
    repo.install_hooks();
    for (n, (what, yaml)) in cases.iter().enumerate() {
        repo.write_rules(yaml);
        let card = format!("{}", 100 + n);
        // Through git kardwt add: exit 2, nothing created.
        let out = repo.kardwt(&repo.base, &["add", &card]);
        assert_eq!(out.code, 2, "{what}: add must exit 2:\n{out}");
        assert_eq!(out.stdout, "", "{what}:\n{out}");
        assert!(!marker.exists(), "{what}: the refused hook ran:\n{out}");
        assert!(
            !repo.card_path(&card).exists(),
            "{what}: add created the tree"
        );
        assert!(
            !repo.branch_exists(&format!("card/{card}")),
            "{what}: add created the branch:\n{out}"
        );
        assert!(
            repo.worktrees().len() == 1,
            "{what}: {:?}",
            repo.worktrees()
        );
        // Through a plain git worktree add: it fails and leaves no tree.
        let dir = format!("../plain-{card}");
        let out = repo.worktree_add(&[&dir, "-b", &format!("feature/{card}")]);
        assert_ne!(out.code, 0, "{what}: git worktree add must fail:\n{out}");
        assert!(!marker.exists(), "{what}: the refused hook ran:\n{out}");
        assert!(
            !repo.sibling(&format!("plain-{card}")).exists(),
            "{what}: the unprepared tree was handed over:\n{out}"
        );
        assert_eq!(repo.worktrees().len(), 1, "{what}: {:?}", repo.worktrees());
    }
    assert!(repo.prepare_runs().is_empty());
}

/// `env` output as a map (values cut at the first `=`).
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn check_env(repo: &TestRepo, env: &BTreeMap<String, String>, card: &str, wt: &Path) {
    let allowed_extra = ["PWD", "SHLVL", "_", "OLDPWD"];
    let fixed = [
        "KARDWT_CARD",
        "KARDWT_BOARD",
        "KARDWT_WORKTREE",
        "KARDWT_BASE",
        "KARDWT_COMMON_DIR",
        "KARDWT_BRANCH",
        "KARDWT_BASE_OID",
        "KARDWT_REASON",
        "KARDWT_PHASE",
    ];
    for k in env.keys() {
        assert!(!k.starts_with("GIT_"), "{k} leaked into the hook: {env:#?}");
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "LC_ALL",
                "MY_PASSED",
                "KARDWT_HELD_LOCKS"
            ]
            .contains(&k.as_str())
                || fixed.contains(&k.as_str())
                || allowed_extra.contains(&k.as_str()),
            "{k} is not in the hook's allowed environment: {env:#?}"
        );
    }
    assert!(!env.contains_key("KARDBRD_TOKEN"), "{env:#?}");
    assert!(!env.contains_key("XDG_CONFIG_HOME"), "{env:#?}");
    assert_eq!(env["PATH"], "/usr/local/bin:/usr/bin:/bin");
    assert_eq!(env["HOME"], repo.home.to_str().unwrap());
    assert_eq!(env["LANG"], "C");
    assert_eq!(env["LC_ALL"], "C");
    assert_eq!(
        env.get("MY_PASSED").map(String::as_str),
        Some("handed over"),
        "a passthrough name is missing: {env:#?}"
    );
    for k in fixed {
        assert!(env.contains_key(k), "{k} missing: {env:#?}");
    }
    assert_eq!(env["KARDWT_CARD"], card);
    assert_eq!(env["KARDWT_WORKTREE"], wt.to_str().unwrap());
    assert_eq!(env["KARDWT_BASE"], repo.base.to_str().unwrap());
    assert_eq!(
        env["KARDWT_COMMON_DIR"],
        repo.common_dir().to_str().unwrap()
    );
    assert!(
        env["KARDWT_BRANCH"].ends_with(&format!("card/{card}")),
        "{env:#?}"
    );
    assert_eq!(env["KARDWT_BASE_OID"], repo.origin_main(), "{env:#?}");
    assert_eq!(env["KARDWT_REASON"], "create");
    assert_eq!(env["KARDWT_PHASE"], "prepare");
}

#[test]
fn the_hook_environment_holds_only_the_allowed_names_on_both_paths() {
    let repo = TestRepo::new();
    let dump = repo.tmp.join("env.txt");
    let script = repo.write_prepare(&format!("env > {}", sh_quote(&dump)));
    repo.write_rules(&format!(
        "{}  environment:\n    passthrough: [MY_PASSED]\n",
        repo.rules_for(&script, false)
    ));
    repo.install_hooks();
    let caller: Vec<(&str, &OsStr)> = vec![
        ("KARDBRD_TOKEN", OsStr::new("secret")),
        ("MY_PASSED", OsStr::new("handed over")),
        ("GIT_EDITOR", OsStr::new("true")),
        ("GIT_PAGER", OsStr::new("cat")),
        ("GIT_SSH_COMMAND", OsStr::new("ssh -i /secret/key")),
        ("GIT_ASKPASS", OsStr::new("/bin/false")),
        ("GIT_TRACE2_EVENT", OsStr::new("/dev/null")),
    ];

    // Through git kardwt add (with a board).
    let out = repo
        .spawn_with_env(
            "git",
            &repo.base,
            &["kardwt", "add", "5", "--board", "myboard"],
            &caller,
        )
        .wait(Duration::from_secs(120));
    out.expect_code(0);
    let env = parse_env(&std::fs::read_to_string(&dump).unwrap());
    check_env(&repo, &env, "5", &repo.card_path("5"));
    assert_eq!(env["KARDWT_BOARD"], "myboard");
    std::fs::remove_file(&dump).unwrap();

    // Through a plain git worktree add (git itself adds GIT_PREFIX and friends for hooks).
    let out = repo
        .spawn_with_env(
            "git",
            &repo.base,
            &["worktree", "add", "../card-6", "-b", "card/6"],
            &caller,
        )
        .wait(Duration::from_secs(120));
    out.expect_code(0);
    let env = parse_env(&std::fs::read_to_string(&dump).unwrap());
    check_env(&repo, &env, "6", &repo.sibling("card-6"));
}

/// A prepare that starts a background grandchild, then sleeps. Both sleep 300 s: one that
/// survived its kill is still running when the test looks, however loaded the machine.
fn prepare_with_grandchild(repo: &TestRepo) -> PathBuf {
    repo.write_prepare("( sleep 300 ) >/dev/null 2>&1 &\nsleep 300")
}

#[test]
fn a_prepare_past_its_cap_is_killed_with_its_grandchildren_on_both_paths() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let script = prepare_with_grandchild(&repo);
    repo.write_rules(&format!(
        "{}    timeout_seconds: 2\n",
        repo.rules_for(&script, false)
    ));
    repo.install_hooks();

    // A plain git worktree add. Without the cap it would wait for the 300 s prepare, past the
    // harness's 120 s bound, which fails the test.
    let out = repo
        .spawn(
            "git",
            &repo.base,
            &["worktree", "add", "../z", "-b", "card/9"],
        )
        .wait(COMMAND_TIMEOUT);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("retry"), "{out}");
    let z = repo.sibling("z");
    assert!(!z.exists(), "the tree is still there:\n{out}");
    assert!(!repo.is_registered(&z));
    assert!(repo.branch_exists("card/9"));
    assert_nothing_running_under(&repo.tmp, "the killed prepare hook of git worktree add");

    // git kardwt add: exit 4.
    let out = repo.kardwt(&repo.base, &["add", "10"]);
    out.expect_code(4);
    assert!(!repo.card_path("10").exists(), "{out}");
    assert!(!repo.is_registered(&repo.card_path("10")));
    assert_nothing_running_under(&repo.tmp, "the killed prepare hook of git kardwt add");
    assert_eq!(repo.prepare_runs().len(), 2, "{:?}", repo.prepare_runs());
}

#[test]
fn the_action_deadline_kills_the_grandchildren_too_and_exits_5() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let script = prepare_with_grandchild(&repo);
    repo.write_rules(&repo.rules_for(&script, false));
    let out = repo.kardwt(&repo.base, &["add", "11", "--timeout", "2"]);
    out.expect_code(5);
    assert!(!repo.card_path("11").exists(), "{out}");
    assert!(repo.branch_exists("card/11"));
    assert_nothing_running_under(&repo.tmp, "a prepare past the action deadline");
}

/// A prepare hook that exits 0 but leaves a background child (sleeping 300 s) in its process
/// group: the child is killed with the group, so nothing a hook starts outlives it unnoticed.
#[test]
fn a_successful_hook_leaves_nothing_running_behind() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let script = repo.write_prepare("( sleep 300 ) &\nexit 0");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.kardwt_ok(&repo.base, &["add", "1"]);
    assert_nothing_running_under(&repo.tmp, "the background child of a successful hook");
}
