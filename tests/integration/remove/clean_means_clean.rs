//! Clean means clean: a path in the record's `links` is kardwt's own only while it
//! is the symlink kardwt made, pointing where kardwt pointed it; anything else there, or a
//! symlink the exclude block hides that no record names, is user work that `remove` refuses to
//! delete. The exclude block hides only kardwt's links, in every worktree and in the base;
//! `<common dir>/info/exclude` keeps every byte of the user's, is written under the repository
//! lock, and is never written when it cannot be read.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::cleanup::{cleanup_lines, cleanup_rules, event_names, Sleeper};
use crate::support::{pinned, pinned_case, snapshot, TestRepo};

/// The base gets an untracked `.claude/skills/base.md` (and an ignored `.env`).
fn base_with_skills(repo: &TestRepo) {
    std::fs::create_dir_all(repo.base.join(".claude/skills")).unwrap();
    std::fs::write(repo.base.join(".claude/skills/base.md"), "base skill\n").unwrap();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
}

/// Rules sharing `.env` and the skills fallback, with the standard prepare script and the
/// logging cleanup hook of `support/cleanup.rs`.
fn sharing_rules(repo: &TestRepo) -> String {
    let script = repo.write_prepare("");
    format!("{}{}", repo.rules_sharing(&script), cleanup_rules(repo, ""))
}

fn status(repo: &TestRepo, dir: &Path) -> String {
    repo.git(dir, &["status", "--porcelain", "--untracked-files=all"])
}

fn is_symlink(p: &Path) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

fn exclude(repo: &TestRepo) -> PathBuf {
    repo.common_dir().join("info/exclude")
}

/// Every entry of `<common dir>/info/` (symlinks by their target), to show nothing was written.
fn info_dir(repo: &TestRepo) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot(&repo.common_dir().join("info"))
}

/// `remove` of `card` (at `wt`) exits 1 with the refusal its snapshot `name` holds, and released
/// nothing: the process in the
/// tree lives, the cleanup hook did not run, the tree and its files are as they were, and it
/// is still registered and `ready`.
#[track_caller]
fn assert_remove_refused(repo: &TestRepo, card: &str, wt: &Path, name: &str) {
    let mut sleeper = Sleeper::start(repo, wt);
    let before = snapshot(wt);
    let base = repo.snapshot_base();
    let out = repo.kardwt(&repo.base, &["remove", card, "--grace", "1"]);
    out.expect_code(1);
    pinned(repo).bind(|| insta::assert_snapshot!(name, pinned_case("remove", &out)));
    assert!(
        sleeper.alive(),
        "the process in the tree was killed:\n{out}"
    );
    assert!(
        cleanup_lines(repo).is_empty(),
        "the cleanup hook ran:\n{out}"
    );
    assert_eq!(snapshot(wt), before, "the tree changed:\n{out}");
    assert_eq!(repo.snapshot_base(), base, "the base changed:\n{out}");
    assert!(repo.is_registered(wt), "{out}");
    assert_eq!(repo.record(wt)["state"].as_str(), Some("ready"));
    let events = event_names(repo, card);
    assert!(
        !events.iter().any(|e| e == "released" || e == "removed"),
        "{events:?}"
    );
}

/// The case: an agent replaces the skills fallback link with a real directory and
/// writes files in it. git status shows them, and `remove` (no `--force`) refuses and keeps them.
#[test]
fn a_real_skills_directory_in_place_of_the_link_is_user_work() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    repo.write_rules(&sharing_rules(&repo));
    let wt = repo.add_card("42");
    let skills = wt.join(".claude/skills");
    assert!(is_symlink(&skills), "the fallback link was not made");
    assert_eq!(status(&repo, &wt), "", "kardwt's link shows in git status");

    std::fs::remove_file(&skills).unwrap();
    std::fs::create_dir(&skills).unwrap();
    std::fs::write(skills.join("agent.md"), "the agent's work\n").unwrap();
    assert!(
        status(&repo, &wt).contains("?? .claude/skills/agent.md"),
        "the user's directory is hidden from git status:\n{}",
        status(&repo, &wt)
    );
    assert_remove_refused(&repo, "42", &wt, "remove_refused_agent_skills");
    assert_eq!(
        std::fs::read_to_string(skills.join("agent.md")).unwrap(),
        "the agent's work\n"
    );
    assert!(repo.base.join(".claude/skills/base.md").is_file());
}

