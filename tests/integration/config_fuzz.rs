//! Property test of the configuration decoder (issue 7, R-CFG, R-CFG-STRICT), through the real
//! binary (`git-kardwt config check [--json]`) and through `git_kardwt::config::decode`.
//!
//! Documents come from a small deterministic generator (xorshift, fixed seeds):
//! - *valid* documents drawn from the grammar of the `worktree:` keys (every key optional where
//!   the contract allows, every style: block, flow, quoted, plain, odd unicode, anchors and
//!   aliases, other top-level keys), each with the effective configuration it must produce;
//! - the same with *exactly one fault* injected (a wrong type, an explicit null, an unknown
//!   key, a duplicate key, a missing required key, an out-of-range number), each with the key
//!   path the error must name;
//! - *garbage*: several faults at once, random bytes, deep nesting, huge numbers, tags, odd
//!   unicode, several documents, anchors and aliases (undefined, recursive, exponential),
//!   random edits of valid documents — for which only the invariants are known.
//!
//! Invariants: never a panic; the outcome is success or a usage error (exit 0 or 2); every
//! error starts with `error: ` and names the rules file; success prints the effective
//! configuration (YAML, or JSON with `--json`) equal to what the library decodes; the binary
//! and the library agree on every document.
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value as Json};

use git_kardwt::config::decode;
use git_kardwt::error::Code;

use crate::support::{Rng, TestRepo, BIN};

// ---------------------------------------------------------------------------------------------
// Documents as trees, rendered to YAML text in varied styles.

/// What the schema expects at a node: decides which values are certainly wrong there.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A non-empty string (remote, argv item, adoption branch).
    NonEmpty,
    /// A non-empty absolute path.
    Abs,
    Bool,
    /// An integer of at least this much.
    Int(u64),
    /// A port: 1024..=65535.
    Port,
    /// One of fixed words.
    Choice,
    /// A variable name (passthrough item).
    Env,
    /// `refs/heads/<x>` that git accepts.
    BranchRef,
    /// A remote name that git accepts and that does not start with `-`.
    Remote,
    /// A card id.
    Card,
    /// A mapping with fixed keys.
    Block,
    /// A non-empty list of non-empty strings.
    Argv,
    /// A list (passthrough, adoptions).
    List,
    /// `[LOW, HIGH]`.
    Range,
}

#[derive(Clone, Debug)]
enum Node {
    /// Raw YAML text of a scalar (or of a small flow value standing in for one).
    Raw(String, Kind),
    Map(Vec<(Key, Node)>, Kind),
    Seq(Vec<Node>, Kind),
    /// `*name`.
    Alias(String),
}

#[derive(Clone, Debug)]
struct Key {
    raw: String,
    /// How the decoder names it in a key path.
    label: String,
}

impl Key {
    fn plain(name: &str) -> Key {
        Key {
            raw: name.to_owned(),
            label: name.to_owned(),
        }
    }
}

impl Node {
    fn kind(&self) -> Option<Kind> {
        match self {
            Node::Raw(_, k) | Node::Map(_, k) | Node::Seq(_, k) => Some(*k),
            Node::Alias(_) => None,
        }
    }
}

fn is_reserved(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
    )
}

/// A string as a YAML scalar: plain when that is unambiguous, else single or double quoted.
fn yaml_string(rng: &mut Rng, s: &str) -> String {
    let plain_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '.' | '-'))
        && !is_reserved(s);
    let single_ok = s
        .chars()
        .all(|c| !c.is_control() && !matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}'))
        && !s.starts_with(' ')
        && !s.ends_with(' ');
    match rng.below(3) {
        0 if plain_ok => s.to_owned(),
        1 if single_ok => format!("'{}'", s.replace('\'', "''")),
        _ => double_quoted(s),
    }
}

