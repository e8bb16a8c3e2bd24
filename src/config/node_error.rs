//! Why the rules file's reader refused one node, typed: each variant prints as the message that
//! follows the key path (`worktree.ports.count: expected an integer, found a string ("many")`),
//! and every value it quotes goes through [`quote`], so a mistaken file never prints a secret.
use thiserror::Error;

use super::names::quote;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum NodeError {
    /// A node of another kind than the schema takes there.
    #[error("expected {expected}, found {found}")]
    Wrong { expected: String, found: String },
    #[error("must not be empty")]
    Empty,
    /// A value a check refused (a remote name, a branch ref, a card id, a variable name).
    #[error("{why}, found {}", quote(value))]
    Check { why: String, value: String },
    #[error("must be an absolute path, found {}", quote(.0))]
    NotAbsolute(String),
    #[error(
        "must be a path inside the repository (relative, no `..`, not .git), found {}",
        quote(.0)
    )]
    NotInside(String),
    #[error("must be an integer of at least {low}, found {n}")]
    TooSmall { low: i128, n: i128 },
    #[error("must be at most {high}, found {n}")]
    TooLarge { high: i128, n: i128 },
    #[error("out of range")]
    OutOfRange,
    #[error("integer {} is out of range", quote(.0))]
    BigInteger(String),
    #[error("unknown value {} (allowed values: {allowed})", quote(value))]
    UnknownValue { value: String, allowed: String },
    #[error("duplicate key {}", quote(.0))]
    DuplicateKey(String),
    #[error("unknown key (allowed keys: {allowed})")]
    UnknownKey { allowed: String },
    /// The node a search for a key's location stops at (never shown to the user).
    #[error("here")]
    Here,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_print_as_the_message_after_the_key_path() {
        let wrong = NodeError::Wrong {
            expected: "an integer".into(),
            found: "a string".into(),
        };
        assert_eq!(wrong.to_string(), "expected an integer, found a string");
        let long = "x".repeat(100);
        assert_eq!(
            NodeError::NotAbsolute(long).to_string(),
            format!("must be an absolute path, found \"{}…\"", "x".repeat(40))
        );
        assert_eq!(
            NodeError::TooSmall { low: 1024, n: 80 }.to_string(),
            "must be an integer of at least 1024, found 80"
        );
    }
}
