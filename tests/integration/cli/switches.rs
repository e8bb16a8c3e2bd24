//! The binary answers to no switch meant for tests: what a test needs forced (a tree removed by
//! git in place, a deleter killed before it deleted a file) it forces from outside, with
//! strace's fault injection (tests/integration/faults/repair.rs, remove/aside.rs).
use std::path::{Path, PathBuf};

use crate::support::BIN;

/// The prefix the test-only switches had; none may come back.
const SWITCH: &[u8] = b"KARDWT_TEST_";

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut at = 0;
    while let Some(i) = hay[at..].iter().position(|&b| b == first) {
        let start = at + i;
        if hay[start..].starts_with(needle) {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn neither_the_binary_nor_its_source_names_a_test_switch() {
    let bytes = std::fs::read(BIN).unwrap();
    if let Some(at) = find(&bytes, SWITCH) {
        let end = (at + 40).min(bytes.len());
        panic!(
            "{BIN} holds {:?} at byte {at}: the release binary would read a test switch",
            String::from_utf8_lossy(&bytes[at..end])
        );
    }
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(!files.is_empty());
    let naming: Vec<String> = files
        .iter()
        .filter(|f| find(&std::fs::read(f).unwrap(), SWITCH).is_some())
        .map(|f| f.display().to_string())
        .collect();
    assert!(naming.is_empty(), "test switches in src: {naming:?}");
}
