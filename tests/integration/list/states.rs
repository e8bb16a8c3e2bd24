//! Visibility: `list --json` states (ready, unseeded, foreign, prunable), drift and
//! locks; `status --json` shows one worktree in full, including `config_changed`.
use std::path::Path;

use serde_json::Value;

use crate::support::TestRepo;

fn entry<'a>(list: &'a [Value], path: &Path) -> &'a Value {
    list.iter()
        .find(|e| e["path"] == path.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not listed in {list:#?}", path.display()))
}

#[test]
fn list_json_shows_every_linked_worktree_with_its_state() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let one = repo.add_card("1");
    let two = repo.add_card("2");
    let three = repo.add_card("3");
    repo.git(&repo.base, &["worktree", "lock", one.to_str().unwrap()]);
    repo.git(&two, &["switch", "--quiet", "-c", "other"]);
    repo.edit_record(&three, "card", "33");

    let unseeded = repo.tmp.join("x");
    repo.add_unhooked_worktree("../x", "feature/x");
    assert!(unseeded.is_dir());
    let gone = repo.add_gone_worktree();

    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let list = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array:\n{out}"));
    assert_eq!(
        list.len(),
        5,
        "expected the five linked worktrees only:\n{out}"
    );
    assert!(
        list.iter()
            .all(|e| e["path"] != repo.base.to_str().unwrap()),
        "the base is not a linked worktree:\n{out}"
    );
    for e in list {
        for key in ["card", "state", "branch", "head", "drift", "path", "locked"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
    }

    let e1 = entry(list, &one);
    assert_eq!(e1["card"], "1", "{e1}");
    assert_eq!(e1["state"], "ready", "{e1}");
    assert_eq!(e1["branch"], "card/1", "{e1}");
    assert_eq!(e1["head"], "card/1", "{e1}");
    assert_eq!(e1["drift"], false, "{e1}");
    assert_eq!(e1["locked"], true, "{e1}");

    let e2 = entry(list, &two);
    assert_eq!(e2["card"], "2", "{e2}");
    assert_eq!(e2["state"], "ready", "{e2}");
    assert_eq!(e2["drift"], true, "{e2}");
    assert_eq!(e2["head"], "other", "{e2}");
    assert_eq!(e2["locked"], false, "{e2}");

    assert_eq!(entry(list, &three)["state"], "foreign", "{out}");
    assert_eq!(entry(list, &unseeded)["state"], "unseeded", "{out}");
    assert_eq!(entry(list, &gone)["state"], "prunable", "{out}");

    let out = repo.kardwt(
        &repo.base,
        &["verify", "--path", unseeded.to_str().unwrap()],
    );
    out.expect_code(1);

    let text = repo.kardwt(&repo.base, &["list"]);
    text.expect_code(0);
    for p in [&one, &two, &three, &unseeded] {
        assert!(text.stdout.contains(p.to_str().unwrap()), "{text}");
    }
    assert!(text.stdout.contains("unseeded"), "{text}");
}

#[test]
fn list_json_is_an_empty_array_without_linked_worktrees() {
    let repo = TestRepo::new();
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json(), serde_json::json!([]), "{out}");
}

