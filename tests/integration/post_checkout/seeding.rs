//! Seeding through git itself: with the hooks installed, a plain
//! `git worktree add` (no kardwt command involved) is recorded, shared and prepared; a clone is
//! not; a failing prepare makes `git worktree add` itself fail and leaves nothing behind; the
//! hook inside `git kardwt add` is a no-op; `delegated` checkout shares after the prepare hook.
use std::path::{Path, PathBuf};

use crate::support::{pinned, pinned_case, sh_quote, TestRepo};

/// Commit a tracked, not ignored `.env.example` and tracked `.agents/skills`, then give the
/// base ignored `.env`/`.env.local`, an untracked but not ignored `.env.shared`, and an
/// untracked `.claude/skills`.
fn base_with_shareables(repo: &TestRepo) {
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\n!.env.example\n!.env.shared\n"),
            (".env.example", "EXAMPLE=tracked\n"),
            (".agents/skills/tracked.md", "tracked skill\n"),
        ],
        "tracked env example and skills",
    );
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::write(repo.base.join(".env.local"), "LOCAL=base\n").unwrap();
    std::fs::write(repo.base.join(".env.shared"), "SHARED=not ignored\n").unwrap();
    std::fs::create_dir_all(repo.base.join(".claude/skills")).unwrap();
    std::fs::write(repo.base.join(".claude/skills/base.md"), "base skill\n").unwrap();
    std::fs::create_dir_all(repo.base.join(".agents/skills")).unwrap();
    std::fs::write(repo.base.join(".agents/skills/untracked.md"), "base only\n").unwrap();
}

/// A prepare script that logs the usual line and, into `<tmp>/seen.log`, what sharing had
/// already done when it ran.
fn prepare_that_looks(repo: &TestRepo) -> (PathBuf, PathBuf) {
    let seen = repo.tmp.join("seen.log");
    let script = repo.write_prepare(&format!(
        "{{ echo \"card=$KARDWT_CARD\"; \
         test -L .env && echo env-linked; \
         test -L .env.local && echo env-local-linked; \
         test -L .claude/skills && echo skills-linked; \
         ls -la; }} >> {}",
        sh_quote(&seen)
    ));
    (script, seen)
}

