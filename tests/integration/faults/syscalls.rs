//! No panic, no hang on a failing system call: with strace failing the Nth call of
//! one system call (`-e inject`, in kardwt alone and with `-f` in every process it starts), for
//! every N the command makes, kardwt ends with an exit code of the contract's table (never
//! 101, never "panicked") well before the action deadline (one hour by default, so a lost
//! wakeup shows as a trial that runs past [`LIMIT`]); after a failed `add` the next plain `add`
//! gives a complete, ready tree. Covered: a thread or process the system refuses (clone3
//! EAGAIN), a failing ioctl, every write failing in turn (the self-wakeup of the old child
//! waits among them), the calls of the child-process watch itself (poll, pidfd, wait), stderr
//! that cannot be written, and stdout that cannot (lost results are an error naming stdout).
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cleanup::cleanup_rules;
use crate::support::procs::{reap, Reaper};
use crate::support::strace::{strace, Fault};
use crate::support::{drain, Output, TestRepo, BIN};

/// A trial that runs longer than this hangs: the action deadline is one hour.
const LIMIT: Duration = Duration::from_secs(30);

/// The exit codes of the contract (128 + the signal for SIGHUP, SIGINT and SIGTERM).
const TABLE: [i32; 9] = [0, 1, 2, 3, 4, 5, 129, 130, 143];

/// The card every trial adds.
const CARD: &str = "7";

/// A repository whose `add` runs every kind of child and thread kardwt has: git (with and
/// without input), the prepare hook (printing on stdout and stderr), the `.env` link, a copied
/// directory (the copy's worker threads); its cleanup hook runs on `remove` and `release`.
fn scene() -> (TestRepo, Reaper) {
    let repo = TestRepo::new();
    let reaper = Reaper(repo.tmp.clone());
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\ncache/\n"),
            (".worktreeinclude", "cache/\n"),
        ],
        "ignore rules and what to copy",
    );
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::create_dir_all(repo.base.join("cache/deep")).unwrap();
    for i in 0..12 {
        std::fs::write(
            repo.base.join(format!("cache/deep/f{i}")),
            "x".repeat(i * 100),
        )
        .unwrap();
    }
    let script = repo.write_prepare("echo prepared\necho 'to stderr' >&2");
    repo.write_rules(&format!(
        "{}{}",
        repo.rules_sharing(&script),
        cleanup_rules(&repo, "")
    ));
    (repo, reaper)
}

/// [`scene`] with card [`CARD`] added (for `remove`, `release`, `list`).
fn scene_with_card() -> (TestRepo, Reaper) {
    let (repo, reaper) = scene();
    repo.kardwt_ok(&repo.base, &["add", CARD]);
    (repo, reaper)
}

/// How one run ended.
struct Trial {
    out: Output,
    took: Duration,
    /// Still running after [`LIMIT`]: killed with its whole process group.
    hung: bool,
}

/// Run `git-kardwt args…` in the base under strace with `fault`, as the leader of its own
/// process group, for at most [`LIMIT`].
fn injected(repo: &TestRepo, fault: &Fault, args: &[&str]) -> Trial {
    let mut all: Vec<String> = vec!["-qq".into(), "-o".into(), "/dev/null".into()];
    if fault.follow {
        all.push("-f".into());
    }
    all.extend(["-e".into(), fault.expression(), BIN.into()]);
    all.extend(args.iter().map(|a| a.to_string()));
    let mut cmd = repo.command(strace(), &repo.base);
    cmd.args(&all).stderr(Stdio::piped());
    bounded(
        repo,
        cmd,
        &format!("{fault}: git-kardwt {}", args.join(" ")),
    )
}

/// Run `cmd` (stdin null, stdout captured, stderr captured when the caller piped it) in a
/// process group of its own for at most [`LIMIT`]; a run past it is killed, group and all.
fn bounded(repo: &TestRepo, mut cmd: Command, what: &str) -> Trial {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start the trial");
    let out = drain(child.stdout.take().unwrap());
    let err = child.stderr.take().map(drain);
    let (status, hung) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (Some(status), false);
        }
        if started.elapsed() > LIMIT {
            let group = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            reap(&repo.tmp);
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    // A hung run's pipes may be held by what it left: its output is not waited for.
    let text = |h: std::thread::JoinHandle<Vec<u8>>| {
        if hung {
            return String::from("(not read: the run was killed)");
        }
        String::from_utf8_lossy(&h.join().unwrap()).into_owned()
    };
    use std::os::unix::process::ExitStatusExt;
    let code = status.map_or(-1, |s| s.code().unwrap_or(128 + s.signal().unwrap_or(0)));
    Trial {
        out: Output {
            code,
            stdout: text(out),
            stderr: err.map_or_else(String::new, text),
            args: vec![what.to_owned()],
        },
        took,
        hung,
    }
}

