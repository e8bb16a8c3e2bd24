//! What `git kardwt runner install` writes into a repository, pure: kardwt's
//! entries for each runner's own configuration, merged into what the file already holds, and
//! the user's own git alias that reaches this machine's binary.
//!
//! Invariants: another tool's entries are never changed or dropped (only entries that are
//! kardwt's own, recognised by the command they run, are replaced); merging what was merged
//! changes nothing (the result is `None`, so nothing is written); what goes into a committed
//! file names no path of one machine (`git kardwt …`, found by git on the PATH or through the
//! user's alias), and a guard whose binary cannot run denies (`|| exit 2`).
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::guard::shell_quote;

/// Claude Code's default hook timeout (600 s) is below kardwt's default prepare cap (900 s).
pub const HOOK_TIMEOUT: u64 = 960;

/// How every committed entry names kardwt: through git, which finds `git-kardwt` on the PATH
/// the runner gives its hooks, or, where that PATH lacks it, through the user's own
/// `alias.kardwt` ([`user_alias`]). Never a path of one machine.
const PROGRAM: &str = "git kardwt";

/// One hook of a Claude-style `hooks` table: the event, its matcher, the command, and what in a
/// command marks an entry as this one of kardwt's (so a reinstall replaces it in place).
pub struct Hook {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub command: String,
    pub sign: &'static str,
}

/// What one file should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Relative to the top of the worktree.
    pub rel: &'static str,
    /// The new content, or `None` when the file already holds it.
    pub content: Option<String>,
    pub executable: bool,
}

/// The guard as a hook command: a binary that cannot run (missing, not executable, crashed)
/// exits non-zero, which both clients would read as "go ahead"; `|| exit 2` makes it a deny.
fn guard_command(format: &str) -> String {
    format!("{PROGRAM} guard --format {format} || exit 2")
}

/// Claude Code's hooks: the PreToolUse guard, WorktreeCreate and WorktreeRemove.
pub fn claude_hooks() -> Vec<Hook> {
    vec![
        Hook {
            event: "PreToolUse",
            matcher: Some("Bash"),
            command: guard_command("claude"),
            sign: " guard --format claude",
        },
        Hook {
            event: "WorktreeCreate",
            matcher: None,
            command: format!("{PROGRAM} runner claude worktree-create"),
            sign: " runner claude worktree-create",
        },
        Hook {
            event: "WorktreeRemove",
            matcher: None,
            command: format!("{PROGRAM} runner claude worktree-remove"),
            sign: " runner claude worktree-remove",
        },
    ]
}

/// Codex's hooks: the PreToolUse guard, and SessionStart, which prepares the tree of a
/// `codex exec --worktree` session (Codex fires no git hook there and runs no setup script).
pub fn codex_hooks() -> Vec<Hook> {
    vec![
        Hook {
            event: "PreToolUse",
            matcher: Some("Bash"),
            command: guard_command("codex"),
            sign: " guard --format codex",
        },
        Hook {
            event: "SessionStart",
            matcher: None,
            command: format!("{PROGRAM} runner codex session-start"),
            sign: " runner codex session-start",
        },
    ]
}

/// Is `command` kardwt's own entry of the kind `sign` names?
fn is_ours(command: &str, sign: &str) -> bool {
    command.contains("kardwt") && command.contains(sign)
}

/// Why a runner's configuration file cannot be merged: kardwt writes nothing then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("{file} is not JSON: {why}")]
    NotJson { file: &'static str, why: String },
    #[error("{file} does not hold a JSON object")]
    NotObject { file: &'static str },
    /// A key kardwt writes under holds another kind of value (`at` is its JSON path).
    #[error("{file}: {at} is not {kind}")]
    Shape {
        file: &'static str,
        at: String,
        kind: &'static str,
    },
    /// Someone else's script stands where kardwt's would go.
    #[error("{file} already runs its own {key} script ({found:?}); add `{command}` to it by hand")]
    Taken {
        file: &'static str,
        key: &'static str,
        found: String,
        command: String,
    },
}

/// Parse a JSON configuration file's text (`None`: no file) into its top-level object.
fn parse_object(
    existing: Option<&str>,
    file: &'static str,
) -> Result<Map<String, Value>, MergeError> {
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(MergeError::NotObject { file }),
        Err(e) => Err(MergeError::NotJson {
            file,
            why: e.to_string(),
        }),
    }
}

/// A key of `file` at `at` that is not the `kind` kardwt writes there.
fn shape(file: &'static str, at: &str, kind: &'static str) -> MergeError {
    MergeError::Shape {
        file,
        at: at.to_owned(),
        kind,
    }
}

