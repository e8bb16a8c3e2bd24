//! `gc --include-failed`: a tree left `failed` or `preparing` longer than `--older-than`, clean,
//! with no commit of its own and no process inside, is collected without any evidence that work
//! landed (there was none to land); one with uncommitted work, a commit on no remote or a
//! process inside stays.
use std::collections::BTreeSet;

use crate::support::cleanup::Sleeper;
use crate::support::TestRepo;

/// `gc args… --json` in the base, asserting exit 0.
#[track_caller]
fn gc_json(repo: &TestRepo, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["gc"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = repo.kardwt(&repo.base, &all);
    out.expect_code(0);
    out.json()
}

/// The cards listed under `key` (`candidates` or `kept`) of a gc JSON report.
fn listed(v: &serde_json::Value, key: &str) -> BTreeSet<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}: {v}"))
        .iter()
        .map(|c| c["card"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn set(cards: &[&str]) -> BTreeSet<String> {
    cards.iter().map(|c| c.to_string()).collect()
}

#[test]
fn include_failed_collects_a_clean_failed_or_preparing_tree_with_no_commit_of_its_own() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("fail", "prepare broke", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    // A prepare that really failed: the tree stays, recorded failed.
    repo.add_unhooked_worktree("../f", "card/f");
    let f = repo.sibling("f");
    let out = repo.kardwt(&repo.base, &["prepare", "--path", f.to_str().unwrap()]);
    out.expect_code(4);
    assert_eq!(repo.record(&f)["state"].as_str(), Some("failed"), "{out}");
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_path_failed",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    std::fs::remove_file(&flag).unwrap();
    // One left preparing (kardwt killed mid-prepare), one failed with a file the user made,
    // one failed with a commit of its own that is on no remote, one failed with a process in it.
    let p = repo.add_card("p");
    repo.edit_record(&p, "state", "preparing");
    let d = repo.add_card("d");
    std::fs::write(d.join("notes.txt"), "mine\n").unwrap();
    repo.edit_record(&d, "state", "failed");
    let c = repo.add_card("c");
    std::fs::write(c.join("work.txt"), "work\n").unwrap();
    repo.git(&c, &["add", "--", "work.txt"]);
    repo.git(&c, &["commit", "--quiet", "-m", "work"]);
    repo.edit_record(&c, "state", "failed");
    let u = repo.add_card("u");
    repo.edit_record(&u, "state", "failed");
    let mut sleeper = Sleeper::start(&repo, &u);

    let v = gc_json(&repo, &["--older-than", "0s"]);
    assert_eq!(
        listed(&v, "candidates"),
        set(&[]),
        "without --include-failed: {v}"
    );
    let v = gc_json(&repo, &["--include-failed", "--older-than", "24h"]);
    assert_eq!(listed(&v, "candidates"), set(&[]), "younger than 24h: {v}");

    let v = gc_json(&repo, &["--include-failed", "--older-than", "0s"]);
    assert_eq!(listed(&v, "candidates"), set(&["f", "p"]), "{v}");
    assert_eq!(listed(&v, "kept"), set(&["c", "d", "u"]), "{v}");
    for card in v["candidates"].as_array().unwrap() {
        let state = if card["card"] == "f" {
            "failed"
        } else {
            "preparing"
        };
        let reason = card["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(&format!("left {state} since "))
                && reason.contains("no commit of its own"),
            "{v}"
        );
    }
    assert!(f.exists() && p.exists(), "the dry run removed a tree");

    let v = gc_json(
        &repo,
        &["--include-failed", "--older-than", "0s", "--apply"],
    );
    assert_eq!(listed(&v, "candidates"), set(&["f", "p"]), "{v}");
    for card in v["candidates"].as_array().unwrap() {
        assert_eq!(card["outcome"], "removed", "{v}");
    }
    assert!(!f.exists() && !repo.is_registered(&f), "{v}");
    assert!(!p.exists() && !repo.is_registered(&p), "{v}");
    assert!(repo.branch_exists("card/f") && repo.branch_exists("card/p"));
    assert_eq!(
        std::fs::read_to_string(d.join("notes.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        repo.git(&c, &["log", "-1", "--format=%s"]).trim(),
        "work",
        "the unpushed commit's tree was touched"
    );
    assert!(u.exists() && repo.is_registered(&u), "{v}");
    assert!(sleeper.alive(), "gc signalled a process: {v}");
}
