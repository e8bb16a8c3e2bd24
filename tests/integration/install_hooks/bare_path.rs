//! The hooks as a dispatcher meets them: a bare `PATH` that lacks git-kardwt, shims
//! that name the binary that installed them, and `doctor` checking what each shim names.
use std::path::Path;

use crate::support::{pinned, Output, TestRepo, BIN};

/// A dispatcher's `PATH`: the system directories only, where git is and git-kardwt is not.
const BARE_PATH: &str = "/usr/bin:/bin";

/// Run `git args…` in `dir` as a dispatcher would, with [`BARE_PATH`].
fn git_bare(repo: &TestRepo, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = repo.command("git", dir);
    cmd.env("PATH", BARE_PATH).args(args);
    let out = cmd.output().expect("run git");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    }
}

fn shim(repo: &TestRepo, name: &str) -> std::path::PathBuf {
    repo.common_dir().join("hooks").join(name)
}

/// Make an installed shim look like one from before shims named their binary (or one naming
/// `exe`).
fn rename_binary(repo: &TestRepo, name: &str, exe: &str) {
    let path = shim(repo, name);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().find(|l| l.starts_with("kardwt=")).unwrap();
    let text = text.replacen(line, &format!("kardwt='{exe}'"), 1);
    std::fs::write(&path, text).unwrap();
}

fn finding<'a>(doctor: &'a serde_json::Value, check: &str) -> &'a serde_json::Value {
    doctor["checks"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["check"] == check))
        .unwrap_or_else(|| panic!("no finding {check:?} in {doctor}"))
}

#[test]
fn a_bare_path_worktree_add_is_seeded_through_the_shims_named_binary() {
    // The premise: only the shim's absolute path can reach kardwt from the bare PATH.
    assert!(!Path::new("/usr/bin/git-kardwt").exists() && !Path::new("/bin/git-kardwt").exists());
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    repo.write_rules(&repo.rules_sharing(&repo.write_prepare("")));
    repo.install_hooks();
    let text = std::fs::read_to_string(shim(&repo, "post-checkout")).unwrap();
    let canonical = std::fs::canonicalize(BIN).unwrap();
    let named = text
        .lines()
        .find_map(|l| l.strip_prefix("kardwt="))
        .map(|q| q.trim_matches('\''))
        .unwrap_or_default();
    assert!(
        Path::new(named).is_absolute()
            && std::fs::canonicalize(named).is_ok_and(|c| c == canonical),
        "the shim does not name the installing binary:\n{text}"
    );

    let out = git_bare(&repo, &repo.base, &["worktree", "add", "../np", "-b", "np"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(!out.stderr.contains("is not a git command"), "{out}");
    let np = repo.sibling("np");
    assert_eq!(repo.record(&np)["state"].as_str(), Some("ready"));
    assert!(np.join(".env").is_symlink(), "the tree was not seeded");
    assert_eq!(repo.prepare_runs(), vec!["np create prepare"]);

    // And a push from the base, with the same bare PATH, passes the pre-push shim.
    repo.commit_files(&[("notes.txt", "a note\n")], "a note");
    let push = git_bare(
        &repo,
        &repo.base,
        &["push", "--quiet", "origin", "HEAD:refs/heads/notes"],
    );
    assert_eq!(push.code, 0, "{push}");
    assert!(
        repo.events(None)
            .iter()
            .any(|e| e["event"] == "push-checked"),
        "the pre-push hook did not reach kardwt"
    );
}

/// A package manager's link on PATH (Homebrew's `bin/git-kardwt`) is what the shims name, not
/// the versioned file behind it, which an upgrade moves.
#[test]
fn the_shims_name_the_link_on_path_that_leads_to_this_binary() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    // A prefix without a space (the harness's directory has one), so the post-checkout shim's
    // first line can name the link too.
    let prefix = tempfile::Builder::new()
        .prefix("kardwt-prefix")
        .tempdir()
        .unwrap();
    let links = prefix.path().join("bin");
    assert!(
        !links.to_string_lossy().contains(' '),
        "{}",
        links.display()
    );
    std::fs::create_dir_all(&links).unwrap();
    let link = links.join("git-kardwt");
    std::os::unix::fs::symlink(std::fs::canonicalize(BIN).unwrap(), &link).unwrap();
    let mut path = std::ffi::OsString::from(&links);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let out = repo
        .spawn_with_env(
            &link,
            &repo.base,
            &["install-hooks", "--direct"],
            &[("PATH", path.as_os_str())],
        )
        .wait(std::time::Duration::from_secs(60));
    assert_eq!(out.code, 0, "{out}");
    for name in ["post-checkout", "pre-push"] {
        let text = std::fs::read_to_string(shim(&repo, name)).unwrap();
        assert!(
            text.contains(&format!("\nkardwt={}\n", link.display())),
            "{name} does not name the link:\n{text}"
        );
    }
    let text = std::fs::read_to_string(shim(&repo, "post-checkout")).unwrap();
    assert!(
        text.starts_with(&format!("#!{} hook-shim\n", link.display())),
        "{text}"
    );
    let out = git_bare(&repo, &repo.base, &["worktree", "add", "../ln", "-b", "ln"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        repo.record(&repo.sibling("ln"))["state"].as_str(),
        Some("ready")
    );
}

/// The shell shim (written where the binary's path cannot be a first line) falls back to
/// `git kardwt` on the caller's PATH when the binary it names is gone.
#[test]
fn a_shell_shim_naming_a_gone_binary_falls_back_to_path() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    rename_binary(&repo, "post-checkout", "/nonexistent/git-kardwt");
    let path = shim(&repo, "post-checkout");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&path, text.replacen(first, "#!/bin/sh", 1)).unwrap();
    // The harness's PATH holds git-kardwt: the fallback finds it.
    let out = repo.worktree_add(&["../fb", "-b", "fb"]);
    out.expect_code(0);
    assert_eq!(
        repo.record(&repo.sibling("fb"))["state"].as_str(),
        Some("ready")
    );
    // The bare PATH has nothing to fall back to: git says so and the tree is not seeded.
    let out = git_bare(
        &repo,
        &repo.base,
        &["worktree", "add", "../fb2", "-b", "fb2"],
    );
    assert!(out.stderr.contains("is not a git command"), "{out}");
}

