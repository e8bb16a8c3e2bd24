//! What a command refuses about a worktree, whole: trees kardwt has no record of, trees gone,
//! directories that are not trees, a card asked for from another base, adoptions that do not
//! match, trees that hold another repository; each refused tree left as it was.
use std::path::Path;

use crate::support::{pinned, pinned_case, TestRepo};

/// A managed card 3, an unrecorded tree at card 6's path (and one never checked out at card
/// 12's), card 7's branch checked out elsewhere, card 8's registered tree gone, a plain directory at card 9's path: what `add`,
/// `remove`, `release`, `select` and `prepare` refuse about each.
#[test]
fn refusals_about_a_tree_are_pinned_whole() {
    let repo = TestRepo::new();
    let three = repo.add_card("3");
    let six = repo.card_path("6");
    repo.add_unhooked_worktree(six.to_str().unwrap(), "card/6");
    let elsewhere = repo.sibling("elsewhere");
    repo.add_unhooked_worktree(elsewhere.to_str().unwrap(), "card/7");
    let eight = repo.card_path("8");
    repo.add_unhooked_worktree(eight.to_str().unwrap(), "card/8");
    std::fs::remove_dir_all(&eight).unwrap();
    let nine = repo.card_path("9");
    std::fs::create_dir(&nine).unwrap();
    std::fs::write(nine.join("keep.txt"), "mine").unwrap();
    let twelve = repo.card_path("12");
    repo.worktree_add_unhooked(&["--no-checkout", "-b", "card/12", twelve.to_str().unwrap()]);
    let oid = repo.origin_main();
    let inside = three.join("sub");
    let six_s = six.to_str().unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("add_unseeded", &["add", "6"]),
        ("add_checkout_never_ran", &["add", "12"]),
        ("remove_unrecorded", &["remove", "6"]),
        ("release_unrecorded", &["release", "6"]),
        ("add_branch_checked_out_elsewhere", &["add", "7"]),
        ("add_gone", &["add", "8"]),
        ("add_foreign", &["add", "9"]),
        ("select_foreign", &["select", "9", "--existing-or-base"]),
        ("add_from_another_base", &["add", "3", "--base", &oid]),
        (
            "add_root_inside_a_tree",
            &["--root", inside.to_str().unwrap(), "add", "5"],
        ),
        (
            "remove_gone_path_unrecorded",
            &["release", "--path", eight.to_str().unwrap()],
        ),
    ];
    let trees = repo.worktrees();
    let branches = repo.card_branches();
    let mut all = String::new();
    for (name, args) in cases {
        let out = repo.kardwt(&repo.base, args);
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("refusals_about_a_tree", all));
    assert_eq!(
        repo.worktrees(),
        trees,
        "a refused command changed the worktrees"
    );
    assert_eq!(repo.card_branches(), branches);
    assert!(six.join(".git").is_file(), "{six_s} was touched");
    assert_eq!(
        std::fs::read_to_string(nine.join("keep.txt")).unwrap(),
        "mine"
    );
    assert!(!inside.exists() && !repo.card_path("5").exists());
    assert_eq!(repo.record(&three)["state"].as_str(), Some("ready"));
}

