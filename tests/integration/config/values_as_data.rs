//! Trust at the edges for the rules file and records: no value becomes
//! an option of git, and the rules file is read as data (regular, at most 1 MiB, a default
//! `kardbrd.yml` symlink resolving inside the base, any nesting decided fast, values quoted
//! at most 40 characters).
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{pinned, pinned_case, sh_quote, Output, TestRepo};

/// A hang guard, not a timing assertion: the old code blocked forever on some of these inputs.
const HANG: Duration = Duration::from_secs(30);

fn kardwt_in(repo: &TestRepo, args: &[&str]) -> Output {
    let mut all = vec!["kardwt"];
    all.extend_from_slice(args);
    repo.spawn("git", &repo.base, &all).wait(HANG)
}

/// `--upload-pack=touch <marker>` as a YAML double-quoted string.
fn upload_pack(marker: &Path) -> String {
    serde_json::to_string(&format!("--upload-pack=touch {}", sh_quote(marker))).unwrap()
}

/// `doctor --try` reports a rules file that does not decode as a problem it found (exit 1)
/// and rehearses nothing; `add` and `config check` exit 2.
#[test]
fn an_option_as_base_remote_or_ref_is_a_configuration_error_that_runs_nothing() {
    let repo = TestRepo::new();
    let marker = repo.tmp.join("pwned");
    for key in ["remote", "ref"] {
        repo.write_rules(&format!(
            "worktree:\n  base:\n    {key}: {}\n",
            upload_pack(&marker)
        ));
        let before = repo.snapshot_base();
        for (args, code) in [
            (&["add", "1"][..], 2),
            (&["doctor", "--try"], 1),
            (&["config", "check"], 2),
        ] {
            let what = format!("{key}: git kardwt {}", args.join(" "));
            let out = kardwt_in(&repo, args);
            assert_eq!(out.code, code, "{what}:\n{out}");
            let named = format!("{out}");
            assert!(
                named.contains(&format!("worktree.base.{key}")),
                "{what}:\n{out}"
            );
            assert!(!marker.exists(), "{what}: git ran the upload-pack program");
            repo.assert_nothing_created(&before, &what);
        }
    }
}

