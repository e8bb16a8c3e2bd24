//! `cache remote` against a real S3-compatible server (SeaweedFS on 127.0.0.1): the store the
//! rules name, whether this machine uploads, and whether it answers, running (exit 0) and
//! stopped (exit 1); the credentials never shown. Without a store in the rules it says so.
use std::ffi::OsStr;
use std::time::Duration;

use crate::support::seaweed::{Seaweed, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::support::{Output, TestRepo};

fn rules(repo: &TestRepo, endpoint: &str) {
    let script = repo.write_helper("prepare", "mkdir -p node_modules");
    repo.write_rules(&format!(
        "{}    outputs: [node_modules]\n    cache_remote:\n      url: s3://{BUCKET}/team/web\n      endpoint: {endpoint}\n      region: eu-west-3\n",
        repo.rules_for(&script, false)
    ));
}

/// `git kardwt cache remote args…` with this machine's credentials in the environment.
fn cache_remote(repo: &TestRepo, args: &[&str], write: bool) -> Output {
    let mut env: Vec<(&str, &OsStr)> = vec![
        ("AWS_ACCESS_KEY_ID", OsStr::new(ACCESS_KEY)),
        ("AWS_SECRET_ACCESS_KEY", OsStr::new(SECRET_KEY)),
    ];
    if write {
        env.push(("KARDWT_CACHE_WRITE", OsStr::new("1")));
    }
    let mut all = vec!["kardwt", "cache", "remote"];
    all.extend_from_slice(args);
    let out = repo
        .spawn_with_env("git", &repo.base, &all, &env)
        .wait(Duration::from_secs(60));
    for secret in [SECRET_KEY, ACCESS_KEY] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "a credential was shown:\n{out}"
        );
    }
    out
}

#[test]
fn cache_remote_shows_the_store_and_whether_it_answers_running_and_stopped() {
    let Some(mut server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    rules(&repo, &server.endpoint);

    let out = cache_remote(&repo, &[], false);
    out.expect_code(0);
    assert!(
        out.stdout
            .contains(&format!("url:      s3://{BUCKET}/team/web\n")),
        "{out}"
    );
    assert!(
        out.stdout
            .contains(&format!("endpoint: {}\n", server.endpoint)),
        "{out}"
    );
    assert!(out.stdout.contains("region:   eu-west-3\n"), "{out}");
    assert!(out.stdout.contains("uploads:  no, reads only"), "{out}");
    assert!(out.stdout.contains("answers:  yes: "), "{out}");

    let json = cache_remote(&repo, &["--json"], true);
    json.expect_code(0);
    let v = json.json();
    assert_eq!(v["configured"], true);
    assert_eq!(v["url"], format!("s3://{BUCKET}/team/web"));
    assert_eq!(v["endpoint"], server.endpoint.as_str());
    assert_eq!(
        (&v["writes"], &v["answers"]),
        (&serde_json::json!(true), &serde_json::json!(true))
    );

    server.stop();
    let out = cache_remote(&repo, &[], false);
    out.expect_code(1);
    assert!(out.stdout.contains("answers:  no: "), "{out}");
    assert!(out.stdout.contains("does not answer"), "{out}");
    let json = cache_remote(&repo, &["--json"], false);
    json.expect_code(1);
    assert_eq!(json.json()["answers"], false);
}

#[test]
fn cache_remote_says_when_the_rules_name_no_store() {
    let repo = TestRepo::new();
    let out = repo.kardwt(&repo.base, &["cache", "remote"]);
    out.expect_code(0);
    assert!(
        out.stdout
            .starts_with("no shared store: the rules name no prepare.cache_remote"),
        "{out}"
    );
    let json = repo.kardwt(&repo.base, &["cache", "remote", "--json"]);
    json.expect_code(0);
    assert_eq!(json.json(), serde_json::json!({"configured": false}));
}
