//! The recipes shipped under `githooks/runners/` (Claude Code's and Codex's hooks, the Cursor,
//! Codex, Conductor and vibe-kanban setup and cleanup scripts): they parse, name commands that
//! exist, and work when fed the runner's documented payload or environment.
use std::path::Path;

use serde_json::json;

use crate::support::cleanup::{cleanup_lines, rules_with_cleanup, Sleeper};
use crate::support::recipes::*;
use crate::support::TestRepo;

#[test]
fn shipped_json_recipes_parse_and_name_commands_that_exist() {
    let repo = TestRepo::new();
    let claude = read_json("claude/hooks.json");
    for event in ["PreToolUse", "WorktreeCreate", "WorktreeRemove"] {
        let (_, timeout) = hook_command(&claude, event);
        assert!(
            timeout > 900,
            "{event}: timeout {timeout} is not above the prepare cap"
        );
    }
    assert_eq!(claude["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    let codex = read_json("codex/hooks.json");
    let (guard, _) = hook_command(&codex, "PreToolUse");
    assert!(guard.contains("--format codex"), "{guard}");
    for (name, hooks) in [("claude", &claude), ("codex", &codex)] {
        let (cmd, _) = hook_command(hooks, "PreToolUse");
        assert!(
            cmd.ends_with(" || exit 2"),
            "{name}: a guard that cannot run must deny: {cmd}"
        );
    }
    let cursor = read_json("cursor/worktrees.json");
    let setup = cursor["setup-worktree"].as_array().unwrap();
    assert!(!setup.is_empty());

    let mut commands: Vec<String> = ["PreToolUse", "WorktreeCreate", "WorktreeRemove"]
        .iter()
        .map(|e| hook_command(&claude, e).0)
        .collect();
    commands.push(guard);
    let (session_start, timeout) = hook_command(&codex, "SessionStart");
    assert!(timeout > 900, "SessionStart: timeout {timeout}");
    commands.push(session_start);
    commands.extend(setup.iter().map(|c| c.as_str().unwrap().to_owned()));
    for line in commands {
        // `|| exit 2`: a guard whose binary cannot run denies.
        for part in line.split("||").filter(|p| p.trim() != "exit 2") {
            let words: Vec<&str> = part
                .split_whitespace()
                .take_while(|w| !w.starts_with('>') && !w.starts_with("2>"))
                .collect();
            assert_eq!(words[..2], ["git", "kardwt"], "{line}");
            let mut args = words[2..].to_vec();
            args.push("--help");
            let out = repo.kardwt(&repo.base, &args);
            assert_eq!(out.code, 0, "`{part}` does not name a command:\n{out}");
        }
    }
    // The guard as Claude Code and Codex call it, with a pre-tool-use payload.
    let payload =
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": repo.base}).to_string();
    for event in [("claude", &claude), ("codex", &codex)] {
        let (cmd, _) = hook_command(event.1, "PreToolUse");
        let out = run_sh(&repo, &repo.base, &cmd, &payload, &[]);
        out.expect_code(0);
        assert!(out.stdout.trim().is_empty(), "{}: {out}", event.0);
    }
}

/// `bash -n` on every shipped script.
#[test]
fn shipped_scripts_parse() {
    let repo = TestRepo::new();
    let mut n = 0;
    for runner in std::fs::read_dir(runners_dir()).unwrap() {
        let runner = runner.unwrap().path();
        if !runner.is_dir() {
            continue; // TESTED and other notes beside the runners' directories
        }
        for f in std::fs::read_dir(runner).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "sh") {
                n += 1;
                let out = run_sh(
                    &repo,
                    &repo.base,
                    &format!("bash -n '{}'", f.display()),
                    "",
                    &[],
                );
                out.expect_code(0);
                let mode =
                    std::os::unix::fs::PermissionsExt::mode(&f.metadata().unwrap().permissions());
                assert!(mode & 0o111 != 0, "{} is not executable", f.display());
            }
        }
    }
    assert_eq!(
        n, 6,
        "setup and cleanup/archive for codex, conductor, vibe-kanban"
    );
}

fn script(rel: &str) -> String {
    format!("bash '{}'", runners_dir().join(rel).display())
}

