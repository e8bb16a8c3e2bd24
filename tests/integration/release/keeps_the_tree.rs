//! `git kardwt release`: the processes in a tree stopped, its cleanup hook run and its ports
//! freed, the tree itself kept (a runner deletes it) for `add` or `prepare` to take up again;
//! what kardwt does not manage is refused and nothing changes.
use crate::support::cleanup::{cleanup_lines, event_names, rules_with_cleanup, Sleeper};
use crate::support::recipes::*;
use crate::support::{pinned, pinned_case, TestRepo};

#[test]
fn release_keeps_the_tree_and_add_prepares_it_again() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup_and_ports(&repo));
    let wt = repo.add_card("5");
    let runs = repo.prepare_runs().len();
    let mut sleeper = Sleeper::start(&repo, &wt);

    let out = repo.kardwt(&repo.base, &["release", "5", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["state"], "released", "{out}");
    assert!(gone(&mut sleeper), "{out}");
    assert!(
        wt.join("README.md").exists() && repo.is_registered(&wt),
        "{out}"
    );
    assert_eq!(state(&repo, &wt), "released");
    assert!(ports(&repo, &wt).is_empty());
    assert!(cleanup_lines(&repo)
        .iter()
        .any(|l| l.starts_with("5 remove cleanup")));
    assert!(event_names(&repo, "5").contains(&"released".to_owned()));
    repo.kardwt(&repo.base, &["verify", "5"]).expect_code(1);
    assert_eq!(repo.list_row(&wt).unwrap()["state"], "released");

    let again = repo.add_card("5");
    assert_eq!(again, wt);
    assert_eq!(state(&repo, &wt), "ready");
    assert_eq!(repo.record(&wt)["reason"].as_str(), Some("retry"));
    assert_eq!(ports(&repo, &wt).len(), 2, "add did not take ports again");
    let prepared = repo.prepare_runs();
    assert_eq!(prepared.len(), runs + 1, "{prepared:?}");
    assert!(
        prepared.last().unwrap().starts_with("5 retry"),
        "{prepared:?}"
    );
    repo.kardwt(&repo.base, &["verify", "5"]).expect_code(0);

    // Released again, then taken up by hand: prepare too takes ports again.
    repo.kardwt_ok(&repo.base, &["release", "--path", wt.to_str().unwrap()]);
    assert!(ports(&repo, &wt).is_empty());
    repo.kardwt_ok(&repo.base, &["prepare", "--path", wt.to_str().unwrap()]);
    assert_eq!(state(&repo, &wt), "ready");
    assert_eq!(
        ports(&repo, &wt).len(),
        2,
        "prepare did not take ports again"
    );
}

#[test]
fn release_refuses_what_it_does_not_manage_and_changes_nothing() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_cleanup(&repo, ""));
    let loose = repo.sibling("loose");
    repo.add_unhooked_worktree(loose.to_str().unwrap(), "feature/loose");
    let before = repo.snapshot_base();
    let mut shown = String::new();
    for (what, args, code) in [
        (
            "unmanaged",
            vec!["release", "--path", loose.to_str().unwrap()],
            3,
        ),
        ("unknown card", vec!["release", "nope"], 1),
        ("invalid card", vec!["release", "../x"], 2),
        (
            "the base",
            vec!["release", "--path", repo.base.to_str().unwrap()],
            3,
        ),
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(code);
        shown.push_str(&pinned_case(what, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("release_refusals", shown));
    assert!(cleanup_lines(&repo).is_empty());
    assert!(!repo.admin_dir(&loose).join("kardwt.toml").exists());
    assert_eq!(repo.snapshot_base(), before);
}
