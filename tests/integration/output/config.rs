//! What `config check` prints for a rules file it refuses, whole: one case for each way a value,
//! a key, a combination, the YAML itself or the file can be wrong.
use crate::support::{pinned, pinned_case, TestRepo};

/// Rules files refused by what they hold: each case's stderr and exit code, whole.
#[test]
fn every_kind_of_invalid_rules_is_pinned_whole() {
    let repo = TestRepo::new();
    let cases: &[(&str, &str)] = &[
        ("wrong_kind", "worktree: []\n"),
        ("explicit_null", "worktree:\n"),
        ("empty_remote", "worktree:\n  base:\n    remote: ''\n"),
        ("remote_dash", "worktree:\n  base:\n    remote: \"--upload-pack=x\"\n"),
        ("remote_dots", "worktree:\n  base:\n    remote: '..'\n"),
        ("ref_not_a_branch", "worktree:\n  base:\n    ref: main\n"),
        ("ref_format", "worktree:\n  base:\n    ref: refs/heads/a..b\n"),
        ("ref_empty_tag", "worktree:\n  base:\n    ref: refs/tags/\n"),
        ("remote_format", "worktree:\n  base:\n    remote: 'a b'\n"),
        (
            "bad_variable_name",
            "worktree:\n  environment:\n    passthrough: [OK, 1X]\n",
        ),
        ("relative_stable_root", "worktree:\n  helpers:\n    stable_root: opt/h\n"),
        ("copy_outside", "worktree:\n  sharing:\n    copy: [../x]\n"),
        ("too_small", "worktree:\n  action_timeout_seconds: 0\n"),
        (
            "too_large",
            "worktree:\n  ports: {count: 1, range: [2000, 70000]}\n",
        ),
        (
            "big_integer",
            "worktree:\n  action_timeout_seconds: 99999999999999999999999\n",
        ),
        ("unknown_value", "worktree:\n  sharing:\n    env: copy\n"),
        ("duplicate_key", "worktree:\n  base: {}\n  base: {}\n"),
        ("unknown_key", "worktree:\n  bases: {}\n"),
        ("missing_count", "worktree:\n  ports: {range: [2000, 2001]}\n"),
        (
            "prepare_without_stable_root",
            "worktree:\n  prepare:\n    argv: [/opt/h/p]\n",
        ),
        (
            "empty_argv",
            "worktree:\n  helpers:\n    stable_root: /opt/h\n  prepare:\n    argv: []\n",
        ),
        (
            "inverted_range",
            "worktree:\n  ports: {count: 1, range: [2001, 2000]}\n",
        ),
        (
            "range_of_three",
            "worktree:\n  ports: {count: 1, range: [2000, 2001, 2002]}\n",
        ),
        (
            "count_above_range",
            "worktree:\n  ports: {count: 3, range: [2000, 2001]}\n",
        ),
        ("delegated_without_prepare", "worktree:\n  checkout:\n    mode: delegated\n"),
        (
            "adoption_declared_twice",
            "worktree:\n  adoptions:\n    - {card: a, path: /x, common_dir: /g/.git, branch: card/a}\n    - {card: a, path: /y, common_dir: /g/.git, branch: card/a}\n",
        ),
        ("parser", "worktree:\n  base: {\n"),
        ("two_documents", "worktree: {}\n---\nworktree: {}\n"),
        ("unknown_anchor", "worktree:\n  base: *nope\n"),
    ];
    let mut all = String::new();
    for (name, yaml) in cases {
        repo.write_rules(yaml);
        let out = repo.kardwt(&repo.base, &["config", "check"]);
        assert_eq!(out.code, 2, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
    }
    let n = 100_000;
    repo.write_rules(&format!("other: {}{}\n", "[".repeat(n), "]".repeat(n)));
    let out = repo.kardwt(&repo.base, &["config", "check"]);
    assert_eq!(out.code, 2, "too_deep: {out}");
    all.push_str(&pinned_case("too_deep", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("config_refusals", all));
}

/// Rules files refused before a byte of them is decoded: a symlink that does not resolve, one
/// out of the base, a device, a file too large, bytes that are not UTF-8.
#[test]
fn unreadable_rules_files_are_pinned_whole() {
    let repo = TestRepo::new();
    let rules = repo.rules_path();
    let outside = repo.sibling("outside.yml");
    std::fs::write(&outside, "worktree: {}\n").unwrap();
    let mut all = String::new();
    let run = |name: &str, all: &mut String| {
        let out = repo.kardwt(&repo.base, &["config", "check"]);
        assert_eq!(out.code, 2, "{name}: {out}");
        all.push_str(&pinned_case(name, &out));
        let _ = std::fs::remove_file(&rules);
    };
    std::os::unix::fs::symlink(repo.base.join("nowhere.yml"), &rules).unwrap();
    run("dangling_symlink", &mut all);
    std::os::unix::fs::symlink(&outside, &rules).unwrap();
    run("symlink_outside_the_base", &mut all);
    let out = repo.kardwt(&repo.base, &["--rules", "/dev/zero", "config", "check"]);
    all.push_str(&pinned_case("device", &out));
    std::fs::write(&rules, "#".repeat((1 << 20) + 1)).unwrap();
    run("too_large", &mut all);
    std::fs::write(&rules, b"worktree: {}\n# \xff\n").unwrap();
    run("not_utf8", &mut all);
    pinned(&repo).bind(|| insta::assert_snapshot!("rules_file_refusals", all));
}
