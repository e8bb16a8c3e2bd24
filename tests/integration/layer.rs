//! The git layer, the locks and the errors of issue 11: a lock deadline inside the
//! post-checkout hook keeps its exit code, a stale record never overwrites a newer one,
//! `remove` reads a renamed non-ASCII file in a dirty tree right, and `KARDWT_TRACE=1` shows
//! every git call.
use std::time::Duration;

use crate::support::{sh_quote, wait_until, TestRepo};

/// Hold `path`'s flock from another process until the returned child is killed.
fn hold_flock(repo: &TestRepo, path: &std::path::Path) -> crate::support::Running {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ready = repo.tmp.join("flock.ready");
    // One process (sh, then sleep) holds the lock on fd 9, so killing it frees the lock.
    let script = format!(
        "exec 9>>{}; flock 9; touch {}; exec sleep 60",
        sh_quote(path),
        sh_quote(&ready)
    );
    let child = repo.spawn("sh", &repo.tmp, &["-c", &script]);
    assert!(
        wait_until(Duration::from_secs(30), || ready.exists()),
        "flock never took {}",
        path.display()
    );
    child
}

#[test]
fn a_lock_deadline_inside_the_post_checkout_hook_exits_5() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  action_timeout_seconds: 1\n");
    repo.install_hooks();
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let out = repo.worktree_add(&["../k1", "-b", "card/k1"]);
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("could not seed"), "{out}");
    assert!(out.stderr.contains("caused by:"), "{out}");
    assert!(out.stderr.contains("deadline"), "{out}");
    assert!(!repo.sibling("k1").exists(), "{out}");
}

#[test]
fn remove_names_a_renamed_non_ascii_file_and_any_byte_of_a_dirty_tree() {
    use std::os::unix::ffi::OsStrExt;
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    std::fs::write(wt.join("äb.txt"), "x\n").unwrap();
    repo.git(&wt, &["add", "äb.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "a non-ASCII name"]);
    repo.git(&wt, &["mv", "äb.txt", "öc.txt"]);
    let odd = std::ffi::OsStr::from_bytes(b"n\xff.txt");
    std::fs::write(wt.join(odd), "y\n").unwrap();

    let out = repo.kardwt(&repo.base, &["remove", "k1"]);
    out.expect_code(1);
    assert!(out.stderr.contains("uncommitted changes"), "{out}");
    assert!(out.stderr.contains("öc.txt"), "{out}");
    assert!(!out.stderr.contains("äb.txt"), "{out}");
    // A byte that is not UTF-8 is shown as git quotes it, not as U+FFFD.
    assert!(out.stderr.contains("n\\377.txt"), "{out}");
    assert!(!out.stderr.contains('\u{FFFD}'), "{out}");
    assert!(wt.join("öc.txt").is_file() && wt.join(odd).is_file());
    assert!(repo.is_registered(&wt));
}

/// A `git` first on PATH that logs each of its invocations (one line) and runs the real one.
fn logging_git(repo: &TestRepo) -> (std::ffi::OsString, std::path::PathBuf) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let real = std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH");
    let dir = repo.tmp.join("logging-git");
    std::fs::create_dir_all(&dir).unwrap();
    let log = repo.tmp.join("git-calls.log");
    let script = dir.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            sh_quote(&log),
            sh_quote(&real)
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin_dir = std::path::Path::new(crate::support::BIN).parent().unwrap();
    let mut dirs = vec![dir, bin_dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    (std::env::join_paths(dirs).unwrap(), log)
}

#[test]
fn kardwt_trace_prints_one_line_per_git_call() {
    let repo = TestRepo::new();
    let (path, log) = logging_git(&repo);
    let out = repo
        .spawn_with_env(
            crate::support::BIN,
            &repo.base,
            &["add", "k1"],
            &[
                ("KARDWT_TRACE", std::ffi::OsStr::new("1")),
                ("PATH", path.as_os_str()),
            ],
        )
        .wait(Duration::from_secs(60));
    out.expect_code(0);
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    let traced: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("kardwt trace: git "))
        .collect();
    assert!(calls.len() >= 3, "{calls:?}");
    assert_eq!(traced.len(), calls.len(), "{calls:#?}\n{out}");
    for (t, c) in traced.iter().zip(&calls) {
        let shown = t.strip_prefix("kardwt trace: git ").unwrap();
        assert!(shown.starts_with(*c), "{t} is not {c}");
        assert!(t.contains(" ms, exit "), "{t}");
    }
    assert!(
        traced
            .iter()
            .any(|t| t.contains(" fetch ") && t.contains("--end-of-options")),
        "{out}"
    );
    // Without the variable, nothing is traced.
    let quiet = repo.kardwt(&repo.base, &["add", "k1"]);
    quiet.expect_code(0);
    assert!(!quiet.stderr.contains("kardwt trace:"), "{quiet}");
}

/// Wait until process `pid` has `file` open (it is waiting for that lock: everything it read
/// before taking the lock has been read).
fn wait_until_open(pid: u32, file: &std::path::Path) -> bool {
    let fds = std::path::PathBuf::from(format!("/proc/{pid}/fd"));
    wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&fds).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == file))
        })
    })
}

