//! Administrative adoption: `git kardwt adopt <card> --path P` takes over an existing
//! linked worktree only when an `adoptions` entry declares exactly that card, path, common dir
//! and branch and git agrees; anything else exits 3 and writes no record. The exact match writes
//! a record and nothing else: files, status and branch stay byte-identical.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{line, pinned, pinned_case, snapshot, yaml_str, TestRepo};

/// One `worktree.adoptions` entry.
fn adoption(card: &str, path: &Path, common_dir: &Path, branch: &str) -> String {
    format!(
        "worktree:\n  adoptions:\n    - card: {}\n      path: {}\n      common_dir: {}\n      branch: {}\n",
        serde_json::to_string(card).unwrap(),
        yaml_str(path),
        yaml_str(common_dir),
        serde_json::to_string(branch).unwrap(),
    )
}

/// The legacy worktree `../legacy` on `feature/legacy`, created with every hook bypassed (so
/// nothing seeds it), with one commit of its own and an uncommitted edit plus an untracked file.
fn legacy_worktree(repo: &TestRepo) -> PathBuf {
    repo.install_hooks();
    repo.add_unhooked_worktree("../legacy", "feature/legacy");
    let wt = repo.sibling("legacy");
    std::fs::write(wt.join("legacy.txt"), "committed on the legacy branch\n").unwrap();
    repo.git(&wt, &["add", "legacy.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "legacy work"]);
    std::fs::write(wt.join("src/lib.txt"), "one\ntwo\nuncommitted edit\n").unwrap();
    std::fs::write(wt.join("notes.txt"), "untracked notes\n").unwrap();
    assert!(
        !repo.record_path(&wt).exists(),
        "a hook seeded the legacy tree"
    );
    wt
}

/// What must not change: every file of the tree, its status, branch and HEAD, and the admin dir
/// (the record aside).
fn observe(repo: &TestRepo, wt: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut snap = snapshot(wt);
    let status = repo.git(
        wt,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=all",
        ],
    );
    snap.insert("<status>".into(), status.into_bytes());
    let branch = repo.git(wt, &["symbolic-ref", "HEAD"]);
    snap.insert("<symbolic-ref HEAD>".into(), branch.into_bytes());
    let head = repo.git(wt, &["rev-parse", "HEAD"]);
    snap.insert("<rev-parse HEAD>".into(), head.into_bytes());
    let admin = repo.admin_dir(wt);
    for (rel, bytes) in snapshot(&admin) {
        if rel != Path::new("kardwt.toml") {
            snap.insert(Path::new("<admin>").join(rel), bytes);
        }
    }
    snap.insert("<refs>".into(), repo.all_refs().into_bytes());
    snap
}

/// Assert two observations are equal, naming the entries that differ (as text).
#[track_caller]
fn assert_same(
    before: &BTreeMap<PathBuf, Vec<u8>>,
    after: &BTreeMap<PathBuf, Vec<u8>>,
    what: &str,
) {
    let keys: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    let changed: Vec<String> = keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            let show = |v: Option<&Vec<u8>>| v.map(|b| String::from_utf8_lossy(b).into_owned());
            format!(
                "{}: {:?} -> {:?}",
                k.display(),
                show(before.get(k)),
                show(after.get(k))
            )
        })
        .collect();
    assert!(
        changed.is_empty(),
        "{what} changed the worktree:\n{}",
        changed.join("\n")
    );
}

fn adopted_events(repo: &TestRepo) -> usize {
    repo.events(None)
        .iter()
        .filter(|e| e["event"] == "adopted")
        .count()
}

