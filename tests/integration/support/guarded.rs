//! A repository whose worktrees the guard tests judge.
#![allow(unused_imports, dead_code)]
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::support::{mtimes, sh_quote, Output, Rng, TestRepo, BIN, COMMAND_TIMEOUT};

/// The guard's table of examples, `tests/data/guard-examples.txt` (shared with the unit tests).
#[path = "../../data/guard_examples.rs"]
pub mod examples;

/// A repository with the managed worktrees of cards 42 and 7, `<tmp>/link-to-42`, a managed
/// entry whose directory is gone, and the examples' aliases in its config.
pub(crate) fn managed_repo() -> TestRepo {
    let repo = TestRepo::new();
    for (name, value) in examples::ALIASES {
        repo.git(&repo.base, &["config", &format!("alias.{name}"), value]);
    }
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.add_card("42");
    repo.add_card("7");
    // A managed entry whose directory is gone: what makes `git worktree prune` harmful.
    std::fs::remove_dir_all(repo.add_card("gone")).unwrap();
    std::os::unix::fs::symlink(repo.card_path("42"), repo.tmp.join("link-to-42")).unwrap();
    repo
}

/// Run the binary itself in `dir` with `stdin` piped in; does not assert.
pub(crate) fn guard(repo: &TestRepo, dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    // By name, found on PATH: by absolute path its suggestions would name that path.
    let mut cmd = repo.command("git-kardwt", dir);
    cmd.arg("guard")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    // The guard may stop reading early (oversized input): a closed pipe is expected then.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let mut all = vec![BIN.to_owned(), "guard".to_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: all,
    }
}

/// Claude Code's pre-tool-use payload for a Bash command.
pub(crate) fn payload(tool: &str, command: &str, cwd: &Path) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": "abc",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": command, "description": "x"},
    }))
    .unwrap()
}
