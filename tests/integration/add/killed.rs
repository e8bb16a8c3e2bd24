//! Kills: SIGKILL the `git-kardwt add` process itself at each phase (waiting for
//! the card's lock, waiting for the repository lock, during the fetch, right after the worktree
//! exists but before its record, during prepare — also during a retry and a reuse — and, with
//! a hooked `git worktree add` too, during the checkout of a 600-file tree), then show
//! that the next `add` of the same card recovers (creates, re-prepares with reason `retry`, or
//! fails closed with a message whose advice works), that the base is untouched, that no lock
//! stays held (not even while the killed run's orphaned children live on), and that nothing the
//! test started is left running.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::procs::*;
use crate::support::{line, sh_quote, snapshot, TestRepo};

#[test]
fn killed_while_waiting_for_the_card_lock_leaves_nothing_and_the_retry_creates() {
    let (repo, _reaper, base_before) = scene(|_| String::new(), "");
    let lock_path = card_lock(&repo, "k1");
    // The test itself holds card k1's lock.
    let mut holder = fd_lock::RwLock::new(open_lock_file(&lock_path));
    let guard = holder.write().unwrap();

    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    let pid = add.as_ref().unwrap().pid();
    reach(&mut add, "add waiting on card k1's lock", || {
        has_open(pid, &lock_path)
    });
    // Give it time to be well inside its wait loop; it must still be waiting then.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        lock_is_free(&repo_lock(&repo)),
        "a waiter for the card lock must not hold the repository lock"
    );
    kill_add(&mut add);
    drop(guard);
    drop(holder);

    assert_nothing_of(&repo, "k1");
    assert_eq!(repo.prepare_runs(), Vec::<String>::new());
    assert_repository_recovered(&repo, &base_before);
    let path = assert_add_succeeds(&repo, "k1");
    assert_eq!(repo.record(&path)["reason"].as_str(), Some("create"));
    assert_eq!(
        repo.prepare_runs(),
        ["other9 create prepare", "k1 create prepare"]
    );
}

#[test]
fn killed_while_waiting_for_the_repository_lock_frees_the_card_lock_it_held() {
    let (repo, _reaper, base_before) = scene(|_| String::new(), "");
    let lock_path = repo_lock(&repo);
    let tracking = repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]);
    let mut holder = fd_lock::RwLock::new(open_lock_file(&lock_path));
    let guard = holder.write().unwrap();

    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    let pid = add.as_ref().unwrap().pid();
    reach(&mut add, "add waiting on the repository lock", || {
        has_open(pid, &lock_path)
    });
    std::thread::sleep(Duration::from_millis(300));
    // It holds card k1's lock while it waits (card lock first, always).
    assert!(
        !lock_is_free(&card_lock(&repo, "k1")),
        "add waits for the repository lock without holding the card's"
    );
    kill_add(&mut add);
    // The test still holds the repository lock: the dead waiter's card lock is free anyway.
    assert!(
        lock_is_free(&card_lock(&repo, "k1")),
        "card k1's lock stayed held after its holder was killed"
    );
    drop(guard);
    drop(holder);

    assert_nothing_of(&repo, "k1");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]),
        tracking,
        "nothing was fetched before the repository lock"
    );
    assert_repository_recovered(&repo, &base_before);
    assert_add_succeeds(&repo, "k1");
    assert_eq!(
        repo.prepare_runs(),
        ["other9 create prepare", "k1 create prepare"]
    );
}

#[test]
fn killed_during_the_fetch_leaves_nothing_fetched_and_the_retry_creates() {
    // An explicit base ref: the fetch is then the only upload-pack this add starts.
    let (repo, _reaper, base_before) =
        scene(|_| String::new(), "  base:\n    ref: refs/heads/main\n");
    let tracking = repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]);
    let ahead = repo.origin_main();
    assert_ne!(
        tracking.trim(),
        ahead,
        "origin must be ahead for the fetch to matter"
    );
    let pid_file = repo.tmp.join("upload-pack.pid");
    let wrapper = repo.tmp.join("slow-upload-pack");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n{}\nexec sleep 60\n", write_pid(&pid_file)),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(
        &repo.base,
        &["config", "remote.origin.uploadpack", &sh_quote(&wrapper)],
    );

    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    reach(&mut add, "the fetch's upload-pack", || pid_file.exists());
    assert!(
        !lock_is_free(&repo_lock(&repo)),
        "the fetch runs without the repository lock"
    );
    assert!(!lock_is_free(&card_lock(&repo, "k1")));
    kill_add(&mut add);
    // The orphaned `git fetch` and the sleeping upload-pack still run: the locks are free.
    assert_no_lock_held(&repo, "right after killing add during the fetch");
    sigkill(read_pid(&pid_file));

    repo.git(
        &repo.base,
        &["config", "--unset", "remote.origin.uploadpack"],
    );
    assert_nothing_of(&repo, "k1");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]),
        tracking,
        "a killed fetch moved the remote-tracking ref"
    );
    assert_repository_recovered(&repo, &base_before);
    let path = assert_add_succeeds(&repo, "k1");
    assert_eq!(
        repo.record(&path)["base_oid"].as_str(),
        Some(ahead.as_str())
    );
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"])
            .trim(),
        ahead
    );
    assert_eq!(
        repo.prepare_runs(),
        ["other9 create prepare", "k1 create prepare"]
    );
}

