//! `git kardwt runner install [<runner>] [--user] [--print]`: kardwt's entries merged into
//! each runner's own configuration beside everyone else's, idempotently, naming no path of one
//! machine (`git kardwt …`); `--user` sets the user's `alias.kardwt` so a PATH without
//! `git-kardwt` still reaches it; a guard hook whose binary cannot be reached denies.
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{pinned, pinned_case, sh_quote, Output, TestRepo, BIN};

fn exe() -> PathBuf {
    Path::new(BIN).canonicalize().unwrap()
}

/// `sh -c command` in `dir` with `stdin` and `PATH` set to `path` (the hermetic one otherwise).
fn sh(repo: &TestRepo, dir: &Path, command: &str, stdin: &str, path: Option<&str>) -> Output {
    let path = path.map(Path::new);
    let env: Vec<(&str, &Path)> = path.iter().map(|p| ("PATH", *p)).collect();
    crate::support::recipes::run_sh(repo, dir, command, stdin, &env)
}

fn settings(repo: &TestRepo) -> PathBuf {
    repo.base.join(".claude/settings.json")
}

/// The one hook command of kardwt's for `event` in a Claude-style settings file.
fn ours(v: &Value, event: &str) -> String {
    let found: Vec<&str> = v["hooks"][event]
        .as_array()
        .unwrap_or_else(|| panic!("no {event} in {v}"))
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap().iter())
        .filter_map(|h| h["command"].as_str())
        .filter(|c| c.contains("kardwt"))
        .collect();
    assert_eq!(found.len(), 1, "{event}: {v}");
    found[0].to_owned()
}

const THEIRS: &str = r#"{
  "permissions": {
    "allow": ["Bash(npm test)"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Edit",
        "hooks": [{ "type": "command", "command": "./scripts/lint-edit.sh" }]
      }
    ]
  },
  "model": "opus"
}
"#;

#[test]
fn claude_install_merges_beside_other_entries_and_a_second_run_changes_nothing() {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.base.join(".claude")).unwrap();
    std::fs::write(settings(&repo), THEIRS).unwrap();
    // --print shows it and writes nothing.
    let printed = repo.kardwt_ok(&repo.base, &["runner", "install", "claude", "--print"]);
    assert!(
        printed.contains("\"git kardwt runner claude worktree-create\""),
        "{printed}"
    );
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), THEIRS);

    let out = repo.kardwt(&repo.base, &["runner", "install", "claude"]);
    out.expect_code(0);
    // What is still to do: commit the file, and `runner install --user` once per machine.
    let mut shown = pinned_case("runner install claude", &out);
    let text = std::fs::read_to_string(settings(&repo)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // Theirs, kept as they were (and in their order).
    assert_eq!(v["permissions"], json!({"allow": ["Bash(npm test)"]}));
    assert_eq!(v["model"], "opus");
    assert!(
        text.find("\"permissions\"") < text.find("\"hooks\""),
        "{text}"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Edit");
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./scripts/lint-edit.sh"
    );
    // Ours, through git and the PATH (no path of this machine: the file is committed), with a
    // timeout above the prepare cap.
    assert_eq!(
        ours(&v, "PreToolUse"),
        "git kardwt guard --format claude || exit 2"
    );
    assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "Bash");
    assert_eq!(
        ours(&v, "WorktreeCreate"),
        "git kardwt runner claude worktree-create"
    );
    assert_eq!(
        ours(&v, "WorktreeRemove"),
        "git kardwt runner claude worktree-remove"
    );
    assert!(!text.contains(&*exe().to_string_lossy()), "{text}");
    assert!(v["hooks"]["WorktreeCreate"][0]["hooks"][0]["timeout"].as_u64() > Some(900));

    // Idempotent: the second run writes nothing.
    let out = repo.kardwt(&repo.base, &["runner", "install", "claude"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("runner install claude, again", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("claude_install", shown));
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), text);
}

/// The user's `alias.kardwt` as `git config --global` reads it in the test's HOME.
fn alias(repo: &TestRepo) -> Option<String> {
    let out = repo.git_output(&repo.base, &["config", "--global", "--get", "alias.kardwt"]);
    (out.code == 0).then(|| out.stdout.trim().to_owned())
}

