//! Conservative garbage collection: `git kardwt gc` is a dry run that changes nothing;
//! `--apply` removes exactly the candidates (merged-and-pushed clean `ready` worktrees through
//! the release-first removal, entries whose directory is gone by pruning) and keeps unpushed,
//! dirty, locked and unmanaged worktrees intact; `--include-failed --older-than DUR` extends the
//! candidates to clean, pushed worktrees left `failed` (see `abandoned.rs` for those with no
//! commit of their own).
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::{pinned, pinned_case, snapshot, TestRepo};

/// Commit a new file `<name>.txt` in the worktree `wt`.
fn commit_in(repo: &TestRepo, wt: &Path, name: &str) {
    std::fs::write(wt.join(format!("{name}.txt")), format!("{name}\n")).unwrap();
    repo.git(wt, &["add", "--", &format!("{name}.txt")]);
    repo.git(wt, &["commit", "--quiet", "-m", name]);
}

/// `gc args…` in the base, asserting exit 0, parsed as JSON.
#[track_caller]
fn gc_json(repo: &TestRepo, args: &[&str]) -> serde_json::Value {
    // What `remove` moved aside is deleted first, so that no report lists it mid-deletion.
    repo.wait_for_deleters();
    let mut all = vec!["gc"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = repo.kardwt(&repo.base, &all);
    out.expect_code(0);
    let v = out.json();
    assert!(v["candidates"].is_array(), "{out}");
    assert!(v["kept"].is_array(), "{out}");
    v
}

/// The candidates of a gc JSON report, keyed by card.
fn candidates(v: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["card"].as_str().unwrap_or_default().to_owned(), c.clone()))
        .collect()
}

/// The kept entries of a gc JSON report, keyed by card.
fn kept(v: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["card"].as_str().unwrap_or_default().to_owned(), c.clone()))
        .collect()
}

fn cards(v: &serde_json::Value) -> BTreeSet<String> {
    candidates(v).into_keys().collect()
}

fn set(cards: &[&str]) -> BTreeSet<String> {
    cards.iter().map(|c| c.to_string()).collect()
}

/// Everything gc could touch: the worktree registrations (with lock and prunable marks), every
/// ref, each worktree directory's files and each record's bytes.
fn state(repo: &TestRepo, trees: &[&Path]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    out.insert(
        "<worktree list>".to_owned(),
        repo.git(&repo.base, &["worktree", "list", "--porcelain"])
            .into_bytes(),
    );
    out.insert("<refs>".to_owned(), repo.all_refs().into_bytes());
    out.insert(
        "<admin dirs>".to_owned(),
        format!("{:?}", snapshot_names(&repo.common_dir().join("worktrees"))).into_bytes(),
    );
    for wt in trees {
        for (rel, bytes) in snapshot(wt) {
            out.insert(format!("{}/{}", wt.display(), rel.display()), bytes);
        }
    }
    for wt in trees {
        let rec = std::fs::read(repo.record_path(wt)).unwrap();
        out.insert(format!("<record {}>", wt.display()), rec);
    }
    out
}

/// The names directly under `dir`, sorted.
fn snapshot_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Rules with the standard prepare script and one port per worktree from a range of its own.
fn rules_with_port(repo: &TestRepo, low: u16, high: u16) -> String {
    format!(
        "{}  ports: {{count: 1, range: [{low}, {high}]}}\n",
        repo.rules_with_prepare(false)
    )
}

