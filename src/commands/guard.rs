//! `git kardwt guard`: the I/O edge of the agent command guard. Reads the
//! pending command (Claude Code's pre-tool-use JSON on stdin, or `--command`), asks the pure
//! rules in [`crate::guard`] about it, and answers a deny in the caller's format.
//!
//! Invariants: it writes nothing anywhere but stdout/stderr (no log, no lock), never runs the
//! command, and never fails loudly: unreadable, oversized or unexpected input is silence
//! (exit 0), so a broken payload can never block an agent's unrelated work; its own usage
//! errors are one warning line and exit 0 (see [`usage_error`]).
use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::cli::{GuardArgs, GuardFormat};
use crate::context::Disk;
use crate::git;
use crate::guard::{self, Denial};

/// Payloads larger than this are cut off, so they do not parse: silence. A 1 MiB command
/// line fits, with room for the payload's other fields.
const STDIN_CAP: u64 = (1 << 20) + (64 << 10);

pub(crate) fn run(args: &GuardArgs, out: &mut dyn Write) -> Result<i32> {
    let Some((command, payload_cwd)) = pending_command(args) else {
        return Ok(0);
    };
    let cwd = match args.cwd.clone().or(payload_cwd) {
        Some(dir) => git::absolutize(&dir),
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(_) => return Ok(0),
        },
    };
    // Standing in the directory lets every lookup under it skip walking its depth again.
    let here = std::env::set_current_dir(&cwd).ok().map(|_| cwd.clone());
    let denials = guard::judge_line(&command, &cwd, &Disk::new(here));
    if denials.is_empty() {
        return Ok(0);
    }
    // git runs `git kardwt` by absolute path too, but names its exec path in the environment:
    // then `git kardwt` is how the caller reached it, and what it can run again.
    let invoked = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .filter(|_| std::env::var_os("GIT_EXEC_PATH").is_none());
    Ok(answer(&denials, args.format, invoked.as_deref(), out))
}

/// Is this argv (program name first) a `guard` command line? Only the global options
/// (`--root DIR`, `--rules FILE`) may come before the subcommand.
pub(crate) fn is_guard_argv(args: impl IntoIterator<Item = OsString>) -> bool {
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--root" | "--rules") => {
                args.next();
            }
            Some(a) if a.starts_with("--root=") || a.starts_with("--rules=") => {}
            Some(a) => return a == "guard",
            None => return false,
        }
    }
    false
}