fn is_symlink(p: &Path) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn a_plain_git_worktree_add_is_recorded_shared_and_prepared() {
    let repo = TestRepo::new();
    base_with_shareables(&repo);
    let (script, seen) = prepare_that_looks(&repo);
    repo.write_rules(&repo.rules_sharing(&script));
    repo.install_hooks();

    let out = repo.worktree_add(&["../x", "-b", "feature/x"]);
    out.expect_code(0);
    let wt = repo.sibling("x");
    assert!(wt.is_dir(), "{out}");

    // .env and .env.* that the base ignores and does not track are linked to the base's.
    for name in [".env", ".env.local"] {
        let p = wt.join(name);
        assert!(is_symlink(&p), "{name} is not a link:\n{out}");
        assert_eq!(std::fs::read_link(&p).unwrap(), repo.base.join(name));
    }
    // tracked (.env.example) stays the checked-out file; not ignored (.env.shared) is not linked.
    let example = wt.join(".env.example");
    assert!(!is_symlink(&example), "a tracked .env.example was replaced");
    assert_eq!(
        std::fs::read_to_string(&example).unwrap(),
        "EXAMPLE=tracked\n"
    );
    assert!(
        wt.join(".env.shared").symlink_metadata().is_err(),
        "an untracked but not ignored .env.shared was linked"
    );
    // The base's .claude/skills is linked (the worktree has none); tracked skills win.
    let skills = wt.join(".claude/skills");
    assert!(is_symlink(&skills), ".claude/skills not linked");
    assert_eq!(
        std::fs::read_link(&skills).unwrap(),
        repo.base.join(".claude/skills")
    );
    let agents = wt.join(".agents/skills");
    assert!(!is_symlink(&agents), "tracked .agents/skills was replaced");
    assert!(agents.join("tracked.md").is_file());
    assert!(
        !agents.join("untracked.md").exists(),
        "tracked skills were touched"
    );
    // The skills link is kept out of git status by the shared exclude block.
    let exclude = std::fs::read_to_string(repo.common_dir().join("info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/.claude/skills"), "{exclude}");
    assert_eq!(
        repo.git(&wt, &["status", "--porcelain"]),
        "",
        "the links show in git status"
    );

    // A record with origin hook, card derived from the admin dir, links listed.
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("hook"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert_eq!(rec["card"].as_str(), Some("x"), "{rec:?}");
    assert_eq!(rec["branch"].as_str(), Some("feature/x"), "{rec:?}");
    let links: Vec<&str> = rec["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for l in [".env", ".env.local", ".claude/skills"] {
        assert!(links.contains(&l), "{l} not in links {links:?}");
    }
    assert!(
        !links
            .iter()
            .any(|l| l.contains("example") || l.contains("shared") || l.contains(".agents")),
        "{links:?}"
    );

    // It verifies.
    let out = repo.kardwt(&repo.base, &["verify", "--path", "../x"]);
    out.expect_code(0);

    // Prepare ran once, after sharing.
    assert_eq!(repo.prepare_runs(), vec!["x create prepare"]);
    let seen = std::fs::read_to_string(&seen).unwrap();
    for what in ["card=x", "env-linked", "env-local-linked", "skills-linked"] {
        assert!(
            seen.lines().any(|l| l == what),
            "sharing had not happened before prepare ({what} missing):\n{seen}"
        );
    }

    // The event log tells the story.
    let events = repo.events(Some("x"));
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for e in ["created", "seeded", "prepared"] {
        assert!(names.contains(&e), "{e} not logged: {events:#?}");
    }
    let created = events.iter().find(|e| e["event"] == "created").unwrap();
    assert_eq!(created["outcome"], "hook", "{created}");
    for key in ["time", "event", "card", "path", "outcome", "duration_ms"] {
        assert!(created.get(key).is_some(), "{key} missing: {created}");
    }
}

#[test]
fn a_card_branch_gives_the_card_id_and_the_base_is_untouched() {
    let repo = TestRepo::new();
    base_with_shareables(&repo);
    let (script, _) = prepare_that_looks(&repo);
    repo.write_rules(&repo.rules_sharing(&script));
    repo.install_hooks();
    let before = repo.snapshot_base();
    let out = repo.worktree_add(&["../card-77", "-b", "card/77"]);
    out.expect_code(0);
    let wt = repo.sibling("card-77");
    let rec = repo.record(&wt);
    assert_eq!(rec["card"].as_str(), Some("77"), "{rec:?}");
    assert_eq!(rec["origin"].as_str(), Some("hook"), "{rec:?}");
    assert_eq!(repo.prepare_runs(), vec!["77 create prepare"]);
    repo.kardwt_ok(&repo.base, &["verify", "77"]);
    // The shared exclude block hides only kardwt's link: the base's own untracked
    // .claude/skills stays in its status, so nothing of the base changed at all.
    let after = repo.snapshot_base();
    assert!(
        before == after,
        "seeding changed the base's files, HEAD, index or status"
    );
}

#[test]
fn a_git_clone_with_the_same_hooks_is_not_seeded() {
    let repo = TestRepo::new();
    base_with_shareables(&repo);
    let (script, seen) = prepare_that_looks(&repo);
    repo.write_rules(&repo.rules_sharing(&script));
    // A foreign hook of the user's, chained by install-hooks: proves the shim ran in the clone.
    let hooks = repo.common_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let fired = repo.tmp.join("user-hook-fired");
    let user = hooks.join("post-checkout");
    std::fs::write(
        &user,
        format!("#!/bin/sh\necho \"$PWD $*\" >> {}\n", sh_quote(&fired)),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&user, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.install_hooks();
    assert!(hooks.join("post-checkout.kardwt-chained").is_file());

    let clone = repo.sibling("clone");
    let hooks_path = format!("core.hooksPath={}", hooks.display());
    let rules = format!("kardwt.rules={}", repo.rules_path().display());
    let out = repo.git_output(
        &repo.tmp,
        &[
            "clone",
            "-c",
            &hooks_path,
            "-c",
            &rules,
            "origin.git",
            "clone",
        ],
    );
    out.expect_code(0);
    let fired = std::fs::read_to_string(&fired).unwrap_or_default();
    assert!(
        fired.contains(clone.to_str().unwrap()) && fired.contains(&"0".repeat(40)),
        "the shim (and the chained hook) did not run in the clone: {fired:?}\n{out}"
    );
    assert!(repo.prepare_runs().is_empty(), "{:?}", repo.prepare_runs());
    assert!(!seen.exists(), "prepare ran for a clone");
    assert!(!clone.join(".git/kardwt.toml").exists());
    assert!(
        !clone.join(".git/kardwt").join("events.jsonl").exists()
            || !std::fs::read_to_string(clone.join(".git/kardwt/events.jsonl"))
                .unwrap()
                .contains("\"created\""),
        "a clone was recorded"
    );
    let exclude = std::fs::read_to_string(clone.join(".git/info/exclude")).unwrap_or_default();
    assert!(!exclude.contains("git-kardwt"), "{exclude}");
    assert!(
        !is_symlink(&clone.join(".claude/skills")) && !is_symlink(&clone.join(".env")),
        "a clone got links"
    );
    assert!(repo.list_json().is_empty(), "{:?}", repo.list_json());
}

#[test]
fn a_failing_prepare_makes_git_worktree_add_fail_and_leaves_no_tree() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("no-token", "no token", 1);
    repo.write_rules(&repo.rules_sharing(&script));
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    repo.install_hooks();

    let y = repo.sibling("y");
    let out = repo.worktree_add(&["../y", "-b", "card/7"]);
    assert_ne!(out.code, 0, "git worktree add must fail:\n{out}");
    // The final message (not the streamed hook lines) says retry first, then the hook's words.
    let message: String = out
        .stderr
        .lines()
        .filter(|l| !l.starts_with("kardwt["))
        .collect::<Vec<_>>()
        .join("\n");
    let retry = message
        .find("retry")
        .unwrap_or_else(|| panic!("no retry in the message:\n{out}"));
    let token = message
        .find("no token")
        .unwrap_or_else(|| panic!("the hook's stderr is not in the message:\n{out}"));
    assert!(
        retry < token,
        "retry must come before the hook's words:\n{out}"
    );
    // The verdict first; inside the hook, the hook's output goes to the card's log, not stderr.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!("hook_failure_verdict", pinned_case("worktree add", &out))
    });
    let log = repo.common_dir().join("kardwt/logs/7.log");
    assert!(
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("no token")),
        "the hook's output is not in {}",
        log.display()
    );
    let block = &out.stderr[out.stderr.find("error:").expect("an error block")..];
    assert!(
        block.chars().count() <= 500,
        "the final error block exceeds 500 characters:\n{block}"
    );
    assert!(!y.exists(), "the failed tree is still there:\n{out}");
    assert!(
        !repo.is_registered(&y),
        "the failed tree is still registered"
    );
    assert!(repo.branch_exists("card/7"), "the branch was not kept");
    assert_eq!(repo.prepare_runs(), vec!["7 create prepare"]);
    let events = repo.events(Some("7"));
    assert!(events.iter().any(|e| e["event"] == "failed"), "{events:#?}");

    // After fixing the hook, the retry on the kept branch succeeds and is seeded.
    std::fs::remove_file(&flag).unwrap();
    let out = repo.worktree_add(&["../y", "card/7"]);
    out.expect_code(0);
    assert!(is_symlink(&y.join(".env")), "{out}");
    let rec = repo.record(&y);
    assert_eq!(rec["card"].as_str(), Some("7"));
    assert_eq!(rec["origin"].as_str(), Some("hook"));
    assert_eq!(rec["state"].as_str(), Some("ready"));
    repo.kardwt_ok(&repo.base, &["verify", "--path", y.to_str().unwrap()]);
    assert_eq!(repo.prepare_runs().len(), 2);

    // The same through git kardwt add: exit 4, tree gone, branch kept.
    std::fs::write(&flag, "").unwrap();
    let out = repo.kardwt(&repo.base, &["add", "8"]);
    out.expect_code(4);
    assert_eq!(out.stdout, "", "{out}");
    let message: String = out
        .stderr
        .lines()
        .filter(|l| !l.starts_with("kardwt["))
        .collect::<Vec<_>>()
        .join("\n");
    let retry = message.find("retry").expect("retry in add's message");
    let token = message
        .find("no token")
        .expect("hook's words in add's message");
    assert!(retry < token, "{out}");
    assert!(!repo.card_path("8").exists(), "{out}");
    assert!(!repo.is_registered(&repo.card_path("8")));
    assert!(repo.branch_exists("card/8"));
}

