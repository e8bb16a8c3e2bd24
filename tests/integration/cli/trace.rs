//! `KARDWT_TRACE=1`: one line on stderr for every git call kardwt makes, and none without it.
use std::time::Duration;

use crate::support::{sh_quote, TestRepo};

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
    assert!(calls.len() >= 2, "{calls:?}");
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

/// git's list of variables local to a repository is asked for only when the environment holds
/// a `GIT_` variable that could be one: with only global ones (identities, the global config,
/// ceiling directories, what git exports itself) `add` starts no `git rev-parse`;
/// with an unknown `GIT_` variable it asks git first, and the tree is made all the same.
#[test]
fn git_is_asked_for_its_local_variables_only_when_one_could_be_set() {
    let repo = TestRepo::new();
    let (path, log) = logging_git(&repo);
    let add = |card: &str, extra: &[(&str, &std::ffi::OsStr)]| {
        let _ = std::fs::remove_file(&log);
        let mut env = vec![("PATH", path.as_os_str())];
        env.extend_from_slice(extra);
        let out = repo
            .spawn_with_env(crate::support::BIN, &repo.base, &["add", card], &env)
            .wait(Duration::from_secs(60));
        out.expect_code(0);
        assert!(repo.card_path(card).join(".git").is_file(), "{out}");
        std::fs::read_to_string(&log).unwrap()
    };
    let plain = add("v1", &[]);
    assert!(!plain.contains("--local-env-vars"), "{plain}");
    assert!(plain.lines().all(|l| !l.contains(" rev-parse ")), "{plain}");
    // A variable git's own list names (git sets GIT_PREFIX for every hook): the list answers.
    let known = add("v3", &[("GIT_PREFIX", std::ffi::OsStr::new(""))]);
    assert!(!known.contains("--local-env-vars"), "{known}");
    let asked = add("v2", &[("GIT_SOMETHING_NEW", std::ffi::OsStr::new("1"))]);
    assert!(
        asked
            .lines()
            .next()
            .unwrap()
            .contains("rev-parse --local-env-vars"),
        "{asked}"
    );
}
