//! What a dispatcher and an agent read: `add` (reuse) and `select`
//! name a HEAD that left the card's branch (a `hint:` and `--json` `head`/`drift`), and a second
//! `add` of a card being prepared says who it waits for instead of waiting silently.
use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::support::{line, pinned, pinned_case, sh_quote, wait_until, TestRepo, COMMAND_TIMEOUT};

/// `git rev-parse HEAD` and `git symbolic-ref -q HEAD` of `wt`, to show kardwt never moved it.
fn head_of(repo: &TestRepo, wt: &Path) -> (String, String) {
    let oid = repo.git(wt, &["rev-parse", "HEAD"]);
    let sym = repo.git_output(wt, &["symbolic-ref", "-q", "HEAD"]).stdout;
    (oid, sym)
}

#[test]
fn reuse_and_select_name_a_switched_or_detached_head_and_never_move_it() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("42");

    // On its branch: no hint, `head` is the branch, no drift. On another branch or a detached
    // HEAD: a hint naming it and how to switch back, `head` and `drift` saying so, the path
    // still selected; and no Rust debug text for the reader.
    let select = ["select", "42", "--existing-or-base"];
    let select_json = ["select", "42", "--existing-or-base", "--json"];
    let mut shown = String::new();
    let mut run = |when: &str, args: &[&str]| {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(0);
        shown.push_str(&pinned_case(&format!("{when}: {}", args.join(" ")), &out));
    };
    run("on its branch", &["add", "42", "--json"]);
    run("on its branch", &select_json);

    repo.git(&wt, &["switch", "--quiet", "-c", "other"]);
    let before = head_of(&repo, &wt);
    for args in [
        &["add", "42"][..],
        &["add", "42", "--json"],
        &select,
        &select_json,
    ] {
        run("on branch other", args);
    }
    assert_eq!(head_of(&repo, &wt), before, "kardwt moved HEAD");

    repo.git(&wt, &["switch", "--quiet", "--detach"]);
    let before = head_of(&repo, &wt);
    run("detached", &["add", "42", "--json"]);
    run("detached", &select_json);
    assert_eq!(head_of(&repo, &wt), before, "kardwt moved HEAD");
    pinned(&repo).bind(|| insta::assert_snapshot!("add_and_select_of_a_drifted_tree", shown));
}

#[test]
fn a_second_add_of_a_card_being_prepared_names_the_holder_once_then_proceeds() {
    let repo = TestRepo::new();
    let started = repo.tmp.join("started");
    let go = repo.tmp.join("go");
    // The first add's prepare hook holds card 42's lock until the test creates `go` (or its
    // directory is gone).
    let script = repo.write_prepare(&format!(
        "touch {s}\nwhile [ ! -e {} ] && [ -e {s} ]; do sleep 0.05; done",
        sh_quote(&go),
        s = sh_quote(&started),
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    // Whatever happens, the hook is released at the end (no process outlives a failed test).
    let _release = Release(go.clone());

    let first = repo.spawn_kardwt_bin(&repo.base, &["add", "42"]);
    assert!(
        wait_until(COMMAND_TIMEOUT, || started.exists()),
        "the first add's prepare hook never started"
    );

    // The second add's stderr goes to a file the test can read while it waits.
    let err_path = repo.tmp.join("second.stderr");
    let mut second = repo
        .command("git", &repo.base)
        .args(["kardwt", "add", "42"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&err_path).unwrap_or_default();
    let spoke = wait_until(Duration::from_secs(30), || stderr().contains('\n'));
    let said = stderr();
    if !spoke {
        let _ = second.kill();
        panic!("the second add said nothing while waiting: {said:?}");
    }
    assert!(
        !go.exists() && second.try_wait().unwrap().is_none(),
        "the second add is still waiting when it speaks"
    );
    let expected = format!(
        "waiting for card 42's lock, held by pid {} (git kardwt add 42) since ",
        first.pid()
    );
    assert!(said.starts_with(&expected), "{said}");
    assert!(
        said.contains(", preparing card 42's new worktree;"),
        "{said}"
    );
    assert!(said.contains("giving up in "), "{said}");
    // Give it time to speak again, wrongly, before releasing the first add.
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&go, "").unwrap();

    let first = first.wait(COMMAND_TIMEOUT);
    first.expect_code(0);
    let status = second.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut second.stdout.take().unwrap(), &mut stdout).unwrap();
    let said = stderr();
    assert!(status.success(), "second add failed: {said}");
    assert_eq!(stdout, line(&repo.card_path("42")), "{said}");
    assert_eq!(
        said.matches("waiting for").count(),
        1,
        "one line, then silence: {said}"
    );
    assert_eq!(said.lines().count(), 1, "{said}");
    // The second add reused what the first prepared (on_reuse: false): one prepare in all.
    assert_eq!(repo.prepare_runs(), vec!["42 create prepare".to_owned()]);
}

/// Creates its file when dropped: releases a prepare hook that waits for it.
struct Release(std::path::PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

#[test]
fn a_person_hears_who_holds_a_lock_and_the_post_checkout_hook_stays_verdict_first() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  action_timeout_seconds: 2\n");
    repo.install_hooks();
    // Another process holds card k1's lock and says who it is, as kardwt's holders do.
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(
        &lock,
        "pid 4242\nsince 2026-12-01T01:12:03Z\ncommand git kardwt prepare k1\ndoing preparing card k1\n",
    )
    .unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&lock).unwrap();
    let mut held = fd_lock::RwLock::new(file);
    let guard = held.try_write().expect("card k1's lock is free");
    let base_before = repo.snapshot_base();

    // A person's command: one line naming the holder, then the deadline's error (exit 5).
    let out = repo.kardwt(&repo.base, &["add", "k1"]);
    out.expect_code(5);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_lock_deadline",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    let said = "waiting for card k1's lock, held by pid 4242 (git kardwt prepare k1) since \
                2026-12-01T01:12:03Z, preparing card k1; giving up in ";
    assert!(out.stderr.starts_with(said), "{out}");
    let waits = out.stderr.lines().filter(|l| l.starts_with("waiting for"));
    assert_eq!(waits.count(), 1, "{out}");
    assert!(out.stderr.contains("\nerror: "), "{out}");
    assert!(!repo.card_path("k1").exists(), "{out}");
    repo.assert_nothing_created(&base_before, "an add that ran into the deadline");

    // Inside git's post-checkout hook the wait is silent: the verdict is the first text
    // after git's own "Preparing worktree" line.
    let out = repo.worktree_add(&["../k1", "-b", "card/k1"]);
    assert_eq!(out.code, 5, "{out}");
    assert!(!out.stderr.contains("giving up in"), "{out}");
    let first = out
        .stderr
        .lines()
        .find(|l| !l.starts_with("Preparing worktree"));
    assert!(
        first.is_some_and(|l| l.starts_with("error: ")),
        "the verdict is not first:\n{out}"
    );
    drop(guard);
}