#[test]
fn the_hook_inside_git_kardwt_add_is_a_no_op() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    repo.install_hooks();
    // git's own checkout, so that git runs the hook inside add (kardwt's in-process checkout
    // has no hook to run where kardwt's shim is the only one).
    repo.git(&repo.base, &["config", "checkout.workers", "1"]);
    let wt = repo.add_card("42");
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("add"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert_eq!(
        repo.prepare_runs(),
        vec!["42 create prepare"],
        "prepare must run exactly once"
    );
    assert!(is_symlink(&wt.join(".env")));
    let list = repo.list_json();
    assert_eq!(list.len(), 1, "{list:#?}");
    // `--all`: the hook's no-ops are hidden otherwise.
    let events = repo.kardwt(&repo.base, &["log", "--all", "--json"]).json();
    let events = events.as_array().unwrap();
    assert_eq!(
        events.iter().filter(|e| e["event"] == "created").count(),
        1,
        "{events:#?}"
    );
    assert!(
        events.iter().all(|e| e["outcome"] != "hook"),
        "the hook created something inside add: {events:#?}"
    );
    assert!(
        events.iter().any(|e| e["event"] == "hook-noop"),
        "the hook did not log its no-op: {events:#?}"
    );
}

#[test]
fn an_undecodable_rules_file_fails_closed_until_uninstall_hooks() {
    let repo = TestRepo::new();
    repo.install_hooks();
    repo.write_rules("worktree:\n  sharing:\n    env: link\n    bogus_key: 1\n");
    let bad = repo.sibling("bad");
    let out = repo.worktree_add(&["../bad", "-b", "feature/bad"]);
    assert_ne!(
        out.code, 0,
        "an undecodable rules file must fail the add:\n{out}"
    );
    assert!(!bad.exists(), "{out}");
    assert!(!repo.is_registered(&bad), "{out}");
    // The message names the key and the way out (uninstall-hooks).
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "undecodable_rules_fail_closed",
            pinned_case("worktree add", &out)
        )
    });

    repo.kardwt_ok(&repo.base, &["uninstall-hooks"]);
    let out = repo.worktree_add(&["../bad", "feature/bad"]);
    out.expect_code(0);
    assert!(bad.is_dir());
    let row = repo
        .list_row(&bad)
        .unwrap_or_else(|| panic!("{} not listed", bad.display()));
    assert_eq!(row["state"], "unseeded", "{row}");
}

