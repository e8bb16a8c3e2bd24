//! Ctrl-C while the shared prepare cache transfers takes effect at once, not when a read
//! blocked on a hanging store times out (10 s), and leaves no partial entry anywhere: a fetch
//! stopped halfway through a file keeps nothing of it locally, and an upload stopped before its
//! manifest leaves no entry on the store. The store hangs through a relay in front of SeaweedFS.
use std::ffi::OsStr;
use std::os::unix::process::CommandExt as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

use super::remote::{
    another_machine, leftovers, local_entries, trust_signer, write_one, write_rules, writer_key,
    READER,
};
use crate::support::seaweed::{Seaweed, ACCESS_KEY, SECRET_KEY};
use crate::support::{wait_until, Output, TestRepo};

/// `git-kardwt add <card>` as the leader of its own process group, with `env`; once the relay
/// has stalled a transfer, the group gets SIGINT as from a terminal. Its output, and how long
/// it took to end after the signal.
fn interrupted_add(
    repo: &TestRepo,
    card: &str,
    env: &[(&str, &str)],
    stalled: &AtomicUsize,
) -> (Output, Duration) {
    let mut cmd = repo.command(env!("CARGO_BIN_EXE_git-kardwt"), &repo.base);
    cmd.process_group(0);
    for (k, v) in env {
        cmd.env(k, OsStr::new(v));
    }
    let mut running = repo.start_command(cmd, &repo.base, &["add", card]);
    if !wait_until(Duration::from_secs(60), || {
        stalled.load(Ordering::SeqCst) > 0
    }) {
        running.kill();
        let out = running.wait(Duration::from_secs(10));
        let events = repo.events(Some(card));
        panic!("no transfer stalled:\n{out}\n{events:?}");
    }
    let pid = Pid::from_raw(running.pid() as i32).unwrap();
    let t = Instant::now();
    kill_process_group(pid, Signal::INT).unwrap();
    let out = running.wait(Duration::from_secs(30));
    (out, t.elapsed())
}

#[test]
fn ctrl_c_halfway_through_a_fetch_ends_at_once_and_keeps_nothing() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let key = writer_key(&repo);
    another_machine(&repo);
    let (endpoint, stalled) = server.stalling("/blobs/");
    write_rules(&repo, &endpoint);
    trust_signer(&repo, &key);
    let (out, took) = interrupted_add(&repo, "2", &READER, &stalled);
    assert_eq!(out.code, 130, "{out}");
    assert!(
        took < Duration::from_secs(3),
        "took {took:?} after SIGINT:\n{out}"
    );
    assert!(
        out.stderr
            .contains("by SIGINT while fetching prepare's outputs"),
        "{out}"
    );
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
    assert_eq!(local_entries(&repo), 0, "{out}");
    assert!(!repo.card_path("2").exists());
    assert_eq!(
        repo.prepare_runs(),
        ["ran"],
        "the reader's prepare ran:\n{out}"
    );
    eprintln!("a fetch stopped {took:?} after SIGINT");
}

#[test]
fn ctrl_c_halfway_through_an_upload_ends_at_once_and_leaves_no_entry_on_the_store() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    let (endpoint, stalled) = server.stalling("/blobs/");
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", "v1\n"),
        ],
        "lockfile",
    );
    write_rules(&repo, &endpoint);
    let env = [
        ("KARDWT_CACHE_WRITE", "1"),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
    ];
    let (out, took) = interrupted_add(&repo, "1", &env, &stalled);
    assert_eq!(out.code, 130, "{out}");
    assert!(
        took < Duration::from_secs(3),
        "took {took:?} after SIGINT:\n{out}"
    );
    assert!(
        out.stderr
            .contains("by SIGINT while uploading prepare's outputs"),
        "{out}"
    );
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
    assert!(!repo.card_path("1").exists());
    // The entry stored locally before the upload stays whole; its manifest never went up.
    assert_eq!(local_entries(&repo), 1, "{out}");
    let key = std::fs::read_dir(repo.common_dir().join("kardwt/cache"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| !n.starts_with('.'))
        .unwrap();
    for libc in ["gnu", "musl", "system"] {
        let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
        let name = format!("team/web/entries/{os}-{arch}-{libc}/{key}.json");
        assert!(!server.has(&name), "{name} went up");
    }
    eprintln!("an upload stopped {took:?} after SIGINT");
}
