//! Processes to stop and the cleanup hook: `Sleeper`, rules with a cleanup hook, what it logged, event names.
#![allow(unused_imports, dead_code)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;

use crate::support::{sh_quote, wait_until, yaml_str, TestRepo};

/// A `sleep 300` whose cwd is a directory inside a worktree. Killed on drop if still running.
pub(crate) struct Sleeper {
    pub(crate) child: Child,
}

impl Sleeper {
    pub(crate) fn start(repo: &TestRepo, dir: &Path) -> Sleeper {
        let child = repo
            .command("sleep", dir)
            .arg("300")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // The process really sits in `dir` before the test goes on.
        assert!(
            wait_until(Duration::from_secs(5), || {
                std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir)
            }),
            "sleep {pid} never had its cwd in {}",
            dir.display()
        );
        Sleeper { child }
    }

    pub(crate) fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The exit status once the process ended (waits at most `timeout`).
    pub(crate) fn ended(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let mut status = None;
        wait_until(timeout, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `<tmp>/cleanup.log`: what the cleanup hook saw (outside every worktree).
pub(crate) fn cleanup_log(repo: &TestRepo) -> PathBuf {
    repo.tmp.join("cleanup.log")
}

pub(crate) fn cleanup_lines(repo: &TestRepo) -> Vec<String> {
    std::fs::read_to_string(cleanup_log(repo))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Rules with the standard prepare script and a cleanup hook that logs
/// `<card> <reason> <phase> <cwd>` and `present` when `$KARDWT_WORKTREE` still is a directory,
/// then runs `extra`.
pub(crate) fn rules_with_cleanup(repo: &TestRepo, extra: &str) -> String {
    format!(
        "{}{}",
        repo.rules_with_prepare(false),
        cleanup_rules(repo, extra)
    )
}

/// The `cleanup:` part of the rules (indented under `worktree:`) for the logging cleanup hook
/// of [`rules_with_cleanup`], which then runs `extra`.
pub(crate) fn cleanup_rules(repo: &TestRepo, extra: &str) -> String {
    let log = sh_quote(&cleanup_log(repo));
    let cleanup = repo.write_helper(
        "cleanup",
        &format!(
            "echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_PHASE $(pwd)\" >> {log}\n\
             test -d \"$KARDWT_WORKTREE\" && echo present >> {log}\n{extra}"
        ),
    );
    format!("  cleanup:\n    argv: [{}]\n", yaml_str(&cleanup))
}

pub(crate) fn event_names(repo: &TestRepo, card: &str) -> Vec<String> {
    repo.events(Some(card))
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Commit a populated submodule `sm` (a fresh repository at `<tmp>/sub`) in the worktree `wt`.
pub(crate) fn commit_submodule(repo: &TestRepo, wt: &Path) {
    let sub = repo.tmp.join("sub");
    if !sub.exists() {
        repo.git(&repo.tmp, &["init", "--quiet", "-b", "main", "sub"]);
        std::fs::write(sub.join("s.txt"), "s\n").unwrap();
        repo.git(&sub, &["add", "s.txt"]);
        repo.git(&sub, &["commit", "--quiet", "-m", "s"]);
    }
    let url = sub.to_str().unwrap();
    let allow = ["-c", "protocol.file.allow=always"];
    repo.git(
        wt,
        &[&allow[..], &["submodule", "add", "--quiet", url, "sm"]].concat(),
    );
    repo.git(wt, &["commit", "--quiet", "-m", "submodule sm"]);
}