/// What is wrong with a trial's ending, if anything: a hang, a panic, a code off the table.
fn broken(t: &Trial) -> Option<String> {
    let why = if t.hung {
        format!("still running after {LIMIT:?} (killed)")
    } else if t.out.code == 101
        || t.out.stderr.contains("panicked")
        || t.out.stderr.contains("internal error")
    {
        "panicked".to_owned()
    } else if !TABLE.contains(&t.out.code) {
        format!("exit {} is not in the table", t.out.code)
    } else {
        return None;
    };
    Some(format!(
        "{why} after {:.1}s:\n{}",
        t.took.as_secs_f64(),
        t.out
    ))
}

/// The `add` invariant after one trial: it ended with a ready, verified tree, or the next plain
/// `add` gives one. A refused spawn is not called a missing git.
fn add_repaired(repo: &TestRepo, fault: &Fault, t: &Trial) -> Option<String> {
    if fault.error == "EAGAIN" && t.out.stderr.contains("installed") {
        return Some(format!(
            "a refused spawn (EAGAIN) reads as a missing program:\n{}",
            t.out
        ));
    }
    let path = repo.card_path(CARD);
    let path = path.to_str().unwrap();
    if t.out.code != 0 {
        let again = repo.kardwt(&repo.base, &["add", CARD, "--timeout", "60"]);
        if again.code != 0 {
            return Some(format!(
                "the next add failed after:\n{}\n--- the next add ---\n{again}",
                t.out
            ));
        }
    }
    let verified = repo.kardwt(&repo.base, &["verify", "--path", path]);
    (verified.code != 0).then(|| format!("not ready after:\n{}\n--- verify ---\n{verified}", t.out))
}

/// How many calls of `syscall` the busiest process makes while `args` runs on a fresh
/// `setup()` (a trial per call, plus one past the last).
fn calls(setup: fn() -> (TestRepo, Reaper), args: &[&str], syscall: &str, follow: bool) -> u32 {
    let (repo, _reaper) = setup();
    let (out, counts) = repo.syscall_counts(BIN, &repo.base, args, &[syscall], follow);
    out.expect_code(0);
    counts.get(syscall).copied().unwrap_or(0)
}

/// Run `args` once for each `when` in `1..=calls + 1` (at least up to `least`) with `syscall`
/// failing with `error`, each on a fresh `setup()`; `check` adds what else must hold. Fails
/// with every violation found.
fn sweep(
    setup: fn() -> (TestRepo, Reaper),
    args: &[&str],
    syscall: &str,
    error: &str,
    follow: bool,
    least: u32,
    check: fn(&TestRepo, &Fault, &Trial) -> Option<String>,
) {
    let last = (calls(setup, args, syscall, follow) + 1).max(least);
    let mut violations = Vec::new();
    for when in 1..=last {
        let fault = Fault::new(syscall, error, when, follow);
        let (repo, _reaper) = setup();
        let t = injected(&repo, &fault, args);
        if let Some(why) = broken(&t).or_else(|| check(&repo, &fault, &t)) {
            violations.push(format!("[{fault}] {why}"));
        }
    }
    assert!(
        violations.is_empty(),
        "{} of {last} trials of `git-kardwt {}` broke a promise:\n\n{}",
        violations.len(),
        args.join(" "),
        violations.join("\n\n")
    );
}

fn nothing_more(_: &TestRepo, _: &Fault, _: &Trial) -> Option<String> {
    None
}

#[test]
fn add_ends_with_an_error_when_a_thread_or_process_cannot_be_spawned_and_the_next_add_repairs() {
    for follow in [false, true] {
        sweep(
            scene,
            &["add", CARD],
            "clone3",
            "EAGAIN",
            follow,
            2,
            add_repaired,
        );
    }
}

/// After a failed `args`, the same command run again succeeds.
fn same_again(repo: &TestRepo, t: &Trial, args: &[&str]) -> Option<String> {
    if t.out.code == 0 {
        return None;
    }
    let next = repo.kardwt(&repo.base, args);
    (next.code != 0).then(|| {
        format!(
            "failed, and so did the same command again:\n{}\n--- again ---\n{next}",
            t.out
        )
    })
}

fn remove_again(repo: &TestRepo, _: &Fault, t: &Trial) -> Option<String> {
    same_again(repo, t, &["remove", CARD])
}

fn release_again(repo: &TestRepo, _: &Fault, t: &Trial) -> Option<String> {
    same_again(repo, t, &["release", CARD])
}

#[test]
fn remove_release_and_list_end_with_an_error_when_a_spawn_is_refused() {
    for follow in [false, true] {
        sweep(
            scene_with_card,
            &["remove", CARD],
            "clone3",
            "EAGAIN",
            follow,
            2,
            remove_again,
        );
        sweep(
            scene_with_card,
            &["release", CARD],
            "clone3",
            "EAGAIN",
            follow,
            2,
            release_again,
        );
        sweep(
            scene_with_card,
            &["list"],
            "clone3",
            "EAGAIN",
            follow,
            2,
            nothing_more,
        );
    }
}

#[test]
fn a_failing_ioctl_is_an_error_not_a_panic() {
    for follow in [false, true] {
        sweep(
            scene,
            &["add", CARD],
            "ioctl",
            "EINVAL",
            follow,
            4,
            add_repaired,
        );
    }
}