#[test]
fn status_json_shows_record_checks_drift_and_config_changed() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("5");

    let out = repo.kardwt(&repo.base, &["status", "5", "--json"]);
    out.expect_code(0);
    let v = out.json();
    for key in [
        "path",
        "card",
        "state",
        "verdict",
        "checks",
        "drift",
        "expected_branch",
        "head",
        "record",
        "links",
        "ports",
        "config_changed",
    ] {
        assert!(v.get(key).is_some(), "{key} missing:\n{out}");
    }
    assert_eq!(v["path"], wt.to_str().unwrap(), "{out}");
    assert_eq!(v["card"], "5", "{out}");
    assert_eq!(v["state"], "ready", "{out}");
    assert_eq!(v["verdict"], "verified", "{out}");
    assert_eq!(v["drift"], false, "{out}");
    assert_eq!(v["expected_branch"], "card/5", "{out}");
    assert_eq!(v["config_changed"], false, "{out}");
    assert_eq!(v["record"]["card"], "5", "{out}");
    assert_eq!(v["record"]["state"], "ready", "{out}");
    assert!(v["links"].is_array(), "{out}");
    assert!(v["ports"].is_array(), "{out}");
    assert!(
        v["checks"].as_array().is_some_and(|c| !c.is_empty()),
        "{out}"
    );

    // Standing in the worktree, no argument is needed.
    let here = repo.kardwt(&wt, &["status", "--json"]);
    here.expect_code(0);
    assert_eq!(here.json()["card"], "5", "{here}");

    // A change of the effective configuration shows; an unrelated top-level key does not.
    let rules = repo.rules_with_prepare(false);
    repo.write_rules(&format!("other_tool: 1\n{rules}"));
    let out = repo.kardwt(&repo.base, &["status", "5", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["config_changed"], false, "{out}");
    repo.write_rules(&repo.rules_with_prepare(true));
    let out = repo.kardwt(&repo.base, &["status", "5", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["config_changed"], true, "{out}");
}

/// Worktrees created detached (`git worktree add --detach` through the hook, and a
/// detached tree recorded by `prepare --path`, as Codex and Cursor make them) are recorded with
/// no expected branch: no drift in `list`, `status`, `verify` or `add`, and no message ends in
/// "expects " with nothing after it.
#[test]
fn detached_worktrees_expect_no_branch_and_never_drift() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let hooked = repo.sibling("det-hook");
    repo.worktree_add(&["--detach", hooked.to_str().unwrap()])
        .expect_code(0);
    let manual = repo.sibling("det-manual");
    repo.worktree_add_unhooked(&["--detach", manual.to_str().unwrap()]);
    repo.kardwt_ok(&repo.base, &["prepare", "--path", manual.to_str().unwrap()]);

    let said_nothing_expected = |out: &crate::support::Output| {
        for l in out.stdout.lines().chain(out.stderr.lines()) {
            assert!(!l.trim_end().ends_with("expects"), "{out}");
            assert!(!l.contains("not on its branch"), "{out}");
        }
    };
    let text = repo.kardwt(&repo.base, &["list"]);
    text.expect_code(0);
    for wt in [&hooked, &manual] {
        let rec = repo.record(wt);
        assert_eq!(rec["branch"].as_str(), Some(""), "{rec}");
        let card = rec["card"].as_str().unwrap().to_owned();
        let line = text
            .stdout
            .lines()
            .find(|l| l.ends_with(wt.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{} not listed:\n{text}", wt.display()));
        assert!(!line.contains("(drift)"), "{text}");

        let row = repo.list_row(wt).unwrap();
        assert_eq!(row["drift"], false, "{row}");
        assert_eq!(row["branch"], Value::Null, "{row}");

        let status = repo.kardwt(
            &repo.base,
            &["status", "--path", wt.to_str().unwrap(), "--json"],
        );
        status.expect_code(0);
        let v = status.json();
        assert_eq!(v["drift"], false, "{status}");
        assert_eq!(v["expected_branch"], Value::Null, "{status}");
        let status = repo.kardwt(&repo.base, &["status", "--path", wt.to_str().unwrap()]);
        status.expect_code(0);
        assert!(status.stdout.contains("drift:           false"), "{status}");
        said_nothing_expected(&status);

        let verify = repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()]);
        verify.expect_code(0);
        said_nothing_expected(&verify);

        // Reuse: the same tree, no drift hint.
        let add = repo.kardwt(&repo.base, &["add", &card, "--json"]);
        add.expect_code(0);
        assert_eq!(add.json()["drift"], false, "{add}");
        said_nothing_expected(&add);
    }
}

/// A locked worktree whose directory is missing (a removable disk, a network
/// mount) is listed `locked` with its card, never `prunable`.
#[test]
fn a_locked_worktree_whose_directory_is_missing_is_listed_locked_with_its_card() {
    let repo = TestRepo::new();
    let wt = repo.add_card("lk");
    repo.git(
        &repo.base,
        &[
            "worktree",
            "lock",
            "--reason",
            "usb disk",
            wt.to_str().unwrap(),
        ],
    );
    std::fs::remove_dir_all(&wt).unwrap();
    let row = repo
        .list_row(&wt)
        .unwrap_or_else(|| panic!("{} not listed", wt.display()));
    assert_eq!(row["state"], "locked", "{row}");
    assert_eq!(row["card"], "lk", "{row}");
    assert_eq!(row["locked"], true, "{row}");
    let out = repo.kardwt(&repo.base, &["list"]);
    out.expect_code(0);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(wt.to_str().unwrap()))
        .unwrap_or_else(|| panic!("not listed:\n{out}"));
    assert!(
        line.starts_with("lk") && line.contains("locked") && !line.contains("prunable"),
        "{out}"
    );
}

/// One linked worktree as `git worktree list --porcelain` describes it.
#[derive(Debug, Default)]
struct GitRow {
    oid: String,
    branch: Option<String>,
    locked: bool,
    prunable: bool,
}

