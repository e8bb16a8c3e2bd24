//! Strict configuration: every error class exits 2 from both
//! `config check` and `add`, names the file and the key path, and creates nothing.
use crate::support::{yaml_str, TestRepo};

/// One invalid `worktree:` block: a name, the YAML (with `HELPERS` and `SCRIPT` placeholders)
/// and what the error must name: any one of the alternatives, each a set of substrings that
/// must all appear (an unknown key may be named as `worktree.prepare.colour` or as
/// `worktree.prepare: unknown field colour`).
struct Case {
    name: &'static str,
    yaml: &'static str,
    keys: &'static [&'static [&'static str]],
}

const CASES: &[Case] = &[
    Case {
        name: "unknown key in the block",
        yaml: "worktree:\n  bogus_key: 1\n",
        keys: &[&["worktree", "bogus_key"]],
    },
    Case {
        name: "unknown key in a section",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT]\n    colour: red\n",
        keys: &[&["worktree.prepare", "colour"]],
    },
    Case {
        name: "explicit null for a number",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT]\n    timeout_seconds: null\n",
        keys: &[&["worktree.prepare.timeout_seconds"]],
    },
    Case {
        name: "explicit null for a string",
        yaml: "worktree:\n  base:\n    remote: null\n",
        keys: &[&["worktree.base.remote"]],
    },
    Case {
        name: "explicit null as a list item",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT, null]\n",
        keys: &[&["worktree.prepare.argv"]],
    },
    Case {
        name: "explicit null for the whole block",
        yaml: "worktree: null\n",
        keys: &[&["worktree"]],
    },
    Case {
        name: "quoted number",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT]\n    timeout_seconds: \"900\"\n",
        keys: &[&["worktree.prepare.timeout_seconds"]],
    },
    Case {
        name: "yes for a boolean",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT]\n    on_reuse: yes\n",
        keys: &[&["worktree.prepare.on_reuse"]],
    },
    Case {
        name: "quoted true for a boolean",
        yaml: "worktree:\n  HELPERS\n  prepare:\n    argv: [SCRIPT]\n    on_create: \"true\"\n",
        keys: &[&["worktree.prepare.on_create"]],
    },
    Case {
        name: "number where a string belongs",
        yaml: "worktree:\n  base:\n    remote: 900\n",
        keys: &[&["worktree.base.remote"]],
    },
    Case {
        name: "boolean where a string belongs",
        yaml: "worktree:\n  base:\n    ref: true\n",
        keys: &[&["worktree.base.ref"]],
    },
    Case {
        name: "string where a list belongs",
        yaml: "worktree:\n  environment:\n    passthrough: FOO\n",
        keys: &[&["worktree.environment.passthrough"]],
    },
    Case {
        name: "prepare cap above action_timeout_seconds",
        yaml: "worktree:\n  HELPERS\n  action_timeout_seconds: 60\n  prepare:\n    argv: [SCRIPT]\n    timeout_seconds: 120\n",
        keys: &[&["worktree.prepare.timeout_seconds"]],
    },
    Case {
        name: "cleanup cap above action_timeout_seconds",
        yaml: "worktree:\n  HELPERS\n  action_timeout_seconds: 100\n  cleanup:\n    argv: [SCRIPT]\n    timeout_seconds: 200\n",
        keys: &[&["worktree.cleanup.timeout_seconds"]],
    },
    Case {
        name: "delegated without a prepare argv",
        yaml: "worktree:\n  checkout:\n    mode: delegated\n",
        keys: &[&["worktree.checkout.mode"], &["worktree.prepare"]],
    },
    Case {
        name: "unknown enum value",
        yaml: "worktree:\n  checkout:\n    mode: partial\n",
        keys: &[&["worktree.checkout.mode"]],
    },
    Case {
        name: "unknown sharing value",
        yaml: "worktree:\n  sharing:\n    env: copy\n",
        keys: &[&["worktree.sharing.env"]],
    },
    Case {
        name: "hook without helpers.stable_root",
        yaml: "worktree:\n  prepare:\n    argv: [SCRIPT]\n",
        keys: &[&["worktree.helpers.stable_root"]],
    },
    Case {
        name: "relative helpers.stable_root",
        yaml: "worktree:\n  helpers:\n    stable_root: helpers\n  prepare:\n    argv: [SCRIPT]\n",
        keys: &[&["worktree.helpers.stable_root"]],
    },
];

