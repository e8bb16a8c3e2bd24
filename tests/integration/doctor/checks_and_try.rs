//! Visibility of seeding: a worktree created with the hooks bypassed is `unseeded` in `list` and
//! in `doctor` with the exact fix, `prepare --path` seeds it; `doctor --try` rehearses a
//! creation, runs the cleanup hook as `remove` does and leaves nothing behind; when the hook
//! last fired.
use std::path::Path;

use serde_json::Value;

use crate::support::{pinned, sh_quote, yaml_str, TestRepo};

/// `git kardwt doctor [extra] --json`: (exit code, parsed JSON).
fn doctor(repo: &TestRepo, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["doctor", "--json"];
    args.extend_from_slice(extra);
    let out = repo.kardwt(&repo.base, &args);
    let text = out.to_string();
    (out.code, out.json(), text)
}

fn checks(v: &Value) -> &Vec<Value> {
    v["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks array: {v:#}"))
}

/// The failing check that names `path`, if any.
fn failing_for<'a>(v: &'a Value, path: &Path) -> Option<&'a Value> {
    checks(v).iter().find(|c| {
        c["ok"] == false
            && (c["check"]
                .as_str()
                .unwrap()
                .contains(path.to_str().unwrap())
                || c["detail"]
                    .as_str()
                    .unwrap()
                    .contains(path.to_str().unwrap()))
    })
}

#[test]
fn doctor_json_has_the_documented_shape_and_passes_when_all_is_well() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(v["ok"], true, "{text}");
    for c in checks(&v) {
        for key in ["check", "ok", "detail", "fix"] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
        assert_eq!(c["ok"], true, "{c}");
    }
    assert!(v.get("hook_last_fired").is_some(), "{text}");
    assert!(v.get("try").is_some(), "{text}");
    assert!(v["try"].is_null(), "no rehearsal without --try: {text}");
}

#[test]
fn doctor_fails_without_hooks_and_with_an_undecodable_rules_file() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 1, "hooks not installed must fail:\n{text}");
    assert_eq!(v["ok"], false);
    let hook = checks(&v)
        .iter()
        .find(|c| c["ok"] == false && c["fix"] == "git kardwt install-hooks")
        .unwrap_or_else(|| panic!("no failing hook check with its fix:\n{text}"));
    let hook = serde_json::to_string_pretty(hook).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("doctor_hooks_not_installed", hook));

    repo.install_hooks();
    repo.write_rules("worktree:\n  prepare:\n    argv: [/bin/true]\n    bogus: 1\n");
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 1, "{text}");
    let rules = checks(&v)
        .iter()
        .find(|c| c["check"] == "rules")
        .unwrap_or_else(|| panic!("no rules check:\n{text}"));
    let rules = serde_json::to_string_pretty(rules).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("doctor_rules_undecodable", rules));
}

#[test]
fn a_worktree_made_with_hooks_bypassed_is_unseeded_until_prepare_path() {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    repo.install_hooks();
    repo.add_unhooked_worktree("../u", "feature/u");
    let u = repo.sibling("u");
    assert!(u.is_dir());
    assert!(repo.prepare_runs().is_empty(), "the bypass did not bypass");
    assert!(u.join(".env").symlink_metadata().is_err());

    let row = repo.list_row(&u).expect("listed");
    assert_eq!(row["state"], "unseeded", "{row}");

    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(v["ok"], false);
    let c = failing_for(&v, &u).unwrap_or_else(|| panic!("{} not reported:\n{text}", u.display()));
    let fix = format!("git kardwt prepare --path '{}'", u.display());
    assert_eq!(c["fix"], fix.as_str(), "{c}");
    let c = serde_json::to_string_pretty(c).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("doctor_unseeded_tree", c));

    // The fix, as printed (through sh, as an operator would paste it).
    let out = repo
        .spawn("sh", &repo.base, &["-c", &fix])
        .wait(std::time::Duration::from_secs(120));
    out.expect_code(0);
    assert_eq!(out.stdout, crate::support::line(&u), "{out}");
    repo.kardwt_ok(&repo.base, &["verify", "--path", u.to_str().unwrap()]);
    let rec = repo.record(&u);
    assert_eq!(rec["origin"].as_str(), Some("manual"), "{rec:?}");
    assert_eq!(rec["reason"].as_str(), Some("manual"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
    assert_eq!(
        std::fs::read_link(u.join(".env")).unwrap(),
        repo.base.join(".env")
    );
    let runs = repo.prepare_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].ends_with(" manual prepare"), "{runs:?}");
    assert_eq!(repo.list_row(&u).unwrap()["state"], "ready");

    let (code, v, text) = doctor(&repo, &[]);
    assert!(failing_for(&v, &u).is_none(), "{text}");
    assert_eq!(code, 0, "{text}");
}

