//! The lifecycle record: `<admin dir>/kardwt.toml`, its type, parsing and atomic
//! write (temporary file, fsync, rename). Key names are part of the contract: other tools read
//! them.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::ground::card::CardId;

/// The record's file name inside a worktree's admin dir.
pub const FILE_NAME: &str = "kardwt.toml";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Preparing,
    Ready,
    Failed,
    /// Its processes, cleanup hook and ports were released (`git kardwt release`), the tree
    /// kept: `add` prepares it again (reason `retry`).
    Released,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Add,
    Hook,
    Adopt,
    Manual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    Create,
    Reuse,
    Retry,
    Adopt,
    Manual,
    Remove,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Preparing => "preparing",
            State::Ready => "ready",
            State::Failed => "failed",
            State::Released => "released",
        }
    }
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Create => "create",
            Reason::Reuse => "reuse",
            Reason::Retry => "retry",
            Reason::Adopt => "adopt",
            Reason::Manual => "manual",
            Reason::Remove => "remove",
        }
    }
}

/// How the last hook kardwt ran for this worktree ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastHook {
    pub phase: String,
    /// Its exit code; -1 when it was killed (then `killed` says where, in records written
    /// since it exists).
    pub exit_code: i32,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed: Option<Killed>,
    /// The hook's cap, when `killed` is `cap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_seconds: Option<u64>,
}

/// Where a hook was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Killed {
    /// At its own cap (`timeout_seconds`).
    Cap,
    /// At the action deadline.
    Deadline,
    /// Because kardwt was interrupted (SIGINT, SIGTERM, SIGHUP).
    Interrupted,
}

impl LastHook {
    /// How it ended, in words (pure): `exited 3 after 40ms`, `was killed at its 1s cap
    /// (after 1.0s)`.
    pub fn describe(&self) -> String {
        let ms = crate::ground::human::duration(std::time::Duration::from_millis(self.duration_ms));
        match (self.killed, self.cap_seconds) {
            (Some(Killed::Cap), Some(cap)) => {
                format!("was killed at its {cap}s cap (after {ms})")
            }
            (Some(Killed::Cap), None) => format!("was killed at its cap (after {ms})"),
            (Some(Killed::Deadline), _) => {
                format!("was killed at the action deadline (after {ms})")
            }
            (Some(Killed::Interrupted), _) => {
                format!("was killed when kardwt was interrupted (after {ms})")
            }
            // Records from before `killed`: -1 was the only mark of a kill.
            (None, _) if self.exit_code == -1 => {
                format!("was killed at its cap or the action deadline (after {ms})")
            }
            (None, _) => format!("exited {} after {ms}", self.exit_code),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    /// Checked by [`parse`] right after decoding: a record that is not refused holds an id.
    #[serde(deserialize_with = "CardId::deserialize_as_written")]
    pub card: CardId,
    pub board: String,
    pub branch: String,
    pub path: PathBuf,
    pub common_dir: PathBuf,
    pub base_remote: String,
    pub base_ref: String,
    pub base_oid: String,
    pub state: State,
    pub origin: Origin,
    pub reason: Reason,
    pub created_at: String,
    pub updated_at: String,
    pub config_fingerprint: String,
    #[serde(default)]
    pub links: Vec<String>,
    #[serde(default)]
    pub ports: Vec<u16>,
    /// What the copy step copied into the tree (paths relative to it), and how (`clone`, `copy`,
    /// `mixed`); empty when nothing was copied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub copy_method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_hook: Option<LastHook>,
    /// The prepare cache's part in the last preparation; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare_cache: Option<PrepareCache>,
}

/// How the last preparation used the prepare cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrepareCache {
    /// The cache key (64 hex digits).
    pub key: String,
    /// `hit` (outputs cloned from the cache) or `miss` (the hook made them).
    pub outcome: String,
}

/// What reading a record found.
#[derive(Debug)]
pub enum Loaded {
    Absent,
    Parsed(Box<Record>),
    /// The file exists but does not parse: the message says why.
    Malformed(String),
}

/// The record's path inside an admin dir.
pub fn path_in(admin: &Path) -> PathBuf {
    admin.join(FILE_NAME)
}

/// The largest record read: far above any real one (its lists name links, ports and copies).
const MAX_RECORD_BYTES: u64 = 4 * 1024 * 1024;

/// Read the record of the worktree administered in `admin`.
pub fn load(admin: &Path) -> Loaded {
    // Read without blocking and bounded: a FIFO or a huge file planted as the record is
    // malformed (fail closed), never a hang.
    let read = crate::sys::read_bounded(&path_in(admin), MAX_RECORD_BYTES).and_then(|b| {
        b.map(|b| String::from_utf8(b).map_err(std::io::Error::other))
            .transpose()
    });
    match read {
        Ok(None) => Loaded::Absent,
        Err(e) => Loaded::Malformed(format!(
            "cannot read {}",
            crate::sys::path_then_why(&path_in(admin), &e)
        )),
        Ok(Some(text)) => match parse(&text) {
            Ok(r) => Loaded::Parsed(Box::new(r)),
            Err(e) => Loaded::Malformed(format!("{}: {e}", path_in(admin).display())),
        },
    }
}

/// Why a record's text is not a record kardwt acts on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    /// Not TOML of the record's shape: the decoder's words.
    #[error("{0}")]
    Toml(String),
    #[error("unsupported schema {0} (this kardwt reads schema 1)")]
    Schema(u32),
    /// Its base names a remote or ref git would take as something else.
    #[error("{0}")]
    Base(crate::config::NameError),
    /// Its card is not a card id (a tampered record): the card as shown, and why.
    #[error(
        "its card '{0}' is not a valid card id ({1}): the record was changed by hand or tampered \
         with"
    )]
    Card(String, String),
}

