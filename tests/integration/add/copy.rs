//! Copies through the real binary and real git: `.worktreeinclude` and
//! `sharing.copy` on both creation paths (`git kardwt add` and a hooked `git worktree add`),
//! never overwriting, symlinks, modes and mtimes kept, `clone` refused atomically where the file
//! system cannot clone, and real clones on an XFS loop mount.
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::support::{free_kb, is_mounted, TestRepo, XfsMount};

/// An old mtime, so "kept" cannot be confused with "just written".
const OLD: u64 = 1_000_000_000;

fn write(root: &Path, rel: &str, body: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, body).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(OLD))
        .unwrap();
    p
}

/// The base's ignored files: what `.worktreeinclude` and `sharing.copy` pick from.
fn seed_base(repo: &TestRepo) {
    // Ignore rules for the files below, committed so every worktree has them.
    repo.commit_files(
        &[
            (
                ".gitignore",
                ".env\n.env.*\nnode_modules/\ntarget/\n/config/*.local.toml\nnotes/\n",
            ),
            ("config/app.toml", "tracked = true\n"),
            (
                ".worktreeinclude",
                ".env.local\nconfig/*.local.toml\nnode_modules/\n!node_modules/.cache/\n",
            ),
        ],
        "ignore rules and .worktreeinclude",
    );
    write(&repo.base, ".env.local", "LOCAL=1\n");
    write(&repo.base, "config/dev.local.toml", "dev = true\n");
    write(
        &repo.base,
        "node_modules/pkg/index.js",
        "module.exports = 1\n",
    );
    let run = write(&repo.base, "node_modules/pkg/run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o751)).unwrap();
    std::os::unix::fs::symlink("pkg/index.js", repo.base.join("node_modules/main.js")).unwrap();
    write(&repo.base, "node_modules/.cache/big.bin", "cache\n");
    write(&repo.base, "notes/todo.txt", "ignored but not included\n");
    write(&repo.base, "target/debug/app", "binary\n");
    write(&repo.base, "untracked.txt", "untracked, not ignored\n");
}

fn rules(extra: &str) -> String {
    format!("worktree:\n  sharing:\n{extra}")
}

/// What a tree holds of the copied files.
fn assert_copied(tree: &Path) {
    assert_eq!(
        std::fs::read_to_string(tree.join(".env.local")).unwrap(),
        "LOCAL=1\n"
    );
    assert!(tree.join("config/dev.local.toml").is_file());
    assert_eq!(
        std::fs::read_to_string(tree.join("node_modules/pkg/index.js")).unwrap(),
        "module.exports = 1\n"
    );
    let run = std::fs::metadata(tree.join("node_modules/pkg/run.sh")).unwrap();
    assert_eq!(run.mode() & 0o7777, 0o751, "mode not kept");
    assert_eq!(run.mtime() as u64, OLD, "mtime not kept");
    assert_eq!(
        std::fs::read_link(tree.join("node_modules/main.js")).unwrap(),
        Path::new("pkg/index.js"),
        "a symlink must stay a symlink"
    );
    assert!(
        !tree.join("node_modules/.cache").exists(),
        "a negated directory was copied"
    );
    assert!(
        !tree.join("notes").exists(),
        "an ignored file not in .worktreeinclude was copied"
    );
    assert!(
        !tree.join("untracked.txt").exists(),
        "an untracked, unignored file was copied"
    );
}

#[test]
fn worktreeinclude_and_sharing_copy_on_add() {
    let repo = TestRepo::new();
    seed_base(&repo);
    // The base's tracked file differs from HEAD: a copy must never overwrite the tree's.
    std::fs::write(
        repo.base.join("config/app.toml"),
        "tracked = false # edited in the base\n",
    )
    .unwrap();
    repo.write_rules(&rules("    copy: [target, config, missing-dir]\n"));
    let tree = PathBuf::from(repo.kardwt_ok(&repo.base, &["add", "1"]).trim());
    assert_copied(&tree);
    assert_eq!(
        std::fs::read_to_string(tree.join("target/debug/app")).unwrap(),
        "binary\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("config/app.toml")).unwrap(),
        "tracked = true\n",
        "a copy overwrote a tracked file"
    );
    let rec = repo.record(&tree);
    let copies: Vec<&str> = rec["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for c in [
        ".env.local",
        "config/dev.local.toml",
        "node_modules",
        "target",
        "config",
    ] {
        assert!(copies.contains(&c), "{c} missing from copies {copies:?}");
    }
    assert!(!copies.contains(&"missing-dir"), "{copies:?}");
    assert!(rec["copy_method"].as_str().is_some(), "{rec:?}");
    // The tree is clean for git: everything copied is ignored or tracked and equal.
    let status = repo.git(&tree, &["status", "--porcelain"]);
    assert_eq!(status, "", "copies show in git status");
    let events = repo.events(Some("1"));
    assert!(
        events.iter().any(|e| e["event"] == "seeded"
            && e["outcome"]
                .as_str()
                .unwrap_or_default()
                .starts_with("copied ")
            && e["outcome"].as_str().unwrap_or_default().contains("B in ")),
        "{events:?}"
    );
}

#[test]
fn worktreeinclude_is_copied_by_a_hooked_git_worktree_add_before_prepare() {
    let repo = TestRepo::new();
    seed_base(&repo);
    // The prepare hook sees the copies already there.
    let script = repo.write_prepare("test -f .env.local && test -f node_modules/pkg/index.js");
    repo.write_rules(&format!(
        "{}  sharing:\n    copy_method: auto\n",
        repo.rules_for(&script, false)
    ));
    repo.install_hooks();
    repo.worktree_add(&["../hooked", "-b", "card/7"])
        .expect_code(0);
    let tree = repo.sibling("hooked");
    assert_copied(&tree);
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    assert_eq!(repo.prepare_runs(), vec!["7 create prepare"]);
}

#[test]
fn clone_where_the_file_system_cannot_clone_fails_atomically_naming_it() {
    let repo = TestRepo::new();
    seed_base(&repo);
    let fs = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(&repo.base)
        .output()
        .unwrap();
    let fs = String::from_utf8_lossy(&fs.stdout).trim().to_owned();
    if fs == "xfs" || fs == "btrfs" {
        eprintln!(
            "SKIPPED: {} is on {fs}, which can clone",
            repo.base.display()
        );
        return;
    }
    repo.write_rules(&rules("    copy: [target]\n    copy_method: clone\n"));
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(4);
    assert!(out.stderr.contains("cannot clone"), "{out}");
    let named = match fs.as_str() {
        f if f.starts_with("ext") => "(ext4)",
        "tmpfs" => "(tmpfs)",
        "overlayfs" => "(overlayfs)",
        _ => "file system (",
    };
    assert!(
        out.stderr.contains(named),
        "the message does not name {fs}:\n{out}"
    );
    assert!(
        !repo.card_path("1").exists(),
        "the half-copied tree was left:\n{out}"
    );
    assert!(!repo.is_registered(&repo.card_path("1")));
    assert!(repo.branch_exists("card/1"), "the branch is kept");
    assert!(
        repo.base.join("target/debug/app").is_file(),
        "the base lost its file"
    );
}

#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "the portable build never clones: FICLONE is off"
)]
fn clone_on_a_real_xfs_loop_mount_shares_the_blocks() {
    let scratch = tempfile::tempdir().unwrap();
    let Some(mount) = XfsMount::new(scratch.path()) else {
        return;
    };
    let repo = TestRepo::new();
    // A second base clone on the XFS mount, with its worktrees there too.
    let base = mount.dir.join("base");
    repo.git(
        &mount.dir,
        &["clone", "--quiet", &repo.origin.to_string_lossy(), "base"],
    );
    let blob: Vec<u8> = (0..8 * 1024 * 1024)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for i in 0..8 {
        let p = base.join(format!("target/release/part{i}.bin"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &blob).unwrap();
    }
    std::fs::write(base.join(".git/info/exclude"), "/target/\n/kardbrd.yml\n").unwrap();
    std::fs::write(
        base.join("kardbrd.yml"),
        "worktree:\n  sharing:\n    copy: [target]\n    copy_method: clone\n",
    )
    .unwrap();
    let before = free_kb(&mount.dir);
    let out = repo.kardwt(&base, &["add", "1"]);
    out.expect_code(0);
    let tree = PathBuf::from(out.stdout.trim());
    assert!(tree.starts_with(&mount.dir), "{out}");
    let dot_git = std::fs::read_to_string(tree.join(".git")).unwrap();
    let admin = PathBuf::from(dot_git.trim().strip_prefix("gitdir: ").unwrap());
    let rec: toml::Table = std::fs::read_to_string(admin.join("kardwt.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rec["copy_method"].as_str(), Some("clone"), "{rec:?}");
    assert_eq!(
        std::fs::read(tree.join("target/release/part3.bin")).unwrap(),
        blob
    );
    // 64 MB copied; cloned blocks are shared, so far less new space is used (the checkout
    // and metadata take a little).
    let used_kb = before.saturating_sub(free_kb(&mount.dir));
    assert!(
        used_kb < 16 * 1024,
        "{used_kb} KiB of new space for a 64 MiB clone"
    );
    drop(mount);
    assert!(
        !is_mounted(&scratch.path().join("xfs")),
        "the XFS mount was left behind"
    );
}