/// A YAML double-quoted scalar; anything a YAML reader could take for a line break, a BOM or
/// a control character is escaped.
fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render_flow(node: &Node) -> String {
    match node {
        Node::Raw(r, _) => r.clone(),
        Node::Alias(a) => format!("*{a}"),
        Node::Seq(items, _) => format!(
            "[{}]",
            items.iter().map(render_flow).collect::<Vec<_>>().join(", ")
        ),
        Node::Map(entries, _) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", k.raw, render_flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

/// The entries of a mapping in block style at `indent`.
fn render_map_block(rng: &mut Rng, entries: &[(Key, Node)], indent: usize, out: &mut String) {
    for (k, v) in entries {
        out.push_str(&pad(indent));
        out.push_str(&k.raw);
        out.push(':');
        render_value_after_key(rng, v, indent, out);
    }
}

/// A value after `key:` (the colon already written).
fn render_value_after_key(rng: &mut Rng, v: &Node, indent: usize, out: &mut String) {
    let step = *rng.pick(&[2usize, 2, 4]);
    match v {
        Node::Map(entries, _) if !entries.is_empty() && rng.chance(3, 4) => {
            if rng.chance(1, 8) {
                out.push_str("   # a comment");
            }
            out.push('\n');
            render_map_block(rng, entries, indent + step, out);
        }
        Node::Seq(items, _) if !items.is_empty() && rng.chance(2, 3) => {
            out.push('\n');
            // A block sequence may sit at its key's own indentation.
            let at = if rng.chance(1, 3) {
                indent
            } else {
                indent + step
            };
            render_seq_block(rng, items, at, out);
        }
        other => {
            out.push(' ');
            out.push_str(&render_flow(other));
            out.push('\n');
        }
    }
}

fn render_seq_block(rng: &mut Rng, items: &[Node], indent: usize, out: &mut String) {
    for item in items {
        out.push_str(&pad(indent));
        out.push('-');
        match item {
            Node::Map(entries, _) if !entries.is_empty() && rng.chance(2, 3) => {
                if rng.chance(1, 2) {
                    // `- key: v` with the other keys aligned under the first.
                    out.push(' ');
                    let mut first = String::new();
                    render_map_block(rng, &entries[..1], indent + 2, &mut first);
                    out.push_str(first.trim_start_matches(' '));
                    render_map_block(rng, &entries[1..], indent + 2, out);
                } else {
                    out.push('\n');
                    render_map_block(rng, entries, indent + 2, out);
                }
            }
            Node::Seq(inner, _) if !inner.is_empty() && rng.chance(1, 2) => {
                out.push('\n');
                render_seq_block(rng, inner, indent + 2, out);
            }
            other => {
                out.push(' ');
                out.push_str(&render_flow(other));
                out.push('\n');
            }
        }
    }
}

/// A whole document: the top-level entries (one of them usually `worktree`).
fn render_doc(rng: &mut Rng, top: &[(Key, Node)]) -> String {
    let mut out = String::new();
    if rng.chance(1, 10) {
        out.push_str("# kardbrd rules\n");
    }
    if rng.chance(1, 8) {
        out.push_str("---\n");
    }
    if top.is_empty() {
        out.push_str("{}\n");
    } else if rng.chance(1, 12) {
        out.push_str(&render_flow(&Node::Map(top.to_vec(), Kind::Block)));
        out.push('\n');
    } else {
        render_map_block(rng, top, 0, &mut out);
    }
    if rng.chance(1, 12) {
        out.push_str("...\n");
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Valid documents and the effective configuration they mean.

const REMOTES: &[&str] = &[
    "origin",
    "upstream",
    "my-remote",
    "orígin",
    "up/stream",
    "r.2",
    "😀",
    "yes",
    "null",
    "123",
    "a'b\"c",
    "\u{202e}rtl",
    "z\u{200d}wj",
    "e\u{301}",
    "nel\u{85}in",
];
const REFS: &[&str] = &[
    "refs/heads/main",
    "refs/heads/feature/x",
    "refs/heads/ünï",
    "refs/heads/true",
];
const ROOTS: &[&str] = &[
    "/opt/h",
    "/usr/local/libexec/project agent",
    "/tmp/ünïcødé/ħ",
    "/",
    "/a:b",
];
const PROGRAMS: &[&str] = &["prepare", "cleanup", "run.sh", "x y", "ü", "--flag", "-"];
const ENV_NAMES: &[&str] = &["FOO", "_X", "PATH_2", "a", "Z9_"];
const CARDS: &[&str] = &["123", "a", "A.b_c-d", "x1", "card9"];

fn raw_str(rng: &mut Rng, s: &str, kind: Kind) -> Node {
    Node::Raw(yaml_string(rng, s), kind)
}

/// An integer in any of YAML's notations for a plain decimal.
fn raw_int(rng: &mut Rng, v: u64, kind: Kind) -> Node {
    let text = match rng.below(6) {
        0 => format!("+{v}"),
        1 => format!("!!int {v}"),
        _ => v.to_string(),
    };
    Node::Raw(text, kind)
}

fn raw_bool(rng: &mut Rng, b: bool) -> Node {
    let text = match (b, rng.below(5)) {
        (true, 0) => "True",
        (true, 1) => "TRUE",
        (true, _) => "true",
        (false, 0) => "False",
        (false, _) => "false",
    };
    Node::Raw(text.to_owned(), Kind::Bool)
}

fn map(entries: Vec<(&str, Node)>) -> Node {
    Node::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Key::plain(k), v))
            .collect(),
        Kind::Block,
    )
}

/// Shuffle the entries of a mapping (key order never matters).
fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i + 1);
        items.swap(i, j);
    }
}

fn argv(rng: &mut Rng, root: &str) -> (Node, Json) {
    let n = 1 + rng.below(3);
    let mut items = Vec::new();
    let mut values = Vec::new();
    for i in 0..n {
        let s = if i == 0 {
            format!("{}/{}", root.trim_end_matches('/'), rng.pick(PROGRAMS))
        } else {
            rng.pick(PROGRAMS).to_string()
        };
        items.push(raw_str(rng, &s, Kind::NonEmpty));
        values.push(Json::String(s));
    }
    (Node::Seq(items, Kind::Argv), Json::Array(values))
}