/// Adoptions that do not match what is on disk: another path, another common dir, another
/// branch, a branch of another card, no worktree, a card that has one. Nothing is recorded.
#[test]
fn refused_adoptions_are_pinned_whole() {
    let repo = TestRepo::new();
    repo.add_card("3");
    let common = repo.common_dir();
    let tree = |name: &str, branch: &str| {
        let p = repo.sibling(name);
        repo.add_unhooked_worktree(p.to_str().unwrap(), branch);
        p
    };
    let a = tree("adopt-a", "card/a");
    let b = tree("adopt-b", "card/b");
    let c = tree("adopt-c", "feature/c");
    let d = tree("adopt-d", "card/e");
    let three = tree("adopt-3", "feature/three");
    let plain = repo.sibling("plain-f");
    std::fs::create_dir(&plain).unwrap();
    let entry = |card: &str, path: &Path, common: &Path, branch: &str| {
        format!(
            "    - {{card: {card}, path: '{}', common_dir: '{}', branch: {branch}}}\n",
            path.display(),
            common.display()
        )
    };
    let rules = [
        entry("a", &a, &common, "card/a"),
        entry("b", &b, Path::new("/elsewhere/.git"), "card/b"),
        entry("c", &c, &common, "card/c"),
        entry("d", &d, &common, "card/e"),
        entry("f", &plain, &common, "card/f"),
        entry("'3'", &three, &common, "feature/three"),
    ]
    .concat();
    repo.write_rules(&format!("worktree:\n  adoptions:\n{rules}"));
    let p = |p: &Path| p.to_str().unwrap().to_owned();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("another_path", vec!["a".into(), "--path".into(), p(&b)]),
        (
            "another_common_dir",
            vec!["b".into(), "--path".into(), p(&b)],
        ),
        ("another_branch", vec!["c".into(), "--path".into(), p(&c)]),
        (
            "branch_of_another_card",
            vec!["d".into(), "--path".into(), p(&d)],
        ),
        (
            "not_a_worktree",
            vec!["f".into(), "--path".into(), p(&plain)],
        ),
        (
            "card_has_a_worktree",
            vec!["3".into(), "--path".into(), p(&three)],
        ),
    ];
    let trees = repo.worktrees();
    let mut all = String::new();
    for (name, args) in &cases {
        let mut argv = vec!["adopt"];
        argv.extend(args.iter().map(String::as_str));
        let out = repo.kardwt(&repo.base, &argv);
        assert_eq!(out.code, 3, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_adoptions", all));
    assert_eq!(repo.worktrees(), trees);
    for t in [&a, &b, &c, &d, &three] {
        assert!(
            !repo.admin_dir(t).join("kardwt.toml").exists(),
            "{} recorded",
            t.display()
        );
    }
}

/// What `remove` and `gc` refuse about a managed tree: a locked one, one holding another
/// repository, a base that cannot be fetched or was never fetched, a record of another schema
/// or naming no branch ref, a card claimed by two records.
#[test]
fn refused_removals_and_collections_are_pinned_whole() {
    let repo = TestRepo::new();
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("build/\n");
    std::fs::write(&exclude, text).unwrap();
    let three = repo.add_card("3");
    let four = repo.add_card("4");
    let mut all = String::new();
    let mut run = |name: &str, args: &[&str], refused: bool| {
        let out = repo.kardwt(&repo.base, args);
        assert_eq!(out.code != 0, refused, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    };
    repo.git(&repo.base, &["worktree", "lock", four.to_str().unwrap()]);
    run("remove_locked", &["remove", "4"], true);
    repo.git(&repo.base, &["worktree", "unlock", four.to_str().unwrap()]);
    let inner = repo.nested_worktree(&three);
    run("remove_holding_a_worktree", &["remove", "3"], true);
    // A base that cannot be fetched, or was never fetched, keeps every tree and branch.
    repo.git(&repo.base, &["branch", "card/x"]);
    let origin = repo.origin.to_str().unwrap().to_owned();
    repo.git(
        &repo.base,
        &["remote", "set-url", "origin", "/nonexistent/origin.git"],
    );
    run("gc_unreachable", &["gc", "--branches"], false);
    repo.git(&repo.base, &["remote", "set-url", "origin", &origin]);
    repo.write_rules("worktree:\n  base:\n    ref: refs/heads/nope\n");
    run(
        "gc_offline_ref_never_fetched",
        &["gc", "--offline", "--branches"],
        false,
    );
    std::fs::remove_file(repo.rules_path()).unwrap();
    repo.git(&repo.base, &["remote", "set-head", "origin", "-d"]);
    run(
        "gc_offline_no_head",
        &["gc", "--offline", "--branches"],
        false,
    );
    // A record kardwt cannot read, or whose base is not a name git takes, is not kardwt's.
    let mut rec = repo.record(&four);
    rec.insert("schema".into(), toml::Value::Integer(2));
    std::fs::write(repo.record_path(&four), toml::to_string(&rec).unwrap()).unwrap();
    run("remove_record_of_another_schema", &["remove", "4"], true);
    rec.insert("schema".into(), toml::Value::Integer(1));
    rec.insert("base_ref".into(), toml::Value::String("main".into()));
    std::fs::write(repo.record_path(&four), toml::to_string(&rec).unwrap()).unwrap();
    run("remove_record_base_not_a_ref", &["remove", "4"], true);
    let record = std::fs::read(repo.record_path(&three)).unwrap();
    std::fs::write(repo.record_path(&four), &record).unwrap();
    run("status_claimed_twice", &["status", "3"], true);
    pinned(&repo).bind(|| insta::assert_snapshot!("refused_removals_and_collections", all));
    assert!(three.is_dir() && four.is_dir() && inner.join("notes.txt").is_file());
}

/// An orphan (a claim whose tree was removed behind kardwt's back) whose cleanup hook fails:
/// `gc --apply` and the next `add` say so whole, and the claim is kept.
#[test]
fn an_orphan_whose_cleanup_hook_fails_is_pinned_whole() {
    use crate::support::claims::claim_file;
    use crate::support::cleanup::rules_with_cleanup;
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, "echo 'volume busy' >&2\nexit 1"));
    let wt = repo.add_card("o1");
    repo.git(
        &repo.base,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let claim = std::fs::read_to_string(claim_file(&repo, "o1")).unwrap();
    let mut all = String::new();
    for (name, args) in [
        ("gc_apply", &["gc", "--apply"][..]),
        ("add", &["add", "o1"]),
    ] {
        let out = repo.kardwt(&repo.base, args);
        assert_ne!(out.code, 0, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
        assert_eq!(
            std::fs::read_to_string(claim_file(&repo, "o1")).unwrap(),
            claim,
            "{name}: the claim changed"
        );
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("orphan_cleanup_hook_failed", all));
    assert!(!wt.exists());
}
