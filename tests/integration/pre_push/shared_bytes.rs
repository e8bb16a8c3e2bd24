//! Bytes kardwt shared or copied stay blocked wherever they end up: a file copied into a tree
//! and committed there under another name is refused from any checkout after the tree is
//! removed (the branch kept), and a file inside a linked directory is refused under any name
//! and at any depth, while ordinary work still goes through. Of a copied directory, its `.env`
//! files are protected, not its dependencies.
use std::path::Path;

use crate::support::push::{assert_blocked, commit, ls_remote, push};
use crate::support::TestRepo;

fn write(root: &Path, rel: &str, body: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

#[test]
fn a_copied_secret_committed_in_a_removed_tree_is_still_refused_from_the_base() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nconfig/*.local.toml\n"),
            (".worktreeinclude", "config/*.local.toml\n"),
        ],
        "ignore rules",
    );
    write(
        &repo.base,
        "config/dev.local.toml",
        b"token = \"copied-secret-1\"\n",
    );
    repo.install_hooks();
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(0);
    let wt = std::path::PathBuf::from(out.stdout.trim());
    assert!(wt.join("config/dev.local.toml").is_file(), "not copied");
    let oid = commit(
        &repo,
        &wt,
        &[("docs/notes.txt", "token = \"copied-secret-1\"\n")],
        false,
        "notes",
    );
    repo.kardwt(&repo.base, &["remove", "1"]).expect_code(0);
    assert!(!wt.exists(), "the tree is still there");
    assert_eq!(
        repo.git(&repo.base, &["rev-parse", "card/1"]).trim(),
        oid,
        "the branch was not kept"
    );
    let out = push(&repo, &repo.base, &["card/1"]);
    assert_blocked(&repo, &out, "docs/notes.txt", &oid);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_shared_secret",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    // A second card, added after the first is gone, is blocked the same way.
    let out = repo.kardwt(&repo.base, &["add", "2"]);
    out.expect_code(0);
    let wt2 = std::path::PathBuf::from(out.stdout.trim());
    repo.git(&wt2, &["merge", "--quiet", "--ff-only", "card/1"]);
    let out = push(&repo, &wt2, &["card/2"]);
    assert_blocked(&repo, &out, "docs/notes.txt", &oid);
    // Ordinary work from the base still goes through.
    repo.git(&repo.base, &["switch", "--quiet", "-c", "work"]);
    let ok = commit(
        &repo,
        &repo.base,
        &[("src/new.txt", "work\n")],
        false,
        "work",
    );
    push(&repo, &repo.base, &["work"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
}

#[test]
fn a_file_inside_a_linked_directory_is_refused_under_any_name_and_depth() {
    let repo = TestRepo::new();
    repo.commit_files(&[(".gitignore", ".env\n.env.*\ndata/\n")], "ignore data");
    let secret = b"{\"api_key\": \"linked-secret-6\"}\n";
    write(&repo.base, "data/fixtures/deep/creds.json", secret);
    // Files of other sizes are never read: many of them cost no more than a stat each.
    for i in 0..200 {
        write(
            &repo.base,
            &format!("data/bulk/{i}.bin"),
            &vec![b'x'; 1000 + i],
        );
    }
    repo.write_rules("worktree:\n  sharing:\n    link: [data]\n");
    repo.install_hooks();
    let out = repo.kardwt(&repo.base, &["add", "6"]);
    out.expect_code(0);
    let wt = std::path::PathBuf::from(out.stdout.trim());
    assert!(
        wt.join("data").symlink_metadata().unwrap().is_symlink(),
        "data is not linked"
    );
    let body = String::from_utf8(secret.to_vec()).unwrap();
    for path in ["notes/copy.txt", "creds.json", "a/b/c/d/fixtures.json"] {
        let oid = commit(&repo, &wt, &[(path, &body)], false, "copy");
        let out = push(&repo, &wt, &["card/6"]);
        assert_blocked(&repo, &out, path, &oid);
        assert!(
            out.stderr.contains("data/fixtures/deep/creds.json"),
            "the linked file is not named:\n{out}"
        );
        repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    }
    // A file of the same size with other bytes, and ordinary work, go through.
    let other = body.replace("linked", "LINKED");
    let ok = commit(&repo, &wt, &[("notes/other.txt", &other)], false, "other");
    push(&repo, &wt, &["card/6"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
}

#[test]
fn shared_bytes_committed_in_the_base_are_refused_though_the_base_then_tracks_them() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[(".gitignore", ".env\n.env.*\ndata/\nseed.sql\n")],
        "ignore",
    );
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    write(
        &repo.base,
        "seed.sql",
        b"insert into keys values ('linked-file-7');\n",
    );
    write(
        &repo.base,
        "data/deep/creds.json",
        b"{\"k\": \"linked-dir-7\"}\n",
    );
    write(
        &repo.base,
        "data/public.json",
        b"{\"k\": \"already public\"}\n",
    );
    repo.write_rules("worktree:\n  sharing:\n    link: [data, seed.sql]\n");
    repo.install_hooks();
    let wt = repo.add_card("7");
    repo.git(&repo.base, &["switch", "--quiet", "-c", "topic"]);
    for (src, path) in [
        ("seed.sql", "dump/seed-copy.sql"),
        ("data/deep/creds.json", "fixtures/creds.json"),
    ] {
        let body = std::fs::read_to_string(repo.base.join(src)).unwrap();
        let oid = commit(&repo, &repo.base, &[(path, &body)], false, "copy");
        let out = push(&repo, &repo.base, &["topic"]);
        assert_blocked(&repo, &out, path, &oid);
        // The base tracked those bytes while the commit was there; from the card too.
        let oid = commit(&repo, &wt, &[(path, &body)], false, "copy");
        let out = push(&repo, &wt, &["card/7"]);
        assert_blocked(&repo, &out, path, &oid);
        repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
        repo.git(&repo.base, &["reset", "--quiet", "--hard", "HEAD~1"]);
    }
    // Bytes the remote already has in a commit are public: they pass.
    let public = std::fs::read_to_string(repo.base.join("data/public.json")).unwrap();
    repo.git(&repo.base, &["switch", "--quiet", "main"]);
    repo.commit_files(&[("docs/public.json", &public)], "public");
    repo.git(&repo.base, &["fetch", "--quiet", "origin"]);
    let ok = commit(
        &repo,
        &wt,
        &[("more/public.json", &public)],
        false,
        "public",
    );
    push(&repo, &wt, &["card/7"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
}

#[test]
fn a_symlink_to_a_linked_path_is_refused_after_the_linking_tree_is_removed() {
    let repo = TestRepo::new();
    repo.commit_files(&[(".gitignore", ".env\n.env.*\nseed.sql\n")], "ignore");
    write(
        &repo.base,
        "seed.sql",
        b"insert into keys values ('linked-8');\n",
    );
    repo.write_rules("worktree:\n  sharing:\n    link: [seed.sql]\n");
    repo.install_hooks();
    let wt = repo.add_card("8");
    std::os::unix::fs::symlink("seed.sql", wt.join("creds.md")).unwrap();
    repo.git(&wt, &["add", "creds.md"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "link"]);
    let oid = crate::support::push::head(&repo, &wt);
    let out = push(&repo, &wt, &["card/8"]);
    assert_blocked(&repo, &out, "creds.md", &oid);
    // The rules no longer link it and the tree is gone: kardwt's exclude block still says so.
    repo.write_rules("worktree: {}\n");
    repo.kardwt(&repo.base, &["remove", "8"]).expect_code(0);
    let out = push(&repo, &repo.base, &["card/8"]);
    assert_blocked(&repo, &out, "creds.md", &oid);
}

/// Of a copied directory, pre-push protects the `.env` files (only those are hashed at copy
/// time): a copy of one is refused under any name, while a dependency file's content, which
/// any clone of the project can fetch again, goes through.
#[test]
fn the_env_files_of_a_copied_directory_are_protected_and_its_dependencies_are_not() {
    let repo = TestRepo::new();
    repo.commit_files(&[(".gitignore", ".env\n.env.*\nvendor/\n")], "ignore");
    write(&repo.base, "vendor/pkg/.env.local", b"TOKEN=vendored-9\n");
    write(&repo.base, "vendor/pkg/index.js", b"module.exports = 9;\n");
    repo.write_rules("worktree:\n  sharing:\n    copy: [vendor]\n");
    repo.install_hooks();
    let wt = repo.add_card("9");
    assert!(wt.join("vendor/pkg/.env.local").is_file(), "not copied");
    let oid = commit(
        &repo,
        &wt,
        &[("docs/env.txt", "TOKEN=vendored-9\n")],
        false,
        "env",
    );
    let out = push(&repo, &wt, &["card/9"]);
    assert_blocked(&repo, &out, "docs/env.txt", &oid);
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    let files = [("lib/index.js", "module.exports = 9;\n")];
    let ok = commit(&repo, &wt, &files, false, "vendored code");
    push(&repo, &wt, &["card/9"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
}