/// Merged and pushed; unpushed; dirty; locked; directory deleted. The dry run
/// (text and JSON) changes nothing and lists exactly the merged and the missing one, with
/// reasons; `--apply` removes exactly those two and keeps the other three intact.
#[test]
fn gc_collects_exactly_the_merged_and_the_missing_worktree() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_port(&repo, 23300, 23320));
    let m = repo.add_card("m");
    let u = repo.add_card("u");
    let d = repo.add_card("d");
    let l = repo.add_card("l");
    let g = repo.add_card("g");

    // m: merged and pushed.
    commit_in(&repo, &m, "m-work");
    repo.push_and_merge(&m, "card/m");
    // u: one commit merged, one more on top that is on no remote.
    commit_in(&repo, &u, "u-work");
    repo.push_and_merge(&u, "card/u");
    commit_in(&repo, &u, "u-unpushed");
    // d: merged and pushed, but with an untracked file.
    commit_in(&repo, &d, "d-work");
    repo.push_and_merge(&d, "card/d");
    std::fs::write(d.join("notes.txt"), "keep me\n").unwrap();
    // l: merged and pushed, but locked.
    commit_in(&repo, &l, "l-work");
    repo.push_and_merge(&l, "card/l");
    repo.git(&repo.base, &["worktree", "lock", l.to_str().unwrap()]);
    // g: its directory deleted behind kardwt's back.
    let g_ports: Vec<i64> = repo.record(&g)["ports"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p.as_integer()).collect())
        .unwrap_or_default();
    assert_eq!(g_ports.len(), 1, "{g_ports:?}");
    std::fs::remove_dir_all(&g).unwrap();
    assert!(repo
        .worktrees()
        .iter()
        .any(|(p, _, prunable)| p == &g && *prunable));

    let kept_trees = [u.as_path(), d.as_path(), l.as_path()];
    let all_trees = [m.as_path(), u.as_path(), d.as_path(), l.as_path()];
    let before = state(&repo, &all_trees);
    let base = repo.snapshot_base();

    // Dry run, as text: exactly m and g would be collected, the other three kept, with why.
    let out = repo.kardwt(&repo.base, &["gc"]);
    out.expect_code(0);
    let text = without_port_numbers(&out.stdout);
    pinned(&repo).bind(|| insta::assert_snapshot!("gc_merged_and_missing_text", text));
    assert_eq!(
        state(&repo, &all_trees),
        before,
        "gc (dry run) changed something"
    );

    // Dry run, as JSON, whole (the gone card's ports checked here, shown as [PORTS]).
    let mut v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), set(&["m", "g"]), "{v}");
    assert_eq!(
        candidates(&v)["g"]["ports"],
        serde_json::Value::from(g_ports.clone()),
        "the gone card's ports are not reported: {v}"
    );
    let shown = without_ports(&mut v);
    pinned(&repo).bind(|| insta::assert_json_snapshot!("gc_merged_and_missing_json", shown));
    assert_eq!(
        state(&repo, &all_trees),
        before,
        "gc --json changed something"
    );
    assert_eq!(repo.snapshot_base(), base, "the base changed");

    // Apply: m removed, g pruned, whole.
    let mut v = gc_json(&repo, &["--apply"]);
    let shown = without_ports(&mut v);
    pinned(&repo).bind(|| insta::assert_json_snapshot!("gc_merged_and_missing_apply", shown));
    // m: gone and unregistered, its branch kept; g: unregistered.
    assert!(!m.exists(), "{v}");
    assert!(!repo.is_registered(&m), "{v}");
    assert!(!repo.is_registered(&g), "{v}");
    assert!(repo.branch_exists("card/m"));
    assert!(repo.branch_exists("card/g"));
    // The other three are intact: files, registration (and lock), records, refs.
    let after = state(&repo, &kept_trees);
    let before_kept = state_subset(&before, &kept_trees);
    assert_eq!(
        state_subset(&after, &kept_trees),
        before_kept,
        "a kept tree changed"
    );
    for wt in kept_trees {
        assert!(repo.is_registered(wt), "{} unregistered", wt.display());
        assert_eq!(repo.record(wt)["state"].as_str(), Some("ready"));
    }
    assert!(d.join("notes.txt").exists());
    let list = repo.git(&repo.base, &["worktree", "list", "--porcelain"]);
    let l_block = list
        .split("\n\n")
        .find(|b| b.starts_with(&format!("worktree {}\n", l.display())))
        .unwrap_or_else(|| panic!("locked tree not listed:\n{list}"));
    assert!(l_block.contains("\nlocked"), "lock lost:\n{list}");
    assert_eq!(repo.worktrees().len(), 4, "{list}");
    assert_eq!(repo.snapshot_base(), base, "the base changed");

    // Nothing more to collect.
    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
}

/// A gc JSON report with every candidate's and kept tree's ports shown as `[PORTS]` (which
/// ports a card got depends on what else runs on the machine).
fn without_ports(v: &mut serde_json::Value) -> serde_json::Value {
    for list in ["candidates", "kept"] {
        for entry in v[list].as_array_mut().into_iter().flatten() {
            if let Some(ports) = entry.get_mut("ports") {
                *ports = "[PORTS]".into();
            }
        }
    }
    v.clone()
}

/// gc's text with how long a tree was untouched (`3 days 1 second`, by the second the test ran in)
/// shown as `[IDLE]`.
fn without_idle_time(text: &str) -> String {
    const SAID: &str = "untouched for ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(SAID) {
        let (before, after) = rest.split_at(at + SAID.len());
        out.push_str(before);
        out.push_str("[IDLE]");
        rest = &after[after.find(" (since").unwrap_or(0)..];
    }
    out.push_str(rest);
    out
}