/// A real `.env` in place of the shared link (ignored, so git status is silent) and a skills
/// link retargeted elsewhere (hidden by the block) are user work; once both are kardwt's links
/// again, pointing at the base's files, the tree is clean and `remove` removes it.
#[test]
fn a_real_file_or_a_foreign_symlink_at_a_link_path_is_user_work() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    repo.write_rules(&sharing_rules(&repo));
    let wt = repo.add_card("42");
    let env = wt.join(".env");
    let skills = wt.join(".claude/skills");
    assert!(is_symlink(&env) && is_symlink(&skills));

    std::fs::remove_file(&env).unwrap();
    std::fs::write(&env, "TOKEN=mine\n").unwrap();
    assert_eq!(status(&repo, &wt), "", "the test needs .env ignored");
    assert_remove_refused(&repo, "42", &wt, "remove_refused_own_env");
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "TOKEN=mine\n");

    // kardwt's link again; the skills link now points at the user's own directory.
    std::fs::remove_file(&env).unwrap();
    std::os::unix::fs::symlink(repo.base.join(".env"), &env).unwrap();
    let mine = repo.tmp.join("my skills");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("mine.md"), "mine\n").unwrap();
    std::fs::remove_file(&skills).unwrap();
    std::os::unix::fs::symlink(&mine, &skills).unwrap();
    assert_eq!(status(&repo, &wt), "", "the block should hide any symlink");
    assert_remove_refused(&repo, "42", &wt, "remove_refused_own_skills_link");
    assert_eq!(std::fs::read_link(&skills).unwrap(), mine);

    std::fs::remove_file(&skills).unwrap();
    std::os::unix::fs::symlink(repo.base.join(".claude/skills"), &skills).unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "42", "--grace", "1"]);
    out.expect_code(0);
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
    assert!(mine.join("mine.md").is_file() && repo.base.join(".env").is_file());
}

/// A worktree made before the skills fallback was on has no link in its record; the user's own
/// `.claude/skills` symlink there is hidden once another card writes the block, and is still
/// user work.
#[test]
fn a_symlink_the_block_hides_that_no_record_names_is_user_work() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    let script = repo.write_prepare("");
    repo.write_rules(&format!(
        "{}  sharing:\n    skills: disabled\n{}",
        repo.rules_for(&script, false),
        cleanup_rules(&repo, "")
    ));
    let early = repo.add_card("41");
    assert!(!early.join(".claude").exists());
    std::fs::create_dir(early.join(".claude")).unwrap();
    let mine = repo.tmp.join("my skills");
    std::fs::create_dir(&mine).unwrap();
    std::os::unix::fs::symlink(&mine, early.join(".claude/skills")).unwrap();
    assert!(status(&repo, &early).contains(".claude/"));

    repo.write_rules(&sharing_rules(&repo));
    let later = repo.add_card("42");
    assert!(is_symlink(&later.join(".claude/skills")));
    assert_eq!(
        status(&repo, &early),
        "",
        "the block should hide the symlink"
    );
    assert_remove_refused(&repo, "41", &early, "remove_refused_early_skills_link");
    assert_eq!(
        std::fs::read_link(early.join(".claude/skills")).unwrap(),
        mine
    );
}

