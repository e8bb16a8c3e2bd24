//! `cache list`, `cache check` and `cache prune` on entries real `add`s stored: what they
//! print, that check finds an altered byte and only `--discard` removes it, that prune removes
//! only kardwt's entries by age or all, and that every refusal (no selection, an unreadable
//! duration, a cache path that is a symlink) leaves the disk as it was.
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::support::{pinned, pinned_case, sh_quote, snapshot, TestRepo};

/// A repository whose rules cache `node_modules` built from `package-lock.json`, with two
/// entries: card 1 made from lockfile v1, card 2 from v2. Returns the two keys' entry dirs,
/// in that order.
fn two_entries() -> (TestRepo, PathBuf, PathBuf) {
    let repo = TestRepo::new();
    let log = sh_quote(&repo.prepare_log());
    let script = repo.write_helper(
        "prepare",
        &format!(
            "echo ran >> {log}\n\
             mkdir -p node_modules/pkg\n\
             cp package-lock.json node_modules/pkg/lock-copy\n\
             head -c 5000 /dev/zero > node_modules/pkg/big.bin\n"
        ),
    );
    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n",
        repo.rules_for(&script, false)
    ));
    let lock = |v: &str| {
        repo.commit_files(
            &[
                (".gitignore", ".env\n.env.*\nnode_modules/\n"),
                ("package-lock.json", v),
            ],
            v.trim(),
        );
    };
    lock("v1\n");
    repo.add_card("1");
    let first = entries(&repo);
    assert_eq!(first.len(), 1, "{first:?}");
    lock("v2\n");
    repo.add_card("2");
    let all = entries(&repo);
    assert_eq!(all.len(), 2, "{all:?}");
    let second = all.into_iter().find(|e| *e != first[0]).unwrap();
    (repo, first[0].clone(), second)
}

fn cache_dir(repo: &TestRepo) -> PathBuf {
    repo.common_dir().join("kardwt/cache")
}

/// The entry directories (named by their 64-digit key) in the cache.
fn entries(repo: &TestRepo) -> Vec<PathBuf> {
    let mut keys: Vec<PathBuf> = std::fs::read_dir(cache_dir(repo))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().len() == 64)
        .collect();
    keys.sort();
    keys
}

fn key(entry: &Path) -> String {
    entry.file_name().unwrap().to_string_lossy().into_owned()
}

/// Mark `entry` last used `ago` ago.
fn used_ago(entry: &Path, ago: Duration) {
    let dir = std::fs::File::open(entry).unwrap();
    dir.set_modified(SystemTime::now() - ago).unwrap();
}

