//! Verification and fail-closed refusal: foreign directories, edited
//! records and unseeded worktrees exit 3 from `add` and change nothing; drift is reported, never
//! repaired.
use std::path::Path;

use crate::support::{line, snapshot, TestRepo};

#[test]
fn verify_json_lists_every_check_for_a_ready_worktree() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("42");
    for args in [
        vec!["verify", "42", "--json"],
        vec!["verify", "--json", "--path", wt.to_str().unwrap()],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(0);
        let v = out.json();
        assert_eq!(v["path"], wt.to_str().unwrap(), "{out}");
        assert_eq!(v["card"], "42", "{out}");
        assert_eq!(v["verdict"], "verified", "{out}");
        assert_eq!(v["state"], "ready", "{out}");
        assert_eq!(v["drift"], false, "{out}");
        assert_eq!(v["expected_branch"], "card/42", "{out}");
        assert_eq!(v["head"], "card/42", "{out}");
        let checks = v["checks"].as_array().unwrap_or_else(|| panic!("{out}"));
        assert!(checks.len() >= 5, "expected every check listed:\n{out}");
        for c in checks {
            assert!(c["name"].is_string(), "{c}");
            assert_eq!(c["ok"], true, "{c}");
            assert!(c.get("detail").is_some(), "{c}");
        }
    }
    let plain = repo.kardwt(&repo.base, &["verify", "42"]);
    plain.expect_code(0);
}

#[test]
fn verify_of_an_absent_card_exits_1() {
    let repo = TestRepo::new();
    let out = repo.kardwt(&repo.base, &["verify", "99", "--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["verdict"], "absent", "{out}");
    assert!(!repo.root().exists());
}

#[test]
fn a_directory_kardwt_did_not_create_makes_add_exit_3_and_stays_untouched() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let dir = repo.card_path("9");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    std::fs::write(dir.join("sub/data"), "keep\n").unwrap();
    let before = snapshot(&repo.root());
    let base_before = repo.snapshot_base();

    let out = repo.kardwt(&repo.base, &["add", "9"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert!(out.stderr.starts_with("error: "), "{out}");
    assert!(
        out.stderr.contains(dir.to_str().unwrap()),
        "the refusal should name the path:\n{out}"
    );
    assert_eq!(
        snapshot(&repo.root()),
        before,
        "the foreign directory changed"
    );
    assert!(repo.card_branches().is_empty(), "a card branch was created");
    assert_eq!(repo.worktrees().len(), 1);
    assert!(repo.prepare_runs().is_empty());
    assert_eq!(repo.snapshot_base(), base_before);

    let out = repo.kardwt(&repo.base, &["verify", "9", "--json"]);
    out.expect_code(3);
    assert_eq!(out.json()["verdict"], "foreign", "{out}");
    let out = repo.kardwt(&repo.base, &["verify", "--path", dir.to_str().unwrap()]);
    out.expect_code(3);
    assert_eq!(
        snapshot(&repo.root()),
        before,
        "verify changed the foreign directory"
    );
}

/// Add card 10, edit one record key, then check `verify --path` and `add 10` exit 3 and leave
/// the worktree and its admin dir byte-identical.
fn edited_record_fails_closed(key: &str, value: impl Fn(&TestRepo, &Path) -> String) {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(true));
    let wt = repo.add_card("10");
    assert_eq!(repo.prepare_runs().len(), 1);
    let admin = repo.admin_dir(&wt);
    let new_value = value(&repo, &wt);
    repo.edit_record(&wt, key, &new_value);
    let wt_before = snapshot(&wt);
    let admin_before = snapshot(&admin);
    let branches_before = repo.card_branches();

    let out = repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()]);
    assert_eq!(out.code, 3, "verify after editing {key}:\n{out}");
    let out = repo.kardwt(
        &repo.base,
        &["verify", "--json", "--path", wt.to_str().unwrap()],
    );
    assert_eq!(out.code, 3, "verify --json after editing {key}:\n{out}");
    let v = out.json();
    let checks = v["checks"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert!(
        checks.iter().any(|c| c["ok"] == false),
        "no failing check reported after editing {key}:\n{out}"
    );
    let out = repo.kardwt(&repo.base, &["add", "10"]);
    assert_eq!(out.code, 3, "add after editing {key}:\n{out}");
    assert_eq!(out.stdout, "", "{out}");
    assert!(out.stderr.starts_with("error: "), "{out}");

    assert_eq!(snapshot(&wt), wt_before, "the worktree changed ({key})");
    assert_eq!(
        snapshot(&admin),
        admin_before,
        "the admin dir changed ({key})"
    );
    assert_eq!(repo.card_branches(), branches_before);
    assert_eq!(
        repo.prepare_runs().len(),
        1,
        "prepare ran on a refused worktree"
    );
    assert_eq!(repo.worktrees().len(), 2);
}

#[test]
fn an_edited_record_card_fails_closed() {
    edited_record_fails_closed("card", |_, _| "11".to_owned());
}

#[test]
fn an_edited_record_path_fails_closed() {
    edited_record_fails_closed("path", |repo, _| {
        repo.tmp
            .join("elsewhere/card-10")
            .to_str()
            .unwrap()
            .to_owned()
    });
}

#[test]
fn an_edited_record_branch_fails_closed() {
    edited_record_fails_closed("branch", |_, _| "card/other".to_owned());
}

#[test]
fn an_edited_record_common_dir_fails_closed() {
    edited_record_fails_closed("common_dir", |repo, _| {
        repo.tmp.join("other/.git").to_str().unwrap().to_owned()
    });
}

#[test]
fn an_unparseable_record_fails_closed() {
    let repo = TestRepo::new();
    let wt = repo.add_card("12");
    std::fs::write(repo.record_path(&wt), "schema = [[[ not toml\n").unwrap();
    let admin_before = snapshot(&repo.admin_dir(&wt));
    let out = repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()]);
    out.expect_code(3);
    let out = repo.kardwt(&repo.base, &["add", "12"]);
    out.expect_code(3);
    assert_eq!(snapshot(&repo.admin_dir(&wt)), admin_before);
}

