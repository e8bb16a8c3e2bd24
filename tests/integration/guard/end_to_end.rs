//! The agent command guard end to end: the shared examples table against a real
//! repository whose worktrees kardwt manages, the exact answer of each `--format` to real
//! Claude Code payloads on stdin, and a fuzz run proving the binary never panics and prints
//! either nothing or one JSON object. The guard is read-only: nothing under the common dir moves.
use std::path::Path;

use crate::support::guarded::*;
use crate::support::{mtimes, sh_quote, Rng, TestRepo, BIN, COMMAND_TIMEOUT};

#[test]
fn examples_table_against_real_managed_worktrees() {
    let repo = managed_repo();
    let before = mtimes(&repo.common_dir());
    let table = examples::examples(&repo.tmp);
    assert!(table.len() >= 50, "{}", table.len());
    let mut wrong = Vec::new();
    for (line, want) in &table {
        let out = repo.kardwt(
            &repo.base,
            &["guard", "--format", "text", &format!("--command={line}")],
        );
        let ok = if want.is_empty() {
            out.code == 0 && out.stdout.is_empty() && out.stderr.is_empty()
        } else {
            out.code == 2
                && out.stdout.is_empty()
                && out
                    .stderr
                    .starts_with("error: denied by git kardwt guard: ")
                && out
                    .stderr
                    .ends_with(&format!("\nhint: run instead: {want}\n"))
                && out.stderr.lines().count() == 2
        };
        if !ok {
            wrong.push(format!("want {want:?}\n{out}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    assert_eq!(
        mtimes(&repo.common_dir()),
        before,
        "the guard wrote under the common dir"
    );
    assert!(repo.card_path("42").is_dir() && repo.card_path("7").is_dir());
}

#[test]
fn claude_payloads_get_the_exact_answer_of_each_format() {
    let repo = managed_repo();
    let wt = repo.card_path("42");
    let quoted = format!("'{}'", wt.display());
    // Judged from the payload's cwd (the base), not from where the binary runs.
    let deny = payload("Bash", "git worktree remove --force card-42", &repo.base);
    let reason = format!(
        "denied by git kardwt guard: `git worktree remove` of {} skips kardwt's release steps \
         (its processes, cleanup hook and ports are left behind)",
        wt.display()
    );
    let replacement = format!("git kardwt remove --path {quoted} --force");

    for args in [&[][..], &["--format", "claude"][..]] {
        let out = guard(&repo, &repo.tmp, args, &deny);
        out.expect_code(0);
        let want = serde_json::json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": format!("{reason}. Run instead: {replacement}"),
        }});
        assert_eq!(out.json(), want, "{out}");
        assert!(
            out.stdout.starts_with(
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":""#
            ) && out.stdout.ends_with("\"}}\n")
                && out.stdout.lines().count() == 1,
            "{out}"
        );
        assert_eq!(out.stderr, "", "{out}");
    }
    for format in ["codex", "text"] {
        let out = guard(&repo, &repo.tmp, &["--format", format], &deny);
        out.expect_code(2);
        assert_eq!(out.stdout, "", "{out}");
        assert_eq!(
            out.stderr,
            format!("error: {reason}\nhint: run instead: {replacement}\n"),
            "{out}"
        );
    }

    // Prune in a repository with managed worktrees.
    let prune = payload("Bash", "git worktree prune", &repo.base);
    let out = guard(&repo, &repo.tmp, &["--format", "text"], &prune);
    out.expect_code(2);
    assert!(
        out.stderr
            .ends_with("\nhint: run instead: git kardwt gc --apply --prunable\n"),
        "{out}"
    );

    // --cwd wins over the payload's cwd: from the worktree root, `card-42` is the same path.
    let out = guard(
        &repo,
        &repo.tmp,
        &["--cwd", repo.root().to_str().unwrap()],
        &payload("Bash", "rm -rf card-42", Path::new("/")),
    );
    out.expect_code(0);
    assert!(
        out.json()["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .ends_with(&format!(
                "Run instead: git kardwt remove --path {quoted} --force"
            )),
        "{out}"
    );

    // Silence, in every format: another tool, a harmless command, garbage, an oversized payload.
    let huge = payload("Bash", &"x".repeat(2 << 20), &repo.base);
    let silent: Vec<Vec<u8>> = vec![
        payload("Write", "git worktree remove --force card-42", &repo.base),
        payload("Bash", "git worktree list", &repo.base),
        payload("Bash", "git worktree remove card-42", Path::new("/")),
        br#"{"tool_name":"Bash","tool_input":{"command":["git","worktree","prune"]}}"#.to_vec(),
        b"not json at all".to_vec(),
        b"\xff\xfe\x00garbage".to_vec(),
        Vec::new(),
        huge,
    ];
    for format in ["claude", "codex", "text"] {
        for input in &silent {
            let out = guard(&repo, &repo.base, &["--format", format], input);
            out.expect_code(0);
            assert_eq!(
                (out.stdout.as_str(), out.stderr.as_str()),
                ("", ""),
                "{out}"
            );
        }
    }
    assert!(wt.is_dir(), "the guard never runs the command");
}

