//! `git kardwt add`: creation from a freshly fetched base, the record, the prepare hook's
//! environment, the worktree root and reuse.
use std::path::{Path, PathBuf};

use crate::support::{line, pinned, pinned_case, sh_quote, TestRepo};

/// Push a new branch `branch` to origin (through the scratch clone, left on it) with one commit
/// adding `<branch>.txt`; returns the branch's oid as origin has it.
fn push_new_branch(repo: &TestRepo, branch: &str, content: &str) -> String {
    repo.git(&repo.scratch, &["switch", "--quiet", "-c", branch]);
    std::fs::write(repo.scratch.join(format!("{branch}.txt")), content).unwrap();
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", branch]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", branch]);
    repo.git(
        &repo.origin,
        &["rev-parse", &format!("refs/heads/{branch}")],
    )
    .trim()
    .to_owned()
}

#[test]
fn add_with_origin_ahead_prints_path_on_new_branch_at_origin_oid_and_base_is_untouched() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let old_base_head = repo.git(&repo.base, &["rev-parse", "HEAD"]);
    let new_oid = repo.commit_on_origin("origin moves ahead");
    assert_ne!(old_base_head.trim(), new_oid);
    let before = repo.snapshot_base();

    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(0);
    let wt = repo.tmp.join("base.worktrees").join("card-42");
    assert_eq!(
        out.stdout,
        line(&wt),
        "stdout must be the path alone:\n{out}"
    );
    assert!(wt.is_dir());

    assert_eq!(
        repo.git(&wt, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/card/42"
    );
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), new_oid);
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/heads/card/42"])
            .trim(),
        new_oid
    );
    assert!(wt.join("change-1.txt").is_file(), "full checkout expected");

    let after = repo.snapshot_base();
    assert_eq!(before, after, "the base changed");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "HEAD"]),
        old_base_head,
        "base HEAD moved"
    );
}

#[test]
fn add_json_reports_path_branch_base_oid_state_and_reason() {
    let repo = TestRepo::new();
    let oid = repo.commit_on_origin("ahead");
    let out = repo.kardwt(&repo.base, &["add", "7", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let wt = repo.card_path("7");
    assert_eq!(v["path"], wt.to_str().unwrap(), "{out}");
    assert_eq!(v["branch"], "card/7", "{out}");
    assert_eq!(v["base_oid"], oid.as_str(), "{out}");
    assert_eq!(v["state"], "ready", "{out}");
    assert_eq!(v["reason"], "create", "{out}");

    let again = repo.kardwt(&repo.base, &["add", "7", "--json"]);
    again.expect_code(0);
    let v = again.json();
    assert_eq!(v["path"], wt.to_str().unwrap(), "{again}");
    assert_eq!(v["state"], "ready", "{again}");
    assert_eq!(v["reason"], "reuse", "{again}");
}

#[test]
fn add_without_rules_file_uses_defaults() {
    let repo = TestRepo::new();
    assert!(!repo.rules_path().exists());
    let wt = repo.add_card("1");
    assert!(wt.join("README.md").is_file());
    let rec = repo.record(&wt);
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert!(repo.prepare_runs().is_empty());
}

#[test]
fn record_holds_the_contract_fields_and_nothing_shows_in_status() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let oid = repo.commit_on_origin("ahead");
    let wt = repo.add_card("42");

    let admin = repo.admin_dir(&wt);
    let common = repo.common_dir().canonicalize().unwrap();
    assert_eq!(
        admin.parent().unwrap(),
        common.join("worktrees"),
        "admin dir is not under <common dir>/worktrees"
    );
    assert!(admin.join("kardwt.toml").is_file());

    let rec = repo.record(&wt);
    let s = |k: &str| {
        rec.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("record key {k} missing or not a string: {rec:?}"))
            .to_owned()
    };
    assert_eq!(
        rec.get("schema").and_then(|v| v.as_integer()),
        Some(1),
        "{rec:?}"
    );
    assert_eq!(s("card"), "42");
    assert_eq!(s("board"), "");
    assert_eq!(s("branch"), "card/42");
    assert_eq!(PathBuf::from(s("path")), wt);
    assert_eq!(PathBuf::from(s("common_dir")), common);
    assert_eq!(s("base_remote"), "origin");
    assert_eq!(s("base_ref"), "refs/heads/main");
    assert_eq!(s("base_oid"), oid);
    assert_eq!(s("state"), "ready");
    assert_eq!(s("origin"), "add");
    assert_eq!(s("reason"), "create");
    for k in ["created_at", "updated_at"] {
        let t = s(k);
        assert!(
            is_rfc3339_utc(&t),
            "{k} = {t:?} is not like 2026-11-29T18:00:00Z"
        );
    }
    assert!(s("created_at") <= s("updated_at"));
    let fp = s("config_fingerprint");
    let hex = fp.strip_prefix("sha256:").unwrap_or_else(|| panic!("{fp}"));
    assert_eq!(hex.len(), 64, "{fp}");
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{fp}");
    assert!(
        rec.get("links").and_then(|v| v.as_array()).is_some(),
        "{rec:?}"
    );
    assert!(
        rec.get("ports").and_then(|v| v.as_array()).is_some(),
        "{rec:?}"
    );
    let last = rec
        .get("last_hook")
        .and_then(|v| v.as_table())
        .unwrap_or_else(|| panic!("no [last_hook] after prepare ran: {rec:?}"));
    assert_eq!(last.get("phase").and_then(|v| v.as_str()), Some("prepare"));
    assert_eq!(last.get("exit_code").and_then(|v| v.as_integer()), Some(0));

    let status = repo.git(&wt, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "kardwt left something visible in the worktree");

    // Nothing of kardwt's own directly under worktrees/ (git would prune it).
    for entry in std::fs::read_dir(common.join("worktrees")).unwrap() {
        let p = entry.unwrap().path();
        assert!(p.join("gitdir").is_file(), "{} has no gitdir", p.display());
    }
}