/// gc's text with the port numbers it names (`releases ports 23301, 23302`) shown as
/// `[PORTS]`.
fn without_port_numbers(text: &str) -> String {
    const SAID: &str = "releases ports ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(SAID) {
        let (before, after) = rest.split_at(at + SAID.len());
        out.push_str(before);
        out.push_str("[PORTS]");
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit() || c == ',' || c == ' ');
    }
    out.push_str(rest);
    out
}

/// The entries of `state` that concern the given trees (files and records), plus the refs.
fn state_subset(state: &BTreeMap<String, Vec<u8>>, trees: &[&Path]) -> BTreeMap<String, Vec<u8>> {
    state
        .iter()
        .filter(|(k, _)| {
            k.as_str() == "<refs>"
                || trees
                    .iter()
                    .any(|t| k.as_str() == format!("<record {}>", t.display()))
                || trees
                    .iter()
                    .any(|t| k.starts_with(&format!("{}/", t.display())))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A clean, pushed worktree whose record says `failed` (and whose commit landed)
/// is collected only with `--include-failed` and an `--older-than` it has outlived; an unmanaged worktree (no record),
/// merged and pushed, and a fresh card with no commits of its own are never candidates.
#[test]
fn include_failed_collects_a_failed_worktree_and_unmanaged_ones_are_never_collected() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    // A failed card with work made in it goes once that work landed.
    let f = repo.add_card("f");
    commit_in(&repo, &f, "f-work");
    repo.push_and_merge(&f, "card/f");
    repo.edit_record(&f, "state", "failed");
    let out = repo.kardwt(&repo.base, &["verify", "f", "--json"]);
    assert_eq!(
        out.code, 1,
        "a failed record should verify as not ready:\n{out}"
    );

    // Unmanaged: created with the hooks bypassed; merged and pushed.
    repo.add_unhooked_worktree("../um", "card/77");
    let um = repo.sibling("um");
    assert!(
        !repo.record_path(&um).exists(),
        "the bypassed hook still wrote a record"
    );
    commit_in(&repo, &um, "um-work");
    repo.push_and_merge(&um, "card/77");
    let um_before = snapshot(&um);

    // A failed card with a commit on no remote stays, even with --include-failed.
    let fu = repo.add_card("fu");
    commit_in(&repo, &fu, "fu-unpushed");
    repo.edit_record(&fu, "state", "failed");

    // A fresh ready card (no commits of its own, trivially merged and pushed) stays too.
    let n = repo.add_card("n");

    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let v = gc_json(&repo, &["--include-failed"]);
    assert_eq!(
        cards(&v),
        BTreeSet::new(),
        "default --older-than is 24h: {v}"
    );
    let v = gc_json(&repo, &["--include-failed", "--older-than", "24h"]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let v = gc_json(&repo, &["--older-than", "0s"]);
    assert_eq!(cards(&v), BTreeSet::new(), "without --include-failed: {v}");
    let v = gc_json(&repo, &["--include-failed", "--older-than", "0s"]);
    assert_eq!(cards(&v), set(&["f"]), "{v}");
    assert_eq!(candidates(&v)["f"]["path"], f.to_str().unwrap(), "{v}");
    assert!(
        candidates(&v)["f"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("failed")),
        "{v}"
    );
    assert!(
        f.exists() && repo.is_registered(&f),
        "the dry run removed it"
    );

    let v = gc_json(
        &repo,
        &["--include-failed", "--older-than", "0s", "--apply"],
    );
    assert_eq!(cards(&v), set(&["f"]), "{v}");
    assert_eq!(candidates(&v)["f"]["outcome"], "removed", "{v}");
    assert!(!f.exists(), "{v}");
    assert!(!repo.is_registered(&f), "{v}");
    assert!(repo.branch_exists("card/f"));
    // The unmanaged worktree is untouched.
    assert!(repo.is_registered(&um));
    assert_eq!(snapshot(&um), um_before, "the unmanaged tree changed");
    assert!(!repo.record_path(&um).exists());
    assert!(
        n.exists() && repo.is_registered(&n),
        "the fresh card was removed"
    );
    assert!(
        fu.exists() && repo.is_registered(&fu),
        "unpushed work was removed"
    );
    assert_eq!(
        repo.git(&fu, &["log", "-1", "--format=%s"]).trim(),
        "fu-unpushed"
    );
}

/// A worktree whose branch is merged and pushed but whose (detached) HEAD carries a commit on
/// no remote is kept: gc looks at HEAD, not only at the branch.
#[test]
fn a_merged_branch_with_unpushed_work_on_a_detached_head_is_kept() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let w = repo.add_card("w");
    commit_in(&repo, &w, "w-work");
    repo.push_and_merge(&w, "card/w");
    // Before the detour the worktree is a candidate.
    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), set(&["w"]), "{v}");

    repo.git(&w, &["switch", "--quiet", "--detach"]);
    commit_in(&repo, &w, "w-detached");
    let head = repo.git(&w, &["rev-parse", "HEAD"]);
    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let v = gc_json(&repo, &["--apply"]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    assert!(w.exists() && repo.is_registered(&w), "{v}");
    assert_eq!(repo.git(&w, &["rev-parse", "HEAD"]), head);
}

/// The ports of what gc collects are free again: a range with room for one worktree is taken by
/// a merged card, then by a card whose directory is deleted (its record still holds them);
/// each time `gc --apply` frees them for the next card.
#[test]
fn gc_frees_the_ports_of_what_it_collects() {
    let repo = TestRepo::new();
    repo.write_rules(&format!(
        "{}  ports: {{count: 2, range: [23400, 23401]}}\n",
        repo.rules_with_prepare(false)
    ));
    let ports = |wt: &Path| -> Vec<i64> {
        repo.record(wt)["ports"]
            .as_array()
            .map(|p| p.iter().filter_map(|p| p.as_integer()).collect())
            .unwrap_or_default()
    };
    // The order follows the card's starting point; the set is what matters here.
    let sorted = |mut p: Vec<i64>| {
        p.sort();
        p
    };
    let json_sorted = |v: &serde_json::Value| -> Vec<i64> {
        sorted(
            v.as_array()
                .map(|p| p.iter().filter_map(|p| p.as_i64()).collect())
                .unwrap_or_default(),
        )
    };
    let a = repo.add_card("a");
    assert_eq!(
        sorted(ports(&a)),
        vec![23400, 23401],
        "{:?}",
        repo.record(&a)
    );
    commit_in(&repo, &a, "a-work");
    repo.push_and_merge(&a, "card/a");
    let out = repo.kardwt(&repo.base, &["add", "b"]);
    out.expect_code(1);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_ports_held_by_a_merged_card",
            pinned_case("add b", &out)
        )
    });

    let v = gc_json(&repo, &["--apply"]);
    assert_eq!(cards(&v), set(&["a"]), "{v}");
    assert_eq!(
        json_sorted(&candidates(&v)["a"]["ports"]),
        vec![23400, 23401],
        "{v}"
    );
    let b = repo.add_card("b");
    assert_eq!(sorted(ports(&b)), vec![23400, 23401]);

    // b's directory goes behind kardwt's back: its record still holds the ports until gc.
    std::fs::remove_dir_all(&b).unwrap();
    repo.kardwt(&repo.base, &["add", "c"]).expect_code(1);
    let v = gc_json(&repo, &["--apply"]);
    assert_eq!(cards(&v), set(&["b"]), "{v}");
    assert_eq!(candidates(&v)["b"]["outcome"], "pruned", "{v}");
    assert_eq!(
        json_sorted(&candidates(&v)["b"]["ports"]),
        vec![23400, 23401],
        "{v}"
    );
    let c = repo.add_card("c");
    assert_eq!(sorted(ports(&c)), vec![23400, 23401]);
}