#[test]
fn delegated_checkout_lets_prepare_materialize_and_shares_after_it() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    let seen = repo.tmp.join("seen.log");
    let script = repo.write_prepare(&format!(
        "{{ test -e README.md && echo readme-before; test -L .env && echo env-before; }} >> {seen}\n\
         git -C \"$KARDWT_WORKTREE\" reset --hard --quiet HEAD || exit 9\n\
         {{ test -e README.md && echo readme-after; }} >> {seen}",
        seen = sh_quote(&seen)
    ));
    repo.write_rules(&format!(
        "{}  checkout:\n    mode: delegated\n",
        repo.rules_sharing(&script)
    ));
    repo.install_hooks();
    let wt = repo.add_card("30");
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        seen, "readme-after\n",
        "prepare must find no checkout and no links, then materialize"
    );
    assert!(wt.join("README.md").is_file());
    assert!(
        is_symlink(&wt.join(".env")),
        "sharing did not run after prepare"
    );
    assert_eq!(repo.git(&wt, &["status", "--porcelain"]), "");
    repo.kardwt_ok(&repo.base, &["verify", "30"]);
    assert_eq!(repo.prepare_runs(), vec!["30 create prepare"]);
}

#[test]
fn a_worktree_added_from_another_worktree_links_the_base_files() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    repo.install_hooks();
    let one = repo.add_card("1");
    let out = repo.git_output(&one, &["worktree", "add", "../q", "-b", "card/2"]);
    out.expect_code(0);
    let q = repo.root().join("q");
    assert!(q.is_dir(), "{out}");
    assert_eq!(
        std::fs::read_link(q.join(".env")).unwrap(),
        repo.base.join(".env"),
        "{out}"
    );
    let rec = repo.record(&q);
    assert_eq!(rec["card"].as_str(), Some("2"));
    assert_eq!(rec["origin"].as_str(), Some("hook"));
    repo.kardwt_ok(&repo.base, &["verify", "2"]);
    assert_eq!(
        repo.prepare_runs(),
        vec!["1 create prepare", "2 create prepare"]
    );
}

