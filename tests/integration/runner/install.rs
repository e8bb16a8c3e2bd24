//! `git kardwt runner install <runner> [--print]`: kardwt's entries merged into
//! each runner's own configuration beside everyone else's, idempotently, naming the binary by
//! absolute path; a guard hook whose binary cannot run denies.
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{sh_quote, Output, TestRepo, BIN};

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
    let exe = exe();
    let quoted = git_kardwt::ground::quote::sh_path(&exe);

    // --print shows it and writes nothing.
    let printed = repo.kardwt_ok(&repo.base, &["runner", "install", "claude", "--print"]);
    assert!(
        printed.contains(&format!("{quoted} runner claude worktree-create")),
        "{printed}"
    );
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), THEIRS);

    let out = repo.kardwt(&repo.base, &["runner", "install", "claude"]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("still to do: commit .claude/settings.json"),
        "{out}"
    );
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
    // Ours, by absolute path, with a timeout above the prepare cap.
    assert_eq!(
        ours(&v, "PreToolUse"),
        format!("{quoted} guard --format claude || exit 2")
    );
    assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "Bash");
    assert_eq!(
        ours(&v, "WorktreeCreate"),
        format!("{quoted} runner claude worktree-create")
    );
    assert_eq!(
        ours(&v, "WorktreeRemove"),
        format!("{quoted} runner claude worktree-remove")
    );
    assert!(v["hooks"]["WorktreeCreate"][0]["hooks"][0]["timeout"].as_u64() > Some(900));

    // Idempotent: the second run writes nothing.
    let out = repo.kardwt(&repo.base, &["runner", "install", "claude"]);
    out.expect_code(0);
    assert!(out.stderr.contains("already up to date"), "{out}");
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), text);
}

#[test]
fn installed_guard_denies_with_an_absolute_suggestion_and_when_its_binary_is_missing() {
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
    // A bare PATH (no git-kardwt on it) still reaches the binary, and the replacement it
    // suggests names the binary the same way.
    let out = sh(&repo, &repo.base, &guard, &payload, Some("/usr/bin:/bin"));
    out.expect_code(0);
    assert!(!out.stdout.is_empty(), "{out} {payload}");
    let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        reason.contains(&format!(
            "Run instead: {} remove --path",
            git_kardwt::ground::quote::sh_path(&exe())
        )),
        "{reason}"
    );
    // The binary gone: the hook denies (exit 2), never allows.
    let missing = repo.tmp.join("gone/git-kardwt");
    let broken = guard.replace(&exe().display().to_string(), &missing.display().to_string());
    assert_ne!(broken, guard);
    let ls = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": repo.base});
    let out = sh(&repo, &repo.base, &broken, &ls.to_string(), None);
    assert_eq!(out.code, 2, "{out}");
    // The codex form too.
    repo.kardwt_ok(&repo.base, &["runner", "install", "codex"]);
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.base.join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    let codex = ours(&v, "PreToolUse");
    let out = sh(&repo, &repo.base, &codex, &ls.to_string(), None);
    out.expect_code(0);
    let broken = codex.replace(&exe().display().to_string(), &missing.display().to_string());
    assert_eq!(
        sh(&repo, &repo.base, &broken, &ls.to_string(), None).code,
        2
    );
    // SessionStart names the binary too, and is silent in the base.
    let start = ours(&v, "SessionStart");
    assert_eq!(
        start,
        format!(
            "{} runner codex session-start",
            git_kardwt::ground::quote::sh_path(&exe())
        )
    );
    let payload = json!({"cwd": repo.base, "hook_event_name": "SessionStart", "source": "startup"});
    let out = sh(&repo, &repo.base, &start, &payload.to_string(), None);
    out.expect_code(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", ""),
        "{out}"
    );
}

#[test]
fn other_runners_get_their_files_and_scripts_reach_the_binary_on_a_bare_path() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    std::fs::create_dir_all(repo.base.join(".cursor")).unwrap();
    std::fs::write(
        repo.base.join(".cursor/worktrees.json"),
        r#"{"setup-worktree": ["npm ci"]}"#,
    )
    .unwrap();
    std::fs::write(
        repo.base.join("conductor.json"),
        r#"{"scripts": {"run": "npm run dev"}}"#,
    )
    .unwrap();
    for runner in ["codex", "cursor", "conductor", "vibe-kanban"] {
        repo.kardwt_ok(&repo.base, &["runner", "install", runner]);
        let out = repo.kardwt(&repo.base, &["runner", "install", runner]);
        out.expect_code(0);
        assert!(!out.stderr.contains("kardwt: wrote"), "{runner}: {out}");
    }
    let cursor: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.base.join(".cursor/worktrees.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cursor["setup-worktree"][0], "npm ci");
    let conductor: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.base.join("conductor.json")).unwrap())
            .unwrap();
    assert_eq!(conductor["scripts"]["run"], "npm run dev");
    assert_eq!(
        conductor["scripts"]["setup"],
        "bash .kardwt/conductor/setup.sh"
    );
    for script in [
        "codex/setup.sh",
        "codex/cleanup.sh",
        "conductor/setup.sh",
        "conductor/archive.sh",
        "vibe-kanban/setup.sh",
        "vibe-kanban/archive.sh",
    ] {
        let path = repo.base.join(".kardwt").join(script);
        let mode = std::os::unix::fs::PermissionsExt::mode(&path.metadata().unwrap().permissions());
        assert!(mode & 0o111 != 0, "{script} is not executable");
    }
    // The cursor command and a setup script, run inside a new tree with a PATH that has no
    // git-kardwt on it, prepare the tree.
    let wt = repo.sibling("cursor-wt");
    repo.add_unhooked_worktree(wt.to_str().unwrap(), "cursor/task");
    let out = sh(
        &repo,
        &wt,
        cursor["setup-worktree"][1].as_str().unwrap(),
        "",
        Some("/usr/bin:/bin"),
    );
    out.expect_code(0);
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);
    let wt = repo.sibling("codex-wt");
    repo.add_unhooked_worktree(wt.to_str().unwrap(), "codex/task");
    let setup = repo.base.join(".kardwt/codex/setup.sh");
    let out = sh(
        &repo,
        &wt,
        &format!("bash '{}'", setup.display()),
        "",
        Some("/usr/bin:/bin"),
    );
    out.expect_code(0);
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);
}

#[test]
fn install_never_replaces_what_another_tool_set() {
    let repo = TestRepo::new();
    let theirs = r#"{"scripts": {"setup": "npm install"}}"#;
    std::fs::write(repo.base.join("conductor.json"), theirs).unwrap();
    let out = repo.kardwt(&repo.base, &["runner", "install", "conductor"]);
    out.expect_code(3);
    assert!(out.stderr.contains("npm install"), "{out}");
    assert_eq!(
        std::fs::read_to_string(repo.base.join("conductor.json")).unwrap(),
        theirs
    );
    assert!(!repo.base.join(".kardwt").exists(), "nothing is written");
    // Not JSON: refused, untouched.
    std::fs::create_dir_all(repo.base.join(".claude")).unwrap();
    std::fs::write(settings(&repo), "{ not json").unwrap();
    repo.kardwt(&repo.base, &["runner", "install", "claude"])
        .expect_code(3);
    assert_eq!(
        std::fs::read_to_string(settings(&repo)).unwrap(),
        "{ not json"
    );
}
