//! `remove --delete-branch` deletes a card's branch only when no commit on it or named by its
//! reflog would be lost (reached by no other ref, and no commit of the base makes its change):
//! a merged branch whose reflog still names an amended-away commit is kept, and so is an
//! unmerged one under `--force` while its commits (a merge of main among them) are on no other
//! ref; each time saying why and how to delete it by hand. Pushed, `--force` deletes it.
use std::path::Path;

use crate::support::{Output, TestRepo};

/// Every commit a ref or reflog reaches.
fn reached(repo: &TestRepo) -> String {
    repo.git(&repo.base, &["rev-list", "--all", "--reflog"])
}

/// The `branch` step of `remove --json`'s output.
#[track_caller]
fn branch_step(out: &Output) -> serde_json::Value {
    out.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "branch")
        .cloned()
        .unwrap_or_else(|| panic!("no branch step:\n{out}"))
}

/// `word` as kardwt quotes it for sh: as it is when plain, else single-quoted.
fn sh_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c))
    {
        word.to_owned()
    } else {
        crate::support::sh_quote(Path::new(word))
    }
}

/// Commit a new file `name` in the tree `wt`; its commit.
fn commit(repo: &TestRepo, wt: &Path, name: &str) -> String {
    std::fs::write(wt.join(name), format!("{name}\n")).unwrap();
    repo.git(wt, &["add", name]);
    repo.git(wt, &["commit", "--quiet", "-m", name]);
    repo.git(wt, &["rev-parse", "HEAD"]).trim().to_owned()
}

#[test]
fn a_merged_branch_whose_reflog_names_an_amended_away_commit_is_kept() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    let amended_away = commit(&repo, &wt, "first.txt");
    std::fs::write(wt.join("first.txt"), "first, amended\n").unwrap();
    repo.git(&wt, &["commit", "--quiet", "-a", "--amend", "--no-edit"]);
    // Pushed and merged upstream (a fast-forward), then fetched: the tip is in the base.
    repo.git(&wt, &["push", "--quiet", "origin", "card/42:main"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
    assert!(reached(&repo).contains(&amended_away));

    let out = repo.kardwt(&repo.base, &["remove", "42", "--delete-branch", "--json"]);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert!(repo.branch_exists("card/42"), "branch deleted:\n{out}");
    assert!(
        reached(&repo).contains(&amended_away),
        "the amended-away commit is lost:\n{out}"
    );
    let step = branch_step(&out);
    assert_eq!(step["ok"], false, "{out}");
    let detail = step["detail"].as_str().unwrap();
    let quoted = sh_word(repo.base.to_str().unwrap());
    assert_eq!(
        detail,
        format!(
            "card/42 kept: commit {}, on the branch or in its reflog, is on no other ref and \
             origin/main has no commit with the same change: deleting the branch would lose it; \
             check it with git -C {quoted} log card/42 (and git -C {quoted} reflog card/42), \
             then delete it by hand: git -C {quoted} branch -D card/42",
            &amended_away[..12]
        ),
        "{out}"
    );

    // A merged branch whose reflog names only commits the base has goes.
    let wt = repo.add_card("43");
    repo.git(&wt, &["reset", "--quiet", "--hard", "card/42"]);
    let out = repo.kardwt(&repo.base, &["remove", "43", "--delete-branch", "--json"]);
    out.expect_code(0);
    assert!(!repo.branch_exists("card/43"), "merged branch kept:\n{out}");
}

#[test]
fn force_deletes_an_unmerged_branch_only_once_its_commits_are_on_another_ref() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    let first = commit(&repo, &wt, "work.txt");
    // main moves on and the card merges it: an unpushed merge commit on top.
    repo.commit_on_origin("main moves on");
    repo.git(&wt, &["fetch", "--quiet", "origin"]);
    repo.git(
        &wt,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "merge main",
            "origin/main",
        ],
    );
    let merge = repo.git(&wt, &["rev-parse", "HEAD"]).trim().to_owned();

    let out = repo.kardwt(
        &repo.base,
        &["remove", "42", "--delete-branch", "--force", "--json"],
    );
    out.expect_code(0);
    assert!(!wt.exists(), "{out}");
    assert!(
        repo.branch_exists("card/42"),
        "forced delete lost it:\n{out}"
    );
    let all = reached(&repo);
    assert!(all.contains(&first) && all.contains(&merge), "{out}");
    let step = branch_step(&out);
    assert_eq!(step["ok"], false, "{out}");
    let detail = step["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!(
            "card/42 kept: commit {} (and 1 more), on the branch or in its reflog, is on no \
             other ref",
            &first[..12]
        )) && detail.ends_with("branch -D card/42"),
        "{out}"
    );

    // Pushed, every commit is on a remote-tracking ref: --force deletes it.
    let wt = repo.add_card("43");
    commit(&repo, &wt, "pushed.txt");
    repo.git(&wt, &["push", "--quiet", "origin", "card/43"]);
    let out = repo.kardwt(
        &repo.base,
        &["remove", "43", "--delete-branch", "--force", "--json"],
    );
    out.expect_code(0);
    assert!(!repo.branch_exists("card/43"), "kept:\n{out}");
    assert_eq!(
        branch_step(&out)["detail"],
        "card/43 deleted (forced)",
        "{out}"
    );
}