#[test]
fn an_unseeded_worktree_verifies_1_and_add_refuses_it_naming_prepare_path() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    std::fs::create_dir_all(repo.root()).unwrap();
    let dir = repo.card_path("60");
    repo.add_unhooked_worktree(dir.to_str().unwrap(), "card/60");
    let before = snapshot(&dir);
    let admin = repo.admin_dir(&dir);
    let admin_before = snapshot(&admin);

    let out = repo.kardwt(
        &repo.base,
        &["verify", "--json", "--path", dir.to_str().unwrap()],
    );
    out.expect_code(1);
    assert_eq!(out.json()["verdict"], "unseeded", "{out}");

    let out = repo.kardwt(&repo.base, &["add", "60"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert!(
        out.stderr.contains("git kardwt prepare --path"),
        "the refusal must name `git kardwt prepare --path`:\n{out}"
    );
    assert_eq!(snapshot(&dir), before);
    assert_eq!(snapshot(&admin), admin_before);
    assert!(!admin.join("kardwt.toml").exists());
    assert!(repo.prepare_runs().is_empty());
}

#[test]
fn drift_is_reported_and_never_repaired() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("30");
    repo.git(&wt, &["switch", "--quiet", "-c", "other"]);

    let out = repo.kardwt(&wt, &["verify"]);
    out.expect_code(0);
    let out = repo.kardwt(&wt, &["verify", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["drift"], true, "{out}");
    assert_eq!(v["expected_branch"], "card/30", "{out}");
    assert_eq!(v["head"], "other", "{out}");
    assert_eq!(v["card"], "30", "{out}");
    assert_eq!(v["path"], wt.to_str().unwrap(), "{out}");

    // Reuse does not switch it back either.
    let out = repo.kardwt_ok(&repo.base, &["add", "30"]);
    assert_eq!(out, line(&wt));
    assert_eq!(
        repo.git(&wt, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "other"
    );
    assert_eq!(repo.record(&wt)["branch"].as_str(), Some("card/30"));

    // A detached HEAD is drift too, reported by object id.
    repo.git(&wt, &["switch", "--quiet", "--detach"]);
    let oid = repo.git(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    let out = repo.kardwt(&wt.join("src"), &["verify", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["drift"], true, "{out}");
    assert_eq!(v["head"], oid.as_str(), "{out}");
    assert!(repo.git_output(&wt, &["symbolic-ref", "-q", "HEAD"]).code != 0);
}

#[test]
fn a_card_claimed_by_two_records_is_malformed() {
    let repo = TestRepo::new();
    let ten = repo.add_card("10");
    let eleven = repo.add_card("11");
    // Make card 11's record claim card 10 consistently (card and branch both say 10).
    repo.edit_record(&eleven, "card", "10");
    repo.edit_record(&eleven, "branch", "card/10");
    let before = (snapshot(&ten), snapshot(&repo.admin_dir(&ten)));
    // To stay fast with many worktrees, verify reads only the worktree's own record and its
    // card's claim, which names the worktree that owns card 10: the stray record is malformed,
    // card 10's tree is not.
    let out = repo.kardwt(&repo.base, &["verify", "--path", eleven.to_str().unwrap()]);
    out.expect_code(3);
    assert!(out.stdout.contains("FAIL card unique"), "{out}");
    repo.kardwt_ok(&repo.base, &["verify", "10"]);
    let selected = repo.kardwt_ok(&repo.base, &["select", "10", "--existing-or-base"]);
    assert_eq!(selected.trim_end(), ten.to_str().unwrap());
    // add, which scans every record under the lock, still refuses the doubly claimed card.
    let out = repo.kardwt(&repo.base, &["add", "10"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!((snapshot(&ten), snapshot(&repo.admin_dir(&ten))), before);
}

#[test]
fn a_worktree_moved_by_git_fails_closed_until_recorded_again() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("42");
    let moved = repo.tmp.join("moved 42");
    repo.git(
        &repo.base,
        &[
            "worktree",
            "move",
            wt.to_str().unwrap(),
            moved.to_str().unwrap(),
        ],
    );
    assert!(
        repo.record_path(&moved).is_file(),
        "git keeps the admin dir on move"
    );
    let admin_before = snapshot(&repo.admin_dir(&moved));

    let out = repo.kardwt(&repo.base, &["verify", "--path", moved.to_str().unwrap()]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("git kardwt prepare --path"),
        "the hint names the fix for a moved worktree:\n{out}"
    );
    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert!(
        out.stderr.contains("git kardwt prepare --path"),
        "the hint names the fix for a moved worktree:\n{out}"
    );
    assert!(
        !wt.exists(),
        "add re-created the card beside its moved worktree"
    );
    assert_eq!(repo.worktrees().len(), 2);
    assert_eq!(snapshot(&repo.admin_dir(&moved)), admin_before);
    assert_eq!(repo.prepare_runs().len(), 1);
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let e = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == moved.to_str().unwrap())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(e["state"], "foreign", "{out}");
}
