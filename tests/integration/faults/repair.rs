//! Every interrupted state has a working repair. Faults come from strace:
//! a failed unlink or directory read inside the `git worktree remove` that `git kardwt remove`
//! runs, and SIGKILL of `git kardwt add` at its syscalls. After each, the next `add` repairs by
//! itself, or `doctor` names a command that works, and either way the card ends with the tree
//! `add` makes: its `.env` link, its copy, its port, prepared, ready, and no temporary file left
//! anywhere. Never deleted: a directory no claim names (even one that looks half removed),
//! another repository's worktree, what a symlink points at, files changed after a failed
//! removal (unless `--force`), the base, another card's tree.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::procs::{processes_under, reap};
use crate::support::strace::Fault;
use crate::support::{snapshot, wait_until, Output, TestRepo, BIN, COMMAND_TIMEOUT};

/// The range every card's one port comes from.
const PORTS: (u64, u64) = (47300, 47399);

/// The bytes of the base's ignored `cache/blob.bin`, which every card gets a copy of.
fn blob() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect()
}

/// A repository whose cards get an `.env` link, a copy of `cache/`, one port and a prepare run,
/// with twenty tracked files (git's removal of a tree has as many points to fail at), and a
/// stranger's directory under the worktree root that looks like a half-removed tree but that no
/// claim names.
struct Scene {
    repo: TestRepo,
    stranger: PathBuf,
    stranger_before: BTreeMap<PathBuf, Vec<u8>>,
    base_before: BTreeMap<PathBuf, Vec<u8>>,
}

fn scene() -> Scene {
    let repo = TestRepo::new();
    let mut files: Vec<(String, String)> = (1..=20)
        .map(|i| (format!("src/f{i:02}.txt"), format!("{i}\n")))
        .collect();
    files.push((".gitignore".into(), ".env\n.env.*\ncache/\n".into()));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (&**p, &**c)).collect();
    repo.commit_files(&files, "twenty files and the ignore rules");
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::create_dir_all(repo.base.join("cache")).unwrap();
    std::fs::write(repo.base.join("cache/blob.bin"), blob()).unwrap();
    let script = repo.write_prepare("");
    repo.write_rules(&format!(
        "{}    copy: [cache]\n  ports: {{count: 1, range: [{}, {}]}}\n",
        repo.rules_sharing(&script),
        PORTS.0,
        PORTS.1
    ));
    // Its `.git` names an admin dir of this repository that does not exist, as a tree git
    // forgot would: only a claim makes such a directory kardwt's.
    let stranger = repo.root().join("card-stranger");
    std::fs::create_dir_all(stranger.join("src")).unwrap();
    std::fs::write(stranger.join("src/keep.txt"), "a stranger's file\n").unwrap();
    let gone_admin = repo.common_dir().join("worktrees/card-stranger");
    std::fs::write(
        stranger.join(".git"),
        format!("gitdir: {}\n", gone_admin.display()),
    )
    .unwrap();
    let stranger_before = snapshot(&stranger);
    let base_before = repo.snapshot_base();
    Scene {
        repo,
        stranger,
        stranger_before,
        base_before,
    }
}

impl Scene {
    /// The base and the stranger's directory are as they were.
    #[track_caller]
    fn assert_untouched(&self, what: &str) {
        assert_eq!(
            snapshot(&self.stranger),
            self.stranger_before,
            "{what}: the stranger's directory changed"
        );
        assert_eq!(
            self.repo.snapshot_base(),
            self.base_before,
            "{what}: the base changed"
        );
    }
}

/// Wait until nothing a killed command left running (its git, its hook) runs any more: the
/// state a person finds afterwards.
fn settle(repo: &TestRepo) {
    if !wait_until(Duration::from_secs(30), || {
        processes_under(&repo.tmp).is_empty()
    }) {
        reap(&repo.tmp);
    }
}

