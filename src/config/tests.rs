//! Unit tests of the rules file's decoding: the full example, defaults, every kind of
//! refusal with its key path and location, names that reach git, quoting, and garbled input.
use std::path::Path;

use super::names::{check_ref_format, check_remote_name};
use super::*;
use crate::ground::error::Code;

const FULL_EXAMPLE: &str = r#"worktree:
  base:
    remote: origin            # default origin
    ref: refs/heads/main      # omit: the remote's HEAD, which must be unambiguous
  helpers:
    stable_root: /usr/local/libexec/project-agent   # absolute; required if any hook is set
  checkout:
    mode: full                # full | delegated
  prepare:
    argv: [/usr/local/libexec/project-agent/prepare]
    on_create: true           # default true
    on_reuse: false           # default false
    timeout_seconds: 900      # default 900
  cleanup:                    # runs before a worktree is removed
    argv: [/usr/local/libexec/project-agent/cleanup]
    timeout_seconds: 120      # default 120
  sharing:
    env: disabled             # disabled | link
    skills: fallback          # fallback | disabled
  environment:
    passthrough: []           # names of variables handed to hooks
  ports: {count: 1, range: [20000, 29999]}   # optional
  action_timeout_seconds: 3600  # the single deadline of one action; default 3600
  adoptions:
    - card: "123"
      path: /srv/project-old-tree
      common_dir: /srv/project/.git
      branch: feature/legacy
"#;

const HOOKED: &str = "worktree:\n  helpers:\n    stable_root: /opt/h\n";

fn file() -> &'static Path {
    Path::new("kardbrd.yml")
}

fn ok(text: &str) -> Config {
    match decode(file(), text) {
        Ok(cfg) => cfg,
        Err(e) => panic!("expected success, got: {}\n---\n{text}", e.message),
    }
}

/// Decoding fails with a usage error whose message names the file and every `parts`.
fn err(text: &str, parts: &[&str]) -> String {
    let e = match decode(file(), text) {
        Ok(cfg) => panic!("expected an error, got {cfg:?}\n---\n{text}"),
        Err(e) => e,
    };
    assert_eq!(e.code, Code::Usage, "{}", e.message);
    assert!(e.message.starts_with("kardbrd.yml: "), "{}", e.message);
    for p in parts {
        assert!(e.message.contains(p), "{:?} lacks {p:?}", e.message);
    }
    e.message
}

/// `HOOKED` plus `extra` lines (indented under `worktree:`).
fn hooked(extra: &str) -> String {
    format!("{HOOKED}{extra}")
}

