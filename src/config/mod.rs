//! Strict decoding of the `worktree:` block of the rules file (SPEC R-CFG, R-CFG-STRICT),
//! defaults and cross-field validation. Pure: `decode` takes text and returns the effective
//! configuration or an error naming the file and the key path.
//!
//! This file holds the effective [`Config`], the schema as typed blocks (`Raw*`) with their
//! strict leaves, and the checks across fields; `read` the strict reading of YAML nodes (the
//! one visitor, lists, blocks whose keys are checked as read, the locator of cross-field
//! errors); `names` the checks of names that reach git (R-TRUST 1) and quoting (R-TRUST 2).
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess};
use serde::{Deserialize, Serialize};

use crate::error::{usage, Fail};

mod names;
mod read;

pub use names::{
    check_branch_ref, check_recorded_base, check_ref_format, check_remote_name, quote, QUOTE_CHARS,
};
use read::Seg::{Index, Key};
use read::{
    describe, display_path, join_key, key_label, locate, ours, strict, wrong, Block, Given, Keys,
    List, Locate, Node, Pick, Reader, Seg, Shape, MARK,
};

/// The effective configuration, every default filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Config {
    pub base: Base,
    pub helpers: Helpers,
    pub checkout: Checkout,
    /// Absent when no prepare hook is configured.
    pub prepare: Option<Prepare>,
    /// Absent when no cleanup hook is configured.
    pub cleanup: Option<Cleanup>,
    pub sharing: Sharing,
    pub environment: Environment,
    pub ports: Option<Ports>,
    pub action_timeout_seconds: u64,
    pub adoptions: Vec<Adoption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Base {
    pub remote: String,
    /// `None`: the remote's HEAD at fetch time.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Helpers {
    pub stable_root: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkout {
    pub mode: CheckoutMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckoutMode {
    Full,
    Delegated,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prepare {
    pub argv: Vec<String>,
    pub on_create: bool,
    pub on_reuse: bool,
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cleanup {
    pub argv: Vec<String>,
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sharing {
    pub env: EnvSharing,
    pub skills: SkillsSharing,
    /// Paths (relative to the base) copied whole into a new worktree (R-COPY).
    pub copy: Vec<PathBuf>,
    /// How `copy` and `.worktreeinclude` files are copied.
    pub copy_method: CopyMethod,
}

/// `sharing.copy_method`: how files are copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyMethod {
    /// Clone where the file system can, else copy.
    #[default]
    Auto,
    /// Clone, or fail naming the file system that cannot.
    Clone,
    /// Always an ordinary copy (new blocks).
    Copy,
}

impl CopyMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            CopyMethod::Auto => "auto",
            CopyMethod::Clone => "clone",
            CopyMethod::Copy => "copy",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvSharing {
    Disabled,
    Link,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillsSharing {
    Fallback,
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    pub passthrough: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ports {
    pub count: u16,
    pub range: [u16; 2],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Adoption {
    pub card: String,
    pub path: PathBuf,
    pub common_dir: PathBuf,
    pub branch: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            base: Base {
                remote: "origin".into(),
                git_ref: None,
            },
            helpers: Helpers { stable_root: None },
            checkout: Checkout {
                mode: CheckoutMode::Full,
            },
            prepare: None,
            cleanup: None,
            sharing: Sharing {
                env: EnvSharing::Disabled,
                skills: SkillsSharing::Fallback,
                copy: Vec::new(),
                copy_method: CopyMethod::Auto,
            },
            environment: Environment {
                passthrough: Vec::new(),
            },
            ports: None,
            action_timeout_seconds: 3600,
            adoptions: Vec::new(),
        }
    }
}

impl Config {
    /// `sha256:<hex>` of the effective configuration, so a change in unrelated top-level keys
    /// of the rules file does not count as a configuration change.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&json);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding.
//
// The `worktree:` block is decoded into typed structs (`Raw*`) whose every field is optional
// ([`Given`]: absent is fine, an explicit `null` is not) and whose leaves are strict: a leaf
// reads its node with `deserialize_any` and refuses any other kind of node with "expected X,
// found Y" (yaml_serde's own typed decoding takes `900` or `true` for a string). An error
// raised while a node is read carries that node's line and column (yaml_serde marks it) and
// its key path (serde_path_to_error). The checks across fields run on the typed result; their
// errors are located by [`locate`], which re-reads the text down to the node they name.

/// The top-level key this crate owns.
const ROOT_KEY: &str = "worktree";

const DEFAULT_PREPARE_TIMEOUT: u64 = 900;
const DEFAULT_CLEANUP_TIMEOUT: u64 = 120;
/// The lowest port kardwt hands out: below are the system's.
const MIN_PORT: u16 = 1024;

/// Decode the rules file's text. `file` only names the file in errors.
///
/// Without a top-level `worktree:` key (including an empty or comment-only file) the result is
/// [`Config::default`]. Every error is a usage error (exit 2) whose message reads
/// `<file>: <key path>: <what is wrong> at line L column C` (the location where known).
pub fn decode(file: &Path, text: &str) -> Result<Config, Fail> {
    if flow_work(text) <= MAX_FLOW_WORK {
        return decode_now(file, text);
    }
    // Many or deep flow collections: the scanner's cost may grow as depth × tokens (30 s for
    // 100,000 levels). Decode in a worker and give up when it takes longer than any honest file
    // would: a large file of shallow `[a, b]` lists still decodes in milliseconds.
    let (tx, rx) = std::sync::mpsc::channel();
    let (owned_file, owned_text) = (file.to_path_buf(), text.to_owned());
    let worker = std::thread::Builder::new()
        .name("decode-rules".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = tx.send(decode_now(&owned_file, &owned_text));
        });
    let decoded = worker
        .ok()
        .and_then(|_| rx.recv_timeout(DECODE_BUDGET).ok());
    decoded.unwrap_or_else(|| {
        Err(usage(format!(
            "{}: flow collections ([…] or {{…}}) nest too deeply for the file's size to be \
             decoded in bounded time",
            file.display()
        ))
        .hint("write deep structures in block style, or move them out of the rules file"))
    })
}

/// How long a rules file whose flow collections could make the scanner slow may take to
/// decode (an honest file takes milliseconds).
const DECODE_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

/// Decode `text` on this thread (see [`decode`]).
fn decode_now(file: &Path, text: &str) -> Result<Config, Fail> {
    let top: Top = serde_path_to_error::deserialize(yaml_serde::Deserializer::from_str(text))
        .map_err(|err| decode_error(file, text, &err))?;
    let Some(worktree) = top.0 else {
        return Ok(Config::default());
    };
    build(worktree).map_err(|p| located(file, &p.key, &p.msg, locate(text, &p.at, p.at_key)))
}

/// The YAML scanner checks every open flow collection at each token, so `[[[[…]]]]` costs
/// depth × tokens: 30 s for 100,000 levels (SPEC R-TRUST 2). This bounds that work from above,
/// in one pass and without parsing: each byte (a token starts at one) counts the `[` and `{`
/// seen before it, the most collections that can be open there. Closing brackets are not
/// subtracted: a `]` inside a quoted string must not lower the bound.
fn flow_work(text: &str) -> u64 {
    let mut open: u64 = 0;
    let mut work: u64 = 0;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => open += 1,
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            _ => {}
        }
        work = work.saturating_add(open);
    }
    work
}

/// The most [`flow_work`] decoded without a time budget (a fraction of a second of scanning at
/// worst); past it, [`decode`] gives the decoder [`DECODE_BUDGET`].
const MAX_FLOW_WORK: u64 = 50_000_000;

/// A configuration error naming the file and the key path: `<file>: <key>: <msg>` (exit 2).
pub fn rules_error(file: &Path, key: &str, msg: &str) -> Fail {
    located(file, key, msg, None)
}

fn located(file: &Path, key: &str, msg: &str, at: Option<yaml_serde::Location>) -> Fail {
    let mut text = if key.is_empty() {
        format!("{}: {msg}", file.display())
    } else {
        format!("{}: {key}: {msg}", file.display())
    };
    if let Some(loc) = at {
        text.push_str(&format!(" at line {} column {}", loc.line(), loc.column()));
    }
    usage(text)
}

/// The usage error for a failed typed decoding: our own message with its key path, or the
/// parser's (syntax errors, anchors, several documents).
fn decode_error(
    file: &Path,
    text: &str,
    err: &serde_path_to_error::Error<yaml_serde::Error>,
) -> Fail {
    let inner = err.inner();
    let shown = inner.to_string();
    let Some((_, ours)) = shown.split_once(MARK) else {
        return usage(format!(
            "{}: {}",
            file.display(),
            parser_message(inner, text)
        ));
    };
    let loc = inner.location();
    let ours = loc
        .as_ref()
        .and_then(|l| ours.strip_suffix(&format!(" at line {} column {}", l.line(), l.column())))
        .unwrap_or(ours);
    let mut segments: Vec<&serde_path_to_error::Segment> = err.path().iter().collect();
    let (label, msg) = match ours.split_once(MARK) {
        Some((label, msg)) => {
            // The path already ends with the key being read; name it by its cut label.
            segments.pop();
            (Some(label), msg)
        }
        None => (None, ours),
    };
    let mut key = String::new();
    for segment in segments {
        match segment {
            serde_path_to_error::Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key: k } => key = join_key(&key, &key_label(k)),
            serde_path_to_error::Segment::Unknown => key = join_key(&key, "?"),
            _ => {}
        }
    }
    if let Some(label) = label {
        key = join_key(&key, label);
    }
    located(file, &key, msg, loc)
}

/// yaml_serde's own message (syntax errors, anchors, several documents), with a position
/// wherever one can be had.
fn parser_message(err: &yaml_serde::Error, text: &str) -> String {
    let msg = err.to_string();
    if msg.contains(" at line ") {
        return msg;
    }
    // yaml_serde leaves out a position at the very start of the text.
    if let Some(loc) = err.location() {
        return format!("{msg} at line {} column {}", loc.line(), loc.column());
    }
    // "more than one document": say where the second one starts, or, when it is not even
    // valid YAML, report that syntax error instead.
    match second_document(text) {
        Some(Ok(loc)) => format!(
            "{msg} (the second document starts at line {} column {})",
            loc.line(),
            loc.column()
        ),
        Some(Err(syntax)) => syntax,
        None => msg,
    }
}

/// Where the second YAML document of `text` starts (`Ok`), or the error reading it (`Err`).
fn second_document(text: &str) -> Option<Result<yaml_serde::Location, String>> {
    // Only `nth(1)`: on a syntax error the document iterator repeats that error forever.
    let doc = yaml_serde::Deserializer::from_str(text).nth(1)?;
    let here = Locate {
        segs: &[],
        at_key: false,
    };
    match Reader(here).deserialize(doc) {
        Err(err) if ours(&err) => err.location().map(Ok),
        Err(err) => Some(Err(err.to_string())),
        Ok(()) => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The schema: strict leaves and the typed blocks.

/// Declares leaf types, each read from one scalar node by a `fn(Node) -> Result<T, String>`.
macro_rules! leaves {
    ($($(#[$doc:meta])* $name:ident($ty:ty) = $read:expr;)*) => {$(
        $(#[$doc])*
        struct $name($ty);

        impl Shape<'_> for $name {
            fn scalar(node: Node<'_>) -> Result<Self, String> {
                ($read)(node).map($name)
            }
        }

        strict!($name);
    )*};
}

leaves! {
    /// A non-empty string.
    Name(String) = nonempty;
    /// A remote name that cannot be read as an option (SPEC R-TRUST 1).
    Remote(String) = |node| checked(nonempty(node)?, check_remote_name);
    /// A full branch ref, `refs/heads/…`.
    BranchRef(String) = |node| checked(text(node, "a string")?, check_branch_ref);
    /// A non-empty absolute path.
    AbsPath(PathBuf) = absolute;
    /// A card id (R-ID).
    Card(String) = |node| checked(nonempty(node)?, |c: &str| {
        crate::card::CardId::parse(c).map(drop).map_err(|fail| fail.message)
    });
    /// A relative path inside the repository: no `..`, not absolute, not `.git`.
    RelPath(PathBuf) = relative;
    /// An environment variable's name.
    EnvName(String) = |node| checked(text(node, "a string")?, env_name);
    /// `true` or `false`, nothing else.
    Flag(bool) = |node| match node {
        Node::Bool(b) => Ok(b),
        other => Err(wrong("a boolean (true or false)", &other)),
    };
    /// An integer of at least 1.
    Positive(u64) = |node| integer(node, 1, u64::MAX);
    /// A TCP port kardwt may hand out.
    Port(u16) = |node| integer(node, MIN_PORT, u16::MAX);
}

fn text(node: Node<'_>, expected: &str) -> Result<String, String> {
    match node {
        Node::Str(s) => Ok(s.to_owned()),
        other => Err(wrong(expected, &other)),
    }
}

fn nonempty(node: Node<'_>) -> Result<String, String> {
    let s = text(node, "a string")?;
    if s.is_empty() {
        return Err("must not be empty".to_owned());
    }
    Ok(s)
}

/// `value` when `check` passes; else why not, quoting the value.
fn checked<E: std::fmt::Display>(
    value: String,
    check: impl Fn(&str) -> Result<(), E>,
) -> Result<String, String> {
    match check(&value) {
        Ok(()) => Ok(value),
        Err(why) => Err(format!("{why}, found {}", quote(&value))),
    }
}

fn absolute(node: Node<'_>) -> Result<PathBuf, String> {
    let s = nonempty(node)?;
    if !Path::new(&s).is_absolute() {
        return Err(format!("must be an absolute path, found {}", quote(&s)));
    }
    Ok(PathBuf::from(s))
}

fn relative(node: Node<'_>) -> Result<PathBuf, String> {
    let s = nonempty(node)?;
    let path = Path::new(&s);
    let inside = path.components().all(|c| match c {
        std::path::Component::Normal(n) => n != ".git",
        std::path::Component::CurDir => true,
        _ => false,
    });
    let normal: PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if path.is_absolute() || !inside || normal.as_os_str().is_empty() {
        return Err(format!(
            "must be a path inside the repository (relative, no `..`, not .git), found {}",
            quote(&s)
        ));
    }
    Ok(normal)
}

fn env_name(name: &str) -> Result<(), &'static str> {
    let mut chars = name.chars();
    let first = chars.next();
    if first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        Ok(())
    } else {
        Err("not a variable name (letters, digits and '_', not starting with a digit)")
    }
}

/// An integer in `min..=max`.
fn integer<T: Copy + Into<i128> + TryFrom<i128>>(
    node: Node<'_>,
    min: T,
    max: T,
) -> Result<T, String> {
    let (low, high) = (min.into(), max.into());
    match node {
        Node::Int(n) if n < low => Err(format!("must be an integer of at least {low}, found {n}")),
        Node::Int(n) if n > high => Err(format!("must be at most {high}, found {n}")),
        Node::Int(n) => T::try_from(n).map_err(|_| "out of range".to_owned()),
        Node::Big(digits) => Err(format!("integer {} is out of range", quote(&digits))),
        other => Err(wrong("an integer", &other)),
    }
}

/// One of `allowed`, by name.
fn choice<T: Copy>(node: Node<'_>, allowed: &[(T, &str)]) -> Result<T, String> {
    let names: Vec<&str> = allowed.iter().map(|(_, name)| *name).collect();
    let names = names.join(", ");
    let s = text(node, &format!("one of {names}"))?;
    match allowed.iter().find(|(_, name)| *name == s) {
        Some((value, _)) => Ok(*value),
        None => Err(format!(
            "unknown value {} (allowed values: {names})",
            quote(&s)
        )),
    }
}

impl Shape<'_> for CheckoutMode {
    fn scalar(node: Node<'_>) -> Result<Self, String> {
        choice(
            node,
            &[(Self::Full, "full"), (Self::Delegated, "delegated")],
        )
    }
}

impl Shape<'_> for EnvSharing {
    fn scalar(node: Node<'_>) -> Result<Self, String> {
        choice(node, &[(Self::Disabled, "disabled"), (Self::Link, "link")])
    }
}

impl Shape<'_> for SkillsSharing {
    fn scalar(node: Node<'_>) -> Result<Self, String> {
        choice(
            node,
            &[(Self::Fallback, "fallback"), (Self::Disabled, "disabled")],
        )
    }
}

