//! Card ids and the names derived from them: branch `card/<id>`, directory
//! `card-<id>`. Pure: validation happens before anything on disk is touched.
use crate::ground::error::{usage, Fail};

/// A validated card id, parsed once where it comes in (the command line, a record) and carried
/// as one from there; written as the string it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct CardId(String);

impl CardId {
    /// Validate `raw` as a card id: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, no `..`, not ending
    /// in `.` or `.lock`.
    pub fn parse(raw: &str) -> Result<CardId, Fail> {
        match why_invalid(raw) {
            None => Ok(CardId(raw.to_owned())),
            Some(why) => Err(usage(format!("invalid card id {raw:?}: {why}")).hint(
                "a card id starts with a letter or digit and holds only letters, digits, '.', '_' \
                 and '-' (at most 128), with no '..' and no trailing '.' or '.lock'",
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The card a record's or claim's file names, as written: only for their readers, which
    /// refuse it next (with their own words) when it is not an id.
    pub(crate) fn as_written(raw: String) -> CardId {
        CardId(raw)
    }

    /// [`CardId::as_written`] as a field's deserializer (`#[serde(deserialize_with)]`).
    pub(crate) fn deserialize_as_written<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<CardId, D::Error> {
        <String as serde::Deserialize>::deserialize(d).map(CardId)
    }

    /// The branch kardwt creates for this card.
    pub fn branch(&self) -> String {
        format!("card/{}", self.0)
    }

    /// The directory name under the worktree root.
    pub fn dir_name(&self) -> String {
        format!("card-{}", self.0)
    }

    /// The card a branch name designates (`card/<x>` means card `x`), if it is a valid id.
    pub fn from_branch(branch: &str) -> Option<CardId> {
        branch
            .strip_prefix("card/")
            .and_then(|id| CardId::parse(id).ok())
    }

    /// Make any string a valid id, deterministically (pure): every character other than
    /// letters, digits, `.`, `_` and `-` becomes `-`, a string not starting with a letter or
    /// digit gets a `w` in front, the result is cut to 128, and what a card id still forbids (`..`,
    /// a trailing `.` or `.lock`) is replaced in place. Used for worktrees created outside
    /// kardwt (their admin dir name stands in for the card; `derive_card` numbers collisions).
    pub fn sanitize(raw: &str) -> CardId {
        let mut s = sanitized_chars(raw, 128);
        loop {
            if s.ends_with(".lock") {
                s.truncate(s.len() - ".lock".len());
                s.push_str("-lock");
            } else if s.ends_with('.') {
                s.pop();
                s.push('-');
            } else {
                break;
            }
        }
        CardId::parse(&s).unwrap_or_else(|_| CardId("worktree".to_owned()))
    }

    /// The card for a runner's worktree name (pure, deterministic, injective): a
    /// name that is a valid id is its own card; any other name is its sanitized form, cut so
    /// the whole fits 128, then `-` and the first 8 hex digits of the SHA-256 of the name as
    /// given. Sanitizing alone would give `feat/login` and `feat-login` one tree.
    pub fn for_name(name: &str) -> CardId {
        if let Ok(id) = CardId::parse(name) {
            return id;
        }
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(name.as_bytes());
        let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        // Ends in a hex digit, so no trailing `.`/`.lock` repair is needed, and `-` after the
        // prefix cannot make a `..`.
        let id = format!("{}-{hex}", sanitized_chars(name, 128 - 1 - hex.len()));
        CardId::parse(&id).unwrap_or_else(|_| CardId(format!("w-{hex}")))
    }
}

/// Every character outside a card id's alphabet becomes `-`, a `w` goes in front of a string not
/// starting with a letter or digit, the result is cut to `max` and `..` becomes `.-` (pure).
fn sanitized_chars(raw: &str, max: usize) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        s.insert(0, 'w');
    }
    // Only ASCII is left, so any byte index is a character boundary.
    s.truncate(max);
    while s.contains("..") {
        s = s.replace("..", ".-");
    }
    s
}

impl std::ops::Deref for CardId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for CardId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for CardId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for CardId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<CardId> for String {
    fn eq(&self, other: &CardId) -> bool {
        *self == other.0
    }
}

impl std::fmt::Display for CardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why `raw` is not a card id, or `None` when it is one.
pub fn why_invalid(raw: &str) -> Option<&'static str> {
    let Some(first) = raw.chars().next() else {
        return Some("it is empty");
    };
    if !first.is_ascii_alphanumeric() {
        return Some("it must start with a letter or a digit");
    }
    if raw.len() > 128 {
        return Some("it is longer than 128 characters");
    }
    if raw
        .chars()
        .any(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Some("it holds a character other than letters, digits, '.', '_' and '-'");
    }
    if raw.contains("..") {
        return Some("it contains '..'");
    }
    if raw.ends_with('.') || raw.ends_with(".lock") {
        return Some("it ends in '.' or '.lock'");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids() {
        for id in ["42", "a", "A-1_b.c", "x.lockx", &"9".repeat(128)] {
            assert!(CardId::parse(id).is_ok(), "{id}");
        }
    }

    #[test]
    fn invalid_ids() {
        for id in [
            "",
            "../x",
            "a b",
            "-rf",
            "x.lock",
            "a/b",
            "a..b",
            "a\nb",
            ".x",
            "_x",
            "x.",
            "ä",
            &"9".repeat(129),
        ] {
            let err = CardId::parse(id).expect_err(id);
            assert_eq!(err.code, crate::ground::error::Code::Usage);
        }
    }

    #[test]
    fn names() {
        let c = CardId::parse("42").unwrap();
        assert_eq!(c.branch(), "card/42");
        assert_eq!(c.dir_name(), "card-42");
        assert_eq!(CardId::from_branch("card/42"), Some(c));
        assert_eq!(CardId::from_branch("feature/42"), None);
        assert_eq!(CardId::from_branch("card/a/b"), None);
    }

    #[test]
    fn sanitize_always_yields_a_valid_id() {
        for raw in ["feature x", "..", "-a", "a.lock", "a.", "", "ü/ß", "a..b"] {
            let id = CardId::sanitize(raw);
            assert!(CardId::parse(id.as_str()).is_ok(), "{raw} -> {id}");
        }
        assert_eq!(CardId::sanitize("feat x").as_str(), "feat-x");
    }

    #[test]
    fn runner_names_never_collide() {
        // Valid ids are their own card.
        for id in [
            "bold-oak-a3f2",
            "feat-login",
            "team-fix.lock-x",
            &"a".repeat(128),
        ] {
            assert_eq!(CardId::for_name(id).as_str(), id);
        }
        // Any other name: sanitized, then `-` and 8 hex digits of its SHA-256.
        assert_eq!(
            CardId::for_name("feat/login").as_str(),
            "feat-login-d668f008"
        );
        assert_eq!(CardId::for_name("").as_str(), "w-e3b0c442");
        let pairs = [
            ("feat/login", "feat-login"),
            ("team/fix.lock", "team-fix.lock"),
            ("team/fix.lock", "team-fix-lock"),
            ("a b", "a-b"),
            ("x.", "x-"),
            ("-x", "w-x"),
        ];
        for (a, b) in pairs {
            assert_ne!(CardId::for_name(a), CardId::for_name(b), "{a} / {b}");
        }
        // Two long names sharing their first 128 characters.
        let long = "z".repeat(128);
        let (a, b) = (format!("{long}/one"), format!("{long}/two"));
        assert_ne!(CardId::for_name(&a), CardId::for_name(&b));
        assert_eq!(CardId::for_name(&a).as_str().len(), 128);
        for raw in [
            "",
            ".",
            "..",
            "x.",
            "x.lock",
            "x.lock.",
            "a..b",
            "feat/x y",
            "日本語",
            "a b\n",
            &"z".repeat(300),
            &format!("{}.lock", "y".repeat(200)),
            &".".repeat(300),
        ] {
            let id = CardId::for_name(raw);
            assert!(CardId::parse(id.as_str()).is_ok(), "{raw:?} -> {id}");
            assert!(id.as_str().len() <= 128, "{raw:?} -> {id}");
            assert_eq!(CardId::for_name(raw), id, "deterministic");
        }
    }
}