/// A usage error of `guard` itself (an unknown flag, an empty `--cwd`, …) never denies: nothing
/// on stdout, one warning line on stderr, exit 0. Returns the exit code.
pub(crate) fn usage_error(err: &clap::Error) -> i32 {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default().trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let mut why: String = first
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if first.chars().count() > 200 {
        why.push('…');
    }
    let _ = writeln!(
        std::io::stderr(),
        "warning: git kardwt guard judged nothing: {why} (see git kardwt guard --help)"
    );
    0
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

/// Claude Code's and Codex's `{"tool_name":"Bash","tool_input":{"command":…},"cwd":…}`, or
/// Gemini CLI's BeforeTool `{"tool_name":"run_shell_command","tool_input":{"command":…,
/// "dir_path":…},"cwd":…}` (its shell runs in `dir_path` resolved against `cwd`, the project
/// root); anything else (not JSON, cut off by the cap, not a shell tool, no string command) is
/// `None`. Only the first JSON value is read, so a caller that keeps stdin open cannot make the
/// guard hang.
fn parse_payload(input: impl Read) -> Option<(String, Option<PathBuf>)> {
    let value: serde_json::Value = serde_json::Deserializer::from_reader(input)
        .into_iter()
        .next()?
        .ok()?;
    if !matches!(
        value.get("tool_name")?.as_str()?,
        "Bash" | "run_shell_command"
    ) {
        return None;
    }
    let input = value.get("tool_input")?;
    let command = input.get("command")?.as_str()?.to_owned();
    let text = |v: Option<&serde_json::Value>| {
        v.and_then(|c| c.as_str())
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
    };
    let cwd = match (text(value.get("cwd")), text(input.get("dir_path"))) {
        (Some(root), Some(dir)) => Some(root.join(dir)),
        (root, dir) => dir.or(root),
    };
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

/// Print the deny and return the exit code. A Claude answer that cannot be written to stdout
/// is given as exit 2 with the reason on stderr instead, which Claude Code also takes as a
/// deny: a lost deny never allows.
fn answer(
    denials: &[Denial],
    format: GuardFormat,
    invoked: Option<&Path>,
    out: &mut dyn Write,
) -> i32 {
    let reason = denials
        .iter()
        .map(|d| d.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let replacement = denials
        .iter()
        .map(|d| spelled(&d.replacement, invoked))
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
            let told = serde_json::to_string(&answer)
                .is_ok_and(|json| writeln!(out, "{json}").is_ok() && out.flush().is_ok());
            if told {
                return 0;
            }
            // Fail closed: exit 0 without the answer would allow the command;
            // exit 2 blocks it, with the reason on stderr as Claude Code reads it then.
            let _ = writeln!(
                std::io::stderr(),
                "denied by git kardwt guard: {reason}. Run instead: {replacement}"
            );
            2
        }
        GuardFormat::Gemini => {
            // Gemini CLI's BeforeTool hook output: a `deny` decision, its reason given to the
            // model as the tool's error.
            let reason =
                format!("denied by git kardwt guard: {reason}. Run instead: {replacement}");
            let answer = serde_json::json!({"decision": "deny", "reason": reason});
            if writeln!(out, "{answer}").is_ok() && out.flush().is_ok() {
                return 0;
            }
            // Exit 2 with text on stderr is Gemini CLI's other way to deny.
            let _ = writeln!(std::io::stderr(), "{reason}");
            2
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

/// A suggested `git kardwt …` command as the agent's shell can run it: when this
/// process was started by absolute path (a hook that names the binary because the agent's
/// `PATH` may lack it), the suggestion names that path too (pure).
fn spelled(replacement: &str, invoked: Option<&Path>) -> String {
    match (replacement.strip_prefix("git kardwt "), invoked) {
        (Some(rest), Some(exe)) if exe.is_absolute() => {
            format!("{} {rest}", guard::shell_quote(&exe.to_string_lossy()))
        }
        _ => replacement.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_name_the_binary_as_it_was_reached() {
        let r = "git kardwt remove --path '/w/card-1'";
        assert_eq!(spelled(r, Some(Path::new("git-kardwt"))), r);
        assert_eq!(spelled(r, None), r);
        assert_eq!(
            spelled(r, Some(Path::new("/opt/k bin/git-kardwt"))),
            "'/opt/k bin/git-kardwt' remove --path '/w/card-1'"
        );
    }

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
    fn gemini_shell_payloads_are_read_where_the_shell_runs() {
        let payload = br#"{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"sub"},"cwd":"/p"}"#;
        assert_eq!(
            parse_payload(&payload[..]),
            Some(("ls".into(), Some("/p/sub".into())))
        );
        let absolute = br#"{"tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"/q"},"cwd":"/p"}"#;
        assert_eq!(
            parse_payload(&absolute[..]),
            Some(("ls".into(), Some("/q".into())))
        );
        let none = br#"{"tool_name":"run_shell_command","tool_input":{"command":"ls"},"cwd":"/p"}"#;
        assert_eq!(
            parse_payload(&none[..]),
            Some(("ls".into(), Some("/p".into())))
        );
        let other = br#"{"tool_name":"read_file","tool_input":{"command":"ls"}}"#;
        assert_eq!(parse_payload(&other[..]), None);
    }

    #[test]
    fn gemini_answer_is_a_deny_decision() {
        let mut out = Vec::new();
        let d = Denial {
            reason: "r".into(),
            replacement: "git kardwt gc --apply".into(),
        };
        assert_eq!(answer(&[d], GuardFormat::Gemini, None, &mut out), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"decision\":\"deny\",\"reason\":\"denied by git kardwt guard: r. Run instead: git kardwt gc --apply\"}\n"
        );
    }

    #[test]
    fn claude_answer_has_the_documented_shape() {
        let mut out = Vec::new();
        let d = Denial {
            reason: "r".into(),
            replacement: "git kardwt gc --apply".into(),
        };
        assert_eq!(answer(&[d], GuardFormat::Claude, None, &mut out), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"denied by git kardwt guard: r. Run instead: git kardwt gc --apply\"}}\n"
        );
    }
}
