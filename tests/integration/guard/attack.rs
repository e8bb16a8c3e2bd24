//! The guard under attack, through the real binary: a 1 MiB line in a
//! directory 300 levels deep is judged whole, the guard's own usage errors never deny, the
//! spellings an agent reaches for (`rm --rec`, `git --git-dir=…`, `command rm`,
//! `cd DIR || exit; …`) are understood, `git worktree prune` is answered with a `gc` that
//! touches only gone entries, and fuzzed arguments never panic nor deny by mistake.
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use crate::support::{mtimes, sh_quote, Output, Rng, TestRepo, BIN, COMMAND_TIMEOUT};

use crate::support::guarded::managed_repo;

/// Run `git-kardwt args…` in `dir` with `stdin` piped in, killed (and the test failed) after
/// the harness's command timeout. Does not assert.
fn run_bin(repo: &TestRepo, dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    // By name, found on PATH as a hook's `git-kardwt` is: a binary reached by absolute path
    // names that path in its suggestions.
    let mut child = repo
        .command("git-kardwt", dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    // The guard reads one JSON value and may stop early: a closed pipe is expected then.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > COMMAND_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("git-kardwt {args:?} still running after {COMMAND_TIMEOUT:?}; killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    writer.join().unwrap();
    let mut all = vec![BIN.to_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    Output {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        args: all,
    }
}

/// Claude Code's pre-tool-use payload for a Bash command.
fn payload(command: &str, cwd: &Path) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": "abc",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }))
    .unwrap()
}

/// The replacement a `--format text` deny names, or `None` when the guard was silent.
#[track_caller]
fn text_answer(out: &Output) -> Option<String> {
    if out.code == 0 && out.stdout.is_empty() && out.stderr.is_empty() {
        return None;
    }
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stdout.is_empty(), "{out}");
    assert!(
        out.stderr
            .starts_with("error: denied by git kardwt guard: ")
            && out.stderr.lines().count() == 2,
        "{out}"
    );
    let hint = out.stderr.lines().nth(1).unwrap();
    Some(
        hint.strip_prefix("hint: run instead: ")
            .expect("a hint")
            .to_owned(),
    )
}

fn remove_line(path: &Path, force: bool) -> String {
    let force = if force { " --force" } else { "" };
    format!("git kardwt remove --path {}{force}", sh_quote(path))
}

#[test]
fn a_megabyte_line_in_a_directory_300_deep_is_judged_whole() {
    let repo = managed_repo();
    let p42 = repo.card_path("42");
    let p7 = repo.card_path("7");
    let mut deep = repo.base.join("deep");
    for _ in 0..300 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("f1"), "a file among the operands\n").unwrap();
    // 1 MiB: thousands of operands that do not exist (and one that does), the managed
    // worktree last, then a chain that moves and removes the other one.
    let tail = format!(
        " {}; cd {} || exit; git worktree remove card-7",
        sh_quote(&p42),
        sh_quote(&repo.root())
    );
    let mut line = String::from("rm -rf");
    let mut i = 0;
    while line.len() + tail.len() + 12 < 1 << 20 {
        line.push_str(&format!(" f{i}"));
        i += 1;
    }
    line.push_str(&tail);
    while line.len() < 1 << 20 {
        line.insert(2, ' ');
    }
    assert_eq!(line.len(), 1 << 20);
    let before = mtimes(&repo.tmp);

    let out = run_bin(&repo, &repo.tmp, &["guard"], &payload(&line, &deep));
    out.expect_code(0);
    let reason = out.json()["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.ends_with(&format!(
            "Run instead: {} && {}",
            remove_line(&p42, true),
            remove_line(&p7, false)
        )),
        "{out}"
    );
    // The same line as text, from --cwd.
    let out = run_bin(
        &repo,
        &repo.tmp,
        &["guard", "--format", "text", "--cwd", deep.to_str().unwrap()],
        &payload(&line, Path::new("/")),
    );
    assert_eq!(
        text_answer(&out),
        Some(format!(
            "{} && {}",
            remove_line(&p42, true),
            remove_line(&p7, false)
        ))
    );
    // An argument is at most 128 KiB (Linux): the longest `--command` there is, ~20,000
    // operands, each once a path canonicalized through all 300 levels.
    let mut short = String::from("rm -rf");
    let mut i = 0;
    while short.len() + tail.len() < 120 << 10 {
        short.push_str(&format!(" f{i}"));
        i += 1;
    }
    short.push_str(&tail);
    let command = format!("--command={short}");
    let out = run_bin(&repo, &deep, &["guard", "--format", "text", &command], b"");
    assert_eq!(
        text_answer(&out),
        Some(format!(
            "{} && {}",
            remove_line(&p42, true),
            remove_line(&p7, false)
        ))
    );
    assert_eq!(mtimes(&repo.tmp), before, "the guard changed the disk");
}

