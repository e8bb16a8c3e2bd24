//! Copies and links against an adversarial upstream, through
//! the real binary and real git: a symlink or file committed where a copy or link would go is
//! never written through (skipped, reported, the tree ready); copies land only where the new
//! tree ignores them, and pre-push blocks their content under any name; copies are atomic,
//! sparse, finished on retry and bounded by the deadline; `.worktreeinclude` looks only where
//! its patterns reach.
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::support::push::{assert_blocked, commit, head, push};
use crate::support::{snapshot, TestRepo};

/// Change origin's main through the scratch clone (`change` edits the scratch tree), without
/// touching the base's checkout.
fn upstream(repo: &TestRepo, change: impl FnOnce(&Path)) {
    change(&repo.scratch);
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "upstream"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
}

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

fn added(repo: &TestRepo, args: &[&str]) -> (PathBuf, String) {
    let out = repo.kardwt(&repo.base, args);
    out.expect_code(0);
    (PathBuf::from(out.stdout.trim()), out.stderr.clone())
}

#[test]
fn a_symlink_committed_upstream_is_never_written_through_and_the_skip_is_reported() {
    let repo = TestRepo::new();
    let outside = repo.tmp.join("outside");
    write(&outside, "keep.txt", "mine\n");
    repo.commit_files(
        &[
            (
                ".gitignore",
                ".env\n.env.*\nconfig/local.toml\nfrontend/dist/\n",
            ),
            (".worktreeinclude", "config/local.toml\n"),
            ("config/app.toml", "tracked = true\n"),
            ("frontend/README", "tracked\n"),
        ],
        "ignore rules",
    );
    write(&repo.base, "config/local.toml", "secret = 1\n");
    write(&repo.base, "frontend/dist/app.js", "bundle\n");
    write(&repo.base, ".claude/skills/s.md", "skill\n");
    repo.write_rules("worktree:\n  sharing:\n    skills: fallback\n    copy: [frontend/dist]\n");
    // Upstream, each directory becomes a symlink to a directory outside the tree.
    upstream(&repo, |s| {
        for dir in ["config", "frontend"] {
            std::fs::remove_dir_all(s.join(dir)).unwrap();
            std::os::unix::fs::symlink(&outside, s.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(&outside, s.join(".claude")).unwrap();
    });
    let before = snapshot(&outside);
    let (tree, stderr) = added(&repo, &["add", "1"]);
    assert_eq!(
        snapshot(&outside),
        before,
        "written outside the tree:\n{stderr}"
    );
    for line in [
        "skipped config/local.toml: config is a symlink in the new tree",
        "skipped frontend/dist: frontend is a symlink in the new tree",
        "skipped .claude/skills: .claude is a symlink in the new tree",
    ] {
        assert!(stderr.contains(line), "{line:?} not reported:\n{stderr}");
    }
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    assert!(tree.join("config").is_symlink() && tree.join("frontend").is_symlink());
}

#[test]
fn a_directory_upstream_turned_into_a_file_is_skipped_and_reported() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\ncache/\nbuild/\n"),
            (".worktreeinclude", "cache/\n"),
        ],
        "ignore rules",
    );
    write(&repo.base, "cache/a.txt", "cached\n");
    write(&repo.base, "build/out.bin", "built\n");
    repo.write_rules("worktree:\n  sharing:\n    copy: [build]\n");
    upstream(&repo, |s| {
        write(s, "cache", "now a tracked file\n");
        write(s, "build", "now a tracked file too\n");
    });
    let base_before = repo.snapshot_base();
    let (tree, stderr) = added(&repo, &["add", "1"]);
    for line in [
        "skipped cache: cache is a file in the new tree",
        "skipped build: build is a file in the new tree",
    ] {
        assert!(stderr.contains(line), "{line:?} not reported:\n{stderr}");
    }
    let kept = std::fs::read_to_string(tree.join("cache")).unwrap();
    assert_eq!(kept, "now a tracked file\n");
    assert_eq!(repo.snapshot_base(), base_before, "the base changed");
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
}

#[test]
fn copies_land_only_where_the_new_tree_ignores_them() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nlocal.toml\ngenerated/\n"),
            (".worktreeinclude", "local.toml\ngenerated/\n"),
        ],
        "ignore rules",
    );
    write(&repo.base, "local.toml", "secret = 1\n");
    write(&repo.base, "generated/a.bin", "ignored still\n");
    write(&repo.base, "generated/b.txt", "not ignored any more\n");
    // Upstream stops ignoring local.toml and all of generated/ but its *.bin.
    upstream(&repo, |s| {
        std::fs::write(s.join(".gitignore"), ".env\n.env.*\ngenerated/*.bin\n").unwrap();
    });
    let (tree, stderr) = added(&repo, &["add", "1"]);
    assert!(
        !tree.join("local.toml").exists(),
        "copied where git sees it"
    );
    assert!(
        !tree.join("generated/b.txt").exists(),
        "copied where git sees it"
    );
    assert!(tree.join("generated/a.bin").is_file(), "{stderr}");
    assert_eq!(repo.git(&tree, &["status", "--porcelain"]), "");
    assert!(
        stderr.contains("skipped local.toml: the new tree's ignore rules do not ignore it"),
        "{stderr}"
    );
}