#[test]
fn doctor_says_when_the_hook_last_fired() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.install_hooks();
    let (_, v, text) = doctor(&repo, &[]);
    assert!(v["hook_last_fired"]["post-checkout"].is_null(), "{text}");
    assert!(v["hook_last_fired"]["pre-push"].is_null(), "{text}");
    repo.worktree_add(&["../h", "-b", "card/3"]).expect_code(0);
    let (_, v, text) = doctor(&repo, &[]);
    let fired = v["hook_last_fired"]["post-checkout"]
        .as_str()
        .unwrap_or_else(|| panic!("the hook fired but doctor does not say so:\n{text}"));
    assert!(
        fired.contains(repo.sibling("h").to_str().unwrap()),
        "{text}"
    );
}

#[test]
fn doctor_try_rehearses_on_a_throwaway_card_and_leaves_nothing_behind() {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    let seen = repo.tmp.join("seen.log");
    let script = repo.write_prepare(&format!(
        "{{ pwd; test -L .env && echo env-linked; }} >> {}",
        sh_quote(&seen)
    ));
    repo.write_rules(&repo.rules_sharing(&script));
    repo.install_hooks();
    let existing = repo.add_card("1");
    let worktrees = repo.worktrees();
    let refs = repo.all_refs();
    let root = crate::support::snapshot(&repo.root());
    let runs_before = repo.prepare_runs().len();

    let (code, v, text) = doctor(&repo, &["--try"]);
    assert_eq!(code, 0, "{text}");
    let steps = v["try"]
        .as_array()
        .unwrap_or_else(|| panic!("no try steps:\n{text}"));
    assert!(steps.len() >= 3, "{text}");
    for s in steps {
        for key in ["step", "ok", "ms", "detail"] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
        assert_eq!(s["ok"], true, "{s}");
    }
    // The configured prepare ran, on a throwaway card, after sharing.
    let runs = repo.prepare_runs();
    assert_eq!(runs.len(), runs_before + 1, "{runs:?}");
    let last = runs.last().unwrap();
    assert!(last.starts_with("doctor-try-"), "{runs:?}");
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert!(seen.contains("doctor-try-"), "{seen}");
    assert!(seen.lines().any(|l| l == "env-linked"), "{seen}");

    // Nothing is left behind.
    assert_eq!(repo.worktrees(), worktrees, "the worktree list changed");
    assert_eq!(repo.all_refs(), refs, "the branch list changed");
    assert_eq!(
        crate::support::snapshot(&repo.root()),
        root,
        "the worktree root changed"
    );
    repo.kardwt_ok(&repo.base, &["verify", "1"]);
    assert!(existing.is_dir());
}

