//! The strict leaves of the schema: each type reads one scalar node and refuses any other
//! kind ("expected X, found Y") or value (naming the allowed ones), quoting what it found
//! with `quote`. The enums of the model are read here too.
use std::path::{Path, PathBuf};

use super::model::{CheckoutMode, CopyMethod, EnvSharing, OnCacheHit, SkillsSharing};
use super::names::{check_branch_ref, check_remote_name};
use super::node_error::NodeError;
use super::read::{strict, wrong, Node, Shape};

/// The lowest port kardwt hands out: below are the system's.
const MIN_PORT: u16 = 1024;

/// Declares leaf types, each read from one scalar node by a `fn(Node) -> Result<T, NodeError>`.
macro_rules! leaves {
    ($($(#[$doc:meta])* $name:ident($ty:ty) = $read:expr;)*) => {$(
        $(#[$doc])*
        pub(super) struct $name(pub(super) $ty);

        impl Shape<'_> for $name {
            fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
                ($read)(node).map($name)
            }
        }

        strict!($name);
    )*};
}

leaves! {
    /// A non-empty string.
    Name(String) = nonempty;
    /// A remote name that cannot be read as an option.
    Remote(String) = |node| checked(nonempty(node)?, check_remote_name);
    /// A full branch ref, `refs/heads/…`.
    BranchRef(String) = |node| checked(text(node, "a string")?, check_branch_ref);
    /// A non-empty absolute path.
    AbsPath(PathBuf) = absolute;
    /// A card id.
    Card(String) = |node| checked(nonempty(node)?, |c: &str| {
        crate::ground::card::CardId::parse(c).map(drop).map_err(|fail| fail.message)
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
    /// `s3://<bucket>[/<prefix>]`: the bucket and the prefix (no trailing `/`, maybe empty).
    S3Url((String, String)) = |node| {
        let s = nonempty(node)?;
        s3_url(&s).map_err(|why| NodeError::Check { why: why.into(), value: s })
    };
    /// An `http://` or `https://` URL naming a host (and port) only.
    EndpointUrl(String) = |node| {
        let s = nonempty(node)?;
        if s.contains('@') {
            // Never quoted: it may hold a password.
            return Err(NodeError::Wrong {
                expected: "an endpoint without a user or password (credentials come from \
                           the machine, never the rules)".into(),
                found: "a URL holding one (not shown)".into(),
            });
        }
        checked(s, endpoint).map(|e| e.trim_end_matches('/').to_owned())
    };
    /// A region's name: lowercase letters, digits and `-`.
    Region(String) = |node| checked(nonempty(node)?, |r: &str| {
        if r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            Ok(())
        } else {
            Err("not a region (lowercase letters, digits and '-', like us-east-1 or auto)")
        }
    });
}

/// The bucket and prefix of `s3://<bucket>[/<prefix>]`, or why not.
fn s3_url(s: &str) -> Result<(String, String), &'static str> {
    let rest = s
        .strip_prefix("s3://")
        .ok_or("not an s3:// URL (s3://<bucket>/<prefix>)")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let ends_ok = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && ends_ok(bucket.bytes().next())
        && ends_ok(bucket.bytes().last());
    if !bucket_ok {
        return Err("not a bucket name (3 to 63 lowercase letters, digits, '.' and '-')");
    }
    let prefix = prefix.trim_end_matches('/');
    let prefix_ok = prefix.is_empty()
        || prefix.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    if !prefix_ok {
        return Err("the prefix may hold only letters, digits, '.', '_', '-' and single '/'");
    }
    Ok((bucket.to_owned(), prefix.to_owned()))
}

/// An endpoint URL: `http(s)://host[:port]`, no user, path, query or fragment.
fn endpoint(s: &str) -> Result<(), &'static str> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or("not an http:// or https:// URL")?;
    let host = rest.strip_suffix('/').unwrap_or(rest);
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
    {
        return Err("must name a host and port only (no path, query or fragment)");
    }
    Ok(())
}

fn text(node: Node<'_>, expected: &str) -> Result<String, NodeError> {
    match node {
        Node::Str(s) => Ok(s.to_owned()),
        other => Err(wrong(expected, &other)),
    }
}

fn nonempty(node: Node<'_>) -> Result<String, NodeError> {
    let s = text(node, "a string")?;
    if s.is_empty() {
        return Err(NodeError::Empty);
    }
    Ok(s)
}

/// `value` when `check` passes; else why not, quoting the value.
fn checked<E: std::fmt::Display>(
    value: String,
    check: impl Fn(&str) -> Result<(), E>,
) -> Result<String, NodeError> {
    match check(&value) {
        Ok(()) => Ok(value),
        Err(why) => Err(NodeError::Check {
            why: why.to_string(),
            value,
        }),
    }
}

fn absolute(node: Node<'_>) -> Result<PathBuf, NodeError> {
    let s = nonempty(node)?;
    if !Path::new(&s).is_absolute() {
        return Err(NodeError::NotAbsolute(s));
    }
    Ok(PathBuf::from(s))
}

fn relative(node: Node<'_>) -> Result<PathBuf, NodeError> {
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
        return Err(NodeError::NotInside(s));
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
) -> Result<T, NodeError> {
    let (low, high) = (min.into(), max.into());
    match node {
        Node::Int(n) if n < low => Err(NodeError::TooSmall { low, n }),
        Node::Int(n) if n > high => Err(NodeError::TooLarge { high, n }),
        Node::Int(n) => T::try_from(n).map_err(|_| NodeError::OutOfRange),
        Node::Big(digits) => Err(NodeError::BigInteger(digits)),
        other => Err(wrong("an integer", &other)),
    }
}

/// One of `allowed`, by name.
fn choice<T: Copy>(node: Node<'_>, allowed: &[(T, &str)]) -> Result<T, NodeError> {
    let names: Vec<&str> = allowed.iter().map(|(_, name)| *name).collect();
    let names = names.join(", ");
    let s = text(node, &format!("one of {names}"))?;
    match allowed.iter().find(|(_, name)| *name == s) {
        Some((value, _)) => Ok(*value),
        None => Err(NodeError::UnknownValue {
            value: s,
            allowed: names,
        }),
    }
}

impl Shape<'_> for CheckoutMode {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        choice(
            node,
            &[(Self::Full, "full"), (Self::Delegated, "delegated")],
        )
    }
}

impl Shape<'_> for EnvSharing {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        choice(node, &[(Self::Disabled, "disabled"), (Self::Link, "link")])
    }
}

impl Shape<'_> for SkillsSharing {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        choice(
            node,
            &[(Self::Fallback, "fallback"), (Self::Disabled, "disabled")],
        )
    }
}

impl Shape<'_> for CopyMethod {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
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

impl Shape<'_> for OnCacheHit {
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        choice(node, &[(Self::Skip, "skip"), (Self::Run, "run")])
    }
}

strict!(
    CheckoutMode,
    EnvSharing,
    SkillsSharing,
    CopyMethod,
    OnCacheHit
);