fn render(repo: &TestRepo, yaml: &str) -> String {
    let script = repo.write_prepare("");
    yaml.replace(
        "HELPERS",
        &format!(
            "helpers:\n    stable_root: {}",
            yaml_str(&repo.stable_root())
        ),
    )
    .replace("SCRIPT", &yaml_str(&script))
}

#[test]
fn each_configuration_error_class_exits_2_names_the_key_and_creates_nothing() {
    let repo = TestRepo::new();
    repo.commit_on_origin("ahead");
    let tracking = repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]);
    let mut failures = Vec::new();
    for case in CASES {
        repo.write_rules(&render(&repo, case.yaml));
        let base_before = repo.snapshot_base();
        for args in [
            &["config", "check"][..],
            &["config", "check", "--json"],
            &["add", "5"],
        ] {
            let out = repo.kardwt(&repo.base, args);
            let mut why = Vec::new();
            if out.code != 2 {
                why.push(format!("exit {} instead of 2", out.code));
            }
            if !out.stdout.is_empty() {
                why.push("stdout not empty".to_owned());
            }
            if !case
                .keys
                .iter()
                .any(|all| all.iter().all(|k| out.stderr.contains(k)))
            {
                why.push(format!("stderr names none of {:?}", case.keys));
            }
            if !out.stderr.contains("kardbrd.yml") {
                why.push("stderr does not name the file".to_owned());
            }
            if !why.is_empty() {
                failures.push(format!(
                    "{} / {args:?}: {}\n{out}",
                    case.name,
                    why.join(", ")
                ));
            }
        }
        repo.assert_nothing_created(&base_before, case.name);
        assert_eq!(
            repo.git(&repo.base, &["rev-parse", "refs/remotes/origin/main"]),
            tracking,
            "{}: fetched although the configuration is invalid",
            case.name
        );
    }
    assert!(repo.prepare_runs().is_empty());
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n\n{}",
        failures.len(),
        CASES.len() * 3,
        failures.join("\n\n")
    );
}

#[test]
fn config_check_accepts_a_valid_file_and_prints_the_effective_configuration() {
    let repo = TestRepo::new();
    repo.write_rules(&format!(
        "other_tool:\n  anything: [1, 2]\n{}",
        repo.rules_with_prepare(false)
    ));
    let text = repo.kardwt(&repo.base, &["config", "check"]);
    text.expect_code(0);
    assert!(!text.stdout.is_empty(), "{text}");

    let out = repo.kardwt(&repo.base, &["config", "check", "--json"]);
    out.expect_code(0);
    let v = out.json();
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object:\n{out}"));
    for key in [
        "base",
        "helpers",
        "checkout",
        "prepare",
        "cleanup",
        "sharing",
        "environment",
        "ports",
        "action_timeout_seconds",
        "adoptions",
    ] {
        assert!(obj.contains_key(key), "missing {key}:\n{out}");
    }
    assert_eq!(v["base"]["remote"], "origin", "{out}");
    assert_eq!(v["checkout"]["mode"], "full", "{out}");
    assert_eq!(v["prepare"]["on_create"], true, "{out}");
    assert_eq!(v["prepare"]["on_reuse"], false, "{out}");
    assert_eq!(v["prepare"]["timeout_seconds"], 900, "{out}");
    assert_eq!(
        v["prepare"]["argv"][0],
        repo.stable_root().join("prepare").to_str().unwrap(),
        "{out}"
    );
    assert_eq!(
        v["helpers"]["stable_root"],
        repo.stable_root().to_str().unwrap(),
        "{out}"
    );
    assert_eq!(v["sharing"]["env"], "disabled", "{out}");
    assert_eq!(v["sharing"]["skills"], "fallback", "{out}");
    assert_eq!(
        v["environment"]["passthrough"],
        serde_json::json!([]),
        "{out}"
    );
    assert_eq!(v["action_timeout_seconds"], 3600, "{out}");
    assert_eq!(v["adoptions"], serde_json::json!([]), "{out}");
}

