//! Strict decoding of the `worktree:` block of the rules file (SPEC R-CFG, R-CFG-STRICT),
//! defaults and cross-field validation. Pure: `decode` takes text and returns the effective
//! configuration or an error naming the file and the key path.
use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::Serialize;
use yaml_serde::value::{Tag, TaggedValue};
use yaml_serde::{Mapping, Value};

use crate::error::{usage, Fail};

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
// Three steps, all driven by serde_yaml (which reports syntax errors with line and column):
// 1. `TopSeed` reads the document, keeps only the value of the top-level `worktree` key as a
//    `yaml_serde::Value` (other keys are skipped unread) and rejects duplicate keys at the
//    duplicate's own position.
// 2. `walk` checks that value against the schema with a key path, so null and type checks are
//    entirely ours (serde_yaml's typed decoding accepts `900` or `true` for a string).
// 3. On a schema error, `locate` re-reads the text and raises an error at the offending node,
//    so serde_yaml attaches that node's line and column.

/// The top-level key this crate owns.
const ROOT_KEY: &str = "worktree";

const WORKTREE_KEYS: &[&str] = &[
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
];
const BASE_KEYS: &[&str] = &["remote", "ref"];
const HELPERS_KEYS: &[&str] = &["stable_root"];
const CHECKOUT_KEYS: &[&str] = &["mode"];
const PREPARE_KEYS: &[&str] = &["argv", "on_create", "on_reuse", "timeout_seconds"];
const CLEANUP_KEYS: &[&str] = &["argv", "timeout_seconds"];
const SHARING_KEYS: &[&str] = &["env", "skills"];
const ENVIRONMENT_KEYS: &[&str] = &["passthrough"];
const PORTS_KEYS: &[&str] = &["count", "range"];
const ADOPTION_KEYS: &[&str] = &["card", "path", "common_dir", "branch"];

const DEFAULT_PREPARE_TIMEOUT: u64 = 900;
const DEFAULT_CLEANUP_TIMEOUT: u64 = 120;
const MIN_PORT: u64 = 1024;
const MAX_PORT: u64 = 65535;

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
    let ctx = Ctx::default();
    let top = TopSeed { ctx: &ctx }.deserialize(yaml_serde::Deserializer::from_str(text));
    let worktree = match top {
        Ok(Some(value)) => value,
        Ok(None) => return Ok(Config::default()),
        Err(err) => {
            return Err(match ctx.take() {
                Some((key, msg)) => located(file, &key, &msg, err.location()),
                None => usage(format!(
                    "{}: {}",
                    file.display(),
                    parser_message(&err, text)
                )),
            })
        }
    };
    walk(&worktree).map_err(|p| located(file, &p.key, &p.msg, locate(text, &p.at, p.at_key)))
}

/// The YAML scanner (libyaml, under serde_yaml) checks every open flow collection at each
/// token, so `[[[[…]]]]` costs depth × tokens: 30 s for 100,000 levels (SPEC R-TRUST 2). This
/// bounds that work from above, in one pass and without parsing: each byte (a token starts at
/// one) counts the `[` and `{` seen before it, the most collections that can be open there.
/// Closing brackets are not subtracted: a `]` inside a quoted string must not lower the bound.
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

/// serde_yaml's own message (syntax errors, anchors, several documents), with a position
/// wherever one can be had.
fn parser_message(err: &yaml_serde::Error, text: &str) -> String {
    let msg = err.to_string();
    if msg.contains(" at line ") {
        return msg;
    }
    // serde_yaml leaves out a position at the very start of the text.
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
    let ctx = Ctx::default();
    let fire = |_: &Value| Some((String::new(), String::new()));
    let seed = ValueSeed {
        ctx: &ctx,
        path: "",
        strict: false,
        check: Some(&fire),
    };
    match seed.deserialize(doc) {
        Err(err) if ctx.fired() => err.location().map(Ok),
        Err(err) => Some(Err(err.to_string())),
        Ok(_) => None,
    }
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

// ---------------------------------------------------------------------------------------------
// Names that reach git (SPEC R-TRUST 1): pure checks, used for the rules file, records and
// what a remote reports.

/// At most this many characters of any value are quoted in an error message (SPEC R-TRUST 2).
pub const QUOTE_CHARS: usize = 40;

/// `value` in double quotes, cut after [`QUOTE_CHARS`] characters with `…`, so an error about
/// a mistaken file (a symlink to `.env`) never prints a secret whole.
pub fn quote(value: &str) -> String {
    let mut chars = value.chars();
    let shown: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{:?}", format!("{shown}…"))
    } else {
        format!("{shown:?}")
    }
}

