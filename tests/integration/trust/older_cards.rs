//! A team that adds a cleanup helper after cards were made: the older cards' commits have no
//! such helper, so their cleanup hook cannot run. `remove` and `release` refuse before touching
//! anything and name `remove --force`; `remove --force` removes the tree, saying the cleanup
//! hook was not run, with every other check of a forced removal still made; cards made since
//! run the new helper.
use super::*;
use crate::support::snapshot;

/// Rules before the team had a cleanup script.
const PREPARE_ONLY: &str = "worktree:
  helpers:
    from_repository: tools/kardwt
  prepare:
    argv: [tools/kardwt/prepare, --from-rules]
";

#[test]
fn a_cleanup_helper_added_later_leaves_older_cards_removable_with_force() {
    let repo = TestRepo::new();
    let mut v1 = scripts(&repo, "v1");
    v1.truncate(1);
    commit_scripts(&repo, &v1, true);
    repo.write_rules(PREPARE_ONLY);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let one = repo.add_card("1");
    let two = repo.add_card("2");

    // The team adds the cleanup script and names it; a person trusts the new version.
    commit_scripts(&repo, &scripts(&repo, "v2"), true);
    repo.write_rules(RULES);
    repo.kardwt_ok(&repo.base, &["trust"]);
    let log = repo.tmp.join("cleanup.log");

    // Plain remove and release refuse before anything is touched, naming the way out.
    let wanted = format!("git kardwt remove --path {} --force", sh_quote(&one));
    let record = std::fs::read(repo.record_path(&one)).unwrap();
    let files = snapshot(&one);
    for args in [&["remove", "1"][..], &["release", "1"]] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("tools/kardwt/cleanup"),
            "{args:?}:\n{out}"
        );
        assert!(out.stderr.contains(&wanted), "{args:?}: no way out:\n{out}");
        assert!(
            out.stderr
                .contains("a helper committed since does not run for it"),
            "{args:?}:\n{out}"
        );
        assert_eq!(
            std::fs::read(repo.record_path(&one)).unwrap(),
            record,
            "{args:?}"
        );
        assert_eq!(snapshot(&one), files, "{args:?}");
        assert!(!log.exists(), "{args:?}: a cleanup ran");
    }
    // The guard's answer to an agent's `git worktree remove` leads to that same refusal.
    let out = repo.kardwt(
        &repo.base,
        &[
            "guard",
            "--format",
            "text",
            "--command",
            &format!("git worktree remove {}", sh_quote(&one)),
        ],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "run instead: git kardwt remove --path {}",
            sh_quote(&one)
        )),
        "{out}"
    );

    // Everything else a forced removal checks still holds: a locked tree stays.
    repo.git(&repo.base, &["worktree", "lock", two.to_str().unwrap()]);
    let out = repo.kardwt(&repo.base, &["remove", "2", "--force"]);
    out.expect_code(1);
    assert!(two.is_dir(), "{out}");
    repo.git(&repo.base, &["worktree", "unlock", two.to_str().unwrap()]);

    // --force removes it, uncommitted work included as documented, and says what did not run.
    std::fs::write(one.join("scratch.txt"), "work\n").unwrap();
    let out = repo.kardwt(&repo.base, &["remove", "1", "--force"]);
    out.expect_code(0);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("-    cleanup hook  not run (--force):")
                && l.contains("tools/kardwt/cleanup")),
        "{out}"
    );
    assert!(!one.exists(), "{out}");
    assert!(!log.exists(), "the untrusted cleanup ran:\n{out}");
    let out = repo.kardwt(&repo.base, &["remove", "2", "--force", "--json"]);
    out.expect_code(0);
    let steps = out.json()["steps"].clone();
    assert!(
        steps
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["step"] == "cleanup hook" && s["ok"] == false),
        "{out}"
    );

    // A card made since runs the helper it was made with.
    let three = repo.add_card("3");
    std::fs::remove_file(three.join(".prepared-by")).unwrap();
    repo.kardwt_ok(&repo.base, &["remove", "3"]);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "v2 3\n");
}
