//! The `worktree:` block of the rules file: the effective configuration everything else reads,
//! and its strict decoding. Pure: [`decode()`] takes text and returns the effective configuration
//! or an error naming the file and the key path.
//!
//! | file | one job |
//! |---|---|
//! | `model` | the effective `Config` tree, its enums and their defaults |
//! | `schema` | the `worktree:` block as typed blocks (`Raw*`) and the keys each allows |
//! | `leaves` | the strict leaves: one scalar node each, refused when of another kind |
//! | `read` | the one visitor over YAML nodes: lists, blocks whose keys are checked as read |
//! | `locate` | the line and column of the node an error across fields names |
//! | `decode` | text in, `Config` out; key paths and line/column of every error |
//! | `check` | the checks across fields and the defaults they fill in |
//! | `error` | `ConfigError`, the typed error, and its conversion into a usage error |
//! | `fingerprint` | the digest of the effective configuration |
//! | `names` | names that reach git and how values are quoted |
mod check;
mod decode;
mod error;
mod fingerprint;
mod leaves;
mod locate;
mod model;
mod names;
mod node_error;
mod read;
mod schema;

pub use decode::decode;
pub(crate) use error::{stable_root_howto, STABLE_ROOT_WHY};
pub(crate) use model::{
    Adoption, CacheRemote, CheckoutMode, Cleanup, Config, CopyMethod, EnvSharing, Helpers,
    OnCacheHit, Ports, Prepare, Sharing, SkillsSharing,
};
pub(crate) use names::{
    check_base_ref, check_branch_ref, check_pr_number, check_recorded_base, is_pr_ref, pr_refs,
    quote, tracking_ref_of, NameError,
};

#[cfg(test)]
mod tests;
