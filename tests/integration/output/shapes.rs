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

/// Every other command's `--json`, whole, on one tree.
#[test]
fn every_other_json_has_its_shape() {
    let repo = TestRepo::new();
    let add = repo.kardwt(&repo.base, &["add", "5", "--json"]);
    add.expect_code(0);
    let wt = repo.card_path("5");
    let wt = wt.to_str().unwrap();
    let mut shapes = serde_json::Map::new();
    shapes.insert("add".into(), add.json());
    for (name, args) in [
        (
            "select",
            &["select", "5", "--existing-or-base", "--json"][..],
        ),
        ("status", &["status", "5", "--json"]),
        ("gc", &["gc", "--offline", "--json"]),
        ("log", &["log", "5", "--json"]),
        ("config_check", &["config", "check", "--json"]),
    ] {
        let out = repo.kardwt(&repo.base, args);
        assert_eq!(out.code, 0, "{name}: {out}");
        shapes.insert(name.into(), out.json());
    }
    let release = repo.kardwt(&repo.base, &["release", "--path", wt, "--json"]);
    release.expect_code(0);
    shapes.insert("release".into(), release.json());
    pinned(&repo).bind(|| insta::assert_json_snapshot!("every_other_json", shapes));
}

/// `doctor --json` when all is well (rules with a prepare hook, hooks installed), whole.
#[test]
fn doctor_json_has_its_shape_when_healthy() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let out = repo.kardwt(&repo.base, &["doctor", "--json"]);
    out.expect_code(0);
    pinned(&repo).bind(|| insta::assert_json_snapshot!("doctor_json_healthy", out.json()));
}

/// `doctor --json` with problems (no hooks installed, a tree made with hooks bypassed), whole.
#[test]
fn doctor_json_has_its_shape_with_a_problem() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let unseeded = repo.sibling("unseeded");
    repo.add_unhooked_worktree(unseeded.to_str().unwrap(), "feature/unseeded");
    let out = repo.kardwt(&repo.base, &["doctor", "--json"]);
    out.expect_code(1);
    pinned(&repo).bind(|| insta::assert_json_snapshot!("doctor_json_problem", out.json()));
}

/// The `--json` variants not shown above, whole: `list --json --status` of a dirty tree,
/// `select` falling back to the base, `add` reusing a tree, `env --format json`, `status` of
/// the base, and `verify --json` of a tree whose record names another card (its JSON on
/// stdout, the refusal on stderr, exit 3).
#[test]
fn the_other_json_variants_have_their_shapes() {
    let repo = TestRepo::new();
    let wt = repo.add_card("5");
    std::fs::write(wt.join("notes.txt"), "mine\n").unwrap();
    let mut shapes = serde_json::Map::new();
    for (name, args) in [
        ("list_status", &["list", "--json", "--status"][..]),
        (
            "select_base",
            &["select", "6", "--existing-or-base", "--json"],
        ),
        ("add_reuse", &["add", "5", "--json"]),
        ("env", &["env", "5", "--format", "json"]),
        ("status_of_the_base", &["status", "--json"]),
    ] {
        let out = repo.kardwt(&repo.base, args);
        assert_eq!(out.code, 0, "{name}: {out}");
        shapes.insert(name.into(), out.json());
    }
    repo.edit_record(&wt, "card", "9");
    let foreign = repo.kardwt(&repo.base, &["verify", "5", "--json"]);
    shapes.insert(
        "verify_foreign".into(),
        serde_json::json!({
            "exit": foreign.code,
            "stdout": foreign.json(),
            "stderr": foreign.stderr,
        }),
    );
    pinned(&repo).bind(|| insta::assert_json_snapshot!("other_json_variants", shapes));
}
