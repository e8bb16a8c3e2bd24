//! `git kardwt runner codex session-start`: Codex's SessionStart hook prepares the
//! tree of a `codex exec --worktree` session. The trees here are made the way Codex CLI 0.169.0
//! makes them (seen through a `git` wrapper in `make test-runners`): `git -c
//! core.hooksPath=/dev/null worktree add --detach --no-checkout $CODEX_HOME/worktrees/<4 hex>/
//! <repo> <commit>`, then `git reset --hard <commit>` inside, so no hook of kardwt's runs; the
//! payload is the one Codex sends (its schema `session-start.command.input`).
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::recipes::{hook_command, read_json, run_sh};
use crate::support::{pinned, pinned_case, Output, TestRepo};

/// Codex's SessionStart payload for a session in `cwd`.
fn payload(cwd: &Path) -> String {
    json!({
        "session_id": "01a23243-97d8-76f0-865b-d432a817b934",
        "transcript_path": null,
        "cwd": cwd,
        "hook_event_name": "SessionStart",
        "model": "gpt-5.1-codex",
        "permission_mode": "bypassPermissions",
        "source": "startup",
    })
    .to_string()
}

/// A tree made as `codex exec --worktree` makes it, under `<codex_home>/worktrees/5447/`.
fn codex_tree(repo: &TestRepo, codex_home: &Path) -> PathBuf {
    let wt = codex_home.join("worktrees/5447/base");
    std::fs::create_dir_all(wt.parent().unwrap()).unwrap();
    let head = repo.git(&repo.base, &["rev-parse", "HEAD"]);
    let off = ["-c", "core.hooksPath=/dev/null"];
    let wt_str = wt.to_str().unwrap();
    let mut add = off.to_vec();
    add.extend([
        "worktree",
        "add",
        "--detach",
        "--no-checkout",
        wt_str,
        head.trim(),
    ]);
    repo.git(&repo.base, &add);
    let mut reset = off.to_vec();
    reset.extend([
        "--work-tree=.",
        "reset",
        "--hard",
        "--no-recurse-submodules",
        head.trim(),
    ]);
    repo.git(&wt, &reset);
    wt
}

/// The shipped recipe's SessionStart command, run in `dir` with `payload` as Codex runs it.
fn session_start(repo: &TestRepo, dir: &Path, payload: &str, codex_home: &Path) -> Output {
    let (cmd, _) = hook_command(&read_json("codex/hooks.json"), "SessionStart");
    run_sh(repo, dir, &cmd, payload, &[("CODEX_HOME", codex_home)])
}

/// `git kardwt list --json`'s row for `wt`.
fn row(repo: &TestRepo, wt: &Path) -> Value {
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    let canonical = wt.canonicalize().unwrap();
    out.json()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| Path::new(r["path"].as_str().unwrap()) == canonical)
        .cloned()
        .unwrap_or_else(|| panic!("{} is not listed:\n{out}", wt.display()))
}

/// Fails on the code before it: `runner codex` was no command (exit 2), so the tree stayed
/// `unseeded`.
#[test]
fn codex_session_start_prepares_a_codex_worktree_once_and_leaves_the_rest_alone() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    let codex_home = repo.tmp.join("codex-home");
    let wt = codex_tree(&repo, &codex_home);
    assert_eq!(row(&repo, &wt)["state"], "unseeded");

    let out = session_start(&repo, &wt, &payload(&wt), &codex_home);
    out.expect_code(0);
    assert_eq!(
        out.stdout, "",
        "stdout goes into the model's context: {out}"
    );
    let mut shown = pinned_case("session start", &out);
    let r = row(&repo, &wt);
    assert_eq!(r["state"], "ready", "{r}");
    assert_eq!(r["branch"], Value::Null, "detached: no expected branch");
    assert_eq!(r["drift"], false);
    repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
        .expect_code(0);
    assert_eq!(repo.prepare_runs().len(), 1);
    let env = std::fs::read_link(wt.join(".env")).expect("the base's .env is linked in");
    assert_eq!(
        env.canonicalize().unwrap(),
        repo.base.join(".env").canonicalize().unwrap()
    );

    // A resumed session (or a second hook run): ready already, silent, prepared once.
    let out = session_start(&repo, &wt, &payload(&wt), &codex_home);
    out.expect_code(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", ""),
        "{out}"
    );
    assert_eq!(repo.prepare_runs().len(), 1);

    // The base: silent.
    let out = session_start(&repo, &repo.base, &payload(&repo.base), &codex_home);
    out.expect_code(0);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", ""),
        "{out}"
    );

    // An unseeded tree that is not Codex's: one note, exit 0, left unseeded.
    let other = repo.sibling("by-hand");
    repo.add_unhooked_worktree(other.to_str().unwrap(), "by/hand");
    let out = session_start(&repo, &other, &payload(&other), &codex_home);
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{out}");
    shown.push_str(&pinned_case("session start, a tree made by hand", &out));
    assert_eq!(row(&repo, &other)["state"], "unseeded");

    // No repository, and a payload that is not Codex's: one note each, exit 0.
    let nowhere = repo.tmp.join("nowhere");
    std::fs::create_dir_all(&nowhere).unwrap();
    let out = session_start(&repo, &nowhere, &payload(&nowhere), &codex_home);
    out.expect_code(0);
    assert_eq!(out.stderr.lines().count(), 1, "{out}");
    shown.push_str(&pinned_case("session start, in no repository", &out));
    let out = session_start(&repo, &nowhere, "not json", &codex_home);
    out.expect_code(0);
    shown.push_str(&pinned_case("session start, not json", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("codex_session_start", shown));
    assert_eq!(repo.prepare_runs().len(), 1);
}

/// A failed prepare stops the session with Codex's `continue: false` (Codex 0.169.0 then makes
/// no model request), and the tree is recorded failed; the next session start prepares again.
#[test]
fn codex_session_start_stops_the_session_when_prepare_fails() {
    let repo = TestRepo::new();
    let flag = repo.tmp.join("fail");
    let script = repo.write_prepare(&format!(
        "if [ -e '{}' ]; then echo 'missing token FOO_TOKEN' >&2; exit 1; fi",
        flag.display()
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    std::fs::write(&flag, "").unwrap();
    let codex_home = repo.tmp.join("codex-home");
    let wt = codex_tree(&repo, &codex_home);
    // Started from a subdirectory (`codex -C sub`): the tree is still found.
    let sub = wt.join("sub");
    std::fs::create_dir_all(&sub).unwrap();

    let out = session_start(&repo, &sub, &payload(&sub), &codex_home);
    out.expect_code(0);
    let answer: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not Codex's JSON ({e}): {out}"));
    assert_eq!(answer["continue"], false, "{answer}");
    // Codex's answer says what failed and what to run; the hook's words are on stderr.
    let shown = format!(
        "{}\n--- stderr\n{}",
        serde_json::to_string_pretty(&answer).unwrap(),
        out.stderr
    );
    pinned(&repo).bind(|| insta::assert_snapshot!("codex_session_start_failed", shown));
    assert_eq!(row(&repo, &wt)["state"], "failed");

    std::fs::remove_file(&flag).unwrap();
    let out = session_start(&repo, &wt, &payload(&wt), &codex_home);
    out.expect_code(0);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(row(&repo, &wt)["state"], "ready");
}