/// Every temporary file under the common dir (`.<name>.….tmp`) and every copy's temporary
/// (`.kardwt-tmp-…`) under the worktree root.
fn temporaries(repo: &TestRepo) -> Vec<PathBuf> {
    let common = repo.common_dir();
    let mut out = Vec::new();
    for (dir, copies) in [
        (common.join("kardwt"), false),
        (common.join("worktrees"), false),
        (common.join("info"), false),
        (repo.root(), true),
    ] {
        for rel in snapshot(&dir).into_keys() {
            let name = rel.file_name().unwrap().to_string_lossy().into_owned();
            let temp = if copies {
                name.starts_with(".kardwt-tmp-")
            } else {
                name.starts_with('.') && name.ends_with(".tmp")
            };
            if temp {
                out.push(dir.join(rel));
            }
        }
    }
    out
}

/// Assert card `card` has the tree `add` makes (ready, `.env` link, copy, one port, prepared)
/// and that no temporary file is left anywhere; returns its path.
#[track_caller]
fn assert_complete(repo: &TestRepo, card: &str, what: &str) -> PathBuf {
    let path = repo.card_path(card);
    assert!(
        repo.is_registered(&path),
        "{what}: card {card} has no worktree"
    );
    let rec = repo.record(&path);
    assert_eq!(rec["state"].as_str(), Some("ready"), "{what}: {rec:?}");
    let link = std::fs::read_link(path.join(".env"));
    assert_eq!(
        link.ok(),
        Some(repo.base.join(".env")),
        "{what}: the .env link"
    );
    assert_eq!(
        std::fs::read(path.join("cache/blob.bin")).ok(),
        Some(blob()),
        "{what}: the copy of cache/blob.bin"
    );
    let ports: Vec<u64> = rec["ports"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_integer()).map(|p| p as u64))
        .into_iter()
        .flatten()
        .collect();
    assert!(
        ports.len() == 1 && (PORTS.0..=PORTS.1).contains(&ports[0]),
        "{what}: ports {ports:?}"
    );
    let hook = rec["last_hook"].as_table();
    assert!(
        hook.is_some_and(
            |h| h["phase"].as_str() == Some("prepare") && h["exit_code"].as_integer() == Some(0)
        ),
        "{what}: prepare did not succeed last: {rec:?}"
    );
    let left = temporaries(repo);
    assert!(left.is_empty(), "{what}: temporary files left: {left:?}");
    path
}

/// `doctor --json`'s failing findings, but the hooks' (never installed here): (check, detail,
/// fix).
fn doctor_findings(repo: &TestRepo) -> Vec<(String, String, String)> {
    let out = repo.kardwt(&repo.base, &["doctor", "--json"]);
    let json = out.json();
    let checks = json["checks"].as_array().cloned().unwrap_or_default();
    checks
        .iter()
        .filter(|c| c["ok"] == false && !c["check"].as_str().unwrap_or("").ends_with(" hook"))
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (s("check"), s("detail"), s("fix"))
        })
        .collect()
}

/// Run every command `doctor` names, round after round, until it names none, asserting each
/// works; returns them.
#[track_caller]
fn follow_doctor(repo: &TestRepo, what: &str) -> Vec<String> {
    let mut ran = Vec::new();
    for _ in 0..3 {
        let findings = doctor_findings(repo);
        if findings.is_empty() {
            return ran;
        }
        for (check, detail, fix) in findings {
            let out = sh(repo, &fix);
            assert_eq!(
                out.code, 0,
                "{what}: the fix doctor names for {check} ({detail}) failed:\n{out}"
            );
            ran.push(fix);
        }
    }
    panic!(
        "{what}: doctor still finds {:?} after running {ran:?}",
        doctor_findings(repo)
    );
}

/// A command line as a person pastes it, run in the base.
fn sh(repo: &TestRepo, line: &str) -> Output {
    repo.spawn("sh", &repo.base, &["-c", line])
        .wait(COMMAND_TIMEOUT)
}

/// `git kardwt remove <card>` with `fault` injected into it and every process it starts, and
/// the tree deleted by git in place: kardwt's move aside fails (its first rename(2) is that
/// move, its records are renamed into place with renameat; git renames nothing while
/// removing), so git's failure part way leaves what this file repairs.
fn faulted_remove(repo: &TestRepo, fault: &Fault, card: &str) -> Output {
    let in_place = Fault::new("rename", "EXDEV", 1, true);
    let out = repo
        .injected_all_within(
            &[fault.clone(), in_place],
            BIN,
            &repo.base,
            &["remove", card],
            COMMAND_TIMEOUT,
        )
        .unwrap_or_else(|| panic!("remove {card} with {fault} hung"));
    settle(repo);
    out
}

