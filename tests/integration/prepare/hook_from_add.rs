//! The prepare hook from `add`: a failing hook exits 4, a hook past its cap exits 4,
//! the action deadline (`--timeout`) exits 5, and hook output never reaches stdout.
use std::time::Duration;

use crate::support::{line, TestRepo};

/// Rules running `script` with a prepare cap of `cap` seconds.
fn rules_with_cap(repo: &TestRepo, script: &std::path::Path, cap: u64) -> String {
    format!(
        "{}    timeout_seconds: {cap}\n",
        repo.rules_for(script, false)
    )
}

#[test]
fn hook_output_goes_to_stderr_and_stdout_stays_the_path() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("echo 'hello from prepare'\necho 'warning from prepare' >&2");
    repo.write_rules(&repo.rules_for(&script, false));
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.card_path("42")), "{out}");
    for text in ["hello from prepare", "warning from prepare"] {
        let l = out
            .stderr
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("{text:?} not streamed to stderr:\n{out}"));
        assert!(
            l.contains("42") && l.contains("prepare"),
            "hook lines are prefixed with card and phase: {l:?}"
        );
    }
}

#[test]
fn a_failing_prepare_exits_4_with_its_message_and_a_retry_prepares_again() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("fail", "database seed missing", 7);
    repo.write_rules(&repo.rules_for(&script, false));
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(4);
    assert_eq!(out.stdout, "", "{out}");
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_prepare_failed",
            crate::support::pinned_case("add 42", &out)
        )
    });
    let out = repo.kardwt(&repo.base, &["verify", "42"]);
    assert_ne!(
        out.code, 0,
        "a failed preparation must not verify as ready:\n{out}"
    );
    let out = repo.kardwt(&repo.base, &["select", "42", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.base), "{out}");

    std::fs::remove_file(&flag).unwrap();
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(0);
    let wt = repo.card_path("42");
    assert_eq!(out.stdout, line(&wt));
    let runs = repo.prepare_runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[1] == "42 retry prepare" || runs[1] == "42 create prepare",
        "{runs:?}"
    );
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"));
    repo.kardwt_ok(&repo.base, &["verify", "42"]);
}

#[test]
fn a_prepare_past_its_cap_is_killed_and_exits_4() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("sleep 30");
    repo.write_rules(&rules_with_cap(&repo, &script, 1));
    let (out, _) = repo.kardwt_within(&["add", "42"], 4, Duration::from_secs(15));
    assert_eq!(out.stdout, "", "{out}");
}

#[test]
fn the_action_deadline_cuts_a_running_prepare_and_exits_5() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("sleep 30");
    repo.write_rules(&repo.rules_for(&script, false));
    let (out, _) = repo.kardwt_within(&["add", "42", "--timeout", "2"], 5, Duration::from_secs(15));
    assert_eq!(out.stdout, "", "{out}");
}

#[test]
fn an_argv0_outside_the_stable_root_is_refused_before_it_runs() {
    let repo = TestRepo::new();
    let outside = repo.tmp.join("outside.sh");
    let ran = repo.tmp.join("ran");
    std::fs::write(
        &outside,
        format!("#!/bin/sh\n: > {}\n", crate::support::sh_quote(&ran)),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.write_rules(&repo.rules_for(&outside, false));
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    assert!(
        out.code == 2 || out.code == 4,
        "argv[0] outside stable_root must be refused (2 or 4):\n{out}"
    );
    assert_eq!(out.stdout, "", "{out}");
    assert!(!ran.exists(), "the refused hook ran");
}

/// Agent runners keep only the head of an error: after the streamed hook output, the final
/// block (`error: …` and its hints) fits in 500 characters with the verdict first, however
/// much the hook wrote and however long the root's path is.
#[test]
fn the_final_error_block_fits_in_500_characters_whatever_the_hook_wrote() {
    let repo = TestRepo::new();
    let script = repo.write_prepare(
        "i=0; while [ $i -lt 60 ]; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >&2; i=$((i+1)); done; echo 'FINAL no token' >&2; exit 1",
    );
    repo.write_rules(&repo.rules_for(&script, false));
    let long_root = repo
        .tmp
        .join("a rather long directory name for the root".repeat(3));
    for args in [
        vec!["add", "40"],
        vec!["--root", long_root.to_str().unwrap(), "add", "41"],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(4);
        let start = out.stderr.find("error: ").expect("an error block");
        let block = &out.stderr[start..];
        assert!(
            block.chars().count() <= 500,
            "{} characters:\n{block}",
            block.chars().count()
        );
        assert!(block.starts_with("error: preparing card"), "{block}");
        let retry = block.find("retry").expect("retry is said");
        let hook = block
            .find("FINAL no token")
            .expect("the hook's last words are kept");
        assert!(retry < hook, "{block}");
    }
}

/// `prepare --path` of a tree made by plain `git worktree add` runs the same
/// pipeline as `add`: the same links, the same copies, ports of its own, the same state.
#[test]
fn prepare_path_seeds_a_plain_worktree_exactly_as_add_does() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\n"),
            (".worktreeinclude", ".env.local\n"),
        ],
        "ignore rules and .worktreeinclude",
    );
    std::fs::write(repo.base.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(repo.base.join(".env.local"), "LOCAL=1\n").unwrap();
    let script = repo.write_prepare("");
    repo.write_rules(&format!(
        "{}  ports: {{count: 2, range: [41000, 41999]}}\n  sharing:\n    env: link\n",
        repo.rules_for(&script, false)
    ));
    let added = repo.add_card("1");
    let plain = repo.card_path("2");
    repo.add_unhooked_worktree(plain.to_str().unwrap(), "card/2");
    let out = repo.kardwt(&repo.base, &["prepare", "--path", plain.to_str().unwrap()]);
    out.expect_code(0);

    let (a, b) = (repo.record(&added), repo.record(&plain));
    for key in ["state", "links", "copies", "copy_method"] {
        assert_eq!(
            a.get(key),
            b.get(key),
            "{key} differs:\nadd: {a:#?}\nprepare --path: {b:#?}"
        );
    }
    let ports = |t: &toml::Table| -> Vec<i64> {
        t.get("ports")
            .and_then(|p| p.as_array())
            .map(|p| p.iter().filter_map(|v| v.as_integer()).collect())
            .unwrap_or_default()
    };
    let (pa, pb) = (ports(&a), ports(&b));
    assert_eq!(
        (pa.len(), pb.len()),
        (2, 2),
        "add: {a:#?}\nprepare --path: {b:#?}"
    );
    assert!(
        pa.iter().all(|p| !pb.contains(p)),
        "ports shared: {pa:?} {pb:?}"
    );
    for tree in [&added, &plain] {
        assert_eq!(
            std::fs::read_to_string(tree.join(".env.local")).unwrap(),
            "LOCAL=1\n",
            "{} lacks its copy",
            tree.display()
        );
        assert!(
            std::fs::symlink_metadata(tree.join(".env"))
                .unwrap()
                .file_type()
                .is_symlink(),
            "{} lacks its .env link",
            tree.display()
        );
    }
    // The prepare hook was handed the ports too.
    let runs = repo.prepare_runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
}