#[test]
fn a_failing_doctor_try_reports_it_and_still_leaves_nothing_behind() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("echo 'seed database missing' >&2; exit 3");
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    let worktrees = repo.worktrees();
    let refs = repo.all_refs();
    let (code, v, text) = doctor(&repo, &["--try"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(v["ok"], false);
    let steps = v["try"].as_array().unwrap();
    let failed = steps
        .iter()
        .find(|s| s["ok"] == false)
        .unwrap_or_else(|| panic!("no failed step:\n{text}"));
    let failed = serde_json::to_string_pretty(failed).unwrap();
    pinned(&repo).bind(|| insta::assert_snapshot!("doctor_try_failed_step", failed));
    assert_eq!(repo.prepare_runs().len(), 1);
    assert_eq!(repo.worktrees(), worktrees);
    assert_eq!(repo.all_refs(), refs);
    assert!(!repo.root().exists(), "the rehearsal left the root behind");
    // In a repository kardwt never used, its directory holds the event log and the
    // repository lock afterwards, nothing else (no claim, card lock or hook log).
    let left: Vec<_> = crate::support::snapshot(&repo.common_dir().join("kardwt"))
        .into_keys()
        .filter(|p| !p.starts_with("events.jsonl") && !p.starts_with("events.lock"))
        .filter(|p| p != Path::new("lock"))
        .collect();
    assert!(left.is_empty(), "the rehearsal left {left:?}");
}

#[test]
fn a_failed_manual_prepare_keeps_the_tree_and_doctor_lists_it_with_the_fix() {
    let repo = TestRepo::new();
    let (flag, script) = repo.write_failing_prepare("fail", "no token", 1);
    repo.write_rules(&repo.rules_for(&script, false));
    repo.install_hooks();
    repo.add_unhooked_worktree("../m", "card/4");
    let m = repo.sibling("m");
    let out = repo.kardwt(&repo.base, &["prepare", "--path", m.to_str().unwrap()]);
    out.expect_code(4);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "prepare_path_failed",
            crate::support::pinned_case("prepare --path", &out)
        )
    });
    assert!(m.is_dir(), "prepare --path must never remove the tree");
    assert_eq!(repo.record(&m)["state"].as_str(), Some("failed"));
    assert_eq!(repo.list_row(&m).unwrap()["state"], "failed");
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 1, "{text}");
    let c = failing_for(&v, &m).unwrap_or_else(|| panic!("failed tree not listed:\n{text}"));
    let fix = format!("git kardwt prepare --path '{}'", m.display());
    assert_eq!(c["fix"], fix.as_str(), "{c}");
    std::fs::remove_file(&flag).unwrap();
    repo.kardwt_ok(&repo.base, &["prepare", "4"]);
    repo.kardwt_ok(&repo.base, &["verify", "4"]);
    let (code, _, text) = doctor(&repo, &[]);
    assert_eq!(code, 0, "{text}");
}

/// Both hooks count: without the pre-push shim doctor fails, and it says when pre-push last
/// fired from the events only that hook writes.
#[test]
fn doctor_checks_the_pre_push_hook_too() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(v["hook_last_fired"]["pre-push"].is_null(), "{text}");
    let wt = repo.add_card("5");
    std::fs::write(wt.join("f.txt"), "x\n").unwrap();
    repo.git(&wt, &["add", "f.txt"]);
    repo.git(&wt, &["commit", "-q", "-m", "f"]);
    repo.git(&wt, &["push", "-q", "origin", "card/5"]);
    let (_, v, text) = doctor(&repo, &[]);
    assert!(
        v["hook_last_fired"]["pre-push"]
            .as_str()
            .is_some_and(|s| s.contains("push-checked")),
        "{text}"
    );
    std::fs::remove_file(repo.common_dir().join("hooks/pre-push")).unwrap();
    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 1, "{text}");
    let pre_push = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "pre-push hook")
        .unwrap_or_else(|| panic!("no pre-push check:\n{text}"));
    assert_eq!(pre_push["ok"], false, "{text}");
}

/// The rehearsal leaves nothing behind, not even a claim: a `doctor` after it is
/// clean, `list --json` shows nothing of it, and the common dir's `kardwt/` is as it was but
/// for the event log (ports included: the rehearsal's ports go back with its claim).
#[test]
fn doctor_after_doctor_try_is_clean_and_kardwt_state_is_unchanged() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    repo.write_rules(&format!(
        "{}  ports: {{count: 1, range: [47100, 47199]}}\n",
        repo.rules_for(&script, false)
    ));
    repo.install_hooks();
    repo.add_card("1");
    let (code, _, text) = doctor(&repo, &[]);
    assert_eq!(code, 0, "{text}");
    let kardwt = repo.common_dir().join("kardwt");
    // The event log may grow; the repository lock names its last holder (every locked
    // command rewrites that note), so only its presence counts.
    let without_log = |dir: &Path| {
        let mut snap = crate::support::snapshot(dir);
        snap.retain(|p, _| !p.starts_with("events.jsonl") && !p.starts_with("events.lock"));
        if let Some(note) = snap.get_mut(Path::new("lock")) {
            note.clear();
        }
        snap
    };
    let before = without_log(&kardwt);
    // What the trees are, not how old they are by now.
    let timeless = |mut list: Vec<serde_json::Value>| {
        for row in &mut list {
            row.as_object_mut().unwrap().remove("age_seconds");
        }
        list
    };
    let list_before = timeless(repo.list_json());

    let (code, _, text) = doctor(&repo, &["--try"]);
    assert_eq!(code, 0, "{text}");

    let (code, v, text) = doctor(&repo, &[]);
    assert_eq!(code, 0, "doctor after doctor --try found problems:\n{text}");
    assert_eq!(v["ok"], true, "{text}");
    // (When the hook last fired may name the rehearsal: that is the event log's truth.)
    assert!(
        !serde_json::to_string(&v["checks"])
            .unwrap()
            .contains("doctor-try-"),
        "{text}"
    );
    let list = timeless(repo.list_json());
    assert_eq!(list, list_before, "list --json changed after doctor --try");
    assert!(
        !serde_json::to_string(&list)
            .unwrap()
            .contains("doctor-try-"),
        "{list:?}"
    );
    let after = without_log(&kardwt);
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(
        changed.is_empty(),
        "doctor --try left something under kardwt/ (beyond the event log): {changed:?}"
    );
}