#[test]
fn full_example_decodes() {
    let cfg = ok(FULL_EXAMPLE);
    assert_eq!(cfg.base.remote, "origin");
    assert_eq!(cfg.base.git_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(
        cfg.helpers.stable_root.as_deref(),
        Some(Path::new("/usr/local/libexec/project-agent"))
    );
    assert_eq!(cfg.checkout.mode, CheckoutMode::Full);
    assert_eq!(
        cfg.prepare,
        Some(Prepare {
            argv: vec!["/usr/local/libexec/project-agent/prepare".into()],
            on_create: true,
            on_reuse: false,
            timeout_seconds: 900,
            inputs: Vec::new(),
            outputs: Vec::new(),
            on_cache_hit: OnCacheHit::Skip,
            cache_entries: 4,
            cache_remote: None,
        })
    );
    assert_eq!(
        cfg.cleanup,
        Some(Cleanup {
            argv: vec!["/usr/local/libexec/project-agent/cleanup".into()],
            timeout_seconds: 120,
        })
    );
    assert_eq!(cfg.sharing.env, EnvSharing::Disabled);
    assert_eq!(cfg.sharing.skills, SkillsSharing::Fallback);
    assert!(cfg.environment.passthrough.is_empty());
    assert_eq!(
        cfg.ports,
        Some(Ports {
            count: 1,
            range: [20000, 29999]
        })
    );
    assert_eq!(cfg.action_timeout_seconds, 3600);
    assert_eq!(
        cfg.adoptions,
        vec![Adoption {
            card: "123".into(),
            path: "/srv/project-old-tree".into(),
            common_dir: "/srv/project/.git".into(),
            branch: "feature/legacy".into(),
        }]
    );
}

#[test]
fn absent_block_means_defaults() {
    for text in [
        "",
        "# only a comment\n",
        "\n\n   \n",
        "---\n",
        "~\n",
        "other: 1\n",
        "lint: {strict: true}\nboards: [a, b]\nname: ~\n",
        "worktrees: {}\n",
    ] {
        assert_eq!(ok(text), Config::default(), "{text:?}");
    }
}

#[test]
fn empty_block_means_defaults() {
    assert_eq!(ok("worktree: {}\n"), Config::default());
}

#[test]
fn other_top_level_keys_are_ignored_whatever_their_type() {
    let text = format!(
        "name: 900\nflag: yes\nlist: [1, ~, {{a: b}}]\nnested: {{x: {{y: null}}}}\n\
             dup: 1\ndup: 2\n? [complex]\n: key\n123: number key\n{FULL_EXAMPLE}trailing: ~\n"
    );
    assert_eq!(ok(&text), ok(FULL_EXAMPLE));
}

#[test]
fn defaults_fill_in() {
    let cfg = ok(&hooked(
        "  prepare:\n    argv: [/opt/h/p]\n  cleanup:\n    argv: [/opt/h/c, --x]\n",
    ));
    let p = cfg.prepare.expect("prepare");
    assert!(p.on_create);
    assert!(!p.on_reuse);
    assert_eq!(p.timeout_seconds, 900);
    let c = cfg.cleanup.expect("cleanup");
    assert_eq!(c.argv, vec!["/opt/h/c".to_owned(), "--x".to_owned()]);
    assert_eq!(c.timeout_seconds, 120);
    assert_eq!(cfg.action_timeout_seconds, 3600);
    assert_eq!(cfg.base.remote, "origin");
    assert_eq!(cfg.base.git_ref, None);
}

#[test]
fn default_caps_are_clamped_to_the_action_timeout() {
    let cfg = ok(&hooked(
            "  prepare:\n    argv: [/opt/h/p]\n  cleanup:\n    argv: [/opt/h/c]\n  action_timeout_seconds: 60\n",
        ));
    assert_eq!(cfg.prepare.map(|p| p.timeout_seconds), Some(60));
    assert_eq!(cfg.cleanup.map(|c| c.timeout_seconds), Some(60));
    // A written cap at or under a written action timeout is kept.
    let cfg = ok(&hooked(
        "  prepare:\n    argv: [/opt/h/p]\n    timeout_seconds: 60\n  action_timeout_seconds: 60\n",
    ));
    assert_eq!(cfg.prepare.map(|p| p.timeout_seconds), Some(60));
}

#[test]
fn written_cap_above_the_default_action_timeout_is_clamped() {
    // Only a cap above an action timeout written in the file is an error.
    let cfg = ok(&hooked(
        "  prepare:\n    argv: [/opt/h/p]\n    timeout_seconds: 5000\n",
    ));
    assert_eq!(cfg.prepare.map(|p| p.timeout_seconds), Some(3600));
}

#[test]
fn written_cap_above_written_action_timeout_is_an_error() {
    err(
            &hooked("  prepare:\n    argv: [/opt/h/p]\n    timeout_seconds: 900\n  action_timeout_seconds: 600\n"),
            &["worktree.prepare.timeout_seconds", "worktree.action_timeout_seconds", "line 6 column 22"],
        );
    err(
            &hooked("  action_timeout_seconds: 100\n  cleanup:\n    argv: [/opt/h/c]\n    timeout_seconds: 101\n"),
            &["worktree.cleanup.timeout_seconds", "worktree.action_timeout_seconds", "line 7"],
        );
}

#[test]
fn wrong_integer_types() {
    let cases = [
        ("\"900\"", "found a string (\"900\")"),
        ("900.5", "found a float (900.5)"),
        ("true", "found a boolean (true)"),
        ("[900]", "found a list"),
        ("{a: 1}", "found a mapping"),
        ("-5", "-5"),
        ("0", "at least 1"),
        ("1e3", "float"),
        ("!!float 10", "found a float (10.0)"),
        ("99999999999999999999999", "out of range"),
    ];
    for (value, want) in cases {
        let text = hooked(&format!(
            "  prepare:\n    argv: [/opt/h/p]\n    timeout_seconds: {value}\n"
        ));
        err(&text, &["worktree.prepare.timeout_seconds", want, "line 6"]);
    }
    err("worktree:\n  action_timeout_seconds: '10'\n", &["worktree.action_timeout_seconds: expected an integer, found a string (\"10\") at line 2 column 27"]);
}

#[test]
fn wrong_boolean_types() {
    for value in ["yes", "\"true\"", "1", "on", "True1", "[true]"] {
        let text = hooked(&format!(
            "  prepare:\n    argv: [/opt/h/p]\n    on_reuse: {value}\n"
        ));
        err(
            &text,
            &[
                "worktree.prepare.on_reuse",
                "expected a boolean",
                "line 6 column 15",
            ],
        );
    }
}

#[test]
fn wrong_string_types() {
    err(
        "worktree:\n  base:\n    remote: 900\n",
        &[
            "worktree.base.remote",
            "found an integer (900)",
            "line 3 column 13",
        ],
    );
    err(
        "worktree:\n  base:\n    remote: true\n",
        &["worktree.base.remote", "found a boolean"],
    );
    err(
        "worktree:\n  base:\n    remote: {a: b}\n",
        &["worktree.base.remote", "found a mapping"],
    );
    err(
        "worktree:\n  base:\n    remote: ''\n",
        &["worktree.base.remote", "empty"],
    );
    let adoption = |card: &str| {
        format!("worktree:\n  adoptions:\n    - card: {card}\n      path: /a\n      common_dir: /b/.git\n      branch: x\n")
    };
    assert_eq!(ok(&adoption("\"123\"")).adoptions[0].card, "123");
    assert_eq!(ok(&adoption("abc")).adoptions[0].card, "abc");
    err(
        &adoption("123"),
        &[
            "worktree.adoptions[0].card",
            "expected a string, found an integer (123)",
            "line 3 column 13",
        ],
    );
    err(&adoption("12.5"), &["worktree.adoptions[0].card", "float"]);
    err(
        &adoption("\"../x\""),
        &["worktree.adoptions[0].card", "invalid card id"],
    );
}

#[test]
fn string_where_a_list_belongs() {
    err(
        &hooked("  prepare:\n    argv: /opt/h/p\n"),
        &[
            "worktree.prepare.argv",
            "expected a list, found a string",
            "line 5 column 11",
        ],
    );
    err(
        "worktree:\n  environment:\n    passthrough: HOME\n",
        &["worktree.environment.passthrough", "expected a list"],
    );
    err(
        "worktree:\n  adoptions: {card: 1}\n",
        &["worktree.adoptions", "expected a list, found a mapping"],
    );
}

#[test]
fn mapping_expected() {
    err(
        "worktree: []\n",
        &[
            "worktree: expected a mapping, found a list",
            "line 1 column 11",
        ],
    );
    err(
        "worktree:\n  base: origin\n",
        &["worktree.base", "expected a mapping, found a string"],
    );
    err(
        "worktree:\n  adoptions: [card]\n",
        &["worktree.adoptions[0]", "expected a mapping"],
    );
}

#[test]
fn explicit_nulls_are_errors() {
    err("worktree:\n", &["worktree", "explicit null"]);
    err("worktree: null\n", &["worktree", "explicit null", "line 1"]);
    err("worktree: ~\nother: 1\n", &["worktree", "explicit null"]);
    err(
        "worktree:\n  base:\n",
        &["worktree.base", "explicit null", "line 2"],
    );
    err(
        "worktree:\n  base:\n    remote: ~\n",
        &["worktree.base.remote", "explicit null", "line 3 column 13"],
    );
    err(
        "worktree:\n  base:\n    ref: null\n",
        &["worktree.base.ref", "explicit null"],
    );
    err(
        "worktree:\n  action_timeout_seconds:\n",
        &["worktree.action_timeout_seconds", "explicit null"],
    );
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p, null]\n"),
        &[
            "worktree.prepare.argv[1]",
            "explicit null",
            "line 5 column 22",
        ],
    );
    err(
        &hooked("  prepare:\n    argv:\n      - /opt/h/p\n      -\n"),
        &["worktree.prepare.argv[1]", "explicit null"],
    );
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p]\n    on_create: ~\n"),
        &["worktree.prepare.on_create", "explicit null"],
    );
    err(
        "worktree:\n  ports: ~\n",
        &["worktree.ports", "explicit null"],
    );
    err(
        "worktree:\n  ports: {count: 1, range: [2000, null]}\n",
        &["worktree.ports.range[1]", "explicit null"],
    );
    err(
        "worktree:\n  sharing: {env: null}\n",
        &["worktree.sharing.env", "explicit null"],
    );
    err(
        "worktree:\n  environment: {passthrough: [A, ~]}\n",
        &["worktree.environment.passthrough[1]", "explicit null"],
    );
    err(
        "worktree:\n  adoptions: [~]\n",
        &["worktree.adoptions[0]", "explicit null"],
    );
}