/// The block hides kardwt's link in its worktree, and never a real `.claude/skills` directory:
/// not the base's own untracked one, not one in another worktree.
#[test]
fn the_block_hides_only_kardwts_links_in_every_worktree_and_the_base() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    repo.add_unhooked_worktree("../other", "feature/other");
    let other = repo.tmp.join("other");
    std::fs::create_dir_all(other.join(".claude/skills")).unwrap();
    std::fs::write(other.join(".claude/skills/mine.md"), "mine\n").unwrap();
    let base_before = status(&repo, &repo.base);
    assert!(
        base_before.contains("?? .claude/skills/base.md"),
        "{base_before}"
    );
    repo.write_rules(&sharing_rules(&repo));

    let wt = repo.add_card("42");
    assert!(is_symlink(&wt.join(".claude/skills")));
    let text = std::fs::read(exclude(&repo)).unwrap();
    assert!(
        String::from_utf8_lossy(&text)
            .lines()
            .any(|l| l == "/.claude/skills"),
        "no block written"
    );
    assert_eq!(status(&repo, &wt), "", "kardwt's link shows in git status");
    assert_eq!(
        status(&repo, &repo.base),
        base_before,
        "the base's status changed"
    );
    assert!(
        status(&repo, &other).contains("?? .claude/skills/mine.md"),
        "another worktree's skills are hidden:\n{}",
        status(&repo, &other)
    );
}

/// A user's lines in any encoding (a Latin-1 byte, an invalid byte, CRLF, no final newline)
/// survive byte for byte, still work, and no temporary file is left behind.
#[test]
fn info_exclude_keeps_every_byte_of_the_users_lines() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    let mut user = std::fs::read(exclude(&repo)).unwrap();
    user.extend_from_slice(b"# caf\xe9 (Latin-1)\n/build-\xff\r\n*.tmp");
    std::fs::write(exclude(&repo), &user).unwrap();
    repo.write_rules(&sharing_rules(&repo));

    let wt = repo.add_card("42");
    assert!(is_symlink(&wt.join(".claude/skills")));
    let after = std::fs::read(exclude(&repo)).unwrap();
    let mut kept = user.clone();
    kept.push(b'\n');
    assert!(
        after.ends_with(&kept),
        "the user's bytes changed:\n{}",
        String::from_utf8_lossy(&after)
    );
    let block = String::from_utf8_lossy(&after[..after.len() - kept.len()]).into_owned();
    assert!(
        block.contains("\n/.claude/skills\n!/.claude/skills/\n"),
        "{block}"
    );
    std::fs::write(repo.base.join("x.tmp"), "").unwrap();
    assert_eq!(
        repo.git(&repo.base, &["check-ignore", "x.tmp"]),
        "x.tmp\n",
        "the user's last pattern stopped working"
    );
    let names: Vec<PathBuf> = info_dir(&repo).into_keys().collect();
    assert_eq!(
        names,
        vec![PathBuf::from("exclude")],
        "a temporary file was left"
    );
}

/// An `info/exclude` that cannot be read (here a symlink loop: git warns and goes on; a
/// directory would stop git itself) is not written and no link is made: `add` fails naming the
/// file and the reason, and the new tree is removed.
#[test]
fn an_unreadable_info_exclude_is_never_written() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    repo.write_rules(&sharing_rules(&repo));
    std::fs::remove_file(exclude(&repo)).unwrap();
    std::os::unix::fs::symlink("exclude", exclude(&repo)).unwrap();
    let info = info_dir(&repo);

    let out = repo.kardwt(&repo.base, &["add", "42"]);
    out.expect_code(4); // a failed preparation, the new tree undone
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_unreadable_info_exclude",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert_eq!(info_dir(&repo), info, "info/ was written:\n{out}");
    assert_eq!(
        std::fs::read_link(exclude(&repo)).unwrap(),
        PathBuf::from("exclude")
    );
    let wt = repo.card_path("42");
    assert!(!wt.exists() && !repo.is_registered(&wt), "{out}");
}