/// Clean means clean, and git's refusals, through gc: a merged, pushed card whose shared `.env`
/// link was replaced by a real file (ignored, so git status is silent), and one containing a
/// submodule (git would refuse to remove it), are kept with the reason; `--apply` releases
/// nothing of theirs.
#[test]
fn gc_keeps_user_work_at_a_link_path_and_a_tree_git_would_refuse() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    let e = repo.add_card("e");
    let s = repo.add_card("s");
    commit_in(&repo, &e, "e-work");
    repo.push_and_merge(&e, "card/e");
    crate::support::cleanup::commit_submodule(&repo, &s);
    repo.push_and_merge(&s, "card/s");
    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), set(&["e"]), "{v}");
    let k = kept(&v);
    assert!(
        k["s"]["reason"].as_str().unwrap().contains("submodule sm"),
        "{v}"
    );

    std::fs::remove_file(e.join(".env")).unwrap();
    std::fs::write(e.join(".env"), "TOKEN=mine\n").unwrap();
    let v = gc_json(&repo, &[]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let k = kept(&v);
    assert!(
        k["e"]["reason"]
            .as_str()
            .unwrap()
            .contains("uncommitted changes"),
        "{v}"
    );

    let mut sleeper = crate::support::cleanup::Sleeper::start(&repo, &s);
    let mut sleeper_e = crate::support::cleanup::Sleeper::start(&repo, &e);
    let v = gc_json(&repo, &["--apply"]);
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let k = kept(&v);
    assert!(
        k["s"]["reason"].as_str().unwrap().contains("submodule sm"),
        "{v}"
    );
    assert!(
        sleeper.alive() && sleeper_e.alive(),
        "a process was killed: {v}"
    );
    assert!(repo.is_registered(&s) && repo.is_registered(&e), "{v}");
    assert_eq!(
        std::fs::read_to_string(e.join(".env")).unwrap(),
        "TOKEN=mine\n"
    );
    assert_eq!(repo.record(&s)["state"].as_str(), Some("ready"));
}

