//! Each tree's status in `list`: dirty (what `git status --porcelain` shows), commits ahead of
//! and behind the recorded base as last fetched, read within `--budget`; `--json --status`
//! carries the same figures, plain `--json` none of them.
use std::path::Path;

use serde_json::Value;

use crate::support::procs::assert_nothing_running_under;
use crate::support::TestRepo;

/// `list --json --status`, parsed.
#[track_caller]
fn with_status(repo: &TestRepo, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["list", "--json", "--status"];
    args.extend_from_slice(extra);
    let out = repo.kardwt(&repo.base, &args);
    out.expect_code(0);
    out.json().as_array().unwrap().clone()
}

#[track_caller]
fn row<'a>(rows: &'a [Value], path: &Path) -> &'a Value {
    rows.iter()
        .find(|r| r["path"] == path.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not listed: {rows:#?}", path.display()))
}

/// The table's cells of the row whose path is `path` (the header names the columns).
#[track_caller]
fn table_row(
    repo: &TestRepo,
    path: &Path,
    extra: &[&str],
) -> std::collections::BTreeMap<String, String> {
    let mut args = vec!["list"];
    args.extend_from_slice(extra);
    let out = repo.kardwt(&repo.base, &args);
    out.expect_code(0);
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let line = lines
        .find(|l| l.ends_with(path.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{} not listed:\n{out}", path.display()));
    header
        .iter()
        .zip(line.split_whitespace())
        .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
        .collect()
}

#[test]
fn a_modified_or_untracked_file_makes_a_tree_dirty_an_ignored_one_does_not() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[("tracked.txt", "one\n"), (".gitignore", "*.log\n")],
        "files",
    );
    let clean = repo.add_card("1");
    let modified = repo.add_card("2");
    let untracked = repo.add_card("3");
    std::fs::write(clean.join("build.log"), "ignored\n").unwrap();
    std::fs::write(modified.join("tracked.txt"), "two\n").unwrap();
    std::fs::write(untracked.join("new.txt"), "new\n").unwrap();

    let rows = with_status(&repo, &[]);
    assert_eq!(row(&rows, &clean)["dirty"], false, "{rows:#?}");
    assert_eq!(row(&rows, &modified)["dirty"], true, "{rows:#?}");
    assert_eq!(row(&rows, &untracked)["dirty"], true, "{rows:#?}");
    assert_eq!(table_row(&repo, &clean, &[])["DIRTY"], "no");
    assert_eq!(table_row(&repo, &modified, &[])["DIRTY"], "yes");
    assert_eq!(table_row(&repo, &untracked, &[])["DIRTY"], "yes");
    // Reading the status took no lock and changed nothing git keeps.
    assert!(!repo.admin_dir(&modified).join("index.lock").exists());
}

#[test]
fn two_commits_in_a_tree_are_ahead_two() {
    let repo = TestRepo::new();
    let wt = repo.add_card("7");
    for n in 1..=2 {
        std::fs::write(wt.join(format!("work-{n}.txt")), "work\n").unwrap();
        repo.git(&wt, &["add", "-A"]);
        repo.git(&wt, &["commit", "--quiet", "-m", &format!("work {n}")]);
    }
    let rows = with_status(&repo, &[]);
    let r = row(&rows, &wt);
    assert_eq!(
        (r["ahead"].clone(), r["behind"].clone()),
        (2.into(), 0.into()),
        "{r}"
    );
    assert_eq!(r["dirty"], false, "{r}");
    let cells = table_row(&repo, &wt, &[]);
    assert_eq!(
        (cells["AHEAD"].as_str(), cells["BEHIND"].as_str()),
        ("2", "0")
    );
}

#[test]
fn the_base_moving_on_origin_counts_as_behind_once_it_is_fetched() {
    let repo = TestRepo::new();
    let wt = repo.add_card("8");
    repo.commit_on_origin("moved on");
    // Not fetched yet: the remote-tracking ref is where it was.
    let r = row(&with_status(&repo, &[]), &wt).clone();
    assert_eq!(
        (r["ahead"].clone(), r["behind"].clone()),
        (0.into(), 0.into()),
        "{r}"
    );
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
    let r = row(&with_status(&repo, &[]), &wt).clone();
    assert_eq!(
        (r["ahead"].clone(), r["behind"].clone()),
        (0.into(), 1.into()),
        "{r}"
    );
    assert_eq!(table_row(&repo, &wt, &[])["BEHIND"], "1");
}

#[test]
fn without_a_remote_tracking_ref_the_recorded_base_commit_is_compared() {
    let repo = TestRepo::new();
    let wt = repo.add_card("9");
    let moved = repo.commit_on_origin("moved on");
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
    repo.git(
        &repo.base,
        &["update-ref", "-d", "refs/remotes/origin/main"],
    );
    // The record names as base the commit the tree started from; the tree moves on to origin's.
    repo.git(&wt, &["merge", "--quiet", "--ff-only", &moved]);
    let r = row(&with_status(&repo, &[]), &wt).clone();
    assert_eq!(
        (r["ahead"].clone(), r["behind"].clone()),
        (1.into(), 0.into()),
        "{r}"
    );
}

#[test]
fn a_budget_of_zero_shows_question_marks_and_leaves_no_git_running() {
    let repo = TestRepo::new();
    let wt = repo.add_card("4");
    std::fs::write(wt.join("new.txt"), "new\n").unwrap();
    let cells = table_row(&repo, &wt, &["--budget", "0"]);
    for column in ["DIRTY", "AHEAD", "BEHIND"] {
        assert_eq!(cells[column], "?", "{column}: {cells:?}");
    }
    assert_eq!(cells["STATE"], "ready", "{cells:?}");
    let rows = with_status(&repo, &["--budget", "0"]);
    let r = row(&rows, &wt);
    for key in ["dirty", "ahead", "behind"] {
        assert_eq!(r[key], Value::Null, "{key}: {r}");
    }
    assert_nothing_running_under(&repo.tmp, "list --budget 0");
}

#[test]
fn json_status_adds_three_fields_and_plain_json_keeps_its_shape() {
    let repo = TestRepo::new();
    let wt = repo.add_card("5");
    let gone = repo.add_gone_worktree();
    let rows = with_status(&repo, &[]);
    let r = row(&rows, &wt);
    assert_eq!(r["dirty"], false, "{r}");
    assert_eq!(r["ahead"], 0, "{r}");
    assert_eq!(r["behind"], 0, "{r}");
    assert!(r["age_seconds"].is_u64(), "{r}");
    for key in [
        "card", "state", "branch", "head", "drift", "path", "locked", "ports",
    ] {
        assert!(r.get(key).is_some(), "{key} missing in {r}");
    }
    // A tree whose directory is gone has no status: null, never a guess.
    let g = row(&rows, &gone);
    for key in ["dirty", "ahead", "behind"] {
        assert_eq!(g[key], Value::Null, "{key}: {g}");
    }
    for plain in repo.list_json() {
        for key in ["dirty", "ahead", "behind"] {
            assert!(plain.get(key).is_none(), "plain --json has {key}: {plain}");
        }
    }
    let refused = repo.kardwt(&repo.base, &["list", "--status"]);
    refused.expect_code(2);
    let refused = repo.kardwt(&repo.base, &["list", "--budget", "soon"]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("not a number of seconds"),
        "{refused}"
    );
}

/// A git that does not answer (its fsmonitor hook never returns) is cut at the budget: the
/// tree shows `?` (`null`), and neither git nor the hook it started is left running.
#[cfg(not(feature = "portable"))]
#[test]
fn a_tree_whose_git_hangs_shows_question_marks_and_nothing_it_started_is_left() {
    let repo = TestRepo::new();
    let _reaper = crate::support::procs::Reaper(repo.tmp.clone());
    let hung = repo.add_card("1");
    let fine = repo.add_card("2");
    let hook = repo.tmp.join("fsmonitor-hangs");
    let started = repo.tmp.join("fsmonitor-started");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ntouch {}\nexec sleep 600\n",
            crate::support::sh_quote(&started)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Only this tree's git reads the hook (a per-worktree setting in its admin dir).
    repo.git(&repo.base, &["config", "extensions.worktreeConfig", "true"]);
    repo.git(
        &hung,
        &[
            "config",
            "--worktree",
            "core.fsmonitor",
            // git runs the hook through the shell, and the test's directory holds a space.
            &crate::support::sh_quote(&hook),
        ],
    );

    let rows = with_status(&repo, &["--budget", "3"]);
    assert!(
        started.exists(),
        "git never ran the hook it would have waited for"
    );
    assert_eq!(row(&rows, &hung)["dirty"], Value::Null, "{rows:#?}");
    // The other tree is still listed (its figures depend on how many threads this machine
    // gives the pool, so they are not asserted here).
    assert_eq!(row(&rows, &fine)["state"], "ready", "{rows:#?}");
    assert_nothing_running_under(&repo.tmp, "list past its budget");
}

/// An executable script at `path` with `body` after the `#!/bin/sh` line.
#[cfg(not(feature = "portable"))]
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Past the budget, `list` kills what the late tree's git started and nothing else: a daemon
/// that another tree's git left running on purpose (its fsmonitor hook starts one in a session
/// of its own, and that tree answered in time) is still alive after `list` returns, while the
/// late tree's git and the hook it waits for are gone.
#[cfg(not(feature = "portable"))]
#[test]
fn past_the_budget_only_the_late_trees_git_is_killed_and_another_trees_daemon_lives() {
    let repo = TestRepo::new();
    let _reaper = crate::support::procs::Reaper(repo.tmp.clone());
    let quick = repo.add_card("1");
    let slow = repo.add_card("2");
    let pids = repo.tmp.join("daemon-pids");
    let starts = repo.tmp.join("fsmonitor-starts-daemon");
    script(
        &starts,
        &format!(
            "setsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> {}\nexit 1\n",
            crate::support::sh_quote(&pids)
        ),
    );
    let hangs = repo.tmp.join("fsmonitor-hangs");
    let started = repo.tmp.join("fsmonitor-started");
    script(
        &hangs,
        &format!(
            "touch {}\nexec sleep 600\n",
            crate::support::sh_quote(&started)
        ),
    );
    repo.git(&repo.base, &["config", "extensions.worktreeConfig", "true"]);
    for (tree, hook) in [(&quick, &starts), (&slow, &hangs)] {
        let quoted = crate::support::sh_quote(hook);
        repo.git(tree, &["config", "--worktree", "core.fsmonitor", &quoted]);
    }

    let rows = with_status(&repo, &["--budget", "3"]);
    assert!(started.exists(), "the slow tree's git never ran its hook");
    assert_eq!(row(&rows, &slow)["dirty"], Value::Null, "{rows:#?}");
    let daemons: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap_or_else(|_| panic!("the quick tree's git never ran its hook: {rows:#?}"))
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert!(!daemons.is_empty());
    assert_ne!(row(&rows, &quick)["dirty"], Value::Null, "{rows:#?}");
    // What the slow tree's git started is gone; the quick tree's daemons all live on.
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(30), || {
            crate::support::procs::processes_under(&slow).is_empty()
        }),
        "left running in the late tree: {:?}",
        crate::support::procs::processes_under(&slow)
    );
    let alive: Vec<i32> = crate::support::procs::processes_under(&quick)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    for pid in &daemons {
        assert!(
            alive.contains(pid),
            "list killed the daemon {pid} of a tree that answered in time ({alive:?})"
        );
    }
    for pid in daemons {
        crate::support::procs::sigkill(pid);
    }
}

