//! Orphaned claims and `git kardwt gc`: a claim whose worktree vanished behind kardwt's back
//! (`git worktree remove`, `rm -rf` and prune, the directory alone deleted) is shown by `list`
//! and `doctor` and released by `gc --apply`; a claim whose path another repository's worktree
//! now holds is dropped, and a malformed claim is never acted on.
use std::path::PathBuf;

use crate::support::claims::claim_file;
use crate::support::{sh_quote, yaml_str, TestRepo};

/// How a runner makes a worktree vanish behind kardwt's back.
#[derive(Clone, Copy, Debug)]
enum Vanish {
    /// `git worktree remove` (Claude Code).
    GitRemove,
    /// `rm -rf` then `git worktree prune` (Claude Squad, vibe-kanban).
    RmAndPrune,
    /// The directory deleted only (Conductor): git still lists it, prunable.
    DirectoryOnly,
}

/// One vanishing path: list and doctor show the orphan, gc lists it and changes
/// nothing, gc --apply runs the cleanup hook in the base with KARDWT_REASON=orphan, logs
/// `released` and deletes the claim, and leaves the process still sitting in the vanished path
/// alone (releasing an orphan signals nothing).
fn orphan_is_shown_then_released(how: Vanish) {
    use crate::support::cleanup::Sleeper;
    let repo = TestRepo::new();
    let log = repo.tmp.join("cleanup.log");
    let cleanup = repo.write_helper(
        "cleanup",
        &format!(
            "echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_PHASE $(pwd) $KARDWT_WORKTREE\" >> {}\n",
            sh_quote(&log)
        ),
    );
    repo.write_rules(&format!(
        "{}  cleanup:\n    argv: [{}]\n",
        repo.rules_with_prepare(false),
        yaml_str(&cleanup)
    ));
    let cleanup_lines = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let wt = repo.add_card("o1");
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    let wt_s = wt.to_str().unwrap();
    match how {
        Vanish::GitRemove => {
            repo.git(&repo.base, &["worktree", "remove", wt_s]);
        }
        Vanish::RmAndPrune => {
            std::fs::remove_dir_all(&wt).unwrap();
            repo.git(&repo.base, &["worktree", "prune"]);
        }
        Vanish::DirectoryOnly => std::fs::remove_dir_all(&wt).unwrap(),
    }
    assert!(!wt.exists(), "{how:?}");
    assert!(claim_file(&repo, "o1").exists(), "{how:?}: no claim left");

    // list shows it (an orphan, or prunable while git still lists it).
    let row = repo
        .list_row(&wt)
        .unwrap_or_else(|| panic!("{how:?}: list does not show {wt_s}"));
    let expected = match how {
        Vanish::DirectoryOnly => "prunable",
        _ => "orphan",
    };
    assert_eq!(row["state"].as_str(), Some(expected), "{how:?}: {row}");
    assert_eq!(row["card"].as_str(), Some("o1"), "{how:?}: {row}");
    // doctor names it.
    let doctor = repo.kardwt(&repo.base, &["doctor", "--json"]);
    let checks = doctor.json()["checks"].as_array().unwrap().clone();
    assert!(
        checks.iter().any(|c| c["check"] == "orphan"
            && c["ok"] == false
            && c["detail"].as_str().unwrap_or("").contains(wt_s)),
        "{how:?}: doctor does not show the orphan:\n{doctor}"
    );
    // gc lists it and, as a dry run, releases nothing.
    let dry = repo.kardwt(&repo.base, &["gc"]);
    dry.expect_code(0);
    assert!(
        dry.stdout
            .contains(&format!("would collect card o1 at {wt_s}")),
        "{how:?}:\n{dry}"
    );
    assert!(sleeper.alive(), "{how:?}: the dry run killed the process");
    assert!(cleanup_lines().is_empty(), "{how:?}");
    assert!(claim_file(&repo, "o1").exists());

    // gc --apply releases it.
    let applied = repo.kardwt(&repo.base, &["gc", "--apply"]);
    applied.expect_code(0);
    // Releasing an orphan signals no process, even one whose cwd was deleted with it.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        sleeper.alive(),
        "{how:?}: gc --apply ended the process:\n{applied}"
    );
    assert_eq!(
        cleanup_lines(),
        vec![format!("o1 orphan cleanup {} {wt_s}", repo.base.display())],
        "{how:?}: the cleanup hook did not run once in the base as orphan:\n{applied}"
    );
    assert!(
        !claim_file(&repo, "o1").exists(),
        "{how:?}: the claim stayed:\n{applied}"
    );
    assert!(
        repo.events(Some("o1"))
            .iter()
            .any(|e| e["event"] == "released" && e["path"] == wt_s),
        "{how:?}: no released event"
    );
    assert!(repo.list_row(&wt).is_none(), "{how:?}: still listed");
    assert!(!repo.is_registered(&wt), "{how:?}: still registered");
    // And nothing is left to collect.
    let again = repo.kardwt(&repo.base, &["gc"]);
    assert!(!again.stdout.contains("o1"), "{how:?}:\n{again}");
}

#[test]
fn an_orphan_of_git_worktree_remove_is_released_by_gc_apply() {
    orphan_is_shown_then_released(Vanish::GitRemove);
}

#[test]
fn an_orphan_of_rm_rf_and_prune_is_released_by_gc_apply() {
    orphan_is_shown_then_released(Vanish::RmAndPrune);
}

#[test]
fn an_orphan_whose_directory_alone_was_deleted_is_released_by_gc_apply() {
    orphan_is_shown_then_released(Vanish::DirectoryOnly);
}