/// A valid `worktree:` value and the effective configuration (as JSON) it means.
fn valid_worktree(rng: &mut Rng) -> (Node, Json) {
    let mut entries: Vec<(&str, Node)> = Vec::new();
    let mut cfg = json!({
        "base": {"remote": "origin", "ref": null},
        "helpers": {"stable_root": null},
        "checkout": {"mode": "full"},
        "prepare": null,
        "cleanup": null,
        "sharing": {"env": "disabled", "skills": "fallback"},
        "environment": {"passthrough": []},
        "ports": null,
        "action_timeout_seconds": 3600,
        "adoptions": [],
    });

    if rng.chance(1, 2) {
        let mut b = Vec::new();
        if rng.chance(2, 3) {
            let r = *rng.pick(REMOTES);
            b.push(("remote", raw_str(rng, r, Kind::Remote)));
            cfg["base"]["remote"] = json!(r);
        }
        if rng.chance(1, 2) {
            let r = *rng.pick(REFS);
            b.push(("ref", raw_str(rng, r, Kind::BranchRef)));
            cfg["base"]["ref"] = json!(r);
        }
        shuffle(rng, &mut b);
        entries.push(("base", map(b)));
    }

    let hooks = rng.chance(2, 3);
    let root = *rng.pick(ROOTS);
    if hooks || rng.chance(1, 3) {
        entries.push((
            "helpers",
            map(vec![("stable_root", raw_str(rng, root, Kind::Abs))]),
        ));
        cfg["helpers"]["stable_root"] = json!(root);
    }

    let action = if rng.chance(1, 2) {
        let v = *rng.pick(&[1u64, 60, 900, 3600, 86_400, u64::MAX]);
        entries.push(("action_timeout_seconds", raw_int(rng, v, Kind::Int(1))));
        cfg["action_timeout_seconds"] = json!(v);
        Some(v)
    } else {
        None
    };
    let action_value = action.unwrap_or(3600);
    // A cap written in the file may not exceed a written action timeout; a default cap is
    // clamped to the action timeout.
    let cap = |rng: &mut Rng, default: u64| -> (Option<u64>, u64) {
        if rng.chance(1, 2) {
            let limit = action.unwrap_or(u64::MAX);
            let v = match rng.below(4) {
                0 => 1,
                1 => limit,
                2 => limit.min(120),
                _ => 1 + rng.next() % limit,
            };
            (Some(v), v.min(action_value))
        } else {
            (None, default.min(action_value))
        }
    };

    let mut delegated_ok = false;
    if hooks && rng.chance(3, 4) {
        let (a, aj) = argv(rng, root);
        let mut p = vec![("argv", a)];
        let mut on_create = true;
        let mut on_reuse = false;
        if rng.chance(1, 2) {
            on_create = rng.chance(1, 2);
            p.push(("on_create", raw_bool(rng, on_create)));
        }
        if rng.chance(1, 2) {
            on_reuse = rng.chance(1, 2);
            p.push(("on_reuse", raw_bool(rng, on_reuse)));
        }
        let (written, effective) = cap(rng, 900);
        if let Some(v) = written {
            p.push(("timeout_seconds", raw_int(rng, v, Kind::Int(1))));
        }
        shuffle(rng, &mut p);
        entries.push(("prepare", map(p)));
        cfg["prepare"] = json!({
            "argv": aj, "on_create": on_create, "on_reuse": on_reuse,
            "timeout_seconds": effective,
        });
        delegated_ok = true;
    }
    if hooks && (cfg["prepare"].is_null() || rng.chance(1, 2)) {
        let (a, aj) = argv(rng, root);
        let mut c = vec![("argv", a)];
        let (written, effective) = cap(rng, 120);
        if let Some(v) = written {
            c.push(("timeout_seconds", raw_int(rng, v, Kind::Int(1))));
        }
        shuffle(rng, &mut c);
        entries.push(("cleanup", map(c)));
        cfg["cleanup"] = json!({"argv": aj, "timeout_seconds": effective});
    }

    if rng.chance(1, 3) {
        let mode = if delegated_ok && rng.chance(1, 2) {
            "delegated"
        } else {
            "full"
        };
        entries.push((
            "checkout",
            map(vec![("mode", raw_str(rng, mode, Kind::Choice))]),
        ));
        cfg["checkout"]["mode"] = json!(mode);
    }

    if rng.chance(1, 3) {
        let mut s = Vec::new();
        if rng.chance(2, 3) {
            let v = *rng.pick(&["disabled", "link"]);
            s.push(("env", raw_str(rng, v, Kind::Choice)));
            cfg["sharing"]["env"] = json!(v);
        }
        if rng.chance(2, 3) {
            let v = *rng.pick(&["fallback", "disabled"]);
            s.push(("skills", raw_str(rng, v, Kind::Choice)));
            cfg["sharing"]["skills"] = json!(v);
        }
        shuffle(rng, &mut s);
        entries.push(("sharing", map(s)));
    }

    if rng.chance(1, 3) {
        let mut e = Vec::new();
        if rng.chance(3, 4) {
            let n = rng.below(4);
            let names: Vec<&str> = (0..n).map(|_| *rng.pick(ENV_NAMES)).collect();
            let items = names.iter().map(|s| raw_str(rng, s, Kind::Env)).collect();
            e.push(("passthrough", Node::Seq(items, Kind::List)));
            cfg["environment"]["passthrough"] = json!(names);
        }
        entries.push(("environment", map(e)));
    }

    if rng.chance(1, 3) {
        let low = 1024 + rng.next() % (65535 - 1024 + 1);
        let high = low + rng.next() % (65535 - low + 1);
        let count = 1 + rng.next() % (high - low + 1).min(50);
        let mut p = vec![
            ("count", raw_int(rng, count, Kind::Int(1))),
            (
                "range",
                Node::Seq(
                    vec![
                        Node::Raw(low.to_string(), Kind::Port),
                        Node::Raw(high.to_string(), Kind::Port),
                    ],
                    Kind::Range,
                ),
            ),
        ];
        shuffle(rng, &mut p);
        entries.push(("ports", map(p)));
        cfg["ports"] = json!({"count": count, "range": [low, high]});
    }

    if rng.chance(1, 4) {
        let n = rng.below(3);
        let mut items = Vec::new();
        let mut values = Vec::new();
        for i in 0..n {
            let card = format!("{}{i}", rng.pick(CARDS));
            let path = format!("{}/old-{i}", rng.pick(ROOTS).trim_end_matches('/'));
            let common = "/srv/project/.git".to_owned();
            let branch = format!("feature/{}", rng.pick(PROGRAMS));
            let mut a = vec![
                ("card", raw_str(rng, &card, Kind::Card)),
                ("path", raw_str(rng, &path, Kind::Abs)),
                ("common_dir", raw_str(rng, &common, Kind::Abs)),
                ("branch", raw_str(rng, &branch, Kind::NonEmpty)),
            ];
            shuffle(rng, &mut a);
            items.push(map(a));
            values
                .push(json!({"card": card, "path": path, "common_dir": common, "branch": branch}));
        }
        entries.push(("adoptions", Node::Seq(items, Kind::List)));
        cfg["adoptions"] = Json::Array(values);
    }

    shuffle(rng, &mut entries);
    (map(entries), cfg)
}

