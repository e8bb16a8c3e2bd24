//! The signatures of a shared entry's manifest, so that whoever can write the store cannot hand
//! a reader other outputs: the writer signs the envelope's `body` (the exact bytes, behind a
//! fixed context line so a signature over anything else never counts), and a reader accepts
//! the body only where a signature verifies (strictly) under a key its user trusts. Unsigned,
//! signed only by keys not trusted, or a trusted key's signature that does not verify: each is
//! refused, with the reason in words. Pure: the trusted keys are handed in.
use std::collections::BTreeSet;

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::keys;
use super::sigv4::hex;

/// What a signature covers besides the body: a different domain is never mistaken for this one.
const CONTEXT: &[u8] = b"git-kardwt prepare cache manifest, format 1\n";

/// One signature in the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The signer's public key, `ed25519:<hex>`.
    pub key: String,
    /// 64 bytes, hex.
    pub signature: String,
}

/// Why a body is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("its manifest is not signed")]
    Unsigned,
    #[error("its manifest is signed only by keys this machine does not trust ({0})")]
    Unknown(String),
    #[error("its manifest's signature by {0} does not match it")]
    Mismatch(String),
}

fn message(body: &str) -> Vec<u8> {
    [CONTEXT, body.as_bytes()].concat()
}

/// `key`'s signature over `body`.
pub fn sign(body: &str, key: &SigningKey) -> Signature {
    Signature {
        key: keys::show(&key.verifying_key()),
        signature: hex(&key.sign(&message(body)).to_bytes()),
    }
}

/// Accept `body` when one of `signatures` verifies under a key of `trusted`: that key, shown.
pub fn check(
    body: &str,
    signatures: &[Signature],
    trusted: &BTreeSet<[u8; 32]>,
) -> Result<String, Refused> {
    let message = message(body);
    let mut mismatch = None;
    let mut unknown = Vec::new();
    for s in signatures {
        let Some(key) = keys::parse(&s.key).filter(|k| trusted.contains(k.as_bytes())) else {
            // A signer's name is the store's to choose: only its first digits are shown.
            unknown.push(s.key.chars().take(20).collect::<String>() + "…");
            continue;
        };
        if verifies(&key, &message, &s.signature) {
            return Ok(keys::show(&key));
        }
        mismatch.get_or_insert_with(|| keys::show(&key));
    }
    match (mismatch, unknown.is_empty()) {
        (Some(key), _) => Err(Refused::Mismatch(key)),
        (None, false) => Err(Refused::Unknown(unknown.join(", "))),
        (None, true) => Err(Refused::Unsigned),
    }
}

fn verifies(key: &VerifyingKey, message: &[u8], signature: &str) -> bool {
    let Some(bytes) = unhex64(signature) else {
        return false;
    };
    let sig = ed25519_dalek::Signature::from_bytes(&bytes);
    key.verify_strict(message, &sig).is_ok()
}

fn unhex64(text: &str) -> Option<[u8; 64]> {
    if text.len() != 128 {
        return None;
    }
    let mut out = [0u8; 64];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_keys_signature_over_these_very_bytes_is_accepted() {
        let writer = SigningKey::from_bytes(&[1; 32]);
        let stranger = SigningKey::from_bytes(&[2; 32]);
        let trusted: BTreeSet<[u8; 32]> = [writer.verifying_key().to_bytes()].into();
        let body = r#"{"platform":"linux-x86_64-gnu"}"#;
        let good = sign(body, &writer);
        assert_eq!(
            check(body, std::slice::from_ref(&good), &trusted),
            Ok(keys::show(&writer.verifying_key()))
        );
        // One trusted signature among others suffices.
        let theirs = sign(body, &stranger);
        assert!(check(body, &[theirs.clone(), good.clone()], &trusted).is_ok());
        assert_eq!(check(body, &[], &trusted), Err(Refused::Unsigned));
        assert!(matches!(
            check(body, std::slice::from_ref(&theirs), &trusted),
            Err(Refused::Unknown(_))
        ));
        // The body altered under the old signature; the signature altered; a signature by
        // another key under the trusted key's name.
        let altered = body.replace("x86_64", "aarch64");
        assert!(matches!(
            check(&altered, std::slice::from_ref(&good), &trusted),
            Err(Refused::Mismatch(_))
        ));
        let mut flipped = good.clone();
        flipped.signature.replace_range(
            0..2,
            if &good.signature[..2] == "00" {
                "01"
            } else {
                "00"
            },
        );
        assert!(matches!(
            check(body, &[flipped], &trusted),
            Err(Refused::Mismatch(_))
        ));
        let forged = Signature {
            key: good.key.clone(),
            signature: theirs.signature.clone(),
        };
        assert!(matches!(
            check(body, &[forged], &trusted),
            Err(Refused::Mismatch(_))
        ));
        // A signature over the body alone (without the context line) does not count.
        let bare = Signature {
            key: good.key.clone(),
            signature: hex(&writer.sign(body.as_bytes()).to_bytes()),
        };
        assert!(check(body, &[bare], &trusted).is_err());
        assert!(matches!(
            check(
                body,
                &[Signature {
                    key: good.key,
                    signature: "zz".into()
                }],
                &trusted
            ),
            Err(Refused::Mismatch(_))
        ));
    }
}