/// `info/exclude` is changed only under the repository lock: while another process holds it,
/// `prepare --path` waits until its deadline (exit 5 naming the lock) and writes nothing, links
/// nothing; once the lock is free it shares and writes the block.
#[test]
fn info_exclude_is_written_under_the_repository_lock() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    let rules = sharing_rules(&repo);
    repo.write_rules(&rules.replacen("worktree:\n", "worktree:\n  action_timeout_seconds: 1\n", 1));
    repo.add_unhooked_worktree("../plain", "feature/plain");
    let plain = repo.tmp.join("plain");
    let plain_arg = plain.to_str().unwrap();
    let lock = repo.common_dir().join("kardwt/lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .unwrap();
    let mut held = fd_lock::RwLock::new(file);
    let guard = held.try_write().expect("the repository lock is free");
    let info = info_dir(&repo);

    let out = repo.kardwt(&repo.base, &["prepare", "--path", plain_arg]);
    out.expect_code(5);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_path_repository_lock_held",
            pinned_case("prepare --path", &out)
        )
    });
    assert_eq!(
        info_dir(&repo),
        info,
        "info/exclude was written without the lock"
    );
    assert!(!is_symlink(&plain.join(".claude/skills")) && !is_symlink(&plain.join(".env")));
    drop(guard);

    repo.write_rules(&rules);
    let out = repo.kardwt(&repo.base, &["prepare", "--path", plain_arg]);
    out.expect_code(0);
    assert!(is_symlink(&plain.join(".claude/skills")), "{out}");
    assert_ne!(info_dir(&repo), info);
}

/// A block written by an earlier kardwt (`/.claude/skills` alone hides the base's own
/// untracked skills directory) is rewritten the next time kardwt shares, even when it links no
/// skills; the user's lines stay as they were.
#[test]
fn an_old_block_that_hides_real_directories_is_rewritten() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    let user = std::fs::read(exclude(&repo)).unwrap();
    let mut old = user.clone();
    old.extend_from_slice(
        b"# >>> git-kardwt: shared links (managed by git kardwt) >>>\n/.claude/skills\n# <<< git-kardwt <<<\n",
    );
    std::fs::write(exclude(&repo), &old).unwrap();
    assert!(
        !status(&repo, &repo.base).contains(".claude/skills/base.md"),
        "the old block should hide the base's skills"
    );
    let script = repo.write_prepare("");
    repo.write_rules(&format!(
        "{}  sharing:\n    env: link\n    skills: disabled\n",
        repo.rules_for(&script, false)
    ));

    let wt = repo.add_card("42");
    assert!(
        !wt.join(".claude").exists(),
        "skills were linked although disabled"
    );
    assert!(
        status(&repo, &repo.base).contains("?? .claude/skills/base.md"),
        "the base's skills are still hidden:\n{}",
        String::from_utf8_lossy(&std::fs::read(exclude(&repo)).unwrap())
    );
    assert!(std::fs::read(exclude(&repo)).unwrap().ends_with(&user));
}

/// A symlinked `info/exclude` is updated where it points and stays a symlink.
#[test]
fn a_symlinked_info_exclude_is_updated_where_it_points() {
    let repo = TestRepo::new();
    base_with_skills(&repo);
    let user = std::fs::read(exclude(&repo)).unwrap();
    let real = repo.common_dir().join("my-exclude");
    std::fs::write(&real, &user).unwrap();
    std::fs::remove_file(exclude(&repo)).unwrap();
    std::os::unix::fs::symlink("../my-exclude", exclude(&repo)).unwrap();
    repo.write_rules(&sharing_rules(&repo));

    let wt = repo.add_card("42");
    assert!(is_symlink(&wt.join(".claude/skills")));
    assert_eq!(
        std::fs::read_link(exclude(&repo)).unwrap(),
        PathBuf::from("../my-exclude")
    );
    let after = std::fs::read(&real).unwrap();
    assert!(after.ends_with(&user) && after.len() > user.len());
    assert_eq!(status(&repo, &wt), "", "kardwt's link shows in git status");
}

/// kardwt's link committed since (`git add -f .env`) is tracked: `remove` leaves it to git
/// instead of unlinking it first, which left a deleted tracked file that made
/// `git worktree remove` refuse after the release, the record failed.
#[test]
fn a_link_committed_in_the_tree_is_removed_with_it() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    repo.write_rules(&sharing_rules(&repo));
    let wt = repo.add_card("1");
    assert!(is_symlink(&wt.join(".env")));
    repo.git(&wt, &["add", "-f", ".env"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "the link"]);
    let out = repo.kardwt(&repo.base, &["remove", "1"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(!wt.exists(), "{out}");
    assert!(repo.branch_exists("card/1"));
    assert_eq!(
        std::fs::read_to_string(repo.base.join(".env")).unwrap(),
        "TOKEN=base\n",
        "the link's target changed"
    );
}