/// Push `branch` from `wt`, then land its changes on origin's main the way hosted repositories
/// usually do, without the branch becoming an ancestor: a squash merge (`squash`) or a rebase
/// onto a main that moved on (`!squash`: each commit picked again); fetch in the base.
fn push_and_land_without_merge(repo: &TestRepo, wt: &Path, branch: &str, squash: bool) {
    repo.git(wt, &["push", "--quiet", "origin", branch]);
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    let theirs = format!("origin/{branch}");
    if squash {
        repo.git(&repo.scratch, &["merge", "--quiet", "--squash", &theirs]);
        repo.git(
            &repo.scratch,
            &["commit", "--quiet", "-m", &format!("{branch} (squashed)")],
        );
    } else {
        // main moves on first, so the picked commits get new ids and a new tree.
        std::fs::write(
            repo.scratch.join("unrelated.txt"),
            format!("moved on for {branch}\n"),
        )
        .unwrap();
        repo.git(&repo.scratch, &["add", "unrelated.txt"]);
        repo.git(&repo.scratch, &["commit", "--quiet", "-m", "main moves on"]);
        let range = format!("origin/main..{theirs}");
        repo.git(&repo.scratch, &["cherry-pick", &range]);
    }
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
}

/// Squash- and rebase-merged cards are integrated and collected; a card with one more
/// commit that is on no remote is kept; a fresh card with no commits of its own is kept.
#[test]
fn squash_and_rebase_merged_cards_are_collected_and_unpushed_work_is_kept() {
    let repo = TestRepo::new();
    let squashed = repo.add_card("sq");
    commit_in(&repo, &squashed, "sq-one");
    commit_in(&repo, &squashed, "sq-two");
    push_and_land_without_merge(&repo, &squashed, "card/sq", true);

    let rebased = repo.add_card("rb");
    commit_in(&repo, &rebased, "rb-one");
    commit_in(&repo, &rebased, "rb-two");
    push_and_land_without_merge(&repo, &rebased, "card/rb", false);

    let extra = repo.add_card("ex");
    commit_in(&repo, &extra, "ex-one");
    push_and_land_without_merge(&repo, &extra, "card/ex", true);
    commit_in(&repo, &extra, "ex-unpushed");

    let fresh = repo.add_card("fr");
    let _ = fresh;

    // The premise: neither landed branch is an ancestor of main.
    for b in ["card/sq", "card/rb"] {
        let out = repo.git_output(
            &repo.base,
            &["merge-base", "--is-ancestor", b, "origin/main"],
        );
        assert_ne!(
            out.code, 0,
            "{b} is an ancestor of main: the test proves nothing"
        );
    }

    let report = gc_json(&repo, &[]);
    assert_eq!(cards(&report), set(&["sq", "rb"]), "{report}");
    let kept = kept(&report);
    assert!(
        kept.contains_key("ex") && kept.contains_key("fr"),
        "{report}"
    );
    assert!(kept["ex"].to_string().contains("on no remote"), "{report}");
    // Whether each HEAD is pushed is asked of git once for all four trees, not once a tree.
    let traced = repo
        .spawn_with_env(
            crate::support::BIN,
            &repo.base,
            &["gc", "--offline"],
            &[("KARDWT_TRACE", std::ffi::OsStr::new("1"))],
        )
        .wait(crate::support::COMMAND_TIMEOUT);
    traced.expect_code(0);
    let walks: Vec<&str> = traced
        .stderr
        .lines()
        .filter(|l| l.contains(" rev-list "))
        .collect();
    assert_eq!(walks.len(), 1, "{traced}");
    assert!(
        walks[0].contains("rev-list --stdin --not --remotes"),
        "{traced}"
    );

    let applied = gc_json(&repo, &["--apply"]);
    assert_eq!(cards(&applied), set(&["sq", "rb"]), "{applied}");
    assert!(!squashed.exists() && !rebased.exists());
    assert!(
        extra.join("ex-unpushed.txt").is_file(),
        "unpushed work was lost"
    );
    assert!(repo.is_registered(&extra));
}

