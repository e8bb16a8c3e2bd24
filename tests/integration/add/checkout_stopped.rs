//! The checkout `add` writes itself stops part way on SIGINT, SIGTERM and the action deadline,
//! as git's own would: the new tree is removed, its branch kept, the exit code says why, and the
//! next `add` of the card makes it whole. Made slow with strace: every link after the first few
//! is written 50 ms late (git's fetch and `worktree add --no-checkout` make none), so the test
//! can tell a checkout stopped part way (few links made) from one run to its end.
use std::path::Path;
use std::time::Duration;

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use crate::support::strace::Slowed;
use crate::support::{wait_until, TestRepo, BIN};

/// How many links the committed tree holds.
const LINKS: usize = 1500;
/// Each link from the [`FAST`]th on is written this late: the whole checkout takes 75 s.
const DELAY_US: u32 = 50_000;
const FAST: u32 = 10;
/// The system calls a link is made with.
const LINK_CALLS: &[&str] = &["symlink", "symlinkat"];

/// A repository whose origin holds `links/` with [`LINKS`] symbolic links (nothing that makes
/// kardwt leave the checkout to git).
fn linked_repo() -> TestRepo {
    let repo = TestRepo::new();
    let dir = repo.scratch.join("links");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..LINKS {
        std::os::unix::fs::symlink(format!("target-{i}"), dir.join(format!("l{i:04}"))).unwrap();
    }
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "links"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo
}

/// Does kardwt check trees out itself here (it leaves them to git on one core)?
fn checks_out_itself() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        eprintln!("skipped: one core, where git checks every tree out");
    }
    cores >= 2
}

/// `git-kardwt add <card> extra…`, traced, with every link after the first few made late.
fn slow_add(repo: &TestRepo, card: &str, extra: &[&str]) -> Slowed {
    let mut args = vec!["add", card];
    args.extend_from_slice(extra);
    repo.spawn_slowed(
        LINK_CALLS,
        DELAY_US,
        FAST,
        &format!("links-{card}.strace"),
        (BIN, &repo.base, &args),
        &[("KARDWT_TRACE", "1")],
    )
}

/// How many entries `dir` holds (0 when it is missing).
fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// What every stopped checkout leaves: kardwt's own `worktree add --no-checkout` (it checked out
/// itself), far fewer links made (`made`) than the tree holds, the new tree gone with git's entry for
/// it, the branch kept; then a plain `add` makes the whole tree.
#[track_caller]
fn assert_stopped_part_way(repo: &TestRepo, card: &str, made: usize, out: &str) {
    let add = out
        .lines()
        .find(|l| l.contains(" worktree add "))
        .unwrap_or_else(|| panic!("no traced worktree add:\n{out}"));
    assert!(
        add.contains("--no-checkout"),
        "git checked the tree out, not kardwt:\n{out}"
    );
    assert!(
        made > 0 && made < LINKS / 2,
        "{made} of {LINKS} links were made: the checkout did not stop part way:\n{out}"
    );
    let tree = repo.card_path(card);
    assert!(!tree.exists(), "the half checked out tree was kept:\n{out}");
    let listed = repo.worktrees();
    assert!(!listed.iter().any(|(p, _, _)| *p == tree), "{listed:?}");
    assert!(repo.branch_exists(&format!("card/{card}")), "{out}");
    // The retry, unslowed, makes the whole tree.
    repo.kardwt_ok(&repo.base, &["add", card]);
    assert_eq!(entries(&tree.join("links")), LINKS);
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    let status = repo.git(&tree, &["status", "--porcelain"]);
    assert_eq!(status, "", "the retried tree differs from its commit");
}

#[test]
fn a_signal_stops_kardwts_own_checkout_part_way_and_the_tree_is_removed() {
    if !checks_out_itself() {
        return;
    }
    let repo = linked_repo();
    // To kardwt alone (a supervisor's kill), and to the whole group (a terminal's Ctrl-C,
    // which strace, logging to a file, does not die of).
    let rounds = [
        ("61", Signal::INT, false),
        ("62", Signal::TERM, false),
        ("63", Signal::INT, true),
    ];
    for (card, sig, group) in rounds {
        let slowed = slow_add(&repo, card, &[]);
        let kardwt = slowed.traced_pid(BIN);
        // Its first links are there: the checkout runs, and slowly from here on.
        let links = repo.card_path(card).join("links");
        let reached = wait_until(Duration::from_secs(60), || entries(&links) >= FAST as usize);
        if !reached {
            let _ = kill_process_group(
                Pid::from_raw(slowed.strace.pid() as i32).unwrap(),
                Signal::KILL,
            );
        }
        let sent = match group {
            false => kill_process(Pid::from_raw(kardwt as i32).unwrap(), sig),
            true => kill_process_group(Pid::from_raw(slowed.strace.pid() as i32).unwrap(), sig),
        };
        let (out, made) = slowed.wait(Duration::from_secs(300), LINK_CALLS);
        assert!(reached, "card {card}: the checkout never began:\n{out}");
        assert!(
            sent.is_ok(),
            "card {card}: kardwt (pid {kardwt}) had ended before the signal ({made} links):\n{out}"
        );
        let code = 128 + sig.as_raw();
        assert_eq!(out.code, code, "card {card}:\n{out}");
        assert!(out.stderr.contains("interrupted by SIG"), "{out}");
        assert_eq!(out.stdout, "", "an interrupted add printed a path:\n{out}");
        assert_stopped_part_way(&repo, card, made, &out.stderr);
    }
}

#[test]
fn the_action_deadline_stops_kardwts_own_checkout_part_way_and_exits_5() {
    if !checks_out_itself() {
        return;
    }
    let repo = linked_repo();
    let slowed = slow_add(&repo, "64", &["--timeout", "10"]);
    let (out, made) = slowed.wait(Duration::from_secs(300), LINK_CALLS);
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("deadline"), "{out}");
    assert!(
        out.stderr.contains("--timeout"),
        "no hint to raise it:\n{out}"
    );
    assert_eq!(out.stdout, "", "{out}");
    assert_stopped_part_way(&repo, "64", made, &out.stderr);
}
