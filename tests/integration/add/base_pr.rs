//! `add --base pr/<n>` starts a card at a pull request's head: GitHub's `refs/pull/<n>/head`,
//! else GitLab's `refs/merge-requests/<n>/head`, fetched into `refs/kardwt/remotes/<remote>/…`,
//! recorded by the remote's ref name and judged like any base (behind, gc); a bad number or a
//! request the remote lacks creates nothing.
use std::path::PathBuf;

use crate::support::{pinned, pinned_case, TestRepo};

/// Push a new commit (a file `name`) on top of `parent` to origin's `dest` ref, through the
/// scratch clone, leaving the scratch clone on main; returns the commit.
fn push_change(repo: &TestRepo, parent: &str, name: &str, dest: &str) -> String {
    push_change_to(repo, "origin", parent, name, dest)
}

/// [`push_change`] to the scratch clone's remote `remote`.
fn push_change_to(repo: &TestRepo, remote: &str, parent: &str, name: &str, dest: &str) -> String {
    let s = &repo.scratch;
    repo.git(s, &["switch", "--quiet", "--detach", parent]);
    std::fs::write(s.join(name), format!("{name}\n")).unwrap();
    repo.git(s, &["add", name]);
    repo.git(s, &["commit", "--quiet", "-m", name]);
    let oid = repo.git(s, &["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(
        s,
        &[
            "push",
            "--quiet",
            "--force",
            remote,
            &format!("HEAD:{dest}"),
        ],
    );
    repo.git(s, &["switch", "--quiet", "main"]);
    oid
}

/// The list row (`list --json --status`) of card `card`.
fn listed(repo: &TestRepo, card: &str) -> serde_json::Value {
    let out = repo.kardwt(&repo.base, &["list", "--json", "--status"]);
    out.expect_code(0);
    let rows = out.json();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["card"] == card)
        .unwrap_or_else(|| panic!("no card {card}:\n{out}"))
        .clone()
}

#[test]
fn add_base_pr_starts_a_card_at_the_pull_request_head_and_judges_it_behind_when_it_moves() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let main = repo.origin_main();
    let head = push_change(&repo, &main, "PR7", "refs/pull/7/head");
    let mr = push_change(&repo, &main, "MR9", "refs/merge-requests/9/head");

    repo.kardwt_ok(&repo.base, &["add", "7", "--base", "pr/7"]);
    let wt = repo.card_path("7");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), head);
    assert_eq!(
        repo.git(&wt, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "card/7"
    );
    assert!(wt.join("PR7").is_file());
    let rec = repo.record(&wt);
    assert_eq!(
        rec["base_ref"].as_str(),
        Some("refs/pull/7/head"),
        "{rec:?}"
    );
    assert_eq!(rec["base_oid"].as_str(), Some(head.as_str()), "{rec:?}");
    let kept = "refs/kardwt/remotes/origin/pull/7/head";
    assert_eq!(repo.git(&repo.base, &["rev-parse", kept]).trim(), head);
    repo.kardwt_ok(&repo.base, &["verify", "7"]);
    let status = repo.kardwt_ok(&repo.base, &["status", "7"]);
    assert!(status.contains("drift:           false"), "{status}");
    assert!(
        status.contains(&format!("behind:          0 commits of {kept}")),
        "{status}"
    );
    let row = listed(&repo, "7");
    assert_eq!(
        (row["ahead"].as_u64(), row["behind"].as_u64()),
        (Some(0), Some(0)),
        "{row}"
    );
    // The same request again reuses the card; the name of the remote's ref is the same base.
    repo.kardwt_ok(&repo.base, &["add", "7", "--base", "pr/7"]);
    repo.kardwt_ok(&repo.base, &["add", "7", "--base", "refs/pull/7/head"]);
    repo.kardwt(&repo.base, &["add", "7", "--base", "pr/9"])
        .expect_code(3);

    // A remote with only GitLab's ref: the merge request's head.
    repo.kardwt_ok(&repo.base, &["add", "9", "--base", "pr/9"]);
    let wt9 = repo.card_path("9");
    assert_eq!(repo.git(&wt9, &["rev-parse", "HEAD"]).trim(), mr);
    let rec = repo.record(&wt9);
    assert_eq!(
        rec["base_ref"].as_str(),
        Some("refs/merge-requests/9/head"),
        "{rec:?}"
    );

    // The pull request moves upstream: once fetched again (gc fetches every tree's base
    // before judging it), status and list show the card one commit behind, and gc keeps it.
    let moved = push_change(&repo, &head, "PR7-more", "refs/pull/7/head");
    let out = repo.kardwt(&repo.base, &["gc", "--json"]);
    out.expect_code(0);
    assert_eq!(repo.git(&repo.base, &["rev-parse", kept]).trim(), moved);
    let v = out.json();
    let seven = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["card"] == "7")
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert!(
        seven["reason"]
            .as_str()
            .unwrap()
            .contains("no commit was made in this worktree"),
        "{v}"
    );
    let status = repo.kardwt_ok(&repo.base, &["status", "7"]);
    assert!(
        status.contains(&format!("behind:          1 commit of {kept}")),
        "{status}"
    );
    let row = listed(&repo, "7");
    assert_eq!(
        (row["ahead"].as_u64(), row["behind"].as_u64()),
        (Some(0), Some(1)),
        "{row}"
    );
    let json = repo.kardwt(&repo.base, &["verify", "7", "--json"]);
    assert_eq!(json.json()["behind"].as_u64(), Some(1), "{json}");

    // gc --offline judges against the kept head as last fetched, and says so.
    let out = repo.kardwt(&repo.base, &["gc", "--offline"]);
    out.expect_code(0);
    assert!(
        out.stdout
            .contains(&format!("judged against {kept} as last fetched")),
        "{out}"
    );

    // A plain `git fetch --prune` leaves kardwt's copy alone (it is no remote-tracking ref).
    repo.git(&repo.base, &["fetch", "--quiet", "--prune", "origin"]);
    assert_eq!(repo.git(&repo.base, &["rev-parse", kept]).trim(), moved);

    // Work made in a card and pushed elsewhere is judged against the request's head: not
    // merged into it, so gc keeps the card.
    std::fs::write(wt9.join("work.txt"), "w\n").unwrap();
    repo.git(&wt9, &["add", "work.txt"]);
    repo.git(&wt9, &["commit", "--quiet", "-m", "work"]);
    repo.git(&wt9, &["push", "--quiet", "origin", "card/9"]);
    let out = repo.kardwt(&repo.base, &["gc", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let nine = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["card"] == "9")
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(
        nine["reason"].as_str(),
        Some("card/9 is not merged into refs/merge-requests/9/head"),
        "{v}"
    );

    // The remote's ref itself is a base too; a card on the request's head is merged into it,
    // so its branch may go with it.
    repo.kardwt_ok(&repo.base, &["add", "8", "--base", "refs/pull/7/head"]);
    assert_eq!(
        repo.git(&repo.card_path("8"), &["rev-parse", "HEAD"])
            .trim(),
        moved
    );
    for card in ["7", "8"] {
        repo.kardwt_ok(&repo.base, &["remove", card, "--delete-branch"]);
        assert!(!repo.card_path(card).exists());
        assert!(!repo.branch_exists(&format!("card/{card}")));
    }
    repo.kardwt_ok(&repo.base, &["remove", "9"]);
    assert!(!repo.card_path("9").exists());
}