/// Plain `list --json` stays as cheap as reading git's administration files: it starts no git
/// (a `git` first on PATH that would leave a mark is never run), while `--status` does.
#[test]
fn plain_json_runs_no_git_and_status_does() {
    let repo = TestRepo::new();
    let wt = repo.add_card("6");
    let dir = repo.tmp.join("marking-git");
    std::fs::create_dir_all(&dir).unwrap();
    let mark = repo.tmp.join("git-ran");
    let real = repo.git(&repo.base, &["--exec-path"]);
    let real = std::path::Path::new(real.trim()).join("git");
    std::fs::write(
        dir.join("git"),
        format!(
            "#!/bin/sh\ntouch {}\nexec {} \"$@\"\n",
            crate::support::sh_quote(&mark),
            crate::support::sh_quote(&real)
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        dir.join("git"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let run = |args: &[&str]| {
        repo.spawn_with_env(
            crate::support::BIN,
            &repo.base,
            args,
            &[("PATH", path.as_os_str())],
        )
        .wait(std::time::Duration::from_secs(60))
    };
    let plain = run(&["list", "--json"]);
    plain.expect_code(0);
    assert!(plain.stdout.contains(wt.to_str().unwrap()), "{plain}");
    assert!(!mark.exists(), "plain list --json ran git");
    run(&["list", "--json", "--status"]).expect_code(0);
    assert!(mark.exists(), "the marking git is not the one kardwt runs");
}
