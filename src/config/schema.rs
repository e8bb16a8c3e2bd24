//! The schema of the `worktree:` block, on one screen: each block with the keys it allows
//! and the leaf each key holds. Every key may be left out ([`Given`]); an unknown or
//! duplicate key is refused where it is written. Other top-level keys are skipped unread.
use serde::de::{IgnoredAny, MapAccess};
use serde::Deserialize;

use super::leaves::{
    AbsPath, BranchRef, Card, EndpointUrl, EnvName, Flag, Name, Port, Positive, Region, RelPath,
    Remote, S3Url,
};
use super::model::{CheckoutMode, CopyMethod, EnvSharing, OnCacheHit, SkillsSharing};
use super::node_error::NodeError;
use super::read::{describe, strict, Block, Given, Keys, List, Node, Pick, Reader, Shape};

/// The top-level key this crate owns.
pub(super) const ROOT_KEY: &str = "worktree";

/// Declares a block of the schema and the keys it allows (its field names).
macro_rules! block {
    ($(#[$doc:meta])* $name:ident { $($(#[$attr:meta])* $field:ident: $ty:ty = $key:literal,)* }) => {
        $(#[$doc])*
        #[derive(Deserialize, Default)]
        #[serde(default, deny_unknown_fields)]
        pub(super) struct $name {
            $($(#[$attr])* #[serde(rename = $key)] pub(super) $field: Given<$ty>,)*
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
    from_repository: RelPath = "from_repository",
});
block!(RawCheckout {
    mode: CheckoutMode = "mode",
});
block!(RawPrepare {
    argv: List<Name> = "argv",
    on_create: Flag = "on_create",
    on_reuse: Flag = "on_reuse",
    timeout_seconds: Positive = "timeout_seconds",
    inputs: List<RelPath> = "inputs",
    outputs: List<RelPath> = "outputs",
    on_cache_hit: OnCacheHit = "on_cache_hit",
    cache_entries: Positive = "cache_entries",
    cache_remote: Block<RawCacheRemote> = "cache_remote",
});
block!(RawCacheRemote {
    url: S3Url = "url",
    endpoint: EndpointUrl = "endpoint",
    region: Region = "region",
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
    link: List<RelPath> = "link",
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
pub(super) struct Top(pub(super) Option<RawWorktree>);

impl<'de> Shape<'de> for Top {
    // Anything but a mapping is refused here, and the message never quotes the document (a
    // mistaken `kardbrd.yml -> .env` reads as text: `KEY=secret` lines).
    fn scalar(node: Node<'_>) -> Result<Self, NodeError> {
        let found = match node {
            Node::Null => return Ok(Top(None)),
            Node::Str(s) => format!("text ({} characters, not shown)", s.chars().count()),
            other => describe(&other),
        };
        Err(NodeError::Wrong {
            expected: "a mapping at the top level".into(),
            found,
        })
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

strict!(Top);