/// The replacement a `--format text` deny of `line` (judged from `dir`) names, or `None` for
/// silence; `path` replaces the guard's PATH when given.
#[track_caller]
fn answer_text(
    repo: &TestRepo,
    dir: &Path,
    line: &str,
    path: Option<&std::ffi::OsStr>,
) -> Option<String> {
    let mut cmd = repo.command(BIN, dir);
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let out = cmd
        .args(["guard", "--format", "text", "--command", line])
        .output()
        .unwrap();
    let (code, stderr) = (out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "{line}: {stderr}");
    match code {
        Some(0) if stderr.is_empty() => None,
        Some(2) => {
            let hint = stderr.lines().nth(1).unwrap_or_default();
            // Started by absolute path, the guard names that path in its suggestion (tested in
            // runner/install.rs); this table compares the commands.
            let hint = hint.strip_prefix("hint: run instead: ").unwrap_or(hint);
            let bin = git_kardwt::ground::quote::sh_path(Path::new(BIN));
            Some(hint.replace(&format!("{bin} "), "git kardwt "))
        }
        _ => panic!("{line}: exit {code:?}: {stderr}"),
    }
}

#[test]
fn aliases_are_judged_as_git_expands_them_and_pushd_like_cd() {
    // `managed_repo` ran `git config alias.rmwt 'worktree remove'` and the other aliases.
    let repo = managed_repo();
    let (p42, p7, root) = (repo.card_path("42"), repo.card_path("7"), repo.root());
    let (q42, q7) = (sh_quote(&p42), sh_quote(&p7));
    let remove = |q: &str, force: &str| Some(format!("git kardwt remove --path {q}{force}"));
    // A program `git-wtgone` on the PATH, and an alias of the same name.
    let bin = repo.tmp.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let program = bin.join("git-wtgone");
    std::fs::write(&program, "#!/bin/sh\necho program\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&repo.base, &["config", "alias.wtgone", "worktree remove"]);
    // The PATH the harness gives, with `bin` first.
    let mut dirs = vec![bin.clone(), Path::new(BIN).parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let with_bin = std::env::join_paths(dirs).unwrap();

    let cases: Vec<(&Path, String, Option<&std::ffi::OsStr>, Option<String>)> = vec![
        (
            &repo.base,
            format!("git rmwt {q42}"),
            None,
            remove(&q42, ""),
        ),
        (
            &repo.base,
            "git rmwt --force card-7".into(),
            None,
            remove(&q7, " --force"),
        ),
        // From inside another worktree: the same (shared) config.
        (&p7, "git rmwt ../card-42".into(), None, remove(&q42, "")),
        (
            &repo.base,
            format!("git -c alias.wr='worktree remove' wr {q42}"),
            None,
            remove(&q42, ""),
        ),
        (
            &repo.base,
            format!("git -c alias.rmwt=status rmwt {q42}"),
            None,
            None,
        ),
        (&repo.base, format!("git shrm {q42}"), None, None),
        (&repo.base, format!("git loopa {q42}"), None, None),
        (&repo.base, format!("git st {q42}"), None, None),
        (&repo.base, "git st".into(), None, None),
        (&repo.base, format!("git status {q42}"), None, None),
        (
            &repo.base,
            format!("git wtgone {q42}"),
            None,
            remove(&q42, ""),
        ),
        (
            &repo.base,
            format!("git wtgone {q42}"),
            Some(&with_bin),
            None,
        ),
        (
            &repo.base,
            format!("pushd {} && rm -rf card-42", sh_quote(&root)),
            None,
            remove(&q42, " --force"),
        ),
        (
            &repo.base,
            format!(
                "cd {} && pushd /tmp && popd && rm -r card-7",
                sh_quote(&root)
            ),
            None,
            remove(&q7, ""),
        ),
        (
            &repo.base,
            format!("pushd {} && popd && rm -rf card-42", sh_quote(&root)),
            None,
            None,
        ),
        (&root, "pushd && rm -rf card-42".into(), None, None),
        (&root, "pushd +1 && rm -rf card-42".into(), None, None),
    ];
    let mut wrong = Vec::new();
    for (dir, line, path, want) in &cases {
        let got = answer_text(&repo, dir, line, *path);
        if got != *want {
            wrong.push(format!(
                "{line} (in {})\n  want {want:?}\n  got  {got:?}",
                dir.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // git agrees: a loop and a value naming itself are refused, an alias hiding `status` is
    // ignored, a program on the PATH runs instead of the alias; nothing was removed.
    let p = p42.to_str().unwrap();
    for alias in ["loopa", "itself", "optwt", "quote"] {
        let out = repo.git_output(&repo.base, &[alias, p]);
        assert_ne!(out.code, 0, "{out}");
    }
    repo.git(&repo.base, &["status", "--short"]);
    let out = repo
        .command("git", &repo.base)
        .env("PATH", &with_bin)
        .args(["wtgone", p])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "program\n");
    assert!(p42.is_dir() && p7.is_dir());
    // And the denied alias removes the worktree, as its expansion would.
    repo.git(&repo.base, &["rmwt", p]);
    assert!(!p42.exists());
}

#[test]
#[ignore = "fuzzer: make test-slow"]
fn fuzzed_input_never_panics_and_prints_json_or_nothing() {
    let repo = managed_repo();
    let wt = repo.card_path("42");
    let p = wt.to_str().unwrap();
    let pieces = [
        "git",
        "rm",
        "-rf",
        "-r",
        "worktree",
        "remove",
        "prune",
        "cd",
        "-C",
        " ",
        " ",
        "\n",
        "'",
        "\"",
        "\\",
        "$",
        "(",
        ")",
        "{",
        "}",
        "`",
        ";",
        "&",
        "|",
        "<",
        ">",
        "#",
        "~",
        "*",
        "=",
        "GIT_DIR=x",
        p,
        "card-42",
        "..",
        "/",
        "--",
        "2>&1",
        "é",
        "-f",
        "&&",
        "||",
        "<<",
        "sudo",
        "--force",
        "../base.worktrees",
    ];
    let table = examples::examples(&repo.tmp);
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let started = std::time::Instant::now();
    let mut denied = 0;
    for i in 0..300 {
        // Half the lines are mutations of the examples (so denials happen), half are noise.
        let mut line = if rng.below(2) == 0 {
            table[rng.below(table.len())].0.clone()
        } else {
            String::new()
        };
        for _ in 0..rng.below(if line.is_empty() { 12 } else { 3 }) {
            let piece = if rng.below(6) == 0 {
                char::from_u32(1 + rng.below(0x2fff) as u32)
                    .unwrap_or('?')
                    .to_string()
            } else {
                pieces[rng.below(pieces.len())].to_owned()
            };
            let at = line.char_indices().map(|(i, _)| i).chain([line.len()]);
            let at: Vec<usize> = at.collect();
            line.insert_str(at[rng.below(at.len())], &piece);
        }
        let out = match i % 3 {
            0 => guard(&repo, &repo.base, &[&format!("--command={line}")], b""),
            1 => guard(&repo, &repo.base, &[], &payload("Bash", &line, &repo.base)),
            _ => {
                let bytes: Vec<u8> = (0..rng.below(200)).map(|_| rng.next() as u8).collect();
                guard(&repo, &repo.base, &[], &bytes)
            }
        };
        assert_eq!(out.code, 0, "input {line:?}:\n{out}");
        assert!(!out.stderr.contains("panicked"), "input {line:?}:\n{out}");
        if !out.stdout.is_empty() {
            denied += 1;
            let v: serde_json::Value = serde_json::from_str(&out.stdout)
                .unwrap_or_else(|e| panic!("input {line:?}: not JSON ({e}):\n{out}"));
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "deny",
                "{out}"
            );
        }
    }
    assert!(
        started.elapsed() < COMMAND_TIMEOUT,
        "fuzzing took {:?}",
        started.elapsed()
    );
    assert!(wt.is_dir());
    assert!(
        denied > 0,
        "no fuzzed input was denied: the JSON path went untested"
    );
}

/// Fail closed: a Claude deny that cannot be written to stdout (`/dev/full`) is
/// exit 2 with the reason on stderr, which Claude Code also takes as a deny; an allowed command
/// stays exit 0.
#[test]
fn a_deny_that_cannot_reach_stdout_still_blocks() {
    use std::io::Write;
    let repo = managed_repo();
    let run = |command: &str| {
        let mut child = repo
            .command("git-kardwt", &repo.tmp)
            .arg("guard")
            .stdin(std::process::Stdio::piped())
            .stdout(
                std::fs::File::options()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let input = payload("Bash", command, &repo.base);
        child.stdin.take().unwrap().write_all(&input).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run("git worktree remove --force card-42");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("denied by git kardwt guard: `git worktree remove`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Run instead: git kardwt remove"),
        "{stderr}"
    );
    let out = run("ls -la");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
