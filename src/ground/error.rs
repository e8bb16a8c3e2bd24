//! Error kinds of the contract and how they print: `error:`, `caused by:`, `hint:`.
//!
//! Commands return `anyhow::Result`; an error that carries a [`Fail`] anywhere in its chain exits
//! with that kind's code, anything else with 1 (failed). A [`Fail`] can wrap its cause
//! ([`Fail::caused_by`], [`Fail::wrap`]): the cause stays in the chain (printed as `caused by:`,
//! its hints kept) instead of becoming part of a string.
//!
//! Each domain names its errors in a `thiserror` enum that implements [`Kind`]: the variant fixes
//! the exit code and the hints, and the one conversion `Fail::from` carries them, the typed error
//! kept inside so a caller or a test matches the variant ([`Fail::kind`], [`kind_of`]) instead of
//! a substring. In a function returning `anyhow::Result`, convert with `Fail::from` before `?`
//! or `into()`: anyhow would otherwise take the enum as a plain error, which exits 1.
use std::fmt;

/// The exit codes of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 1: failed (verification, dirty tree refused, doctor found problems, git failed).
    Failed = 1,
    /// 2: usage or configuration error.
    Usage = 2,
    /// 3: refused, fail closed (foreign or malformed path, unseeded worktree for `add`).
    Refused = 3,
    /// 4: a hook failed or was refused at run time.
    Hook = 4,
    /// 5: the action deadline passed.
    Deadline = 5,
    /// 129, 130, 143: SIGHUP, SIGINT or SIGTERM stopped the action, which was rolled back
    /// (128 + the signal, as a shell reports it; see `sys/signals.rs`).
    Hangup = 129,
    Interrupt = 130,
    Terminate = 143,
}

