//! Trust under attack and accident: a kill halfway through trusting, two trusts at once, a
//! store another user can write (or reached through a symlink to such a place), and committed
//! names that are not UTF-8. Each leaves nothing trusted that was not, and says what to do.
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::*;
use crate::support::strace::Fault;

/// The one repository store beneath `trusted/` (made by a first trust).
fn repo_store(repo: &TestRepo) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store(repo))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "one store per repository: {dirs:?}");
    dirs.pop().unwrap()
}

/// The names in a repository store: versions, manifests, leftovers.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn manifests(dir: &Path) -> usize {
    names(dir).iter().filter(|n| n.ends_with(".toml")).count()
}

#[test]
fn a_kill_halfway_through_trust_trusts_nothing_and_the_next_trust_finishes() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    let before = repo.snapshot_base();
    // Trust renames twice: its copy into place, then its manifest. Which system call each is
    // differs between builds, so every rename call is tried, the first and second of each.
    let mut kills = Vec::new();
    for syscall in ["rename", "renameat", "renameat2"] {
        for when in 1..=2 {
            let _ = std::fs::remove_dir_all(store(&repo));
            let fault = Fault::new(syscall, "KILL", when, false);
            let out = repo.kardwt_injected(&fault, &repo.base, &["trust"]);
            if out.code == 0 {
                continue;
            }
            let left = names(&repo_store(&repo));
            assert!(
                left.iter().any(|n| n != ".lock"),
                "killed at {fault}, trust left nothing to clear up: {left:?}\n{out}"
            );
            assert_eq!(
                manifests(&repo_store(&repo)),
                0,
                "killed at {fault}, a version counts as trusted: {left:?}"
            );
            let out = repo.kardwt(&repo.base, &["add", "1"]);
            out.expect_code(3);
            names_trust(&repo, &out);
            repo.assert_nothing_created(&before, "add after a killed trust");
            kills.push(fault);
        }
    }
    assert!(
        kills.len() >= 2,
        "the kills did not land on both renames: {kills:?}"
    );

    // After each kind of kill, a full trust: one version, no leftovers.
    for fault in &kills {
        let _ = std::fs::remove_dir_all(store(&repo));
        assert_ne!(repo.kardwt_injected(fault, &repo.base, &["trust"]).code, 0);
        repo.kardwt_ok(&repo.base, &["trust"]);
        let left = names(&repo_store(&repo));
        assert!(
            !left
                .iter()
                .any(|n| n.starts_with(".incoming-") || n.contains(".tmp")),
            "trust left a killed trust's files: {left:?}"
        );
        assert_eq!(manifests(&repo_store(&repo)), 1, "{left:?}");
    }
    let tree = repo.add_card("1");
    assert_eq!(prepared_by(&tree), "v1 --from-rules\n");
}

#[test]
fn a_trust_waits_for_another_and_three_at_once_trust_one_version() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let dir = repo_store(&repo);
    let mut v2 = scripts(&repo, "v2");
    v2.truncate(1);
    commit_scripts(&repo, &v2, true);

    // While another holds the store's lock, trust waits and trusts nothing.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(".lock"))
        .expect("the store's lock file");
    let mut lock = fd_lock::RwLock::new(file);
    let held = lock.write().unwrap();
    let mut waiting = repo.spawn_kardwt_bin(&repo.base, &["trust"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        waiting.child.try_wait().unwrap().is_none(),
        "trust did not wait for the store's lock"
    );
    assert_eq!(
        manifests(&dir),
        1,
        "trust wrote while another held the lock"
    );
    drop(held);
    waiting.wait(COMMAND_TIMEOUT).expect_code(0);
    assert_eq!(manifests(&dir), 2);

    let mut v3 = scripts(&repo, "v3");
    v3.truncate(1);
    commit_scripts(&repo, &v3, true);
    let runs: Vec<_> = (0..3)
        .map(|_| repo.spawn_kardwt_bin(&repo.base, &["trust"]))
        .collect();
    for run in runs {
        run.wait(COMMAND_TIMEOUT).expect_code(0);
    }
    let left = names(&dir);
    assert_eq!(manifests(&dir), 3, "{left:?}");
    assert!(
        !left.iter().any(|n| n.starts_with(".incoming-")),
        "{left:?}"
    );
    let tree = repo.add_card("3");
    assert_eq!(prepared_by(&tree), "v3 --from-rules\n");
}

