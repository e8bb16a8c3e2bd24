//! The sample prepare script kardwt ships (`githooks/prepare.sample`, installed beside the hook
//! shims) works as the README's setup uses it: committed as `tools/kardwt/prepare`, trusted,
//! run by `add` in the new tree, with the prepare cache off and on (a second card is a hit);
//! and it fails the preparation, saying why, when a lock file asks for a tool the hook's PATH
//! lacks.
use std::os::unix::fs::PermissionsExt;

use crate::support::*;

const SAMPLE: &str = include_str!("../../../githooks/prepare.sample");

/// Commit the sample as `tools/kardwt/prepare` with the files `extra`, write the README's rules
/// plus `rules` (indented under `worktree:`) and trust the helper.
fn commit_sample(repo: &TestRepo, extra: &[(&str, &str)], rules: &str) {
    let script = repo.scratch.join("tools/kardwt/prepare");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, SAMPLE).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&repo.scratch, &["add", "--", "tools/kardwt/prepare"]);
    for (rel, body) in extra {
        std::fs::write(repo.scratch.join(rel), body).unwrap();
        // The test repository ignores `.env.*`; a project commits its example anyway.
        repo.git(&repo.scratch, &["add", "--force", "--", rel]);
    }
    repo.git(
        &repo.scratch,
        &["commit", "--quiet", "-m", "prepare script"],
    );
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    repo.write_rules(&format!(
        "worktree:\n  helpers:\n    from_repository: tools/kardwt\n  prepare:\n    argv: [tools/kardwt/prepare]\n{rules}",
    ));
    repo.kardwt_ok(&repo.base, &["trust"]);
}

#[test]
fn the_shipped_sample_prepares_a_tree_as_the_readme_sets_it_up() {
    let repo = TestRepo::new();
    commit_sample(&repo, &[(".env.example", "API_URL=http://localhost\n")], "");
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    out.expect_code(0);
    let tree = repo.card_path("1");
    assert_eq!(
        std::fs::read_to_string(tree.join(".env")).unwrap_or_else(|e| panic!("{e}:\n{out}")),
        "API_URL=http://localhost\n",
        "the sample did not start .env from .env.example:\n{out}"
    );
    assert!(out.stderr.contains("prepare: card 1 (create)"), "{out}");
    assert!(out.stderr.contains("prepare: done"), "{out}");
}

#[test]
fn the_sample_fails_the_preparation_when_a_lock_file_needs_a_tool_off_the_hooks_path() {
    let repo = TestRepo::new();
    // yarn is on no PATH the hook gets here (/usr/local/bin:/usr/bin:/bin on a test machine).
    if ["/usr/local/bin/yarn", "/usr/bin/yarn", "/bin/yarn"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
    {
        eprintln!("skipped: yarn is installed system-wide here");
        return;
    }
    commit_sample(&repo, &[("yarn.lock", "")], "");
    let out = repo.kardwt(&repo.base, &["add", "1"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains("yarn.lock asks for yarn, which is not on the hook's PATH"),
        "{out}"
    );
    assert!(
        !repo.card_path("1").exists(),
        "a failed tree stayed:\n{out}"
    );
}

#[test]
fn the_shipped_sample_works_with_the_prepare_cache_on_and_a_second_card_is_a_hit() {
    let repo = TestRepo::new();
    // An npm of the user's own, on a PATH the rules let through (as the sample's comments
    // say): it installs the lockfile's packages into node_modules, and logs each run.
    let bin = repo.tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = repo.prepare_log();
    std::fs::write(
        bin.join("npm"),
        format!(
            "#!/bin/sh\necho \"npm $*\" >> {}\nmkdir -p node_modules/pkg\n\
             cp package-lock.json node_modules/pkg/lock-copy\n",
            crate::support::sh_quote(&log)
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    commit_sample(
        &repo,
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            (".env.example", "API_URL=http://localhost\n"),
            ("package-lock.json", "{\"lockfileVersion\": 3}\n"),
        ],
        "    inputs: [package-lock.json, .env.example]\n    outputs: [node_modules, .env]\n  \
         ports: {count: 1, range: [47400, 47499]}\n  environment:\n    passthrough: [PATH]\n",
    );
    let kardwt_dir = std::path::Path::new(crate::support::BIN).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        kardwt_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let add = |card: &str| {
        repo.spawn_with_env(
            "git",
            &repo.base,
            &["kardwt", "add", card],
            &[("PATH", std::ffi::OsStr::new(&path))],
        )
        .wait(crate::support::COMMAND_TIMEOUT)
    };
    let out = add("1");
    out.expect_code(0);
    assert!(out.stderr.contains("prepare: done"), "{out}");
    assert_eq!(
        repo.prepare_runs(),
        ["npm ci --prefer-offline --no-audit --no-fund"],
        "{out}"
    );
    let out = add("2");
    out.expect_code(0);
    assert_eq!(repo.prepare_runs().len(), 1, "card 2 ran prepare:\n{out}");
    for card in ["1", "2"] {
        let tree = repo.card_path(card);
        assert_eq!(
            std::fs::read_to_string(tree.join(".env")).unwrap(),
            "API_URL=http://localhost\n"
        );
        assert_eq!(
            std::fs::read_to_string(tree.join("node_modules/pkg/lock-copy")).unwrap(),
            "{\"lockfileVersion\": 3}\n"
        );
    }
    let rec = repo.record(&repo.card_path("2"));
    assert_eq!(
        rec["prepare_cache"]["outcome"].as_str(),
        Some("hit"),
        "{rec:?}"
    );
}
