//! The errors of the rules file, typed: each carries the file, and a refusal its key path and
//! the line and column of the node at fault. All become usage errors (exit 2) in one place,
//! `From<ConfigError> for Fail`.
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::ground::error::{Code, Kind};

#[derive(Debug, Error)]
pub(super) enum ConfigError {
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
    /// Flow collections too deep to scan in bounded time.
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

/// Why hooks live beneath `helpers.stable_root`, outside every worktree (said by every refusal
/// about it).
pub(crate) const STABLE_ROOT_WHY: &str = "the rules come from the base, and the worktree being \
     prepared is not trusted to supply the program that prepares it";

/// How to set `helpers.stable_root` for the `hook` (`prepare`, `cleanup`) whose program would
/// be `example` (pure): what to write in the rules file.
pub(crate) fn stable_root_howto(example: &Path, hook: &str) -> String {
    format!(
        "install the hook there and name it by absolute path, e.g. \
         `helpers: {{stable_root: {}}}` and `{hook}: {{argv: [{}]}}`",
        example.parent().unwrap_or(example).display(),
        example.display()
    )
}

/// Every rules error is a usage error (exit 2).
impl Kind for ConfigError {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        match self {
            ConfigError::TooDeep { .. } => vec![
                "write deep structures in block style, or move them out of the rules file".into(),
            ],
            ConfigError::Invalid { key, .. } if key.ends_with("helpers.stable_root") => vec![
                format!(
                    "hooks run only from beneath helpers.stable_root, an absolute directory \
                     outside every worktree: {STABLE_ROOT_WHY}"
                ),
                stable_root_howto(
                    Path::new("/usr/local/libexec/project-agent/prepare"),
                    "prepare",
                ),
                "or, for a team, commit the scripts and name their directory \
                 (`helpers: {from_repository: tools/kardwt}` and \
                 `prepare: {argv: [tools/kardwt/prepare]}`); each machine runs git kardwt trust once"
                    .into(),
            ],
            ConfigError::Invalid { .. } | ConfigError::Parser { .. } => Vec::new(),
        }
    }
}
