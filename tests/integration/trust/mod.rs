//! Committed helpers trusted once per machine: `git kardwt trust` copies the rules' helpers
//! directory from the base's HEAD into the user's store; hooks run those copies only, for a
//! tree whose commit holds the same directory; an upstream change runs nothing, and creates
//! nothing, until it is trusted again.
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::*;

mod adversary;
mod older_cards;
mod signers;

/// The same rules on every machine: no absolute path in them.
const RULES: &str = "worktree:
  helpers:
    from_repository: tools/kardwt
  prepare:
    argv: [tools/kardwt/prepare, --from-rules]
  cleanup:
    argv: [tools/kardwt/cleanup]
";

/// A prepare script that writes which version it is (and its argument) into the tree, and a
/// cleanup script that appends to a log outside the trees.
fn scripts(repo: &TestRepo, version: &str) -> Vec<(String, String)> {
    let log = repo.tmp.join("cleanup.log");
    vec![
        (
            "tools/kardwt/prepare".into(),
            format!(
                "#!/bin/sh\nprintf '{version} %s\\n' \"$1\" > \"$KARDWT_WORKTREE/.prepared-by\"\n"
            ),
        ),
        (
            "tools/kardwt/cleanup".into(),
            format!(
                "#!/bin/sh\necho \"{version} $KARDWT_CARD\" >> {}\n",
                sh_quote(&log)
            ),
        ),
    ]
}

/// Commit executable `files` on origin's main (through the scratch clone); `pull` the base
/// too (a teammate's change the base has not pulled yet otherwise).
fn commit_scripts(repo: &TestRepo, files: &[(String, String)], pull: bool) -> String {
    for (rel, body) in files {
        let p = repo.scratch.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        repo.git(&repo.scratch, &["add", "--", rel]);
    }
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "helpers"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    if pull {
        repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    }
    repo.origin_main()
}

fn store(repo: &TestRepo) -> PathBuf {
    repo.home.join(".local/share/git-kardwt/trusted")
}

fn prepared_by(tree: &Path) -> String {
    std::fs::read_to_string(tree.join(".prepared-by")).unwrap_or_default()
}

/// `add 1`'s refusal of untrusted helpers, whole: it names `git kardwt trust` for a person to
/// run, and sends an agent reading it to its user.
#[track_caller]
fn names_trust(repo: &TestRepo, out: &Output) {
    pinned(repo)
        .bind(|| insta::assert_snapshot!("untrusted_add_refused", pinned_case("add 1", out)));
}

#[test]
fn untrusted_helpers_refuse_before_anything_is_created_and_trust_lets_them_run() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    let before = repo.snapshot_base();

    // add and config check refuse, naming `git kardwt trust` for a person to run (an agent
    // reading the refusal is sent to its user).
    let add = repo.kardwt(&repo.base, &["add", "1"]);
    add.expect_code(3);
    repo.assert_nothing_created(&before, "add before trust");
    let check = repo.kardwt(&repo.base, &["config", "check"]);
    check.expect_code(3);
    let mut shown = pinned_case("add 1", &add) + &pinned_case("config check", &check);
    let out = repo.kardwt(&repo.base, &["doctor"]);
    out.expect_code(1);
    assert!(out.stdout.contains("git kardwt trust"), "{out}");
    // One cause once: not one finding per hook, nor again for the same fetched helpers.
    assert_eq!(
        out.stdout.matches("not trusted on this machine").count(),
        1,
        "{out}"
    );
    assert!(!store(&repo).exists(), "nothing was trusted yet");

    // A dry run shows what it would trust and copies nothing.
    let out = repo.kardwt(&repo.base, &["trust", "--dry-run"]);
    out.expect_code(0);
    assert!(!store(&repo).exists(), "a dry run copied:\n{out}");
    shown.push_str(&pinned_case("trust --dry-run", &out));

    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("trust", &out));
    repo.kardwt(&repo.base, &["config", "check"]).expect_code(0);

    let tree = repo.add_card("1");
    assert_eq!(prepared_by(&tree), "v1 --from-rules\n");
    let out = repo.kardwt(&repo.base, &["doctor"]);
    assert!(!out.stdout.contains("git kardwt trust"), "{out}");
    std::fs::remove_file(tree.join(".prepared-by")).unwrap();
    repo.kardwt_ok(&repo.base, &["remove", "1"]);
    let log = std::fs::read_to_string(repo.tmp.join("cleanup.log")).unwrap();
    assert_eq!(log, "v1 1\n", "the trusted cleanup ran on removal");

    // Trusting again copies nothing and says so.
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("trust again", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_first_time", shown));
}

