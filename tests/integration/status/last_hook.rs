//! `git kardwt status`: how the last hook ended in words (a hook killed at its cap says so),
//! labels a reader understands, and an unknown card exits 1 as `verify` does.
use crate::support::{pinned, pinned_case, yaml_str, TestRepo};

#[test]
fn status_says_a_hook_was_killed_at_its_cap_and_an_unknown_card_exits_1() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("sleep 30");
    repo.write_rules(&format!(
        "worktree:\n  helpers:\n    stable_root: {}\n  prepare:\n    argv: [{}]\n    timeout_seconds: 1\n",
        yaml_str(&repo.stable_root()),
        yaml_str(&script)
    ));
    // Its retry sentence's second sentence starts with a capital.
    let add = repo.kardwt(&repo.base, &["add", "6"]);
    assert_eq!(add.code, 4, "{add}");
    let mut shown = pinned_case("add", &add);
    // A tree prepared by hand stays when its prepare fails: status shows it.
    repo.add_unhooked_worktree("../m", "card/5");
    let wt = repo.sibling("m");
    let out = repo.kardwt(&repo.base, &["prepare", "--path", wt.to_str().unwrap()]);
    assert_eq!(out.code, 4, "{out}");

    // Killed at its cap, in words (never "exited -1"), made by `prepare --path`.
    let out = repo.kardwt(&repo.base, &["status", "--path", wt.to_str().unwrap()]);
    out.expect_code(0);
    shown.push_str(&pinned_case("status", &out));
    let rec = repo.record(&wt);
    let hook = rec["last_hook"].as_table().unwrap();
    assert_eq!(hook["killed"].as_str(), Some("cap"), "{rec}");
    assert_eq!(hook["cap_seconds"].as_integer(), Some(1), "{rec}");
    assert_eq!(hook["exit_code"].as_integer(), Some(-1), "{rec}");

    // A record from before `killed` existed still reads, and says what it can.
    let path = repo.record_path(&wt);
    let text = std::fs::read_to_string(&path).unwrap();
    let old: String = text
        .lines()
        .filter(|l| !l.starts_with("killed") && !l.starts_with("cap_seconds"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, old).unwrap();
    let out = repo.kardwt(&repo.base, &["status", "--path", wt.to_str().unwrap()]);
    out.expect_code(0);
    shown.push_str(&pinned_case("status of an older record", &out));

    for args in [&["status", "999"][..], &["status", "999", "--json"][..]] {
        let out = repo.kardwt(&repo.base, args);
        assert_eq!(out.code, 1, "{out}");
        shown.push_str(&pinned_case(&args.join(" "), &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("status_last_hook", shown));
    repo.kardwt(&repo.base, &["verify", "999"]).expect_code(1);
}
