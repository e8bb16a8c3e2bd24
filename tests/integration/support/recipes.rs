//! The runner recipes as shipped: their JSON, the commands they name, running their scripts.
#![allow(unused_imports, dead_code)]
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::cleanup::{cleanup_lines, event_names, rules_with_cleanup, Sleeper};
use crate::support::{sh_quote, snapshot, wait_until, Output, TestRepo};

/// The shipped recipes.
pub(crate) fn runners_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("githooks/runners")
}

pub(crate) fn read_json(rel: &str) -> Value {
    let path = runners_dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not JSON: {e}"))
}

/// The command of the single hook a `hooks.json` declares for `event`, and its timeout.
pub(crate) fn hook_command(hooks: &Value, event: &str) -> (String, u64) {
    let groups = hooks["hooks"][event]
        .as_array()
        .unwrap_or_else(|| panic!("no {event} hooks in {hooks}"));
    assert_eq!(groups.len(), 1, "{event}: {hooks}");
    let hook = &groups[0]["hooks"][0];
    assert_eq!(hook["type"], "command", "{event}: {hook}");
    (
        hook["command"].as_str().unwrap().to_owned(),
        hook["timeout"].as_u64().unwrap_or(0),
    )
}

/// Run `sh -c command` in `dir` with `payload` on stdin and `env` set, as a runner would.
pub(crate) fn run_sh(
    repo: &TestRepo,
    dir: &Path,
    command: &str,
    payload: &str,
    env: &[(&str, &Path)],
) -> Output {
    let input = repo.tmp.join("payload.json");
    std::fs::write(&input, payload).unwrap();
    let mut cmd = repo.command("sh", dir);
    cmd.arg("-c").arg(command);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    Output {
        code: out.status.code().unwrap_or(128),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: vec![command.to_owned(), format!("(in {})", dir.display())],
    }
}

/// Claude Code's WorktreeCreate payload (plus a field kardwt does not know).
pub(crate) fn create_payload(cwd: &Path, name: &str) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "WorktreeCreate",
        "name": name,
        "permission_mode": "default",
    })
    .to_string()
}

/// Claude Code's WorktreeRemove payload.
pub(crate) fn remove_payload(cwd: &Path, worktree: &Path) -> String {
    json!({
        "session_id": "abc123",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": cwd,
        "hook_event_name": "WorktreeRemove",
        "worktree_path": worktree,
    })
    .to_string()
}

pub(crate) fn claude_commands() -> (String, String) {
    let hooks = read_json("claude/hooks.json");
    (
        hook_command(&hooks, "WorktreeCreate").0,
        hook_command(&hooks, "WorktreeRemove").0,
    )
}

/// The single stderr line of a WorktreeRemove that kept `wt`: `kept <wt>: …`
/// (beside what a cleanup hook printed, streamed as `kardwt[<card> cleanup]: …`).
#[track_caller]
pub(crate) fn kept_line(out: &Output, wt: &Path) -> String {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.starts_with("kardwt["))
        .collect();
    assert_eq!(lines.len(), 1, "not one stderr line:\n{out}");
    let prefix = format!("kept {}: ", wt.display());
    assert!(lines[0].starts_with(&prefix), "{out}");
    lines[0].to_owned()
}

pub(crate) fn state(repo: &TestRepo, wt: &Path) -> String {
    repo.record(wt)["state"].as_str().unwrap().to_owned()
}

pub(crate) fn ports(repo: &TestRepo, wt: &Path) -> Vec<i64> {
    repo.record(wt)
        .get("ports")
        .and_then(|p| p.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_integer()).collect())
        .unwrap_or_default()
}

pub(crate) fn gone(sleeper: &mut Sleeper) -> bool {
    wait_until(Duration::from_secs(10), || !sleeper.alive())
}

/// Prepare, cleanup and two ports per card.
pub(crate) fn rules_with_cleanup_and_ports(repo: &TestRepo) -> String {
    format!(
        "{}  ports: {{count: 2, range: [43100, 43999]}}\n",
        rules_with_cleanup(repo, "")
    )
}
