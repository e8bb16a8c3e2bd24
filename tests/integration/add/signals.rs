//! Signals roll back: SIGINT, SIGTERM or SIGHUP sent to kardwt while a prepare
//! or cleanup hook runs ends the hook's process group and the descendants that left it, rolls
//! back as a failure would (a new tree removed with its branch kept; `failed` after a reuse or an
//! interrupted remove) and exits 130, 143 or 129; a second `add` of the card never prepares
//! while the first one's hook lives. Real binary, real processes: the hook writes its pid and
//! sleeps, the test signals kardwt's pid (or its process group, as a terminal does).
use std::path::Path;
use std::time::Duration;

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use crate::support::cleanup::cleanup_rules;
use crate::support::procs::{
    assert_no_lock_held, card_lock, has_open, read_pid, write_pid, Reaper,
};
use crate::support::{line, sh_quote, wait_until, Output, Running, TestRepo};

/// How long a phase may take to be reached, or kardwt to end after the signal.
const REACH: Duration = Duration::from_secs(60);

/// Whom the signal goes to.
#[derive(Clone, Copy, Debug)]
enum To {
    /// kardwt's pid alone (a supervisor's `kill`).
    Process,
    /// kardwt's process group (a terminal's Ctrl-C).
    Group,
}

fn send(add: &Running, sig: Signal, to: To) {
    let pid = Pid::from_raw(add.pid() as i32).unwrap();
    match to {
        To::Process => kill_process(pid, sig).unwrap(),
        To::Group => kill_process_group(pid, sig).unwrap(),
    }
}

/// Is `pid` gone (no such process, or a zombie that runs nothing)?
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z')),
    }
}

#[track_caller]
fn assert_gone(pid: i32, what: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || gone(pid)),
        "{what} (pid {pid}) outlived kardwt"
    );
}

/// Wait for `file`, or fail with the output of `kardwt`, killed.
#[track_caller]
fn reach(kardwt: Running, file: &Path) -> Running {
    if wait_until(REACH, || file.exists()) {
        return kardwt;
    }
    let mut kardwt = kardwt;
    kardwt.kill();
    let out = kardwt.wait(Duration::from_secs(10));
    panic!("{} never appeared:\n{out}", file.display());
}

/// kardwt after the signal: its output, and whether it exited by itself (not killed).
struct Ended {
    out: Output,
    status: std::process::ExitStatus,
}

fn end(kardwt: Running) -> Ended {
    let (out, status) = kardwt.wait_status(REACH);
    Ended { out, status }
}

impl Ended {
    /// It exited by itself (it did not die of the signal) with 128 + `sig`, saying why.
    #[track_caller]
    fn assert_exited_for(&self, sig: Signal) {
        let code = 128 + sig.as_raw();
        let out = &self.out;
        assert_eq!(
            self.status.code(),
            Some(code),
            "kardwt did not exit {code} by itself after {}:\n{out}",
            name(sig)
        );
        assert!(
            out.stderr
                .contains(&format!("interrupted by {}", name(sig))),
            "the verdict does not say it was interrupted:\n{out}"
        );
    }
}

/// Is `sig` ignored in this process (so in the kardwt it starts)? `/proc/self/status` says.
fn ignored_here(sig: Signal) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig.as_raw() - 1)) != 0)
}

fn name(sig: Signal) -> &'static str {
    match sig {
        Signal::INT => "SIGINT",
        Signal::TERM => "SIGTERM",
        Signal::HUP => "SIGHUP",
        _ => "another signal",
    }
}

/// The prepare hook, while `<tmp>/HOLD` exists: it starts a `setsid` sleeper (out of its
/// process group) and a double-forked one (orphaned), writes their pids, then its own
/// (`<tmp>/hook-<card>.pid`, last) and sleeps.
fn holding_prepare(repo: &TestRepo) -> String {
    let t = |name: &str| sh_quote(&repo.tmp.join(name));
    let own = write_pid(&repo.tmp.join("hook-$KARDWT_CARD.pid")).replace('\'', "\"");
    format!(
        "if [ -e {hold} ]; then\n\
         setsid sleep 300 &\n\
         echo $! > {dir}/setsid-$KARDWT_CARD.pid\n\
         ( sleep 300 & echo $! > {dir}/orphan-$KARDWT_CARD.pid ) &\n\
         wait $!\n\
         {own}\n\
         exec sleep 300\nfi",
        hold = t("HOLD"),
        dir = format!("\"{}\"", repo.tmp.display()),
    )
}

