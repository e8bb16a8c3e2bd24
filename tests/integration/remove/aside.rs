//! Removal returns at once: `remove` moves the judged tree aside (a recorded rename beside it)
//! and a detached process deletes its files after the command returned. A move whose deleter
//! was killed is finished by the next locked command and by `gc`; a recorded path that now
//! holds another directory is never deleted.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::strace::{strace, Fault};
use crate::support::{pinned, pinned_case, wait_until, TestRepo, BIN, COMMAND_TIMEOUT};

/// A card tree holding `n` committed files (so it is clean), card `card`.
pub(super) fn tree_with_files(repo: &TestRepo, card: &str, n: usize) -> PathBuf {
    let wt = repo.add_card(card);
    for i in 0..n {
        let dir = wt.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    repo.git(&wt, &["add", "-A"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "files"]);
    wt
}

/// The moved-aside siblings of `wt` (`.<name>.kardwt-removing-…`).
pub(super) fn asides(wt: &Path) -> Vec<PathBuf> {
    let prefix = format!(
        ".{}.kardwt-removing-",
        wt.file_name().unwrap().to_string_lossy()
    );
    let mut out: Vec<PathBuf> = std::fs::read_dir(wt.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The records of moves aside.
pub(super) fn records(repo: &TestRepo) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(repo.common_dir().join("kardwt/aside")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

/// `remove` of card 42 with its deleter killed (SIGKILL, by strace, on entering its first
/// unlinkat: neither kardwt nor git calls one while removing) before it deleted a file: the
/// tree is gone from its path and unregistered, and lies aside, recorded, whole.
pub(super) fn killed_removal(repo: &TestRepo) -> (PathBuf, PathBuf) {
    let wt = tree_with_files(repo, "42", 50);
    // Every process followed, without --seccomp-bpf: under it strace 6.1 delivers no injected
    // signal to a child (the deleter).
    let kill_deleter = Fault::new("unlinkat", "KILL", 1, true);
    let trace = format!("trace={}", kill_deleter.syscall);
    let inject = kill_deleter.expression();
    let args = [
        "-qq",
        "-o",
        "/dev/null",
        "-f",
        "-e",
        &trace,
        "-e",
        &inject,
        BIN,
        "remove",
        "42",
    ];
    let out = repo
        .spawn(strace(), &repo.base, &args)
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    let aside = asides(&wt);
    assert_eq!(aside.len(), 1, "{out}");
    assert_eq!(records(repo).len(), 1, "{out}");
    // Killed before deleting: still whole a while later.
    std::thread::sleep(Duration::from_millis(300));
    assert!(aside[0].join("d3/f3.txt").is_file(), "{out}");
    (wt, aside[0].clone())
}

#[test]
fn remove_frees_the_path_at_once_and_the_files_go_after_it_returned() {
    let repo = TestRepo::new();
    let wt = tree_with_files(&repo, "42", 2000);
    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(0);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("remove_moves_aside", pinned_case("remove 42", &out)));
    // The path and the registration are gone when remove returns.
    assert!(!wt.exists(), "{out}");
    assert!(!repo.is_registered(&wt), "{out}");
    assert!(repo.branch_exists("card/42"), "{out}");
    // The files go shortly after, and so does the record of the move.
    let gone = wait_until(Duration::from_secs(60), || {
        asides(&wt).is_empty() && records(&repo).is_empty()
    });
    assert!(gone, "left: {:?} {:?}", asides(&wt), records(&repo));
    // The path is free for the card again.
    repo.kardwt_ok(&repo.base, &["add", "42"]);
    assert!(wt.join(".git").is_file());
}

#[test]
fn a_move_whose_deleter_was_killed_is_listed_by_gc_and_finished_by_the_next_locked_command() {
    let repo = TestRepo::new();
    let (_wt, aside) = killed_removal(&repo);

    // gc's dry run names it and changes nothing.
    let out = repo.kardwt(&repo.base, &["gc", "--offline"]);
    out.expect_code(0);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_names_a_killed_deleters_move",
            pinned_case("gc --offline", &out)
        )
    });
    assert!(aside.join("d3/f3.txt").is_file(), "{out}");
    assert_eq!(records(&repo).len(), 1);

    // The next command that takes the repository lock finishes it.
    repo.kardwt_ok(&repo.base, &["add", "43"]);
    let gone = wait_until(Duration::from_secs(60), || {
        !aside.exists() && records(&repo).is_empty()
    });
    assert!(gone, "the move aside was not finished");
}