/// Every interrupted state has a working repair: a failed tree whose checkout never completed
/// (its index emptied) is one `prepare --path` refuses, so doctor names what prepare would
/// (remove it, branch kept, and create it again), and following that gives a ready tree; it
/// used to name prepare --path.
#[test]
fn doctor_names_a_fix_that_works_for_a_failed_tree_whose_checkout_never_completed() {
    let repo = TestRepo::new();
    repo.install_hooks();
    let tree = repo.sibling("broken");
    let path = tree.to_str().unwrap();
    repo.git(
        &repo.base,
        &["worktree", "add", "--quiet", path, "-b", "card/b1"],
    );
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    repo.git(&tree, &["read-tree", "--empty"]);
    repo.edit_record(&tree, "state", "failed");

    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor}");
    assert!(doctor.stdout.contains("its index is empty"), "{doctor}");
    let fix = doctor
        .stdout
        .lines()
        .find_map(|l| l.find("git worktree remove").map(|i| l[i..].to_owned()))
        .unwrap_or_else(|| panic!("doctor names no removal:\n{doctor}"));
    assert!(
        !doctor.stdout.contains("git kardwt prepare --path"),
        "{doctor}"
    );
    let followed = repo
        .spawn("sh", &repo.base, &["-c", &fix])
        .wait(crate::support::COMMAND_TIMEOUT);
    assert_eq!(followed.code, 0, "{fix}:\n{followed}");
    repo.git(&repo.base, &["worktree", "add", "--quiet", path, "card/b1"]);
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    let again = repo.kardwt(&repo.base, &["doctor"]);
    assert_eq!(again.code, 0, "{again}");
}

#[test]
fn doctor_try_runs_the_cleanup_hook_before_removing_its_rehearsal() {
    let repo = TestRepo::new();
    let script = repo.write_prepare("");
    let log = repo.tmp.join("cleanup.log");
    let cleanup = repo.write_helper(
        "cleanup",
        &format!(
            "echo \"$KARDWT_CARD $KARDWT_REASON $KARDWT_PHASE $(test -d \"$KARDWT_WORKTREE\" && echo tree-there)\" >> {}",
            sh_quote(&log)
        ),
    );
    repo.write_rules(&format!(
        "{}  cleanup:\n    argv: [{}]\n",
        repo.rules_for(&script, false),
        yaml_str(&cleanup)
    ));
    repo.install_hooks();
    let refs = repo.all_refs();
    let out = repo.kardwt(&repo.base, &["doctor", "--try", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let steps: Vec<&str> = v["try"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "fetch",
            "worktree",
            "share and prepare",
            "cleanup hook",
            "cleanup"
        ],
        "{v:#}"
    );
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<&str> = ran.lines().collect();
    assert_eq!(lines.len(), 1, "{ran:?}");
    assert!(
        lines[0].starts_with("doctor-try-") && lines[0].ends_with(" remove cleanup tree-there"),
        "{ran:?}"
    );
    assert_eq!(repo.all_refs(), refs, "the rehearsal left a branch");
    assert!(!repo.root().join("card-doctor-try").exists());
}
