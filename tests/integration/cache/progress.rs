//! A fetch from the shared store (a real SeaweedFS on 127.0.0.1) under a real
//! pseudo-terminal (util-linux `script`): `add` on the reader draws a spinner saying where the
//! outputs come from, in place of the one line it printed before; through pipes, nothing of it.
use std::ffi::OsStr;
use std::time::Duration;

use crate::support::seaweed::{Seaweed, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::support::{sh_quote, TestRepo, COMMAND_TIMEOUT};

const CREDS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
    ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
];

/// The lockfile on origin, and rules whose prepare writes 200 files into node_modules, shared
/// through `server`.
fn rules(repo: &TestRepo, server: &Seaweed) {
    let log = sh_quote(&repo.prepare_log());
    let script = repo.write_helper(
        "prepare",
        &format!(
            "echo ran >> {log}\n\
             mkdir -p node_modules/pkg\n\
             for i in $(seq 1 200); do echo \"file $i\" > node_modules/pkg/f$i.js; done\n"
        ),
    );
    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n    cache_remote:\n      url: s3://{BUCKET}/progress\n      endpoint: {}\n",
        repo.rules_for(&script, false),
        server.endpoint
    ));
}

/// This test's machine becomes another one at the same paths: the previous machine's base,
/// trees and home moved aside to `<tmp>/<was>`, a fresh clone of origin (no local cache) and an
/// empty home.
fn another_machine(repo: &TestRepo, was: &str) {
    let aside = repo.tmp.join(was);
    std::fs::create_dir(&aside).unwrap();
    std::fs::rename(&repo.base, aside.join("base")).unwrap();
    std::fs::rename(repo.root(), aside.join("trees")).unwrap();
    std::fs::rename(&repo.home, aside.join("home")).unwrap();
    std::fs::create_dir(&repo.home).unwrap();
    std::fs::write(repo.home.join(".gitconfig"), "").unwrap();
    repo.git(&repo.tmp, &["clone", "--quiet", "origin.git", "base"]);
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/kardbrd.yml\n");
    std::fs::write(&exclude, text).unwrap();
}

#[test]
fn a_fetch_on_a_terminal_is_drawn_and_through_pipes_is_not() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", "v1\n"),
        ],
        "lockfile",
    );
    rules(&repo, &server);
    let mut env: Vec<(&str, &OsStr)> = CREDS.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    env.push(("KARDWT_CACHE_WRITE", OsStr::new("1")));
    repo.spawn_with_env("git", &repo.base, &["kardwt", "add", "1"], &env)
        .wait(Duration::from_secs(120))
        .expect_code(0);
    assert_eq!(repo.prepare_runs(), ["ran"]);
    // The writer signed its entry; the reader's user trusts that key, as a person would.
    let key = repo.kardwt_ok(&repo.base, &["trust", "--public-key"]);

    another_machine(&repo, "writer");
    rules(&repo, &server);
    repo.kardwt_ok(&repo.base, &["trust", "--signer", key.trim()]);
    let mut cmd = repo.command("script", &repo.base);
    cmd.env("TERM", "xterm-256color");
    for (k, v) in CREDS {
        cmd.env(k, v);
    }
    let out = repo
        .start_command(cmd, &repo.base, &["-qefc", "git kardwt add 2", "/dev/null"])
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert_eq!(
        repo.prepare_runs(),
        ["ran"],
        "the reader's prepare ran:\n{out}"
    );
    let seen = &out.stdout;
    assert!(
        seen.contains(&format!(
            "kardwt: fetching prepare's outputs from {}",
            server.endpoint
        )),
        "no fetch drawn on the terminal:\n{out}"
    );
    assert!(
        !seen.contains(": fetching from "),
        "the line the spinner replaces was printed too:\n{out}"
    );
    assert!(seen.contains("cache: remote hit"), "{out}");

    // Through pipes: no spinner (a third machine, so the fetch happens again).
    another_machine(&repo, "reader");
    rules(&repo, &server);
    repo.kardwt_ok(&repo.base, &["trust", "--signer", key.trim()]);
    let env: Vec<(&str, &OsStr)> = CREDS.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    let out = repo
        .spawn_with_env("git", &repo.base, &["kardwt", "add", "3"], &env)
        .wait(Duration::from_secs(120));
    out.expect_code(0);
    assert!(out.stderr.contains("cache: remote hit"), "{out}");
    assert!(!out.stderr.contains("fetching prepare's outputs"), "{out}");
}