#[test]
fn an_interrupted_create_ends_the_hook_removes_the_tree_keeps_the_branch_and_exits_128_plus_the_signal(
) {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let script = repo.write_prepare(&holding_prepare(&repo));
    repo.write_rules(&repo.rules_for(&script, false));
    std::fs::write(repo.tmp.join("HOLD"), "").unwrap();
    let base_before = repo.snapshot_base();
    let rounds = [
        ("42", Signal::INT, To::Process),
        ("43", Signal::TERM, To::Process),
        ("44", Signal::HUP, To::Process),
        ("45", Signal::INT, To::Group),
    ];
    for (card, sig, to) in rounds {
        if ignored_here(sig) {
            // kardwt inherits the disposition and keeps an ignored signal ignored (nohup).
            eprintln!("skipped: {} is ignored by this test process", name(sig));
            continue;
        }
        let what = format!("card {card}, {} to the {to:?}", name(sig));
        let pid_file = repo.tmp.join(format!("hook-{card}.pid"));
        let add = match to {
            To::Process => repo.spawn_kardwt_bin(&repo.base, &["add", card]),
            To::Group => repo.spawn_kardwt_leader(&repo.base, &["add", card]),
        };
        let add = reach(add, &pid_file);
        send(&add, sig, to);
        if card == "42" {
            // A second Ctrl-C, during the rollback or before it starts, does not stop it.
            send(&add, sig, to);
        }
        let ended = end(add);
        let out = &ended.out;
        assert_eq!(
            out.stdout, "",
            "{what}: an interrupted add printed a path:\n{out}"
        );
        // Descendants that left the hook's process group are found through the subreaper,
        // which the portable build (like macOS) does without: only the hook is sure to end.
        let spawned: &[&str] = if cfg!(feature = "portable") {
            &["hook"]
        } else {
            &["hook", "setsid", "orphan"]
        };
        for name in spawned {
            let pid = read_pid(&repo.tmp.join(format!("{name}-{card}.pid")));
            assert_gone(pid, &format!("{what}: the {name} process"));
        }
        let path = repo.card_path(card);
        assert!(!path.exists(), "{what}: the new tree was kept:\n{out}");
        assert!(
            repo.branch_exists(&format!("card/{card}")),
            "{what}: the branch was not kept"
        );
        assert_eq!(repo.worktrees().len(), 1, "{what}: {:?}", repo.worktrees());
        assert!(
            repo.snapshot_base() == base_before,
            "{what}: the base changed"
        );
        assert_no_lock_held(&repo, &what);
        ended.assert_exited_for(sig);
    }
    // The retry of each works, on the kept branch.
    std::fs::remove_file(repo.tmp.join("HOLD")).unwrap();
    for (card, _, _) in rounds.iter().filter(|(_, sig, _)| !ignored_here(*sig)) {
        let out = repo.kardwt(&repo.base, &["add", card]);
        out.expect_code(0);
        assert_eq!(out.stdout, line(&repo.card_path(card)), "{out}");
        let rec = repo.record(&repo.card_path(card));
        assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    }
}

#[test]
fn an_interrupted_reuse_records_failed_and_the_next_add_retries() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let script = repo.write_prepare(&holding_prepare(&repo));
    repo.write_rules(&repo.rules_for(&script, true));
    let path = repo.add_card("42");

    std::fs::write(repo.tmp.join("HOLD"), "").unwrap();
    let add = repo.spawn_kardwt_bin(&repo.base, &["add", "42"]);
    let add = reach(add, &repo.tmp.join("hook-42.pid"));
    assert_eq!(repo.record(&path)["reason"].as_str(), Some("reuse"));
    send(&add, Signal::TERM, To::Process);
    let ended = end(add);
    let out = &ended.out;
    assert_eq!(out.stdout, "", "{out}");
    assert_gone(read_pid(&repo.tmp.join("hook-42.pid")), "the hook");
    assert!(path.is_dir(), "a reused tree was removed:\n{out}");
    let rec = repo.record(&path);
    assert_eq!(rec["state"].as_str(), Some("failed"), "{rec:?}\n{out}");
    assert_no_lock_held(&repo, "after the interrupted reuse");
    ended.assert_exited_for(Signal::TERM);

    std::fs::remove_file(repo.tmp.join("HOLD")).unwrap();
    repo.kardwt_ok(&repo.base, &["add", "42"]);
    let rec = repo.record(&path);
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert_eq!(rec["reason"].as_str(), Some("retry"), "{rec:?}");
}

