//! Fuzzing what typed decoding of the rules file still
//! leaves to chance, through `git_kardwt::config::decode` and the real binary
//! (`git-kardwt config check [--json]`).
//!
//! The types and `deny_unknown_fields` fix the schema; what can still go wrong is in the
//! strict leaves, the key checks and the locations, so those are fuzzed exhaustively on one
//! complete document: every node replaced by each value of a wrong kind for it (explicit null,
//! `"900"` for a number, `yes` for a boolean, a string for a list, tags, huge numbers), an
//! unknown and a duplicate key in every mapping, each required key deleted. Each must be
//! refused naming that node's key path at that node's line.
//!
//! Then the garbage no schema foresees (random edits of the document, YAML's odd corners, deep
//! nesting, huge numbers, random text and bytes) must never panic and always end in success or
//! a usage error (exit 0 or 2) naming the rules file and a key path or a line; the binary
//! agrees with the library; and
//! what `config check` prints on success is a rules file that decodes to the same
//! configuration.
use std::path::Path;
use std::time::Duration;

use serde_json::Value as Json;

use git_kardwt::config::decode;
use git_kardwt::ground::error::Code;

use crate::support::{Rng, TestRepo, BIN};

// ---------------------------------------------------------------------------------------------
// One complete document and its nodes.

/// Every key of the schema, one node per line: `key:` opens a mapping or list, `key: value`
/// and `- value` are scalars, a bare `-` opens a list item that is a mapping.
const COMPLETE: &str = "\
worktree:
  base:
    remote: origin
    ref: refs/heads/main
  helpers:
    stable_root: /opt/h
  checkout:
    mode: delegated
  prepare:
    argv:
      - /opt/h/prepare
      - --fast
    on_create: true
    on_reuse: false
    timeout_seconds: 900
  cleanup:
    argv:
      - /opt/h/cleanup
    timeout_seconds: 120
  sharing:
    env: link
    skills: disabled
  environment:
    passthrough:
      - HOME
      - LANG
  ports:
    count: 2
    range:
      - 20000
      - 29999
  action_timeout_seconds: 3600
  adoptions:
    -
      card: \"123\"
      path: /srv/old
      common_dir: /srv/project/.git
      branch: feature/legacy
";

/// What a node must hold.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Mapping,
    List,
    Str,
    Bool,
    Int,
}

/// The kind of the node at `path` (indices written `[]`).
fn kind(path: &str) -> Kind {
    match path {
        "worktree"
        | "worktree.base"
        | "worktree.helpers"
        | "worktree.checkout"
        | "worktree.prepare"
        | "worktree.cleanup"
        | "worktree.sharing"
        | "worktree.environment"
        | "worktree.ports"
        | "worktree.adoptions[]" => Kind::Mapping,
        "worktree.prepare.argv"
        | "worktree.cleanup.argv"
        | "worktree.environment.passthrough"
        | "worktree.ports.range"
        | "worktree.adoptions" => Kind::List,
        "worktree.prepare.on_create" | "worktree.prepare.on_reuse" => Kind::Bool,
        "worktree.prepare.timeout_seconds"
        | "worktree.cleanup.timeout_seconds"
        | "worktree.ports.count"
        | "worktree.ports.range[]"
        | "worktree.action_timeout_seconds" => Kind::Int,
        _ => Kind::Str,
    }
}

/// Keys the decoder requires once their block is present (with the rest as in [`COMPLETE`]).
const REQUIRED: &[&str] = &[
    "worktree.helpers.stable_root",
    "worktree.prepare.argv",
    "worktree.cleanup.argv",
    "worktree.ports.count",
    "worktree.ports.range",
    "worktree.adoptions[0].card",
    "worktree.adoptions[0].path",
    "worktree.adoptions[0].common_dir",
    "worktree.adoptions[0].branch",
];

/// Values that are certainly wrong for a node of `kind` (each on one line).
fn wrong_values(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Mapping => &["~", "null", "[]", "x", "1", "true", "[a: 1]", "!t {}", "''"],
        Kind::List => &["~", "x", "{}", "{a: b}", "1", "false", "!t []", "''"],
        Kind::Str => &[
            "~", "null", "''", "900", "-7", "1.5", "true", "[a]", "{a: b}", "!t x", "0x1F",
        ],
        Kind::Bool => &[
            "~", "yes", "no", "on", "1", "0", "\"true\"", "'false'", "[true]", "{}", "!t true",
            "True1",
        ],
        Kind::Int => &[
            "~",
            "\"900\"",
            "'10'",
            "900.5",
            "1e3",
            "true",
            "[1]",
            "{a: 1}",
            "0",
            "-5",
            "99999999999999999999999",
            "!t 5",
            ".inf",
            ".nan",
            "x",
        ],
    }
}