/// Other tools' top-level keys: anything goes there (the decoder skips them).
fn other_top_level(rng: &mut Rng) -> (Key, Node) {
    let (k, v) = *rng.pick(&[
        ("name", "project"),
        ("lint", "{rules: [a, b], strict: yes}"),
        ("version", "3"),
        ("agents", "[x, {y: [1, 2, ~]}]"),
        ("board", "~"),
        ("\"wörk tree\"", "{base: 5}"),
        ("Worktree", "[1]"),
        ("worktrees", "{prepare: null}"),
        ("dup", "{a: 1, a: 2}"),
        ("tagged", "!custom {x: 1}"),
    ]);
    (
        Key {
            raw: k.to_owned(),
            label: k.to_owned(),
        },
        Node::Raw(v.to_owned(), Kind::Block),
    )
}

/// A valid document: the `worktree` block among other keys, sometimes with parts of it
/// hoisted into anchors on another top-level key and used through aliases.
fn valid_doc(rng: &mut Rng) -> (Vec<(Key, Node)>, Json) {
    let (wt, cfg) = valid_worktree(rng);
    let mut top = Vec::new();
    for _ in 0..rng.below(3) {
        top.push(other_top_level(rng));
    }
    let at = rng.below(top.len() + 1);
    top.insert(at, (Key::plain("worktree"), wt));
    (top, cfg)
}

/// Replace one or two subtrees under `worktree` by aliases to anchors defined (in flow
/// style, on other top-level keys) before it.
fn hoist_aliases(rng: &mut Rng, top: &mut Vec<(Key, Node)>) {
    for n in 0..1 + rng.below(2) {
        let Some(wi) = top.iter().position(|(k, _)| k.label == "worktree") else {
            return;
        };
        let mut sites = Vec::new();
        collect_value_paths(&top[wi].1, &mut Vec::new(), &mut sites);
        if sites.is_empty() {
            return;
        }
        let site = rng.pick(&sites).clone();
        if matches!(node_at(&mut top[wi].1, &site), Node::Alias(_)) {
            // YAML puts no anchor on an alias.
            return;
        }
        let name = format!("a{n}");
        let node = std::mem::replace(node_at(&mut top[wi].1, &site), Node::Alias(name.clone()));
        let defined = Node::Raw(format!("&{name} {}", render_flow(&node)), Kind::Block);
        // After the anchors defined so far: an alias may only follow its anchor.
        top.insert(n, (Key::plain(&format!("anchors{n}")), defined));
    }
}

/// Steps from a node to one of its descendants.
#[derive(Clone, Debug)]
enum Step {
    Entry(usize),
    Item(usize),
}