fn is_rfc3339_utc(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 20
        && t.ends_with('Z')
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}

#[test]
fn reuse_returns_the_same_path_and_skips_prepare_unless_on_reuse() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("42");
    assert_eq!(repo.prepare_runs(), ["42 create prepare"]);
    let rec1 = repo.record(&wt);

    let out = repo.kardwt_ok(&repo.base, &["add", "42"]);
    assert_eq!(out, line(&wt));
    assert_eq!(
        repo.prepare_runs(),
        ["42 create prepare"],
        "prepare ran on reuse"
    );
    let rec2 = repo.record(&wt);
    assert_eq!(rec2["state"].as_str(), Some("ready"));
    assert_eq!(rec1["created_at"], rec2["created_at"]);

    repo.write_rules(&repo.rules_with_prepare(true));
    let out = repo.kardwt_ok(&repo.base, &["add", "42"]);
    assert_eq!(out, line(&wt));
    assert_eq!(
        repo.prepare_runs(),
        ["42 create prepare", "42 reuse prepare"]
    );
    let rec3 = repo.record(&wt);
    assert_eq!(rec3["state"].as_str(), Some("ready"));
    assert_eq!(repo.worktrees().len(), 2, "reuse created another worktree");
}

#[test]
fn prepare_runs_in_the_worktree_with_the_kardwt_variables() {
    let repo = TestRepo::new();
    let env_file = repo.tmp.join("env.txt");
    let cwd_file = repo.tmp.join("cwd.txt");
    let script = repo.write_prepare(&format!(
        "env > {}\npwd -P > {}",
        sh_quote(&env_file),
        sh_quote(&cwd_file)
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    let oid = repo.commit_on_origin("ahead");
    let out = repo.kardwt(&repo.base, &["add", "42", "--board", "sprint 3"]);
    out.expect_code(0);
    let wt = repo.card_path("42");
    assert_eq!(out.stdout, line(&wt));

    let cwd = std::fs::read_to_string(&cwd_file).unwrap();
    assert_eq!(cwd.trim_end(), wt.to_str().unwrap());
    let env = std::fs::read_to_string(&env_file).unwrap();
    let get = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} not in the hook's environment:\n{env}"))
            .to_owned()
    };
    let common = repo.common_dir().canonicalize().unwrap();
    assert_eq!(get("KARDWT_CARD"), "42");
    assert_eq!(get("KARDWT_BOARD"), "sprint 3");
    assert_eq!(get("KARDWT_WORKTREE"), wt.to_str().unwrap());
    assert_eq!(get("KARDWT_BASE"), repo.base.to_str().unwrap());
    assert_eq!(get("KARDWT_COMMON_DIR"), common.to_str().unwrap());
    assert_eq!(get("KARDWT_BRANCH"), "card/42");
    assert_eq!(get("KARDWT_BASE_OID"), oid);
    assert_eq!(get("KARDWT_REASON"), "create");
    assert_eq!(get("KARDWT_PHASE"), "prepare");
    assert_eq!(repo.record(&wt)["board"].as_str(), Some("sprint 3"));
}