/// One line of [`COMPLETE`]: where it is and what it holds.
struct Line {
    indent: usize,
    /// The key path of the node the line holds (`worktree.prepare.argv[1]`).
    path: String,
    /// The text up to the value: `    remote:` or `      -`.
    lead: String,
    /// The scalar written there, if any.
    value: Option<String>,
}

/// The lines of `doc` (in [`COMPLETE`]'s grammar) with their key paths.
fn lines(doc: &str) -> Vec<Line> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut items: std::collections::HashMap<String, usize> = Default::default();
    let mut out = Vec::new();
    for raw in doc.lines() {
        let indent = raw.len() - raw.trim_start().len();
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let parent = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
        let body = raw.trim_start();
        let (path, lead, value) = if let Some(rest) = body.strip_prefix('-') {
            let n = items.entry(parent.clone()).or_default();
            *n += 1;
            let path = format!("{parent}[{}]", *n - 1);
            let value = rest.strip_prefix(' ').map(str::to_owned);
            (path, format!("{}-", " ".repeat(indent)), value)
        } else {
            let (key, rest) = body.split_once(':').expect("a key");
            let path = if parent.is_empty() {
                key.to_owned()
            } else {
                format!("{parent}.{key}")
            };
            let value = rest.strip_prefix(' ').map(str::to_owned);
            (path, format!("{}{key}:", " ".repeat(indent)), value)
        };
        stack.push((indent, path.clone()));
        out.push(Line {
            indent,
            path,
            lead,
            value,
        });
    }
    out
}

/// `path` with its indices written `[]`.
fn generic(path: &str) -> String {
    let mut out = String::new();
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// A document with one fault, the key path its error must name and the line it must point at.
struct Fault {
    text: String,
    path: String,
    line: Option<usize>,
    what: String,
}

/// Every single fault of the kinds the module documentation lists.
fn faults() -> Vec<Fault> {
    let doc: Vec<&str> = COMPLETE.lines().collect();
    let nodes = lines(COMPLETE);
    // Line `i` and the lines under it.
    let span = |i: usize| {
        let end = (i + 1..nodes.len())
            .find(|&j| nodes[j].indent <= nodes[i].indent)
            .unwrap_or(nodes.len());
        i..end
    };
    let join = |parts: Vec<String>| parts.join("\n") + "\n";
    let mut out = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        // A wrong value in place of the node (and of everything under it).
        for wrong in wrong_values(kind(&generic(&node.path))) {
            let mut parts: Vec<String> = doc.iter().map(|l| l.to_string()).collect();
            parts.splice(span(i), [format!("{} {wrong}", node.lead)]);
            out.push(Fault {
                text: join(parts),
                path: node.path.clone(),
                line: Some(i + 1),
                what: format!("{wrong} for {}", node.path),
            });
        }
        let opens_mapping = node.value.is_none() && kind(&generic(&node.path)) == Kind::Mapping;
        if opens_mapping {
            // An unknown key first in the mapping.
            let child = nodes.get(i + 1).map_or(node.indent + 2, |n| n.indent);
            let mut parts: Vec<String> = doc.iter().map(|l| l.to_string()).collect();
            parts.insert(i + 1, format!("{}bogus_key: 1", " ".repeat(child)));
            out.push(Fault {
                text: join(parts),
                path: format!("{}.bogus_key", node.path),
                line: Some(i + 2),
                what: format!("unknown key in {}", node.path),
            });
        }
        if !node.lead.ends_with('-') && node.path != "worktree" {
            // The key written twice (the second with its whole value).
            let mut parts: Vec<String> = doc.iter().map(|l| l.to_string()).collect();
            let copy: Vec<String> = parts[span(i)].to_vec();
            let at = span(i).end;
            parts.splice(at..at, copy);
            out.push(Fault {
                text: join(parts),
                path: node.path.clone(),
                line: Some(at + 1),
                what: format!("duplicate {}", node.path),
            });
        }
        if REQUIRED.contains(&node.path.as_str()) {
            let mut parts: Vec<String> = doc.iter().map(|l| l.to_string()).collect();
            parts.drain(span(i));
            // A block left without keys is written `{}`, not left null.
            let parent = &nodes[i - 1];
            if parent.indent < node.indent
                && nodes
                    .get(span(i).end)
                    .is_none_or(|n| n.indent <= parent.indent)
            {
                parts[i - 1].push_str(" {}");
            }
            out.push(Fault {
                text: join(parts),
                path: node.path.clone(),
                line: None,
                what: format!("no {}", node.path),
            });
        }
    }
    out
}

