//! What a dispatcher meets on `add`: reuse brings a lost shared link back and `status` says
//! what each link is; git's remote failures come as one error line and one hint, and
//! `doctor --try` says the same.
use std::path::Path;

use crate::support::TestRepo;

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