#[test]
fn list_shows_each_entry_with_its_size_and_when_it_was_used() {
    let (repo, one, two) = two_entries();
    used_ago(&one, Duration::from_secs(3 * 86_400));
    used_ago(&two, Duration::from_secs(3600));
    let text = repo.kardwt_ok(&repo.base, &["cache", "list"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    // Most recently used first.
    assert!(lines[0].starts_with(&key(&two)[..12]), "{text}");
    assert!(lines[1].starts_with(&key(&one)[..12]), "{text}");
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_list", text));
    let json = repo.kardwt(&repo.base, &["cache", "list", "--json"]);
    json.expect_code(0);
    let rows = json.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["key"], key(&one));
    assert_eq!(rows[1]["files"], 2);
    assert_eq!(rows[1]["bytes"], 5003);
    assert!(rows[1]["age_seconds"].as_u64().unwrap() < 600, "{rows:?}");
    assert_eq!(rows[1]["path"], one.to_string_lossy().as_ref());
}

#[test]
fn list_says_when_there_is_no_cache() {
    let repo = TestRepo::new();
    let text = repo.kardwt_ok(&repo.base, &["cache", "list"]);
    assert!(text.starts_with("no prepare cache entries in "), "{text}");
    let json = repo.kardwt(&repo.base, &["cache", "list", "--json"]);
    assert_eq!(json.json(), serde_json::json!([]));
}

#[test]
fn check_finds_an_altered_byte_and_removes_nothing_unless_asked() {
    let (repo, one, two) = two_entries();
    let clean = repo.kardwt(&repo.base, &["cache", "check"]);
    clean.expect_code(0);
    let mut shown = pinned_case("check", &clean);

    // Same size, other bytes: only the hash tells.
    let big = two.join("files/node_modules/pkg/big.bin");
    let mut bytes = std::fs::read(&big).unwrap();
    bytes[100] = b'x';
    std::fs::write(&big, &bytes).unwrap();
    let before = snapshot(&cache_dir(&repo));
    let damaged = repo.kardwt(&repo.base, &["cache", "check"]);
    damaged.expect_code(1);
    assert!(
        damaged.stdout.contains(&format!(
            "damaged  {}: node_modules/pkg/big.bin's bytes do not match their hash",
            &key(&two)[..12]
        )),
        "{damaged}"
    );
    shown.push_str(&pinned_case("check, a byte altered", &damaged));
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_check", shown));
    assert_eq!(
        snapshot(&cache_dir(&repo)),
        before,
        "check changed the cache"
    );

    let json = repo.kardwt(&repo.base, &["cache", "check", "--json", "--discard"]);
    json.expect_code(1);
    let rows = json.json();
    let bad: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ok"] == false)
        .collect();
    assert_eq!(bad.len(), 1, "{json}");
    assert_eq!(
        (bad[0]["key"].as_str(), &bad[0]["removed"]),
        (Some(key(&two).as_str()), &serde_json::json!(true))
    );
    assert_eq!(entries(&repo), vec![one]);
}

#[test]
fn prune_older_than_removes_only_the_entries_unused_that_long() {
    let (repo, one, two) = two_entries();
    used_ago(&one, Duration::from_secs(3 * 86_400));
    // Not kardwt's: never removed, whatever it is named like.
    std::fs::write(cache_dir(&repo).join("notes.txt"), "mine\n").unwrap();
    std::fs::create_dir(cache_dir(&repo).join(".tmp-1-mine")).unwrap();
    let out = repo.kardwt_ok(&repo.base, &["cache", "prune", "--older-than", "2d"]);
    assert!(
        out.contains(&format!("removed {}", &key(&one)[..12])),
        "{out}"
    );
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_prune_older_than", out));
    assert_eq!(entries(&repo), vec![two.clone()]);
    assert!(cache_dir(&repo).join("notes.txt").exists());
    assert!(cache_dir(&repo).join(".tmp-1-mine").exists());

    let json = repo.kardwt(&repo.base, &["cache", "prune", "--all", "--json"]);
    json.expect_code(0);
    let v = json.json();
    assert_eq!(v["removed"][0]["key"], key(&two));
    assert_eq!(v["freed_bytes"], 5003);
    assert_eq!(entries(&repo), Vec::<PathBuf>::new());
    assert!(cache_dir(&repo).join("notes.txt").exists());
}

#[test]
fn prune_removes_what_an_interrupted_store_left_when_its_process_is_gone() {
    let (repo, _one, _two) = two_entries();
    let gone = format!(".tmp-{}-{}", i32::MAX - 7, "a".repeat(64));
    std::fs::create_dir_all(cache_dir(&repo).join(&gone).join("files")).unwrap();
    let out = repo.kardwt_ok(&repo.base, &["cache", "prune", "--older-than", "30d"]);
    assert!(
        out.contains(&format!("removed {gone} (left by an interrupted store")),
        "{out}"
    );
    assert!(!cache_dir(&repo).join(&gone).exists());
    assert_eq!(entries(&repo).len(), 2);
}

/// `cache prune args` fails with `code`, saying what its snapshot `name` holds, and the cache is
/// as it was.
#[track_caller]
fn refused(repo: &TestRepo, args: &[&str], code: i32, name: &str) {
    let before = snapshot(&repo.common_dir().join("kardwt"));
    let out = repo.kardwt(&repo.base, args);
    out.expect_code(code);
    pinned(repo).bind(|| insta::assert_snapshot!(name, pinned_case(&args.join(" "), &out)));
    assert_eq!(
        snapshot(&repo.common_dir().join("kardwt")),
        before,
        "a refused prune changed the disk"
    );
}

#[test]
fn prune_without_a_selection_removes_nothing() {
    let (repo, _one, _two) = two_entries();
    refused(&repo, &["cache", "prune"], 2, "cache_prune_no_selection");
}

#[test]
fn prune_with_an_unreadable_duration_removes_nothing() {
    let (repo, _one, _two) = two_entries();
    refused(
        &repo,
        &["cache", "prune", "--older-than", "soon"],
        2,
        "cache_prune_no_duration",
    );
    refused(
        &repo,
        &["cache", "prune", "--older-than", "1d", "--all"],
        2,
        "cache_prune_two_selections",
    );
}

#[test]
fn a_cache_path_that_is_a_symlink_is_refused_and_nothing_behind_it_is_touched() {
    let (repo, one, _two) = two_entries();
    // The cache moved elsewhere and a symlink planted in its place.
    let elsewhere = repo.tmp.join("elsewhere");
    std::fs::rename(cache_dir(&repo), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cache_dir(&repo)).unwrap();
    let before = snapshot(&elsewhere);
    assert!(
        before.keys().any(|p| p.starts_with(key(&one))),
        "{before:?}"
    );
    let mut shown = String::new();
    for args in [
        &["cache", "prune", "--all"][..],
        &["cache", "check", "--discard"],
        &["cache", "list"],
    ] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(3);
        shown.push_str(&pinned_case(&args.join(" "), &out));
        assert_eq!(
            snapshot(&elsewhere),
            before,
            "{args:?} touched the cache behind the link"
        );
        assert!(std::fs::symlink_metadata(cache_dir(&repo))
            .unwrap()
            .is_symlink());
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_path_a_symlink", shown));
}