#[test]
fn unknown_keys_are_named_with_the_allowed_ones() {
    let m = err(
        "worktree:\n  bases: {}\n",
        &[
            "worktree.bases: unknown key",
            "action_timeout_seconds",
            "line 2 column 3",
        ],
    );
    assert!(m.contains("allowed keys: base, helpers"), "{m}");
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p]\n    on_creat: true\n"),
        &[
            "worktree.prepare.on_creat",
            "unknown key",
            "argv, on_create, on_reuse, timeout_seconds",
            "line 6 column 5",
        ],
    );
    err(
        "worktree:\n  ports: {count: 1, range: [2000, 2001], size: 2}\n",
        &["worktree.ports.size", "count, range"],
    );
    err(
            "worktree:\n  adoptions:\n    - card: a\n      path: /a\n      common_dir: /b\n      branch: x\n      extra: 1\n",
            &["worktree.adoptions[0].extra", "unknown key", "line 7 column 7"],
        );
    err("worktree:\n  123: x\n", &["worktree.123", "unknown key"]);
    err("worktree:\n  ~: x\n", &["worktree.~", "unknown key"]);
    err(
        "worktree:\n  <<: {base: {}}\n",
        &["worktree.<<", "unknown key"],
    );
}

#[test]
fn unknown_enum_values_are_named_with_the_allowed_ones() {
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p]\n  checkout:\n    mode: fast\n"),
        &[
            "worktree.checkout.mode",
            "\"fast\"",
            "full, delegated",
            "line 7 column 11",
        ],
    );
    err(
        "worktree:\n  sharing:\n    env: copy\n",
        &["worktree.sharing.env", "disabled, link"],
    );
    err(
        "worktree:\n  sharing:\n    skills: true\n",
        &[
            "worktree.sharing.skills",
            "fallback, disabled",
            "found a boolean",
        ],
    );
    err(
        "worktree:\n  sharing:\n    env: Link\n",
        &["worktree.sharing.env", "\"Link\""],
    );
}