#[test]
fn a_remote_name_git_would_reject_is_a_configuration_error() {
    let repo = TestRepo::new();
    let mut shown = String::new();
    for yaml in [
        "remote: \"-o\"",
        "remote: \"a b\"",
        "remote: \"..\"",
        "ref: refs/heads/a..b",
        "ref: \"refs/heads/-x\"",
        "ref: refs/heads/x.lock",
    ] {
        repo.write_rules(&format!("worktree:\n  base:\n    {yaml}\n"));
        let out = kardwt_in(&repo, &["config", "check"]);
        assert_eq!(out.code, 2, "{yaml}:\n{out}");
        shown.push_str(&pinned_case(yaml, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("base_names_git_rejects", shown));
}

#[test]
fn a_tampered_record_base_is_refused_where_it_is_read() {
    let repo = TestRepo::new();
    let path = repo.add_card("1");
    let marker = repo.tmp.join("pwned");
    let evil = format!("--upload-pack=touch {}", sh_quote(&marker));
    for key in ["base_remote", "base_ref"] {
        let good = repo.record(&path)[key].as_str().unwrap().to_owned();
        repo.edit_record(&path, key, &evil);
        // Using commands refuse it (exit 3), status shows the failed check, gc leaves it.
        for (args, code) in [
            (&["verify", "1"][..], 3),
            (&["remove", "1", "--delete-branch"], 3),
            (&["status", "1"], 0),
            (&["gc"], 0),
            (&["gc", "--apply"], 0),
        ] {
            let what = format!("{key}: git kardwt {}", args.join(" "));
            let out = kardwt_in(&repo, args);
            assert_eq!(out.code, code, "{what}:\n{out}");
            let shown = format!("{out}");
            if args[0] == "status" {
                assert!(shown.contains("FAIL record reads"), "{what}:\n{out}");
            }
            if args[0] != "gc" {
                assert!(shown.contains(key), "{what} does not name {key}:\n{out}");
            }
            assert!(!marker.exists(), "{what}: git ran the upload-pack program");
            assert!(
                repo.is_registered(&path),
                "{what}: the worktree was removed"
            );
            assert_eq!(repo.card_branches(), ["refs/heads/card/1"], "{what}");
        }
        repo.edit_record(&path, key, &good);
        repo.kardwt_ok(&repo.base, &["verify", "1"]);
    }
}

/// The rules file kinds that must be refused before being read, each with what stderr names.
#[test]
fn a_rules_file_that_is_not_a_small_regular_file_is_refused_unread() {
    let repo = TestRepo::new();
    let before = repo.snapshot_base();

    // A FIFO with no writer: opening it must not block.
    let status = std::process::Command::new("mkfifo")
        .arg(repo.rules_path())
        .status()
        .unwrap();
    assert!(status.success());
    let mut shown = String::new();
    let mut refused = |what: &str, args: &[&str]| {
        let out = kardwt_in(&repo, args);
        assert_eq!(out.code, 2, "{what}, {args:?}:\n{out}");
        shown.push_str(&pinned_case(&format!("{what}: {}", args.join(" ")), &out));
    };
    for args in [&["config", "check"][..], &["add", "1"]] {
        refused("a FIFO", args);
    }
    std::fs::remove_file(repo.rules_path()).unwrap();

    // A device named explicitly is refused too; the default name may not even lead there.
    refused("a device", &["--rules", "/dev/zero", "config", "check"]);
    std::os::unix::fs::symlink("/dev/zero", repo.rules_path()).unwrap();
    for args in [&["config", "check"][..], &["add", "1"]] {
        refused("a link to a device", args);
    }
    std::fs::remove_file(repo.rules_path()).unwrap();

    // A directory.
    std::fs::create_dir(repo.rules_path()).unwrap();
    refused("a directory", &["config", "check"]);
    std::fs::remove_dir(repo.rules_path()).unwrap();

    // More than 1 MiB, even of comments; exactly 1 MiB is read.
    let mut text = "# ".repeat(1 << 19);
    repo.write_rules(&format!("{text}x"));
    refused("1 MiB and a byte", &["config", "check"]);
    pinned(&repo).bind(|| insta::assert_snapshot!("rules_files_refused_unread", shown));
    text.truncate((1 << 20) - 1);
    repo.write_rules(&format!("{text}\n"));
    kardwt_in(&repo, &["config", "check"]).expect_code(0);
    std::fs::remove_file(repo.rules_path()).unwrap();

    repo.assert_nothing_created(&before, "refused rules files");
}

#[test]
fn a_default_rules_symlink_must_resolve_inside_the_base() {
    let repo = TestRepo::new();
    let rules = "worktree:\n  action_timeout_seconds: 77\n";
    let outside: PathBuf = repo.tmp.join("outside.yml");
    std::fs::write(&outside, rules).unwrap();
    std::os::unix::fs::symlink(&outside, repo.rules_path()).unwrap();
    let outside_out = kardwt_in(&repo, &["config", "check"]);
    assert_eq!(outside_out.code, 2, "{outside_out}");
    let out = kardwt_in(&repo, &["add", "1"]);
    assert_eq!(out.code, 2, "{out}");

    // A dangling link is refused, not taken for an absent file.
    std::fs::remove_file(repo.rules_path()).unwrap();
    std::os::unix::fs::symlink(repo.base.join("nowhere.yml"), repo.rules_path()).unwrap();
    let out = kardwt_in(&repo, &["config", "check"]);
    assert_eq!(out.code, 2, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "rules_symlinks_refused",
            pinned_case("to a file outside the base", &outside_out)
                + &pinned_case("dangling", &out)
        )
    });

    // Inside the base it is followed; a path named with --rules is the user's own choice.
    std::fs::remove_file(repo.rules_path()).unwrap();
    std::fs::write(repo.base.join("rules.yml"), rules).unwrap();
    std::os::unix::fs::symlink("rules.yml", repo.rules_path()).unwrap();
    let out = kardwt_in(&repo, &["config", "check"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("77"), "{out}");
    let named = outside.to_str().unwrap();
    let out = kardwt_in(&repo, &["--rules", named, "config", "check"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("77"), "{out}");
}

#[test]
fn a_100000_level_document_under_another_key_is_decided_fast() {
    let repo = TestRepo::new();
    let n = 100_000;
    let mut shown = String::new();
    for (name, deep) in ["flow sequences", "flow mappings"].into_iter().zip([
        format!("other: {}{}\n", "[".repeat(n), "]".repeat(n)),
        format!("other: {}1{}\n", "{a: ".repeat(n), "}".repeat(n)),
    ]) {
        repo.write_rules(&deep);
        for args in [&["config", "check"][..], &["add", "1"]] {
            let out = kardwt_in(&repo, args);
            assert_eq!(out.code, 2, "{args:?}:\n{out}");
            shown.push_str(&pinned_case(&format!("{name}: {}", args.join(" ")), &out));
        }
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("rules_nesting_too_deeply", shown));
    // Deep block nesting costs nothing extra: it is decoded (and ignored).
    repo.write_rules(&format!("other:\n{}x\n", "- ".repeat(n)));
    kardwt_in(&repo, &["config", "check"]).expect_code(0);
}

#[test]
fn a_rules_symlink_to_env_never_prints_the_secret() {
    let repo = TestRepo::new();
    let secret = "hunter2-0123456789abcdef0123456789abcdef";
    std::fs::write(
        repo.base.join(".env"),
        format!("SECRET={secret}\nAPI_TOKEN={secret}\n"),
    )
    .unwrap();
    std::os::unix::fs::symlink(".env", repo.rules_path()).unwrap();
    for (args, code) in [
        (&["config", "check"][..], 2),
        (&["add", "1"], 2),
        (&["doctor", "--try"], 1),
    ] {
        let out = kardwt_in(&repo, args);
        assert_eq!(out.code, code, "{args:?}:\n{out}");
        assert!(!out.stderr.contains("hunter2"), "{args:?}:\n{out}");
        assert!(!out.stdout.contains("hunter2"), "{args:?}:\n{out}");
    }
    // Inside the block, any value is cut at 40 characters.
    let long = format!("{secret}-{secret}");
    repo.write_rules(&format!("worktree:\n  checkout:\n    mode: {long}\n"));
    let out = kardwt_in(&repo, &["config", "check"]);
    assert_eq!(out.code, 2, "{out}");
    pinned(&repo).bind(|| insta::assert_snapshot!("rules_value_cut_at_40", out.stderr));
}

/// pre-push reads its refs and oids from standard input: outside operands that git must never
/// read as options (`git log --output=FILE` would write a file and let the push through).
#[test]
fn a_pre_push_oid_is_never_an_option() {
    use std::io::Write as _;
    let repo = TestRepo::new();
    // Relative (git runs in the base): the test's own paths hold a space, which would split
    // the input line.
    let marker = repo.base.join("pwned");
    let zero = "0".repeat(40);
    let head = repo
        .git(&repo.base, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    for line in [
        format!("refs/heads/main --output=pwned refs/heads/main {zero}"),
        format!("refs/heads/main --output=pwned refs/heads/main {head}"),
    ] {
        let origin = repo.origin.to_str().unwrap();
        let mut child = repo
            .command("git", &repo.base)
            .args(["kardwt", "hook", "pre-push", "origin", origin])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{line}").unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !marker.exists(),
            "{line}: git log wrote the --output file\n{stderr}"
        );
        assert!(
            !out.status.success(),
            "{line}: the push was let through\n{stderr}"
        );
    }
}

/// The other ways in read the same rules: the post-checkout hook, `prepare --path` and `adopt`
/// refuse an option-like remote too, write no record and run nothing.
#[test]
fn every_path_that_reads_the_rules_refuses_an_option_as_remote() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let marker = repo.tmp.join("pwned");
    repo.add_unhooked_worktree("../plain", "card/7");
    let plain = repo.sibling("plain");
    repo.write_rules(&format!(
        "worktree:\n  base:\n    remote: {}\n",
        upload_pack(&marker)
    ));

    let out = repo.worktree_add(&["--quiet", "../hooked", "-b", "card/8"]);
    assert_ne!(out.code, 0, "the post-checkout hook let it through:\n{out}");
    assert!(format!("{out}").contains("worktree.base.remote"), "{out}");
    let hooked = repo.sibling("hooked");
    assert!(
        !hooked.join(".git").exists() || !repo.record_path(&hooked).exists(),
        "the hook wrote a record"
    );

    let plain_arg = plain.to_str().unwrap();
    for args in [
        &["prepare", "--path", plain_arg][..],
        &["adopt", "7", "--path", plain_arg],
    ] {
        let out = kardwt_in(&repo, args);
        assert_eq!(out.code, 2, "{args:?}:\n{out}");
        assert!(
            out.stderr.contains("worktree.base.remote"),
            "{args:?}:\n{out}"
        );
        assert!(
            !repo.admin_dir(&plain).join("kardwt.toml").exists(),
            "{args:?} wrote a record"
        );
    }
    assert!(!marker.exists(), "git ran the upload-pack program");
}

/// The guard against deep flow nesting refuses no honest file: 4,000 shallow flow collections
/// of another tool (150 KB) decode, and the `worktree:` block after them is read.
#[test]
fn a_large_file_of_shallow_flow_collections_is_decoded() {
    let repo = TestRepo::new();
    let mut text = String::from("board:\n");
    for i in 0..2000 {
        text.push_str(&format!(
            "  card{i}: {{title: \"Task [{i}]\", labels: [bug, ui], owner: someone}}\n"
        ));
    }
    text.push_str("worktree:\n  base: {remote: origin}\n  sharing: {env: link}\n");
    repo.write_rules(&text);
    let out = kardwt_in(&repo, &["config", "check"]);
    out.expect_code(0);
    assert!(out.stdout.contains("env: link"), "{out}");
}