#[test]
fn gc_apply_deletes_a_move_a_killed_deleter_left() {
    let repo = TestRepo::new();
    let (_wt, aside) = killed_removal(&repo);
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    out.expect_code(0);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_deletes_a_killed_deleters_move",
            pinned_case("gc --apply --offline", &out)
        )
    });
    assert!(!aside.exists(), "{out}");
    assert!(records(&repo).is_empty(), "{out}");
}

#[test]
fn a_directory_planted_at_a_recorded_path_is_never_deleted() {
    let repo = TestRepo::new();
    let (_wt, aside) = killed_removal(&repo);
    // The moved tree goes elsewhere; another directory now stands at the recorded path.
    let away = repo.tmp.join("moved-away");
    std::fs::rename(&aside, &away).unwrap();
    std::fs::create_dir(&aside).unwrap();
    std::fs::write(aside.join("keep"), "mine\n").unwrap();
    let record = records(&repo).pop().unwrap();

    // The deleter itself refuses it.
    let out = repo.kardwt(&repo.base, &["delete-aside", record.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out}");
    assert!(aside.join("keep").is_file(), "{out}");

    // The next locked command warns and leaves it.
    let out = repo.kardwt(&repo.base, &["add", "43"]);
    out.expect_code(0);
    let mut shown = pinned_case("add 43", &out);
    std::thread::sleep(Duration::from_millis(500));
    assert!(aside.join("keep").is_file(), "{out}");

    // gc lists it as refused; --apply forgets the record and leaves the directory.
    let out = repo.kardwt(&repo.base, &["gc", "--offline"]);
    shown.push_str(&pinned_case("gc --offline", &out));
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    shown.push_str(&pinned_case("gc --apply --offline", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("a_planted_directory_at_a_recorded_path", shown));
    assert!(aside.join("keep").is_file(), "{out}");
    assert!(away.join("d3/f3.txt").is_file(), "{out}");
    assert!(records(&repo).is_empty(), "{out}");
}

#[test]
fn delete_aside_refuses_a_file_outside_kardwts_records() {
    let repo = TestRepo::new();
    let victim = repo.tmp.join("victim");
    std::fs::create_dir(&victim).unwrap();
    let fake = repo.tmp.join("fake.json");
    let text = format!(
        r#"{{"card":"1","from":"/x","path":"{}","dev":0,"ino":0,"moved_at":""}}"#,
        victim.display()
    );
    std::fs::write(&fake, text).unwrap();
    let out = repo.kardwt(&repo.base, &["delete-aside", fake.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out}");
    assert!(victim.is_dir(), "{out}");
}

/// A rename that fails with EXDEV (here injected by strace on the tree's own path, as when
/// another file system is mounted at it): the tree is deleted in place before remove returns,
/// and nothing is left aside or recorded.
#[test]
fn a_tree_that_cannot_be_renamed_is_deleted_in_place_before_remove_returns() {
    let repo = TestRepo::new();
    let wt = tree_with_files(&repo, "42", 50);
    let syscalls = "rename,renameat,renameat2";
    let args = [
        "-qq",
        "-o",
        "/dev/null",
        "-P",
        wt.to_str().unwrap(),
        "-e",
        &format!("trace={syscalls}"),
        "-e",
        &format!("inject={syscalls}:error=EXDEV"),
        BIN,
        "remove",
        "42",
    ];
    let cmd = repo.command(crate::support::strace::strace(), &repo.base);
    let out = repo
        .start_command(cmd, &repo.base, &args)
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("removed in place (it cannot be renamed within its file system (EXDEV))"),
        "{out}"
    );
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert!(asides(&wt).is_empty(), "{out}");
    assert!(records(&repo).is_empty(), "{out}");
}