#[test]
fn duplicate_keys_are_named_and_located() {
    err(
        "worktree:\n  base: {}\n  base: {}\n",
        &["worktree.base", "duplicate key \"base\"", "line 3 column 3"],
    );
    err(
        "worktree: {}\nx: 1\nworktree: {}\n",
        &["worktree", "duplicate key \"worktree\"", "line 3 column 1"],
    );
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p]\n    on_create: true\n    on_create: false\n"),
        &[
            "worktree.prepare.on_create",
            "duplicate key",
            "line 7 column 5",
        ],
    );
    err(
        "worktree:\n  adoptions:\n    - {card: a, card: b}\n",
        &["worktree.adoptions[0].card", "duplicate key"],
    );
}

#[test]
fn type_errors_come_before_a_missing_argv() {
    err(
            &hooked("  prepare:\n    timeout_seconds: \"900\"\n"),
            &["kardbrd.yml: worktree.prepare.timeout_seconds: expected an integer, found a string (\"900\") at line 5 column 22"],
        );
}

#[test]
fn missing_required_keys() {
    err(
        &hooked("  prepare:\n    on_create: true\n"),
        &["worktree.prepare.argv: missing", "line 4 column 3"],
    );
    err(
        &hooked("  prepare: {}\n"),
        &["worktree.prepare.argv: missing"],
    );
    err(
        &hooked("  cleanup:\n    timeout_seconds: 5\n"),
        &["worktree.cleanup.argv: missing"],
    );
    err(
        "worktree:\n  ports: {count: 1}\n",
        &["worktree.ports.range: missing"],
    );
    err(
        "worktree:\n  ports: {range: [2000, 2001]}\n",
        &["worktree.ports.count: missing"],
    );
    err(
        "worktree:\n  adoptions:\n    - card: a\n      path: /a\n      branch: x\n",
        &["worktree.adoptions[0].common_dir: missing", "line 3"],
    );
}

#[test]
fn argv_must_be_non_empty_strings() {
    err(
        &hooked("  prepare:\n    argv: []\n"),
        &["worktree.prepare.argv", "at least one"],
    );
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p, '']\n"),
        &["worktree.prepare.argv[1]", "empty"],
    );
    err(
        &hooked("  prepare:\n    argv: [/opt/h/p, 5]\n"),
        &["worktree.prepare.argv[1]", "found an integer"],
    );
    err(
        &hooked("  cleanup:\n    argv: [[a]]\n"),
        &["worktree.cleanup.argv[0]", "found a list"],
    );
}

#[test]
fn base_ref_must_be_a_branch_ref() {
    err(
        "worktree:\n  base:\n    ref: main\n",
        &["worktree.base.ref", "refs/heads/", "line 3 column 10"],
    );
    err(
        "worktree:\n  base:\n    ref: refs/heads/\n",
        &["worktree.base.ref"],
    );
    err(
        "worktree:\n  base:\n    ref: refs/tags/v1\n",
        &["worktree.base.ref"],
    );
    assert_eq!(
        ok("worktree:\n  base:\n    ref: refs/heads/release/1\n")
            .base
            .git_ref
            .as_deref(),
        Some("refs/heads/release/1")
    );
}

#[test]
fn hooks_need_an_absolute_stable_root() {
    err(
        "worktree:\n  prepare:\n    argv: [/opt/h/p]\n",
        &[
            "worktree.helpers.stable_root: missing",
            "worktree.prepare.argv",
            "line 3 column 5",
        ],
    );
    err(
        "worktree:\n  cleanup:\n    argv: [/opt/h/c]\n",
        &["worktree.helpers.stable_root", "worktree.cleanup.argv"],
    );
    err(
        "worktree:\n  helpers:\n    stable_root: opt/h\n",
        &[
            "worktree.helpers.stable_root",
            "absolute",
            "line 3 column 18",
        ],
    );
    // A stable root without hooks is fine.
    assert!(ok(HOOKED).helpers.stable_root.is_some());
}

#[test]
fn delegated_needs_a_prepare_argv() {
    err(
        "worktree:\n  checkout:\n    mode: delegated\n",
        &[
            "worktree.checkout.mode",
            "worktree.prepare.argv",
            "line 3 column 11",
        ],
    );
    let cfg = ok(&hooked(
        "  checkout: {mode: delegated}\n  prepare: {argv: [/opt/h/p]}\n",
    ));
    assert_eq!(cfg.checkout.mode, CheckoutMode::Delegated);
}

#[test]
fn passthrough_names_must_be_variable_names() {
    let cfg = ok("worktree:\n  environment:\n    passthrough: [HOME, _X1, lower_case]\n");
    assert_eq!(
        cfg.environment.passthrough,
        vec!["HOME", "_X1", "lower_case"]
    );
    for bad in ["1ABC", "A-B", "''", "'A B'", "A=B"] {
        err(
            &format!("worktree:\n  environment:\n    passthrough: [OK, {bad}]\n"),
            &["worktree.environment.passthrough[1]"],
        );
    }
    err(
        "worktree:\n  environment:\n    passthrough: [12]\n",
        &["worktree.environment.passthrough[0]", "found an integer"],
    );
}