#[test]
fn pre_push_blocks_copied_content_under_any_name_and_forced_in_include_matches() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nconfig/*.local.toml\n"),
            (".worktreeinclude", "config/*.local.toml\n"),
        ],
        "ignore rules",
    );
    write(&repo.base, "config/dev.local.toml", "token = \"abc123\"\n");
    repo.install_hooks();
    let (wt, _) = added(&repo, &["add", "42"]);
    assert!(wt.join("config/dev.local.toml").is_file());
    // The copied content under another name.
    let oid = commit(
        &repo,
        &wt,
        &[("docs/notes.txt", "token = \"abc123\"\n")],
        false,
        "x",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "docs/notes.txt", &oid);
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    // A new file that .worktreeinclude names, forced past .gitignore.
    let files = [("config/prod.local.toml", "other = 1\n")];
    let oid = commit(&repo, &wt, &files, true, "forced");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "config/prod.local.toml", &oid);
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    // Ordinary work still goes through.
    let ok = commit(&repo, &wt, &[("src/new.txt", "work\n")], false, "work");
    push(&repo, &wt, &["card/42"]).expect_code(0);
    assert_eq!(head(&repo, &wt), ok);
}

#[test]
fn copies_are_sparse_finished_on_retry_and_bounded_by_the_deadline() {
    let repo = TestRepo::new();
    repo.commit_files(&[(".gitignore", ".env\n.env.*\nbig/\n")], "ignore");
    write(&repo.base, "big/a.txt", "a\n");
    write(&repo.base, "big/sub/deep/b.txt", "b\n");
    let sparse = std::fs::File::create(repo.base.join("big/sparse.bin")).unwrap();
    sparse.set_len(64 << 20).unwrap();
    sparse.write_all_at(&[1u8; 4096], 16 << 20).unwrap();
    drop(sparse);
    repo.write_rules("worktree:\n  sharing:\n    copy: [big]\n    copy_method: copy\n");
    let (tree, _) = added(&repo, &["add", "1"]);
    let copied = std::fs::metadata(tree.join("big/sparse.bin")).unwrap();
    assert_eq!(copied.len(), 64 << 20);
    assert!(
        copied.blocks() * 512 < 1 << 20,
        "a sparse file became {} KiB",
        copied.blocks() / 2
    );
    // An interrupted earlier run: a temporary left behind, a file not copied yet.
    repo.edit_record(&tree, "state", "failed");
    let leftover = tree.join("big/.kardwt-tmp-4242-7");
    std::fs::write(&leftover, "half a copy").unwrap();
    std::fs::remove_file(tree.join("big/a.txt")).unwrap();
    // And a directory it was filling under a temporary name, holding a symlink out of the
    // tree that the cleanup must not follow; the directory it was for is missing.
    let half_dir = tree.join("big/.kardwt-tmp-4242-8");
    write(&half_dir, "deep/b.txt", "half\n");
    std::os::unix::fs::symlink(repo.base.join("big"), half_dir.join("out")).unwrap();
    std::fs::remove_dir_all(tree.join("big/sub")).unwrap();
    // Past the deadline, the copy stops: exit 5, the record failed, nothing handed out.
    let out = repo.kardwt(&repo.base, &["add", "1", "--timeout", "0"]);
    out.expect_code(5);
    assert!(out.stderr.contains("deadline"), "{out}");
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("failed"));
    // The retry finishes it: temporaries removed, missing files copied, then ready.
    added(&repo, &["add", "1"]);
    assert!(!leftover.exists(), "the leftover temporary is still there");
    assert!(
        !half_dir.exists(),
        "the half-filled directory is still there"
    );
    assert_eq!(
        read(&repo.base, "big/a.txt"),
        "a\n",
        "the cleanup followed a symlink"
    );
    assert_eq!(read(&tree, "big/sub/deep/b.txt"), "b\n");
    assert_eq!(read(&tree, "big/a.txt"), "a\n");
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
}

#[test]
fn worktreeinclude_looks_only_where_its_patterns_reach() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (
                ".gitignore",
                ".env\n.env.*\nnode_modules/\nbuild/\nvendor/\n",
            ),
            (
                ".worktreeinclude",
                ".env.local\nbuild/keep/*.bin\nnode_modules/\n!node_modules/.cache/\n",
            ),
        ],
        "ignore rules",
    );
    for rel in [
        ".env.local",
        "sub/.env.local",
        "build/keep/a.bin",
        "build/keep/b.txt",
        "build/other/c.bin",
        "vendor/.env.local",
        "node_modules/pkg/index.js",
        "node_modules/.cache/x",
    ] {
        write(&repo.base, rel, rel);
    }
    let (tree, stderr) = added(&repo, &["add", "1"]);
    for rel in [
        ".env.local",
        "sub/.env.local",
        "build/keep/a.bin",
        "node_modules/pkg/index.js",
    ] {
        assert!(tree.join(rel).is_file(), "{rel} not copied:\n{stderr}");
    }
    // An ignored directory no pattern leads into is not looked into: a name-only pattern
    // does not reach inside it (git cannot re-include what an excluded directory holds).
    for rel in [
        "build/keep/b.txt",
        "build/other/c.bin",
        "vendor/.env.local",
        "node_modules/.cache/x",
    ] {
        assert!(!tree.join(rel).exists(), "{rel} copied");
    }
}
