//! The fingerprint of the effective configuration, recorded with each worktree so a change
//! of the `worktree:` block (and only of it) shows as a configuration change.
use super::model::Config;

impl Config {
    /// `sha256:<hex>` of the effective configuration, so a change in unrelated top-level keys
    /// of the rules file does not count as a configuration change.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&json);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}