/// The library's verdict on `fault`: `Ok(message)` when it is refused as it must be.
fn refused(file: &Path, fault: &Fault) -> Result<String, String> {
    let shown = || format!("{}\n---\n{}", fault.what, fault.text);
    let result = std::panic::catch_unwind(|| decode(file, &fault.text))
        .map_err(|_| format!("decode panicked: {}", shown()))?;
    let e = match result {
        Ok(cfg) => return Err(format!("accepted as {cfg:?}: {}", shown())),
        Err(e) => e,
    };
    let named = e
        .message
        .starts_with(&format!("{}: {}: ", file.display(), fault.path));
    let at_line = fault
        .line
        .is_none_or(|n| e.message.contains(&format!(" at line {n} column ")));
    if e.code != Code::Usage || !named || !at_line {
        return Err(format!(
            "{:?} {:?} does not name {} at line {:?}: {}",
            e.code,
            e.message,
            fault.path,
            fault.line,
            shown()
        ));
    }
    Ok(e.message)
}

#[test]
fn every_single_fault_in_a_complete_document_is_refused_at_its_node() {
    let file = Path::new("kardbrd.yml");
    assert!(
        decode(file, COMPLETE).is_ok(),
        "the complete document is valid"
    );
    let all = faults();
    let failures: Vec<String> = all.iter().filter_map(|f| refused(file, f).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} faults were not refused as they must be; the first ones:\n\n{}",
        failures.len(),
        all.len(),
        failures[..failures.len().min(6)].join("\n\n")
    );
    // Every node is reached: the generator did not silently skip parts of the document.
    assert!(all.len() > 400, "only {} faults", all.len());
}