#[test]
fn root_option_and_git_config_override_the_default_root() {
    let repo = TestRepo::new();
    let custom = repo.tmp.join("custom root");
    let out = repo.kardwt(
        &repo.base,
        &["add", "43", "--root", custom.to_str().unwrap()],
    );
    out.expect_code(0);
    assert_eq!(out.stdout, line(&custom.join("card-43")));
    assert!(!repo.root().exists(), "default root created despite --root");

    let configured = repo.tmp.join("configured root");
    repo.git(
        &repo.base,
        &["config", "kardwt.root", configured.to_str().unwrap()],
    );
    let out = repo.kardwt_ok(&repo.base, &["add", "44"]);
    assert_eq!(out, line(&configured.join("card-44")));
    assert!(!repo.root().exists());
}

#[test]
fn add_from_a_subdirectory_and_from_inside_a_linked_worktree_uses_the_base_root() {
    let repo = TestRepo::new();
    let out = repo.kardwt_ok(&repo.base.join("src"), &["add", "42"]);
    assert_eq!(out, line(&repo.card_path("42")));
    let wt42 = repo.card_path("42");
    let out = repo.kardwt_ok(&wt42.join("src"), &["add", "44"]);
    assert_eq!(
        out,
        line(&repo.card_path("44")),
        "the root must derive from the base, not from the linked worktree"
    );
    let rec = repo.record(&repo.card_path("44"));
    assert_eq!(
        Path::new(rec["common_dir"].as_str().unwrap()),
        repo.common_dir().canonicalize().unwrap()
    );
}

#[test]
fn an_existing_card_branch_is_checked_out_as_is_not_reset() {
    let repo = TestRepo::new();
    let old = repo
        .git(&repo.base, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    repo.git(&repo.base, &["branch", "card/50", &old]);
    let new_oid = repo.commit_on_origin("ahead");
    let wt = repo.add_card("50");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), old);
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "refs/heads/card/50"])
            .trim(),
        old,
        "the kept branch was reset"
    );
    // The branch lacks the fetched base, so the record names where they meet.
    let rec = repo.record(&wt);
    assert_ne!(old, new_oid);
    assert_eq!(rec["base_oid"].as_str(), Some(old.as_str()), "{rec:?}");
}

#[test]
fn messages_go_to_stderr_as_error_lines_and_stdout_stays_empty() {
    let repo = TestRepo::new();
    let out = repo.kardwt(&repo.base, &["add", "a b"]);
    out.expect_code(2);
    assert_eq!(out.stdout, "", "{out}");
    assert!(out.stderr.starts_with("error: "), "{out}");
}

#[test]
fn without_base_ref_the_remote_head_as_the_remote_reports_it_is_used() {
    let repo = TestRepo::new();
    let dev = push_new_branch(&repo, "dev", "dev\n");
    // The remote's HEAD moves; the base's own origin/HEAD still says main.
    repo.git(&repo.origin, &["symbolic-ref", "HEAD", "refs/heads/dev"]);
    let wt = repo.add_card("42");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), dev);
    let rec = repo.record(&wt);
    assert_eq!(rec["base_ref"].as_str(), Some("refs/heads/dev"), "{rec:?}");
    assert_eq!(rec["base_oid"].as_str(), Some(dev.as_str()), "{rec:?}");
}

#[test]
fn a_configured_base_ref_is_fetched_and_a_missing_one_exits_2() {
    let repo = TestRepo::new();
    let release = push_new_branch(&repo, "release", "r\n");
    repo.write_rules("worktree:\n  base:\n    ref: refs/heads/release\n");
    let wt = repo.add_card("42");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), release);
    assert_eq!(
        repo.record(&wt)["base_ref"].as_str(),
        Some("refs/heads/release")
    );

    repo.write_rules("worktree:\n  base:\n    ref: refs/heads/nope\n");
    let out = repo.kardwt(&repo.base, &["add", "43"]);
    out.expect_code(2);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("add_base_ref_missing", pinned_case("base.ref nope", &out))
    });
    assert!(!repo.card_path("43").exists());
    assert!(!repo
        .card_branches()
        .contains(&"refs/heads/card/43".to_owned()));
}