/// git's refname rules (`git help check-ref-format`, without `--allow-onelevel`, without
/// `--refspec-pattern`): `Err` says which rule `name` breaks.
pub fn check_ref_format(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("a ref name must not be empty");
    }
    if name == "@" {
        return Err("a ref name must not be \"@\"");
    }
    if name.starts_with('-') {
        return Err("a ref name must not start with '-'");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return Err("a ref name must not start or end with '/' or hold \"//\"");
    }
    if !name.contains('/') {
        return Err("a ref name must hold at least one '/'");
    }
    if name.ends_with('.') {
        return Err("a ref name must not end with '.'");
    }
    if name.contains("..") {
        return Err("a ref name must not hold \"..\"");
    }
    if name.contains("@{") {
        return Err("a ref name must not hold \"@{\"");
    }
    if name
        .chars()
        .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
    {
        return Err("a ref name must not hold control characters, space, ~ ^ : ? * [ or \\");
    }
    if name
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return Err("no part of a ref name may start with '.' or end with \".lock\"");
    }
    Ok(())
}

/// A full branch ref, `refs/heads/<branch>`, that git accepts.
pub fn check_branch_ref(name: &str) -> Result<(), String> {
    match name.strip_prefix("refs/heads/") {
        Some(branch) if !branch.is_empty() && !branch.starts_with('-') => {
            check_ref_format(name).map_err(str::to_owned)
        }
        _ => Err("must be a full branch ref starting with refs/heads/".to_owned()),
    }
}

/// A remote name git accepts (`refs/remotes/<name>/x` is a valid ref) that can never be read
/// as an option.
pub fn check_remote_name(name: &str) -> Result<(), String> {
    if name.starts_with('-') {
        return Err("a remote name must not start with '-'".to_owned());
    }
    if name == "." || name == ".." {
        return Err("a remote name must not be \".\" or \"..\"".to_owned());
    }
    check_ref_format(&format!("refs/remotes/{name}/x"))
        .map_err(|why| format!("not a valid remote name ({why})"))
}