#[test]
fn a_second_add_never_prepares_while_the_interrupted_first_ones_hook_lives() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let starts = repo.tmp.join("starts.log");
    let overlaps = repo.tmp.join("overlap.log");
    // Each prepare says, as it starts, whether an earlier one still runs.
    let script = repo.write_prepare(&format!(
        "for p in $(cat {s} 2>/dev/null); do\n\
         kill -0 $p 2>/dev/null && echo \"$$ started while $p ran\" >> {o}\n\
         done\n\
         echo $$ >> {s}\n\
         exec sleep 300",
        s = sh_quote(&starts),
        o = sh_quote(&overlaps),
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let first = repo.spawn_kardwt_bin(&repo.base, &["add", "42"]);
    let first = reach(first, &starts);
    // The second waits for the card's lock the first holds.
    let second = repo.spawn_kardwt_bin(&repo.base, &["add", "42"]);
    let lock = card_lock(&repo, "42");
    assert!(
        wait_until(REACH, || has_open(second.pid(), &lock)),
        "the second add never waited for the card's lock"
    );
    send(&first, Signal::INT, To::Process);
    let first = end(first);
    let read = || std::fs::read_to_string(&starts).unwrap_or_default();
    let second = if wait_until(REACH, || read().lines().count() >= 2) {
        second
    } else {
        let mut second = second;
        second.kill();
        panic!("the second add never prepared:\n{}", second.wait(REACH));
    };
    let first_hook: i32 = read().lines().next().unwrap().parse().unwrap();
    assert!(gone(first_hook), "the first add's hook still runs");
    assert_eq!(
        std::fs::read_to_string(&overlaps).unwrap_or_default(),
        "",
        "two prepares of card 42 overlapped"
    );
    first.assert_exited_for(Signal::INT);
    send(&second, Signal::TERM, To::Process);
    end(second).assert_exited_for(Signal::TERM);
}

#[test]
fn a_remove_interrupted_during_its_cleanup_hook_leaves_a_failed_record_and_exits_130() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let hold = repo.tmp.join("HOLD");
    let pid_file = repo.tmp.join("cleanup.pid");
    let extra = format!(
        "if [ -e {} ]; then\n{}\nexec sleep 300\nfi",
        sh_quote(&hold),
        write_pid(&pid_file)
    );
    repo.write_rules(&format!(
        "{}{}",
        repo.rules_with_prepare(false),
        cleanup_rules(&repo, &extra)
    ));
    let path = repo.add_card("42");
    std::fs::write(&hold, "").unwrap();

    let remove = repo.spawn_kardwt_bin(&repo.base, &["remove", "42"]);
    let remove = reach(remove, &pid_file);
    send(&remove, Signal::INT, To::Process);
    let ended = end(remove);
    let out = &ended.out;
    assert_gone(read_pid(&pid_file), "the cleanup hook");
    assert!(path.is_dir(), "the tree was removed:\n{out}");
    let rec = repo.record(&path);
    assert_eq!(
        rec["state"].as_str(),
        Some("failed"),
        "the record says ready over a half cleanup: {rec:?}\n{out}"
    );
    assert_no_lock_held(&repo, "after the interrupted remove");
    ended.assert_exited_for(Signal::INT);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_interrupted",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });

    // Running it again finishes.
    std::fs::remove_file(&hold).unwrap();
    repo.kardwt_ok(&repo.base, &["remove", "42"]);
    assert!(!path.exists());
}

#[test]
fn a_signal_ignored_when_kardwt_starts_stays_ignored() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let (pid_file, go) = (repo.tmp.join("hook.pid"), repo.tmp.join("GO"));
    let script = repo.write_prepare(&format!(
        "{}\nwhile [ ! -e {go} ]; do sleep 0.05; done",
        write_pid(&pid_file),
        go = sh_quote(&go)
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    // As `nohup` starts it: SIGHUP ignored, then kardwt exec'd in the same process.
    let add = repo.spawn(
        "sh",
        &repo.base,
        &[
            "-c",
            "trap '' HUP; exec \"$@\"",
            "sh",
            crate::support::BIN,
            "add",
            "46",
        ],
    );
    let add = reach(add, &pid_file);
    send(&add, Signal::HUP, To::Process);
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&go, "").unwrap();
    let ended = end(add);
    let out = &ended.out;
    assert_eq!(
        ended.status.code(),
        Some(0),
        "a SIGHUP ignored at start stopped add:\n{out}"
    );
    assert_eq!(out.stdout, line(&repo.card_path("46")), "{out}");
    assert_eq!(
        repo.record(&repo.card_path("46"))["state"].as_str(),
        Some("ready")
    );
}