/// Refusals: each of card, path, common dir and branch that the entry does not
/// declare exits 3 and writes no record, as does an entry git does not agree with.
#[test]
fn adopt_refuses_anything_the_entry_does_not_declare_exactly() {
    let repo = TestRepo::new();
    let wt = legacy_worktree(&repo);
    let common = repo.common_dir();
    // A second unmanaged linked worktree (for the "another path" case).
    repo.add_unhooked_worktree("../other", "feature/other");
    let other = repo.sibling("other");
    let before = observe(&repo, &wt);

    let cases: Vec<(&str, String, Vec<String>, &str)> = vec![
        (
            "card the entry does not declare",
            adoption("123", &wt, &common, "feature/legacy"),
            vec!["124".into()],
            "124",
        ),
        (
            "entry declares another path",
            adoption(
                "123",
                &repo.sibling("legacy-old"),
                &common,
                "feature/legacy",
            ),
            vec!["123".into()],
            "legacy-old",
        ),
        (
            "path of another worktree than the declared one",
            adoption("123", &wt, &common, "feature/legacy"),
            vec!["123".into(), other.to_str().unwrap().into()],
            "other",
        ),
        (
            "entry declares another common dir",
            adoption("123", &wt, &repo.scratch.join(".git"), "feature/legacy"),
            vec!["123".into()],
            "common dir",
        ),
        (
            "entry declares another branch",
            adoption("123", &wt, &common, "feature/other"),
            vec!["123".into()],
            "feature/other",
        ),
        (
            "git disagrees: the path is no linked worktree of this repository",
            adoption("123", &repo.scratch, &common, "main"),
            vec!["123".into(), repo.scratch.to_str().unwrap().into()],
            "not a linked worktree",
        ),
    ];
    // Each refusal names what does not match.
    let mut shown = String::new();
    for (what, rules, args, _named) in cases {
        repo.write_rules(&rules);
        let card = args[0].as_str();
        let path = args.get(1).map_or(wt.to_str().unwrap(), String::as_str);
        let out = repo.kardwt(&repo.base, &["adopt", card, "--path", path]);
        assert_eq!(out.code, 3, "{what}: not refused with exit 3:\n{out}");
        shown.push_str(&pinned_case(what, &out));
        for t in [&wt, &other] {
            assert!(
                !repo.record_path(t).exists(),
                "{what}: a record was written for {}",
                t.display()
            );
        }
        assert!(!repo.scratch.join(".git/kardwt.toml").exists(), "{what}");
        assert_same(&before, &observe(&repo, &wt), what);
        assert_eq!(
            repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
                .code,
            1,
            "{what}: legacy no longer unseeded"
        );
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("adopt_refuses_what_does_not_match", shown));
    assert_eq!(adopted_events(&repo), 0);
}

/// The exact match: a record (origin adopt, reason adopt, state ready) and nothing
/// else; the uncommitted edit, the untracked file, status and branch are byte-identical; then
/// `verify --path` exits 0.
#[test]
fn adopt_on_the_exact_match_writes_a_record_and_nothing_else() {
    let repo = TestRepo::new();
    let wt = repo.sibling("legacy");
    let prepare = repo.write_prepare("");
    // A prepare hook is configured: adoption must not run it.
    repo.write_rules(&format!(
        "{}  adoptions:\n    - card: \"123\"\n      path: {}\n      common_dir: {}\n      branch: feature/legacy\n",
        repo.rules_for(&prepare, true),
        yaml_str(&wt),
        yaml_str(&repo.common_dir()),
    ));
    let wt = {
        let made = legacy_worktree(&repo);
        assert_eq!(made, wt);
        made
    };
    let verify = |repo: &TestRepo| {
        repo.kardwt(&repo.base, &["verify", "--path", wt.to_str().unwrap()])
            .code
    };
    assert_eq!(verify(&repo), 1, "the legacy tree is not unseeded before");
    let before = observe(&repo, &wt);
    let base = repo.snapshot_base();

    let out = repo.kardwt(
        &repo.base,
        &["adopt", "123", "--path", wt.to_str().unwrap()],
    );
    out.expect_code(0);
    assert_eq!(out.stdout, line(&wt), "{out}");

    assert_same(&before, &observe(&repo, &wt), "adopt");
    assert_eq!(repo.snapshot_base(), base, "adopt changed the base");
    assert_eq!(
        std::fs::read_to_string(wt.join("src/lib.txt")).unwrap(),
        "one\ntwo\nuncommitted edit\n"
    );
    assert!(repo.prepare_runs().is_empty(), "adopt ran the prepare hook");
    let rec = repo.record(&wt);
    for (key, want) in [
        ("card", "123"),
        ("branch", "feature/legacy"),
        ("origin", "adopt"),
        ("reason", "adopt"),
        ("state", "ready"),
        ("path", wt.to_str().unwrap()),
        ("common_dir", repo.common_dir().to_str().unwrap()),
    ] {
        assert_eq!(rec[key].as_str(), Some(want), "{key} in {rec:?}");
    }
    assert_eq!(verify(&repo), 0, "the adopted tree does not verify");
    assert_eq!(adopted_events(&repo), 1);
    let v = repo.kardwt(&repo.base, &["verify", "123", "--json"]);
    v.expect_code(0);
}

/// Adoption from a relative `--path` and from inside another directory resolves to the same
/// declared absolute path.
#[test]
fn adopt_accepts_a_relative_path_to_the_declared_tree() {
    let repo = TestRepo::new();
    let wt = repo.sibling("legacy");
    repo.write_rules(&adoption("123", &wt, &repo.common_dir(), "feature/legacy"));
    legacy_worktree(&repo);
    let out = repo.kardwt(&repo.base, &["adopt", "123", "--path", "../legacy"]);
    out.expect_code(0);
    assert_eq!(out.stdout, line(&wt), "{out}");
    assert_eq!(repo.record(&wt)["origin"].as_str(), Some("adopt"));
}