impl Shape<'_> for CopyMethod {
    fn scalar(node: Node<'_>) -> Result<Self, String> {
        choice(
            node,
            &[
                (CopyMethod::Auto, "auto"),
                (CopyMethod::Clone, "clone"),
                (CopyMethod::Copy, "copy"),
            ],
        )
    }
}

strict!(CheckoutMode, EnvSharing, SkillsSharing, CopyMethod, Top);

/// Declares a block of the schema and the keys it allows (its field names).
macro_rules! block {
    ($(#[$doc:meta])* $name:ident { $($(#[$attr:meta])* $field:ident: $ty:ty = $key:literal,)* }) => {
        $(#[$doc])*
        #[derive(Deserialize, Default)]
        #[serde(default, deny_unknown_fields)]
        struct $name {
            $($(#[$attr])* #[serde(rename = $key)] $field: Given<$ty>,)*
        }

        impl Keys for $name {
            const KEYS: &'static [&'static str] = &[$($key),*];
        }
    };
}

block!(
    /// `worktree:`
    RawWorktree {
        base: Block<RawBase> = "base",
        helpers: Block<RawHelpers> = "helpers",
        checkout: Block<RawCheckout> = "checkout",
        prepare: Block<RawPrepare> = "prepare",
        cleanup: Block<RawCleanup> = "cleanup",
        sharing: Block<RawSharing> = "sharing",
        environment: Block<RawEnvironment> = "environment",
        ports: Block<RawPorts> = "ports",
        action_timeout_seconds: Positive = "action_timeout_seconds",
        adoptions: List<Block<RawAdoption>> = "adoptions",
    }
);
block!(RawBase {
    remote: Remote = "remote",
    git_ref: BranchRef = "ref",
});
block!(RawHelpers {
    stable_root: AbsPath = "stable_root",
});
block!(RawCheckout {
    mode: CheckoutMode = "mode",
});
block!(RawPrepare {
    argv: List<Name> = "argv",
    on_create: Flag = "on_create",
    on_reuse: Flag = "on_reuse",
    timeout_seconds: Positive = "timeout_seconds",
});
block!(RawCleanup {
    argv: List<Name> = "argv",
    timeout_seconds: Positive = "timeout_seconds",
});
block!(RawSharing {
    env: EnvSharing = "env",
    skills: SkillsSharing = "skills",
    copy: List<RelPath> = "copy",
    copy_method: CopyMethod = "copy_method",
});
block!(RawEnvironment {
    passthrough: List<EnvName> = "passthrough",
});
block!(RawPorts {
    count: Positive = "count",
    range: List<Port> = "range",
});
block!(RawAdoption {
    card: Card = "card",
    path: AbsPath = "path",
    common_dir: AbsPath = "common_dir",
    branch: Name = "branch",
});

/// The document: the `worktree` block, `None` without one. Other keys are skipped unread.
struct Top(Option<RawWorktree>);

impl<'de> Shape<'de> for Top {
    // Anything but a mapping is refused here, and the message never quotes the document (a
    // mistaken `kardbrd.yml -> .env` reads as text: `KEY=secret` lines).
    fn scalar(node: Node<'_>) -> Result<Self, String> {
        match node {
            Node::Null => Ok(Top(None)),
            Node::Str(s) => Err(format!(
                "expected a mapping at the top level, found text ({} characters, not shown)",
                s.chars().count()
            )),
            other => Err(format!(
                "expected a mapping at the top level, found {}",
                describe(&other)
            )),
        }
    }

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut found = None;
        loop {
            let key = Pick {
                want: ROOT_KEY,
                fire: found.is_some(),
            };
            match map.next_key_seed(Reader(key))? {
                None => return Ok(Top(found)),
                Some(true) => found = Some(map.next_value::<Block<RawWorktree>>()?.0),
                Some(false) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cross-field checks, defaults, and where their errors point.

/// An error found across fields: the key path it names, the node it points at (at its key
/// when `at_key`), and what is wrong.
struct Problem {
    key: String,
    at: Vec<Seg>,
    at_key: bool,
    msg: String,
}

fn at(path: &[Seg]) -> Vec<Seg> {
    let mut segs = vec![Seg::Key(ROOT_KEY)];
    segs.extend_from_slice(path);
    segs
}

fn problem(path: &[Seg], msg: impl Into<String>) -> Problem {
    Problem {
        key: display_path(&at(path)),
        at: at(path),
        at_key: false,
        msg: msg.into(),
    }
}

/// `key` is required in the block at `path`: point at the block's key when it has one.
fn require<T>(value: Given<T>, path: &[Seg], key: &'static str) -> Result<T, Problem> {
    value.0.ok_or_else(|| Problem {
        key: join_key(&display_path(&at(path)), key),
        at: at(path),
        at_key: matches!(path.last(), Some(Seg::Key(_))),
        msg: format!(
            "missing (required when {} is present)",
            display_path(&at(path))
        ),
    })
}

fn argv(given: Given<List<Name>>, block: &'static str) -> Result<Vec<String>, Problem> {
    let list = require(given, &[Seg::Key(block)], "argv")?;
    if list.0.is_empty() {
        return Err(problem(
            &[Seg::Key(block), Seg::Key("argv")],
            "must hold at least one element (the program)",
        ));
    }
    Ok(list.0.into_iter().map(|n| n.0).collect())
}

/// The effective configuration from the typed block: defaults, then the checks across fields.
fn build(wt: RawWorktree) -> Result<Config, Problem> {
    let mut cfg = Config::default();
    if let Some(Block(b)) = wt.base.0 {
        if let Some(r) = b.remote.0 {
            cfg.base.remote = r.0;
        }
        cfg.base.git_ref = b.git_ref.0.map(|r| r.0);
    }
    if let Some(Block(h)) = wt.helpers.0 {
        cfg.helpers.stable_root = h.stable_root.0.map(|p| p.0);
    }
    if let Some(Block(c)) = wt.checkout.0 {
        cfg.checkout.mode = c.mode.0.unwrap_or(CheckoutMode::Full);
    }

    let mut prepare_cap = None;
    if let Some(Block(p)) = wt.prepare.0 {
        prepare_cap = p.timeout_seconds.0.map(|t| t.0);
        cfg.prepare = Some(Prepare {
            argv: argv(p.argv, "prepare")?,
            on_create: p.on_create.0.is_none_or(|f| f.0),
            on_reuse: p.on_reuse.0.is_some_and(|f| f.0),
            timeout_seconds: prepare_cap.unwrap_or(DEFAULT_PREPARE_TIMEOUT),
        });
    }
    let mut cleanup_cap = None;
    if let Some(Block(c)) = wt.cleanup.0 {
        cleanup_cap = c.timeout_seconds.0.map(|t| t.0);
        cfg.cleanup = Some(Cleanup {
            argv: argv(c.argv, "cleanup")?,
            timeout_seconds: cleanup_cap.unwrap_or(DEFAULT_CLEANUP_TIMEOUT),
        });
    }

    if let Some(Block(s)) = wt.sharing.0 {
        cfg.sharing.env = s.env.0.unwrap_or(EnvSharing::Disabled);
        cfg.sharing.skills = s.skills.0.unwrap_or(SkillsSharing::Fallback);
        cfg.sharing.copy = s
            .copy
            .0
            .map_or_else(Vec::new, |l| l.0.into_iter().map(|p| p.0).collect());
        cfg.sharing.copy_method = s.copy_method.0.unwrap_or_default();
    }
    if let Some(Block(e)) = wt.environment.0 {
        let names = e.passthrough.0.map_or_else(Vec::new, |l| l.0);
        cfg.environment.passthrough = names.into_iter().map(|n| n.0).collect();
    }
    if let Some(Block(p)) = wt.ports.0 {
        cfg.ports = Some(ports(p)?);
    }
    let action_written = wt.action_timeout_seconds.0.map(|t| t.0);
    if let Some(action) = action_written {
        cfg.action_timeout_seconds = action;
    }
    if let Some(list) = wt.adoptions.0 {
        cfg.adoptions = adoptions(list)?;
    }

    // A hook cap written above a written action timeout is an error; any other is clamped.
    let action = cfg.action_timeout_seconds;
    for (block, written) in [("prepare", prepare_cap), ("cleanup", cleanup_cap)] {
        if let (Some(value), Some(_)) = (written, action_written) {
            if value > action {
                return Err(problem(
                    &[Key(block), Key("timeout_seconds")],
                    format!(
                        "{value} is above {ROOT_KEY}.action_timeout_seconds ({action}); a hook \
                         cannot outlive its action"
                    ),
                ));
            }
        }
    }
    if let Some(p) = cfg.prepare.as_mut() {
        p.timeout_seconds = p.timeout_seconds.min(action);
    }
    if let Some(c) = cfg.cleanup.as_mut() {
        c.timeout_seconds = c.timeout_seconds.min(action);
    }

    if cfg.checkout.mode == CheckoutMode::Delegated && cfg.prepare.is_none() {
        return Err(problem(
            &[Key("checkout"), Key("mode")],
            format!("delegated requires a prepare hook ({ROOT_KEY}.prepare.argv is not set)"),
        ));
    }

    if cfg.helpers.stable_root.is_none() {
        let hook = if cfg.prepare.is_some() {
            Some("prepare")
        } else if cfg.cleanup.is_some() {
            Some("cleanup")
        } else {
            None
        };
        if let Some(hook) = hook {
            return Err(Problem {
                key: display_path(&at(&[Key("helpers"), Key("stable_root")])),
                at: at(&[Key(hook), Key("argv")]),
                at_key: true,
                msg: format!("missing; required because {ROOT_KEY}.{hook}.argv is set"),
            });
        }
    }
    Ok(cfg)
}

fn ports(p: RawPorts) -> Result<Ports, Problem> {
    let count = require(p.count, &[Key("ports")], "count")?.0;
    let range = require(p.range, &[Key("ports")], "range")?.0;
    let range_at = [Key("ports"), Key("range")];
    let [Port(low), Port(high)] = range[..] else {
        return Err(problem(
            &range_at,
            format!(
                "expected a list of two ports [LOW, HIGH], found {} elements",
                range.len()
            ),
        ));
    };
    if low > high {
        return Err(problem(
            &range_at,
            format!("low port {low} is above high port {high}"),
        ));
    }
    let size = u64::from(high - low) + 1;
    if count > size {
        return Err(problem(
            &[Key("ports"), Key("count")],
            format!(
                "{count} is more than the {size} ports in {}",
                display_path(&at(&range_at))
            ),
        ));
    }
    Ok(Ports {
        // At most `size`, itself at most 65536 - 1024.
        count: u16::try_from(count).unwrap_or(u16::MAX),
        range: [low, high],
    })
}

fn adoptions(list: List<Block<RawAdoption>>) -> Result<Vec<Adoption>, Problem> {
    let mut out: Vec<Adoption> = Vec::new();
    for (i, Block(a)) in list.0.into_iter().enumerate() {
        let item = [Key("adoptions"), Index(i)];
        let card = require(a.card, &item, "card")?.0;
        if let Some(j) = out.iter().position(|o| o.card == card) {
            return Err(problem(
                &[Key("adoptions"), Index(i), Key("card")],
                format!(
                    "card {card:?} is already declared by {}",
                    display_path(&at(&[Key("adoptions"), Index(j)]))
                ),
            ));
        }
        out.push(Adoption {
            card,
            path: require(a.path, &item, "path")?.0,
            common_dir: require(a.common_dir, &item, "common_dir")?.0,
            branch: require(a.branch, &item, "branch")?.0,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    const SPEC_EXAMPLE: &str = r#"worktree:
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
  cleanup:                    # runs before a worktree is removed (see R-REMOVE)
    argv: [/usr/local/libexec/project-agent/cleanup]
    timeout_seconds: 120      # default 120
  sharing:
    env: disabled             # disabled | link
    skills: fallback          # fallback | disabled
  environment:
    passthrough: []           # names of variables handed to hooks
  ports: {count: 1, range: [20000, 29999]}   # optional, see R-PORT
  action_timeout_seconds: 3600  # the single deadline of one action; default 3600
  adoptions:                  # see R-ADOPT
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
    fn spec_example_decodes() {
        let cfg = ok(SPEC_EXAMPLE);
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
             dup: 1\ndup: 2\n? [complex]\n: key\n123: number key\n{SPEC_EXAMPLE}trailing: ~\n"
        );
        assert_eq!(ok(&text), ok(SPEC_EXAMPLE));
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
        // Only a cap above an action timeout written in the file is an error (R-CFG-STRICT).
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
            &hooked(
                "  prepare:\n    argv: [/opt/h/p]\n    on_create: true\n    on_create: false\n",
            ),
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
    fn rules_error_names_file_and_key() {
        let e = rules_error(file(), "worktree.prepare.argv", "refused");
        assert_eq!(e.code, Code::Usage);
        assert_eq!(e.message, "kardbrd.yml: worktree.prepare.argv: refused");
    }

    #[test]
    fn fingerprint_ignores_other_keys() {
        let a = ok(SPEC_EXAMPLE).fingerprint();
        let b = ok(&format!("lint: true\n{SPEC_EXAMPLE}")).fingerprint();
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
                    ':', '-', '[', '{', '"', '\'', '#', '&', '*', '!', '\t', '\n', '|', '>', '?',
                    ',',
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
            let mut text = SPEC_EXAMPLE.to_owned();
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
}
