//! The effective configuration: the `Config` tree every other module reads, its enums, and
//! the defaults that fill in whatever the rules file leaves out. Pure data, no decoding.
use std::path::PathBuf;

use serde::Serialize;

/// `prepare.timeout_seconds` when not written (then clamped to the action timeout).
pub(super) const DEFAULT_PREPARE_TIMEOUT: u64 = 900;
/// `cleanup.timeout_seconds` when not written (then clamped to the action timeout).
pub(super) const DEFAULT_CLEANUP_TIMEOUT: u64 = 120;
/// `prepare.cache_entries` when not written: prepare caches kept per repository.
pub(super) const DEFAULT_CACHE_ENTRIES: u64 = 4;

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
    /// A committed directory (relative to the repository's root) whose scripts each machine
    /// trusts once (`git kardwt trust`); hooks' `argv[0]` then names a file beneath it.
    pub from_repository: Option<PathBuf>,
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
    /// Paths (relative to the tree) whose content decides prepare's result: their blob ids at
    /// the tree's HEAD are part of the cache key.
    pub inputs: Vec<PathBuf>,
    /// Paths (relative to the tree) prepare produces, stored after a successful prepare and
    /// cloned into a later tree with the same key; empty: no cache.
    pub outputs: Vec<PathBuf>,
    /// What a cache hit does with the hook.
    pub on_cache_hit: OnCacheHit,
    /// At most this many cache entries per repository, least recently used dropped.
    pub cache_entries: u64,
    /// An object store the cache is shared through (left out of the fingerprint when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_remote: Option<CacheRemote>,
}

/// `prepare.cache_remote`: an S3-compatible bucket holding prepare-cache entries. Holds no
/// credential: those come from the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheRemote {
    pub bucket: String,
    /// Beneath which every object is stored; empty: the bucket's top.
    pub prefix: String,
    /// `http(s)://host[:port]` of an S3-compatible store (path-style requests); `None`: AWS S3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub region: String,
}

/// `prepare.on_cache_hit`: whether the prepare hook still runs when its outputs came from the
/// cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnCacheHit {
    /// The hook is skipped.
    #[default]
    Skip,
    /// The hook runs, with `KARDWT_CACHE=hit` (for cheap steps that must still run).
    Run,
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
    /// Paths (relative to the base) copied whole into a new worktree.
    pub copy: Vec<PathBuf>,
    /// How `copy` and `.worktreeinclude` files are copied.
    pub copy_method: CopyMethod,
    /// Paths (relative to the base) symlinked whole into each worktree, like the `.env` links
    /// (a large read-only dataset or model cache). Left out of the fingerprint when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<PathBuf>,
}

/// `sharing.copy_method`: how files are copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyMethod {
    /// Clone where the file system can, else copy.
    #[default]
    Auto,
    /// Clone, or fail naming the file system that cannot.
    Clone,
    /// Always an ordinary copy (new blocks).
    Copy,
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
            helpers: Helpers {
                stable_root: None,
                from_repository: None,
            },
            checkout: Checkout {
                mode: CheckoutMode::Full,
            },
            prepare: None,
            cleanup: None,
            sharing: Sharing {
                env: EnvSharing::Disabled,
                skills: SkillsSharing::Fallback,
                copy: Vec::new(),
                copy_method: CopyMethod::Auto,
                link: Vec::new(),
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
