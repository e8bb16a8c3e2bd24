//! Who signs the shared cache's manifests, per user of this machine, beside the trusted helpers
//! (`${XDG_DATA_HOME:-$HOME/.local/share}/git-kardwt/`, held to the same rules: directories of
//! this user's that no one else may write): this user's own signing key, an ed25519 key made on
//! first use (`signing/cache-ed25519`, 64 hex digits, readable by the user alone), and the
//! signers this user trusts (`signers/<public key in hex>`, one file each, made by
//! `git kardwt trust --signer`). A signer is trusted for every repository of this user; its own
//! key is trusted too. A key is shown and given as `ed25519:<64 hex digits>`.
use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::ground::error::{Code, Fail, Kind};
use crate::sandbox::{data_home, safe_dir};

/// How a key is written: `ed25519:` and its 32 bytes in hex.
const SCHEME: &str = "ed25519:";

/// What stops a signer from being trusted, or this user's key from being made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0} is not a signer's public key (ed25519: and 64 hex digits)")]
    NotAKey(String),
    #[error(
        "neither XDG_DATA_HOME nor HOME is set to an absolute directory: no place for signing keys"
    )]
    NoHome,
}

impl Kind for KeyError {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        match self {
            KeyError::NotAKey(_) => vec![
                "on the machine that writes the cache, git kardwt trust --public-key prints its key: give that line whole".into(),
            ],
            KeyError::NoHome => vec!["set HOME (or XDG_DATA_HOME) to your home directory".into()],
        }
    }
}

/// `ed25519:<hex>`.
pub fn show(key: &VerifyingKey) -> String {
    format!("{SCHEME}{}", super::sigv4::hex(key.as_bytes()))
}

/// The key `text` names (`ed25519:<64 hex digits>`); `None` when it names none.
pub fn parse(text: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = unhex(text.trim().strip_prefix(SCHEME)?)?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// `<data>/git-kardwt`, checked as the helpers' store is.
fn home() -> Result<PathBuf, Fail> {
    let dir = data_home()
        .ok_or_else(|| Fail::from(KeyError::NoHome))?
        .join("git-kardwt");
    safe_dir(&dir, 0o002)?;
    Ok(dir)
}

/// `<data>/git-kardwt/<name>`, made (0700) where missing when `create`; checked safe.
fn sub(name: &str, create: bool) -> Result<PathBuf> {
    let dir = home()?.join(name);
    if create {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    safe_dir(&dir, 0o022)?;
    Ok(dir)
}

const OWN: &str = "cache-ed25519";

/// This user's signing key; made first when there is none and `create` says so (`None` when
/// there is none and it is not made).
pub fn own(create: bool) -> Result<Option<SigningKey>> {
    let dir = sub("signing", create)?;
    let path = dir.join(OWN);
    if let Some(key) = read_own(&path)? {
        return Ok(Some(key));
    }
    if !create {
        return Ok(None);
    }
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .context("cannot read random bytes for a signing key")?;
    // Written whole under a temporary name, then linked into place: two first uses at once
    // keep one key, the one linked first.
    let tmp = dir.join(format!(".{OWN}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    let written = file
        .write_all(format!("{}\n", super::sigv4::hex(&seed)).as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            std::fs::hard_link(&tmp, &path).or_else(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(e),
            })
        });
    let _ = std::fs::remove_file(&tmp);
    written.with_context(|| format!("cannot write {}", path.display()))?;
    read_own(&path)?
        .with_context(|| format!("{} vanished", path.display()))
        .map(Some)
}

/// The key at `path`, `None` when there is no file; an error when it is not this user's alone
/// or not a key.
fn read_own(path: &Path) -> Result<Option<SigningKey>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.is_file()
        || meta.uid() != rustix::process::geteuid().as_raw()
        || meta.mode() & 0o077 != 0
    {
        anyhow::bail!(
            "the signing key {} must be a regular file of yours that no one else may read or write",
            path.display()
        );
    }
    let text = crate::sys::read_bounded(path, 4096)?
        .with_context(|| format!("{} is too large for a key", path.display()))?;
    let seed: [u8; 32] = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| unhex(t.trim()))
        .and_then(|b| b.try_into().ok())
        .with_context(|| format!("{} does not hold a signing key", path.display()))?;
    Ok(Some(SigningKey::from_bytes(&seed)))
}

/// The public keys whose signatures this user accepts: the signers trusted, and its own.
pub fn trusted() -> Result<BTreeSet<[u8; 32]>> {
    let mut keys = BTreeSet::new();
    if let Some(own) = own(false)? {
        keys.insert(own.verifying_key().to_bytes());
    }
    let dir = sub("signers", false)?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(key) = name.to_str().and_then(|n| parse(&format!("{SCHEME}{n}"))) else {
            continue;
        };
        if e.file_type().is_ok_and(|t| t.is_file()) {
            keys.insert(key.to_bytes());
        }
    }
    Ok(keys)
}

/// Trust the signer `key` (given as shown); `dry_run` writes nothing. Whether it was trusted
/// already, and where it is kept.
pub fn trust(key: &str, dry_run: bool) -> Result<(bool, PathBuf)> {
    let key = parse(key).ok_or_else(|| {
        let shown: String = key.chars().take(80).collect();
        Fail::from(KeyError::NotAKey(
            crate::ground::quote::visible(&shown).into_owned(),
        ))
    })?;
    let already = trusted()?.contains(key.as_bytes());
    let dir = sub("signers", !dry_run && !already)?;
    let path = dir.join(super::sigv4::hex(key.as_bytes()));
    if !dry_run && !already {
        let said = format!("trusted_at = \"{}\"\n", crate::sys::now());
        match crate::sys::write_atomic_new(
            &dir,
            path.file_name().unwrap_or_default(),
            said.as_bytes(),
        ) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
        }
    }
    Ok((already, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_read_back_as_shown_and_nothing_else_is_a_key() {
        let key = SigningKey::from_bytes(&[7; 32]).verifying_key();
        let shown = show(&key);
        assert!(
            shown.starts_with("ed25519:") && shown.len() == 8 + 64,
            "{shown}"
        );
        assert_eq!(parse(&shown), Some(key));
        assert_eq!(parse(&format!(" {shown}\n")), Some(key));
        for bad in [
            &shown[8..],
            &shown[..shown.len() - 2],
            &format!("{shown}00"),
            &shown.replace("ed25519:", "rsa:"),
            &format!("ed25519:{}", "zz".repeat(32)),
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