#[test]
fn codex_setup_prepares_and_cleanup_releases_with_codex_variables() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    // The Codex app creates the worktree itself (no kardwt shim here).
    let wt = repo.sibling("codex-wt");
    repo.add_unhooked_worktree(wt.to_str().unwrap(), "codex/task");
    let env: [(&str, &Path); 2] = [
        ("CODEX_WORKTREE_PATH", &wt),
        ("CODEX_SOURCE_TREE_PATH", &repo.base),
    ];

    let out = run_sh(&repo, &wt, &script("codex/setup.sh"), "", &env);
    out.expect_code(0);
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);
    assert_eq!(repo.prepare_runs().len(), 1, "{out}");
    // Run again: already ready, nothing prepared again.
    run_sh(&repo, &wt, &script("codex/setup.sh"), "", &env).expect_code(0);
    assert_eq!(repo.prepare_runs().len(), 1);

    let mut sleeper = Sleeper::start(&repo, &wt);
    let out = run_sh(&repo, &repo.base, &script("codex/cleanup.sh"), "", &env);
    out.expect_code(0);
    assert!(gone(&mut sleeper), "{out}");
    assert!(
        wt.join("README.md").exists(),
        "the tree is Codex's to delete"
    );
    assert_eq!(state(&repo, &wt), "released");
    assert_eq!(cleanup_lines(&repo).len(), 2, "{:?}", cleanup_lines(&repo));
}

/// Every setup and cleanup script works from inside the worktree with none of the
/// runner's variables set (`$PWD`).
#[test]
fn recipe_scripts_work_from_inside_the_tree_without_the_runners_variables() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    for (runner, setup, release) in [
        ("codex", "codex/setup.sh", "codex/cleanup.sh"),
        ("conductor", "conductor/setup.sh", "conductor/archive.sh"),
        (
            "vibe-kanban",
            "vibe-kanban/setup.sh",
            "vibe-kanban/archive.sh",
        ),
    ] {
        let wt = repo.sibling(&format!("{runner}-bare"));
        repo.add_unhooked_worktree(wt.to_str().unwrap(), &format!("{runner}/bare"));
        let out = run_sh(&repo, &wt, &script(setup), "", &[]);
        out.expect_code(0);
        repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
            .expect_code(0);
        let out = run_sh(&repo, &wt, &script(release), "", &[]);
        out.expect_code(0);
        assert_eq!(state(&repo, &wt), "released", "{runner}: {out}");
        assert!(wt.join("README.md").exists(), "{runner}: the tree is kept");
    }
}

#[test]
fn cursor_setup_worktree_commands_prepare_the_new_tree() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.sibling("cursor-wt");
    repo.add_unhooked_worktree(wt.to_str().unwrap(), "cursor/task");
    let cursor = read_json("cursor/worktrees.json");
    for cmd in cursor["setup-worktree"].as_array().unwrap() {
        let out = run_sh(
            &repo,
            &wt,
            cmd.as_str().unwrap(),
            "",
            &[("ROOT_WORKTREE_PATH", &repo.base)],
        );
        out.expect_code(0);
    }
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);
}

#[test]
fn conductor_setup_then_archive_releases_before_conductor_deletes() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let wt = repo.sibling("conductor-ws");
    repo.add_unhooked_worktree(wt.to_str().unwrap(), "conductor/ws");
    let env: [(&str, &Path); 2] = [
        ("CONDUCTOR_WORKSPACE_PATH", &wt),
        ("CONDUCTOR_ROOT_PATH", &repo.base),
    ];
    run_sh(&repo, &wt, &script("conductor/setup.sh"), "", &env).expect_code(0);
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);

    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let out = run_sh(&repo, &wt, &script("conductor/archive.sh"), "", &env);
    out.expect_code(0);
    assert!(gone(&mut sleeper), "{out}");
    assert_eq!(state(&repo, &wt), "released");
    // Conductor then deletes the directory; gc --prunable clears the registration.
    std::fs::remove_dir_all(&wt).unwrap();
    repo.kardwt_ok(&repo.base, &["gc", "--prunable", "--apply"]);
    assert!(!repo.is_registered(&wt));
}

#[test]
fn vibe_kanban_worktree_add_setup_and_archive() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    repo.install_hooks();
    // vibe-kanban creates its worktrees with plain git worktree add: the shim prepares it.
    let wt = repo.sibling("vk-task");
    repo.worktree_add(&[wt.to_str().unwrap(), "-b", "vk/task"])
        .expect_code(0);
    assert_eq!(repo.prepare_runs().len(), 1);
    let out = run_sh(&repo, &wt, &script("vibe-kanban/setup.sh"), "", &[]);
    out.expect_code(0);
    assert!(out.stdout.contains("ready"), "{out}");
    assert_eq!(
        repo.prepare_runs().len(),
        1,
        "setup prepared a ready tree again"
    );

    let mut sleeper = Sleeper::start(&repo, &wt);
    let out = run_sh(&repo, &wt, &script("vibe-kanban/archive.sh"), "", &[]);
    out.expect_code(0);
    assert!(gone(&mut sleeper), "{out}");
    assert_eq!(state(&repo, &wt), "released");
    assert!(wt.exists());
}