/// The new text when `after` differs from what `existing` held, else `None`.
fn changed(
    existing: Option<&str>,
    before: &Map<String, Value>,
    after: Map<String, Value>,
) -> Option<String> {
    let unchanged = existing.is_some() && *before == after;
    (!unchanged).then(|| {
        let mut text = serde_json::to_string_pretty(&Value::Object(after)).unwrap_or_default();
        text.push('\n');
        text
    })
}

/// Merge `hooks` into a Claude-style settings file (`{"hooks": {"<Event>": [{"matcher": …,
/// "hooks": [{"type": "command", "command": …}]}]}}`): kardwt's own entry of each kind is
/// replaced where it stands (its duplicates dropped), else a group is appended; every other
/// key, group and hook is kept as it is. `Ok(None)`: nothing to change.
pub fn merge_hooks(
    existing: Option<&str>,
    file: &'static str,
    hooks: &[Hook],
) -> Result<Option<String>, MergeError> {
    let before = parse_object(existing, file)?;
    let mut root = before.clone();
    let table = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| shape(file, "\"hooks\"", "an object"))?;
    for hook in hooks {
        let entry = json!({"type": "command", "command": hook.command, "timeout": HOOK_TIMEOUT});
        let groups = table
            .entry(hook.event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| shape(file, &format!("\"hooks\".\"{}\"", hook.event), "an array"))?;
        let mut placed = false;
        for group in groups.iter_mut() {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                continue;
            };
            let before_len = list.len();
            list.retain_mut(|h| {
                let ours = h
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| is_ours(c, hook.sign));
                if !ours {
                    return true;
                }
                if placed {
                    return false; // a second copy of ours
                }
                // Keep a timeout someone raised above ours.
                let timeout = h.get("timeout").and_then(Value::as_u64).unwrap_or(0);
                let mut mine = entry.clone();
                if timeout > HOOK_TIMEOUT {
                    mine["timeout"] = json!(timeout);
                }
                *h = mine;
                placed = true;
                true
            });
            if list.is_empty() && before_len > 0 {
                group["hooks"] = Value::Null; // marked: only our duplicate was in it
            }
        }
        groups.retain(|g| !g.get("hooks").is_some_and(Value::is_null));
        if !placed {
            let mut group = Map::new();
            if let Some(m) = hook.matcher {
                group.insert("matcher".into(), json!(m));
            }
            group.insert("hooks".into(), json!([entry]));
            groups.push(Value::Object(group));
        }
    }
    Ok(changed(existing, &before, root))
}

/// Commands of other tools for `event` in a Claude-style settings file (to warn where two
/// hooks would both answer an event that takes one answer).
pub fn other_hooks(text: &str, event: &str, sign: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(groups) = v["hooks"][event].as_array() else {
        return Vec::new();
    };
    groups
        .iter()
        .filter_map(|g| g["hooks"].as_array())
        .flatten()
        .filter_map(|h| h["command"].as_str())
        .filter(|c| !is_ours(c, sign))
        .map(str::to_owned)
        .collect()
}

/// Cursor's `.cursor/worktrees.json`: kardwt's `setup-worktree` command, replacing an older
/// one of kardwt's, after the commands already there.
pub fn merge_cursor(existing: Option<&str>) -> Result<Option<String>, MergeError> {
    let file = ".cursor/worktrees.json";
    let before = parse_object(existing, file)?;
    let mut root = before.clone();
    let command =
        format!("{PROGRAM} verify --path . >/dev/null 2>&1 || {PROGRAM} prepare --path .");
    let list = root
        .entry("setup-worktree")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| shape(file, "\"setup-worktree\"", "an array"))?;
    let ours = |v: &Value| v.as_str().is_some_and(|c| is_ours(c, " prepare --path"));
    match list.iter().position(ours) {
        Some(i) => {
            list[i] = json!(command);
            let mut seen = 0;
            list.retain(|v| {
                !(ours(v) && {
                    seen += 1;
                    seen > 1
                })
            });
        }
        None => list.push(json!(command)),
    }
    Ok(changed(existing, &before, root))
}