/// gc never ends a process. A merged, pushed, clean card (a candidate a moment
/// before) with a process sitting in it is kept by `--apply` as "…, but it is in use: pid N
/// sleep"; the
/// process is still alive afterwards and nothing of the tree, its record or its registration
/// changed.
#[test]
fn gc_apply_keeps_a_tree_in_use_and_signals_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let w = repo.add_card("busy");
    commit_in(&repo, &w, "busy-work");
    repo.push_and_merge(&w, "card/busy");
    assert_eq!(cards(&gc_json(&repo, &[])), set(&["busy"]), "the premise");

    let mut sleeper = crate::support::cleanup::Sleeper::start(&repo, &w.join("src"));
    let before = state(&repo, &[w.as_path()]);
    let base = repo.snapshot_base();
    let v = gc_json(&repo, &["--apply"]);
    assert!(sleeper.alive(), "gc --apply ended a process: {v}");
    assert_eq!(cards(&v), BTreeSet::new(), "{v}");
    let reason = kept(&v)["busy"]["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(", but it is in use: pid ") && reason.ends_with(" sleep"),
        "{v}"
    );
    assert_eq!(
        state(&repo, &[w.as_path()]),
        before,
        "the tree changed: {v}"
    );
    assert_eq!(repo.snapshot_base(), base, "the base changed");
    // A moment later it is still alive (no delayed SIGKILL).
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(sleeper.alive(), "the process died after gc --apply: {v}");
    // Once the process is gone, the tree is collected.
    drop(sleeper);
    let v = gc_json(&repo, &["--apply"]);
    assert_eq!(candidates(&v)["busy"]["outcome"], "removed", "{v}");
}

/// Only evidence that work happened here and landed makes a tree collectable. A
/// card that only fast-forwarded to a newer base, one re-created on a kept (merged) branch
/// after upstream moved, and one whose agent switched to a branch of its own (pushed, never
/// merged) are all kept, each with its reason, by a dry run and by `--apply`.
#[test]
fn gc_keeps_trees_without_landed_commits_of_their_own() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    // Fast-forward only: HEAD moved off its base commit, is pushed and merged, but nothing
    // was committed here.
    let ff = repo.add_card("ff");
    repo.commit_on_origin("upstream moves for ff");
    repo.git(&ff, &["fetch", "--quiet", "origin"]);
    repo.git(&ff, &["merge", "--quiet", "--ff-only", "origin/main"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);

    // Re-created on its kept branch (merged long ago) after upstream moved on.
    let rk = repo.add_card("rk");
    commit_in(&repo, &rk, "rk-work");
    repo.push_and_merge(&rk, "card/rk");
    repo.kardwt_ok(&repo.base, &["remove", "rk"]);
    assert!(repo.branch_exists("card/rk"));
    repo.commit_on_origin("upstream moves for rk");
    let rk = repo.add_card("rk");

    // Switched to its own branch: its card branch landed, then it committed on `mine` and
    // pushed that, never merged.
    let sw = repo.add_card("sw");
    commit_in(&repo, &sw, "sw-work");
    repo.push_and_merge(&sw, "card/sw");
    repo.git(&sw, &["switch", "--quiet", "-c", "mine"]);
    commit_in(&repo, &sw, "sw-mine");
    repo.git(&sw, &["push", "--quiet", "origin", "mine"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);

    let trees = [ff.as_path(), rk.as_path(), sw.as_path()];
    let before = state(&repo, &trees);
    // Each kept, with why (no commit of its own; not merged, on a branch of its own), whole.
    let mut shown = serde_json::Map::new();
    for args in [&[][..], &["--apply"][..]] {
        let v = gc_json(&repo, args);
        assert_eq!(cards(&v), BTreeSet::new(), "{args:?}: {v}");
        let run = if args.is_empty() {
            "dry run"
        } else {
            "--apply"
        };
        shown.insert(run.into(), v["kept"].clone());
    }
    pinned(&repo).bind(|| insta::assert_json_snapshot!("gc_kept_without_landed_commits", shown));
    assert_eq!(
        state_subset(&state(&repo, &trees), &trees),
        state_subset(&before, &trees),
        "a kept tree changed"
    );
}

/// Make `wt` look untouched for three days: its HEAD reflog and its record.
fn backdate(repo: &TestRepo, wt: &Path) {
    let admin = repo.admin_dir(wt);
    let out = repo
        .command("touch", wt)
        .args(["-d", "3 days ago"])
        .arg(admin.join("logs/HEAD"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    repo.edit_record(wt, "updated_at", "2020-01-01T00:00:00Z");
}

/// `gc --idle DUR` also collects trees that are clean, unused, have no commit of
/// their own and were untouched for DUR; never by default, never one with a commit of its own
/// or a process inside, and its branch is kept.
#[test]
fn idle_collects_untouched_trees_without_work_of_their_own_only_when_asked() {
    let repo = TestRepo::new();
    let idle = repo.add_card("42");
    let worked = repo.add_card("43");
    commit_in(&repo, &worked, "work");
    let used = repo.add_card("44");
    let fresh = repo.add_card("45");
    for wt in [&idle, &worked, &used] {
        backdate(&repo, wt);
    }
    let mut sleeper = crate::support::cleanup::Sleeper::start(&repo, &used);

    // Never by default.
    let out = repo.kardwt_ok(&repo.base, &["gc"]);
    assert!(!out.contains("would collect"), "{out}");
    // Only 42 would be collected: 43 has a commit of its own, 44 is in use, 45 is fresh.
    let dry = repo.kardwt(&repo.base, &["gc", "--idle", "2d"]);
    dry.expect_code(0);
    assert!(idle.exists(), "a dry run changes nothing");
    repo.kardwt(&repo.base, &["gc", "--idle", "soon"])
        .expect_code(2);

    let apply = repo.kardwt(&repo.base, &["gc", "--idle", "2d", "--apply"]);
    apply.expect_code(0);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_idle",
            without_idle_time(&format!(
                "## gc --idle 2d\n{}## --apply\n{}",
                dry.stdout, apply.stdout
            ))
        )
    });
    assert!(!idle.exists());
    assert!(worked.exists() && used.exists() && fresh.exists());
    assert!(repo
        .card_branches()
        .contains(&"refs/heads/card/42".to_owned()));
    assert!(sleeper.alive(), "gc never signals a process");
}