/// Paths to every descendant value (not the node itself).
fn collect_value_paths(node: &Node, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match node {
        Node::Map(entries, _) => {
            for (i, (_, v)) in entries.iter().enumerate() {
                at.push(Step::Entry(i));
                out.push(at.clone());
                collect_value_paths(v, at, out);
                at.pop();
            }
        }
        Node::Seq(items, _) => {
            for (i, v) in items.iter().enumerate() {
                at.push(Step::Item(i));
                out.push(at.clone());
                collect_value_paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn node_at<'a>(node: &'a mut Node, path: &[Step]) -> &'a mut Node {
    match (path.first(), node) {
        (None, n) => n,
        (Some(Step::Entry(i)), Node::Map(entries, _)) => node_at(&mut entries[*i].1, &path[1..]),
        (Some(Step::Item(i)), Node::Seq(items, _)) => node_at(&mut items[*i], &path[1..]),
        (Some(s), n) => panic!("bad step {s:?} into {n:?}"),
    }
}

/// The key path the decoder prints for `path` under `worktree`.
fn key_path(root: &Node, path: &[Step]) -> String {
    let mut out = "worktree".to_owned();
    let mut node = root;
    for step in path {
        match (step, node) {
            (Step::Entry(i), Node::Map(entries, _)) => {
                out.push('.');
                out.push_str(&entries[*i].0.label);
                node = &entries[*i].1;
            }
            (Step::Item(i), Node::Seq(items, _)) => {
                out.push_str(&format!("[{i}]"));
                node = &items[*i];
            }
            _ => unreachable!(),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Faults.

/// Values that are certainly wrong for a node of `kind`.
fn wrong_values(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::NonEmpty => &[
            "123", "true", "~", "null", "[a]", "{a: b}", "1.5", "\"\"", "''",
        ],
        Kind::Abs => &["relative/x", "\"\"", "5", "false", "~", "[/a]", "x/../y"],
        Kind::Bool => &[
            "yes", "\"true\"", "'false'", "1", "0", "on", "~", "[true]", "{}",
        ],
        Kind::Int(_) => &[
            "\"900\"",
            "9.5",
            "-1",
            "true",
            "~",
            "[1]",
            "{}",
            "99999999999999999999999",
            "1e3",
            "0",
            ".inf",
            ".nan",
            "'10'",
            "!!str 10",
        ],
        Kind::Port => &["80", "1023", "70000", "65536", "\"2000\"", "~", "-5", "2e4"],
        Kind::Choice => &["partial", "\"FULL\"", "Link", "1", "true", "~", "[full]"],
        Kind::Env => &["\"1ABC\"", "A-B", "\"\"", "'a b'", "5", "~", "[X]"],
        Kind::Remote => &[
            "\"-o\"",
            "\"--upload-pack=touch x\"",
            "'a b'",
            "a..b",
            "x.lock",
            "\"\"",
            "~",
            "[x]",
        ],
        Kind::BranchRef => &[
            "main",
            "refs/tags/v1",
            "refs/heads/",
            "\"--upload-pack=touch x\"",
            "\"refs/heads/-x\"",
            "refs/heads/a..b",
            "'refs/heads/a b'",
            "refs/heads/x.lock",
            "\"\"",
            "5",
            "~",
            "[x]",
        ],
        Kind::Card => &[
            "\"-x\"", "a..b", "x.lock", "\"a b\"", "\"\"", "~", "a/b", "[1]",
        ],
        Kind::Block => &["[a]", "text", "5", "true", "~", "null", "[]", "\"{}\""],
        Kind::Argv => &["text", "{a: 1}", "5", "~", "[]", "true"],
        Kind::List => &["text", "{a: 1}", "5", "~", "true", "\"[]\""],
        Kind::Range => &["[1024]", "[1024, 2000, 3000]", "[]", "x", "~", "{low: 1}"],
    }
}

/// Does the decoder require `key` in the mapping at `path` (given the rest is as generated)?
fn required(path: &str, key: &str, hooks: bool) -> bool {
    match (path, key) {
        ("worktree.prepare" | "worktree.cleanup", "argv") => true,
        ("worktree.ports", "count" | "range") => true,
        ("worktree.helpers", "stable_root") => hooks,
        (p, _) => p.starts_with("worktree.adoptions["),
    }
}

const UNKNOWN_KEYS: &[(&str, &str)] = &[
    ("colour", "colour"),
    ("Base", "Base"),
    ("on-create", "on-create"),
    ("\"ключ\"", "ключ"),
    ("\"with space\"", "with space"),
    ("worktree", "worktree"),
    ("1", "1"),
    ("true", "true"),
    ("~", "~"),
    ("\"\"", ""),
    ("\"😀\"", "😀"),
    ("argv_", "argv_"),
];

/// Inject one fault into the valid `worktree` value `wt`; returns the key path the error
/// must name. `hooks`: a prepare or cleanup hook is configured.
fn inject_fault(rng: &mut Rng, wt: &mut Node, hooks: bool) -> String {
    let mut sites = vec![Vec::new()];
    collect_value_paths(wt, &mut Vec::new(), &mut sites);
    loop {
        let site = rng.pick(&sites).clone();
        let path = key_path(wt, &site);
        let node = node_at(wt, &site);
        match rng.below(5) {
            // A value certainly wrong for this node (including explicit nulls).
            0 | 1 => {
                let Some(kind) = node.kind() else { continue };
                let v = *rng.pick(wrong_values(kind));
                *node = Node::Raw(v.to_owned(), kind);
                return path;
            }
            // An unknown key in a mapping.
            2 => {
                let Node::Map(entries, _) = node else {
                    continue;
                };
                let (raw, label) = *rng.pick(UNKNOWN_KEYS);
                if entries.iter().any(|(k, _)| k.label == label) {
                    continue;
                }
                let at = rng.below(entries.len() + 1);
                let value = Node::Raw(
                    (*rng.pick(&["1", "x", "~", "[]", "{a: 1}"])).to_owned(),
                    Kind::Block,
                );
                entries.insert(
                    at,
                    (
                        Key {
                            raw: raw.to_owned(),
                            label: label.to_owned(),
                        },
                        value,
                    ),
                );
                return format!("{path}.{label}");
            }
            // A duplicate key.
            3 => {
                let Node::Map(entries, _) = node else {
                    continue;
                };
                if entries.is_empty() {
                    continue;
                }
                let i = rng.below(entries.len());
                let dup = entries[i].clone();
                let label = dup.0.label.clone();
                let at = i + 1 + rng.below(entries.len() - i);
                entries.insert(at, dup);
                return format!("{path}.{label}");
            }
            // A required key left out.
            _ => {
                let Node::Map(entries, _) = node else {
                    continue;
                };
                let Some(i) = entries
                    .iter()
                    .position(|(k, _)| required(&path, &k.label, hooks))
                else {
                    continue;
                };
                let label = entries.remove(i).0.label;
                return format!("{path}.{label}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Garbage.

/// Nesting around serde_yaml's recursion limit (128) and far beyond it. (Far beyond is kept
/// to 3000 levels: the YAML scanner's time grows with the square of the depth, so 20,000
/// levels take seconds in a debug build.)
fn deep(rng: &mut Rng) -> String {
    let n = *rng.pick(&[10usize, 64, 126, 127, 128, 129, 200, 1000, 3000]);
    match rng.below(5) {
        0 => format!("worktree: {}{}\n", "[".repeat(n), "]".repeat(n)),
        1 => format!(
            "worktree:\n  base: {}1{}\n",
            "{a: ".repeat(n),
            "}".repeat(n)
        ),
        2 => {
            let mut s = "worktree:\n".to_owned();
            for i in 1..=n.min(1000) {
                s.push_str(&format!("{}k:\n", pad(i * 2)));
            }
            s
        }
        3 => format!(
            "other: {}{}\nworktree: {{}}\n",
            "[".repeat(n),
            "]".repeat(n)
        ),
        _ => {
            let mut s = String::new();
            for i in 0..n.min(1000) {
                s.push_str(&format!("{}- \n", pad(i * 2)));
            }
            s
        }
    }
}

fn huge_numbers(rng: &mut Rng) -> String {
    let nines = "9".repeat(400);
    let v = *rng.pick(&[
        "18446744073709551615",
        "18446744073709551616",
        "340282366920938463463374607431768211456",
        "-9223372036854775809",
        "1e309",
        "-1e309",
        "0x10000000000000000",
        "0xFFFFFFFFFFFFFFFF",
        "0o777",
        "0b101",
        "1_000",
        "00012",
        ".inf",
        "-.inf",
        ".NaN",
        "1.0",
        "-0",
        "+0",
        nines.as_str(),
    ]);
    match rng.below(4) {
        0 => format!("worktree:\n  action_timeout_seconds: {v}\n"),
        1 => format!("worktree:\n  ports: {{count: {v}, range: [2000, {v}]}}\n"),
        2 => format!(
            "worktree:\n  helpers: {{stable_root: /h}}\n  prepare:\n    argv: [/h/p]\n    timeout_seconds: {v}\n  action_timeout_seconds: {v}\n"
        ),
        _ => format!("worktree:\n  {v}: 1\n"),
    }
}

const SNIPPETS: &[&str] = &[
    "worktree: {}\n---\nworktree: {}\n",
    "---\nworktree: {}\n---\n",
    "worktree: {}\n---\n[unclosed\n",
    "worktree: {}\n...\n---\nx: 1\n",
    "%YAML 1.2\n---\nworktree: {}\n",
    "%YAML 1.1\n---\nworktree: {base: {remote: origin}}\n",
    "%TAG ! tag:example.com,2000:\n---\nworktree: !x {}\n",
    "--- !tagged\nworktree: {}\n",
    "worktree: *undefined\n",
    "worktree: &a [*a]\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\nworktree:\n  environment: {passthrough: *h}\n",
    "d: &d {remote: upstream}\nworktree:\n  base:\n    <<: *d\n",
    "worktree:\n  base: !!map {remote: x}\n",
    "worktree:\n  base: {remote: !!str 5}\n",
    "worktree:\n  base: {remote: !!binary aGVsbG8=}\n",
    "worktree:\n  action_timeout_seconds: !!int \"10\"\n",
    "worktree:\n  action_timeout_seconds: !<tag:yaml.org,2002:int> 10\n",
    "worktree:\n  action_timeout_seconds: !!float 10\n",
    "worktree: !!null\n",
    "worktree: !custom\n",
    "worktree:\n  ? [a, b]\n  : 1\n",
    "worktree:\n  ? {a: 1}\n  : 1\n",
    "worktree:\n  base:\n    remote: |\n      multi\n      line\n",
    "worktree:\n  base:\n    remote: >-\n      folded\n",
    "worktree:\n\tbase: {}\n",
    "worktree:\n  base: {remote: a\tb}\n",
    "\u{feff}worktree: {}\n",
    "worktree: {}\u{feff}\n",
    "worktree:\r\n  base:\r\n    remote: crlf\r\n",
    "worktree:\r  base: {}\r",
    "worktree:\u{85}  base: {}\n",
    "worktree:\u{2028}  base: {}\n",
    "worktree: {base: {remote: \"\\u0000\"}}\n",
    "worktree: {base: {remote: \"\u{0}\"}}\n",
    "worktree: {base: {remote: \"\\ud800\"}}\n",
    "worktree: {base: {remote: \"\\x\"}}\n",
    "worktree:\n  base:\n    remote: \u{202e}nigiro\n",
    "\u{0}",
    "",
    "\n\n\n",
    "# only a comment\n",
    "~\n",
    "null\n",
    "[]\n",
    "- worktree: {}\n",
    "'worktree'\n",
    "worktree\n",
    "worktree:\n",
    "worktree: ''\n",
    "worktree: []\n",
    "worktree: 0\n",
    "worktree: {}\nworktree: {}\n",
    "\"worktree\": {}\n'worktree': {}\n",
    "worktree: {}\n? worktree\n: {}\n",
    "worktree:\n  base: {}\n  base: {}\n",
    "worktree:\n  prepare: {argv: [a], argv: [b]}\n",
    ": x\n",
    "worktree: {: x}\n",
    "worktree: [\n",
    "worktree: {\n",
    "worktree: \"unterminated\n",
    "worktree: 'x\n",
    "worktree:\n  - a\n  b: c\n",
    "worktree:\n   base: {}\n  helpers: {}\n",
    "worktree: &x\n",
    "worktree: *\n",
    "worktree: !\n",
    "worktree: @x\n",
    "worktree: `x\n",
    "worktree: %x\n",
    "{{{{\n",
    "]]]]\n",
    "&a &b x\n",
    "worktree: !!str\n",
    "worktree: {base: {remote: ! x}}\n",
];

/// Random text from an alphabet rich in YAML's punctuation, whitespace and odd unicode.
fn random_text(rng: &mut Rng) -> String {
    const ALPHABET: &[&str] = &[
        "worktree", ":", " ", "  ", "\n", "\t", "-", "[", "]", "{", "}", ",", "\"", "'", "#", "&a",
        "*a", "!", "!!", "|", ">", "?", "%", "@", "`", "~", "null", "true", "1", "1e9", "base",
        "prepare", "argv", "remote", "é", "😀", "\u{202e}", "\u{200d}", "\u{feff}", "\u{85}",
        "\u{2028}", "\u{0}", "\u{1}", "\u{7f}", "\r", "\\", "---", "...", "<<",
    ];
    let n = rng.below(60);
    let mut s = String::new();
    if rng.chance(1, 2) {
        s.push_str("worktree:\n  ");
    }
    for _ in 0..n {
        let piece = *rng.pick(ALPHABET);
        s.push_str(piece);
    }
    s
}

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let n = rng.below(200);
    let mut b: Vec<u8> = Vec::new();
    if rng.chance(1, 2) {
        b.extend_from_slice(b"worktree:\n  base: ");
    }
    for _ in 0..n {
        b.push(if rng.chance(1, 2) {
            rng.next() as u8
        } else {
            *rng.pick(b"worktree: -[]{},\"'\n#&*!")
        });
    }
    b
}

/// A few random character edits of `text`.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(chars.len() + 1);
        match rng.below(3) {
            0 if i < chars.len() => {
                chars.remove(i);
            }
            1 if i < chars.len() => {
                chars[i] = *rng.pick(&[':', '-', ' ', '\n', '"', '[', '}', '~', '*', '&', 'x']);
            }
            _ => chars.insert(
                i,
                *rng.pick(&[':', '-', ' ', '\n', '\t', '"', '{', ']', '!', '#']),
            ),
        }
    }
    chars.into_iter().collect()
}

// ---------------------------------------------------------------------------------------------
// The cases.

/// What a document must decode to, as far as the generator knows.
#[derive(Debug)]
enum Expect {
    /// Success with this effective configuration.
    Config(Json),
    /// A usage error naming this key path.
    KeyPath(String),
    /// A usage error naming some `worktree` key path.
    SomeKeyPath,
    /// Success or a usage error.
    Anything,
}

struct Case {
    text: Vec<u8>,
    expect: Expect,
    what: &'static str,
}

fn case(rng: &mut Rng) -> Case {
    let text = |s: String| s.into_bytes();
    match rng.below(20) {
        0..=5 => {
            let (mut top, cfg) = valid_doc(rng);
            if rng.chance(1, 4) {
                hoist_aliases(rng, &mut top);
            }
            Case {
                text: text(render_doc(rng, &top)),
                expect: Expect::Config(cfg),
                what: "valid",
            }
        }
        6..=11 => {
            let (mut top, cfg) = valid_doc(rng);
            let hooks = !cfg["prepare"].is_null() || !cfg["cleanup"].is_null();
            let wi = top.iter().position(|(k, _)| k.label == "worktree").unwrap();
            let path = if rng.chance(1, 15) {
                // `worktree` twice at the top level.
                let again = (Key::plain("worktree"), map(Vec::new()));
                let at = wi + 1 + rng.below(top.len() - wi);
                top.insert(at, again);
                "worktree".to_owned()
            } else {
                inject_fault(rng, &mut top[wi].1, hooks)
            };
            Case {
                text: text(render_doc(rng, &top)),
                expect: Expect::KeyPath(path),
                what: "one fault",
            }
        }
        12 => {
            let (mut top, cfg) = valid_doc(rng);
            let hooks = !cfg["prepare"].is_null() || !cfg["cleanup"].is_null();
            let wi = top.iter().position(|(k, _)| k.label == "worktree").unwrap();
            for _ in 0..2 + rng.below(3) {
                inject_fault(rng, &mut top[wi].1, hooks);
            }
            Case {
                text: text(render_doc(rng, &top)),
                expect: Expect::SomeKeyPath,
                what: "several faults",
            }
        }
        13 => Case {
            text: text(deep(rng)),
            expect: Expect::Anything,
            what: "deep nesting",
        },
        14 => Case {
            text: text(huge_numbers(rng)),
            expect: Expect::Anything,
            what: "huge numbers",
        },
        15 | 16 => Case {
            text: text(rng.pick(SNIPPETS).to_string()),
            expect: Expect::Anything,
            what: "snippet",
        },
        17 => Case {
            text: text(random_text(rng)),
            expect: Expect::Anything,
            what: "random text",
        },
        18 => Case {
            text: random_bytes(rng),
            expect: Expect::Anything,
            what: "random bytes",
        },
        _ => {
            let (top, _) = valid_doc(rng);
            let doc = render_doc(rng, &top);
            Case {
                text: text(mutate(rng, &doc)),
                expect: Expect::Anything,
                what: "edited",
            }
        }
    }
}

fn show(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    if s.len() > 3000 {
        format!(
            "{}… ({} bytes)",
            &s[..s.floor_char_boundary_compat(3000)],
            s.len()
        )
    } else {
        s.into_owned()
    }
}

trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// The library's verdict on a document, checked against the invariants and the expectation.
/// `Ok(json)` on success, `Err(message)` on a usage error.
fn judge_library(file: &Path, case: &Case) -> Result<Result<Json, String>, String> {
    let fail = |why: String| {
        Err(format!(
            "{why}\n--- {} document ---\n{}",
            case.what,
            show(&case.text)
        ))
    };
    let Ok(text) = std::str::from_utf8(&case.text) else {
        return Ok(Err(String::new()));
    };
    let outcome = std::panic::catch_unwind(|| decode(file, text));
    let result = match outcome {
        Ok(r) => r,
        Err(_) => return fail("decode panicked".to_owned()),
    };
    let file_prefix = format!("{}: ", file.display());
    let verdict = match result {
        Ok(cfg) => Ok(serde_json::to_value(&cfg).unwrap()),
        Err(f) => {
            if f.code != Code::Usage {
                return fail(format!(
                    "error of kind {:?}, not Usage: {}",
                    f.code, f.message
                ));
            }
            if !f.message.starts_with(&file_prefix) {
                return fail(format!(
                    "the error does not start with the file: {}",
                    f.message
                ));
            }
            Err(f.message)
        }
    };
    match (&case.expect, &verdict) {
        (Expect::Config(want), Ok(got)) if got != want => fail(format!(
            "wrong effective configuration:\n got: {got}\nwant: {want}"
        )),
        (Expect::Config(_), Err(m)) => fail(format!("a valid document was refused: {m}")),
        (Expect::KeyPath(_) | Expect::SomeKeyPath, Ok(got)) => fail(format!(
            "a faulty document ({p:?}) was accepted: {got}",
            p = match &case.expect {
                Expect::KeyPath(p) => p.as_str(),
                _ => "several faults",
            }
        )),
        (Expect::KeyPath(p), Err(m)) if !m.contains(&format!(": {p}: ")) => {
            fail(format!("the error does not name {p}: {m}"))
        }
        (Expect::SomeKeyPath, Err(m)) if !m.contains(": worktree") => {
            fail(format!("the error names no worktree key path: {m}"))
        }
        _ => Ok(verdict),
    }
}

/// Unit level: thousands of generated documents straight into `decode`.
#[test]
fn decode_of_generated_documents_never_panics_and_meets_the_grammar() {
    let file = Path::new("kardbrd.yml");
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    for seed in 1..=6u64 {
        let mut rng = Rng::new(0x5eed_0000 + seed * 0x9e37_79b9);
        for _ in 0..1000 {
            let c = case(&mut rng);
            match judge_library(file, &c) {
                Ok(v) => {
                    let e = counts.entry(c.what).or_default();
                    if v.is_ok() {
                        e.0 += 1;
                    } else {
                        e.1 += 1;
                    }
                }
                Err(why) => failures.push(why),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 6000 documents broke a property; the first ones:\n\n{}",
        failures.len(),
        failures
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // The generator reaches both outcomes in the categories where both are possible.
    for what in ["valid", "one fault", "several faults", "snippet", "edited"] {
        let (ok, err) = counts.get(what).copied().unwrap_or_default();
        assert!(ok + err >= 50, "too few {what} documents: {counts:?}");
    }
    assert_eq!(counts["valid"].1, 0);
    assert_eq!(counts["one fault"].0, 0);
    assert!(
        counts["snippet"].0 > 0 && counts["snippet"].1 > 0,
        "{counts:?}"
    );
    assert!(
        counts["edited"].0 > 0 && counts["edited"].1 > 0,
        "{counts:?}"
    );
}

/// The real binary: a few hundred documents through `git-kardwt config check [--json]`.
#[test]
fn config_check_of_generated_documents_exits_0_or_2_and_agrees_with_the_library() {
    let repo = TestRepo::new();
    let rules = repo.rules_path();
    let mut rng = Rng::new(0xc0ff_ee00_1234_5678);
    let mut failures = Vec::new();
    let mut seen = [0usize; 2];
    for i in 0..320 {
        let c = case(&mut rng);
        std::fs::write(&rules, &c.text).unwrap();
        let lib = match judge_library(&rules, &c) {
            Ok(v) => v,
            Err(why) => {
                failures.push(why);
                continue;
            }
        };
        let json = i % 4 == 0;
        let mut args = vec!["config", "check"];
        if json {
            args.push("--json");
        }
        let out = repo
            .spawn(BIN, &repo.base, &args)
            .wait(Duration::from_secs(60));
        let mut why = Vec::new();
        if out.stderr.contains("panicked") || out.stderr.contains("RUST_BACKTRACE") {
            why.push("it panicked".to_owned());
        }
        match out.code {
            0 => {
                seen[0] += 1;
                let printed: Result<Json, String> = if json {
                    serde_json::from_str(&out.stdout).map_err(|e| e.to_string())
                } else {
                    yaml_serde::from_str::<Json>(&out.stdout)
                        .map_err(|e| e.to_string())
                        .and_then(|v| {
                            v.get("worktree")
                                .cloned()
                                .filter(|_| v.as_object().is_some_and(|o| o.len() == 1))
                                .ok_or_else(|| "no single top-level worktree key".to_owned())
                        })
                };
                // The YAML leaves unset values out (it is itself a valid rules file).
                let lib = lib.clone().map(|mut want| {
                    if !json {
                        drop_nulls(&mut want);
                    }
                    want
                });
                match (printed, &lib) {
                    (Err(e), _) => why.push(format!("stdout is not the configuration: {e}")),
                    (Ok(p), Ok(want)) if p != *want => why.push(format!(
                        "printed configuration differs from the library's:\n got: {p}\nwant: {want}"
                    )),
                    (Ok(_), Err(m)) => why.push(format!("exit 0 but the library refused: {m}")),
                    _ => {}
                }
            }
            2 => {
                seen[1] += 1;
                if !out.stderr.starts_with("error: ") {
                    why.push("stderr does not start with `error: `".to_owned());
                }
                if !out.stdout.is_empty() {
                    why.push("stdout is not empty".to_owned());
                }
                if !out.stderr.contains(&rules.display().to_string()) {
                    why.push("stderr does not name the rules file".to_owned());
                }
                match &lib {
                    Ok(_) => why.push("exit 2 but the library accepted it".to_owned()),
                    Err(m)
                        if !m.is_empty() && !out.stderr.starts_with(&format!("error: {m}\n")) =>
                    {
                        why.push(format!("the library says instead: error: {m}"))
                    }
                    _ => {}
                }
            }
            other => why.push(format!("exit code {other}")),
        }
        if !why.is_empty() {
            failures.push(format!(
                "{}\n{out}\n--- {} document ---\n{}",
                why.join("; "),
                c.what,
                show(&c.text)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 320 documents broke a property; the first ones:\n\n{}",
        failures.len(),
        failures
            .iter()
            .take(6)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    assert!(seen[0] >= 50 && seen[1] >= 50, "exit 0/2 counts: {seen:?}");
}

/// Remove every `null` member of the objects in `value`, at any depth.
fn drop_nulls(value: &mut Json) {
    match value {
        Json::Object(members) => {
            members.retain(|_, v| !v.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        Json::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