#[test]
fn add_base_pr_refuses_a_bad_number_or_a_request_the_remote_lacks_and_creates_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let main = repo.origin_main();
    push_change(&repo, &main, "PR7", "refs/pull/7/head");
    let refs = repo.all_refs();
    let base_before = repo.snapshot_base();
    let unchanged = |out: &crate::support::Output| {
        assert!(!repo.card_path("5").exists(), "{out}");
        assert!(!repo.branch_exists("card/5"), "{out}");
        assert_eq!(repo.all_refs(), refs, "{out}");
        assert_eq!(repo.snapshot_base(), base_before, "{out}");
    };
    let mut shown = String::new();
    for bad in [
        "pr/0",
        "pr/07",
        "pr/+7",
        "pr/-7",
        "pr/7a",
        "pr/",
        "pr/ 7",
        "pr/1234567890123456789",
    ] {
        let out = repo.kardwt(&repo.base, &["add", "5", "--base", bad]);
        out.expect_code(2);
        shown.push_str(&pinned_case(bad, &out));
        unchanged(&out);
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("add_base_pr_bad_numbers", shown));
    let out = repo.kardwt(&repo.base, &["add", "5", "--base", "pr/8"]);
    out.expect_code(2);
    assert!(
        out.stderr.starts_with(
            "error: --base pr/8: the remote origin has neither refs/pull/8/head nor \
             refs/merge-requests/8/head; nothing was created"
        ),
        "{out}"
    );
    unchanged(&out);
}