/// Just under 1 MiB, so that the payload around it fits even a 1 MiB stdin cap.
const ALMOST_MIB: usize = (1 << 20) - 4096;

/// `unit` repeated to [`ALMOST_MIB`], then `tail`.
fn megabyte(unit: &str, tail: &str) -> String {
    let mut line = unit.repeat((ALMOST_MIB - tail.len()) / unit.len());
    line.push_str(tail);
    line
}

#[test]
fn megabyte_lines_of_every_shape_are_judged_whole() {
    let repo = managed_repo();
    let (p42, p7) = (repo.card_path("42"), repo.card_path("7"));
    let mut deep = repo.base.clone();
    for _ in 0..300 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    // Operands under distinct parents that do not exist, then the managed worktree.
    let mut parents = String::from("rm -rf");
    let mut i = 0;
    while parents.len() < ALMOST_MIB - 200 {
        parents.push_str(&format!(" a{i}/x"));
        i += 1;
    }
    parents.push_str(&format!(" {}", sh_quote(&p42)));
    let cases = [
        (parents, remove_line(&p42, true)),
        // Thousands of commands, each looked up in the repository (suffix `card-7`).
        (
            megabyte("git worktree remove card-7; ", "true"),
            remove_line(&p7, false),
        ),
        (
            megabyte("git worktree prune; ", "true"),
            "git kardwt gc --apply --prunable".into(),
        ),
        (
            megabyte("rm -rf ../../x; ", &format!("rm -rf {}/", sh_quote(&p7))),
            remove_line(&p7, true),
        ),
    ];
    for (line, want) in &cases {
        let out = run_bin(
            &repo,
            &repo.tmp,
            &["guard", "--format", "text"],
            &payload(line, &deep),
        );
        assert_eq!(text_answer(&out).as_ref(), Some(want), "{}", &line[..60]);
    }
}

