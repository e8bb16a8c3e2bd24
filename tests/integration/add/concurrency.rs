//! Concurrency and the locks: parallel `add`s of distinct and duplicate cards, a lock left by a
//! killed process that does not block the next run, the deadline while waiting for a card's
//! lock, and the undo of a failed `add`, which waits for the repository lock.
use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::procs::{hold_flock, wait_until_open};
use crate::support::{line, sh_quote, wait_until, TestRepo, COMMAND_TIMEOUT};

#[test]
fn eight_cards_and_four_duplicates_at_once_make_one_worktree_and_one_prepare_each() {
    let repo = TestRepo::new();
    // A short sleep widens the window in which duplicates overlap a running prepare.
    let script = repo.write_prepare("sleep 0.3");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.commit_on_origin("ahead");

    let cards: Vec<String> = (1..=8).map(|i| format!("k{i}")).collect();
    let mut jobs: Vec<&str> = cards.iter().map(String::as_str).collect();
    jobs.extend(["k1", "k2", "k3", "k4"]);
    let running: Vec<_> = jobs
        .iter()
        .map(|card| {
            (
                card.to_string(),
                repo.spawn("git", &repo.base, &["kardwt", "add", card]),
            )
        })
        .collect();
    let outputs: Vec<_> = running
        .into_iter()
        .map(|(card, r)| (card, r.wait(COMMAND_TIMEOUT)))
        .collect();

    let mut failures = Vec::new();
    for (card, out) in &outputs {
        if out.code != 0 {
            failures.push(format!("{out}"));
        } else {
            assert_eq!(out.stdout, line(&repo.card_path(card)), "{out}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} adds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );

    let worktrees = repo.worktrees();
    assert_eq!(
        worktrees.len(),
        9,
        "base plus eight cards expected: {worktrees:#?}"
    );
    for card in &cards {
        let n = worktrees
            .iter()
            .filter(|(_, b, _)| *b == format!("refs/heads/card/{card}"))
            .count();
        assert_eq!(n, 1, "card {card} has {n} worktrees");
    }

    let mut runs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in repo.prepare_runs() {
        let mut parts = l.splitn(2, ' ');
        let card = parts.next().unwrap().to_owned();
        runs.entry(card)
            .or_default()
            .push(parts.next().unwrap_or("").to_owned());
    }
    for card in &cards {
        assert_eq!(
            runs.get(card).map(Vec::as_slice),
            Some(&["create prepare".to_owned()][..]),
            "prepare of {card} ran other than once: {runs:?}"
        );
    }
    assert_eq!(runs.len(), 8, "{runs:?}");

    for card in &cards {
        let p = repo.card_path(card);
        let out = repo.kardwt(&repo.base, &["verify", "--path", p.to_str().unwrap()]);
        out.expect_code(0);
        assert_eq!(repo.record(&p)["state"].as_str(), Some("ready"));
    }
}

#[test]
fn a_lock_left_by_a_killed_add_does_not_block_and_its_card_is_retried() {
    let repo = TestRepo::new();
    let pid_file = repo.tmp.join("sleeper.pid");
    let marker = repo.tmp.join("slept-once");
    let script = repo.write_prepare(&format!(
        "if [ \"$KARDWT_CARD\" = k20 ] && [ ! -e {m} ]; then\n  : > {m}\n  echo $$ > {p}.tmp\n  mv {p}.tmp {p}\n  exec sleep 30\nfi",
        m = sh_quote(&marker),
        p = sh_quote(&pid_file),
    ));
    repo.write_rules(&repo.rules_for(&script, false));

    let mut victim = repo.spawn_kardwt_bin(&repo.base, &["add", "k20"]);
    let started = wait_until(Duration::from_secs(60), || pid_file.exists());
    if !started {
        victim.kill();
        let out = victim.wait(Duration::from_secs(10));
        panic!("prepare of k20 never started:\n{out}");
    }
    victim.kill();
    let killed = victim.wait(Duration::from_secs(10));
    assert_ne!(killed.code, 0, "{killed}");
    let sleeper = std::fs::read_to_string(&pid_file).unwrap();
    // The prepare script sits in its own process group; end it too.
    let _ = repo
        .spawn("kill", &repo.tmp, &["-9", sleeper.trim()])
        .wait(Duration::from_secs(10));

    let wt20 = repo.card_path("k20");
    assert_eq!(
        repo.record(&wt20)["state"].as_str(),
        Some("preparing"),
        "the interrupted record should be left preparing"
    );
    let out = repo.kardwt(&repo.base, &["verify", "k20"]);
    out.expect_code(1);
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let e = v
        .as_array()
        .and_then(|l| l.iter().find(|e| e["card"] == "k20"))
        .unwrap_or_else(|| panic!("k20 not listed:\n{out}"));
    assert_eq!(e["state"], "preparing", "{out}");
    let out = repo.kardwt(&repo.base, &["select", "k20", "--existing-or-base"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        line(&repo.base),
        "an unfinished card selects the base:\n{out}"
    );

    // A lock that blocked would hold these adds past the harness's 120 s bound (the action
    // deadline is an hour), which fails the test: no timing needed.
    let out = repo.kardwt(&repo.base, &["add", "k21"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&repo.card_path("k21")));

    let out = repo.kardwt(&repo.base, &["add", "k20"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&wt20));
    let runs = repo.prepare_runs();
    assert_eq!(
        runs,
        [
            "k20 create prepare",
            "k21 create prepare",
            "k20 retry prepare"
        ],
        "expected one retry of k20"
    );
    assert_eq!(repo.record(&wt20)["state"].as_str(), Some("ready"));
    repo.kardwt_ok(&repo.base, &["verify", "k20"]);
    let n = repo
        .worktrees()
        .iter()
        .filter(|(p, _, _)| *p == wt20)
        .count();
    assert_eq!(n, 1);
}

#[test]
fn waiting_for_a_held_card_lock_respects_the_deadline_and_exits_5() {
    // The holder's prepare sleeps 300 s and is killed only after the waiter ended: a waiter
    // that ignored its 2 s deadline would outlast the harness's 120 s bound and fail the test,
    // so the test needs no timing of its own.
    let repo = TestRepo::new();
    let pid_file = repo.tmp.join("sleeper.pid");
    let script = repo.write_prepare(&format!(
        "if [ \"$KARDWT_REASON\" = create ]; then\n  echo $$ > {p}.tmp\n  mv {p}.tmp {p}\n  exec sleep 300\nfi",
        p = sh_quote(&pid_file),
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let mut holder = repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]);
    let started = wait_until(Duration::from_secs(60), || pid_file.exists());

    let result = started.then(|| repo.kardwt(&repo.base, &["add", "k1", "--timeout", "2"]));
    holder.kill();
    let holder_out = holder.wait(Duration::from_secs(10));
    if let Ok(pid) = std::fs::read_to_string(&pid_file) {
        let _ = repo
            .spawn("kill", &repo.tmp, &["-9", pid.trim()])
            .wait(Duration::from_secs(10));
    }
    let out = result.unwrap_or_else(|| panic!("prepare of k1 never started:\n{holder_out}"));
    out.expect_code(5);
    assert_eq!(out.stdout, "", "{out}");
    assert!(
        out.stderr.contains("lock"),
        "the message should say which lock:\n{out}"
    );
    assert_eq!(
        repo.prepare_runs(),
        ["k1 create prepare"],
        "the waiter must not prepare"
    );
}

#[test]
fn different_cards_prepare_in_parallel() {
    let repo = TestRepo::new();
    // Each prepare announces itself, then waits (up to 90 s, far more than a loaded machine
    // needs to start the other add; overlapping prepares end as soon as both are in) to see the
    // other card's prepare running; serialized preparation would never see it.
    let dir = repo.tmp.join("started");
    std::fs::create_dir(&dir).unwrap();
    let d = sh_quote(&dir);
    let script = repo.write_prepare(&format!(
        ": > {d}/\"$KARDWT_CARD\"\nif [ \"$KARDWT_CARD\" = p1 ]; then other=p2; else other=p1; fi\n\
         i=0\nwhile [ ! -e {d}/\"$other\" ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done\n\
         if [ -e {d}/\"$other\" ]; then echo \"$KARDWT_CARD saw $other\" >> {d}/overlap; fi"
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let a = repo.spawn("git", &repo.base, &["kardwt", "add", "p1"]);
    let b = repo.spawn("git", &repo.base, &["kardwt", "add", "p2"]);
    a.wait(COMMAND_TIMEOUT).expect_code(0);
    b.wait(COMMAND_TIMEOUT).expect_code(0);
    let overlap = std::fs::read_to_string(dir.join("overlap")).unwrap_or_default();
    let mut lines: Vec<_> = overlap.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["p1 saw p2", "p2 saw p1"],
        "the two prepares did not overlap"
    );
}

#[test]
fn the_undo_of_a_failed_add_waits_for_the_repository_lock() {
    let repo = TestRepo::new();
    let started = repo.tmp.join("prepare.started");
    let go = repo.tmp.join("prepare.go");
    let script = repo.write_prepare(&format!(
        "touch {s}\nwhile [ ! -e {g} ]; do sleep 0.05; done\nexit 1",
        s = sh_quote(&started),
        g = sh_quote(&go)
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let adding = repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]);
    assert!(wait_until(Duration::from_secs(60), || started.exists()));
    // The tree exists and its prepare is about to fail; someone else holds the repository lock.
    let lock = repo.common_dir().join("kardwt/lock");
    let mut holder = hold_flock(&repo, &lock);
    std::fs::write(&go, "").unwrap();
    let waiting = wait_until_open(adding.pid(), &lock);
    let kept_while_held =
        repo.card_path("k1").exists() && repo.is_registered(&repo.card_path("k1"));
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = adding.wait(Duration::from_secs(60));
    assert!(
        waiting,
        "the undo never waited for the repository lock:\n{out}"
    );
    assert!(
        kept_while_held,
        "the undo removed the tree without the repository lock"
    );
    out.expect_code(4);
    assert!(!repo.card_path("k1").exists(), "{out}");
}