#[test]
fn config_check_prints_a_rules_file_that_decodes_to_the_same_configuration() {
    let repo = TestRepo::new();
    // No `ref`, no `ports`, no cleanup: unset values that must not come back as `null`.
    repo.write_rules(&repo.rules_with_prepare(false));
    let first = repo.kardwt(&repo.base, &["config", "check", "--json"]);
    first.expect_code(0);
    let printed = repo.kardwt(&repo.base, &["config", "check"]);
    printed.expect_code(0);
    assert!(!printed.stdout.contains("null"), "{printed}");
    repo.write_rules(&printed.stdout);
    let again = repo.kardwt(&repo.base, &["config", "check", "--json"]);
    again.expect_code(0);
    assert_eq!(again.json(), first.json(), "{printed}");
}

#[test]
fn a_default_hook_cap_is_clamped_to_the_action_timeout() {
    let repo = TestRepo::new();
    repo.write_rules(&format!(
        "{}  action_timeout_seconds: 600\n",
        repo.rules_with_prepare(false)
    ));
    let out = repo.kardwt(&repo.base, &["config", "check", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["action_timeout_seconds"], 600, "{out}");
    assert_eq!(v["prepare"]["timeout_seconds"], 600, "{out}");
}

#[test]
fn no_rules_file_or_no_worktree_block_means_defaults() {
    let repo = TestRepo::new();
    for rules in [None, Some("other_tool: {x: 1}\n")] {
        if let Some(r) = rules {
            repo.write_rules(r);
        }
        let out = repo.kardwt(&repo.base, &["config", "check", "--json"]);
        out.expect_code(0);
        let v = out.json();
        assert_eq!(v["base"]["remote"], "origin", "{out}");
        assert_eq!(v["checkout"]["mode"], "full", "{out}");
        assert_eq!(v["action_timeout_seconds"], 3600, "{out}");
    }
}

#[test]
fn a_missing_rules_file_named_explicitly_is_an_error() {
    let repo = TestRepo::new();
    let missing = repo.tmp.join("nowhere.yml");
    let m = missing.to_str().unwrap();
    let mut shown = String::new();
    for args in [
        vec!["--rules", m, "config", "check"],
        vec!["config", "check", "--rules", m],
        vec!["add", "5", "--rules", m],
    ] {
        let out = repo.kardwt(&repo.base, &args);
        out.expect_code(2);
        shown.push_str(&crate::support::pinned_case(&args.join(" "), &out));
    }
    repo.git(&repo.base, &["config", "kardwt.rules", m]);
    let out = repo.kardwt(&repo.base, &["config", "check"]);
    out.expect_code(2);
    shown.push_str(&crate::support::pinned_case(
        "kardwt.rules: config check",
        &out,
    ));
    crate::support::pinned(&repo)
        .bind(|| insta::assert_snapshot!("rules_file_named_but_missing", shown));
    let out = repo.kardwt(&repo.base, &["add", "5"]);
    out.expect_code(2);
    assert!(!repo.root().exists());
    assert!(repo.card_branches().is_empty());
}

#[test]
fn rules_named_by_option_are_read_instead_of_the_base_file() {
    let repo = TestRepo::new();
    repo.write_rules("worktree:\n  checkout:\n    mode: partial\n");
    let other = repo.tmp.join("other rules.yml");
    std::fs::write(&other, repo.rules_with_prepare(true)).unwrap();
    let out = repo.kardwt(
        &repo.base,
        &[
            "config",
            "check",
            "--json",
            "--rules",
            other.to_str().unwrap(),
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["prepare"]["on_reuse"], true, "{out}");
}

/// `config check` refuses every hook program `add` (and `doctor`) refuses, with the
/// same message and hints: a relative `argv[0]`, one outside `stable_root`, one that is not
/// executable, a cleanup that does not exist. The hints say why hooks live beneath
/// `stable_root` and how to set it.
#[test]
fn config_check_refuses_exactly_what_add_refuses_about_hook_programs() {
    let repo = TestRepo::new();
    let root = repo.stable_root();
    let outside = repo.tmp.join("outside.sh");
    std::fs::write(&outside, "#!/bin/sh\n").unwrap();
    let plain = root.join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let script = repo.write_prepare("");
    let helpers = format!("  helpers:\n    stable_root: {}\n", yaml_str(&root));
    let cases = [
        (
            "relative argv[0]",
            "  prepare:\n    argv: [scripts/prepare.sh]\n".to_owned(),
        ),
        (
            "outside stable_root",
            format!("  prepare:\n    argv: [{}]\n", yaml_str(&outside)),
        ),
        (
            "not executable",
            format!("  prepare:\n    argv: [{}]\n", yaml_str(&plain)),
        ),
        (
            "missing cleanup",
            format!(
                "  prepare:\n    argv: [{}]\n  cleanup:\n    argv: [{}]\n",
                yaml_str(&script),
                yaml_str(&root.join("nope"))
            ),
        ),
    ];
    let mut all = String::new();
    for (name, hooks) in cases {
        repo.write_rules(&format!("worktree:\n{helpers}{hooks}"));
        let check = repo.kardwt(&repo.base, &["config", "check"]);
        assert_eq!(check.code, 2, "{name}: config check accepted it:\n{check}");
        all.push_str(&crate::support::pinned_case(name, &check));
        let json = repo.kardwt(&repo.base, &["config", "check", "--json"]);
        assert_eq!(
            json.code, 2,
            "{name}: config check --json accepted it:\n{json}"
        );
        assert!(json.stdout.is_empty(), "{name}: {json}");
        let doctor = repo.kardwt(&repo.base, &["doctor"]);
        assert_eq!(doctor.code, 1, "{name}: doctor passed it:\n{doctor}");
        let error = check
            .stderr
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("error: ");
        assert!(
            doctor.stdout.contains(error),
            "{name}: doctor says otherwise:\n{doctor}\nconfig check:\n{check}"
        );
        if name == "missing cleanup" {
            continue; // add runs no cleanup hook: remove refuses it, with the same words
        }
        let add = repo.kardwt(&repo.base, &["add", "1"]);
        assert_eq!(add.code, 2, "{name}: add accepted it:\n{add}");
        assert_eq!(
            check.stderr, add.stderr,
            "{name}: config check and add refuse differently"
        );
    }
    crate::support::pinned(&repo)
        .bind(|| insta::assert_snapshot!("hooks_not_beneath_stable_root", all));
    // The relative argv[0] is shown where it would go.
    repo.write_rules(&format!(
        "worktree:\n{helpers}  prepare:\n    argv: [scripts/prepare.sh]\n"
    ));
    let relative = repo.kardwt(&repo.base, &["config", "check"]);
    // Without stable_root, the decoder's refusal says why it is needed, and how to set it.
    repo.write_rules("worktree:\n  prepare:\n    argv: [scripts/prepare.sh]\n");
    let check = repo.kardwt(&repo.base, &["config", "check"]);
    assert_eq!(check.code, 2, "{check}");
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "hooks_relative_and_without_stable_root",
            crate::support::pinned_case("relative argv[0]", &relative)
                + &crate::support::pinned_case("no stable_root", &check)
        )
    });
}