/// Conductor's `conductor.json`: `scripts.setup` and `scripts.archive` run kardwt's scripts.
/// A script someone else set is never replaced: that is an error naming it.
pub fn merge_conductor(existing: Option<&str>) -> Result<Option<String>, MergeError> {
    let file = "conductor.json";
    let before = parse_object(existing, file)?;
    let mut root = before.clone();
    let scripts = root
        .entry("scripts")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| shape(file, "\"scripts\"", "an object"))?;
    for (key, script) in [
        ("setup", ".kardwt/conductor/setup.sh"),
        ("archive", ".kardwt/conductor/archive.sh"),
    ] {
        let command = format!("bash {script}");
        match scripts.get(key).and_then(Value::as_str) {
            None => {}
            Some(c) if c.contains(script) || c.trim().is_empty() => {}
            Some(c) => {
                return Err(MergeError::Taken {
                    file,
                    key,
                    found: c.to_owned(),
                    command,
                })
            }
        }
        scripts.insert(key.into(), json!(command));
    }
    Ok(changed(existing, &before, root))
}

/// Is `text` (a file found where a script goes) one of kardwt's recipe scripts (the shipped
/// one, or an older install that named one machine's binary)?
pub fn is_our_script(text: &str) -> bool {
    text.contains("# kardwt-binary")
}

/// The start of the user's `alias.kardwt` as kardwt writes it (how it knows its own).
const ALIAS_SIGN: &str = "!f() { cd \"${GIT_PREFIX:-.}\" && exec ";

/// The value of the user's `alias.kardwt` that reaches `exe`: git runs an alias only where no
/// `git-kardwt` is found on the PATH or in its exec path, so a binary on the PATH always wins
/// and the alias serves the runners that start hooks with a PATH of their own (an app started
/// from the desktop). A shell alias runs at the top of the worktree; `GIT_PREFIX` takes it back
/// to the directory git was called in.
pub fn user_alias(exe: &Path) -> String {
    format!(
        "{ALIAS_SIGN}{} \"$@\"; }}; f",
        shell_quote(&exe.to_string_lossy())
    )
}

/// Is `value` (the user's `alias.kardwt`) one that kardwt wrote?
pub fn is_our_alias(value: &str) -> bool {
    value.starts_with(ALIAS_SIGN)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: &str = "/opt/kardwt bin/git-kardwt";

    #[test]
    fn hooks_merge_beside_others_and_twice_is_once() {
        let theirs = r#"{"permissions":{"allow":["Bash(ls)"]},"hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"lint"}]}]}}"#;
        let once = merge_hooks(Some(theirs), "s", &claude_hooks())
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint");
        assert_eq!(
            v["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
            "git kardwt guard --format claude || exit 2"
        );
        assert_eq!(
            merge_hooks(Some(&once), "s", &claude_hooks()).unwrap(),
            None
        );
        // An older entry of ours that named one machine's binary is replaced in place.
        let older = once.replace("\"git kardwt ", "\"'/opt/kardwt bin/git-kardwt' ");
        assert_ne!(older, once);
        let moved = merge_hooks(Some(&older), "s", &claude_hooks())
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&moved).unwrap();
        assert_eq!(v["hooks"]["WorktreeCreate"].as_array().unwrap().len(), 1);
        assert!(!moved.contains("/opt/"), "{moved}");
        assert_eq!(moved, once);
        assert!(merge_hooks(Some("[1]"), "s", &claude_hooks()).is_err());
        assert!(merge_hooks(Some(r#"{"hooks":3}"#), "s", &claude_hooks()).is_err());
    }

    #[test]
    fn cursor_and_conductor_merge_without_clobbering() {
        let once = merge_cursor(Some(r#"{"setup-worktree":["npm ci"]}"#))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["setup-worktree"][0], "npm ci");
        assert_eq!(v["setup-worktree"].as_array().unwrap().len(), 2);
        assert_eq!(merge_cursor(Some(&once)).unwrap(), None);
        assert!(!once.contains("git-kardwt"), "{once}");

        let once = merge_conductor(Some(r#"{"scripts":{"run":"npm run dev"}}"#))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["scripts"]["run"], "npm run dev");
        assert_eq!(v["scripts"]["setup"], "bash .kardwt/conductor/setup.sh");
        assert_eq!(merge_conductor(Some(&once)).unwrap(), None);
        assert!(merge_conductor(Some(r#"{"scripts":{"setup":"npm i"}}"#)).is_err());
    }

    #[test]
    fn the_user_alias_reaches_the_binary_and_is_known_as_ours() {
        let alias = user_alias(Path::new(EXE));
        assert_eq!(
            alias,
            "!f() { cd \"${GIT_PREFIX:-.}\" && exec '/opt/kardwt bin/git-kardwt' \"$@\"; }; f"
        );
        assert!(is_our_alias(&alias));
        assert!(!is_our_alias("!git-kardwt"));
        assert!(!is_our_alias("status -sb"));
    }
}