#[test]
fn the_binary_refuses_faults_as_the_library_does() {
    let repo = TestRepo::new();
    let rules = repo.rules_path();
    let mut failures = Vec::new();
    for fault in faults().iter().step_by(9) {
        std::fs::write(&rules, &fault.text).unwrap();
        let Ok(message) = refused(&rules, fault) else {
            continue; // reported by the test above
        };
        let out = repo
            .spawn(BIN, &repo.base, &["config", "check"])
            .wait(Duration::from_secs(60));
        if out.code != 2
            || !out.stdout.is_empty()
            || !out.stderr.starts_with(&format!("error: {message}\n"))
        {
            failures.push(format!(
                "{}: the library says error: {message}\n{out}",
                fault.what
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}",
        failures[..failures.len().min(4)].join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Garbage.

/// Nesting around yaml_serde's recursion limit (128) and far beyond it. (Far beyond is kept
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

/// A document nothing is known about but that it must not break the decoder.
fn garbage(rng: &mut Rng) -> (Vec<u8>, &'static str) {
    match rng.below(8) {
        0 | 1 => {
            let mut text = COMPLETE.to_owned();
            for _ in 0..=rng.below(3) {
                text = mutate(rng, &text);
            }
            (text.into_bytes(), "edited")
        }
        2 => (deep(rng).into_bytes(), "deep nesting"),
        3 => (huge_numbers(rng).into_bytes(), "huge numbers"),
        4 | 5 => (rng.pick(SNIPPETS).as_bytes().to_vec(), "snippet"),
        6 => (random_text(rng).into_bytes(), "random text"),
        _ => (random_bytes(rng), "random bytes"),
    }
}

fn show(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    match s.char_indices().nth(3000) {
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
        None => s.into_owned(),
    }
}

/// The library's verdict: `Ok(configuration as JSON)` or `Err(message)` of a usage error naming
/// the file (`Err("")` for text that is not UTF-8, which the binary refuses before decoding).
fn library(file: &Path, text: &[u8]) -> Result<Result<Json, String>, String> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Ok(Err(String::new()));
    };
    match std::panic::catch_unwind(|| decode(file, text)) {
        Err(_) => Err("decode panicked".to_owned()),
        Ok(Ok(cfg)) => Ok(Ok(serde_json::to_value(&cfg).unwrap())),
        Ok(Err(e)) if e.code != Code::Usage => {
            Err(format!("{:?}, not Usage: {}", e.code, e.message))
        }
        Ok(Err(e)) if !e.message.starts_with(&format!("{}: ", file.display())) => {
            Err(format!("does not name the file: {}", e.message))
        }
        // Where the error is: a key path, a line, or the one refusal made before parsing.
        Ok(Err(e))
            if !(e.message.contains(": worktree")
                || e.message.contains(" line ")
                || e.message.contains("nest too deeply")) =>
        {
            Err(format!(
                "names neither a key path nor a line: {}",
                e.message
            ))
        }
        Ok(Err(e)) => Ok(Err(e.message)),
    }
}

#[test]
#[ignore = "fuzzer: make test-slow"]
fn garbage_never_panics_and_is_decoded_or_refused() {
    let file = Path::new("kardbrd.yml");
    let mut rng = Rng::new(0x5eed_9e37_79b9);
    let mut failures = Vec::new();
    let mut outcomes = std::collections::BTreeMap::<&str, [usize; 2]>::new();
    for _ in 0..3000 {
        let (text, what) = garbage(&mut rng);
        match library(file, &text) {
            Ok(verdict) => outcomes.entry(what).or_default()[usize::from(verdict.is_err())] += 1,
            Err(why) => failures.push(format!("{why}\n--- {what} ---\n{}", show(&text))),
        }
    }
    assert!(
        failures.is_empty(),
        "{} documents broke a property; the first ones:\n\n{}",
        failures.len(),
        failures[..failures.len().min(6)].join("\n\n")
    );
    // Both outcomes are reached where both are possible.
    for what in ["edited", "snippet"] {
        let [ok, err] = outcomes.get(what).copied().unwrap_or_default();
        assert!(ok > 0 && err > 0, "{what}: {outcomes:?}");
    }
}

/// The real binary on garbage: exit 0 or 2, as the library decides; on success the YAML it
/// prints is a rules file that decodes to the same configuration.
#[test]
#[ignore = "fuzzer: make test-slow"]
fn config_check_on_garbage_agrees_with_the_library_and_prints_what_decodes_back() {
    let repo = TestRepo::new();
    let rules = repo.rules_path();
    let mut rng = Rng::new(0xc0ff_ee00_1234_5678);
    let mut failures = Vec::new();
    let mut seen = [0usize; 3];
    for _ in 0..160 {
        let (text, what) = garbage(&mut rng);
        std::fs::write(&rules, &text).unwrap();
        let Ok(lib) = library(&rules, &text) else {
            continue; // reported by the test above
        };
        let check = |args: &[&str]| {
            repo.spawn(BIN, &repo.base, args)
                .wait(Duration::from_secs(60))
        };
        let out = check(&["config", "check"]);
        let mut why = Vec::new();
        if out.stderr.contains("panicked") {
            why.push("it panicked".to_owned());
        }
        match (out.code, &lib) {
            (0, Ok(want)) => {
                seen[0] += 1;
                std::fs::write(&rules, &out.stdout).unwrap();
                let again = check(&["config", "check", "--json"]);
                match serde_json::from_str::<Json>(&again.stdout) {
                    Ok(got) if got == *want => {}
                    _ => why.push(format!(
                        "the printed configuration decodes otherwise:\n{again}"
                    )),
                }
            }
            // The rules decode, and `config check` goes on to refuse what `add` would refuse:
            // a hook program that is not an executable file beneath stable_root.
            (2, Ok(_))
                if out.stdout.is_empty()
                    && (out
                        .stderr
                        .starts_with("error: worktree.prepare.argv: refusing to run")
                        || out
                            .stderr
                            .starts_with("error: worktree.cleanup.argv: refusing to run")) =>
            {
                seen[2] += 1;
            }
            (2, Err(m)) => {
                seen[1] += 1;
                if !out.stdout.is_empty() || !out.stderr.starts_with(&format!("error: {m}")) {
                    why.push(format!("the library says instead: error: {m}"));
                }
            }
            (code, _) => why.push(format!("exit {code}, the library says {lib:?}")),
        }
        if !why.is_empty() {
            failures.push(format!(
                "{}\n{out}\n--- {what} ---\n{}",
                why.join("; "),
                show(&text)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} documents broke a property; the first ones:\n\n{}",
        failures.len(),
        failures[..failures.len().min(4)].join("\n\n")
    );
    assert!(
        seen[0] + seen[2] >= 10 && seen[1] >= 50,
        "exit 0 / 2 (decode) / 2 (programs) counts: {seen:?}"
    );
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}
