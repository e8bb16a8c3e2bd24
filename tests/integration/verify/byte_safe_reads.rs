//! The reads kardwt makes with gix (worktree admin dirs, `.git` files, HEAD) stay byte-safe and
//! fail closed in `verify` and `list`: a worktree whose path is not UTF-8 is read as git reads it.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::support::{pinned, pinned_case, TestRepo};

/// A plain `git worktree add` at a path whose last component is not UTF-8.
fn non_utf8_worktree(repo: &TestRepo) -> PathBuf {
    std::fs::create_dir_all(repo.root()).unwrap();
    let wt = repo.root().join(OsStr::from_bytes(b"plain-\xff\xfe"));
    let out = repo
        .command("git", &repo.base)
        .args(["worktree", "add", "-q", "-b", "plain", "--end-of-options"])
        .arg(&wt)
        .output()
        .unwrap();
    assert!(out.status.success(), "git worktree add: {out:?}");
    wt
}

#[test]
fn a_worktree_at_a_non_utf8_path_is_unseeded_not_foreign() {
    let repo = TestRepo::new();
    let wt = non_utf8_worktree(&repo);
    let base_before = repo.snapshot_base();

    // Its `.git` file and its admin dir's `gitdir` name the path byte for byte: verify reads
    // them as git does and finds a registered worktree without a record.
    let out = repo.kardwt(&wt, &["verify", "-v"]);
    out.expect_code(1);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("verify_a_non_utf8_path", pinned_case("verify -v", &out)));

    // list shows it (a hand parser that wanted UTF-8 left it out).
    let list = repo.kardwt(&repo.base, &["list"]);
    list.expect_code(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.contains("plain-"))
        .unwrap_or_else(|| panic!("the worktree is not listed:\n{list}"));
    assert!(row.contains("unseeded"), "{list}");
    assert!(
        row.contains(" plain "),
        "HEAD read as branch plain:\n{list}"
    );
    assert_eq!(repo.snapshot_base(), base_before, "reads changed the base");
}

#[test]
fn json_of_a_non_utf8_path_is_printed_lossily_without_a_panic() {
    let repo = TestRepo::new();
    let wt = non_utf8_worktree(&repo);
    let shown = wt.to_string_lossy().into_owned();
    assert!(shown.contains('\u{fffd}'));

    let list = repo.kardwt(&repo.base, &["list", "--json"]);
    list.expect_code(0);
    let rows = list.json();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == shown.as_str())
        .unwrap_or_else(|| panic!("not listed:\n{list}"));
    assert_eq!(row["state"], "unseeded", "{list}");
    assert_eq!(row["head"], "plain", "{list}");

    let verify = repo.kardwt(&wt, &["verify", "--json"]);
    verify.expect_code(1);
    assert_eq!(verify.json()["path"], shown.as_str(), "{verify}");
    assert_eq!(verify.json()["verdict"], "unseeded", "{verify}");

    let status = repo.kardwt(&wt, &["status", "--json"]);
    status.expect_code(0);
    assert_eq!(status.json()["path"], shown.as_str(), "{status}");
}

#[test]
fn a_worktree_registered_with_relative_paths_verifies() {
    // git 2.48's `worktree add --relative-paths` writes both links relative: the `.git` file
    // against the worktree, the admin dir's `gitdir` against the admin dir. Written by hand
    // here so that any git shows it.
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("7");
    let wt = wt.canonicalize().unwrap();
    let admin = repo.admin_dir(&wt);
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", relative(&admin, &wt).display()),
    )
    .unwrap();
    std::fs::write(
        admin.join("gitdir"),
        format!("{}\n", relative(&wt.join(".git"), &admin).display()),
    )
    .unwrap();

    let out = repo.kardwt(&repo.base, &["verify", "7", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["verdict"], "verified", "{out}");
    let list = repo.kardwt(&repo.base, &["list", "--json"]);
    list.expect_code(0);
    let rows = list.json();
    assert_eq!(rows[0]["path"], wt.to_str().unwrap(), "{list}");
    assert_eq!(rows[0]["state"], "ready", "{list}");
}

#[test]
fn a_fifo_planted_as_dot_git_is_foreign_and_hangs_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("5");
    std::fs::remove_file(wt.join(".git")).unwrap();
    let made = repo.command("mkfifo", &wt).arg(".git").status().unwrap();
    assert!(made.success());
    let base_before = repo.snapshot_base();

    // Opening a FIFO with no writer blocks a plain read forever; the guard below only stops a
    // hung run (it is no time limit on the command).
    let hung = std::time::Duration::from_secs(30);
    let out = repo
        .spawn("git", &repo.base, &["kardwt", "verify", "5", "--json"])
        .wait(hung);
    out.expect_code(3);
    let v = out.json();
    assert_eq!(v["verdict"], "foreign", "{out}");
    assert_eq!(v["checks"][1]["name"], "dot_git", "{out}");
    assert_eq!(v["checks"][1]["ok"], false, "{out}");
    let list = repo
        .spawn("git", &repo.base, &["kardwt", "list"])
        .wait(hung);
    list.expect_code(0);
    assert!(list.stdout.contains("foreign"), "{list}");
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(wt.join(".git"))
        .unwrap()
        .file_type();
    assert!(kind.is_fifo(), "the planted .git was replaced");
    assert_eq!(repo.snapshot_base(), base_before);
}

/// `to` relative to the directory `from` (both absolute and canonical).
fn relative(to: &std::path::Path, from: &std::path::Path) -> PathBuf {
    let to: Vec<_> = to.components().collect();
    let from: Vec<_> = from.components().collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// A FIFO planted as a worktree's record (`kardwt.toml`) or as git's `locked` file in its admin
/// dir is read without blocking: the record is malformed (exit 3, fail closed) and nothing hangs
/// or changes.
#[test]
fn a_fifo_planted_as_the_record_or_the_lock_mark_hangs_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let wt = repo.add_card("6");
    let admin = repo.admin_dir(&wt);
    std::fs::remove_file(admin.join("kardwt.toml")).unwrap();
    let made = repo
        .command("mkfifo", &admin)
        .arg("kardwt.toml")
        .status()
        .unwrap();
    assert!(made.success());
    let hung = std::time::Duration::from_secs(30);
    let out = repo
        .spawn("git", &repo.base, &["kardwt", "verify", "6", "--json"])
        .wait(hung);
    out.expect_code(3);
    let v = out.json();
    assert_eq!(v["verdict"], "foreign", "{out}");
    assert_eq!(v["checks"][4]["name"], "record_parses", "{out}");
    assert_eq!(v["checks"][4]["ok"], false, "{out}");
    let list = repo
        .spawn("git", &repo.base, &["kardwt", "list"])
        .wait(hung);
    list.expect_code(0);

    // The lock mark: prepare --path of an unrecorded tree whose `locked` is a FIFO.
    let other = repo.sibling("other");
    repo.worktree_add_unhooked(&[other.to_str().unwrap(), "-b", "feature/other"]);
    let other_admin = repo.admin_dir(&other);
    let made = repo
        .command("mkfifo", &other_admin)
        .arg("locked")
        .status()
        .unwrap();
    assert!(made.success());
    let out = repo
        .spawn(
            "git",
            &repo.base,
            &["kardwt", "prepare", "--path", other.to_str().unwrap()],
        )
        .wait(hung);
    assert!(!out.stderr.contains("panicked"), "{out}");
    assert_ne!(out.code, -1, "prepare hung:\n{out}");
}
