//! Strict decoding of the `worktree:` block of the rules file (SPEC R-CFG, R-CFG-STRICT),
//! defaults and cross-field validation. Pure: `decode` takes text and returns the effective
//! configuration or an error naming the file and the key path.
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{usage, Fail};

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
            base: Base { remote: "origin".into(), git_ref: None },
            helpers: Helpers { stable_root: None },
            checkout: Checkout { mode: CheckoutMode::Full },
            prepare: None,
            cleanup: None,
            sharing: Sharing { env: EnvSharing::Disabled, skills: SkillsSharing::Fallback },
            environment: Environment { passthrough: Vec::new() },
            ports: None,
            action_timeout_seconds: 3600,
            adoptions: Vec::new(),
        }
    }
}

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

/// Decode the rules file's text. `file` only names the file in errors.
pub fn decode(file: &Path, text: &str) -> Result<Config, Fail> {
    // Placeholder until the strict decoder lands: an absent block means defaults.
    let doc: serde_yaml::Value = serde_yaml::from_str(text)
        .map_err(|e| usage(format!("{}: {e}", file.display())))?;
    match doc.get("worktree") {
        None => Ok(Config::default()),
        Some(_) => Err(usage(format!("{}: worktree: not supported yet", file.display()))),
    }
}
