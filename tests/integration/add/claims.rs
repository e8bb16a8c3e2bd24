//! Claims: one file per card under `<common dir>/kardwt/claims/`, an intent while
//! `git worktree add` runs, complete with the record, deleted last on removal; a second claim
//! on a card is refused; repositories with records but no claims are migrated by the first
//! locked command; `add` of a card whose tree vanished releases the orphaned claim first.
//! (The orphans `gc` releases: `gc/orphan_claims.rs`.)
use std::path::{Path, PathBuf};

use crate::support::claims::{claim, claim_file};
use crate::support::{sh_quote, TestRepo};

/// Point the base's hooks at a directory whose `post-checkout` (which `git worktree add` runs)
/// copies card `card`'s claim, as it is at that moment, to the returned file.
fn spy_on_claim_during_worktree_add(repo: &TestRepo, card: &str) -> PathBuf {
    let hooks = repo.tmp.join("spy-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let seen = repo.tmp.join("claim-seen");
    let script = format!(
        "#!/bin/sh\ncat {} > {} 2>&1 || echo none > {}\n",
        sh_quote(&claim_file(repo, card)),
        sh_quote(&seen),
        sh_quote(&seen)
    );
    let hook = hooks.join("post-checkout");
    std::fs::write(&hook, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(
        &repo.base,
        &["config", "core.hooksPath", hooks.to_str().unwrap()],
    );
    seen
}

#[test]
fn a_claim_is_an_intent_during_worktree_add_complete_with_the_record_and_deleted_last() {
    let repo = TestRepo::new();
    let seen = spy_on_claim_during_worktree_add(&repo, "c1");
    let path = repo.add_card("c1");

    // While git created the tree, the claim already existed as an intent naming the path.
    let during: toml::Table = std::fs::read_to_string(&seen)
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("no claim while git worktree add ran: {e}"));
    assert_eq!(during["state"].as_str(), Some("intent"), "{during:?}");
    assert_eq!(during["path"].as_str(), path.to_str(), "{during:?}");

    // Once the record exists, the claim is complete and names its admin dir and branch.
    let done = claim(&repo, "c1");
    assert_eq!(done["state"].as_str(), Some("complete"), "{done:?}");
    assert_eq!(done["card"].as_str(), Some("c1"));
    assert_eq!(done["path"].as_str(), path.to_str());
    assert_eq!(done["branch"].as_str(), Some("card/c1"));
    let admin = repo.admin_dir(&path);
    assert_eq!(
        done["admin"].as_str(),
        admin.file_name().and_then(|n| n.to_str())
    );

    // Removal deletes it, after the tree is gone.
    repo.kardwt_ok(&repo.base, &["remove", "c1"]);
    assert!(!path.exists());
    assert!(
        !claim_file(&repo, "c1").exists(),
        "the claim outlived removal"
    );
}

#[test]
fn a_card_claimed_by_a_live_worktree_cannot_be_claimed_again() {
    let repo = TestRepo::new();
    let path = repo.add_card("c1");
    // A claim of card c2 that names c1's live tree (as another kardwt left it): `add c2`
    // refuses to claim c2 a second time and creates nothing.
    let text = std::fs::read_to_string(claim_file(&repo, "c1"))
        .unwrap()
        .replace("\"c1\"", "\"c2\"");
    std::fs::write(claim_file(&repo, "c2"), &text).unwrap();
    let out = repo.kardwt(&repo.base, &["add", "c2"]);
    out.expect_code(3);
    assert!(out.stderr.contains("already claimed"), "{out}");
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_card_already_claimed",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(!repo.card_path("c2").exists(), "{out}");
    assert!(!repo.card_branches().contains(&"card/c2".to_owned()));
    assert_eq!(
        std::fs::read_to_string(claim_file(&repo, "c2")).unwrap(),
        text
    );
    assert!(path.is_dir());
}

#[test]
fn records_without_claims_are_migrated_by_the_first_locked_command_once() {
    let repo = TestRepo::new();
    let p1 = repo.add_card("m1");
    let p2 = repo.add_card("m2");
    std::fs::remove_dir_all(repo.common_dir().join("kardwt/claims")).unwrap();

    // A read-only command takes no lock and migrates nothing.
    repo.kardwt_ok(&repo.base, &["verify", "m1"]);
    assert!(!claim_file(&repo, "m1").exists());

    // The first locked command does.
    repo.add_card("m3");
    for (card, path) in [("m1", &p1), ("m2", &p2)] {
        let c = claim(&repo, card);
        assert_eq!(c["state"].as_str(), Some("complete"), "{c:?}");
        assert_eq!(c["path"].as_str(), path.to_str(), "{c:?}");
    }
    assert_eq!(claim(&repo, "m3")["state"].as_str(), Some("complete"));

    // Idempotent: another locked command rewrites nothing.
    let before = std::fs::read(claim_file(&repo, "m1")).unwrap();
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let t1 = mtime(&claim_file(&repo, "m1"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    repo.add_card("m4");
    assert_eq!(std::fs::read(claim_file(&repo, "m1")).unwrap(), before);
    assert_eq!(mtime(&claim_file(&repo, "m1")), t1);
}

/// `add` of a card whose worktree was removed behind kardwt's back releases the orphan claim
/// first (its cleanup hook as orphan; its process is left alone: releasing an orphan signals
/// nothing) and then claims it again.
#[test]
fn add_of_a_card_whose_tree_was_removed_behind_its_back_releases_the_orphan_first() {
    use crate::support::cleanup::{cleanup_lines, rules_with_cleanup, Sleeper};
    let repo = TestRepo::new();
    // The hook logs, then ends well although the tree is gone (`true` after `test -d`).
    repo.write_rules(&rules_with_cleanup(&repo, "true"));
    let wt = repo.add_card("a1");
    let mut sleeper = Sleeper::start(&repo, &wt.join("src"));
    repo.git(
        &repo.base,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let again = repo.add_card("a1");
    assert_eq!(again, wt);
    assert!(
        sleeper.alive(),
        "the new add ended the process of the removed tree (an orphan claim gets no signal)"
    );
    assert!(
        cleanup_lines(&repo).contains(&format!("a1 orphan cleanup {}", repo.base.display())),
        "{:?}",
        cleanup_lines(&repo)
    );
    let c = claim(&repo, "a1");
    assert_eq!(c["state"].as_str(), Some("complete"), "{c:?}");
    repo.kardwt_ok(&repo.base, &["verify", "a1"]);
}

/// A card's claim file whose card is not a card id (tampered: `./../evil` would name a file
/// outside the claims, a lock or a branch elsewhere) is malformed like any tampered claim: `add`
/// of that card refuses and says why, `remove` and `gc --apply` act on nothing, and nothing on
/// disk changes (the claim, the other files under the repository's and the worktrees' roots,
/// the refs).
#[test]
fn a_claim_whose_card_is_not_an_id_is_refused_and_nothing_changes_on_disk() {
    let repo = TestRepo::new();
    let tree = repo.add_card("c1");
    let text = std::fs::read_to_string(claim_file(&repo, "c1"))
        .unwrap()
        .replace("\"c1\"", "\"./../evil\"")
        .replace(
            tree.to_str().unwrap(),
            repo.card_path("c2").to_str().unwrap(),
        );
    std::fs::write(claim_file(&repo, "c2"), &text).unwrap();
    let state = || {
        (
            crate::support::tree_state(&repo.tmp),
            repo.all_refs(),
            repo.git(&repo.base, &["worktree", "list", "--porcelain"]),
        )
    };
    let before = state();

    let out = repo.kardwt(&repo.base, &["add", "c2"]);
    out.expect_code(3);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_claim_card_not_an_id",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    let remove = repo.kardwt(&repo.base, &["remove", "c2"]);
    assert_ne!(remove.code, 0, "{remove}");
    repo.kardwt(&repo.base, &["gc", "--apply", "--offline"])
        .expect_code(0);
    let after = state();
    // Only the event log (a refusal is logged) and the locks taken (they name their holder)
    // may differ; every other byte is as it was.
    let kardwt = Path::new("base/.git/kardwt");
    let strip = |(mut files, refs, trees): (std::collections::BTreeMap<PathBuf, _>, _, _)| {
        files.retain(|p: &PathBuf, _| {
            p != &kardwt.join("events.jsonl")
                && p != &kardwt.join("lock")
                && !p.starts_with(kardwt.join("cards"))
        });
        (files, refs, trees)
    };
    let (before, after) = (strip(before), strip(after));
    let changed: Vec<_> = before
        .0
        .iter()
        .filter(|(k, v)| after.0.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .chain(
            after
                .0
                .keys()
                .filter(|k| !before.0.contains_key(*k))
                .cloned(),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "changed on disk: {changed:?}\n{out}\n{remove}"
    );
    assert_eq!((before.1, before.2), (after.1, after.2));
    assert!(!repo.common_dir().join("kardwt/evil").exists());
    assert!(!repo.card_path("c2").exists());
}