#[test]
fn an_upstream_change_runs_nothing_until_it_is_trusted_again() {
    let repo = TestRepo::new();
    let v1 = commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let one = repo.add_card("1");
    assert_eq!(prepared_by(&one), "v1 --from-rules\n");

    // A teammate changes the prepare script upstream; the base has not pulled it.
    let mut v2 = scripts(&repo, "v2");
    v2.truncate(1);
    let v2_oid = commit_scripts(&repo, &v2, false);
    let branches = repo.card_branches();
    let out = repo.kardwt(&repo.base, &["add", "2"]);
    out.expect_code(3);
    assert!(out.stderr.contains(&v2_oid), "names the commit:\n{out}");
    let mut shown = pinned_case("add 2, the change fetched", &out);
    assert!(!repo.card_path("2").exists(), "a tree was created:\n{out}");
    assert_eq!(repo.card_branches(), branches, "a branch was created");
    // doctor sees the change at the fetched base ref, not yet at the base's HEAD.
    let out = repo.kardwt(&repo.base, &["doctor"]);
    out.expect_code(1);
    assert!(out.stdout.contains("last fetched"), "{out}");
    assert!(out.stdout.contains("git kardwt trust"), "{out}");
    // Trusting before the base has the change trusts only what the base holds.
    let out = repo.kardwt(&repo.base, &["trust"]);
    shown.push_str(&pinned_case("trust, the change not pulled", &out));
    repo.kardwt(&repo.base, &["add", "2"]).expect_code(3);

    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("trust, the change pulled", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_an_upstream_change", shown));
    assert!(
        out.stdout.contains(&format!("git diff {}", &v1[..12])),
        "shows how to read the change:\n{out}"
    );
    let two = repo.add_card("2");
    assert_eq!(prepared_by(&two), "v2 --from-rules\n");
    // The older tree keeps the version it was made with.
    std::fs::remove_file(one.join(".prepared-by")).unwrap();
    repo.kardwt_ok(&repo.base, &["prepare", "1"]);
    assert_eq!(prepared_by(&one), "v1 --from-rules\n");
}

#[test]
fn the_tree_never_supplies_the_program_and_a_tampered_copy_does_not_run() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let tree = repo.add_card("1");
    // The agent rewrites the script in its tree, even commits it: the trusted copy runs.
    let script = tree.join("tools/kardwt/prepare");
    std::fs::write(
        &script,
        "#!/bin/sh\necho agent > \"$KARDWT_WORKTREE/.prepared-by\"\n",
    )
    .unwrap();
    repo.git(&tree, &["commit", "--quiet", "-am", "mine"]);
    repo.kardwt_ok(&repo.base, &["prepare", "1"]);
    assert_eq!(prepared_by(&tree), "v1 --from-rules\n");

    // A copy in the store whose bytes changed is not run; trusting again restores it.
    let copy = walk(&store(&repo))
        .into_iter()
        .find(|p| p.ends_with("tools/kardwt/prepare"))
        .expect("the trusted copy");
    std::fs::write(
        &copy,
        "#!/bin/sh\necho tampered > \"$KARDWT_WORKTREE/.prepared-by\"\n",
    )
    .unwrap();
    std::fs::remove_file(tree.join(".prepared-by")).unwrap();
    let out = repo.kardwt(&repo.base, &["prepare", "1"]);
    out.expect_code(3);
    let mut shown = pinned_case("prepare 1, the copy tampered", &out);
    assert_eq!(prepared_by(&tree), "", "the tampered copy ran");
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(0);
    shown.push_str(&pinned_case("trust again", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_a_tampered_copy", shown));
    repo.kardwt_ok(&repo.base, &["prepare", "1"]);
    assert_eq!(prepared_by(&tree), "v1 --from-rules\n");
}

#[test]
fn a_plain_worktree_add_with_untrusted_helpers_is_undone_and_names_trust() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    repo.write_rules(RULES);
    repo.install_hooks();
    let path = repo.root().join("plain");
    let out = repo.worktree_add(&[path.to_str().unwrap(), "-b", "plain"]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "untrusted_plain_worktree_add",
            pinned_case("worktree add", &out)
        )
    });
    assert!(
        !repo.is_registered(&path),
        "the unseeded tree stayed:\n{out}"
    );
    repo.kardwt_ok(&repo.base, &["trust"]);
    let out = repo.worktree_add(&[path.to_str().unwrap(), "-b", "plain2"]);
    out.expect_code(0);
    assert_eq!(prepared_by(&path), "v1 --from-rules\n");
}

#[test]
fn rules_that_mix_or_escape_the_helpers_directory_are_refused() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), true);
    let cases = [
        (
            "stable_root",
            "worktree:\n  helpers:\n    from_repository: tools/kardwt\n    stable_root: /opt/h\n",
        ),
        (
            "absolute_argv",
            "worktree:\n  helpers:\n    from_repository: tools/kardwt\n  prepare:\n    argv: [/bin/sh]\n",
        ),
        (
            "argv_escaping",
            "worktree:\n  helpers:\n    from_repository: tools/kardwt\n  prepare:\n    argv: [tools/kardwt/../../x]\n",
        ),
        (
            "outside_the_repository",
            "worktree:\n  helpers:\n    from_repository: ../elsewhere\n",
        ),
    ];
    let mut shown = String::new();
    for (name, rules) in cases {
        repo.write_rules(rules);
        let before = repo.snapshot_base();
        for args in [&["config", "check"][..], &["trust"], &["add", "1"]] {
            let out = repo.kardwt(&repo.base, args);
            out.expect_code(2);
            shown.push_str(&pinned_case(&format!("{name}: {}", args.join(" ")), &out));
            repo.assert_nothing_created(&before, rules);
        }
        assert!(!store(&repo).exists(), "{rules}: something was trusted");
    }
    // No committed helpers named: trust says what to do.
    repo.write_rules("worktree: {}\n");
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(2);
    shown.push_str(&pinned_case("no helpers named: trust", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_rules_refused", shown));
}

#[test]
fn a_symlink_among_the_helpers_is_not_trusted() {
    let repo = TestRepo::new();
    commit_scripts(&repo, &scripts(&repo, "v1"), false);
    std::os::unix::fs::symlink("/bin/sh", repo.scratch.join("tools/kardwt/sh")).unwrap();
    repo.git(&repo.scratch, &["add", "--", "tools/kardwt/sh"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "a link"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    repo.write_rules(RULES);
    let out = repo.kardwt(&repo.base, &["trust"]);
    out.expect_code(3);
    pinned(&repo).bind(|| insta::assert_snapshot!("trust_a_symlink", pinned_case("trust", &out)));
    assert!(!store(&repo).exists(), "something was trusted:\n{out}");
}

/// Every file beneath `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