/// What a failed removal left at `path`: the directory, but no admin dir and no registration.
fn half_removed(repo: &TestRepo, path: &Path) -> bool {
    path.is_dir() && !repo.is_registered(path)
}

#[test]
fn a_tree_git_worktree_remove_left_half_deleted_is_cleared_by_remove_or_the_next_add() {
    let s = scene();
    let repo = &s.repo;
    let mut faults: Vec<Fault> = [1, 2, 3, 5, 8, 13, 18, 22]
        .into_iter()
        .map(|n| Fault::new("unlink", "EIO", n, true))
        .collect();
    faults.extend([2, 4, 6, 9].map(|n| Fault::new("getdents64", "EIO", n, true)));
    let (mut by_remove, mut by_add) = (0, 0);
    let mut earlier: Vec<String> = Vec::new();
    for (i, fault) in faults.iter().enumerate() {
        let card = format!("r{i}");
        let path = repo.add_card(&card);
        let out = faulted_remove(repo, fault, &card);
        let what = format!("remove {card} with {fault} (exit {})", out.code);
        let was_half = half_removed(repo, &path);
        if was_half {
            // Recognised: the claim names it, and doctor and list say so.
            let findings = doctor_findings(repo);
            let fix = format!("git kardwt remove {card}");
            assert!(
                findings
                    .iter()
                    .any(|(c, _, f)| c.starts_with("half-removed") && *f == fix),
                "{what}: doctor does not name {fix}: {findings:?}\n{out}"
            );
            let row = repo
                .list_json()
                .into_iter()
                .find(|r| r["card"] == card.as_str());
            assert_eq!(
                row.as_ref().map(|r| r["state"].clone()),
                Some("half-removed".into()),
                "{what}: list"
            );
            if i % 2 == 0 {
                by_remove += 1;
                // Doctor's fix clears it, and the card is removed as asked: the branch kept.
                follow_doctor(repo, &what);
                assert!(!path.exists(), "{what}: remove left {}", path.display());
                assert!(repo.branch_exists(&format!("card/{card}")), "{what}");
                assert!(
                    !repo.common_dir().join("kardwt/claims").join(&card).exists(),
                    "{what}: the claim stayed"
                );
            }
            // Otherwise the next add clears it by itself.
            by_add += usize::from(i % 2 == 1);
        } else {
            // Removed, or refused with the tree intact: doctor's advice, if any, works.
            follow_doctor(repo, &what);
        }
        // The next add makes the tree add makes, whatever the fault left.
        repo.kardwt_ok(&repo.base, &["add", &card]);
        assert_complete(repo, &card, &what);
        let cleared = repo.events(Some(&card)).iter().any(|e| {
            e["event"] == "removed"
                && e["outcome"]
                    .as_str()
                    .is_some_and(|o| o.starts_with("half removed"))
        });
        assert_eq!(
            cleared, was_half,
            "{what}: the half-removed tree was cleared by kardwt"
        );
        s.assert_untouched(&what);
        for other in &earlier {
            assert_complete(repo, other, &format!("{what}: the earlier card {other}"));
        }
        earlier.push(card);
    }
    assert!(
        by_remove >= 2 && by_add >= 2,
        "of {} faults, {by_remove} left a half-removed tree that remove cleared and {by_add} one \
         that add cleared",
        faults.len()
    );
}

/// Card `card`'s tree, half removed by an unlink failing inside `git worktree remove` (the
/// fifth file git deletes of twenty).
#[track_caller]
fn half_remove(repo: &TestRepo, card: &str) -> PathBuf {
    let path = repo.add_card(card);
    let out = faulted_remove(repo, &Fault::new("unlink", "EIO", 5, true), card);
    assert!(
        half_removed(repo, &path),
        "the fault did not leave a half-removed tree:\n{out}"
    );
    path
}

