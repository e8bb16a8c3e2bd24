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

/// Outputs that name where the writer keeps its clone (its base's path) would hand another
/// machine a path it does not have: kept in the writer's local cache, never uploaded.
#[test]
fn outputs_naming_the_writers_clone_are_kept_here_but_not_uploaded() {
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
    let log = crate::support::sh_quote(&repo.prepare_log());
    let script = repo.write_helper(
        "prepare",
        &format!(
            "echo ran >> {log}\nmkdir -p node_modules/pkg\n\
             head -c 300000 /dev/zero > node_modules/pkg/padding\n\
             printf 'root = %s/shared\\n' \"$KARDWT_BASE\" > node_modules/pkg/config\n"
        ),
    );
    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n    cache_remote:\n      url: s3://{}/team/web\n      endpoint: {}\n",
        repo.rules_for(&script, false),
        crate::support::seaweed::BUCKET,
        server.endpoint
    ));
    let aws = repo.home.join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            crate::support::seaweed::ACCESS_KEY,
            crate::support::seaweed::SECRET_KEY
        ),
    )
    .unwrap();
    let env = [("KARDWT_CACHE_WRITE", OsStr::new("1"))];
    let out = repo
        .spawn_with_env("git", &repo.base, &["kardwt", "add", "1"], &env)
        .wait(Duration::from_secs(120));
    out.expect_code(0);
    let said = prepared(&repo, "1");
    let base = repo.base.to_str().unwrap();
    assert!(
        said.contains("stored 2 files")
            && said.contains(&format!(
                "not uploaded: the file node_modules/pkg/config names {base}"
            )),
        "{said}\n{out}"
    );
    assert_eq!(
        out.stderr
            .lines()
            .filter(|l| l.contains("not uploaded"))
            .count(),
        1,
        "{out}"
    );
    // Kept here: the next card is a local hit.
    let out = repo
        .spawn_with_env("git", &repo.base, &["kardwt", "add", "2"], &env)
        .wait(Duration::from_secs(120));
    out.expect_code(0);
    assert!(prepared(&repo, "2").starts_with("cache: hit"), "{out}");
}
