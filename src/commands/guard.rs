//! `git kardwt guard` (SPEC R-GUARD): the I/O edge of the agent command guard. Reads the
//! pending command (Claude Code's pre-tool-use JSON on stdin, or `--command`), asks the pure
//! rules in [`crate::guard`] about it, and answers a deny in the caller's format.
//!
//! Invariants: it writes nothing anywhere but stdout/stderr (no log, no lock), never runs the
//! command, and never fails loudly: unreadable, oversized or unexpected input is silence
//! (exit 0), so a broken payload can never block an agent's unrelated work.
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::cli::{GuardArgs, GuardFormat};
use crate::guard::{self, Denial, World};
use crate::record::Loaded;
use crate::repo::{self, Repo};
use crate::verify::{self, Verdict};

/// Payloads larger than this are cut off, so they do not parse: silence.
const STDIN_CAP: u64 = 1 << 20;

pub fn run(args: &GuardArgs, out: &mut dyn Write) -> Result<i32> {
    let Some((command, payload_cwd)) = pending_command(args) else {
        return Ok(0);
    };
    let cwd = match args.cwd.clone().or(payload_cwd) {
        Some(dir) => repo::absolutize(&dir),
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(_) => return Ok(0),
        },
    };
    let denials = guard::judge_line(&command, &cwd, &Disk);
    if denials.is_empty() {
        return Ok(0);
    }
    Ok(answer(&denials, args.format, out))
}

/// The command line to judge and the payload's `cwd`, or `None` for silence.
fn pending_command(args: &GuardArgs) -> Option<(String, Option<PathBuf>)> {
    if let Some(command) = &args.command {
        return Some((command.clone(), None));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let _ = writeln!(
            std::io::stderr(),
            "hint: git kardwt guard reads a pre-tool-use JSON payload on stdin, or takes --command STR"
        );
        return None;
    }
    parse_payload(stdin.lock().take(STDIN_CAP))
}

/// Claude Code's `{"tool_name":"Bash","tool_input":{"command":…},"cwd":…}`; anything else
/// (not JSON, cut off by the cap, not the Bash tool, no string command) is `None`. Only the
/// first JSON value is read, so a caller that keeps stdin open cannot make the guard hang.
fn parse_payload(input: impl Read) -> Option<(String, Option<PathBuf>)> {
    let value: serde_json::Value = serde_json::Deserializer::from_reader(input)
        .into_iter()
        .next()?
        .ok()?;
    if value.get("tool_name")?.as_str()? != "Bash" {
        return None;
    }
    let command = value
        .get("tool_input")?
        .get("command")?
        .as_str()?
        .to_owned();
    let cwd = value
        .get("cwd")
        .and_then(|c| c.as_str())
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
    Some((command, cwd))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeAnswer<'a> {
    hook_specific_output: ClaudeDecision<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeDecision<'a> {
    hook_event_name: &'a str,
    permission_decision: &'a str,
    permission_decision_reason: String,
}

/// Print the deny and return the exit code. Write errors (a closed pipe) are ignored: there is
/// nobody left to tell.
fn answer(denials: &[Denial], format: GuardFormat, out: &mut dyn Write) -> i32 {
    let reason = denials
        .iter()
        .map(|d| d.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let replacement = denials
        .iter()
        .map(|d| d.replacement.as_str())
        .collect::<Vec<_>>()
        .join(" && ");
    match format {
        GuardFormat::Claude => {
            let answer = ClaudeAnswer {
                hook_specific_output: ClaudeDecision {
                    hook_event_name: "PreToolUse",
                    permission_decision: "deny",
                    permission_decision_reason: format!(
                        "denied by git kardwt guard: {reason}. Run instead: {replacement}"
                    ),
                },
            };
            if let Ok(json) = serde_json::to_string(&answer) {
                let _ = writeln!(out, "{json}");
                let _ = out.flush();
            }
            0
        }
        GuardFormat::Codex | GuardFormat::Text => {
            let _ = write!(
                std::io::stderr(),
                "error: denied by git kardwt guard: {reason}\nhint: run instead: {replacement}\n"
            );
            2
        }
    }
}

/// The world as the disk has it: repositories found with gix, worktrees verified the way every
/// other command verifies them (SPEC R-VERIFY). Reads only.
struct Disk;

impl World for Disk {
    fn managed_worktree(&self, path: &Path) -> Option<PathBuf> {
        let path = repo::absolutize(path);
        if !path.is_dir() {
            return None;
        }
        let repo = Repo::discover(&path).ok()?;
        let entries = verify::scan(&repo).ok()?;
        let report = verify::verify(&repo, &entries, &path, None);
        (report.verdict == Verdict::Verified).then_some(report.path)
    }

    fn has_managed_worktrees(&self, dir: &Path) -> bool {
        let Ok(repo) = Repo::discover(&repo::absolutize(dir)) else {
            return false;
        };
        verify::scan(&repo).is_ok_and(|entries| {
            entries
                .iter()
                .any(|e| matches!(e.record, Loaded::Parsed(_)))
        })
    }

    fn managed_within(&self, dir: &Path) -> Vec<PathBuf> {
        let dir = repo::absolutize(dir);
        // A worktree itself is judged by `managed_worktree`; only plain directories are looked
        // into, one level deep, where the worktree root keeps `card-<id>`.
        if dir.join(".git").exists() {
            return Vec::new();
        }
        let Ok(children) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = children
            .filter_map(|c| c.ok())
            .filter(|c| c.path().join(".git").is_file())
            .filter_map(|c| self.managed_worktree(&c.path()))
            .collect();
        found.sort();
        found
    }

    fn worktree_paths(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(repo) = Repo::discover(&repo::absolutize(dir)) else {
            return Vec::new();
        };
        let linked = repo.linked().unwrap_or_default();
        std::iter::once(repo.base.clone())
            .chain(linked.into_iter().filter_map(|l| l.path))
            .collect()
    }

    fn is_symlink(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_other_than_a_bash_command_are_silence() {
        assert_eq!(
            parse_payload(&br#"{"tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/x"}"#[..]),
            Some(("ls".into(), Some("/x".into())))
        );
        // A caller that never closes stdin: the first value is enough.
        let open =
            br#" {"tool_name":"Bash","tool_input":{"command":"ls"}}"#.chain(std::io::repeat(b' '));
        assert_eq!(parse_payload(open), Some(("ls".into(), None)));
        for bad in [
            &br#"{"tool_name":"Edit","tool_input":{"command":"ls"}}"#[..],
            br#"{"tool_name":"Bash","tool_input":{"command":1}}"#,
            br#"{"tool_name":"Bash"}"#,
            br#"[1,2]"#,
            b"not json",
            b"\xff\xfe",
            b"",
        ] {
            assert_eq!(
                parse_payload(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn claude_answer_has_the_documented_shape() {
        let mut out = Vec::new();
        let d = Denial {
            reason: "r".into(),
            replacement: "git kardwt gc --apply".into(),
        };
        assert_eq!(answer(&[d], GuardFormat::Claude, &mut out), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"denied by git kardwt guard: r. Run instead: git kardwt gc --apply\"}}\n"
        );
    }
}