#[test]
fn a_store_others_can_write_is_refused_and_a_symlink_to_one_too() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let dir = repo_store(&repo);
    let before = repo.snapshot_base();
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };

    mode(&dir, 0o777);
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(3);
    let mut shown = pinned_case("add 1, the store writable by others", &out);
    repo.assert_nothing_created(&before, "add with a writable store");
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(3);
    mode(&dir, 0o700);

    // The user's data directory's `git-kardwt` made a symlink to a directory anyone can write.
    let data = repo.home.join(".local/share/git-kardwt");
    let shared = repo.tmp.join("shared-by-all");
    std::fs::rename(&data, &shared).unwrap();
    std::os::unix::fs::symlink(&shared, &data).unwrap();
    mode(&shared, 0o777);
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(3);
    shown.push_str(&pinned_case(
        "add 1, through a symlink to such a store",
        &out,
    ));
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_unsafe_store", shown));
    repo.assert_nothing_created(&before, "add through a symlinked store");
    // A symlink to a place only the user writes is the user's own business.
    mode(&shared, 0o755);
    let tree = repo.add_card("1");
    assert_eq!(prepared_by(&tree), "v1 --from-rules\n");
}

#[test]
fn a_committed_name_that_is_not_utf8_is_not_trusted() {
    let repo = TestRepo::new();
    let mut files = scripts(&repo, "v1");
    files.truncate(1);
    commit_scripts(&repo, &files, false);
    let odd = repo
        .scratch
        .join(std::ffi::OsStr::from_bytes(b"tools/kardwt/odd-\xff"));
    std::fs::write(&odd, "#!/bin/sh\n").unwrap();
    repo.git(&repo.scratch, &["add", "--", "tools/kardwt"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "odd name"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    repo.write_rules(RULES);
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(3);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("trust_a_name_not_utf8", pinned_case("trust", &out)));
    assert!(
        !store(&repo).exists() || manifests(&repo_store(&repo)) == 0,
        "a version was trusted"
    );
}

#[test]
fn a_store_beneath_a_data_directory_that_is_not_utf8_works() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    let data = repo.tmp.join(std::ffi::OsStr::from_bytes(b"data-\xfe"));
    std::fs::create_dir(&data).unwrap();
    let env = [("XDG_DATA_HOME", data.as_os_str())];
    repo.spawn_with_env(BIN, &repo.base, &["trust"], &env)
        .wait(COMMAND_TIMEOUT)
        .expect_code(0);
    let out = repo
        .spawn_with_env(BIN, &repo.base, &["add", "1"], &env)
        .wait(COMMAND_TIMEOUT);
    out.expect_code(0);
    assert_eq!(prepared_by(&repo.card_path("1")), "v1 --from-rules\n");
    assert!(
        !store(&repo).exists(),
        "the store went to HOME instead of XDG_DATA_HOME"
    );
}

/// Committed names that hold escape sequences, a carriage return or a newline are shown with
/// those written out: one line per file, so a changed `prepare` cannot be painted over to read
/// "same", nor the line naming the diff to read be erased.
#[test]
fn names_holding_control_characters_are_shown_escaped() {
    let repo = TestRepo::new();
    let mut files = scripts(&repo, "v1");
    files.truncate(1);
    commit_scripts(&repo, &files, true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let mut v2 = scripts(&repo, "v2");
    v2.truncate(1);
    // Sorted after `prepare`: each would repaint the lines above it on a terminal.
    let odd = [
        "tools/kardwt/q\r  same     tools/kardwt/prepare",
        "tools/kardwt/r\u{1b}[2A\u{1b}[2K  same     tools/kardwt/prepare\u{1b}[1B\u{1b}[2K",
        "tools/kardwt/s\nsame     tools/kardwt/prepare",
        "tools/kardwt/t\u{202e}eraperp",
    ];
    for name in odd {
        v2.push((name.to_owned(), "#!/bin/sh\n".to_owned()));
    }
    commit_scripts(&repo, &v2, true);
    let mut shown = String::new();
    for args in [&["trust", "--dry-run"][..], &["trust"]] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(0);
        shown.push_str(&pinned_case(&args.join(" "), &out));
        assert!(
            !out.stdout
                .chars()
                .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
            "{args:?}: a control character reached the terminal:\n{out:?}"
        );
        // The header, five files, the diff to read, the last line.
        assert_eq!(out.stdout.lines().count(), 8, "{args:?}:\n{out}");
    }
    // Each odd name escaped (`\r`, `\e[2A`, `\n`, `\u{202e}`), the changed file and the diff to
    // read named.
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_odd_names_escaped", shown));
    // A trusted copy of such a file that changed is refused naming it, escaped too.
    let copy = walk(&store(&repo))
        .into_iter()
        .find(|p| p.to_string_lossy().contains("/r\u{1b}"))
        .expect("the trusted copy");
    std::fs::write(&copy, "#!/bin/sh\nexit 1\n").unwrap();
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(3);
    assert!(!out.stderr.contains('\u{1b}'), "{out:?}");
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("trust_odd_copy_changed", pinned_case("add 1", &out)));
}
