//! A record the post-checkout hook writes in a repository without `origin/HEAD` still names its
//! base, asking the remote for its HEAD, so that `gc` can collect the tree once it landed; when
//! no base can be found, `status` and `gc` say why.
use std::path::Path;

use crate::support::TestRepo;

/// A repository set up with `git remote add` + `git push -u` has no `origin/HEAD`.
fn without_origin_head(repo: &TestRepo) {
    repo.git(&repo.base, &["remote", "set-head", "origin", "--delete"]);
    let out = repo.git_output(
        &repo.base,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "refs/remotes/origin/HEAD",
        ],
    );
    assert_ne!(out.code, 0, "origin/HEAD is still there:\n{out}");
}

/// Commit in `wt` and push it to origin's main, so the branch is merged and pushed.
fn land_on_main(repo: &TestRepo, wt: &Path) {
    std::fs::write(wt.join("work.txt"), "done\n").unwrap();
    repo.git(wt, &["add", "work.txt"]);
    repo.git(wt, &["commit", "--quiet", "-m", "work"]);
    repo.git(wt, &["push", "--quiet", "origin", "HEAD:main"]);
}

fn gc_json(repo: &TestRepo) -> serde_json::Value {
    let out = repo.kardwt(&repo.base, &["gc", "--json"]);
    out.expect_code(0);
    out.json()
}

fn names(list: &serde_json::Value, wt: &Path) -> Option<serde_json::Value> {
    list.as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == wt.to_str().unwrap())
        .cloned()
}

#[test]
fn without_origin_head_the_hook_record_asks_the_remote_and_gc_collects_it() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    without_origin_head(&repo);
    repo.install_hooks();
    repo.worktree_add(&["../np", "-b", "np"]).expect_code(0);
    let wt = repo.sibling("np");
    let rec = repo.record(&wt);
    assert_eq!(
        rec["base_ref"].as_str(),
        Some("refs/heads/main"),
        "the remote names its HEAD: {rec:#?}"
    );
    land_on_main(&repo, &wt);
    let v = gc_json(&repo);
    let c = names(&v["candidates"], &wt).unwrap_or_else(|| panic!("not a candidate: {v:#}"));
    assert!(
        c["reason"]
            .as_str()
            .unwrap()
            .contains("merged into refs/heads/main"),
        "{c}"
    );
}

#[test]
fn when_no_base_can_be_found_status_and_gc_say_why() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    without_origin_head(&repo);
    repo.install_hooks();
    let url = repo.origin.to_str().unwrap().to_owned();
    let gone = repo.tmp.join("gone.git");
    repo.git(
        &repo.base,
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    repo.worktree_add(&["../lost", "-b", "lost"]).expect_code(0);
    let wt = repo.sibling("lost");
    assert_eq!(repo.record(&wt)["base_ref"].as_str(), Some(""));
    repo.git(&repo.base, &["remote", "set-url", "origin", &url]);

    let out = repo.kardwt(&wt, &["status"]);
    out.expect_code(0);
    assert!(out.stdout.contains("no base ref"), "{out}");
    let v = repo.kardwt(&wt, &["status", "--json"]).json();
    assert!(
        v["base_ref_missing"]
            .as_str()
            .is_some_and(|w| w.contains("worktree.base.ref")),
        "{v:#}"
    );
    land_on_main(&repo, &wt);
    let v = gc_json(&repo);
    let k = names(&v["kept"], &wt).unwrap_or_else(|| panic!("not listed as kept: {v:#}"));
    assert!(
        k["reason"]
            .as_str()
            .unwrap()
            .contains("no base ref was found"),
        "{k}"
    );
}
