//! SPEC §18 (R-DISPATCH) points 4, 5, 9 and 10 through the real binary and real git: a record
//! written without `origin/HEAD` still names its base (or says why not); reuse brings a lost
//! shared link back and `status` says what each link is; git's remote failures come as one
//! error line and one hint; `doctor --try` runs the cleanup hook like `remove` does.
use std::path::Path;

use crate::support::{sh_quote, yaml_str, TestRepo};

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

fn link_states(repo: &TestRepo, wt: &Path) -> Vec<(String, String)> {
    let out = repo.kardwt(wt, &["status", "--json"]);
    out.expect_code(0);
    let v = out.json();
    v["links"]
        .as_array()
        .unwrap_or_else(|| panic!("no links: {v:#}"))
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap_or_default().to_owned(),
                l["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn reuse_brings_a_lost_shared_link_back_and_status_says_what_each_link_is() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    std::fs::write(repo.base.join(".env.local"), "LOCAL=1\n").unwrap();
    let wt = repo.add_card("5");
    let present = |rel: &str| std::fs::read_link(wt.join(rel)).ok() == Some(repo.base.join(rel));
    assert!(present(".env") && present(".env.local"));
    assert_eq!(
        link_states(&repo, &wt),
        [
            (".env".to_owned(), "present".to_owned()),
            (".env.local".to_owned(), "present".to_owned())
        ]
    );

    // git clean -X removes ignored files, kardwt's links among them.
    repo.git(&wt, &["clean", "--quiet", "-f", "-X"]);
    repo.git(&wt, &["reset", "--quiet", "--hard"]);
    assert!(wt.join(".env").symlink_metadata().is_err(), "still there");
    // A file the user put at one link's path is theirs.
    std::fs::write(wt.join(".env.local"), "MINE=1\n").unwrap();
    assert_eq!(
        link_states(&repo, &wt),
        [
            (".env".to_owned(), "missing".to_owned()),
            (".env.local".to_owned(), "replaced".to_owned())
        ]
    );
    let text = repo.kardwt_ok(&wt, &["status"]);
    assert!(
        text.contains(".env (missing)") && text.contains(".env.local (replaced)"),
        "{text}"
    );

    assert_eq!(repo.add_card("5"), wt);
    assert!(present(".env"), "reuse did not link .env again");
    assert_eq!(
        std::fs::read_to_string(wt.join(".env.local")).unwrap(),
        "MINE=1\n",
        "reuse overwrote the user's file"
    );
    assert_eq!(
        link_states(&repo, &wt),
        [
            (".env".to_owned(), "present".to_owned()),
            (".env.local".to_owned(), "replaced".to_owned())
        ]
    );
}

/// `add 9` fails with `code`, stderr one `error:` line naming `cause` and one `hint:` line,
/// and nothing was created.
#[track_caller]
fn add_fails_with_a_fix(repo: &TestRepo, code: i32, cause: &str, fix: &str) {
    let base = repo.snapshot_base();
    let worktrees = repo.worktrees();
    let out = repo.kardwt(&repo.base, &["add", "9"]);
    out.expect_code(code);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "not one error and one hint:\n{out}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(cause),
        "{out}"
    );
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains(fix),
        "{out}"
    );
    assert_eq!(out.stdout, "", "{out}");
    repo.assert_nothing_created(&base, "a failed fetch");
    assert_eq!(repo.worktrees(), worktrees);
    assert!(!repo.branch_exists("card/9"));
}

#[test]
fn git_remote_failures_come_as_one_line_and_a_hint() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    repo.write_rules(&repo.rules_for(&script, false));

    // An unreachable remote: git's text is several lines; ours is one, and a fix.
    let gone = repo.tmp.join("gone.git");
    let url = repo.origin.to_str().unwrap().to_owned();
    repo.git(
        &repo.base,
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    add_fails_with_a_fix(
        &repo,
        1,
        "could not reach the remote origin",
        "git remote set-url origin",
    );
    // doctor --try says the same on its fetch step, hint included.
    let out = repo.kardwt(&repo.base, &["doctor", "--try", "--json"]);
    out.expect_code(1);
    let v = out.json();
    let fetch = &v["try"][0];
    assert_eq!(fetch["step"], "fetch", "{v:#}");
    let detail = fetch["detail"].as_str().unwrap();
    assert!(
        !detail.contains('\n') && detail.contains("hint: check the URL"),
        "{detail}"
    );
    repo.git(&repo.base, &["remote", "set-url", "origin", &url]);

    // A base.ref the remote lacks: exit 2.
    repo.write_rules(&format!(
        "{}  base:\n    ref: refs/heads/nope\n",
        repo.rules_for(&script, false)
    ));
    add_fails_with_a_fix(&repo, 2, "has no refs/heads/nope", "set worktree.base.ref");

    // No remote at all: exit 2.
    repo.write_rules(&repo.rules_for(&script, false));
    repo.git(&repo.base, &["remote", "remove", "origin"]);
    add_fails_with_a_fix(&repo, 2, "no remote named origin", "git remote add origin");
}

#[test]
fn doctor_try_runs_the_cleanup_hook_before_removing_its_rehearsal() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    let log = repo.tmp.join("cleanup.log");
    let cleanup = repo.write_helper(
        "cleanup",
        &format!(
            "echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_PHASE $(test -d \"$KARDWT_WORKTREE\" && echo tree-there)\" >> {}",
            sh_quote(&log)
        ),
    );
    repo.write_rules(&format!(
        "{}  cleanup:\n    argv: [{}]\n",
        repo.rules_for(&script, false),
        yaml_str(&cleanup)
    ));
    repo.install_hooks();
    let refs = repo.all_refs();
    let out = repo.kardwt(&repo.base, &["doctor", "--try", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let steps: Vec<&str> = v["try"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "fetch",
            "worktree",
            "share and prepare",
            "cleanup hook",
            "cleanup"
        ],
        "{v:#}"
    );
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<&str> = ran.lines().collect();
    assert_eq!(lines.len(), 1, "{ran:?}");
    assert!(
        lines[0].starts_with("doctor-try-") && lines[0].ends_with(" remove cleanup tree-there"),
        "{ran:?}"
    );
    assert_eq!(repo.all_refs(), refs, "the rehearsal left a branch");
    assert!(!repo.root().join("card-doctor-try").exists());
}
