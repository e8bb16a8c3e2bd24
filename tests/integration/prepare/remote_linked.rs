//! A remote hit writes each file once: the local entry's file, hard-linked into the tree once
//! its content is checked. A file then changed in place in that tree changes the entry with it,
//! and the next local hit, which checks every file, takes the entry for damaged: a miss, the
//! prepare runs, and the new tree is what a prepare makes; the changed tree keeps its change.
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;

use super::remote::{add, prepared, trusting_reader, write_one, READER};
use crate::support::seaweed::Seaweed;
use crate::support::{snapshot, TestRepo};

/// The only local entry's files directory.
fn entry_files(repo: &TestRepo) -> PathBuf {
    let cache = repo.common_dir().join("kardwt/cache");
    let entries: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].join("files")
}

#[test]
fn a_remote_hit_links_the_entrys_files_and_a_change_in_place_is_a_damaged_entry_later() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    let one = write_one(&repo, &server);
    let written = snapshot(&one.join("node_modules"));
    trusting_reader(&repo, &server);
    let out = add(&repo, "3", &READER);
    out.expect_code(0);
    assert!(
        prepared(&repo, "3").starts_with("cache: remote hit"),
        "{out}"
    );
    let three = repo.card_path("3");
    assert!(snapshot(&three.join("node_modules")) == written);

    // The tree's files are the entry's (one inode, two names), symlinks and directories not.
    let files = entry_files(&repo);
    for rel in [
        "node_modules/pkg/big.bin",
        "node_modules/pkg/lib/index.js",
        "node_modules/.bin/tool",
    ] {
        let (tree, entry) = (
            std::fs::symlink_metadata(three.join(rel)).unwrap(),
            std::fs::symlink_metadata(files.join(rel)).unwrap(),
        );
        assert_eq!(
            (tree.dev(), tree.ino()),
            (entry.dev(), entry.ino()),
            "{rel}"
        );
        assert_eq!(tree.nlink(), 2, "{rel}");
    }
    assert_eq!(
        std::fs::symlink_metadata(three.join("node_modules/pkg/lib/same.js"))
            .unwrap()
            .nlink(),
        2
    );

    // Changed in place in card 3 (not replaced): the entry's file changes too.
    let changed = three.join("node_modules/pkg/lib/index.js");
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&changed)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"module.exports = 2\n"))
        .unwrap();
    assert_eq!(
        std::fs::read(files.join("node_modules/pkg/lib/index.js")).unwrap(),
        b"module.exports = 2\n"
    );

    // The next card is no hit of that entry: it is damaged, replaced, and prepare runs.
    let out = add(&repo, "4", &READER);
    out.expect_code(0);
    let said = prepared(&repo, "4");
    assert!(
        said.contains("damaged") && said.contains("replaced"),
        "{said}\n{out}"
    );
    assert_eq!(repo.prepare_runs(), ["ran", "ran"], "{out}");
    // The prepare's own tree (its big.bin is random bytes, so that one file differs).
    let mut four = snapshot(&repo.card_path("4").join("node_modules"));
    let mut want = written.clone();
    let big = std::path::Path::new("pkg/big.bin");
    assert_eq!(
        four.remove(big).map(|b| b.len()),
        want.remove(big).map(|b| b.len())
    );
    assert!(four == want);
    // Card 3 keeps its change; nothing of kardwt touched it.
    assert_eq!(std::fs::read(&changed).unwrap(), b"module.exports = 2\n");
}
