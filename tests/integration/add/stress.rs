//! Stress: 32 concurrent `git kardwt add`s on a small machine — 20 distinct cards and
//! 12 duplicates of some of them, started together — all succeed within a generous deadline,
//! each card gets exactly one worktree and one record that verifies, prepare runs once per card,
//! every record names the same freshly fetched base, the base is untouched and no lock is left.
//! Left out of `make test` (ignored); `make test-slow` runs it.
use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::{line, TestRepo};

#[test]
#[ignore = "stress: make test-slow"]
fn thirty_two_concurrent_adds_of_twenty_cards_all_succeed_once_each() {
    let repo = TestRepo::new();
    // A short sleep keeps prepares overlapping each other and the duplicates' lock waits.
    let script = repo.write_prepare("sleep 0.2");
    repo.write_rules(&repo.rules_for(&script, false));
    let base_oid = repo.commit_on_origin("ahead");
    let base_before = repo.snapshot_base();

    let cards: Vec<String> = (1..=20).map(|i| format!("s{i}")).collect();
    // Duplicates: some cards twice more, some once more, interleaved with the first runs.
    let dups = [
        "s1", "s1", "s2", "s5", "s5", "s8", "s11", "s13", "s13", "s17", "s20", "s20",
    ];
    let mut jobs: Vec<&str> = Vec::new();
    for (i, c) in cards.iter().enumerate() {
        jobs.push(c);
        if i < dups.len() {
            jobs.push(dups[i]);
        }
    }
    assert_eq!(jobs.len(), 32);

    let running: Vec<_> = jobs
        .iter()
        .map(|card| {
            let r = repo.spawn(
                "git",
                &repo.base,
                &["kardwt", "add", card, "--timeout", "300"],
            );
            (card.to_string(), r)
        })
        .collect();
    // Generous: well beyond the per-add --timeout, so kardwt's own deadline speaks first.
    let outputs: Vec<_> = running
        .into_iter()
        .map(|(card, r)| (card, r.wait(Duration::from_secs(400))))
        .collect();

    let failures: Vec<String> = outputs
        .iter()
        .filter(|(card, out)| out.code != 0 || out.stdout != line(&repo.card_path(card)))
        .map(|(_, out)| out.to_string())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of 32 adds failed or printed another path:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for (_, out) in &outputs {
        assert!(
            !out.stderr.contains("panicked"),
            "a panic was reported:\n{out}"
        );
    }

    // Exactly one worktree per card, nothing else besides the base.
    let worktrees = repo.worktrees();
    assert_eq!(
        worktrees.len(),
        1 + cards.len(),
        "base plus one worktree per card expected: {worktrees:#?}"
    );
    for card in &cards {
        let path = repo.card_path(card);
        let hits: Vec<_> = worktrees
            .iter()
            .filter(|(p, b, _)| *p == path || *b == format!("refs/heads/card/{card}"))
            .collect();
        assert_eq!(hits.len(), 1, "card {card}: {hits:#?}");
        assert_eq!(hits[0].0, path);
        assert_eq!(hits[0].1, format!("refs/heads/card/{card}"));
        assert!(!hits[0].2, "card {card} is prunable");
    }
    let mut branches = repo.card_branches();
    branches.sort();
    let mut expected: Vec<String> = cards
        .iter()
        .map(|c| format!("refs/heads/card/{c}"))
        .collect();
    expected.sort();
    assert_eq!(branches, expected);

    // Every record verifies, is ready, names its card and the one fetched base.
    for card in &cards {
        let path = repo.card_path(card);
        let out = repo.kardwt(&repo.base, &["verify", "--path", path.to_str().unwrap()]);
        out.expect_code(0);
        let rec = repo.record(&path);
        assert_eq!(rec["card"].as_str(), Some(card.as_str()), "{rec:?}");
        assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
        // The last add of a duplicated card reused it.
        let reason = if dups.contains(&card.as_str()) {
            "reuse"
        } else {
            "create"
        };
        assert_eq!(rec["reason"].as_str(), Some(reason), "{rec:?}");
        assert_eq!(rec["origin"].as_str(), Some("add"), "{rec:?}");
        assert_eq!(rec["base_oid"].as_str(), Some(base_oid.as_str()), "{rec:?}");
        assert_eq!(
            repo.git(&path, &["rev-parse", "HEAD"]).trim(),
            base_oid,
            "card {card} is not at the fetched base"
        );
    }
    let listed = repo.list_json();
    for card in &cards {
        let row = listed
            .iter()
            .find(|e| e["card"] == card.as_str())
            .unwrap_or_else(|| panic!("card {card} not listed: {listed:#?}"));
        assert_eq!(row["state"], "ready", "{row}");
    }

    // Prepare ran exactly once per card, for its creation; duplicates only reused.
    let mut runs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in repo.prepare_runs() {
        let (card, rest) = l.split_once(' ').unwrap_or((&l, ""));
        runs.entry(card.to_owned())
            .or_default()
            .push(rest.to_owned());
    }
    for card in &cards {
        assert_eq!(
            runs.get(card).map(Vec::as_slice),
            Some(&["create prepare".to_owned()][..]),
            "prepare of {card} ran other than once: {runs:?}"
        );
    }
    assert_eq!(runs.len(), cards.len(), "{runs:?}");

    // The base is untouched, and no lock is left held: one more add goes straight through.
    assert!(repo.snapshot_base() == base_before, "the base changed");
    let out = repo.kardwt(&repo.base, &["add", "s21", "--timeout", "10"]);
    out.expect_code(0);
    for card in ["s1", "s20"] {
        let out = repo.kardwt(&repo.base, &["add", card, "--timeout", "10"]);
        out.expect_code(0);
        assert_eq!(out.stdout, line(&repo.card_path(card)));
    }
    assert_eq!(repo.prepare_runs().len(), cards.len() + 1);
}
