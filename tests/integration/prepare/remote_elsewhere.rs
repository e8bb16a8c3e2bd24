//! Machines set up differently share the prepare cache: a reader whose clone sits at another
//! path, under another name, with another home, gets the writer's entry (the key holds what
//! decides the outputs: the rules, the helper, the inputs, the platform; not where a machine
//! keeps its clone or its home).
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use super::remote::{prepared, write_one, writer_key, READER};
use crate::support::seaweed::Seaweed;
use crate::support::{snapshot, Output, TestRepo};

/// `git kardwt args…` in `dir` as the user whose home is `home`, with the reader's
/// credentials.
fn as_other_user(repo: &TestRepo, dir: &Path, home: &Path, args: &[&str]) -> Output {
    let mut cmd = repo.command("git", dir);
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"));
    for (k, v) in READER {
        cmd.env(k, OsStr::new(v));
    }
    let mut all = vec!["kardwt"];
    all.extend_from_slice(args);
    repo.start_command(cmd, dir, &all)
        .wait(Duration::from_secs(120))
}

#[test]
fn a_clone_at_another_path_with_another_home_hits_the_writers_entry() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    let one = write_one(&repo, &server);
    let written = snapshot(&one.join("node_modules"));
    let key = writer_key(&repo);

    // The reader: its own home, a clone of origin elsewhere under another name.
    let machine = repo.tmp.join("laptop");
    let home = machine.join("home/dev");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".gitconfig"), "").unwrap();
    let src = machine.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let origin = repo.tmp.join("origin.git");
    repo.git(
        &src,
        &["clone", "--quiet", origin.to_str().unwrap(), "web-app"],
    );
    let base = src.join("web-app");
    let rules = std::fs::read_to_string(repo.rules_path()).unwrap();
    std::fs::write(base.join("kardbrd.yml"), rules).unwrap();
    let exclude = base.join(".git/info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/kardbrd.yml\n");
    std::fs::write(&exclude, text).unwrap();

    as_other_user(&repo, &base, &home, &["trust", "--signer", &key]).expect_code(0);
    let out = as_other_user(&repo, &base, &home, &["add", "1"]);
    out.expect_code(0);
    assert_eq!(
        repo.prepare_runs(),
        ["ran"],
        "the reader's prepare ran:\n{out}"
    );
    let tree = src.join("web-app.worktrees/card-1");
    assert!(
        snapshot(&tree.join("node_modules")) == written,
        "the trees differ"
    );
    let events = std::fs::read_to_string(base.join(".git/kardwt/events.jsonl")).unwrap();
    assert!(events.contains("cache: remote hit"), "{events}");
    // The writer's card was a miss under that very key.
    let short = events
        .split("cache: remote hit ")
        .nth(1)
        .and_then(|rest| rest.get(..12))
        .unwrap();
    assert!(
        prepared(&repo, "1").starts_with(&format!("ok; cache: miss {short}")),
        "{}",
        prepared(&repo, "1")
    );
}
