//! The `--json` shapes, whole: every field a script reads, in order.
use crate::support::{pinned, TestRepo};

#[test]
fn verify_json_has_its_shape() {
    let repo = TestRepo::new();
    repo.add_card("3");
    let out = repo.kardwt(&repo.base, &["verify", "3", "--json"]);
    out.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    pinned(&repo).bind(|| insta::assert_json_snapshot!("verify_json", v));
}

#[test]
fn list_json_has_its_shape() {
    let repo = TestRepo::new();
    repo.add_card("3");
    let out = repo.kardwt(&repo.base, &["list", "--json"]);
    out.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    pinned(&repo).bind(|| insta::assert_json_snapshot!("list_json", v));
}

#[test]
fn remove_json_has_its_shape() {
    let repo = TestRepo::new();
    repo.add_card("3");
    let out = repo.kardwt(&repo.base, &["remove", "3", "--json"]);
    out.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    pinned(&repo).bind(|| insta::assert_json_snapshot!("remove_json", v));
}