/// An error with a contract exit code and the hints that tell the user how to proceed.
#[derive(Debug)]
pub struct Fail {
    pub code: Code,
    pub message: String,
    pub hints: Vec<String>,
    /// The error this one wraps, kept whole (its own [`Fail`], code and chain included).
    pub source: Option<anyhow::Error>,
    /// The typed error this one was made from, if any: its message is `message`, its source
    /// this error's source.
    kind: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// A domain's typed error: its variant fixes the exit code and the hints.
pub trait Kind: std::error::Error + Send + Sync + 'static {
    fn code(&self) -> Code;
    fn hints(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The one conversion of every typed error into the [`Fail`] that carries its code and hints.
impl<E: Kind> From<E> for Fail {
    fn from(kind: E) -> Fail {
        Fail {
            code: kind.code(),
            message: kind.to_string(),
            hints: kind.hints(),
            source: None,
            kind: Some(Box::new(kind)),
        }
    }
}

/// The exit code of an error that wraps `cause`: the cause's own when it carries one (a lock
/// deadline stays 5), else `fallback`.
pub fn code_or(cause: &anyhow::Error, fallback: Code) -> Code {
    code_of(cause).unwrap_or(fallback)
}

/// The first typed error of kind `K` in the chain, if any.
pub fn kind_of<K: Kind>(err: &anyhow::Error) -> Option<&K> {
    err.chain().find_map(|e| {
        e.downcast_ref::<Fail>()
            .and_then(Fail::kind::<K>)
            .or_else(|| e.downcast_ref::<K>())
    })
}

impl Fail {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Fail {
            code,
            message: message.into(),
            hints: Vec::new(),
            source: None,
            kind: None,
        }
    }
    /// The typed error this one was made from, when it is a `K`.
    pub fn kind<K: Kind>(&self) -> Option<&K> {
        self.kind.as_ref()?.downcast_ref::<K>()
    }
    /// Wrap `cause` with a message, keeping the cause's exit code when it carries one
    /// (a lock deadline stays 5), else `fallback`.
    pub fn wrap(fallback: Code, message: impl Into<String>, cause: anyhow::Error) -> Self {
        let code = code_of(&cause).unwrap_or(fallback);
        Fail::new(code, message).caused_by(cause)
    }
    /// Keep `cause` as this error's source.
    pub fn caused_by(mut self, cause: anyhow::Error) -> Self {
        self.source = Some(cause);
        self
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        if let Some(kind) = &self.kind {
            return kind.source();
        }
        self.source
            .as_ref()
            .map(|e| -> &(dyn std::error::Error + 'static) { e.as_ref() })
    }
}

/// A usage or configuration error (exit 2).
pub fn usage(message: impl Into<String>) -> Fail {
    Fail::new(Code::Usage, message)
}

/// A plain failure (exit 1).
pub fn failed(message: impl Into<String>) -> Fail {
    Fail::new(Code::Failed, message)
}

/// The code of the first [`Fail`] in the chain, if any.
pub fn code_of(err: &anyhow::Error) -> Option<Code> {
    err.chain()
        .find_map(|e| e.downcast_ref::<Fail>())
        .map(|f| f.code)
}

/// The exit code an error chain maps to: the first [`Fail`] found, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    code_of(err).unwrap_or(Code::Failed) as i32
}

/// Whether the chain holds a broken pipe: our stdout's reader went away, nothing to report.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Render an error chain the way git and jj do: the head, its causes, then the hints.
pub fn render(err: &anyhow::Error) -> String {
    let mut out = format!("error: {err}\n");
    let mut hints = Vec::new();
    if let Some(f) = err.downcast_ref::<Fail>() {
        hints.extend(f.hints.iter().cloned());
    }
    for cause in err.chain().skip(1) {
        out.push_str(&format!("caused by: {cause}\n"));
        if let Some(f) = cause.downcast_ref::<Fail>() {
            hints.extend(f.hints.iter().cloned());
        }
    }
    for h in hints {
        out.push_str(&format!("hint: {h}\n"));
    }
    out
}

/// An argument-parsing error worded as kardwt words every other (pure), clap's facts kept:
/// its `error:` line with the indented details after it becomes the message; each `tip:`, the
/// `Usage:` line and where to read more become hints. A usage error (exit 2).
pub fn from_clap(text: &str) -> Fail {
    let mut message = String::new();
    let mut details = Vec::new();
    let mut tips = Vec::new();
    let mut usage_line = None;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("For more information") {
            continue;
        }
        if let Some(m) = t.strip_prefix("error: ") {
            message = m.to_owned();
        } else if let Some(tip) = t.strip_prefix("tip: ") {
            tips.push(tip.to_owned());
        } else if let Some(u) = t.strip_prefix("Usage: ") {
            usage_line = Some(u.to_owned());
        } else {
            details.push(t.to_owned());
        }
    }
    if !details.is_empty() {
        let sep = if message.ends_with(':') { " " } else { ": " };
        message = format!("{message}{sep}{}", details.join(", "));
    }
    let mut fail = usage(message);
    for tip in tips {
        fail = fail.hint(tip);
    }
    // The command the usage is of: its words up to the first option or placeholder.
    let command = usage_line.as_deref().map_or("git kardwt".to_owned(), |u| {
        u.split(' ')
            .take_while(|w| !w.starts_with(['[', '<', '-']))
            .collect::<Vec<_>>()
            .join(" ")
    });
    if let Some(u) = usage_line {
        fail = fail.hint(format!("usage: {u}"));
    }
    fail.hint(format!(
        "{command} -h lists its options; git kardwt help shows the manual"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_kardwt_errors_with_their_facts() {
        let f = from_clap(
            "error: unrecognized subcommand 'lsit'\n\n  tip: a similar subcommand exists: 'list'\n\nUsage: git kardwt [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(f.code, Code::Usage);
        assert_eq!(f.message, "unrecognized subcommand 'lsit'");
        assert_eq!(
            f.hints,
            [
                "a similar subcommand exists: 'list'",
                "usage: git kardwt [OPTIONS] <COMMAND>",
                "git kardwt -h lists its options; git kardwt help shows the manual",
            ]
        );
        let f = from_clap(
            "error: the following required arguments were not provided:\n  --path <PATH>\n  <card>\n\nUsage: git kardwt adopt --path <PATH> <card>\n",
        );
        assert_eq!(
            f.message,
            "the following required arguments were not provided: --path <PATH>, <card>"
        );
        assert_eq!(
            f.hints.last().unwrap(),
            "git kardwt adopt -h lists its options; git kardwt help shows the manual"
        );
        let f = from_clap("error: invalid value 'x' for '--grace <SECS>': invalid digit\n");
        assert_eq!(
            f.message,
            "invalid value 'x' for '--grace <SECS>': invalid digit"
        );
    }

    #[test]
    fn code_of_wrapped_fail_is_found() {
        let e =
            anyhow::Error::new(Fail::new(Code::Refused, "foreign")).context("while adding card 9");
        assert_eq!(exit_code(&e), 3);
        let text = render(&e);
        assert!(
            text.starts_with("error: while adding card 9\ncaused by: foreign\n"),
            "{text}"
        );
    }

    #[test]
    fn a_broken_pipe_is_recognised_through_context() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&anyhow::Error::new(pipe).context("writing")));
        assert!(!is_broken_pipe(&anyhow::anyhow!("boom")));
    }

    #[test]
    fn a_wrapped_cause_keeps_its_code_chain_and_hints() {
        let deadline = anyhow::Error::new(Fail::new(Code::Deadline, "lock").hint("wait"))
            .context("while taking the card lock");
        let outer = Fail::wrap(Code::Failed, "could not seed", deadline).hint("retry");
        assert_eq!(outer.code, Code::Deadline);
        let e = anyhow::Error::new(outer);
        assert_eq!(exit_code(&e), 5);
        assert_eq!(
            render(&e),
            "error: could not seed\ncaused by: while taking the card lock\ncaused by: lock\n\
             hint: retry\nhint: wait\n"
        );
        let plain = Fail::wrap(Code::Usage, "bad rules", anyhow::anyhow!("io"));
        assert_eq!(plain.code, Code::Usage);
    }

    /// A typed error as a domain writes one: a plain variant, one with hints, one wrapping a cause.
    #[derive(Debug, thiserror::Error)]
    enum Sample {
        #[error("{0} is foreign")]
        Foreign(String),
        #[error("could not seed")]
        Seed {
            #[source]
            cause: anyhow::Error,
        },
    }

    impl Kind for Sample {
        fn code(&self) -> Code {
            match self {
                Sample::Foreign(_) => Code::Refused,
                Sample::Seed { cause } => code_or(cause, Code::Failed),
            }
        }
        fn hints(&self) -> Vec<String> {
            match self {
                Sample::Foreign(_) => vec!["move it".into()],
                Sample::Seed { .. } => vec!["retry".into()],
            }
        }
    }

    #[test]
    fn a_typed_error_becomes_a_fail_with_its_variants_code_hints_and_cause() {
        let e = anyhow::Error::new(Fail::from(Sample::Foreign("/x".into())));
        assert_eq!(exit_code(&e), 3);
        assert_eq!(render(&e), "error: /x is foreign\nhint: move it\n");
        assert!(matches!(kind_of::<Sample>(&e), Some(Sample::Foreign(p)) if p == "/x"));

        let deadline = anyhow::Error::new(Fail::new(Code::Deadline, "lock").hint("wait"))
            .context("while taking the card lock");
        let e = anyhow::Error::new(Fail::from(Sample::Seed { cause: deadline }));
        assert_eq!(exit_code(&e), 5);
        assert_eq!(
            render(&e),
            "error: could not seed\ncaused by: while taking the card lock\ncaused by: lock\n\
             hint: retry\nhint: wait\n"
        );
        let e = anyhow::Error::new(Fail::from(Sample::Seed {
            cause: anyhow::anyhow!("io"),
        }))
        .context("while adding");
        assert_eq!(exit_code(&e), 1);
        assert!(matches!(kind_of::<Sample>(&e), Some(Sample::Seed { .. })));
    }

    #[test]
    fn plain_errors_exit_one_and_hints_print_last() {
        assert_eq!(exit_code(&anyhow::anyhow!("boom")), 1);
        let e = anyhow::Error::new(usage("bad id").hint("use letters"));
        assert_eq!(render(&e), "error: bad id\nhint: use letters\n");
    }
}