#[test]
fn installed_guard_reaches_the_binary_through_the_users_alias_and_denies_without_it() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    repo.kardwt_ok(&repo.base, &["runner", "install", "claude"]);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(settings(&repo)).unwrap()).unwrap();
    let guard = ours(&v, "PreToolUse");
    let payload = json!({
        "tool_name": "Bash",
        "tool_input": {"command": format!("git worktree remove {}", sh_quote(&wt))},
        "cwd": repo.base,
    })
    .to_string();
    let ls = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": repo.base});
    let bare = Some("/usr/bin:/bin");
    // A PATH without git-kardwt and no alias: the committed hook denies, never allows.
    assert_eq!(alias(&repo), None);
    let out = sh(&repo, &repo.base, &guard, &ls.to_string(), bare);
    assert_eq!(out.code, 2, "{out}");

    // --print says what it would set and sets nothing; then --user sets it, once.
    let out = repo.kardwt(&repo.base, &["runner", "install", "--user", "--print"]);
    out.expect_code(0);
    let mut shown = pinned_case("runner install --user --print", &out);
    assert_eq!(alias(&repo), None);
    let out = repo.kardwt(&repo.base, &["runner", "install", "--user"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("runner install --user", &out));
    let set = alias(&repo).expect("alias.kardwt is set");
    assert!(set.contains(&*exe().to_string_lossy()), "{set}");
    let again = repo.kardwt(&repo.base, &["runner", "install", "--user"]);
    shown.push_str(&pinned_case("runner install --user, again", &again));
    pinned(&repo).bind(|| insta::assert_snapshot!("user_alias_install", shown));
    assert_eq!(alias(&repo).as_deref(), Some(set.as_str()));

    // The same committed hook on the bare PATH now reaches the binary: an allowed command is
    // allowed, and the denial suggests `git kardwt …`, which reaches it the same way.
    let out = sh(&repo, &repo.base, &guard, &ls.to_string(), bare);
    out.expect_code(0);
    let out = sh(&repo, &repo.base, &guard, &payload, bare);
    out.expect_code(0);
    let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        reason.contains("Run instead: git kardwt remove --path"),
        "{reason}"
    );

    // The codex form too, and SessionStart is silent in the base.
    repo.kardwt_ok(&repo.base, &["runner", "install", "codex"]);
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.base.join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    let codex = ours(&v, "PreToolUse");
    assert_eq!(codex, "git kardwt guard --format codex || exit 2");
    let out = sh(&repo, &repo.base, &codex, &ls.to_string(), bare);
    out.expect_code(0);
    let start = ours(&v, "SessionStart");
    assert_eq!(start, "git kardwt runner codex session-start");
    let payload = json!({"cwd": repo.base, "hook_event_name": "SessionStart", "source": "startup"});
    let out = sh(&repo, &repo.base, &start, &payload.to_string(), bare);
    out.expect_code(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", ""),
        "{out}"
    );

    // The alias runs its program in the directory git was called in, not at the top.
    let exe = exe().to_string_lossy().into_owned();
    let set_alias = |program: &str| {
        repo.git(
            &repo.base,
            &[
                "config",
                "--global",
                "alias.kardwt",
                &set.replace(&exe, program),
            ],
        );
    };
    set_alias("/bin/pwd");
    let sub = repo.base.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let out = sh(&repo, &sub, "git kardwt -P", "", bare);
    out.expect_code(0);
    assert_eq!(
        out.stdout.trim(),
        sub.canonicalize().unwrap().to_str().unwrap()
    );

    // The binary the alias names gone: the hooks deny (exit 2), never allow.
    set_alias(&repo.tmp.join("gone/git-kardwt").to_string_lossy());
    for hook in [&guard, &codex] {
        let out = sh(&repo, &repo.base, hook, &ls.to_string(), bare);
        assert_eq!(out.code, 2, "{hook}: {out}");
    }
}

#[test]
fn an_alias_kardwt_did_not_write_is_refused_and_kept() {
    let repo = TestRepo::new();
    repo.git(
        &repo.base,
        &["config", "--global", "alias.kardwt", "!echo mine"],
    );
    let out = repo.kardwt(&repo.base, &["runner", "install", "--user"]);
    out.expect_code(3);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "user_alias_not_ours",
            pinned_case("runner install --user", &out)
        )
    });
    assert_eq!(alias(&repo).as_deref(), Some("!echo mine"));
    // Neither a runner nor --user: a usage error.
    repo.kardwt(&repo.base, &["runner", "install"])
        .expect_code(2);
}
