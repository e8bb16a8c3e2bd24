//! What a dispatcher sees when the prepare hook fails inside a hooked
//! `git worktree add`: a verdict block of at most 500 characters, first and alone on stderr,
//! naming the kept branch, the log file and the retry that works now that the branch exists.
use std::path::{Path, PathBuf};

use crate::support::{pinned, pinned_case, sh_quote, Output, TestRepo};

/// A prepare script that prints `kb` KB of noise (on stdout, as build tools do), then fails with
/// `prepare: missing token FOO_TOKEN` while `<tmp>/<flag>` exists. Returns (flag, script).
fn noisy_failing_prepare(repo: &TestRepo, flag: &str, kb: usize) -> (PathBuf, PathBuf) {
    let flag = repo.tmp.join(flag);
    std::fs::write(&flag, "").unwrap();
    let noise = format!(
        "i=0; while [ $i -lt {} ]; do echo 'noise-line 0123456789 0123456789 0123456789 0123456789 012345678'; i=$((i+1)); done",
        kb * 1024 / 64
    );
    let script = repo.write_prepare(&format!(
        "{noise}\nif [ -e {} ]; then echo 'prepare: missing token FOO_TOKEN, set it in .env' >&2; exit 1; fi",
        sh_quote(&flag)
    ));
    (flag, script)
}

/// kardwt's block: stderr from its `error:` line on (git's own lines come before it).
#[track_caller]
fn block(out: &Output) -> &str {
    let at = out
        .stderr
        .find("error: ")
        .unwrap_or_else(|| panic!("no error block:\n{out}"));
    &out.stderr[at..]
}

/// The command between `a retry (` and `) re-creates` in the block.
#[track_caller]
fn retry_command(out: &Output) -> String {
    let b = block(out);
    let start = b
        .find("a retry (")
        .unwrap_or_else(|| panic!("no retry:\n{out}"))
        + "a retry (".len();
    let end = b[start..]
        .find(") re-creates")
        .unwrap_or_else(|| panic!("no retry sentence:\n{out}"));
    b[start..start + end].to_owned()
}

/// Run `command` through `sh` in the base, as a dispatcher would paste it.
fn run_verbatim(repo: &TestRepo, command: &str) -> Output {
    let out = repo
        .command("sh", &repo.base)
        .args(["-c", command])
        .output()
        .unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: vec![command.to_owned()],
    }
}

fn log_file(repo: &TestRepo, card: &str) -> PathBuf {
    repo.common_dir()
        .join("kardwt/logs")
        .join(format!("{card}.log"))
}

#[test]
fn the_printed_retry_of_a_failed_worktree_add_b_works_as_it_is() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("no-token", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();

    let out = repo.worktree_add(&["../d/card-7", "-b", "feature/card-7"]);
    assert_ne!(out.code, 0, "{out}");
    // The real branch is named, and no card/ branch that does not exist.
    pinned(&repo).bind(|| insta::assert_snapshot!("verdict_after_add_b", block(&out)));
    let tree = repo.sibling("d/card-7");
    let retry = retry_command(&out);
    assert_eq!(
        retry,
        format!("git worktree add {} feature/card-7", sh_quote(&tree)),
        "{out}"
    );
    assert!(!tree.exists() && repo.branch_exists("feature/card-7"));

    // The identical call fails now that the branch exists; the printed one works.
    let identical = repo.worktree_add(&["../d/card-7", "-b", "feature/card-7"]);
    assert_ne!(identical.code, 0, "{identical}");
    assert!(!repo.is_registered(&tree));
    std::fs::remove_file(&flag).unwrap();
    let again = run_verbatim(&repo, &retry);
    again.expect_code(0);
    let rec = repo.record(&tree);
    assert_eq!(rec["state"].as_str(), Some("ready"), "{again}");
    assert_eq!(rec["branch"].as_str(), Some("feature/card-7"));
    assert_eq!(
        repo.prepare_runs(),
        vec!["card-7 create prepare", "card-7 create prepare"]
    );
}