#[test]
fn a_detached_worktree_gets_its_admin_dir_name_and_a_clash_gets_a_suffix() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    // A card `feat` exists; a plain worktree whose admin dir is `feat` must not claim it.
    repo.add_card("feat");
    std::fs::create_dir(repo.sibling("a")).unwrap();
    let out = repo.worktree_add(&["--detach", "../a/feat"]);
    out.expect_code(0);
    let wt = repo.sibling("a/feat");
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("hook"), "{rec:?}");
    assert_eq!(rec["card"].as_str(), Some("feat-2"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    repo.kardwt_ok(&repo.base, &["verify", "--path", wt.to_str().unwrap()]);
    repo.kardwt_ok(&repo.base, &["verify", "feat"]);
    assert_eq!(
        repo.prepare_runs(),
        vec!["feat create prepare", "feat-2 create prepare"]
    );
}

#[test]
fn a_sha256_repository_is_seeded_too() {
    // The null object id is 64 zeros in a SHA-256 repository.
    let repo = TestRepo::new();
    let base = repo.tmp.join("sha256");
    repo.git(
        &repo.tmp,
        &[
            "init",
            "--quiet",
            "--object-format=sha256",
            "-b",
            "main",
            "sha256",
        ],
    );
    std::fs::write(base.join("README.md"), "# sha256\n").unwrap();
    repo.git(&base, &["add", "README.md"]);
    repo.git(&base, &["commit", "--quiet", "-m", "first"]);
    std::fs::write(base.join(".git/info/exclude"), ".env\n/kardbrd.yml\n").unwrap();
    std::fs::write(base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::write(
        base.join("kardbrd.yml"),
        "worktree:\n  sharing:\n    env: link\n",
    )
    .unwrap();
    let out = repo.kardwt(&base, &["install-hooks"]);
    out.expect_code(0);
    let out = repo.git_output(&base, &["worktree", "add", "../sha256-wt", "-b", "card/5"]);
    out.expect_code(0);
    let wt = repo.sibling("sha256-wt");
    assert_eq!(
        std::fs::read_link(wt.join(".env")).unwrap(),
        base.join(".env"),
        "{out}"
    );
    let rec = repo.record(&wt);
    assert_eq!(rec["origin"].as_str(), Some("hook"), "{rec:?}");
    assert_eq!(rec["card"].as_str(), Some("5"), "{rec:?}");
}

#[test]
fn sharing_never_overwrites_what_the_delegated_prepare_created() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::write(repo.base.join(".env.local"), "LOCAL=base\n").unwrap();
    let script = repo.write_prepare(
        "git -C \"$KARDWT_WORKTREE\" reset --hard --quiet HEAD || exit 9\n\
         echo 'TOKEN=own' > .env",
    );
    repo.write_rules(&format!(
        "{}  checkout:\n    mode: delegated\n",
        repo.rules_sharing(&script)
    ));
    let wt = repo.add_card("31");
    let env = wt.join(".env");
    assert!(
        !env.symlink_metadata().unwrap().file_type().is_symlink(),
        "sharing replaced the hook's own .env"
    );
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "TOKEN=own\n");
    assert!(is_symlink(&wt.join(".env.local")));
    let rec = repo.record(&wt);
    let links: Vec<&str> = rec["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(links, vec![".env.local"], "{rec:?}");
}

/// Two cards' prepare hooks run at the same time: each hook marks that it started and succeeds
/// only once it has seen the other's mark (for up to 20 s), so hooks run one after the other
/// would fail. The second `git worktree add` starts once the first hook runs: two plain
/// `git worktree add`s racing each other can make git itself fail ("failed to read
/// .git/worktrees/pa/commondir"), which is git's race, not kardwt's.
#[test]
fn different_cards_created_by_plain_git_prepare_in_parallel() {
    let repo = TestRepo::new();
    let marks = repo.tmp.join("started");
    std::fs::create_dir(&marks).unwrap();
    let dir = crate::support::sh_quote(&marks);
    let script = repo.write_prepare(&format!(
        "touch {dir}/\"$KARDWT_CARD\"\n\
         n=0\n\
         while [ \"$(ls {dir} | wc -l)\" -lt 2 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done\n\
         [ \"$(ls {dir} | wc -l)\" -ge 2 ] || {{ echo 'the other card never prepared alongside' >&2; exit 1; }}"
    ));
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let a = repo.spawn(
        "git",
        &repo.base,
        &["worktree", "add", "../pa", "-b", "card/51"],
    );
    assert!(
        crate::support::wait_until(std::time::Duration::from_secs(30), || marks
            .join("51")
            .exists()),
        "card 51's prepare hook never started"
    );
    let b = repo.spawn(
        "git",
        &repo.base,
        &["worktree", "add", "../pb", "-b", "card/52"],
    );
    let (a, b) = (
        a.wait(std::time::Duration::from_secs(60)),
        b.wait(std::time::Duration::from_secs(60)),
    );
    a.expect_code(0);
    b.expect_code(0);
    let mut runs = repo.prepare_runs();
    runs.sort();
    assert_eq!(runs, vec!["51 create prepare", "52 create prepare"]);
    repo.kardwt_ok(&repo.base, &["verify", "51"]);
    repo.kardwt_ok(&repo.base, &["verify", "52"]);
}

#[test]
fn the_action_deadline_from_the_rules_bounds_the_hook_path_too() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("sleep 30");
    repo.write_rules(&format!(
        "{}  action_timeout_seconds: 2\n",
        repo.rules_for(&script, false)
    ));
    repo.install_hooks();
    let t = std::time::Instant::now();
    let out = repo
        .spawn(
            "git",
            &repo.base,
            &["worktree", "add", "../dl", "-b", "card/53"],
        )
        .wait(std::time::Duration::from_secs(60));
    assert_ne!(out.code, 0, "{out}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    assert!(!repo.sibling("dl").exists(), "{out}");
    assert!(!repo.is_registered(&repo.sibling("dl")));
    assert!(repo.branch_exists("card/53"));
    assert!(out.stderr.contains("retry"), "{out}");
}

/// git reads past an ignore file it cannot read (a `.gitignore` that is a symlink: git only
/// warns), and would then call `.env` not ignored: the hook refuses to seed on that answer
/// (the tree is not recorded ready without its `.env`), says what git said, and removes the
/// tree it could not seed.
#[test]
fn an_ignore_file_git_cannot_read_fails_the_seeding_instead_of_leaving_env_unshared() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    let rules = repo.tmp.join("ignore-rules");
    std::fs::write(&rules, ".env\n").unwrap();
    let _ = std::fs::remove_file(repo.base.join(".gitignore"));
    std::os::unix::fs::symlink(&rules, repo.base.join(".gitignore")).unwrap();
    repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    repo.install_hooks();
    let wt = repo.sibling("unreadable-ignore");
    let out = repo.worktree_add(&["--quiet", "-b", "card/9", &wt.to_string_lossy()]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("unable to access '.gitignore'"),
        "{out}"
    );
    assert!(!wt.exists(), "the tree that could not be seeded is left");
    assert!(
        !repo.events(Some("9")).iter().any(|e| e["event"] == "ready"),
        "{:?}",
        repo.events(Some("9"))
    );
}