/// gc judges against what the remote has now. A card merged on the remote after the
/// base's last fetch is collectable in the dry run (gc fetched its base first); `--offline`
/// judges against the stale remote-tracking ref, keeps it, and says how old that ref is and
/// that gc without `--offline` fetches first.
#[test]
fn gc_fetches_the_base_first_and_offline_says_how_old_the_last_fetch_is() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let m = repo.add_card("m");
    commit_in(&repo, &m, "m-work");
    // Merged on origin, but the base has not fetched since.
    repo.git(&m, &["push", "--quiet", "origin", "card/m"]);
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    repo.git(
        &repo.scratch,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "merge m",
            "origin/card/m",
        ],
    );
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    let stale = repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]);
    assert_ne!(stale.trim(), repo.origin_main().trim());

    // --offline: judged against the stale ref, kept, and said so.
    let offline = repo.kardwt(&repo.base, &["gc", "--offline"]);
    offline.expect_code(0);
    let v = gc_json(&repo, &["--offline"]);
    assert_eq!(
        v["offline"][0]["tracking_ref"], "refs/remotes/origin/main",
        "{v}"
    );
    assert!(
        v["offline"][0]["age_seconds"].as_u64().unwrap() > 86_400,
        "{v}"
    );
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]),
        stale,
        "--offline fetched"
    );

    // Without --offline, even the dry run judges against the base as the remote has it now.
    let fetched = repo.kardwt(&repo.base, &["gc"]);
    fetched.expect_code(0);
    // Offline: kept, judged against the ref as last fetched (how old, and that gc without
    // --offline fetches first); fetched: would be collected, and no word of an old ref.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_offline_and_fetched",
            format!(
                "## gc --offline\n{}## gc\n{}",
                offline.stdout, fetched.stdout
            )
        )
    });
    assert!(m.is_dir(), "the dry run removed the tree");
    let v = gc_json(&repo, &[]);
    assert_eq!(v["offline"], serde_json::json!([]), "{v}");
}

/// gc judges again under the card's lock what the tree holds then. A commit made
/// on a detached HEAD while `gc --apply` waits for the card's lock (after it judged the tree
/// collectable) keeps the tree: the unpushed commit is never lost.
#[test]
fn a_commit_made_while_gc_waits_for_the_cards_lock_keeps_the_tree() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let w = repo.add_card("w");
    commit_in(&repo, &w, "w-work");
    repo.push_and_merge(&w, "card/w");
    assert_eq!(cards(&gc_json(&repo, &[])), set(&["w"]));

    // Hold card w's lock as another kardwt command would, so gc judges, then waits.
    let card = git_kardwt::ground::card::CardId::parse("w").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let held =
        git_kardwt::sys::take_card_lock(&repo.common_dir(), &card, deadline, "the test").unwrap();
    let gc = repo.spawn_kardwt_bin(&repo.base, &["gc", "--apply", "--json"]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    repo.git(&w, &["switch", "--quiet", "--detach"]);
    commit_in(&repo, &w, "w-late");
    let head = repo.git(&w, &["rev-parse", "HEAD"]);
    drop(held);
    let out = gc.wait(crate::support::COMMAND_TIMEOUT);
    out.expect_code(0);
    assert!(w.exists() && repo.is_registered(&w), "{out}");
    assert_eq!(repo.git(&w, &["rev-parse", "HEAD"]), head, "{out}");
    assert!(out.stdout.contains("no longer collectable"), "{out}");
}

