//! `git kardwt runner install gemini` and its two hooks, fed the payloads Gemini CLI 0.61.0
//! sends (its bundle's packages/core/src/hooks/hookEventHandler.ts). The guard as BeforeTool:
//! merged into `.gemini/settings.json` beside the project's own settings, naming no path of one
//! machine; a destructive command on a card's tree is denied with the `git kardwt remove …` line,
//! a harmless one passes with nothing printed, and a guard that cannot run denies with its reason
//! on stderr (Gemini CLI lets through a failing hook that printed nothing). `runner gemini
//! session-start` as SessionStart: prepares the tree `gemini --worktree` made.
use std::path::Path;

use serde_json::{json, Value};

use crate::support::recipes::{read_json, run_sh};
use crate::support::{pinned, pinned_case, sh_quote, Output, TestRepo, BIN};

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
    let mut shown = pinned_case("runner install gemini", &out);
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
    shown.push_str(&pinned_case("runner install gemini, again", &again));
    pinned(&repo).bind(|| insta::assert_snapshot!("gemini_install", shown));
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
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("gemini_guard_not_found", pinned_case("guard", &out)));
    assert!(wt.is_dir());
}

/// Gemini CLI's SessionStart payload for a session in `cwd`.
fn session_payload(cwd: &Path) -> String {
    json!({
        "session_id": "47f609e9",
        "transcript_path": "/nonexistent/session.jsonl",
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "timestamp": "2026-12-06T03:26:14.830Z",
        "source": "startup",
    })
    .to_string()
}

/// A tree made as `gemini --worktree feat` makes it (its bundle's
/// packages/core/src/services/worktreeService.ts, with utils/gitUtils.ts's environment):
/// `git worktree add <base>/.gemini/worktrees/feat -b worktree-feat` with core.hooksPath
/// emptied, so no hook of kardwt's runs.
fn gemini_tree(repo: &TestRepo) -> std::path::PathBuf {
    let wt = repo.base.join(".gemini/worktrees/feat");
    let wt_str = wt.to_str().unwrap();
    repo.git(
        &repo.base,
        &[
            "-c",
            "core.hooksPath=",
            "worktree",
            "add",
            wt_str,
            "-b",
            "worktree-feat",
        ],
    );
    wt
}

/// The installed SessionStart command, run in `dir` as Gemini CLI runs it.
fn session_start(repo: &TestRepo, dir: &Path, payload: &str) -> Output {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(settings(repo)).unwrap()).unwrap();
    let command = v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(command, "git kardwt runner gemini session-start");
    run_sh(repo, dir, &command, payload, &[])
}

fn state(repo: &TestRepo, wt: &Path) -> String {
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    let canonical = wt.canonicalize().unwrap();
    out.json()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| Path::new(r["path"].as_str().unwrap()) == canonical)
        .map(|r| r["state"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{} is not listed:\n{out}", wt.display()))
}

/// Fails on the code before it: `runner gemini` was no command, so the tree stayed `unseeded`.
#[test]
fn gemini_session_start_prepares_a_gemini_worktree_and_tells_the_model_when_it_cannot() {
    let repo = TestRepo::new();
    let flag = repo.tmp.join("fail");
    let script = repo.write_prepare(&format!(
        "if [ -e '{}' ]; then echo 'missing token FOO_TOKEN' >&2; exit 1; fi",
        flag.display()
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    repo.kardwt_ok(&repo.base, &["runner", "install", "gemini"]);
    let wt = gemini_tree(&repo);
    assert_eq!(state(&repo, &wt), "unseeded");

    // A failing prepare: recorded failed; the user (systemMessage) and the model
    // (additionalContext) are told, since Gemini CLI reads nothing else of a SessionStart answer.
    std::fs::write(&flag, "").unwrap();
    let out = session_start(&repo, &wt, &session_payload(&wt));
    out.expect_code(0);
    let answer: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not Gemini CLI's JSON ({e}): {out}"));
    // The user is told what failed and what to run, the model not to work in the tree.
    let answer = serde_json::to_string_pretty(&answer).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("gemini_session_start_failed", answer));
    assert_eq!(state(&repo, &wt), "failed");

    // Fixed: the next session prepares it, silently on stdout (Gemini CLI reads stdout).
    std::fs::remove_file(&flag).unwrap();
    let out = session_start(&repo, &wt, &session_payload(&wt));
    out.expect_code(0);
    assert_eq!(out.stdout, "", "{out}");
    let mut shown = pinned_case("session start, fixed", &out);
    assert_eq!(state(&repo, &wt), "ready");
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);

    // The base: silent. A tree Gemini CLI did not make: one note, left unseeded.
    let out = session_start(&repo, &repo.base, &session_payload(&repo.base));
    out.expect_code(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", ""),
        "{out}"
    );
    let other = repo.sibling("by-hand");
    repo.add_unhooked_worktree(other.to_str().unwrap(), "by/hand");
    let out = session_start(&repo, &other, &session_payload(&other));
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    shown.push_str(&pinned_case("session start, a tree made by hand", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("gemini_session_start", shown));
    assert_eq!(state(&repo, &other), "unseeded");

    // Gemini CLI 0.61.0 never drops its trees: `remove --path` releases and removes one.
    repo.kardwt(&repo.base, &["remove", "--path", wt.to_str().unwrap()])
        .expect_code(0);
    assert!(!wt.exists());
}