#[test]
fn a_half_removed_tree_with_files_changed_since_is_kept_until_remove_force() {
    let s = scene();
    let repo = &s.repo;
    let path = half_remove(repo, "h1");
    // A second later, someone writes into what is left: new work, perhaps.
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(path.join("notes.txt"), "mine\n").unwrap();
    let before = snapshot(&path);
    let add = repo.kardwt(&repo.base, &["add", "h1"]);
    add.expect_code(3);
    let remove = repo.kardwt(&repo.base, &["remove", "h1"]);
    remove.expect_code(3);
    crate::support::pinned(repo).bind(|| {
        insta::assert_snapshot!(
            "add_half_removed_with_new_files",
            format!("exit {}\n{}", add.code, add.stderr)
        )
    });
    crate::support::pinned(repo).bind(|| {
        insta::assert_snapshot!(
            "remove_half_removed_with_new_files",
            format!("exit {}\n{}", remove.code, remove.stderr)
        )
    });
    assert_eq!(snapshot(&path), before, "a refusal deleted something");
    let findings = doctor_findings(repo);
    assert!(
        findings
            .iter()
            .any(|(c, d, f)| c.starts_with("half-removed")
                && d.contains("notes.txt")
                && f == "git kardwt remove --force h1"),
        "{findings:?}"
    );
    // The forced removal the refusals name clears it; the next add makes the tree again.
    repo.kardwt_ok(&repo.base, &["remove", "--force", "h1"]);
    assert!(!path.exists());
    repo.kardwt_ok(&repo.base, &["add", "h1"]);
    assert_complete(repo, "h1", "after remove --force and add");
    s.assert_untouched("h1");
}

/// A directory moved into a half-removed tree after the failure keeps its files' old times:
/// it is new all the same (its own time, and the time of the directory it landed in, say so),
/// and the tree is kept, with the directory whole, until `remove --force`.
#[test]
fn a_directory_moved_into_a_half_removed_tree_keeps_it() {
    let s = scene();
    let repo = &s.repo;
    // Work made before the removal fails, so its files' times are all older than the failure.
    let work = repo.tmp.join("my work");
    std::fs::create_dir_all(work.join("deep")).unwrap();
    std::fs::write(work.join("deep/draft.txt"), "mine\n").unwrap();
    let path = half_remove(repo, "h2");
    std::thread::sleep(Duration::from_millis(1100));
    let landed = path.join("src/my work");
    assert!(path.join("src").is_dir(), "the fault left no src/");
    std::fs::rename(&work, &landed).unwrap();
    let before = snapshot(&path);
    // Each names the directory and deletes nothing.
    let mut shown = String::new();
    for args in [&["remove", "h2"][..], &["add", "h2"]] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(3);
        shown.push_str(&crate::support::pinned_case(&args.join(" "), &out));
        assert_eq!(
            snapshot(&path),
            before,
            "a refusal deleted something:\n{out}"
        );
    }
    crate::support::pinned(repo)
        .bind(|| insta::assert_snapshot!("half_removed_with_a_directory_moved_in", shown));
    assert_eq!(
        std::fs::read_to_string(landed.join("deep/draft.txt")).unwrap(),
        "mine\n"
    );
    repo.kardwt_ok(&repo.base, &["remove", "--force", "h2"]);
    assert!(!path.exists());
    s.assert_untouched("h2");
}