/// A record's `base_remote` and `base_ref` (`""`: not known), checked whenever a record is
/// read, so a tampered record is refused as malformed instead of handing its values to git.
pub fn check_recorded_base(remote: &str, base_ref: &str) -> Result<(), String> {
    check_remote_name(remote).map_err(|e| format!("base_remote {}: {e}", quote(remote)))?;
    if !base_ref.is_empty() {
        check_branch_ref(base_ref).map_err(|e| format!("base_ref {}: {e}", quote(base_ref)))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Step 1 and 3: serde_yaml-driven readers.

/// Carries the first error raised by our own seeds out of serde_yaml (whose error type only
/// keeps a string): `(key path, message)`.
#[derive(Default)]
struct Ctx {
    problem: RefCell<Option<(String, String)>>,
}

impl Ctx {
    fn fail<E: de::Error>(&self, key: String, msg: String) -> E {
        let mut slot = self.problem.borrow_mut();
        if slot.is_none() {
            *slot = Some((key, msg));
        }
        E::custom("kardwt: rules file error")
    }

    fn take(&self) -> Option<(String, String)> {
        self.problem.borrow_mut().take()
    }

    fn fired(&self) -> bool {
        self.problem.borrow().is_some()
    }
}

/// A test run on a node once it is read; `Some((key, msg))` fails there, at its position.
type Check<'a> = &'a dyn Fn(&Value) -> Option<(String, String)>;

/// Reads any node into a [`Value`]. `strict`: reject duplicate keys and integers beyond 64 bits
/// (with `path` naming the node); otherwise read leniently. `check` runs on the finished node.
#[derive(Clone, Copy)]
struct ValueSeed<'a> {
    ctx: &'a Ctx,
    path: &'a str,
    strict: bool,
    check: Option<Check<'a>>,
}

impl<'a> ValueSeed<'a> {
    fn child(self, path: &'a str) -> ValueSeed<'a> {
        ValueSeed {
            ctx: self.ctx,
            path,
            strict: self.strict,
            check: None,
        }
    }

    fn done<E: de::Error>(self, value: Value) -> Result<Value, E> {
        if let Some(check) = self.check {
            if let Some((key, msg)) = check(&value) {
                return Err(self.ctx.fail(key, msg));
            }
        }
        Ok(value)
    }

    fn big<E: de::Error>(self, digits: String) -> Result<Value, E> {
        if self.strict {
            Err(self.ctx.fail(
                self.path.to_owned(),
                format!("integer {} is out of range", quote(&digits)),
            ))
        } else {
            self.done(Value::String(digits))
        }
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.done(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.done(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.done(Value::Number(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => self.big(v.to_string()),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => self.big(v.to_string()),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.done(Value::Number(v.into()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.done(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.done(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.done(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.done(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let path = format!("{}[{}]", self.path, items.len());
            match seq.next_element_seed(self.child(&path))? {
                Some(item) => items.push(item),
                None => break,
            }
        }
        self.done(Value::Sequence(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut mapping = Mapping::new();
        loop {
            let key = {
                let duplicate = |k: &Value| {
                    mapping.contains_key(k).then(|| {
                        let label = key_label(k);
                        (
                            join_key(self.path, &label),
                            format!("duplicate key {}", quote(&label)),
                        )
                    })
                };
                let key_path = join_key(self.path, "<key>");
                let seed = ValueSeed {
                    ctx: self.ctx,
                    path: &key_path,
                    strict: self.strict,
                    check: if self.strict { Some(&duplicate) } else { None },
                };
                map.next_key_seed(seed)?
            };
            let Some(key) = key else { break };
            let path = join_key(self.path, &key_label(&key));
            let value = map.next_value_seed(self.child(&path))?;
            mapping.insert(key, value);
        }
        self.done(Value::Mapping(mapping))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        // serde_yaml hands a tagged node (`!tag value`) over as an enum.
        let (tag, variant): (String, _) = data.variant()?;
        let value = variant.newtype_variant_seed(self.child(self.path))?;
        let tag = if tag.is_empty() { "!".to_owned() } else { tag };
        self.done(Value::Tagged(Box::new(TaggedValue {
            tag: Tag::new(tag),
            value,
        })))
    }
}

/// The document: `None` when it has no `worktree` key (or is empty), else that key's value.
struct TopSeed<'a> {
    ctx: &'a Ctx,
}

impl TopSeed<'_> {
    fn not_a_mapping<E: de::Error>(&self, found: &Value) -> E {
        self.ctx.fail(
            String::new(),
            format!(
                "expected a mapping at the top level, found {}",
                describe(found)
            ),
        )
    }
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping at the top level of the rules file")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    // Anything but a mapping is refused here, so the message never quotes the document
    // (serde_yaml's own would quote it whole: a mistaken `kardbrd.yml -> .env`).
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        // Not even its first characters: this is how a `.env` file reads (`KEY=secret` lines).
        Err(self.ctx.fail(
            String::new(),
            format!(
                "expected a mapping at the top level, found text ({} characters, not shown)",
                v.chars().count()
            ),
        ))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(self.not_a_mapping(&Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Err(self.not_a_mapping(&Value::Number(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Err(self.not_a_mapping(&Value::Number(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Err(self.not_a_mapping(&Value::Number(v.into())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(self.not_a_mapping(&Value::Sequence(Vec::new())))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        let (tag, _): (String, _) = data.variant()?;
        Err(self.ctx.fail(
            String::new(),
            format!(
                "expected a mapping at the top level, found a tagged value ({})",
                quote(&tag)
            ),
        ))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        loop {
            let seen = found.is_some();
            let duplicate = |k: &Value| {
                (seen && k.as_str() == Some(ROOT_KEY))
                    .then(|| (ROOT_KEY.to_owned(), format!("duplicate key {ROOT_KEY:?}")))
            };
            let seed = ValueSeed {
                ctx: self.ctx,
                path: "",
                strict: false,
                check: Some(&duplicate),
            };
            let Some(key) = map.next_key_seed(seed)? else {
                break;
            };
            if key.as_str() == Some(ROOT_KEY) {
                let seed = ValueSeed {
                    ctx: self.ctx,
                    path: ROOT_KEY,
                    strict: true,
                    check: None,
                };
                found = Some(map.next_value_seed(seed)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Where a schema error points: the path from the document root.
#[derive(Clone, Debug, PartialEq)]
enum Seg {
    Key(Value),
    Index(usize),
}

/// Re-read `text` and fail at the node `segs` designates (at its key when `at_key`), so that
/// serde_yaml reports that node's position. `None` when the node is not found.
fn locate(text: &str, segs: &[Seg], at_key: bool) -> Option<yaml_serde::Location> {
    if segs.is_empty() {
        return None;
    }
    let ctx = Ctx::default();
    let result = Locate {
        ctx: &ctx,
        segs,
        at_key,
    }
    .deserialize(yaml_serde::Deserializer::from_str(text));
    match result {
        Err(err) if ctx.fired() => err.location(),
        _ => None,
    }
}

struct Locate<'a> {
    ctx: &'a Ctx,
    segs: &'a [Seg],
    at_key: bool,
}

impl<'de> DeserializeSeed<'de> for Locate<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.segs.is_empty() {
            let fire = |_: &Value| Some((String::new(), String::new()));
            let seed = ValueSeed {
                ctx: self.ctx,
                path: "",
                strict: false,
                check: Some(&fire),
            };
            seed.deserialize(deserializer).map(drop)
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Locate<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        Ok(())
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        IgnoredAny.visit_enum(data).map(drop)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Seg::Index(want) = self.segs[0] else {
            return IgnoredAny.visit_seq(seq).map(drop);
        };
        let mut index = 0;
        loop {
            let more = if index == want {
                let seed = Locate {
                    ctx: self.ctx,
                    segs: &self.segs[1..],
                    at_key: self.at_key,
                };
                seq.next_element_seed(seed)?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Seg::Key(want) = &self.segs[0] else {
            return IgnoredAny.visit_map(map).map(drop);
        };
        let fire_at_key = self.at_key && self.segs.len() == 1;
        let fire = |k: &Value| (fire_at_key && k == want).then(|| (String::new(), String::new()));
        loop {
            let seed = ValueSeed {
                ctx: self.ctx,
                path: "",
                strict: false,
                check: Some(&fire),
            };
            let Some(key) = map.next_key_seed(seed)? else {
                return Ok(());
            };
            if &key == want {
                let seed = Locate {
                    ctx: self.ctx,
                    segs: &self.segs[1..],
                    at_key: self.at_key,
                };
                map.next_value_seed(seed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Step 2: the schema walk.

/// A schema error: the key path it names, the node it points at, and what is wrong.
struct Problem {
    key: String,
    at: Vec<Seg>,
    at_key: bool,
    msg: String,
}

type Walked<T> = Result<T, Problem>;

/// A key path from the document root, `worktree.prepare.argv[1]`.
#[derive(Clone, Debug)]
struct At(Vec<Seg>);

impl At {
    fn root() -> At {
        At(vec![Seg::Key(Value::String(ROOT_KEY.to_owned()))])
    }

    fn key(&self, key: &Value) -> At {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.clone()));
        At(segs)
    }

    fn field(&self, name: &str) -> At {
        self.key(&Value::String(name.to_owned()))
    }

    fn index(&self, i: usize) -> At {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(i));
        At(segs)
    }

    fn display(&self) -> String {
        let mut out = String::new();
        for seg in &self.0 {
            match seg {
                Seg::Key(k) => out = join_key(&out, &key_label(k)),
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// An error about this node's value.
    fn problem(&self, msg: impl Into<String>) -> Problem {
        Problem {
            key: self.display(),
            at: self.0.clone(),
            at_key: false,
            msg: msg.into(),
        }
    }

    /// An error about this node's key (unknown key).
    fn key_problem(&self, msg: impl Into<String>) -> Problem {
        Problem {
            key: self.display(),
            at: self.0.clone(),
            at_key: true,
            msg: msg.into(),
        }
    }
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn key_label(key: &Value) -> String {
    match key {
        Value::String(s) => {
            let mut chars = s.chars();
            let shown: String = chars.by_ref().take(QUOTE_CHARS).collect();
            if chars.next().is_some() {
                format!("{shown}…")
            } else {
                shown
            }
        }
        Value::Null => "~".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => "<complex key>".to_owned(),
    }
}

/// What a value is, for "expected X, found Y".
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "an explicit null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) if n.is_f64() => format!("a float ({n})"),
        Value::Number(n) => format!("an integer ({n})"),
        Value::String(s) => format!("a string ({})", quote(s)),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(t) => format!("a tagged value ({})", t.tag),
    }
}

fn wrong_type(value: &Value, at: &At, expected: &str) -> Problem {
    at.problem(format!("expected {expected}, found {}", describe(value)))
}

/// A mapping whose keys were all checked against the allowed set.
struct Block<'v> {
    map: &'v Mapping,
    at: At,
}

fn block<'v>(value: &'v Value, at: &At, allowed: &[&str]) -> Walked<Block<'v>> {
    let Value::Mapping(map) = value else {
        return Err(wrong_type(value, at, "a mapping"));
    };
    for key in map.keys() {
        if !key.as_str().is_some_and(|k| allowed.contains(&k)) {
            return Err(at.key(key).key_problem(format!(
                "unknown key (allowed keys: {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(Block {
        map,
        at: at.clone(),
    })
}

impl<'v> Block<'v> {
    fn get(&self, name: &str) -> Option<(&'v Value, At)> {
        self.map.get(name).map(|v| (v, self.at.field(name)))
    }

    fn require(&self, name: &str) -> Walked<(&'v Value, At)> {
        self.get(name).ok_or_else(|| {
            let present = self.at.display();
            Problem {
                key: self.at.field(name).display(),
                // Point at the block's own key when it has one, else at the block.
                at_key: matches!(self.at.0.last(), Some(Seg::Key(_))),
                at: self.at.0.clone(),
                msg: format!("missing (required when {present} is present)"),
            }
        })
    }
}

fn string<'v>(value: &'v Value, at: &At) -> Walked<&'v str> {
    value
        .as_str()
        .ok_or_else(|| wrong_type(value, at, "a string"))
}

fn nonempty_string(value: &Value, at: &At) -> Walked<String> {
    let s = string(value, at)?;
    if s.is_empty() {
        return Err(at.problem("must not be empty"));
    }
    Ok(s.to_owned())
}

fn absolute_path(value: &Value, at: &At) -> Walked<PathBuf> {
    let s = nonempty_string(value, at)?;
    let path = PathBuf::from(&s);
    if !path.is_absolute() {
        return Err(at.problem(format!("must be an absolute path, found {}", quote(&s))));
    }
    Ok(path)
}

fn boolean(value: &Value, at: &At) -> Walked<bool> {
    value
        .as_bool()
        .ok_or_else(|| wrong_type(value, at, "a boolean (true or false)"))
}

/// A non-negative integer of at least `min`.
fn integer(value: &Value, at: &At, min: u64) -> Walked<u64> {
    let Value::Number(n) = value else {
        return Err(wrong_type(value, at, "an integer"));
    };
    if n.is_f64() {
        return Err(wrong_type(value, at, "an integer"));
    }
    match n.as_u64() {
        Some(v) if v >= min => Ok(v),
        _ => Err(at.problem(format!("must be an integer of at least {min}, found {n}"))),
    }
}

fn list<'v>(value: &'v Value, at: &At) -> Walked<&'v [Value]> {
    match value {
        Value::Sequence(items) => Ok(items),
        other => Err(wrong_type(other, at, "a list")),
    }
}

/// One of `allowed` (a string), as its index.
fn choice(value: &Value, at: &At, allowed: &[&str]) -> Walked<usize> {
    let expected = format!("one of {}", allowed.join(", "));
    let s = value
        .as_str()
        .ok_or_else(|| wrong_type(value, at, &expected))?;
    allowed.iter().position(|a| *a == s).ok_or_else(|| {
        at.problem(format!(
            "unknown value {} (allowed values: {})",
            quote(s),
            allowed.join(", ")
        ))
    })
}

fn argv(value: &Value, at: &At) -> Walked<Vec<String>> {
    let items = list(value, at)?;
    if items.is_empty() {
        return Err(at.problem("must hold at least one element (the program)"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| nonempty_string(item, &at.index(i)))
        .collect()
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A hook timeout as written: value and where.
type Written = Option<(u64, At)>;

fn walk(root: &Value) -> Walked<Config> {
    let wt = block(root, &At::root(), WORKTREE_KEYS)?;
    let mut cfg = Config::default();

    if let Some((v, at)) = wt.get("base") {
        let b = block(v, &at, BASE_KEYS)?;
        if let Some((v, at)) = b.get("remote") {
            let remote = nonempty_string(v, &at)?;
            if let Err(why) = check_remote_name(&remote) {
                return Err(at.problem(format!("{why}, found {}", quote(&remote))));
            }
            cfg.base.remote = remote;
        }
        if let Some((v, at)) = b.get("ref") {
            let r = string(v, &at)?;
            if let Err(why) = check_branch_ref(r) {
                return Err(at.problem(format!("{why}, found {}", quote(r))));
            }
            cfg.base.git_ref = Some(r.to_owned());
        }
    }

    if let Some((v, at)) = wt.get("helpers") {
        let h = block(v, &at, HELPERS_KEYS)?;
        if let Some((v, at)) = h.get("stable_root") {
            cfg.helpers.stable_root = Some(absolute_path(v, &at)?);
        }
    }

    let mut mode_at = None;
    if let Some((v, at)) = wt.get("checkout") {
        let c = block(v, &at, CHECKOUT_KEYS)?;
        if let Some((v, at)) = c.get("mode") {
            cfg.checkout.mode = match choice(v, &at, &["full", "delegated"])? {
                0 => CheckoutMode::Full,
                _ => CheckoutMode::Delegated,
            };
            mode_at = Some(at);
        }
    }

    let mut prepare_cap: Written = None;
    let mut prepare_argv_at = None;
    if let Some((v, at)) = wt.get("prepare") {
        let p = block(v, &at, PREPARE_KEYS)?;
        // The other keys are checked first, so a typo there is not reported as missing argv.
        let argv_given = p.get("argv").map(|(v, at)| argv(v, &at)).transpose()?;
        let mut prepare = Prepare {
            argv: Vec::new(),
            on_create: true,
            on_reuse: false,
            timeout_seconds: DEFAULT_PREPARE_TIMEOUT,
        };
        if let Some((v, at)) = p.get("on_create") {
            prepare.on_create = boolean(v, &at)?;
        }
        if let Some((v, at)) = p.get("on_reuse") {
            prepare.on_reuse = boolean(v, &at)?;
        }
        if let Some((v, at)) = p.get("timeout_seconds") {
            prepare.timeout_seconds = integer(v, &at, 1)?;
            prepare_cap = Some((prepare.timeout_seconds, at));
        }
        let (_, argv_at) = p.require("argv")?;
        prepare.argv = argv_given.unwrap_or_default();
        prepare_argv_at = Some(argv_at);
        cfg.prepare = Some(prepare);
    }

    let mut cleanup_cap: Written = None;
    let mut cleanup_argv_at = None;
    if let Some((v, at)) = wt.get("cleanup") {
        let c = block(v, &at, CLEANUP_KEYS)?;
        let argv_given = c.get("argv").map(|(v, at)| argv(v, &at)).transpose()?;
        let mut cleanup = Cleanup {
            argv: Vec::new(),
            timeout_seconds: DEFAULT_CLEANUP_TIMEOUT,
        };
        if let Some((v, at)) = c.get("timeout_seconds") {
            cleanup.timeout_seconds = integer(v, &at, 1)?;
            cleanup_cap = Some((cleanup.timeout_seconds, at));
        }
        let (_, argv_at) = c.require("argv")?;
        cleanup.argv = argv_given.unwrap_or_default();
        cleanup_argv_at = Some(argv_at);
        cfg.cleanup = Some(cleanup);
    }

    if let Some((v, at)) = wt.get("sharing") {
        let s = block(v, &at, SHARING_KEYS)?;
        if let Some((v, at)) = s.get("env") {
            cfg.sharing.env = match choice(v, &at, &["disabled", "link"])? {
                0 => EnvSharing::Disabled,
                _ => EnvSharing::Link,
            };
        }
        if let Some((v, at)) = s.get("skills") {
            cfg.sharing.skills = match choice(v, &at, &["fallback", "disabled"])? {
                0 => SkillsSharing::Fallback,
                _ => SkillsSharing::Disabled,
            };
        }
    }

    if let Some((v, at)) = wt.get("environment") {
        let e = block(v, &at, ENVIRONMENT_KEYS)?;
        if let Some((v, at)) = e.get("passthrough") {
            for (i, item) in list(v, &at)?.iter().enumerate() {
                let at = at.index(i);
                let name = string(item, &at)?;
                if !is_env_name(name) {
                    return Err(at.problem(format!(
                        "{} is not a variable name (letters, digits and '_', not starting \
                         with a digit)",
                        quote(name)
                    )));
                }
                cfg.environment.passthrough.push(name.to_owned());
            }
        }
    }

    if let Some((v, at)) = wt.get("ports") {
        cfg.ports = Some(ports(v, &at)?);
    }

    let mut action_written = None;
    if let Some((v, at)) = wt.get("action_timeout_seconds") {
        cfg.action_timeout_seconds = integer(v, &at, 1)?;
        action_written = Some(at);
    }

    if let Some((v, at)) = wt.get("adoptions") {
        cfg.adoptions = adoptions(v, &at)?;
    }

    // Cross-field rules.
    let action = cfg.action_timeout_seconds;
    for (cap, written) in [
        (
            cfg.prepare.as_mut().map(|p| &mut p.timeout_seconds),
            &prepare_cap,
        ),
        (
            cfg.cleanup.as_mut().map(|c| &mut c.timeout_seconds),
            &cleanup_cap,
        ),
    ] {
        let Some(cap) = cap else { continue };
        match (written, &action_written) {
            (Some((value, at)), Some(action_at)) if *value > action => {
                return Err(at.problem(format!(
                    "{value} is above {} ({action}); a hook cannot outlive its action",
                    action_at.display()
                )));
            }
            _ => *cap = (*cap).min(action),
        }
    }

    if cfg.checkout.mode == CheckoutMode::Delegated && cfg.prepare.is_none() {
        let at = mode_at.unwrap_or_else(At::root);
        return Err(at.problem(format!(
            "delegated requires a prepare hook ({} is not set)",
            At::root().field("prepare").field("argv").display()
        )));
    }

    if cfg.helpers.stable_root.is_none() {
        if let Some(hook_at) = prepare_argv_at.or(cleanup_argv_at) {
            let key = At::root().field("helpers").field("stable_root").display();
            return Err(Problem {
                key,
                at: hook_at.0.clone(),
                at_key: true,
                msg: format!("missing; required because {} is set", hook_at.display()),
            });
        }
    }

    Ok(cfg)
}

fn ports(value: &Value, at: &At) -> Walked<Ports> {
    let p = block(value, at, PORTS_KEYS)?;
    let (count_value, count_at) = p.require("count")?;
    let (range_value, range_at) = p.require("range")?;
    let count = integer(count_value, &count_at, 1)?;
    let range = list(range_value, &range_at)?;
    if range.len() != 2 {
        return Err(range_at.problem(format!(
            "expected a list of two ports [LOW, HIGH], found {} elements",
            range.len()
        )));
    }
    let low_at = range_at.index(0);
    let high_at = range_at.index(1);
    let low = integer(&range[0], &low_at, MIN_PORT)?;
    let high = integer(&range[1], &high_at, MIN_PORT)?;
    if low > MAX_PORT {
        return Err(low_at.problem(format!("must be at most {MAX_PORT}, found {low}")));
    }
    if high > MAX_PORT {
        return Err(high_at.problem(format!("must be at most {MAX_PORT}, found {high}")));
    }
    if low > high {
        return Err(range_at.problem(format!("low port {low} is above high port {high}")));
    }
    let size = high - low + 1;
    if count > size {
        return Err(count_at.problem(format!(
            "{count} is more than the {size} ports in {}",
            range_at.display()
        )));
    }
    let port = |v: u64, at: &At| u16::try_from(v).map_err(|_| at.problem("out of range"));
    Ok(Ports {
        count: port(count, &count_at)?,
        range: [port(low, &low_at)?, port(high, &high_at)?],
    })
}

fn adoptions(value: &Value, at: &At) -> Walked<Vec<Adoption>> {
    let mut out: Vec<Adoption> = Vec::new();
    for (i, item) in list(value, at)?.iter().enumerate() {
        let item_at = at.index(i);
        let a = block(item, &item_at, ADOPTION_KEYS)?;
        let (v, card_at) = a.require("card")?;
        let card = nonempty_string(v, &card_at)?;
        if let Err(fail) = crate::card::CardId::parse(&card) {
            return Err(card_at.problem(fail.message));
        }
        if let Some(j) = out.iter().position(|o| o.card == card) {
            return Err(card_at.problem(format!(
                "card {card:?} is already declared by {}",
                at.index(j).display()
            )));
        }
        let (v, path_at) = a.require("path")?;
        let path = absolute_path(v, &path_at)?;
        let (v, common_at) = a.require("common_dir")?;
        let common_dir = absolute_path(v, &common_at)?;
        let (v, branch_at) = a.require("branch")?;
        let branch = nonempty_string(v, &branch_at)?;
        out.push(Adoption {
            card,
            path,
            common_dir,
            branch,
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