/// `git for-each-ref` of the base: every ref and what it names.
fn all_refs(repo: &TestRepo) -> String {
    repo.git(
        &repo.base,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    )
}

/// The branches of a `gc --branches --json` report's `branches.<list>`, keyed by branch.
fn branch_list(v: &serde_json::Value, list: &str) -> BTreeMap<String, serde_json::Value> {
    v["branches"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no branches.{list}: {v}"))
        .iter()
        .map(|b| (b["branch"].as_str().unwrap().to_owned(), b.clone()))
        .collect()
}

/// `gc --branches` lists the `card/*` branches with no worktree whose commits all
/// landed (merged, squash-merged, rebase-merged) and `--apply` deletes exactly those; an
/// unmerged branch, one checked out in a worktree and a merged one with an extra unpushed
/// commit are kept; the dry run changes no ref.
#[test]
fn gc_branches_deletes_exactly_the_integrated_branches_without_a_worktree() {
    let repo = TestRepo::new();
    let merged = repo.add_card("mg");
    commit_in(&repo, &merged, "mg-one");
    repo.push_and_merge(&merged, "card/mg");

    let squashed = repo.add_card("sq");
    commit_in(&repo, &squashed, "sq-one");
    commit_in(&repo, &squashed, "sq-two");
    push_and_land_without_merge(&repo, &squashed, "card/sq", true);

    let rebased = repo.add_card("rb");
    commit_in(&repo, &rebased, "rb-one");
    commit_in(&repo, &rebased, "rb-two");
    push_and_land_without_merge(&repo, &rebased, "card/rb", false);

    let unmerged = repo.add_card("un");
    commit_in(&repo, &unmerged, "un-one");
    repo.git(&unmerged, &["push", "--quiet", "origin", "card/un"]);

    let extra = repo.add_card("ex");
    commit_in(&repo, &extra, "ex-one");
    repo.push_and_merge(&extra, "card/ex");
    commit_in(&repo, &extra, "ex-unpushed");

    // Checked out, no commit of its own: its tip is in main, but a worktree has it (and the
    // tree part of gc keeps the tree: nothing of its own landed).
    let checked_out = repo.add_card("co");

    for card in ["mg", "sq", "rb", "un"] {
        repo.kardwt_ok(&repo.base, &["remove", card]);
    }
    repo.kardwt_ok(&repo.base, &["remove", "ex", "--force"]);
    assert!(!merged.exists() && !extra.exists());

    let refs_before = all_refs(&repo);
    let report = gc_json(&repo, &["--branches"]);
    let wanted: BTreeSet<String> = ["card/mg", "card/rb", "card/sq"].map(str::to_owned).into();
    let listed: BTreeSet<String> = branch_list(&report, "candidates").into_keys().collect();
    assert_eq!(listed, wanted, "{report}");
    // The report whole: why each is deleted (merged, or its changes in origin/main) or kept
    // (checked out, not integrated).
    pinned(&repo).bind(|| insta::assert_json_snapshot!("gc_branches_json", report));
    let dry = repo.kardwt_ok(&repo.base, &["gc", "--branches"]);
    assert_eq!(all_refs(&repo), refs_before, "the dry run changed a ref");

    let text = repo.kardwt_ok(&repo.base, &["gc", "--branches", "--apply"]);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_branches_text",
            format!("## gc --branches\n{dry}## gc --branches --apply\n{text}")
        )
    });
    assert_eq!(
        repo.card_branches(),
        [
            "refs/heads/card/co",
            "refs/heads/card/ex",
            "refs/heads/card/un"
        ],
        "{text}"
    );
    assert!(repo.is_registered(&checked_out));
    let again = gc_json(&repo, &["--branches", "--apply"]);
    assert!(branch_list(&again, "candidates").is_empty(), "{again}");
}

/// Without `--branches`, gc reports no branches and deletes none; `--branches` with
/// `--prunable` is refused (it never judges a base).
#[test]
fn gc_without_branches_leaves_branches_alone() {
    let repo = TestRepo::new();
    let merged = repo.add_card("mg");
    commit_in(&repo, &merged, "mg-one");
    repo.push_and_merge(&merged, "card/mg");
    repo.kardwt_ok(&repo.base, &["remove", "mg"]);
    let report = gc_json(&repo, &["--apply"]);
    assert!(report.get("branches").is_none(), "{report}");
    assert_eq!(repo.card_branches(), ["refs/heads/card/mg"]);
    repo.kardwt(&repo.base, &["gc", "--branches", "--prunable"])
        .expect_code(2);
}
