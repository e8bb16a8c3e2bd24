//! Trust at the edges, through the real binary: no panics on numeric flags, a closed stdout
//! ends quietly, a damaged or unwritable event log is reported, `git --git-dir=X kardwt` acts
//! on X, and nothing a hook starts outlives it, even after leaving its process group.
use std::path::Path;
use std::time::Duration;

use crate::support::{pinned, pinned_case, sh_quote, wait_until, Rng, TestRepo};

/// One event line as `git kardwt log` reads it.
fn event(card: &str, n: usize) -> String {
    format!(
        r#"{{"time":"2026-01-01T00:00:{:02}Z","event":"created","card":"{card}","path":"/w/card-{card}","outcome":"ok","duration_ms":{n}}}"#,
        n % 60
    )
}

fn events_file(repo: &TestRepo) -> std::path::PathBuf {
    repo.common_dir().join("kardwt").join("events.jsonl")
}

#[test]
fn a_huge_grace_saturates_instead_of_panicking() {
    let repo = TestRepo::new();
    repo.add_card("1");
    let out = repo.kardwt(
        &repo.base,
        &["remove", "1", "--grace", "18446744073709551615"],
    );
    assert!(!out.stderr.contains("panicked"), "{out}");
    out.expect_code(0);
    assert!(!repo.card_path("1").exists(), "{out}");
}

/// Every numeric flag, fed edge values and random text: never a panic, always a contract code.
#[test]
#[ignore = "fuzzer: make test-slow"]
fn numeric_flags_never_panic() {
    let repo = TestRepo::new();
    let mut rng = Rng::new(0x5eed_f1a9);
    let mut values: Vec<String> = [
        "0",
        "1",
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999",
        "1e9",
        "",
        " ",
        "0x10",
        "+5",
        "9223372036854775808",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for _ in 0..6 {
        let len = 1 + rng.below(24);
        values.push(
            (0..len)
                .map(|_| char::from(b'0' + rng.below(10) as u8))
                .collect(),
        );
    }
    for (i, v) in values.iter().enumerate() {
        // A real worktree, so that a parsed grace reaches the release step.
        let card = format!("f{i}");
        repo.add_card(&card);
        for (args, codes) in [
            (vec!["remove", card.as_str(), "--grace", v], &[0, 2][..]),
            (vec!["gc", "--older-than", v], &[0, 2][..]),
            (vec!["gc", "--older-than", &format!("{v}d")], &[0, 2][..]),
        ] {
            let out = repo.kardwt(&repo.base, &args);
            assert!(!out.stderr.contains("panicked"), "{out}");
            assert!(codes.contains(&out.code), "{out}");
        }
    }
    // A huge --timeout on a real add is clamped, not an overflow.
    let out = repo.kardwt(
        &repo.base,
        &["add", "7", "--timeout", "18446744073709551615"],
    );
    assert!(!out.stderr.contains("panicked"), "{out}");
    out.expect_code(0);
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let repo = TestRepo::new();
    let file = events_file(&repo);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // Far more than a pipe holds, so kardwt is still writing when `head` goes away.
    let text: String = (0..5000).map(|n| event("9", n) + "\n").collect();
    std::fs::write(&file, text).unwrap();
    let out = repo
        .spawn(
            "bash",
            &repo.base,
            &[
                "-c",
                "git kardwt log | head -1; echo \"status=${PIPESTATUS[0]}\" >&2",
            ],
        )
        .wait(Duration::from_secs(60));
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
    assert!(out.stderr.contains("status=0"), "{out}");
    assert!(!out.stderr.contains("error"), "{out}");
    assert!(!out.stderr.contains("Broken pipe"), "{out}");
}

#[test]
fn a_damaged_log_line_is_skipped_with_a_warning_and_the_rest_is_shown() {
    let repo = TestRepo::new();
    let file = events_file(&repo);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut bytes = event("1", 1).into_bytes();
    bytes.extend_from_slice(b"\n{\"time\":\"\xff broken\n");
    bytes.extend_from_slice(event("2", 2).as_bytes());
    bytes.push(b'\n');
    std::fs::write(&file, bytes).unwrap();

    // Both good lines shown; one warning naming line 2.
    let out = repo.kardwt(&repo.base, &["log"]);
    out.expect_code(0);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("log_with_a_damaged_line", pinned_case("log", &out)));

    let json = repo.kardwt(&repo.base, &["log", "--json"]);
    json.expect_code(0);
    assert_eq!(json.json().as_array().unwrap().len(), 2, "{json}");
}

