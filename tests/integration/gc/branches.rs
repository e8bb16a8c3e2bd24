//! `gc --branches` deletes a `card/*` branch only when no commit on it would be lost: each is
//! on a ref kardwt did not make, or a commit of the base makes the same change.
use std::path::Path;

use crate::support::TestRepo;

/// Commit `name.txt` holding `body` in `wt` (a new file or a new version).
fn write_and_commit(repo: &TestRepo, wt: &Path, name: &str, body: &str) {
    std::fs::write(wt.join(format!("{name}.txt")), body).unwrap();
    repo.git(wt, &["add", "--", &format!("{name}.txt")]);
    repo.git(wt, &["commit", "--quiet", "-m", &format!("{name}: {body}")]);
}

/// `gc --branches [--apply] --json`: the lists of deleted/candidate and kept branches, with
/// each kept branch's reason.
#[track_caller]
fn branches(repo: &TestRepo, apply: bool) -> (Vec<String>, Vec<(String, String)>) {
    let mut args = vec!["gc", "--branches", "--json"];
    if apply {
        args.push("--apply");
    }
    let out = repo.kardwt(&repo.base, &args);
    out.expect_code(0);
    let v = out.json();
    let names = |list: &str| -> Vec<(String, String)> {
        v["branches"][list]
            .as_array()
            .unwrap_or_else(|| panic!("no branches.{list}: {v}"))
            .iter()
            .map(|b| {
                let outcome = b["outcome"].as_str().unwrap_or("").to_owned();
                let why = b["reason"].as_str().unwrap().to_owned();
                let shown = if outcome.starts_with("kept") {
                    outcome
                } else {
                    why
                };
                (b["branch"].as_str().unwrap().to_owned(), shown)
            })
            .collect()
    };
    let candidates = names("candidates");
    let mut kept = names("kept");
    let mut gone = Vec::new();
    for (b, why) in candidates {
        if why.starts_with("kept") {
            kept.push((b, why));
        } else {
            gone.push(b);
        }
    }
    gone.sort();
    kept.sort();
    (gone, kept)
}

/// A card whose two commits cancel out (a file added, then the change reverted) has the base's
/// tree, so merging it changes nothing: its commits are still work on no other ref, and gc
/// keeps the branch, saying which commit it would lose. Once another branch, or the remote,
/// has those commits, nothing is lost and the branch goes.
#[test]
fn a_branch_whose_commits_cancel_out_is_kept_until_another_ref_has_them() {
    let repo = TestRepo::new();
    let cx = repo.add_card("cx");
    write_and_commit(&repo, &cx, "work", "a day's work\n");
    let work = repo.git(&cx, &["rev-parse", "HEAD"]).trim().to_owned();
    repo.git(&cx, &["revert", "--no-edit", "HEAD"]);
    let tip = repo.git(&cx, &["rev-parse", "HEAD"]).trim().to_owned();
    assert_eq!(
        repo.git(&cx, &["rev-parse", "HEAD^{tree}"]),
        repo.git(&cx, &["rev-parse", "origin/main^{tree}"]),
        "the commits do not cancel out"
    );
    repo.kardwt_ok(&repo.base, &["remove", "cx"]);

    let (gone, kept) = branches(&repo, false);
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, "card/cx");
    assert!(
        kept[0].1.contains(&work[..12])
            && kept[0].1.contains("(and 1 more)")
            && kept[0].1.contains("deleting the branch would lose it"),
        "{kept:?}"
    );
    let (gone, _) = branches(&repo, true);
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/heads/card/cx"])
            .trim(),
        tip,
        "--apply deleted the branch"
    );

    // A branch of the user's own holds the tip: deleting card/cx loses nothing.
    repo.git(&repo.base, &["branch", "keep-it", &tip]);
    let (gone, kept) = branches(&repo, true);
    assert_eq!(gone, ["card/cx"], "{kept:?}");
    assert!(!repo.branch_exists("card/cx"));
    assert_eq!(repo.git(&repo.base, &["rev-parse", "keep-it"]).trim(), tip);
}

/// A card rebased onto the base upstream (its commits picked with new ids) and no longer on
/// the remote is deleted: each commit has one in the base with the same change. A squash-merged
/// card whose remote branch is gone is kept: the squash commit is no one commit's equivalent,
/// so gc cannot show that nothing is lost (the manual says how to delete it by hand).
#[test]
fn a_rebased_branch_goes_and_a_squashed_one_gone_from_the_remote_is_kept() {
    let repo = TestRepo::new();
    let rb = repo.add_card("rb");
    write_and_commit(&repo, &rb, "rb-one", "one\n");
    write_and_commit(&repo, &rb, "rb-two", "two\n");
    let sq = repo.add_card("sq");
    write_and_commit(&repo, &sq, "sq", "first\n");
    write_and_commit(&repo, &sq, "sq", "second\n");
    for (wt, branch) in [(&rb, "card/rb"), (&sq, "card/sq")] {
        repo.git(wt, &["push", "--quiet", "origin", branch]);
    }
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    repo.commit_on_origin("main moves on");
    repo.git(
        &repo.scratch,
        &["pull", "--quiet", "--ff-only", "origin", "main"],
    );
    repo.git(
        &repo.scratch,
        &["cherry-pick", "origin/main..origin/card/rb"],
    );
    repo.git(
        &repo.scratch,
        &["merge", "--quiet", "--squash", "origin/card/sq"],
    );
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "sq (squashed)"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    // The remote deletes the merged branches, and the base's fetch prunes them.
    for branch in ["card/rb", "card/sq"] {
        repo.git(
            &repo.scratch,
            &["push", "--quiet", "origin", "--delete", branch],
        );
    }
    repo.git(&repo.base, &["fetch", "--quiet", "--prune", "origin"]);
    repo.kardwt_ok(&repo.base, &["remove", "rb"]);
    repo.kardwt_ok(&repo.base, &["remove", "sq"]);

    let (gone, kept) = branches(&repo, true);
    assert_eq!(gone, ["card/rb"], "{kept:?}");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, "card/sq");
    assert!(
        kept[0].1.contains("deleting the branch would lose it"),
        "{kept:?}"
    );
    assert!(repo.branch_exists("card/sq") && !repo.branch_exists("card/rb"));
}

/// A commit amended away stays in the branch's reflog, which goes with the branch: a merged
/// card with one is kept, naming that commit. Once the reflog no longer holds it (the user
/// expired it), nothing is lost and the branch goes.
#[test]
fn a_merged_branch_whose_reflog_holds_an_amended_commit_is_kept() {
    let repo = TestRepo::new();
    let am = repo.add_card("am");
    write_and_commit(&repo, &am, "draft", "first try\n");
    let amended = repo.git(&am, &["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::write(am.join("draft.txt"), "second try\n").unwrap();
    repo.git(&am, &["commit", "--quiet", "--all", "--amend", "--no-edit"]);
    repo.push_and_merge(&am, "card/am");
    repo.kardwt_ok(&repo.base, &["remove", "am"]);

    let (gone, kept) = branches(&repo, true);
    assert!(gone.is_empty(), "{gone:?}");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        kept[0].1.contains(&format!(
            "commit {}, on the branch or in its reflog, is on no other ref",
            &amended[..12]
        )),
        "{kept:?}"
    );
    assert!(repo.branch_exists("card/am"));

    repo.git(
        &repo.base,
        &[
            "reflog",
            "expire",
            "--expire-unreachable=now",
            "refs/heads/card/am",
        ],
    );
    let (gone, kept) = branches(&repo, true);
    assert_eq!(gone, ["card/am"], "{kept:?}");
}