/// The post-checkout shim git starts through the binary itself cannot fall back: with that
/// binary gone git says it cannot run the hook, the checkout itself is done, and `doctor`
/// says what happened and how to mend it.
#[test]
fn a_direct_shim_whose_binary_is_gone_is_reported_by_git_and_by_doctor() {
    let repo = TestRepo::new();
    repo.kardwt_ok(&repo.base, &["install-hooks", "--direct"]);
    let path = shim(&repo, "post-checkout");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.ends_with(" hook-shim"), "{text}");
    let gone = "/nonexistent/git-kardwt";
    let text = text.replacen(first, &format!("#!{gone} hook-shim"), 1);
    std::fs::write(&path, &text).unwrap();
    rename_binary(&repo, "post-checkout", gone);
    let out = repo.git_output(&repo.base, &["switch", "--quiet", "-c", "topic"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("cannot exec"), "{out}");
    assert_eq!(
        repo.git(&repo.base, &["branch", "--show-current"]).trim(),
        "topic"
    );
    let doctor = repo.kardwt(&repo.base, &["doctor", "--json"]);
    doctor.expect_code(1);
    let json = doctor.json();
    let f = finding(&json, "post-checkout shim binary");
    assert_eq!(f["ok"], false, "{doctor}");
    let detail = f["detail"].as_str().unwrap();
    assert!(
        detail.contains(gone) && detail.contains("git cannot run the post-checkout hook"),
        "{doctor}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("install-hooks"),
        "{doctor}"
    );
    repo.install_hooks();
    repo.git(&repo.base, &["switch", "--quiet", "main"]);
}

#[test]
fn doctor_checks_the_binary_each_shim_names_and_install_hooks_updates_old_shims() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let doctor = repo.kardwt(&repo.base, &["doctor", "--json"]);
    let json = doctor.json();
    let mut shown = Vec::new();
    for name in ["post-checkout", "pre-push"] {
        let f = finding(&json, &format!("{name} shim binary"));
        assert_eq!(f["ok"], true, "{doctor}");
        shown.push(f.clone());
    }

    // A shim from before the binary was named, and one naming a binary that is gone.
    rename_binary(&repo, "post-checkout", "");
    rename_binary(&repo, "pre-push", "/nonexistent/git-kardwt");
    let doctor = repo.kardwt(&repo.base, &["doctor", "--json"]);
    doctor.expect_code(1);
    let json = doctor.json();
    let old = finding(&json, "post-checkout shim binary");
    assert_eq!(old["ok"], false, "{doctor}");
    let gone = finding(&json, "pre-push shim binary");
    assert_eq!(gone["ok"], false, "{doctor}");
    // Each shim's binary named; then the old shim said to name none, the gone binary named,
    // and install-hooks the fix.
    shown.extend([old.clone(), gone.clone()]);
    let shown = serde_json::to_string_pretty(&shown).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("doctor_shim_binaries", shown));

    let out = repo.install_hooks();
    assert_eq!(out.matches("updated ").count(), 2, "{out}");
    let json = repo.kardwt(&repo.base, &["doctor", "--json"]).json();
    for name in ["post-checkout", "pre-push"] {
        assert_eq!(
            finding(&json, &format!("{name} shim binary"))["ok"],
            true,
            "{json}"
        );
    }
    // Up to date now: a second install changes nothing.
    let out = repo.install_hooks();
    assert_eq!(out.matches("already installed").count(), 2, "{out}");
}

/// What `remove` prints and the event log keeps are words, not Rust debug text.
#[test]
fn output_and_the_event_log_carry_words_not_debug_text() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("fail", "no database", 3);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.kardwt(&repo.base, &["add", "1"]).expect_code(4);
    std::fs::remove_file(&flag).unwrap();
    let path = repo.card_path("2");
    repo.kardwt_ok(&repo.base, &["add", "2"]);
    let mut sleeper = repo.spawn("sleep", &path, &["300"]);
    let out = repo.kardwt(&repo.base, &["remove", "2", "--grace", "5"]);
    sleeper.kill();
    out.expect_code(0);

    let events = repo.events(None);
    let outcome = |event: &str, card: &str| {
        events
            .iter()
            .find(|e| e["event"] == event && e["card"] == card)
            .and_then(|e| e["outcome"].as_str())
            .unwrap_or_else(|| panic!("no {event} event for card {card}: {events:?}"))
            .to_owned()
    };
    assert_eq!(outcome("failed", "1"), "prepare hook exited 3");
    let released = outcome("released", "2");
    assert!(
        released.starts_with("1 process (") && released.ends_with(") terminated"),
        "{released}"
    );
    for e in &events {
        let text = e["outcome"].as_str().unwrap_or_default();
        for debug in ["Exited(", "Cap", "Deadline", "[]", "[\"", "1 processes"] {
            assert!(!text.contains(debug), "debug text {debug:?} in {e}");
        }
    }
    for debug in ["Exited(", "terminated [", "killed ["] {
        assert!(
            !out.stdout.contains(debug) && !out.stderr.contains(debug),
            "{out}"
        );
    }
}