/// Parse a record's text; a schema other than 1 is refused.
pub fn parse(text: &str) -> Result<Record, RecordError> {
    let r: Record = toml::from_str(text).map_err(|e| RecordError::Toml(e.message().to_owned()))?;
    if r.schema != 1 {
        return Err(RecordError::Schema(r.schema));
    }
    // Its base is handed to git later: a tampered one is never used.
    crate::config::check_recorded_base(&r.base_remote, &r.base_ref).map_err(RecordError::Base)?;
    // Its card names branches, directories and locks, and is printed for shells to complete:
    // one that is not an id is never acted on, nor shown raw.
    if let Some(why) = crate::ground::card::why_invalid(&r.card) {
        return Err(RecordError::Card(
            crate::ground::quote::shown(&r.card, 40),
            why.to_owned(),
        ));
    }
    Ok(r)
}

/// The record's temporary in `admin` written and on disk, for the caller to put in place
/// ([`crate::sys::Staged::commit`]: a rename, so a symlink planted as the record is
/// replaced, never written through). Only [`crate::state::write`] writes records, so
/// that the card's claim is completed with each.
pub(crate) fn stage(admin: &Path, record: &Record) -> Result<crate::sys::Staged> {
    let text = toml::to_string(record).context("could not serialize the record")?;
    crate::sys::stage_atomic(admin, FILE_NAME.as_ref(), text.as_bytes(), true)
        .with_context(|| format!("could not write the record {}", path_in(admin).display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record {
            schema: 1,
            card: CardId::parse("42").unwrap(),
            board: String::new(),
            branch: "card/42".into(),
            path: "/w/card-42".into(),
            common_dir: "/r/.git".into(),
            base_remote: "origin".into(),
            base_ref: "refs/heads/main".into(),
            base_oid: "a".repeat(40),
            state: State::Ready,
            origin: Origin::Add,
            reason: Reason::Create,
            created_at: crate::sys::rfc3339(0),
            updated_at: crate::sys::rfc3339(0),
            config_fingerprint: "sha256:00".into(),
            links: vec![".env".into()],
            copies: Vec::new(),
            copy_method: String::new(),
            ports: vec![],
            prepare_cache: None,
            last_hook: Some(LastHook {
                phase: "prepare".into(),
                exit_code: 0,
                duration_ms: 3,
                killed: None,
                cap_seconds: None,
            }),
        }
    }

    #[test]
    fn round_trips_through_toml() {
        let r = sample();
        let text = toml::to_string(&r).unwrap();
        assert!(text.contains("state = \"ready\""), "{text}");
        // The card is written as the string it is, as before it had a type of its own.
        assert!(text.starts_with("schema = 1\ncard = \"42\"\n"), "{text}");
        assert!(text.contains("[last_hook]"), "{text}");
        assert_eq!(parse(&text).unwrap(), r);
    }

    #[test]
    fn refuses_other_schemas_and_garbage() {
        let text = toml::to_string(&sample())
            .unwrap()
            .replace("schema = 1", "schema = 2");
        assert_eq!(parse(&text).unwrap_err(), RecordError::Schema(2));
        assert!(parse("card = ").is_err());
        assert!(parse(&toml::to_string(&sample()).unwrap().replace("ready", "done")).is_err());
    }

    #[test]
    fn refuses_a_card_that_is_not_an_id() {
        for card in ["$(touch x)", "a;touch x", "", "-x", "a\nb", "a\u{1b}[2J"] {
            let mut r = sample();
            r.card = CardId::as_written(card.into());
            let err = parse(&toml::to_string(&r).unwrap()).unwrap_err();
            assert!(matches!(err, RecordError::Card(..)), "{card:?}: {err}");
            assert!(!err.to_string().contains('\u{1b}'), "{err}");
        }
    }
}