/// Rules with the standard prepare script and a cleanup hook that logs
/// `<card> <reason> <KARDWT_WORKTREE>` to `<tmp>/cleanup.log`.
fn rules_logging_cleanup(repo: &TestRepo) -> (String, PathBuf) {
    let log = repo.tmp.join("cleanup.log");
    let cleanup = repo.write_helper(
        "cleanup",
        &format!(
            "echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_WORKTREE\" >> {}\n",
            sh_quote(&log)
        ),
    );
    let rules = format!(
        "{}  cleanup:\n    argv: [{}]\n",
        repo.rules_with_prepare(false),
        yaml_str(&cleanup)
    );
    (rules, log)
}

/// Repo A's card o2 was removed behind kardwt's back and repository B then made a
/// worktree of its own at the same path, with a process in it. A's claim is no orphan to
/// release: `gc --apply` in A drops the claim and touches nothing at that path (no signal, no
/// cleanup hook, no file).
#[test]
fn a_claim_whose_path_now_holds_another_repositorys_worktree_is_dropped_and_nothing_is_touched() {
    use crate::support::cleanup::Sleeper;
    let a = TestRepo::new();
    let (rules, log) = rules_logging_cleanup(&a);
    a.write_rules(&rules);
    let wt = a.add_card("o2");
    a.git(&a.base, &["worktree", "remove", wt.to_str().unwrap()]);
    assert!(!wt.exists() && claim_file(&a, "o2").exists());

    let b = TestRepo::new();
    b.worktree_add_unhooked(&[wt.to_str().unwrap(), "-b", "b-work"]);
    assert!(b.is_registered(&wt));
    let mut sleeper = Sleeper::start(&b, &wt.join("src"));
    let tree_before = crate::support::snapshot(&wt);
    let b_admin = b.admin_dir(&wt);
    let b_admin_before = crate::support::snapshot(&b_admin);

    let applied = a.kardwt(&a.base, &["gc", "--apply"]);
    applied.expect_code(0);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        sleeper.alive(),
        "repo A's gc ended repo B's process:\n{applied}"
    );
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "the cleanup hook ran for a path another repository holds:\n{applied}"
    );
    assert!(
        !claim_file(&a, "o2").exists(),
        "the claim was not dropped:\n{applied}"
    );
    assert_eq!(crate::support::snapshot(&wt), tree_before, "{applied}");
    assert_eq!(crate::support::snapshot(&b_admin), b_admin_before);
    assert!(b.is_registered(&wt));
    assert!(a.list_row(&wt).is_none(), "{applied}");
}

/// A claim naming the base, an ancestor of the base, or a path outside the
/// worktree root it was made under is malformed: `list` and `doctor` report it, and `gc
/// --apply` (and `add` of that card) never act on it: no signal, no cleanup hook, the claim
/// file kept as it is.
#[test]
fn a_claim_naming_the_base_or_a_path_outside_its_root_is_malformed_and_never_acted_on() {
    use crate::support::cleanup::Sleeper;
    let repo = TestRepo::new();
    let (rules, log) = rules_logging_cleanup(&repo);
    repo.write_rules(&rules);
    repo.add_card("c1");
    let template = std::fs::read_to_string(claim_file(&repo, "c1")).unwrap();
    let c1_path = repo.card_path("c1");
    let outside = repo.tmp.join("elsewhere").join("card-x3");
    let bad = [
        ("x1", repo.base.clone()),
        ("x2", repo.tmp.clone()),
        ("x3", outside.clone()),
    ];
    for (card, path) in &bad {
        let text = template
            .replace("\"c1\"", &format!("\"{card}\""))
            .replace(c1_path.to_str().unwrap(), path.to_str().unwrap())
            .replace("card/c1", &format!("card/{card}"));
        let mut t: toml::Table = text.parse().unwrap();
        t.insert("admin".into(), toml::Value::String(format!("{card}-gone")));
        std::fs::write(claim_file(&repo, card), toml::to_string(&t).unwrap()).unwrap();
    }
    let claims_before: Vec<String> = bad
        .iter()
        .map(|(card, _)| std::fs::read_to_string(claim_file(&repo, card)).unwrap())
        .collect();
    let mut sleeper = Sleeper::start(&repo, &repo.base.join("src"));

    let rows = repo.list_json();
    for (card, path) in &bad {
        let row = rows
            .iter()
            .find(|r| r["card"] == *card)
            .unwrap_or_else(|| panic!("list does not show claim {card}: {rows:#?}"));
        assert_eq!(row["state"], "malformed", "{row}");
        assert_eq!(row["path"], path.to_str().unwrap(), "{row}");
    }
    let doctor = repo.kardwt(&repo.base, &["doctor", "--json"]);
    let checks = doctor.json()["checks"].as_array().unwrap().clone();
    for (card, _) in &bad {
        assert!(
            checks.iter().any(|c| c["check"] == "claim"
                && c["ok"] == false
                && c["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains(&format!("card {card}"))),
            "doctor does not report claim {card}:\n{doctor}"
        );
    }
    let applied = repo.kardwt(&repo.base, &["gc", "--apply"]);
    applied.expect_code(0);
    let out = repo.kardwt(&repo.base, &["add", "x3"]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_claim_malformed",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        sleeper.alive(),
        "a process in the base was ended:\n{applied}"
    );
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "a cleanup hook ran for a malformed claim:\n{applied}"
    );
    for ((card, _), before) in bad.iter().zip(&claims_before) {
        assert_eq!(
            std::fs::read_to_string(claim_file(&repo, card))
                .ok()
                .as_ref(),
            Some(before),
            "claim {card} changed:\n{applied}"
        );
    }
    assert!(!outside.exists());
}