#[test]
fn what_kardwt_did_not_create_is_never_taken_for_a_half_removed_tree() {
    let s = scene();
    let repo = &s.repo;
    let outside = repo.sibling("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), "keep\n").unwrap();
    let outside_before = snapshot(&outside);
    let refused_everywhere = |card: &str, path: &Path, what: &str| {
        let before = snapshot(path);
        for args in [
            &["add", card][..],
            &["remove", card],
            &["remove", "--force", card],
        ] {
            let out = repo.kardwt(&repo.base, args);
            assert_ne!(out.code, 0, "{what}: {args:?} succeeded:\n{out}");
        }
        assert_eq!(snapshot(path), before, "{what}: something was deleted");
        let findings = doctor_findings(repo);
        assert!(
            !findings
                .iter()
                .any(|(c, _, _)| c.starts_with("half-removed")),
            "{what}: doctor offers to clear it: {findings:?}"
        );
    };

    // No claim names it (the stranger's, and one whose claim was deleted).
    let gone = half_remove(repo, "n1");
    std::fs::remove_file(repo.common_dir().join("kardwt/claims/n1")).unwrap();
    refused_everywhere("n1", &gone, "no claim");

    // Its `.git` names another repository's admin dir, gone as well.
    let other = half_remove(repo, "n2");
    std::fs::write(
        other.join(".git"),
        format!(
            "gitdir: {}\n",
            repo.sibling("elsewhere/.git/worktrees/card-n2").display()
        ),
    )
    .unwrap();
    refused_everywhere("n2", &other, "another repository's worktree");

    // The claimed path is now a symlink to a directory elsewhere.
    let moved = half_remove(repo, "n3");
    let aside = repo.sibling("aside");
    std::fs::rename(&moved, &aside).unwrap();
    std::os::unix::fs::symlink(&aside, &moved).unwrap();
    let aside_before = snapshot(&aside);
    refused_everywhere("n3", &moved, "a symlink at the claimed path");
    assert_eq!(snapshot(&aside), aside_before, "followed the symlink");

    // A symlink put inside what is left (a second later: new) is deleted itself when forced,
    // never followed.
    let linked = half_remove(repo, "n4");
    std::thread::sleep(Duration::from_millis(1100));
    std::os::unix::fs::symlink(&outside, linked.join("out")).unwrap();
    let add = repo.kardwt(&repo.base, &["add", "n4"]);
    add.expect_code(3);
    repo.kardwt_ok(&repo.base, &["remove", "--force", "n4"]);
    assert!(!linked.exists());

    // git's own removal, not kardwt's, failed: kardwt did not see it fail, so it cannot tell
    // old files from new ones and clears it only when forced.
    let plain = repo.add_card("n5");
    let fault = Fault::new("unlink", "EIO", 5, false);
    let args = ["worktree", "remove", plain.to_str().unwrap()];
    repo.injected(&fault, "git", &repo.base, &args);
    assert!(half_removed(repo, &plain), "git's removal did not fail");
    let add = repo.kardwt(&repo.base, &["add", "n5"]);
    add.expect_code(3);
    assert!(add.stderr.contains("git kardwt remove --force n5"), "{add}");
    assert!(plain.join(".git").exists() || plain.read_dir().is_ok());
    let findings = doctor_findings(repo);
    assert!(
        findings
            .iter()
            .any(|(c, _, f)| c.starts_with("half-removed") && f == "git kardwt remove --force n5"),
        "{findings:?}"
    );
    repo.kardwt_ok(&repo.base, &["remove", "--force", "n5"]);
    repo.kardwt_ok(&repo.base, &["add", "n5"]);
    assert_complete(repo, "n5", "after git's own removal failed");

    assert_eq!(snapshot(&outside), outside_before, "outside changed");
    s.assert_untouched("never taken");
}

/// `git kardwt add <card>` (the binary alone) with `fault` injected, then whatever it left
/// running allowed to end.
fn killed_add(repo: &TestRepo, fault: &Fault, card: &str) {
    repo.kardwt_injected(fault, &repo.base, &["add", card]);
    settle(repo);
}

/// How many calls of `syscall` one `add` makes in kardwt's own process (a real add of `card`).
fn calls_of_add(repo: &TestRepo, card: &str, syscall: &str) -> u32 {
    let (out, counts) = repo.syscall_counts(BIN, &repo.base, &["add", card], &[syscall], false);
    out.expect_code(0);
    counts.get(syscall).copied().unwrap_or(0)
}

#[test]
fn an_intent_left_by_a_killed_add_is_flagged_and_the_next_add_repairs_it() {
    let s = scene();
    let repo = &s.repo;
    // Once the repository is migrated (a first add), the claim is written, synced, renamed
    // into place and its directory synced at add's first fsyncs.
    let fsyncs = calls_of_add(repo, "warm", "fsync");
    assert!(fsyncs >= 4, "add syncs {fsyncs} times");
    let mut intents = 0;
    for n in 1..=4 {
        let (card, fault) = (format!("i{n}"), Fault::new("fsync", "KILL", n, false));
        killed_add(repo, &fault, &card);
        let what = format!("add {card} killed at {fault}");
        let claim = repo.common_dir().join("kardwt/claims").join(&card);
        let intent =
            std::fs::read_to_string(&claim).is_ok_and(|c| c.contains("state = \"intent\""));
        if !intent || repo.card_path(&card).exists() {
            continue;
        }
        intents += 1;
        // While an add of the card runs (it holds the card's lock), the intent is its own.
        let lock = repo.common_dir().join(format!("kardwt/cards/{card}.lock"));
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .unwrap();
        let mut held = fd_lock::RwLock::new(file);
        let guard = held.write().unwrap();
        assert!(
            !doctor_findings(repo).iter().any(|(c, _, _)| c == "intent"),
            "{what}: a running add's intent is flagged"
        );
        drop(guard);
        let findings = doctor_findings(repo);
        let fix = format!("git kardwt add {card}");
        assert!(
            findings
                .iter()
                .any(|(c, d, f)| c == "intent" && d.contains("interrupted") && *f == fix),
            "{what}: doctor does not flag the intent: {findings:?}"
        );
        let row = repo
            .list_json()
            .into_iter()
            .find(|r| r["card"] == card.as_str());
        assert_eq!(
            row.map(|r| r["state"].clone()),
            Some("interrupted".into()),
            "{what}: list"
        );
        follow_doctor(repo, &what);
        assert_complete(repo, &card, &what);
    }
    assert!(intents >= 1, "no kill point left an intent alone");
    s.assert_untouched("intents");
}

#[test]
fn temporary_files_of_a_killed_add_are_gone_after_the_next_add() {
    let s = scene();
    let repo = &s.repo;
    let renames = calls_of_add(repo, "warm", "renameat");
    assert!(renames >= 4, "add renames {renames} times");
    // SIGKILL on each rename of an atomic write (the temporary written, not yet in place), on
    // the create-new rename of the claim, and inside the copy (-f: the copier's thread).
    let mut faults: Vec<Fault> = (1..=renames)
        .map(|n| Fault::new("renameat", "KILL", n, false))
        .collect();
    faults.push(Fault::new("renameat2", "KILL", 1, false));
    faults.push(Fault::new("copy_file_range", "KILL", 1, true));
    let mut left_by_kill = 0;
    for (i, fault) in faults.iter().enumerate() {
        let card = format!("t{i}");
        killed_add(repo, fault, &card);
        let what = format!("add {card} killed at {fault}");
        if !temporaries(repo).is_empty() {
            left_by_kill += 1;
        }
        // The next add repairs by itself, or refuses naming one command that works.
        let out = repo.kardwt(&repo.base, &["add", &card]);
        if out.code != 0 {
            let named = out
                .stderr
                .lines()
                .filter(|l| l.starts_with("hint:"))
                .find_map(|l| l.find("git kardwt ").map(|i| l[i..].to_owned()));
            let named =
                named.unwrap_or_else(|| panic!("{what}: the next add names no command:\n{out}"));
            let fixed = sh(repo, &named);
            assert_eq!(
                fixed.code, 0,
                "{what}: the command add names failed:\n{out}\n{fixed}"
            );
        }
        assert_complete(repo, &card, &what);
    }
    assert!(
        left_by_kill >= 3,
        "only {left_by_kill} kills left a temporary file"
    );
    s.assert_untouched("temporaries");
}

#[test]
fn after_a_kill_anywhere_in_add_doctors_fixes_work_and_make_the_tree_add_makes() {
    let s = scene();
    let repo = &s.repo;
    let mut faults = Vec::new();
    for syscall in ["fsync", "renameat", "wait4"] {
        let n = calls_of_add(repo, &format!("warm-{syscall}"), syscall);
        assert!(n > 0, "add makes no {syscall} call");
        faults.extend((1..=n).map(|when| Fault::new(syscall, "KILL", when, false)));
    }
    for (i, fault) in faults.iter().enumerate() {
        let card = format!("d{i}");
        killed_add(repo, fault, &card);
        let what = format!("add {card} killed at {fault}");
        let ran = follow_doctor(repo, &what);
        // Doctor's fixes leave the card either without a tree (the next add makes it) or with
        // the tree add makes.
        if !repo.card_path(&card).exists() {
            repo.kardwt_ok(&repo.base, &["add", &card]);
        }
        assert_complete(repo, &card, &format!("{what}, then {ran:?}"));
        assert!(doctor_findings(repo).is_empty(), "{what}");
    }
    s.assert_untouched("kills");
}

/// A directory moved into a half-removed tree within the very second its removal failed is
/// new work all the same: change times are compared to the nanosecond, and one not provably
/// before the failure counts as after it. First with the failure marked at the start of a
/// second (as a mark to the second reads) and the directory moved in within that second; then
/// with the mark kardwt writes itself and a directory moved in at once.
#[test]
fn a_directory_moved_in_within_the_second_of_the_failure_keeps_the_tree() {
    let s = scene();
    let repo = &s.repo;
    let work = |name: &str| {
        let work = repo.tmp.join(name);
        std::fs::create_dir_all(work.join("deep")).unwrap();
        std::fs::write(work.join("deep/draft.txt"), "mine\n").unwrap();
        work
    };
    let secs = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    let (first, second) = (work("my work"), work("more work"));
    let path = half_remove(repo, "h3");
    // A fresh second, most of it ahead: the failure is marked at its start, and the directory
    // lands in it (50 ms in, past the tick by which file systems' clock may lag).
    let failed_at = secs().as_secs();
    while secs().as_secs() == failed_at || !(50..300).contains(&secs().subsec_millis()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let second_of_move = secs().as_secs();
    let claim_file = repo.common_dir().join("kardwt/claims/h3");
    let mut claim: toml::Table =
        toml::from_str(&std::fs::read_to_string(&claim_file).unwrap()).unwrap();
    let mark = std::time::UNIX_EPOCH + Duration::from_secs(second_of_move);
    claim.insert(
        "half_removed".into(),
        humantime::format_rfc3339_seconds(mark).to_string().into(),
    );
    std::fs::write(&claim_file, toml::to_string(&claim).unwrap()).unwrap();
    std::fs::rename(&first, path.join("src/my work")).unwrap();
    assert_eq!(secs().as_secs(), second_of_move, "the move left the second");
    let before = snapshot(&path);
    for args in [&["remove", "h3"][..], &["add", "h3"]] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(3);
        assert!(
            out.stderr.contains("my work") && out.stderr.contains("nothing was deleted"),
            "{out}"
        );
        assert_eq!(
            snapshot(&path),
            before,
            "a refusal deleted something:\n{out}"
        );
    }

    // kardwt's own mark, and a directory moved in the moment remove returned.
    let path = half_remove(repo, "h4");
    std::fs::rename(&second, path.join("src/more work")).unwrap();
    let before = snapshot(&path);
    let out = repo.kardwt(&repo.base, &["add", "h4"]);
    out.expect_code(3);
    assert!(out.stderr.contains("more work"), "{out}");
    assert_eq!(
        snapshot(&path),
        before,
        "a refusal deleted something:\n{out}"
    );
    repo.kardwt_ok(&repo.base, &["remove", "--force", "h4"]);
    repo.kardwt_ok(&repo.base, &["remove", "--force", "h3"]);
    s.assert_untouched("moved in within the second");
}

/// A directory elsewhere on the same file system bind-mounted into a half-removed tree (the
/// same device, so only the mount table tells): clearing it is refused even when forced,
/// naming the mount, and the bound directory keeps every byte; unmounted, it is cleared.
#[test]
fn a_half_removed_tree_with_a_bind_mount_inside_is_never_cleared() {
    let s = scene();
    let repo = &s.repo;
    let path = half_remove(repo, "m1");
    let outside = repo.sibling("bound");
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    std::fs::write(outside.join("deep/keep.txt"), "outside\n").unwrap();
    let outside_before = snapshot(&outside);
    let Some(bind) = crate::support::mount::Mounted::bind(&repo.tmp, &outside, &path.join("src"))
    else {
        return;
    };
    let before = snapshot(&path);
    for args in [&["remove", "--force", "m1"][..], &["add", "m1"]] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(3);
        assert!(
            out.stderr.contains("a file system is mounted in it (src)")
                && out.stderr.contains("nothing was deleted"),
            "{out}"
        );
        assert_eq!(
            snapshot(&path),
            before,
            "a refusal deleted something:\n{out}"
        );
    }
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "the bound directory changed"
    );
    drop(bind);
    repo.kardwt_ok(&repo.base, &["remove", "--force", "m1"]);
    assert!(!path.exists());
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "the bound directory changed"
    );
    s.assert_untouched("bind mount");
}