#[test]
fn ports_are_checked() {
    let p = |s: &str| format!("worktree:\n  ports: {s}\n");
    assert_eq!(
        ok(&p("{count: 2, range: [1024, 1025]}")).ports,
        Some(Ports {
            count: 2,
            range: [1024, 1025]
        })
    );
    assert_eq!(
        ok(&p("{count: 1, range: [65535, 65535]}")).ports,
        Some(Ports {
            count: 1,
            range: [65535, 65535]
        })
    );
    err(
        &p("{count: 1, range: [1023, 2000]}"),
        &["worktree.ports.range[0]", "1024"],
    );
    err(
        &p("{count: 1, range: [2000, 65536]}"),
        &["worktree.ports.range[1]", "65535"],
    );
    err(
        &p("{count: 1, range: [3000, 2000]}"),
        &["worktree.ports.range", "above"],
    );
    err(
        &p("{count: 0, range: [2000, 2001]}"),
        &["worktree.ports.count", "at least 1"],
    );
    err(
        &p("{count: 3, range: [2000, 2001]}"),
        &["worktree.ports.count", "2 ports"],
    );
    err(
        &p("{count: 1, range: [2000]}"),
        &["worktree.ports.range", "two ports"],
    );
    err(
        &p("{count: 1, range: [2000, 2001, 2002]}"),
        &["worktree.ports.range", "two ports"],
    );
    err(
        &p("{count: '1', range: [2000, 2001]}"),
        &["worktree.ports.count", "found a string"],
    );
    err(
        &p("{count: 1, range: '2000-2001'}"),
        &["worktree.ports.range", "expected a list"],
    );
    err(
        &p("{count: 1, range: [-1, 2001]}"),
        &["worktree.ports.range[0]"],
    );
    err(&p("[1, 2]"), &["worktree.ports", "expected a mapping"]);
}

#[test]
fn adoptions_are_checked() {
    let a = |card: &str, path: &str, common: &str| {
        format!("    - {{card: {card}, path: {path}, common_dir: {common}, branch: b}}\n")
    };
    let cfg = ok(&format!(
        "worktree:\n  adoptions:\n{}{}",
        a("a", "/x", "/g"),
        a("b", "/y", "/g")
    ));
    assert_eq!(cfg.adoptions.len(), 2);
    err(
        &format!("worktree:\n  adoptions:\n{}", a("a", "x", "/g")),
        &["worktree.adoptions[0].path", "absolute"],
    );
    err(
        &format!("worktree:\n  adoptions:\n{}", a("a", "/x", "g/.git")),
        &["worktree.adoptions[0].common_dir", "absolute"],
    );
    err(
        &format!(
            "worktree:\n  adoptions:\n{}{}",
            a("a", "/x", "/g"),
            a("a", "/y", "/g")
        ),
        &[
            "worktree.adoptions[1].card",
            "worktree.adoptions[0]",
            "line 4",
        ],
    );
    err(
        "worktree:\n  adoptions:\n    - {card: a, path: /x, common_dir: /g, branch: 7}\n",
        &["worktree.adoptions[0].branch", "found an integer"],
    );
}

#[test]
fn tags_anchors_and_aliases() {
    err(
        "worktree:\n  action_timeout_seconds: !secs 10\n",
        &["worktree.action_timeout_seconds", "tagged value"],
    );
    // Aliases resolve to their anchor's value.
    let cfg = ok("defaults: &d {remote: upstream}\nworktree:\n  base: *d\n");
    assert_eq!(cfg.base.remote, "upstream");
    // A standard tag is just the type.
    assert_eq!(
        ok("worktree:\n  action_timeout_seconds: !!int 10\n").action_timeout_seconds,
        10
    );
    err("worktree:\n  base: *nope\n", &["kardbrd.yml: ", "line 2"]);
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    err(
        "worktree:\n  base:\n    remote: [origin\n",
        &["kardbrd.yml: ", "line"],
    );
    err("worktree:\n  base: {\n", &["kardbrd.yml: ", "line"]);
    err("worktree:\n\tbase: {}\n", &["kardbrd.yml: ", "line 2"]);
    err(
        "worktree: {}\n---\nworktree: {}\n",
        &["kardbrd.yml: ", "more than one document"],
    );
    err("- a\n- b\n", &["kardbrd.yml: ", "mapping"]);
    err("just text\n", &["kardbrd.yml: ", "mapping"]);
}

#[test]
fn fingerprint_ignores_other_keys() {
    let a = ok(FULL_EXAMPLE).fingerprint();
    let b = ok(&format!("lint: true\n{FULL_EXAMPLE}")).fingerprint();
    assert_eq!(a, b);
    assert!(a.starts_with("sha256:"));
    assert_ne!(a, Config::default().fingerprint());
}

