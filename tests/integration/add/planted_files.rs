//! kardwt's own files under `<common dir>/kardwt/`: a symlink or FIFO planted as a
//! hook log, a claim, the event log, a card's lock or one of kardwt's directories is never
//! followed, written through or blocked on. Every command here is capped (a hang fails the
//! test instead of stalling it), and a snapshot of a directory outside the repository proves
//! nothing there changed.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{pinned, pinned_case, snapshot, Output, TestRepo};

/// Far above the few seconds these commands take; far below the harness's own cap, so that a
/// hang on a FIFO fails quickly.
const HANG: Duration = Duration::from_secs(30);

/// `git kardwt args…` in the base, killed (and the test failed) if it runs past [`HANG`].
#[track_caller]
fn kardwt(repo: &TestRepo, args: &[&str]) -> Output {
    let mut all = vec!["kardwt"];
    all.extend_from_slice(args);
    repo.spawn("git", &repo.base, &all).wait(HANG)
}

/// A repository with the standard prepare rules and kardwt's directory `kardwt/<sub>` made;
/// returns it with an empty directory outside it (holding `keep`, `secret`).
fn setup(sub: &str) -> (TestRepo, PathBuf, PathBuf) {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let dir = repo.common_dir().join("kardwt").join(sub);
    std::fs::create_dir_all(&dir).unwrap();
    let outside = repo.tmp.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), "secret\n").unwrap();
    (repo, dir, outside)
}

#[track_caller]
fn mkfifo(repo: &TestRepo, path: &Path) {
    let made = repo
        .command("mkfifo", &repo.tmp)
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn is_file(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_file())
}

/// `add --quiet` sends the prepare hook's output to `logs/<card>.log`: a symlink planted there
/// (dangling, or to an outside file) is replaced by a real log with a warning; the outside
/// file is neither created nor written.
#[test]
fn a_symlink_planted_as_a_hook_log_is_never_written_through() {
    let (repo, logs, outside) = setup("logs");
    std::os::unix::fs::symlink(outside.join("made"), logs.join("7.log")).unwrap();
    std::os::unix::fs::symlink(outside.join("keep"), logs.join("8.log")).unwrap();
    let before = snapshot(&outside);
    let mut shown = String::new();
    for card in ["7", "8"] {
        let out = kardwt(&repo, &["add", "--quiet", card]);
        assert_eq!(
            snapshot(&outside),
            before,
            "something outside changed:\n{out}"
        );
        out.expect_code(0);
        shown.push_str(&pinned_case(card, &out));
        let log = logs.join(format!("{card}.log"));
        assert!(is_file(&log), "{}", log.display());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("# kardwt: "), "{text}");
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("planted_symlink_as_hook_log", shown));
}

/// A FIFO planted as a hook log: `add --quiet` neither waits on it nor moves it to `.log.1`;
/// it is removed with a warning and a real log is written.
#[test]
fn a_fifo_planted_as_a_hook_log_is_replaced_with_a_warning() {
    let (repo, logs, outside) = setup("logs");
    let log = logs.join("7.log");
    mkfifo(&repo, &log);
    let before = snapshot(&outside);
    let out = kardwt(&repo, &["add", "--quiet", "7"]);
    out.expect_code(0);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "planted_fifo_as_hook_log",
            pinned_case("add --quiet 7", &out)
        )
    });
    assert!(is_file(&log));
    assert!(!logs.join("7.log.1").exists(), "the FIFO was not kept");
    assert_eq!(snapshot(&outside), before);
}

/// A FIFO planted as a card's claim is never read (it would block): `add` warns that the claim
/// could not be read, replaces it and creates the card.
#[test]
fn a_fifo_planted_as_a_claim_blocks_nothing() {
    let (repo, claims, outside) = setup("claims");
    let claim = claims.join("7");
    mkfifo(&repo, &claim);
    let before = snapshot(&outside);
    let out = kardwt(&repo, &["add", "7"]);
    out.expect_code(0);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("planted_fifo_as_claim", pinned_case("add 7", &out)));
    assert!(is_file(&claim));
    assert!(std::fs::read_to_string(&claim)
        .unwrap()
        .contains("state = \"complete\""));
    // list and doctor read claims too: neither blocks.
    mkfifo(&repo, &claims.join("8"));
    kardwt(&repo, &["list"]).expect_code(0);
    let doctor = kardwt(&repo, &["doctor"]);
    assert!(doctor.code == 0 || doctor.code == 1, "{doctor}");
    assert_eq!(snapshot(&outside), before);
}

/// A FIFO planted as the event log: every append says on stderr that the event could not be
/// written instead of waiting for a reader; `log` says it cannot read it.
#[test]
fn a_fifo_planted_as_the_event_log_blocks_nothing() {
    let (repo, kardwt_dir, outside) = setup("");
    let events = kardwt_dir.join("events.jsonl");
    mkfifo(&repo, &events);
    let before = snapshot(&outside);
    let out = kardwt(&repo, &["add", "7"]);
    out.expect_code(0);
    let log = kardwt(&repo, &["log"]);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "planted_fifo_as_event_log",
            pinned_case("add 7", &out) + &pinned_case("log", &log)
        )
    });
    assert_eq!(snapshot(&outside), before);
}

/// A FIFO or symlink planted as a card's lock file is refused (exit 3) naming it, with the
/// command that repairs it; nothing is created and nothing outside is written.
#[test]
fn a_fifo_or_symlink_planted_as_a_card_lock_is_refused() {
    let (repo, cards, outside) = setup("cards");
    mkfifo(&repo, &cards.join("7.lock"));
    std::os::unix::fs::symlink(outside.join("made"), cards.join("8.lock")).unwrap();
    let before = snapshot(&outside);
    let mut shown = String::new();
    for (card, what) in [("7", "a FIFO"), ("8", "a symlink")] {
        let out = kardwt(&repo, &["add", card]);
        out.expect_code(3);
        shown.push_str(&pinned_case(what, &out));
        assert!(!repo.card_path(card).exists(), "{out}");
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("planted_card_locks", shown));
    assert_eq!(snapshot(&outside), before);
    // Removing it, as the hint says, repairs the card.
    std::fs::remove_file(cards.join("7.lock")).unwrap();
    kardwt(&repo, &["add", "7"]).expect_code(0);
}

/// A symlink planted as `kardwt/claims` (or as `kardwt/` itself) is refused, never followed:
/// no claim or lock lands where it points, and no worktree is created.
#[test]
fn a_symlink_planted_as_a_kardwt_directory_is_refused_not_followed() {
    let (repo, claims, outside) = setup("claims");
    std::fs::remove_dir(&claims).unwrap();
    std::os::unix::fs::symlink(&outside, &claims).unwrap();
    let before = snapshot(&outside);
    let claims_out = kardwt(&repo, &["add", "7"]);
    assert_ne!(claims_out.code, 0, "{claims_out}");
    let out = &claims_out;
    assert!(!repo.card_path("7").exists(), "{out}");
    assert_eq!(snapshot(&outside), before, "no claim written through it");

    let kardwt_dir = repo.common_dir().join("kardwt");
    std::fs::remove_dir_all(&kardwt_dir).unwrap();
    std::os::unix::fs::symlink(&outside, &kardwt_dir).unwrap();
    let out = kardwt(&repo, &["add", "8"]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "planted_kardwt_directories",
            pinned_case("kardwt/claims", &claims_out) + &pinned_case("kardwt/", &out)
        )
    });
    assert!(!repo.card_path("8").exists(), "{out}");
    assert_eq!(snapshot(&outside), before, "no lock written through it");
}
