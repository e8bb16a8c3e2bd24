//! What a command refuses before it touches a worktree, whole: its arguments, its stdin, the
//! directory it runs in, the remote it would fetch from, the runner files and hooks it would
//! write beside another tool's.
use std::path::Path;

use crate::support::{pinned, pinned_case, TestRepo, BIN};

/// Arguments refused as they are: an unknown command, a missing option, a duration, a card id,
/// a `--base`; and the commands that find no worktree to work on.
#[test]
fn refused_arguments_are_pinned_whole() {
    let repo = TestRepo::new();
    let foreign = repo.sibling("foreign");
    std::fs::create_dir(&foreign).unwrap();
    let foreign = foreign.to_str().unwrap().to_owned();
    let base = repo.base.to_str().unwrap().to_owned();
    let cases: &[(&str, &[&str])] = &[
        ("unknown_command", &["lsit"]),
        ("missing_option", &["adopt", "5"]),
        ("help_of_no_command", &["help", "nosuch"]),
        ("select_without_existing_or_base", &["select", "5"]),
        ("gc_bad_older_than", &["gc", "--older-than", "soon"]),
        ("base_not_a_name", &["add", "4", "--base", "a..b"]),
        (
            "base_unknown_ref",
            &["add", "4", "--base", "refs/heads/nope"],
        ),
        ("env_unknown_card", &["env", "9"]),
        ("env_foreign", &["env", "--path", &foreign]),
        ("remove_unknown_card", &["remove", "9"]),
        ("remove_the_base", &["remove", "--path", &base]),
        ("release_the_base", &["release", "--path", &base]),
        ("verify_unknown_card", &["verify", "9"]),
        ("prepare_unknown_card", &["prepare", "9"]),
        ("adopt_undeclared", &["adopt", "5", "--path", &foreign]),
    ];
    let before = repo.snapshot_base();
    let mut all = String::new();
    for (name, args) in cases {
        let out = repo.kardwt(&repo.base, args);
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    let out = repo.kardwt(Path::new(&foreign), &["list"]);
    assert_ne!(out.code, 0, "{out}");
    all.push_str(&pinned_case("not_in_a_repository", &out));
    let out = repo.kardwt(&repo.origin, &["list"]);
    assert_ne!(out.code, 0, "{out}");
    all.push_str(&pinned_case("bare_repository", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_arguments", all));
    repo.assert_nothing_created(&before, "the refused commands");
}

/// An invalid card id is refused in kardwt's words and exit code by every command that takes
/// one (clap reads it, kardwt prints the refusal), before anything else is looked at: outside a
/// repository too.
#[test]
fn invalid_card_ids_are_refused_alike_by_every_command() {
    let repo = TestRepo::new();
    let foreign = repo.sibling("foreign");
    std::fs::create_dir(&foreign).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("add", &["add", "bad id"]),
        ("select", &["select", "../x", "--existing-or-base"]),
        ("log", &["log", "x.lock"]),
        ("adopt", &["adopt", "a b", "--path", "."]),
        ("verify", &["verify", "a..b"]),
        ("remove", &["remove", "x."]),
        ("env", &["env", ".x"]),
        ("prepare", &["prepare", "x/y"]),
    ];
    let before = repo.snapshot_base();
    let mut all = String::new();
    for (name, args) in cases {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(2);
        all.push_str(&pinned_case(name, &out));
    }
    let out = repo.kardwt(&foreign, &["select", "../x", "--existing-or-base"]);
    out.expect_code(2);
    all.push_str(&pinned_case("outside_a_repository", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("invalid_card_ids", all));
    repo.assert_nothing_created(&before, "the refused card ids");
}

/// What a hook or a runner hands kardwt on stdin, refused: a pre-push line that is not git's,
/// runner payloads that are not JSON or name no usable directory.
#[test]
fn refused_stdin_is_pinned_whole() {
    let repo = TestRepo::new();
    let missing = repo.sibling("missing");
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "pre_push_bad_line",
            vec!["hook", "pre-push", "origin", "url"],
            "not four fields\n".into(),
        ),
        (
            "claude_no_payload",
            vec!["runner", "claude", "worktree-create"],
            String::new(),
        ),
        (
            "claude_not_json",
            vec!["runner", "claude", "worktree-create"],
            "{not json".into(),
        ),
        (
            "claude_relative_cwd",
            vec!["runner", "claude", "worktree-create"],
            r#"{"name": "x", "cwd": "rel/dir"}"#.into(),
        ),
        (
            "claude_missing_cwd",
            vec!["runner", "claude", "worktree-create"],
            serde_json::json!({"name": "x", "cwd": missing}).to_string(),
        ),
        (
            "claude_remove_not_json",
            vec!["runner", "claude", "worktree-remove"],
            "[1, 2".into(),
        ),
    ];
    let before = repo.snapshot_base();
    let mut all = String::new();
    for (name, args, stdin) in &cases {
        let out = repo.kardwt_with_stdin(&repo.base, args, stdin.as_bytes());
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    // Codex's hook never fails its session: what it refuses is said on stderr, exit 0.
    let out = repo.kardwt_with_stdin(
        &repo.base,
        &["runner", "codex", "session-start"],
        b"{not json",
    );
    out.expect_code(0);
    all.push_str(&pinned_case("codex_not_json", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_stdin", all));
    repo.assert_nothing_created(&before, "the refused payloads");
}

/// The remote the base comes from, refused: no such remote, no such branch, unreachable, no
/// HEAD. Nothing is created.
#[test]
fn refused_remotes_are_pinned_whole() {
    let repo = TestRepo::new();
    repo.git(
        &repo.base,
        &["remote", "add", "broken", "/nonexistent/origin.git"],
    );
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "no_such_remote",
            "worktree:\n  base:\n    remote: nope\n",
            &["add", "4"],
        ),
        (
            "no_such_branch",
            "worktree:\n  base:\n    ref: refs/heads/nope\n",
            &["add", "4"],
        ),
        (
            "unreachable",
            "worktree:\n  base:\n    remote: broken\n",
            &["add", "4"],
        ),
    ];
    let before = repo.snapshot_base();
    let mut all = String::new();
    for (name, rules, args) in cases {
        repo.write_rules(rules);
        let out = repo.kardwt(&repo.base, args);
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    std::fs::remove_file(repo.rules_path()).unwrap();
    // An origin whose HEAD names a branch it does not have reports no HEAD branch.
    repo.git(&repo.origin, &["symbolic-ref", "HEAD", "refs/heads/gone"]);
    let out = repo.kardwt(&repo.base, &["add", "4"]);
    assert_ne!(out.code, 0, "{out}");
    all.push_str(&pinned_case("no_head", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_remotes", all));
    repo.assert_nothing_created(&before, "the refused remotes");
}

/// Files of another tool where `runner install` and `install-hooks` would write, refused with
/// nothing written: each planted file is left byte for byte.
#[test]
fn refused_installs_are_pinned_whole() {
    let repo = TestRepo::new();
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "claude_not_json",
            "claude",
            ".claude/settings.json",
            "{not json",
        ),
        (
            "claude_not_an_object",
            "claude",
            ".claude/settings.json",
            "[1]",
        ),
        (
            "claude_hooks_not_an_object",
            "claude",
            ".claude/settings.json",
            r#"{"hooks": 7}"#,
        ),
        (
            "conductor_taken",
            "conductor",
            "conductor.json",
            r#"{"scripts": {"setup": "make setup"}}"#,
        ),
        (
            "codex_script_not_ours",
            "codex",
            ".kardwt/codex/setup.sh",
            "#!/bin/sh\necho mine\n",
        ),
    ];
    let mut all = String::new();
    for (name, runner, rel, text) in cases {
        let file = repo.base.join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let out = repo.kardwt(&repo.base, &["runner", "install", runner]);
        assert_eq!(out.code, 3, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), *text, "{name}");
        std::fs::remove_dir_all(repo.base.join(rel.split('/').next().unwrap())).ok();
        std::fs::remove_file(&file).ok();
    }
    let real = repo.sibling("claude-dir");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, repo.base.join(".claude")).unwrap();
    let out = repo.kardwt(&repo.base, &["runner", "install", "claude"]);
    assert_eq!(out.code, 3, "{out}");
    all.push_str(&pinned_case("claude_dir_symlink", &out));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    std::fs::remove_file(repo.base.join(".claude")).unwrap();

    let hooks = repo.common_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for name in ["post-checkout", "post-checkout.kardwt-chained"] {
        std::fs::write(hooks.join(name), "#!/bin/sh\necho mine\n").unwrap();
    }
    let out = repo.kardwt(&repo.base, &["install-hooks"]);
    assert_ne!(out.code, 0, "{out}");
    all.push_str(&pinned_case("install_hooks_both_taken", &out));
    std::fs::remove_file(hooks.join("post-checkout.kardwt-chained")).unwrap();
    let pre_commit = "#!/bin/sh\n# File generated by pre-commit: https://pre-commit.com\n";
    std::fs::write(hooks.join("post-checkout"), pre_commit).unwrap();
    std::fs::write(hooks.join("post-checkout.legacy"), "#!/bin/sh\necho mine\n").unwrap();
    let out = repo.kardwt(&repo.base, &["install-hooks"]);
    assert_ne!(out.code, 0, "{out}");
    all.push_str(&pinned_case("install_hooks_pre_commit_legacy_taken", &out));
    assert_eq!(
        std::fs::read_to_string(hooks.join("post-checkout")).unwrap(),
        pre_commit
    );
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_installs", all));
}

/// What kardwt cannot do for lack of the system's help: start git, write its output, open its
/// lock file.
#[test]
fn refusals_of_the_system_are_pinned_whole() {
    let repo = TestRepo::new();
    let mut all = String::new();
    let out = repo
        .command(BIN, &repo.base)
        .args(["add", "4"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    all.push_str(&format!(
        "## no_git_on_path: exit {}\n{}\n",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr)
    ));
    let out = repo
        .command(BIN, &repo.base)
        .args(["help"])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    all.push_str(&format!(
        "## stdout_full: exit {}\n{}\n",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr)
    ));
    // A directory where card 5's lock file goes: kardwt makes its own lock files.
    let lock = repo.common_dir().join("kardwt/cards/5.lock");
    std::fs::create_dir_all(&lock).unwrap();
    let before = repo.snapshot_base();
    let out = repo.kardwt(&repo.base, &["add", "5"]);
    assert_eq!(out.code, 3, "{out}");
    all.push_str(&pinned_case("lock_file_not_a_file", &out));
    repo.assert_nothing_created(&before, "an add whose lock file is a directory");
    assert!(lock.is_dir());
    pinned(&repo).bind(|| insta::assert_snapshot!("refusals_of_the_system", all));
}