/// A tiny deterministic generator (xorshift), so the property test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let values = [
        "~", "null", "\"900\"", "900.5", "yes", "-1", "[]", "{}", "[a, ~]", "true", "'x'", "0",
        "&a 1", "*a", "!t x", "",
    ];
    match rng.below(7) {
        0 => {
            // Delete one character.
            let mut chars: Vec<char> = text.chars().collect();
            if !chars.is_empty() {
                let i = rng.below(chars.len());
                chars.remove(i);
            }
            return chars.into_iter().collect();
        }
        1 => {
            // Duplicate a line.
            let i = rng.below(lines.len());
            let line = lines[i].clone();
            lines.insert(i, line);
        }
        2 => {
            // Swap the values of two lines.
            let i = rng.below(lines.len());
            let j = rng.below(lines.len());
            let split = |l: &str| {
                l.split_once(": ")
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            };
            if let (Some((ki, vi)), Some((kj, vj))) = (split(&lines[i]), split(&lines[j])) {
                lines[i] = format!("{ki}: {vj}");
                lines[j] = format!("{kj}: {vi}");
            }
        }
        3 => {
            // Replace a value with something of another type.
            let i = rng.below(lines.len());
            if let Some((k, _)) = lines[i].split_once(": ") {
                lines[i] = format!("{k}: {}", values[rng.below(values.len())]);
            }
        }
        4 => {
            // Change a line's indentation.
            let i = rng.below(lines.len());
            lines[i] = if rng.below(2) == 0 {
                format!(" {}", lines[i])
            } else {
                lines[i].trim_start().to_owned()
            };
        }
        5 => {
            // Delete a line.
            let i = rng.below(lines.len());
            lines.remove(i);
        }
        _ => {
            // Insert a random character.
            let mut chars: Vec<char> = text.chars().collect();
            let noise = [
                ':', '-', '[', '{', '"', '\'', '#', '&', '*', '!', '\t', '\n', '|', '>', '?', ',',
            ];
            let i = rng.below(chars.len() + 1);
            chars.insert(i, noise[rng.below(noise.len())]);
            return chars.into_iter().collect();
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn garbled_input_never_panics_and_errors_are_located() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut errors = 0;
    for round in 0..600 {
        let mut text = FULL_EXAMPLE.to_owned();
        for _ in 0..=(round % 4) {
            text = mutate(&text, &mut rng);
        }
        let outcome = std::panic::catch_unwind(|| decode(file(), &text));
        let Ok(result) = outcome else {
            panic!("decode panicked on:\n{text}")
        };
        if let Err(e) = result {
            errors += 1;
            assert_eq!(e.code, Code::Usage, "{}", e.message);
            assert!(e.message.starts_with("kardbrd.yml: "), "{}", e.message);
            assert!(
                e.message.contains("worktree") || e.message.contains("line "),
                "neither key path nor line: {}\n---\n{text}",
                e.message
            );
        }
    }
    assert!(
        errors > 100,
        "only {errors} of 600 mutations failed to decode"
    );
}

#[test]
fn ref_names_follow_git_check_ref_format() {
    // Each checked against `git check-ref-format` 2.47 (which reads a leading - as an option).
    for good in [
        "refs/heads/main",
        "refs/heads/release/1.2",
        "refs/heads/a-b_c",
        "refs/heads/é",
        "refs/heads/x@y",
    ] {
        assert_eq!(check_ref_format(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "@",
        "main",
        "-x/y",
        "/refs/heads/a",
        "refs/heads/a/",
        "refs//heads",
        "refs/heads/a.",
        "refs/heads/a..b",
        "refs/heads/.a",
        "refs/heads/a.lock",
        "refs/heads/a@{1}",
        "refs/heads/a b",
        "refs/heads/a~1",
        "refs/heads/a^",
        "refs/heads/a:b",
        "refs/heads/a?",
        "refs/heads/a*",
        "refs/heads/a[b",
        "refs/heads/a\\b",
        "refs/heads/a\u{7f}",
        "refs/heads/a\tb",
    ] {
        assert!(check_ref_format(bad).is_err(), "{bad:?} passed");
    }
}

#[test]
fn remote_names_never_look_like_options() {
    for good in ["origin", "up/stream", "my-remote", "o.2"] {
        assert_eq!(check_remote_name(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "-o",
        "--upload-pack=touch /tmp/x",
        ".",
        "..",
        "a b",
        "a:b",
        ".hidden",
        "x.lock",
    ] {
        assert!(check_remote_name(bad).is_err(), "{bad:?} passed");
    }
    assert!(check_branch_ref("refs/heads/-x").is_err());
    assert!(check_branch_ref("--upload-pack=x").is_err());
    assert_eq!(check_recorded_base("origin", ""), Ok(()));
    assert_eq!(check_recorded_base("origin", "refs/heads/main"), Ok(()));
    assert!(check_recorded_base("--upload-pack=x", "refs/heads/main").is_err());
    assert!(check_recorded_base("origin", "--upload-pack=x").is_err());
}

#[test]
fn option_like_remote_and_ref_are_configuration_errors() {
    let msg = err(
        "worktree:\n  base:\n    remote: \"--upload-pack=touch /tmp/x\"\n",
        &["worktree.base.remote", "must not start with '-'", "line 3"],
    );
    assert!(msg.contains("\"--upload-pack=touch /tmp/x\""), "{msg}");
    err(
        "worktree:\n  base:\n    ref: \"--upload-pack=touch /tmp/x\"\n",
        &["worktree.base.ref", "refs/heads/"],
    );
    err(
        "worktree:\n  base:\n    ref: refs/heads/a..b\n",
        &["worktree.base.ref", ".."],
    );
}

#[test]
fn quotes_are_cut_at_forty_characters() {
    assert_eq!(quote("abc"), "\"abc\"");
    let long = "x".repeat(40);
    assert_eq!(quote(&long), format!("\"{long}\""));
    assert_eq!(quote(&format!("{long}y")), format!("\"{long}…\""));
    // Characters, not bytes: never a cut inside a UTF-8 sequence.
    assert_eq!(quote(&"é".repeat(41)), format!("\"{}…\"", "é".repeat(40)));
}

#[test]
fn values_are_never_quoted_past_forty_characters() {
    let secret = "s3cr3t-0123456789abcdefghijklmnopqrstuvwxyz-END";
    for text in [
        format!("SECRET={secret}\nTOKEN={secret}\n"),
        format!("- {secret}\n"),
        format!("worktree:\n  base:\n    remote: {secret}:x\n"),
        format!("worktree:\n  checkout:\n    mode: {secret}\n"),
        format!("worktree:\n  {secret}: 1\n"),
        format!("worktree:\n  base:\n    remote: [{secret}]\n"),
        format!("worktree:\n  helpers:\n    stable_root: {secret}\n"),
        format!("worktree:\n  environment:\n    passthrough: [\"{secret}-\"]\n"),
    ] {
        let e = decode(file(), &text).expect_err(&text);
        assert!(!e.message.contains("-END"), "{}", e.message);
    }
}

#[test]
fn deep_flow_nesting_is_refused_without_scanning_it() {
    let n = 100_000;
    for text in [
        format!("other: {}{}\n", "[".repeat(n), "]".repeat(n)),
        format!("other: {}1{}\n", "{a: ".repeat(n), "}".repeat(n)),
    ] {
        err(&text, &["nest too deeply"]);
    }
    // Ordinary flow collections, and deep block nesting, are fine.
    ok(&format!("other: {}{}\n", "[".repeat(200), "]".repeat(200)));
    ok(&format!("other:\n{}", "  - [a, {b: c}]\n".repeat(2000)));
    ok(&format!("other:\n{}x\n", "- ".repeat(n)));
}

/// `prepare` with the cache keys `extra` (lines indented under `prepare:`).
fn cached(extra: &str) -> String {
    hooked(&format!("  prepare:\n    argv: [/opt/h/p]\n{extra}"))
}

#[test]
fn prepare_cache_keys_decode_with_their_defaults() {
    let p = ok(&cached(
        "    inputs: [package-lock.json, ./sub/Cargo.lock]\n    outputs: [node_modules, sub/target]\n    on_cache_hit: run\n    cache_entries: 2\n",
    ))
    .prepare
    .unwrap();
    assert_eq!(
        p.inputs,
        [Path::new("package-lock.json"), Path::new("sub/Cargo.lock")]
    );
    assert_eq!(
        p.outputs,
        [Path::new("node_modules"), Path::new("sub/target")]
    );
    assert_eq!((p.on_cache_hit, p.cache_entries), (OnCacheHit::Run, 2));
    let p = ok(&cached("")).prepare.unwrap();
    assert!(p.inputs.is_empty() && p.outputs.is_empty());
    assert_eq!((p.on_cache_hit, p.cache_entries), (OnCacheHit::Skip, 4));
}

#[test]
fn prepare_cache_paths_stay_beneath_the_tree() {
    let msg = err(&cached("    outputs: [../x]\n"), &[]);
    assert_eq!(
        msg,
        "kardbrd.yml: worktree.prepare.outputs[0]: must be a path inside the repository (relative, no `..`, not .git), found \"../x\" at line 6 column 15"
    );
    for bad in ["/abs", "a/../../b", ".git/x", "''", "."] {
        err(
            &cached(&format!("    outputs: [node_modules, {bad}]\n")),
            &["worktree.prepare.outputs[1]", "must"],
        );
        err(
            &cached(&format!("    inputs: [{bad}]\n")),
            &["worktree.prepare.inputs[0]", "must"],
        );
    }
    let msg = err(
        &cached("    outputs: [node_modules, node_modules/.cache]\n"),
        &[],
    );
    assert_eq!(
        msg,
        "kardbrd.yml: worktree.prepare.outputs[1]: \"node_modules/.cache\" overlaps worktree.prepare.outputs[0] (\"node_modules\"); outputs must not contain one another at line 6 column 29"
    );
    err(
        &cached("    outputs: node_modules\n"),
        &["worktree.prepare.outputs", "expected a list"],
    );
}

#[test]
fn prepare_cache_choices_are_strict() {
    err(
        &cached("    on_cache_hit: skipped\n"),
        &["worktree.prepare.on_cache_hit", "\"skipped\"", "skip, run"],
    );
    err(
        &cached("    on_cache_hit: true\n"),
        &["worktree.prepare.on_cache_hit", "found a boolean"],
    );
    err(
        &cached("    cache_entries: 0\n"),
        &["worktree.prepare.cache_entries", "at least 1, found 0"],
    );
    err(
        &cached("    cache_entries: \"4\"\n"),
        &["worktree.prepare.cache_entries", "expected an integer"],
    );
    err(
        &cached("    outputs: [node_modules]\n  checkout:\n    mode: delegated\n"),
        &["worktree.prepare.outputs", "checkout.mode delegated"],
    );
    err(
        &cached("    cache_entry: 4\n"),
        &["cache_entry", "cache_entries"],
    );
}

/// `prepare` with outputs and a `cache_remote` block of `lines` (indented under it).
fn remote(lines: &str) -> String {
    cached(&format!(
        "    outputs: [node_modules]\n    cache_remote:\n{lines}"
    ))
}

#[test]
fn a_cache_remote_decodes_with_its_defaults() {
    let p = ok(&remote(
        "      url: s3://team-cache/kardwt/web/\n      endpoint: http://127.0.0.1:8333/\n",
    ))
    .prepare
    .unwrap();
    let r = p.cache_remote.unwrap();
    assert_eq!(
        (r.bucket.as_str(), r.prefix.as_str()),
        ("team-cache", "kardwt/web")
    );
    assert_eq!(r.endpoint.as_deref(), Some("http://127.0.0.1:8333"));
    assert_eq!(r.region, "us-east-1");
    let r = ok(&remote(
        "      url: s3://my.bucket\n      region: eu-west-3\n",
    ))
    .prepare
    .unwrap()
    .cache_remote
    .unwrap();
    assert_eq!(
        (r.prefix.as_str(), r.endpoint, r.region.as_str()),
        ("", None, "eu-west-3")
    );
    // Unset, it is left out of the fingerprint: rules without it keep their cards' fingerprints.
    let plain = ok(&cached("    outputs: [node_modules]\n"));
    let json = serde_json::to_string(&plain).unwrap();
    assert!(!json.contains("cache_remote"), "{json}");
}

#[test]
fn a_cache_remote_is_refused_unless_whole_and_credential_free() {
    for (lines, want) in [
        (
            "      endpoint: http://h:1\n",
            &["worktree.prepare.cache_remote", "url"][..],
        ),
        (
            "      url: https://b/p\n      region: x\n",
            &["cache_remote.url", "not an s3:// URL"],
        ),
        (
            "      url: s3://Up_per/p\n      region: x\n",
            &["cache_remote.url", "not a bucket name"],
        ),
        (
            "      url: s3://ab\n      region: x\n",
            &["cache_remote.url", "not a bucket name"],
        ),
        (
            "      url: s3://bkt/a//b\n      region: x\n",
            &["cache_remote.url", "prefix"],
        ),
        (
            "      url: s3://bkt/a/../b\n      region: x\n",
            &["cache_remote.url", "prefix"],
        ),
        (
            "      url: s3://bkt/a b\n      region: x\n",
            &["cache_remote.url", "prefix"],
        ),
        (
            "      url: s3://bkt\n",
            &["cache_remote", "names no region"],
        ),
        (
            "      url: s3://bkt\n      region: US East\n",
            &["cache_remote.region", "not a region"],
        ),
        (
            "      url: s3://bkt\n      endpoint: ftp://h\n",
            &["cache_remote.endpoint", "not an http:// or https:// URL"],
        ),
        (
            "      url: s3://bkt\n      endpoint: https://h:9000/path\n",
            &["cache_remote.endpoint", "host and port only"],
        ),
        (
            "      url: s3://bkt\n      endpoint: https://AKID:secret@h\n",
            &["cache_remote.endpoint", "credentials come from the machine"],
        ),
        (
            "      url: s3://bkt\n      region: x\n      access_key: AKID\n",
            &["access_key", "unknown key"],
        ),
        (
            "      url: 3\n      region: x\n",
            &["cache_remote.url", "expected a string"],
        ),
    ] {
        err(&remote(lines), want);
    }
    // The endpoint's password is never printed.
    let msg = err(
        &remote("      url: s3://bkt\n      endpoint: https://AKID:hunter2@h\n"),
        &[],
    );
    assert!(!msg.contains("hunter2") && !msg.contains("AKID"), "{msg}");
    err(
        &cached("    cache_remote:\n      url: s3://bkt\n      region: x\n"),
        &["worktree.prepare.cache_remote", "needs prepare.outputs"],
    );
    // The store's credentials are never handed to a hook; without a store they may be.
    let passing = "  environment:\n    passthrough: [NPM_TOKEN, AWS_SECRET_ACCESS_KEY]\n";
    err(
        &format!(
            "{}{passing}",
            remote("      url: s3://bkt\n      region: x\n")
        ),
        &[
            "worktree.environment.passthrough[1]",
            "never handed to hooks",
        ],
    );
    ok(&format!(
        "{}{passing}",
        cached("    outputs: [node_modules]\n")
    ));
}