#[test]
fn a_log_that_cannot_be_written_is_a_warning_not_silence() {
    let repo = TestRepo::new();
    let file = events_file(&repo);
    // A directory where the log file should be: every append fails.
    std::fs::create_dir_all(&file).unwrap();
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(0);
    assert!(repo.card_path("1").is_dir(), "{out}");
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("add_with_an_unwritable_log", pinned_case("add 1", &out)));
}

/// `git --git-dir=X kardwt add` acts on X even when run from inside another repository.
#[test]
fn git_dir_names_the_repository_acted_on() {
    let repo = TestRepo::new();
    let other = repo.tmp.join("other");
    repo.git(&repo.tmp, &["init", "--quiet", "-b", "main", "other"]);
    repo.git(
        &other,
        &["commit", "--quiet", "--allow-empty", "-m", "other"],
    );
    let git_dir = format!("--git-dir={}", repo.common_dir().display());

    let out = repo
        .spawn("git", &other, &[&git_dir, "kardwt", "add", "1"])
        .wait(Duration::from_secs(60));
    out.expect_code(0);
    assert_eq!(
        out.stdout.trim(),
        repo.card_path("1").display().to_string(),
        "{out}"
    );
    assert!(repo.is_registered(&repo.card_path("1")));
    assert!(!repo.tmp.join("other.worktrees").exists(), "{out}");
    assert_eq!(
        repo.git(&other, &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1
    );

    // GIT_DIR in the environment is the same thing.
    let mut cmd = repo.command("git", &other);
    cmd.env("GIT_DIR", repo.common_dir())
        .args(["kardwt", "verify", "1"]);
    let status = cmd.output().unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// Wait until `pidfile` names a pid, and return it.
fn read_pid(pidfile: &Path) -> i32 {
    assert!(
        wait_until(Duration::from_secs(20), || std::fs::read_to_string(pidfile)
            .is_ok_and(|t| t.trim().parse::<i32>().is_ok())),
        "the hook never wrote {}",
        pidfile.display()
    );
    std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A process that is gone or a zombie (exited, only its reaping missing).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z')),
    }
}

/// Descendants that leave the hook's process group (`setsid`, and a double fork under
/// `setsid`) are found through the subreaper and killed when the hook ends.
#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "without the subreaper (the portable build, macOS) only the process group is killed"
)]
fn a_hook_descendant_that_left_the_process_group_does_not_outlive_it() {
    let repo = TestRepo::new();
    let single = repo.tmp.join("setsid.pid");
    let double = repo.tmp.join("double.pid");
    // The escapees: each writes its own pid, then sleeps far past the test.
    let sleeper = |pidfile: &Path| format!("echo $$ > {}\nexec sleep 300\n", sh_quote(pidfile));
    let one = repo.tmp.join("one.sh");
    std::fs::write(&one, sleeper(&single)).unwrap();
    let two = repo.tmp.join("two.sh");
    std::fs::write(&two, sleeper(&double)).unwrap();
    let fork_twice = repo.tmp.join("fork-twice.sh");
    std::fs::write(&fork_twice, format!("sh {} &\nexit 0\n", sh_quote(&two))).unwrap();
    let script = repo.write_prepare(&format!(
        "setsid sh {} </dev/null >/dev/null 2>&1 &\n\
         setsid sh {} </dev/null >/dev/null 2>&1 &\n\
         sleep 1\nexit 0",
        sh_quote(&one),
        sh_quote(&fork_twice)
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    repo.kardwt_ok(&repo.base, &["add", "1"]);
    for pidfile in [&single, &double] {
        let pid = read_pid(pidfile);
        let dead = wait_until(Duration::from_secs(10), || gone(pid));
        if !dead {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        assert!(
            dead,
            "pid {pid} from {} outlived the hook",
            pidfile.display()
        );
    }
}
