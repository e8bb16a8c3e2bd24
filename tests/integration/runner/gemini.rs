//! `git kardwt runner install gemini` and the guard as Gemini CLI's BeforeTool hook, fed the
//! payload Gemini CLI 0.61.0 sends (its bundle's packages/core/src/hooks/hookEventHandler.ts):
//! merged into `.gemini/settings.json` beside the project's own settings, naming no path of one
//! machine; a destructive command on a card's tree is denied with the `git kardwt remove …` line,
//! a harmless one passes with nothing printed, and a guard that cannot run denies with its reason
//! on stderr (Gemini CLI lets through a failing hook that printed nothing).
use std::path::Path;

use serde_json::{json, Value};

use crate::support::recipes::{read_json, run_sh};
use crate::support::{sh_quote, Output, TestRepo, BIN};

const THEIRS: &str = r#"{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "hooks": {
    "BeforeTool": [
      { "matcher": "write_file", "hooks": [{ "type": "command", "command": "./scripts/lint.sh" }] }
    ]
  }
}
"#;

fn settings(repo: &TestRepo) -> std::path::PathBuf {
    repo.base.join(".gemini/settings.json")
}

/// kardwt's one BeforeTool group in a Gemini CLI settings file.
fn our_group(v: &Value) -> Value {
    let ours: Vec<&Value> = v["hooks"]["BeforeTool"]
        .as_array()
        .unwrap_or_else(|| panic!("no BeforeTool in {v}"))
        .iter()
        .filter(|g| {
            g["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .contains("kardwt")
        })
        .collect();
    assert_eq!(ours.len(), 1, "{v}");
    ours[0].clone()
}

/// Gemini CLI's BeforeTool payload for its shell tool.
fn before_tool(cwd: &Path, command: &str, dir_path: Option<&Path>) -> String {
    let mut input = json!({"command": command, "description": "scripted"});
    if let Some(dir) = dir_path {
        input["dir_path"] = json!(dir);
    }
    json!({
        "session_id": "1ab7db1d",
        "transcript_path": "/nonexistent/session.jsonl",
        "cwd": cwd,
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-06T03:02:45.110Z",
        "tool_name": "run_shell_command",
        "tool_input": input,
    })
    .to_string()
}

fn hook(repo: &TestRepo, command: &str, payload: &str, path: Option<&str>) -> Output {
    let path = path.map(Path::new);
    let env: Vec<(&str, &Path)> = path.iter().map(|p| ("PATH", *p)).collect();
    run_sh(repo, &repo.base, command, payload, &env)
}

#[test]
fn gemini_install_merges_its_guard_beside_the_projects_settings_as_shipped() {
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.base.join(".gemini")).unwrap();
    std::fs::write(settings(&repo), THEIRS).unwrap();
    let printed = repo.kardwt_ok(&repo.base, &["runner", "install", "gemini", "--print"]);
    assert!(printed.contains("guard --format gemini"), "{printed}");
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), THEIRS);

    let out = repo.kardwt(&repo.base, &["runner", "install", "gemini"]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("still to do: commit .gemini/settings.json"),
        "{out}"
    );
    assert!(out.stderr.contains("untrusted folder"), "{out}");
    let text = std::fs::read_to_string(settings(&repo)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(v["hooks"]["BeforeTool"][0]["matcher"], "write_file");
    let group = our_group(&v);
    assert_eq!(group["matcher"], "run_shell_command");
    // Gemini CLI counts milliseconds, and lets the call through when a hook times out.
    assert_eq!(group["hooks"][0]["timeout"], 60_000);
    let exe = Path::new(BIN).canonicalize().unwrap();
    assert!(!text.contains(&*exe.to_string_lossy()), "{text}");

    let again = repo.kardwt(&repo.base, &["runner", "install", "gemini"]);
    again.expect_code(0);
    assert!(again.stderr.contains("already up to date"), "{again}");
    assert_eq!(std::fs::read_to_string(settings(&repo)).unwrap(), text);

    // Into a repository without settings, it writes the recipe shipped in githooks/runners/.
    let fresh = TestRepo::new();
    fresh.kardwt_ok(&fresh.base, &["runner", "install", "gemini"]);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(settings(&fresh)).unwrap()).unwrap();
    assert_eq!(written, read_json("gemini/settings.json"));
}

#[test]
fn gemini_guard_denies_removing_a_card_tree_allows_the_rest_and_denies_when_it_cannot_run() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    repo.kardwt_ok(&repo.base, &["runner", "install", "gemini"]);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(settings(&repo)).unwrap()).unwrap();
    let guard = our_group(&v)["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let denied = |out: &Output| {
        out.expect_code(0);
        let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert_eq!(answer["decision"], "deny", "{out}");
        let reason = answer["reason"].as_str().unwrap();
        assert!(
            reason.contains("Run instead: git kardwt remove --path"),
            "{reason}"
        );
    };

    let remove = format!("git worktree remove {}", sh_quote(&wt));
    denied(&hook(
        &repo,
        &guard,
        &before_tool(&repo.base, &remove, None),
        None,
    ));
    // The shell runs in dir_path (resolved against cwd, the project root): `rm -rf card-42`
    // there is the card's tree.
    let name = wt.file_name().unwrap().to_str().unwrap();
    let rm = format!("rm -rf {name}");
    let parent = wt.parent().unwrap();
    denied(&hook(
        &repo,
        &guard,
        &before_tool(&repo.base, &rm, Some(parent)),
        None,
    ));

    // Harmless: nothing on stdout or stderr (Gemini CLI would read any text as the answer).
    for (command, dir) in [
        ("ls", None),
        (rm.as_str(), None),
        ("git status", Some(&*wt)),
    ] {
        let out = hook(&repo, &guard, &before_tool(&repo.base, command, dir), None);
        out.expect_code(0);
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("", ""),
            "{out}"
        );
    }

    // No git-kardwt on the PATH: exit 2 with the reason on stderr, which Gemini CLI denies.
    let ls = before_tool(&repo.base, "ls", None);
    let out = hook(&repo, &guard, &ls, Some("/usr/bin:/bin"));
    assert_eq!(out.code, 2, "{out}");
    assert!(
        out.stderr
            .contains("denied: git kardwt guard could not run"),
        "{out}"
    );
    assert!(wt.is_dir());
}