#[test]
fn a_dirty_base_on_another_branch_stays_byte_identical() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.git(&repo.base, &["switch", "--quiet", "-c", "feature/mine"]);
    std::fs::write(repo.base.join("README.md"), "# edited, unstaged\n").unwrap();
    std::fs::write(repo.base.join("src/lib.txt"), "staged\n").unwrap();
    repo.git(&repo.base, &["add", "src/lib.txt"]);
    std::fs::write(repo.base.join("untracked.txt"), "u\n").unwrap();
    std::fs::write(repo.base.join(".env"), "SECRET=1\n").unwrap();
    let oid = repo.commit_on_origin("ahead");
    let before = repo.snapshot_base();
    let wt = repo.add_card("42");
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), oid);
    assert_eq!(repo.snapshot_base(), before, "the base changed");
    assert_eq!(
        repo.git(&repo.base, &["symbolic-ref", "--short", "HEAD"])
            .trim(),
        "feature/mine"
    );
}

#[test]
fn add_fetches_only_the_base_ref_and_moves_no_other_ref_of_the_base() {
    let repo = TestRepo::new();
    repo.git(&repo.scratch, &["switch", "--quiet", "-c", "dev"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "dev"]);
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
    std::fs::write(repo.scratch.join("dev.txt"), "dev\n").unwrap();
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "dev moves"]);
    repo.git(&repo.scratch, &["tag", "v9"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "dev", "v9"]);
    repo.git(&repo.scratch, &["switch", "--quiet", "main"]);
    let main = repo.commit_on_origin("main moves");

    let refs = |repo: &TestRepo| {
        repo.git(
            &repo.base,
            &[
                "for-each-ref",
                "--format=%(refname) %(if)%(symref)%(then)-> %(symref)%(else)%(objectname)%(end)",
            ],
        )
    };
    let before = refs(&repo);
    repo.add_card("42");
    let after = refs(&repo);
    let changed: Vec<_> = after
        .lines()
        .filter(|l| !before.lines().any(|b| b == *l))
        .collect();
    for l in &changed {
        assert!(
            l.starts_with("refs/heads/card/42 ") || *l == format!("refs/remotes/origin/main {main}"),
            "a ref other than origin/main moved or appeared: {l}\nbefore:\n{before}\nafter:\n{after}"
        );
    }
    for l in before.lines() {
        assert!(
            after.lines().any(|a| a == l) || l.starts_with("refs/remotes/origin/main "),
            "{l} vanished or moved"
        );
    }
}

#[test]
fn an_inherited_git_index_file_does_not_reach_kardwts_git_calls() {
    let repo = TestRepo::new();
    let stray = repo.tmp.join("stray-index");
    let before = repo.snapshot_base();
    let out = repo
        .spawn_with_env(
            crate::support::BIN,
            &repo.base,
            &["add", "42"],
            &[("GIT_INDEX_FILE", stray.as_os_str())],
        )
        .wait(crate::support::COMMAND_TIMEOUT);
    out.expect_code(0);
    let wt = repo.card_path("42");
    assert_eq!(out.stdout, line(&wt));
    assert!(
        !stray.exists(),
        "kardwt's git used the caller's GIT_INDEX_FILE"
    );
    assert_eq!(repo.git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(repo.snapshot_base(), before);
}

/// `add 57` where `card-57` is a symlink to card 42's tree is refused (exit 3)
/// naming `card-57` as foreign, without blaming card 42; nothing is created or changed.
#[test]
fn add_refuses_a_symlink_at_the_card_path_naming_it_not_the_card_it_points_to() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    let link = repo.card_path("57");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    let before = crate::support::snapshot(&wt);
    let out = repo.kardwt(&repo.base, &["add", "57"]);
    out.expect_code(3);
    // It names the link, not the card whose tree it points to.
    pinned(&repo).bind(|| insta::assert_snapshot!("add_at_a_symlink", pinned_case("add 57", &out)));
    assert!(!repo.branch_exists("card/57"));
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(crate::support::snapshot(&wt), before);
    assert_eq!(repo.worktrees().len(), 2);
}