#[test]
fn no_failing_call_of_the_wait_for_a_child_panics_or_waits_for_the_deadline() {
    // Among kardwt's writes was the one that woke its wait for a child (a signal handler's
    // write to a pipe): lost, the wait lasted until the action deadline.
    sweep(
        scene,
        &["add", CARD],
        "write",
        "EIO",
        false,
        2,
        nothing_more,
    );
    // What replaced that wakeup: poll(2) over the pipes and a pidfd, and waitid for the exit.
    for (syscall, error) in [
        ("ppoll", "ENOMEM"),
        ("pidfd_open", "EMFILE"),
        ("wait4", "EINTR"),
    ] {
        sweep(
            scene,
            &["add", CARD],
            syscall,
            error,
            false,
            2,
            nothing_more,
        );
    }
}

/// Where a run's stderr goes when it cannot be written.
enum Stderr {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reader is gone: every write fails with EPIPE.
    Closed,
}

/// `git-kardwt args…` in the base, with `env`, its stderr unwritable.
fn unwritable_stderr(
    repo: &TestRepo,
    stderr: &Stderr,
    args: &[&str],
    env: &[(&str, &str)],
) -> Trial {
    let mut cmd = repo.command(BIN, &repo.base);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    match stderr {
        Stderr::Full => cmd.stderr(File::options().write(true).open("/dev/full").unwrap()),
        Stderr::Closed => {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            cmd.stderr(writer)
        }
    };
    bounded(
        repo,
        cmd,
        &format!("git-kardwt {} (stderr unwritable)", args.join(" ")),
    )
}

#[test]
fn a_failing_write_to_stderr_is_not_a_panic() {
    for stderr in [Stderr::Full, Stderr::Closed] {
        let (repo, _reaper) = scene();
        // Each with what it writes on stderr: a usage error, every git call traced, the
        // prepare hook's output streamed, a refusal, a hook that fails.
        let t = unwritable_stderr(&repo, &stderr, &["add", "not a card"], &[]);
        assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
        t.out.expect_code(2);
        let t = unwritable_stderr(&repo, &stderr, &["list"], &[("KARDWT_TRACE", "1")]);
        assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
        t.out.expect_code(0);
        let t = unwritable_stderr(&repo, &stderr, &["add", CARD], &[("KARDWT_TRACE", "1")]);
        assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
        t.out.expect_code(0);
        assert_eq!(
            t.out.stdout.trim_end(),
            repo.card_path(CARD).to_str().unwrap()
        );
        repo.kardwt_ok(&repo.base, &["verify", CARD]);
        let t = unwritable_stderr(&repo, &stderr, &["verify", "nope"], &[]);
        assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
        assert_ne!(t.out.code, 0, "{}", t.out);
        let (flag, script) = repo.write_failing_prepare("fails", "prepare broke", 3);
        repo.write_rules(&repo.rules_for(&script, false));
        let t = unwritable_stderr(&repo, &stderr, &["add", "8"], &[]);
        assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
        t.out.expect_code(4);
        std::fs::remove_file(flag).unwrap();
    }
}

#[test]
fn results_that_cannot_be_written_to_stdout_are_an_error_that_names_stdout() {
    let (repo, _reaper) = scene();
    let full = || File::options().write(true).open("/dev/full").unwrap();
    let lost = |args: &[&str]| {
        let out = repo
            .command(BIN, &repo.base)
            .args(args)
            .stdout(full())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("could not write the results to stdout"),
            "{args:?}: {stderr}"
        );
        stderr
    };
    // What `add` did stands: the tree is ready, and the message says to look.
    let stderr = lost(&["add", CARD]);
    assert!(stderr.contains("git kardwt list"), "{stderr}");
    repo.kardwt_ok(&repo.base, &["verify", CARD]);
    lost(&["list", "--json"]);
    // clap's own output too: the version asked for and lost is not a success.
    let out = repo
        .command(BIN, &repo.base)
        .arg("--version")
        .stdout(full())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stdout"), "{stderr}");
    // A reader that went away got what it wanted: no error.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = repo
        .command(BIN, &repo.base)
        .args(["list", "--json"])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "the portable build starts ps first (the signals ignored at start), so the second \
              clone3 is not git's"
)]
fn a_missing_git_and_a_refused_spawn_are_told_apart() {
    let (repo, _reaper) = scene();
    let t = injected(
        &repo,
        &Fault::new("clone3", "EAGAIN", 2, false),
        &["add", CARD],
    );
    assert!(broken(&t).is_none(), "{}", broken(&t).unwrap());
    assert!(t.out.stderr.contains("could not start git"), "{}", t.out);
    assert!(!t.out.stderr.contains("installed"), "{}", t.out);
    assert!(t.out.stderr.contains("limit"), "{}", t.out);
    let out = repo
        .command(BIN, &repo.base)
        .args(["add", CARD])
        .env("PATH", Path::new("/nonexistent"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not start git"), "{stderr}");
    assert!(stderr.contains("installed"), "{stderr}");
}