#[test]
fn usage_errors_of_the_guard_never_deny() {
    let repo = managed_repo();
    let p42 = repo.card_path("42");
    let deny = format!("--command=rm -rf {}", sh_quote(&p42));
    // The control: understood, this command line is denied.
    let out = run_bin(
        &repo,
        &repo.base,
        &["guard", "--format", "text", &deny],
        b"",
    );
    assert_eq!(text_answer(&out), Some(remove_line(&p42, true)));

    let before = mtimes(&repo.tmp);
    let cases: Vec<Vec<&str>> = vec![
        vec!["guard", "--format", "text", &deny, "--bogus"],
        vec!["guard", "--format", "text", &deny, "--cwd", ""],
        vec!["guard", "--format", "text", &deny, "--cwd="],
        vec!["guard", "--format", "text", &deny, "-x"],
        vec!["guard", "--format", "text", &deny, "extra operand"],
        vec!["guard", "--format", "text", &deny, &deny],
        vec!["guard", "--format", "nonsense", &deny],
        vec!["guard", "--format", "text", &deny, "--command"],
        vec![
            "--rules",
            "kardbrd.yml",
            "guard",
            "--format",
            "text",
            &deny,
            "--bogus",
        ],
        vec!["--root=x", "guard", "--format=text", &deny, "--cwd", ""],
    ];
    for args in &cases {
        let out = run_bin(&repo, &repo.base, args, b"");
        assert_eq!(out.code, 0, "{out}");
        assert_eq!(out.stdout, "", "{out}");
        assert!(
            out.stderr
                .starts_with("warning: git kardwt guard judged nothing: ")
                && out.stderr.ends_with('\n')
                && out.stderr.lines().count() == 1,
            "{out}"
        );
    }
    // Through git, as a runner configures it, with a payload on stdin.
    let out = repo.kardwt(&repo.base, &["guard", "--format", "text", "--cwd", ""]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    assert!(out.stderr.starts_with("warning: "), "{out}");
    assert_eq!(mtimes(&repo.tmp), before, "a usage error changed the disk");
    // Other subcommands keep their usage errors (exit 2).
    repo.kardwt(&repo.base, &["gc", "--bogus"]).expect_code(2);
    assert!(p42.is_dir());
}

#[test]
fn abbreviations_command_git_dir_and_cd_exit_chains_are_understood() {
    let repo = managed_repo();
    let (p42, p7) = (repo.card_path("42"), repo.card_path("7"));
    let git_dir = repo.base.join(".git");
    let other = repo.tmp.join("other");
    repo.git(&repo.tmp, &["init", "--quiet", "other"]);
    let root = repo.root();
    let q = |p: &Path| sh_quote(p);
    let cases: Vec<(String, Option<String>)> = vec![
        (
            format!("rm --rec {}", q(&p42)),
            Some(remove_line(&p42, false)),
        ),
        (
            format!("rm --recurs --for {}", q(&p42)),
            Some(remove_line(&p42, true)),
        ),
        (
            format!("rm --r --f -- {}", q(&p7)),
            Some(remove_line(&p7, true)),
        ),
        // Ambiguous (`--v`: verbose or version) or given a value: rm refuses, removes nothing.
        (format!("rm --v -r {}", q(&p42)), None),
        (format!("rm --recursive=yes {}", q(&p42)), None),
        (format!("rm -r --vers {}", q(&p42)), None),
        (
            format!(
                "git --git-dir={} --work-tree={} worktree remove card-42",
                q(&git_dir),
                q(&repo.base)
            ),
            Some(remove_line(&p42, false)),
        ),
        (
            format!(
                "cd / && git --git-dir {} worktree remove --force {}",
                q(&git_dir),
                q(&p7)
            ),
            Some(remove_line(&p7, true)),
        ),
        (
            format!("git --work-tree=/x worktree remove {}", q(&p42)),
            Some(remove_line(&p42, false)),
        ),
        // Another repository: git finds no such worktree there and removes nothing.
        (
            format!(
                "git --git-dir={}/.git worktree remove {}",
                q(&other),
                q(&p42)
            ),
            None,
        ),
        (
            format!("command rm -rf {}", q(&p42)),
            Some(remove_line(&p42, true)),
        ),
        (
            format!("command -p git worktree remove {}", q(&p7)),
            Some(remove_line(&p7, false)),
        ),
        (format!("command -v rm -rf {}", q(&p42)), None),
        (
            format!("cd {} || exit; rm -rf card-42", q(&root)),
            Some(remove_line(&p42, true)),
        ),
        (
            format!("cd {} || exit 3 && git worktree remove card-7", q(&root)),
            Some(remove_line(&p7, false)),
        ),
        (format!("cd {} || echo no; rm -rf card-42", q(&root)), None),
        (
            format!("cd {}; rm -r card-7", q(&root)),
            Some(remove_line(&p7, false)),
        ),
    ];
    let mut wrong = Vec::new();
    for (line, want) in &cases {
        let out = run_bin(
            &repo,
            &repo.base,
            &["guard", "--format", "text", "--command", line],
            b"",
        );
        let got = text_answer(&out);
        if got != *want {
            wrong.push(format!("{line}\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The silent git-dir case is silent because git itself refuses it.
    let out = repo.git_output(
        &repo.base,
        &[
            "--git-dir",
            &format!("{}/.git", other.display()),
            "worktree",
            "remove",
            p42.to_str().unwrap(),
        ],
    );
    assert_ne!(out.code, 0, "{out}");
    assert!(p42.is_dir() && p7.is_dir());
}

/// Commit `<name>.txt` in `wt`, push its branch and merge it into origin's main, so a plain
/// `gc --apply` would collect the worktree.
fn merge_card(repo: &TestRepo, wt: &Path, branch: &str) {
    std::fs::write(wt.join("work.txt"), "work\n").unwrap();
    repo.git(wt, &["add", "--", "work.txt"]);
    repo.git(wt, &["commit", "--quiet", "-m", "work"]);
    repo.git(wt, &["push", "--quiet", "origin", branch]);
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    let from = format!("origin/{branch}");
    repo.git(
        &repo.scratch,
        &["merge", "--quiet", "--no-ff", "-m", "merge", &from],
    );
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
}

#[test]
fn prune_is_answered_with_a_gc_of_gone_entries_only() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let live = repo.add_card("m");
    let gone = repo.add_card("g");
    merge_card(&repo, &live, "card/m");
    let prune = |repo: &TestRepo| {
        let args = [
            "guard",
            "--format",
            "text",
            "--command",
            "git worktree prune",
        ];
        text_answer(&run_bin(repo, &repo.base, &args, b""))
    };
    // While no managed directory is gone, prune would drop nothing of kardwt's: allowed.
    assert_eq!(prune(&repo), None);
    std::fs::remove_dir_all(&gone).unwrap();
    // A plain gc would collect the live merged tree too.
    let v = repo.kardwt_ok(&repo.base, &["gc", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    let cards: Vec<&str> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["card"].as_str())
        .collect();
    assert!(cards.contains(&"m") && cards.contains(&"g"), "{v}");

    let replacement = prune(&repo).expect("prune is denied");
    assert_eq!(replacement, "git kardwt gc --apply --prunable");
    // Run the replacement exactly as the agent is told to.
    let out = repo
        .spawn("sh", &repo.base, &["-c", &replacement])
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert!(out.stdout.contains("collected card g"), "{out}");
    assert!(!out.stdout.contains("card m"), "{out}");
    assert!(
        !repo.is_registered(&gone),
        "the gone entry stays registered"
    );
    assert!(
        live.join("work.txt").is_file() && repo.is_registered(&live),
        "{out}"
    );
    assert_eq!(repo.record(&live)["state"].as_str(), Some("ready"));
    // A dry run lists only the gone entries as well (none left now).
    let out = repo.kardwt(&repo.base, &["gc", "--prunable", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["candidates"], serde_json::json!([]), "{out}");
    // The agent's prune, run again, is allowed now: it can only drop unmanaged entries.
    assert_eq!(prune(&repo), None);
}

#[test]
#[ignore = "fuzzer: make test-slow"]
fn fuzzed_arguments_never_panic_nor_deny_by_mistake() {
    let repo = managed_repo();
    let p42 = repo.card_path("42");
    let table = crate::support::guarded::examples::examples(&repo.tmp);
    let p = p42.to_str().unwrap().to_owned();
    let base = repo.base.to_str().unwrap().to_owned();
    let flags = [
        "--command",
        "--cwd",
        "--format",
        "--command=",
        "--cwd=",
        "--format=",
        "--bogus",
        "-x",
        "--",
        "-",
        "--root",
        "--rules=x",
        "--format=text",
        "--format=codex",
        "--format=claude",
    ];
    let values: Vec<String> = vec![
        "claude".into(),
        "codex".into(),
        "text".into(),
        "".into(),
        p.clone(),
        base.clone(),
        "/".into(),
        "rel/dir".into(),
        "../..".into(),
        "é\u{301}".into(),
        "\u{1}\n".into(),
        "-1".into(),
        "18446744073709551616".into(),
        "git worktree prune".into(),
        format!("rm -rf {p}"),
    ];
    let mut rng = Rng::new(0x5eed_0f9a_2d11);
    let (mut denied, mut warned) = ([0; 2], 0);
    for _ in 0..240 {
        let mut args: Vec<String> = vec!["guard".into()];
        // Half the argument lists start well formed (so denials happen), then get noise.
        if rng.chance(1, 2) {
            let format = *rng.pick(&["claude", "codex", "text"]);
            args.extend([
                "--format".into(),
                format.into(),
                "--cwd".into(),
                base.clone(),
            ]);
            args.push(format!("--command={}", rng.pick(&table).0));
        }
        for _ in 0..rng.below(if args.len() > 1 { 2 } else { 6 }) {
            if rng.chance(1, 2) {
                args.push(rng.pick(&flags).to_string());
            } else if rng.chance(1, 3) {
                args.push(format!("--command={}", rng.pick(&table).0));
            } else {
                args.push(rng.pick(&values).clone());
            }
        }
        let stdin = match rng.below(3) {
            0 => payload(&rng.pick(&table).0, &repo.base),
            1 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
            _ => Vec::new(),
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_bin(&repo, &repo.tmp, &argv, &stdin);
        assert!(!out.stderr.contains("panicked"), "{out}");
        match out.code {
            0 if out.stdout.is_empty() => {
                warned += usize::from(!out.stderr.is_empty());
                assert!(
                    out.stderr.is_empty()
                        || (out.stderr.starts_with("warning: ") && out.stderr.lines().count() == 1),
                    "{out}"
                )
            }
            0 => {
                denied[0] += 1;
                assert_eq!(
                    out.json()["hookSpecificOutput"]["permissionDecision"],
                    "deny",
                    "{out}"
                );
            }
            2 => {
                denied[1] += 1;
                assert!(
                    argv.iter().any(|a| matches!(
                        *a,
                        "text" | "codex" | "--format=text" | "--format=codex"
                    )),
                    "exit 2 without a text format: {out}"
                );
                assert!(text_answer(&out).is_some(), "{out}");
            }
            _ => panic!("unexpected exit: {out}"),
        }
    }
    assert!(
        denied[0] > 0 && denied[1] > 0 && warned > 0,
        "denied {denied:?}, warned {warned}: a path went untested"
    );
    assert!(p42.is_dir());
}