/// A GitLab remote of its own (only `refs/merge-requests/<n>/head`, no `refs/pull/`), named as
/// the base remote by the rules: the merge request's head, kept under that remote's name.
#[test]
fn add_base_pr_on_a_gitlab_remote_takes_the_merge_request_head() {
    let repo = TestRepo::new();
    let gitlab = repo.sibling("gitlab.git");
    let url = gitlab.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--bare",
            repo.origin.to_str().unwrap(),
            url,
        ],
    );
    repo.git(&repo.base, &["remote", "add", "gitlab", url]);
    repo.git(&repo.scratch, &["remote", "add", "gitlab", url]);
    let rules = repo.rules_with_prepare(false);
    repo.write_rules(&format!("{rules}  base:\n    remote: gitlab\n"));
    let main = repo.origin_main();
    let push = |parent: &str, name: &str| {
        push_change_to(&repo, "gitlab", parent, name, "refs/merge-requests/3/head")
    };
    let mr = push(&main, "MR3");

    repo.kardwt_ok(&repo.base, &["add", "3", "--base", "pr/3"]);
    let wt = repo.card_path("3");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), mr);
    assert_eq!(
        repo.git(&wt, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "card/3"
    );
    let rec = repo.record(&wt);
    assert_eq!(rec["base_remote"].as_str(), Some("gitlab"), "{rec:?}");
    assert_eq!(
        rec["base_ref"].as_str(),
        Some("refs/merge-requests/3/head"),
        "{rec:?}"
    );
    let kept = "refs/kardwt/remotes/gitlab/merge-requests/3/head";
    assert_eq!(repo.git(&repo.base, &["rev-parse", kept]).trim(), mr);
    let status = repo.kardwt_ok(&repo.base, &["status", "3"]);
    assert!(
        status.contains(&format!("behind:          0 commits of {kept}")),
        "{status}"
    );

    let moved = push(&mr, "MR3-more");
    repo.kardwt(&repo.base, &["gc"]).expect_code(0);
    assert_eq!(repo.git(&repo.base, &["rev-parse", kept]).trim(), moved);
    let status = repo.kardwt_ok(&repo.base, &["status", "3"]);
    assert!(
        status.contains(&format!("behind:          1 commit of {kept}")),
        "{status}"
    );
    let row = listed(&repo, "3");
    assert_eq!(row["behind"].as_u64(), Some(1), "{row}");

    // origin has no such request: asked of origin (the rules' remote changed back), refused.
    repo.write_rules(&rules);
    let out = repo.kardwt(&repo.base, &["add", "4", "--base", "pr/3"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("refs/pull/3/head nor refs/merge-requests/3/head"),
        "{out}"
    );
    assert!(!repo.card_path("4").exists(), "{out}");

    repo.kardwt_ok(&repo.base, &["remove", "3"]);
    assert!(!wt.exists());
}

/// In the bare layout the rules are the base commit's; a pull request's head is anyone's who
/// opened the request, so a card made from it is prepared by the rules of the last fetched
/// base, never by the request's own (here they would link `.env` into the tree).
#[test]
fn in_the_bare_layout_a_pull_request_never_brings_its_own_rules() {
    let repo = TestRepo::new();
    let s = &repo.scratch;
    std::fs::write(
        s.join("kardbrd.yml"),
        "worktree:\n  sharing:\n    env: disabled\n",
    )
    .unwrap();
    repo.git(s, &["add", "kardbrd.yml"]);
    repo.git(s, &["commit", "--quiet", "-m", "rules"]);
    repo.git(s, &["push", "--quiet", "origin", "main"]);
    std::fs::write(
        s.join("kardbrd.yml"),
        "worktree:\n  sharing:\n    env: link\n",
    )
    .unwrap();
    repo.git(s, &["commit", "--quiet", "-am", "the request's own rules"]);
    let head = repo.git(s, &["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(
        s,
        &[
            "push",
            "--quiet",
            "origin",
            "HEAD:refs/pull/7/head",
            "HEAD:refs/heads/side",
        ],
    );
    repo.git(s, &["reset", "--quiet", "--hard", "HEAD~1"]);

    let project = repo.sibling("project");
    let git_dir = project.join(".git");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--bare",
            origin,
            git_dir.to_str().unwrap(),
        ],
    );
    let fetch = "+refs/heads/*:refs/remotes/origin/*";
    repo.git(&git_dir, &["config", "remote.origin.fetch", fetch]);
    let shared = project.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join(".env"), "SECRET=1\n").unwrap();
    repo.git(&git_dir, &["config", "kardwt.sharedFrom", "shared"]);
    repo.kardwt_ok(&project, &["install-hooks"]);

    for (card, base) in [("7", "pr/7"), ("8", "refs/pull/7/head")] {
        let out = repo.kardwt(&project, &["add", card, "--base", base]);
        out.expect_code(0);
        let wt = PathBuf::from(out.stdout.trim());
        assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), head, "{out}");
        assert!(wt.join("kardbrd.yml").is_file(), "{out}");
        assert!(
            wt.join(".env").symlink_metadata().is_err(),
            "the request's rules were read:\n{out}"
        );
    }
    // The same commit as a branch of the remote is the team's own: its rules apply.
    let out = repo.kardwt(&project, &["add", "9", "--base", "side"]);
    out.expect_code(0);
    let wt = PathBuf::from(out.stdout.trim());
    assert!(wt.join(".env").symlink_metadata().is_ok(), "{out}");
}
