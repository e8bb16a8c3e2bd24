//! `git kardwt log`: one `seeded` event per seeding, the hook's no-ops only
//! with `--all`, and columns that stay aligned whatever the card ids.
use crate::support::{pinned, TestRepo};

#[test]
fn log_shows_one_seeded_per_seeding_and_hides_hook_noops_unless_all() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    std::fs::write(repo.base.join(".worktreeinclude"), ".env\n").unwrap();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    // git's own checkout inside add, so that git runs the post-checkout hook there and it does
    // nothing (kardwt's in-process checkout has no hook to run where its shim is the only one).
    repo.git(&repo.base, &["config", "checkout.workers", "1"]);
    repo.add_card("1");
    // A branch switch in the base: the shim leaves before starting kardwt.
    repo.git(&repo.base, &["switch", "--quiet", "-c", "other"]);
    repo.git(&repo.base, &["switch", "--quiet", "main"]);

    let seeded: Vec<_> = repo
        .events(Some("1"))
        .into_iter()
        .filter(|e| e["event"] == "seeded")
        .collect();
    assert_eq!(seeded.len(), 1, "{seeded:?}");
    assert!(
        seeded[0]["outcome"].as_str().unwrap().starts_with("copied"),
        "{seeded:?}"
    );
    let all = repo.kardwt_ok(&repo.base, &["log", "--all"]);
    assert!(all.contains("nothing to do (hook)"), "{all}");
    assert!(!all.contains("hook-noop"), "an internal name:\n{all}");
    let log = repo.kardwt_ok(&repo.base, &["log"]);
    assert!(!log.contains("nothing to do"), "{log}");
    let json = repo.events(None);
    assert!(json.iter().all(|e| e["event"] != "hook-noop"), "{json:?}");
}

/// The column after the card starts at one place on every line, however long the ids
/// (`list`, `log`, `doctor`); an id longer than its column stands on a line of its own.
#[test]
fn columns_stay_aligned_with_long_card_ids() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let long = "a-rather-long-card-id-for-a-runner-worktree";
    repo.add_card("7");
    repo.add_card("seventeen-chars-x");
    repo.add_card(long);

    let list = repo.kardwt_ok(&repo.base, &["list"]);
    let at = |line: &str, word: &str| line.find(word).unwrap_or(usize::MAX);
    let states: Vec<usize> = list
        .lines()
        .filter(|l| l.contains("ready"))
        .map(|l| at(l, "ready"))
        .collect();
    assert_eq!(states.len(), 3, "{list}");
    assert!(states.iter().all(|&s| s == states[0]), "{list}");
    assert!(
        list.lines().any(|l| l == long),
        "the long id is not on its own line:\n{list}"
    );

    let log = repo.kardwt_ok(&repo.base, &["log"]);
    let created: Vec<usize> = log
        .lines()
        .filter(|l| l.contains("  /"))
        .map(|l| at(l, "  /"))
        .collect();
    assert!(created.len() >= 3, "{log}");
    assert!(created.iter().all(|&c| c == created[0]), "{log}");

    // A failing worktree check has a long name (its path): it stands alone, the details of the
    // other checks still start at one column.
    repo.add_unhooked_worktree("../a-tree-made-by-hand-with-a-long-name", "card/u");
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    let detail_at = |check: &str| {
        let line = doctor
            .stdout
            .lines()
            .find(|l| l[5..].starts_with(check))
            .unwrap_or_else(|| panic!("no {check} line:\n{doctor}"));
        let rest = &line[5 + check.len()..];
        5 + check.len() + (rest.len() - rest.trim_start().len())
    };
    assert_eq!(
        detail_at("rules"),
        detail_at("git-kardwt on PATH"),
        "{doctor}"
    );
    assert!(
        doctor
            .stdout
            .lines()
            .any(|l| l.starts_with("FAIL worktree ") && !l.contains("unseeded")),
        "the long check name is not on its own line:\n{doctor}"
    );
    // Without a rules file, the label says so in words.
    let fresh = TestRepo::new();
    let out = fresh.kardwt(&fresh.base, &["doctor"]);
    assert!(
        out.stdout.contains("no rules file: the defaults apply"),
        "{out}"
    );
    assert!(!out.stdout.contains("defaults decodes"), "{out}");
}

/// A line whose card is not a card id (kardwt writes none) is skipped with a warning naming
/// it, like a line that does not decode: its card is never printed nor matched.
#[test]
fn an_event_whose_card_is_not_an_id_is_skipped_with_a_warning() {
    let repo = TestRepo::new();
    repo.add_card("1");
    let log = repo.common_dir().join("kardwt/events.jsonl");
    let lines = std::fs::read_to_string(&log).unwrap().lines().count();
    let planted = serde_json::json!({
        "time": "2026-12-01T00:00:00Z",
        "event": "created",
        "card": "\u{1b}[2J$(touch pwned)",
        "path": "/x",
        "outcome": "ok",
        "duration_ms": 1,
    });
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    use std::io::Write;
    writeln!(f, "{planted}").unwrap();
    let out = repo.kardwt(&repo.base, &["log", "--all"]);
    out.expect_code(0);
    assert!(
        !out.stdout.contains('\u{1b}') && !out.stdout.contains("touch"),
        "{out}"
    );
    assert_eq!(lines, 2);
    // The planted line (the third) skipped with a warning naming it.
    pinned(&repo).bind(|| insta::assert_snapshot!("log_card_not_an_id", out.stderr));
    assert!(out.stdout.lines().any(|l| l.contains(" 1 ")), "{out}");
}
