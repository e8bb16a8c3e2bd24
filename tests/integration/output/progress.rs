//! Progress, under a real pseudo-terminal (util-linux `script`): on a terminal `add` draws a
//! bar of the files and bytes it copies against their totals and a spinner with the prepare
//! hook's elapsed time, with the hook's own lines above it; through pipes, and with `--quiet`
//! on a terminal, nothing of it.
use std::path::Path;

use crate::support::*;

const FILES: usize = 300;

/// A base with `FILES` ignored dependency files `.worktreeinclude` copies, and a prepare hook
/// that talks, then runs for a while.
fn fixture(repo: &TestRepo) {
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            (".worktreeinclude", "node_modules/\n"),
        ],
        "ignore the dependencies, copy them in",
    );
    for i in 0..FILES {
        let p = repo
            .base
            .join(format!("node_modules/pkg{}/index.js", i % 30));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let p = p.with_file_name(format!("f{i}.js"));
        std::fs::write(&p, vec![b'x'; 1000]).unwrap();
    }
    let script = repo.write_prepare("echo installing; sleep 1.5; echo installed");
    repo.write_rules(&repo.rules_for(&script, false));
}

/// `git kardwt <args>` on a pseudo-terminal: what the terminal received (stdout and stderr
/// both), and the exit code.
fn on_a_terminal(repo: &TestRepo, dir: &Path, args: &str) -> Output {
    let mut cmd = repo.command("script", dir);
    cmd.env("TERM", "xterm-256color");
    let line = format!("git kardwt {args}");
    repo.start_command(cmd, dir, &["-qefc", &line, "/dev/null"])
        .wait(COMMAND_TIMEOUT)
}

#[test]
fn add_on_a_terminal_shows_the_copy_and_the_prepare_as_they_go_and_through_pipes_nothing() {
    let repo = TestRepo::new();
    fixture(&repo);

    let out = on_a_terminal(&repo, &repo.base, "add 1");
    out.expect_code(0);
    let seen = &out.stdout;
    assert!(
        seen.contains("kardwt: copying ["),
        "no copy bar on the terminal:\n{out}"
    );
    assert!(
        seen.contains(&format!("/{FILES} files")),
        "the bar does not count against the total of {FILES} files:\n{out}"
    );
    assert!(
        seen.contains("300.00 kB") || seen.contains("300 kB"),
        "no byte total:\n{out}"
    );
    assert!(
        seen.contains("kardwt[1]: preparing"),
        "no spinner while prepare ran:\n{out}"
    );
    assert!(
        seen.contains(" 1s"),
        "the spinner shows no elapsed time:\n{out}"
    );
    assert!(seen.contains("kardwt[1 prepare]: installed"), "{out}");
    assert!(
        repo.card_path("1").join("node_modules/pkg0/f0.js").exists(),
        "{out}"
    );

    // Through pipes: the hook's lines, nothing drawn.
    let out = repo.kardwt(&repo.base, &["add", "2"]);
    out.expect_code(0);
    assert!(out.stderr.contains("kardwt[2 prepare]: installed"), "{out}");
    for drawn in ["kardwt: copying", "preparing", "\u{1b}["] {
        assert!(
            !out.stderr.contains(drawn),
            "{drawn:?} off a terminal:\n{out}"
        );
    }

    // --quiet on a terminal: nothing drawn either.
    let out = on_a_terminal(&repo, &repo.base, "add --quiet 3");
    out.expect_code(0);
    for drawn in ["kardwt: copying", "preparing"] {
        assert!(
            !out.stdout.contains(drawn),
            "{drawn:?} with --quiet:\n{out}"
        );
    }
}

#[test]
fn remove_on_a_terminal_says_which_step_it_is_at() {
    let repo = TestRepo::new();
    let cleanup = repo.write_helper("cleanup", "echo 'stopping the dev server'; sleep 1.2\n");
    repo.write_rules(&format!(
        "worktree:\n  helpers:\n    stable_root: {}\n  cleanup:\n    argv: [{}]\n",
        yaml_str(&repo.stable_root()),
        yaml_str(&cleanup)
    ));
    repo.add_card("1");
    repo.add_card("2");
    let out = on_a_terminal(&repo, &repo.base, "remove 1");
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("kardwt: removing 1: releasing its processes, cleanup hook and ports"),
        "no step shown on the terminal:\n{out}"
    );
    assert!(out.stdout.contains("stopping the dev server"), "{out}");
    let out = repo.kardwt(&repo.base, &["remove", "2"]);
    out.expect_code(0);
    assert!(!out.stderr.contains("kardwt: removing 2:"), "{out}");
}
