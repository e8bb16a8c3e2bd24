//! Decoding the rules file's text into the effective configuration, and where its errors
//! point: the key path and the line and column of the node at fault.
//!
//! The `worktree:` block is decoded into typed structs (`Raw*`) whose every field is optional
//! ([`Given`](super::read::Given): absent is fine, an explicit `null` is not) and whose leaves
//! are strict: a leaf reads its node with `deserialize_any` and refuses any other kind of node
//! with "expected X, found Y" (yaml_serde's own typed decoding takes `900` or `true` for a
//! string). An error raised while a node is read carries that node's line and column
//! (yaml_serde marks it) and its key path (serde_path_to_error). The checks across fields run
//! on the typed result; their errors are located by [`locate`], which re-reads the text down
//! to the node they name.
use std::path::Path;

use serde::de::DeserializeSeed;

use super::check::build;
use super::error::ConfigError;
use super::locate::{locate, Locate};
use super::model::Config;
use super::read::{caught, join_key, key_label, Raised, Reader};
use super::schema::Top;
use crate::ground::error::Fail;

/// Decode the rules file's text. `file` only names the file in errors.
///
/// Without a top-level `worktree:` key (including an empty or comment-only file) the result is
/// `Config::default`. Every error is a usage error (exit 2) whose message reads
/// `<file>: <key path>: <what is wrong> at line L column C` (the location where known).
pub fn decode(file: &Path, text: &str) -> Result<Config, Fail> {
    if flow_work(text) <= MAX_FLOW_WORK {
        return decode_now(file, text).map_err(Fail::from);
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
    if let Err(e) = worker {
        // Not the file's fault: the system refused a thread.
        return Err(Fail::from(NoThread {
            file: file.to_path_buf(),
            error: e,
        }));
    }
    let decoded = rx.recv_timeout(DECODE_BUDGET).ok();
    decoded
        .unwrap_or_else(|| {
            Err(ConfigError::TooDeep {
                file: file.to_path_buf(),
            })
        })
        .map_err(Fail::from)
}

/// How long a rules file whose flow collections could make the scanner slow may take to
/// decode (an honest file takes milliseconds).
const DECODE_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

/// Decode `text` on this thread (see [`decode`]).
fn decode_now(file: &Path, text: &str) -> Result<Config, ConfigError> {
    let top: Top =
        caught(|| serde_path_to_error::deserialize(yaml_serde::Deserializer::from_str(text)))
            .map_err(|(err, raised)| decode_error(file, text, &err, raised))?;
    let Some(worktree) = top.0 else {
        return Ok(Config::default());
    };
    build(worktree).map_err(|p| ConfigError::Invalid {
        file: file.to_path_buf(),
        key: p.key,
        msg: p.msg,
        at: locate(text, &p.at, p.at_key),
    })
}

/// The YAML scanner checks every open flow collection at each token, so `[[[[…]]]]` costs
/// depth × tokens: 30 s for 100,000 levels. This bounds that work from above,
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

/// The error for a failed typed decoding: what a reader refused (`raised`) with its key path
/// and location, or the parser's own (syntax errors, anchors, several documents).
fn decode_error(
    file: &Path,
    text: &str,
    err: &serde_path_to_error::Error<yaml_serde::Error>,
    raised: Option<Raised>,
) -> ConfigError {
    let inner = err.inner();
    let Some(raised) = raised else {
        return ConfigError::Parser {
            file: file.to_path_buf(),
            msg: parser_message(inner, text),
        };
    };
    let mut segments: Vec<&serde_path_to_error::Segment> = err.path().iter().collect();
    if raised.key.is_some() {
        // The path already ends with the key being read; name it by its cut label.
        segments.pop();
    }
    let mut key = String::new();
    for segment in segments {
        match segment {
            serde_path_to_error::Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key: k } => key = join_key(&key, &key_label(k)),
            serde_path_to_error::Segment::Unknown => key = join_key(&key, "?"),
            _ => {}
        }
    }
    if let Some(label) = &raised.key {
        key = join_key(&key, label);
    }
    ConfigError::Invalid {
        file: file.to_path_buf(),
        key,
        msg: raised.why.to_string(),
        at: inner.location(),
    }
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
        Some(Err(syntax)) => syntax.to_string(),
        None => msg,
    }
}

/// Where the second YAML document of `text` starts (`Ok`), or the error reading it (`Err`).
fn second_document(text: &str) -> Option<Result<yaml_serde::Location, yaml_serde::Error>> {
    // Only `nth(1)`: on a syntax error the document iterator repeats that error forever.
    let doc = yaml_serde::Deserializer::from_str(text).nth(1)?;
    let here = Locate {
        segs: &[],
        at_key: false,
    };
    match caught(|| Reader(here).deserialize(doc)) {
        Err((err, Some(_))) => err.location().map(Ok),
        Err((err, None)) => Some(Err(err)),
        Ok(()) => None,
    }
}

/// The system refused the thread that decodes the rules: not the file's fault (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("could not start a thread to decode {}: {error}", file.display())]
struct NoThread {
    file: std::path::PathBuf,
    error: std::io::Error,
}

impl crate::ground::error::Kind for NoThread {
    fn code(&self) -> crate::ground::error::Code {
        crate::ground::error::Code::Failed
    }
    fn hints(&self) -> Vec<String> {
        vec![
            "a limit on processes or memory was reached; run the command again when fewer \
              processes run"
                .into(),
        ]
    }
}