#[test]
fn after_detach_the_block_names_no_branch_and_a_detached_retry() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("no-token", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let branches = repo.git(&repo.base, &["branch", "--list"]);
    let head = repo.git(&repo.base, &["rev-parse", "HEAD"]);

    let out = repo.worktree_add(&["--detach", "../det"]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| insta::assert_snapshot!("verdict_after_detach", block(&out)));
    let tree = repo.sibling("det");
    let retry = retry_command(&out);
    assert_eq!(
        retry,
        format!(
            "git worktree add --detach {} {}",
            sh_quote(&tree),
            head.trim()
        ),
        "{out}"
    );
    assert_eq!(repo.git(&repo.base, &["branch", "--list"]), branches);

    std::fs::remove_file(&flag).unwrap();
    run_verbatim(&repo, &retry).expect_code(0);
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    assert_eq!(repo.git(&repo.base, &["branch", "--list"]), branches);
}

#[test]
fn inside_the_hook_the_output_goes_to_the_log_and_the_verdict_alone_to_stderr() {
    let repo = TestRepo::new();
    let (_flag, script) = noisy_failing_prepare(&repo, "no-token", 5);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();

    let out = repo.worktree_add(&["../d/card-7", "-b", "feature/card-7"]);
    assert_ne!(out.code, 0, "{out}");
    // No hook output on stderr; the verdict names the log and gives the hook's words.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("verdict_inside_the_hook", pinned_case("worktree add", &out))
    });
    let text = block(&out);
    assert!(
        text.chars().count() <= 500,
        "{} chars:\n{text}",
        text.chars().count()
    );
    let log = log_file(&repo, "card-7");
    // Before the block, only git's own lines.
    let before = &out.stderr[..out.stderr.len() - text.len()];
    assert!(
        before
            .lines()
            .all(|l| l.starts_with("Preparing worktree") || l.starts_with("HEAD is now at")),
        "something came before the verdict:\n{out}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.len() > 5 * 1024, "{} bytes", logged.len());
    assert!(logged.contains("noise-line"));
    assert!(logged.contains("prepare: missing token FOO_TOKEN"));

    // The next run's output replaces it; the one before is kept as .1.
    let again = repo.worktree_add(&["../d/card-7", "feature/card-7"]);
    assert_ne!(again.code, 0, "{again}");
    let mut previous = log.clone().into_os_string();
    previous.push(".1");
    assert_eq!(std::fs::read_to_string(&previous).unwrap(), logged);
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("noise-line"));
}

#[test]
fn a_long_path_is_shortened_so_the_retry_and_the_hooks_words_fit() {
    let repo = TestRepo::new();
    let (_flag, script) = noisy_failing_prepare(&repo, "no-token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let long = repo
        .tmp
        .join("a-rather-long-directory-name-for-worktrees/".repeat(6))
        .join("card-9");
    assert!(
        long.display().to_string().chars().count() >= 280,
        "{}",
        long.display()
    );

    let out = repo.worktree_add(&[long.to_str().unwrap(), "-b", "feature/card-9"]);
    assert_ne!(out.code, 0, "{out}");
    let text = block(&out);
    assert!(
        text.chars().count() <= 500,
        "{} chars:\n{text}",
        text.chars().count()
    );
    assert!(text.contains("a retry (git worktree add '"), "{out}");
    assert!(
        text.contains("card-9' feature/card-9) re-creates and re-prepares it"),
        "{out}"
    );
    assert!(text.contains('…'), "{out}");
    assert!(
        text.contains("prepare: missing token"),
        "the hook's words are lost:\n{out}"
    );
    assert!(text.contains("branch feature/card-9 is kept"), "{out}");
    assert!(!Path::new(&long).exists());
}

#[test]
fn add_streams_the_hooks_output_and_add_quiet_logs_it() {
    let repo = TestRepo::new();
    let (_flag, script) = noisy_failing_prepare(&repo, "no-token", 1);
    repo.write_rules(&repo.rules_for(&script, false));

    let out = repo.kardwt(&repo.base, &["add", "5"]);
    out.expect_code(4);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("kardwt[5 prepare]: noise-line")),
        "add does not stream the hook's output:\n{out}"
    );
    assert!(!log_file(&repo, "5").exists());

    let out = repo.kardwt(&repo.base, &["add", "--quiet", "6"]);
    out.expect_code(4);
    // Nothing streamed; the verdict names the log, the retry and the kept branch.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("verdict_of_add_quiet", pinned_case("add --quiet 6", &out))
    });
    assert!(
        out.stderr.starts_with("error: preparing card 6 failed"),
        "{out}"
    );
    assert!(out.stderr.chars().count() <= 500, "{out}");
    let log = log_file(&repo, "6");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("noise-line") && logged.contains("missing token"));
}
