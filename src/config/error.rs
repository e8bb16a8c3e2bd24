//! The errors of the rules file, typed: each carries the file, and a refusal its key path and
//! the line and column of the node at fault. All become usage errors (exit 2) in one place,
//! `From<ConfigError> for Fail`.
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::error::{usage, Fail};

#[derive(Debug, Error)]
pub enum ConfigError {
    /// A value, key or combination the schema refuses: `<file>: <key>: <msg>` and, where the
    /// node is known, ` at line L column C`.
    #[error("{}", invalid(file, key, msg, at))]
    Invalid {
        file: PathBuf,
        /// The key path (`worktree.prepare.argv[1]`); empty for the document itself.
        key: String,
        msg: String,
        at: Option<yaml_serde::Location>,
    },
    /// The YAML parser's own error (syntax, anchors, several documents), located in `msg`.
    #[error("{}: {msg}", file.display())]
    Parser { file: PathBuf, msg: String },
    /// Flow collections too deep to scan in bounded time (SPEC R-TRUST 2).
    #[error(
        "{}: flow collections ([…] or {{…}}) nest too deeply for the file's size to be \
         decoded in bounded time",
        file.display()
    )]
    TooDeep { file: PathBuf },
}

/// How [`ConfigError::Invalid`] prints.
fn invalid(file: &Path, key: &str, msg: &str, at: &Option<yaml_serde::Location>) -> String {
    let mut text = if key.is_empty() {
        format!("{}: {msg}", file.display())
    } else {
        format!("{}: {key}: {msg}", file.display())
    };
    if let Some(loc) = at {
        text.push_str(&format!(" at line {} column {}", loc.line(), loc.column()));
    }
    text
}

impl From<ConfigError> for Fail {
    fn from(err: ConfigError) -> Fail {
        let fail = usage(err.to_string());
        match err {
            ConfigError::TooDeep { .. } => fail
                .hint("write deep structures in block style, or move them out of the rules file"),
            ConfigError::Invalid { .. } | ConfigError::Parser { .. } => fail,
        }
    }
}