#[test]
fn a_record_written_while_prepare_waits_for_the_card_lock_is_not_overwritten() {
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let waiting = repo.spawn_kardwt_bin(&repo.base, &["prepare", "k1"]);
    let opened = wait_until_open(waiting.pid(), &lock);
    // Another command, holding the card's lock, writes a newer record meanwhile.
    repo.edit_record(&wt, "board", "newer");
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = waiting.wait(Duration::from_secs(60));
    assert!(opened, "prepare never waited for the card lock:\n{out}");
    out.expect_code(0);
    let rec = repo.record(&wt);
    assert_eq!(rec["board"].as_str(), Some("newer"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
}

#[test]
fn the_undo_of_a_failed_add_waits_for_the_repository_lock() {
    let repo = TestRepo::new();
    let started = repo.tmp.join("prepare.started");
    let go = repo.tmp.join("prepare.go");
    let script = repo.write_prepare(&format!(
        "touch {s}\nwhile [ ! -e {g} ]; do sleep 0.05; done\nexit 1",
        s = sh_quote(&started),
        g = sh_quote(&go)
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let adding = repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]);
    assert!(wait_until(Duration::from_secs(60), || started.exists()));
    // The tree exists and its prepare is about to fail; someone else holds the repository lock.
    let lock = repo.common_dir().join("kardwt/lock");
    let mut holder = hold_flock(&repo, &lock);
    std::fs::write(&go, "").unwrap();
    let waiting = wait_until_open(adding.pid(), &lock);
    let kept_while_held =
        repo.card_path("k1").exists() && repo.is_registered(&repo.card_path("k1"));
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = adding.wait(Duration::from_secs(60));
    assert!(
        waiting,
        "the undo never waited for the repository lock:\n{out}"
    );
    assert!(
        kept_while_held,
        "the undo removed the tree without the repository lock"
    );
    out.expect_code(4);
    assert!(!repo.card_path("k1").exists(), "{out}");
}

#[test]
fn a_rules_error_inside_the_post_checkout_hook_exits_2() {
    let repo = TestRepo::new();
    repo.install_hooks();
    repo.write_rules("worktree:\n  action_timeout_seconds: soon\n");
    let out = repo.worktree_add(&["../k1", "-b", "card/k1"]);
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("could not seed"), "{out}");
    assert!(out.stderr.contains("caused by:"), "{out}");
    assert!(!repo.sibling("k1").exists(), "{out}");
}

#[test]
fn remove_acts_on_the_record_it_reads_under_the_card_lock() {
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let waiting = repo.spawn_kardwt_bin(&repo.base, &["remove", "k1"]);
    let opened = wait_until_open(waiting.pid(), &lock);
    // Meanwhile the record stops matching the tree (it names another card now).
    repo.edit_record(&wt, "card", "k2");
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = waiting.wait(Duration::from_secs(60));
    assert!(opened, "remove never waited for the card lock:\n{out}");
    out.expect_code(1);
    assert!(out.stderr.contains("changed while waiting"), "{out}");
    assert!(wt.is_dir() && repo.is_registered(&wt), "{out}");
    assert_eq!(repo.record(&wt)["card"].as_str(), Some("k2"));
}