#[test]
fn killed_right_after_the_worktree_exists_fails_closed_and_its_advice_works() {
    let (repo, _reaper, base_before) = scene(|_| String::new(), "");
    // A user's own post-checkout hook, kept and chained by install-hooks: on the first
    // `git worktree add` it announces itself and sleeps, with the worktree complete and
    // registered but before add has written the record.
    let pid_file = repo.tmp.join("user-hook.pid");
    let marker = repo.tmp.join("user-hook-slept");
    let hooks = repo.common_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let user_hook = hooks.join("post-checkout");
    std::fs::write(
        &user_hook,
        format!(
            "#!/bin/sh\ncase \"$1\" in *[!0]*) exit 0 ;; esac\nif [ ! -e {m} ]; then\n  : > {m}\n{}\n  exec sleep 60\nfi\n",
            write_pid(&pid_file),
            m = sh_quote(&marker),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&user_hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.install_hooks();
    assert!(
        hooks.join("post-checkout.kardwt-chained").is_file(),
        "install-hooks did not chain the user's hook"
    );

    let path = repo.card_path("k1");
    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    reach(&mut add, "the user's post-checkout hook", || {
        pid_file.exists()
    });
    assert!(path.join(".git").is_file(), "the worktree is not there yet");
    assert!(repo.is_registered(&path));
    assert!(
        !repo.admin_dir(&path).join("kardwt.toml").exists(),
        "the record exists before the post-checkout hook ended"
    );
    assert!(!lock_is_free(&repo_lock(&repo)));
    assert!(!lock_is_free(&card_lock(&repo, "k1")));
    kill_add(&mut add);
    // `git worktree add` still waits for the hook: the dead add's locks are free regardless.
    assert_no_lock_held(&repo, "right after killing add in post-checkout");
    sigkill(read_pid(&pid_file));
    assert_repository_recovered(&repo, &base_before);

    // A registered worktree without a record: unseeded. verify says not ready; add refuses
    // (exit 3), touches nothing, and says what to run.
    repo.kardwt(&repo.base, &["verify", "--path", path.to_str().unwrap()])
        .expect_code(1);
    let tree_before = snapshot(&path);
    let out = repo.kardwt(&repo.base, &["add", "k1", "--timeout", "60"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert!(out.stderr.starts_with("error: "), "{out}");
    assert_eq!(
        snapshot(&path),
        tree_before,
        "the refused add changed the tree"
    );
    assert!(
        !repo.admin_dir(&path).join("kardwt.toml").exists(),
        "the refused add wrote a record"
    );
    let advice = out
        .stderr
        .lines()
        .find_map(|l| {
            l.find("git kardwt prepare --path")
                .map(|i| l[i..].to_owned())
        })
        .unwrap_or_else(|| panic!("the refusal does not name `git kardwt prepare --path`:\n{out}"));

    // Follow the advice exactly as printed.
    let followed = repo
        .spawn("sh", &repo.base, &["-c", &advice])
        .wait(Duration::from_secs(120));
    assert_eq!(followed.code, 0, "following {advice:?} failed:\n{followed}");
    assert_eq!(followed.stdout, line(&path), "{followed}");
    repo.kardwt_ok(&repo.base, &["verify", "--path", path.to_str().unwrap()]);
    let rec = repo.record(&path);
    assert_eq!(rec["card"].as_str(), Some("k1"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");

    // And add now reuses it as it is; the killed run's intent is spent.
    assert_add_succeeds(&repo, "k1");
    let claim = std::fs::read_to_string(repo.common_dir().join("kardwt/claims/k1")).unwrap();
    assert!(
        claim.contains("state = \"complete\""),
        "the intent outlived the record: {claim}"
    );
    assert_eq!(
        repo.prepare_runs(),
        ["other9 create prepare", "k1 manual prepare"]
    );
    assert!(repo.snapshot_base() == base_before, "the base changed");
}

#[test]
fn killed_during_prepare_and_again_during_its_retry_then_the_retry_finishes() {
    let (repo, _reaper, base_before) = scene(
        |repo| {
            format!(
                "if [ -e {h} ]; then\n  sleep 60 &\n{}\n  exec sleep 60\nfi",
                write_pid(&repo.tmp.join("prepare.pid")),
                h = sh_quote(&repo.tmp.join("HOLD")),
            )
        },
        "",
    );
    let pid_file = repo.tmp.join("prepare.pid");
    let hold_file = repo.tmp.join("HOLD");
    std::fs::write(&hold_file, "").unwrap();
    let path = repo.card_path("k1");

    for (round, reason) in [(1, "create"), (2, "retry")] {
        let _ = std::fs::remove_file(&pid_file);
        let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
        reach(&mut add, "the prepare hook", || pid_file.exists());
        // Preparing holds only the card's lock.
        assert!(
            lock_is_free(&repo_lock(&repo)),
            "round {round}: the repository lock is held during prepare"
        );
        assert!(
            !lock_is_free(&card_lock(&repo, "k1")),
            "round {round}: the card lock is not held during prepare"
        );
        let rec = repo.record(&path);
        assert_eq!(rec["state"].as_str(), Some("preparing"), "{rec:?}");
        assert_eq!(rec["reason"].as_str(), Some(reason), "{rec:?}");
        kill_add(&mut add);
        // The hook (and its background child) outlive the dead add: its lock is free anyway.
        assert_no_lock_held(
            &repo,
            &format!("round {round}: after killing add in prepare"),
        );
        sigkill(read_pid(&pid_file));
        assert!(reap(&repo.tmp), "{:?}", processes_under(&repo.tmp));

        let rec = repo.record(&path);
        assert_eq!(
            rec["state"].as_str(),
            Some("preparing"),
            "round {round}: an interrupted run must stay preparing: {rec:?}"
        );
        repo.kardwt(&repo.base, &["verify", "k1"]).expect_code(1);
        assert!(repo.snapshot_base() == base_before, "the base changed");
    }
    std::fs::remove_file(&hold_file).unwrap();

    assert_repository_recovered(&repo, &base_before);
    assert_add_succeeds(&repo, "k1");
    let rec = repo.record(&path);
    assert_eq!(rec["reason"].as_str(), Some("retry"), "{rec:?}");
    assert_eq!(
        repo.prepare_runs(),
        [
            "k1 create prepare",
            "k1 retry prepare",
            "other9 create prepare",
            "k1 retry prepare"
        ]
    );
    // A ready card is then reused as it is.
    assert_add_succeeds(&repo, "k1");
    assert_eq!(
        repo.prepare_runs().len(),
        4,
        "a ready card was prepared again"
    );
}

#[test]
fn killed_during_a_reuse_prepare_the_next_add_retries() {
    let repo = TestRepo::new();
    let _reaper = Reaper(repo.tmp.clone());
    let pid_file = repo.tmp.join("prepare.pid");
    let hold_file = repo.tmp.join("HOLD");
    let script = repo.write_prepare(&format!(
        "if [ -e {h} ]; then\n{}\n  exec sleep 60\nfi",
        write_pid(&pid_file),
        h = sh_quote(&hold_file)
    ));
    repo.write_rules(&repo.rules_for(&script, true));
    let base_before = repo.snapshot_base();
    let path = assert_add_succeeds(&repo, "k1");

    std::fs::write(&hold_file, "").unwrap();
    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    reach(&mut add, "the reuse prepare hook", || pid_file.exists());
    let rec = repo.record(&path);
    assert_eq!(rec["state"].as_str(), Some("preparing"), "{rec:?}");
    assert_eq!(rec["reason"].as_str(), Some("reuse"), "{rec:?}");
    kill_add(&mut add);
    assert_no_lock_held(&repo, "after killing add in a reuse prepare");
    sigkill(read_pid(&pid_file));
    std::fs::remove_file(&hold_file).unwrap();

    repo.kardwt(&repo.base, &["verify", "k1"]).expect_code(1);
    assert_repository_recovered(&repo, &base_before);
    assert_add_succeeds(&repo, "k1");
    assert_eq!(repo.record(&path)["reason"].as_str(), Some("retry"));
    assert_eq!(
        repo.prepare_runs(),
        [
            "k1 create prepare",
            "k1 reuse prepare",
            "other9 create prepare",
            "k1 retry prepare"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Killed mid-checkout: a 600-file tree whose checkout stops half way, which must never be
// recorded ready. (The cut-short checkout first reported had 3,000 files; the count does not
// matter to the checks, which are by git's `locked` file and by the tracked files against HEAD,
// and 600 keeps the default `make test` fast.)

/// Files on each side of `m.slow`: the tree has `2 * SIDE` files, `.gitattributes` and `m.slow`.
const SIDE: usize = 300;

/// Commit `2 * SIDE` files on origin with one `m.slow` in the middle, whose smudge filter (set in
/// the shared config) blocks the first checkout that reaches it: it writes its pid to the
/// returned file and sleeps, so about half the files are on disk when the test kills.
fn slow_checkout(repo: &TestRepo) -> PathBuf {
    for i in 0..SIDE {
        std::fs::write(repo.scratch.join(format!("a{i:04}.txt")), format!("a{i}\n")).unwrap();
        std::fs::write(repo.scratch.join(format!("z{i:04}.txt")), format!("z{i}\n")).unwrap();
    }
    std::fs::write(repo.scratch.join("m.slow"), "slow\n").unwrap();
    std::fs::write(repo.scratch.join(".gitattributes"), "*.slow filter=slow\n").unwrap();
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "many files"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    let pid_file = repo.tmp.join("smudge.pid");
    let marker = repo.tmp.join("smudge-slept");
    let smudge = repo.tmp.join("slow-smudge");
    std::fs::write(
        &smudge,
        format!(
            "#!/bin/sh\nif [ ! -e {m} ]; then\n  : > {m}\n{}\n  exec sleep 60\nfi\nexec cat\n",
            write_pid(&pid_file),
            m = sh_quote(&marker)
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smudge, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(
        &repo.base,
        &["config", "filter.slow.smudge", &sh_quote(&smudge)],
    );
    pid_file
}

/// Kill what a killed `git worktree add` left running: git's `worktree add` first (so it can
/// never clean up after its child), then its `reset --hard` and the filter. The tree stays
/// half checked out, as after a SIGKILL of the whole process group.
fn kill_the_checkout(repo: &TestRepo) {
    for (pid, cmd) in processes_under(&repo.tmp) {
        if cmd.contains("worktree add") {
            sigkill(pid);
        }
    }
    assert!(reap(&repo.tmp), "{:?}", processes_under(&repo.tmp));
}

/// Files in `dir`, `.git` aside.
fn file_count(dir: &Path) -> usize {
    snapshot(dir)
        .keys()
        .filter(|p| !p.starts_with(".git"))
        .count()
}

/// [`assert_repository_recovered`] without its extra add, which checks out the whole tree and
/// could run into its short `--timeout` on a loaded machine.
#[track_caller]
fn assert_recovered_after_checkout(repo: &TestRepo, base_before: &BTreeMap<PathBuf, Vec<u8>>) {
    assert!(reap(&repo.tmp), "{:?}", processes_under(&repo.tmp));
    assert_no_lock_held(repo, "after the repair");
    assert_eq!(git_lock_files(repo), Vec::<PathBuf>::new());
    assert!(
        repo.snapshot_base() == *base_before,
        "the base changed:\n{}",
        diff(base_before, &repo.snapshot_base())
    );
}

/// A tree holds every file its HEAD tracks, and they are as checked out.
#[track_caller]
fn assert_whole(repo: &TestRepo, path: &Path) {
    let tracked = repo.git(path, &["ls-files"]).lines().count();
    assert!(tracked > 2 * SIDE, "{tracked} tracked files");
    assert!(file_count(path) >= tracked, "the tree is incomplete");
    assert_eq!(
        repo.git(path, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}

/// `prepare --path` and `verify` on a half-made tree: not ready, nothing written.
#[track_caller]
fn assert_half_made_is_never_ready(repo: &TestRepo, path: &Path) {
    let p = path.to_str().unwrap();
    let before = snapshot(path);
    let out = repo.kardwt(&repo.base, &["prepare", "--path", p]);
    out.expect_code(3);
    assert!(out.stderr.contains("never completed"), "{out}");
    assert_eq!(
        snapshot(path),
        before,
        "the refused prepare changed the tree"
    );
    assert!(
        !repo.admin_dir(path).join("kardwt.toml").exists(),
        "prepare --path recorded a half-made tree"
    );
    let out = repo.kardwt(&repo.base, &["verify", "--path", p]);
    assert_ne!(out.code, 0, "a half-made tree verifies:\n{out}");
}

#[test]
fn killed_during_the_checkout_the_next_add_removes_the_half_made_tree_and_recreates_it() {
    let (repo, _reaper, _) = scene(|_| String::new(), "");
    let pid_file = slow_checkout(&repo);
    let base_before = repo.snapshot_base();
    let path = repo.card_path("k1");

    let mut add = Some(repo.spawn_kardwt_bin(&repo.base, &["add", "k1"]));
    reach(&mut add, "the checkout's smudge filter", || {
        pid_file.exists()
    });
    let admin = repo.admin_dir(&path);
    assert_eq!(
        std::fs::read_to_string(admin.join("locked"))
            .unwrap_or_default()
            .trim(),
        "initializing",
        "git's worktree add is not mid-checkout"
    );
    kill_add(&mut add);
    kill_the_checkout(&repo);
    let present = file_count(&path);
    assert!(
        (1..2 * SIDE).contains(&present),
        "the tree is not half made: {present} files"
    );
    assert!(!admin.join("index").exists());

    assert_half_made_is_never_ready(&repo, &path);
    repo.kardwt(&repo.base, &["verify", "k1"]).expect_code(1);

    // The next add recognises its own interrupted creation, removes it and creates it again.
    let path = assert_add_succeeds(&repo, "k1");
    assert_whole(&repo, &path);
    let claim = std::fs::read_to_string(repo.common_dir().join("kardwt/claims/k1")).unwrap();
    assert!(
        claim.contains("state = \"complete\""),
        "the intent outlived the record: {claim}"
    );
    let removed: Vec<_> = repo
        .events(Some("k1"))
        .into_iter()
        .filter(|e| e["event"] == "removed")
        .collect();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_recovered_after_checkout(&repo, &base_before);
    assert_eq!(repo.prepare_runs(), ["k1 create prepare"]);
}

#[test]
fn a_hooked_worktree_add_killed_during_the_checkout_is_refused_with_the_repair() {
    let (repo, _reaper, _) = scene(|_| String::new(), "");
    let pid_file = slow_checkout(&repo);
    repo.install_hooks();
    let base_before = repo.snapshot_base();
    let hooked = repo.sibling("hooked");

    let mut git = Some(repo.spawn(
        "git",
        &repo.base,
        &["worktree", "add", "-b", "card/k2", "../hooked"],
    ));
    reach(&mut git, "the checkout's smudge filter", || {
        pid_file.exists()
    });
    // git's `reset --hard` holds the test's pipes: kill it too before waiting.
    kill_the_checkout(&repo);
    let out = git.take().unwrap().wait(Duration::from_secs(10));
    assert_eq!(
        out.code,
        128 + 9,
        "git worktree add was not killed mid-checkout:\n{out}"
    );
    assert!((1..2 * SIDE).contains(&file_count(&hooked)));
    assert_half_made_is_never_ready(&repo, &hooked);

    // add k2 cannot use branch card/k2 while the half-made tree holds it: it refuses, changes
    // nothing, and names the one command that repairs it.
    let before = snapshot(&hooked);
    let out = repo.kardwt(&repo.base, &["add", "k2", "--timeout", "60"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(
        snapshot(&hooked),
        before,
        "the refused add changed the tree"
    );
    assert!(
        !repo.card_path("k2").exists(),
        "the refused add created a tree"
    );
    let advice = out
        .stderr
        .lines()
        .find_map(|l| l.find("git worktree remove").map(|i| l[i..].to_owned()))
        .unwrap_or_else(|| panic!("the refusal names no repair:\n{out}"));
    let followed = repo
        .spawn("sh", &repo.base, &["-c", &advice])
        .wait(Duration::from_secs(60));
    assert_eq!(followed.code, 0, "following {advice:?} failed:\n{followed}");
    assert!(!hooked.exists());

    let path = assert_add_succeeds(&repo, "k2");
    assert_whole(&repo, &path);
    assert_recovered_after_checkout(&repo, &base_before);
    assert_eq!(repo.prepare_runs(), ["k2 create prepare"]);
}