/// `git worktree list --porcelain`, the main worktree (listed first) left out, by path.
fn git_rows(repo: &TestRepo) -> std::collections::BTreeMap<String, GitRow> {
    let text = repo.git(&repo.base, &["worktree", "list", "--porcelain"]);
    let mut rows = std::collections::BTreeMap::new();
    for block in text.split("\n\n").skip(1).filter(|b| !b.trim().is_empty()) {
        let mut path = None;
        let mut row = GitRow::default();
        for line in block.lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "worktree" => path = Some(value.to_owned()),
                "HEAD" => row.oid = value.to_owned(),
                "branch" => row.branch = Some(value.trim_start_matches("refs/heads/").into()),
                "locked" => row.locked = true,
                "prunable" => row.prunable = true,
                "detached" => {}
                other => panic!("unexpected porcelain line {other:?} in:\n{text}"),
            }
        }
        rows.insert(path.expect("a block without a worktree line"), row);
    }
    rows
}

/// `list` reads git's administrative files itself instead of asking git, to stay fast with many
/// worktrees; whatever it reads, it must list exactly the worktrees git lists, with git's HEAD,
/// lock and prunable facts, on a repository that mixes every kind of tree (paths with spaces
/// throughout: the test's directory has one, and one tree's own name has two).
#[test]
fn list_json_agrees_with_git_worktree_list_porcelain() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let added = repo.add_card("1");
    let locked_why = repo.add_card("2");
    repo.install_hooks();
    let hooked = repo.sibling("card-77");
    repo.worktree_add(&[hooked.to_str().unwrap(), "-b", "card/77"])
        .expect_code(0);
    let spaced = repo.sibling("with space/tree two");
    repo.worktree_add(&[spaced.to_str().unwrap(), "-b", "card/78"])
        .expect_code(0);
    let detached = repo.sibling("detached");
    repo.worktree_add(&["--detach", detached.to_str().unwrap()])
        .expect_code(0);
    let unseeded_detached = repo.sibling("plain detached");
    repo.worktree_add_unhooked(&["--detach", unseeded_detached.to_str().unwrap()]);
    // Started with nothing: an unborn branch, and a tree without a checkout.
    let orphan = repo.sibling("orphan");
    repo.worktree_add_unhooked(&["--orphan", "-b", "fresh", orphan.to_str().unwrap()]);
    let empty = repo.sibling("no checkout");
    repo.worktree_add_unhooked(&["--no-checkout", "-b", "empty", empty.to_str().unwrap()]);
    let gone = repo.add_gone_worktree();
    let lock = |wt: &Path, reason: Option<&str>| {
        let mut args = vec!["worktree", "lock"];
        args.extend(reason.into_iter().flat_map(|r| ["--reason", r]));
        args.push(wt.to_str().unwrap());
        repo.git(&repo.base, &args);
    };
    lock(&locked_why, Some("on a usb disk"));
    lock(&hooked, None);
    // Locked and gone: git calls it locked, not prunable.
    let locked_gone = repo.add_card("3");
    lock(&locked_gone, None);
    std::fs::remove_dir_all(&locked_gone).unwrap();
    repo.git(&hooked, &["switch", "--quiet", "--detach"]);

    let git = git_rows(&repo);
    assert_eq!(git.len(), 10, "{git:#?}");
    let list = repo.list_json();
    let listed: Vec<&str> = list.iter().map(|e| e["path"].as_str().unwrap()).collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    let known: Vec<&str> = git.keys().map(String::as_str).collect();
    assert_eq!(sorted, known, "list --json and git list other worktrees");
    for e in &list {
        let g = &git[e["path"].as_str().unwrap()];
        assert_eq!(e["locked"], g.locked, "locked: {e} vs {g:?}");
        assert_eq!(
            e["state"] == "prunable",
            g.prunable,
            "prunable: {e} vs {g:?}"
        );
        match &g.branch {
            // A locked tree whose directory is gone is judged no further than its directory:
            // `list` shows no HEAD for it (git still reads it).
            _ if e["state"] == "locked" => assert_eq!(e["head"], Value::Null, "{e}"),
            Some(b) => assert_eq!(e["head"], b.as_str(), "branch: {e} vs {g:?}"),
            None => assert_eq!(e["head"], g.oid.as_str(), "detached: {e} vs {g:?}"),
        }
    }
    let state = |p: &Path| {
        list[listed
            .iter()
            .position(|l| *l == p.to_str().unwrap())
            .unwrap()]["state"]
            .clone()
    };
    for (p, want) in [
        (&added, "ready"),
        (&locked_why, "ready"),
        (&hooked, "ready"),
        (&spaced, "ready"),
        (&detached, "ready"),
        (&unseeded_detached, "unseeded"),
        (&orphan, "unseeded"),
        (&empty, "unseeded"),
        (&gone, "prunable"),
        (&locked_gone, "locked"),
    ] {
        assert_eq!(state(p), want, "{}: {list:#?}", p.display());
    }
}