/// Re-creating a card on its kept branch never claims a base the branch lacks: the
/// record's base_oid is the merge base of the fetched base and the branch, and status and
/// verify --json say how far behind the base the tree is.
#[test]
fn a_kept_branch_records_the_base_it_really_has_and_says_how_far_behind_it_is() {
    let repo = TestRepo::new();
    let wt = repo.add_card("42");
    std::fs::write(wt.join("work.txt"), "mine\n").unwrap();
    repo.git(&wt, &["add", "work.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "work of card 42"]);
    repo.kardwt_ok(&repo.base, &["remove", "42"]);
    assert!(!wt.exists());
    let moved = repo.commit_on_origin("upstream moved on");

    let wt = repo.add_card("42");
    let tip = repo.git(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    let meet = repo
        .git(&wt, &["merge-base", &moved, &tip])
        .trim()
        .to_owned();
    assert_ne!(meet, moved);
    let rec = repo.record(&wt);
    assert_eq!(rec["base_oid"].as_str(), Some(meet.as_str()), "{rec:?}");

    let status = repo.kardwt_ok(&repo.base, &["status", "42", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v["behind"], 1, "{v}");
    let text = repo.kardwt_ok(&repo.base, &["status", "42"]);
    assert!(
        text.contains("behind:          1 commit of refs/remotes/origin/main"),
        "{text}"
    );
    let verify = repo.kardwt_ok(&repo.base, &["verify", "42", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&verify).unwrap();
    assert_eq!(v["behind"], 1, "{v}");

    // A fresh card starts at the fetched base: behind 0.
    let fresh = repo.add_card("43");
    assert_eq!(
        repo.record(&fresh)["base_oid"].as_str(),
        Some(moved.as_str())
    );
    let v: serde_json::Value =
        serde_json::from_str(&repo.kardwt_ok(&repo.base, &["verify", "43", "--json"])).unwrap();
    assert_eq!(v["behind"], 0, "{v}");
}

/// `add --base BRANCH` creates from that branch of the remote, keeps it in the record
/// (gc and drift judge against it); a branch the remote lacks creates nothing; reusing the card
/// with another base is refused.
#[test]
fn add_base_creates_from_a_branch_the_remote_has_and_a_missing_one_creates_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    // A release branch on origin, one commit ahead of main.
    repo.git(&repo.scratch, &["switch", "--quiet", "-c", "release/1.2"]);
    std::fs::write(repo.scratch.join("RELEASE"), "1.2\n").unwrap();
    repo.git(&repo.scratch, &["add", "RELEASE"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "release 1.2"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "release/1.2"]);
    let tip = repo.git(&repo.scratch, &["rev-parse", "HEAD"]);
    repo.git(&repo.scratch, &["switch", "--quiet", "main"]);

    let out = repo.kardwt(&repo.base, &["add", "42", "--base", "release/1.2"]);
    out.expect_code(0);
    let wt = repo.card_path("42");
    assert!(wt.join("RELEASE").is_file(), "{out}");
    let rec = repo.record(&wt);
    assert_eq!(rec["base_ref"].as_str(), Some("refs/heads/release/1.2"));
    assert_eq!(rec["base_oid"].as_str(), Some(tip.trim()));
    assert_eq!(repo.git(&wt, &["rev-parse", "HEAD"]).trim(), tip.trim());
    repo.kardwt_ok(&repo.base, &["verify", "42"]);

    // Reuse with another base: refused, nothing changed.
    let before = repo.record(&wt);
    let out = repo.kardwt(&repo.base, &["add", "42", "--base", "main"]);
    out.expect_code(3);
    assert_eq!(repo.record(&wt), before, "{out}");
    repo.kardwt_ok(&repo.base, &["add", "42", "--base", "release/1.2"]);

    // A branch the remote lacks: nothing created.
    let refs = repo.all_refs();
    let base_before = repo.snapshot_base();
    let out = repo.kardwt(&repo.base, &["add", "43", "--base", "no-such-branch"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(!repo.card_path("43").exists(), "{out}");
    assert!(!repo.branch_exists("card/43"), "{out}");
    assert_eq!(repo.all_refs(), refs, "{out}");
    assert_eq!(repo.snapshot_base(), base_before);
    assert!(
        !repo.common_dir().join("kardwt/claims/43").exists(),
        "{out}"
    );
    // Not a branch name: a usage error before anything runs.
    let out = repo.kardwt(&repo.base, &["add", "44", "--base", "--upload-pack=x"]);
    out.expect_code(2);
    assert!(!repo.card_path("44").exists(), "{out}");
}

/// `sharing.link` symlinks whole base paths into each tree with the `.env` links'
/// safety: recorded as kardwt's own (not dirt, unlinked on removal, the base's data survives),
/// hidden from `git status`, a link that became a real directory is user work, and a forced-in
/// link never reaches the remote.
#[test]
fn sharing_link_links_base_directories_safely() {
    let repo = TestRepo::new();
    repo.install_hooks();
    std::fs::create_dir_all(repo.base.join("models")).unwrap();
    std::fs::write(repo.base.join("models/weights.bin"), "w\n").unwrap();
    std::fs::create_dir_all(repo.base.join("data/cache")).unwrap();
    std::fs::write(repo.base.join("data/cache/c.txt"), "c\n").unwrap();
    repo.write_rules(&format!(
        "{}  sharing:\n    link: [models, data/cache, not-there]\n",
        repo.rules_with_prepare(false)
    ));
    let base_before = repo.snapshot_base();
    let wt = repo.add_card("42");
    for rel in ["models", "data/cache"] {
        let meta = std::fs::symlink_metadata(wt.join(rel)).unwrap();
        assert!(meta.file_type().is_symlink(), "{rel} is not a link");
        assert_eq!(
            std::fs::read_link(wt.join(rel)).unwrap(),
            repo.base.join(rel)
        );
    }
    assert!(!wt.join("not-there").exists());
    let links = repo.record(&wt)["links"].clone();
    let links: Vec<&str> = links
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        links.contains(&"models") && links.contains(&"data/cache"),
        "{links:?}"
    );
    assert_eq!(
        repo.git(&wt, &["status", "--porcelain"]),
        "",
        "links show in git status"
    );

    // A forced-in shared link never reaches the remote.
    repo.git(&wt, &["add", "-f", "models"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "force the model link in"]);
    let remote_before = repo.git(&repo.base, &["ls-remote", "origin"]);
    let out = repo.git_output(&wt, &["push", "origin", "card/42"]);
    assert_ne!(out.code, 0, "the shared link was pushed:\n{out}");
    assert!(
        out.stderr.contains("models"),
        "blocked for another reason:\n{out}"
    );
    assert_eq!(
        repo.git(&repo.base, &["ls-remote", "origin"]),
        remote_before
    );
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);

    // Clean: removed, the links unlinked, the base's data intact.
    repo.kardwt_ok(&repo.base, &["remove", "42"]);
    assert!(!wt.exists());
    assert_eq!(repo.snapshot_base(), base_before, "the base changed");

    // A link that became a real directory is user work: remove refuses and keeps it.
    let wt = repo.add_card("43");
    std::fs::remove_file(wt.join("models")).unwrap();
    std::fs::create_dir(wt.join("models")).unwrap();
    std::fs::write(wt.join("models/mine.bin"), "mine\n").unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "43"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(wt.join("models/mine.bin").is_file(), "{out}");
}

/// A card root inside another worktree (the base, or a card tree) is refused before anything
/// is created.
#[test]
fn a_card_root_inside_another_worktree_is_refused() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("4");
    let refs = repo.all_refs();
    let card_before = crate::support::snapshot(&wt);
    let mut shown = String::new();
    for (root, card) in [(repo.base.join(".trees"), "5"), (wt.join("nested"), "6")] {
        let base = repo.snapshot_base();
        let out = repo.kardwt(&repo.base, &["add", card, "--root", root.to_str().unwrap()]);
        out.expect_code(3);
        shown.push_str(&pinned_case(&format!("add {card}"), &out));
        assert!(!root.exists(), "{out}");
        assert_eq!(repo.snapshot_base(), base, "{out}");
        assert_eq!(repo.all_refs(), refs, "{out}");
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("add_root_inside_a_worktree", shown));
    assert_eq!(crate::support::snapshot(&wt), card_before);
}
