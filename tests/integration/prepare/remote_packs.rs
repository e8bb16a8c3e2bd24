//! The shared cache's small files travel packed: a few objects named by the hash of their
//! bytes, each holding many files' contents one after the other, listed in the signed manifest.
//! A pack cut short, or a manifest whose pack does not add up (even signed by the writer's own
//! key), is a miss with nothing of the store kept; packs are shared between entries only where
//! their bytes are the same (named by their hash, uploaded once).
use sha2::Digest as _;

use super::remote::{
    add, another_machine, leftovers, local_entries, prepared, reader_prepares_again,
    stored_manifest, trust_signer, trusting_reader, write_one, write_rules, writer_key, READER,
};
use super::remote_signed::{nothing_of_the_store_kept, says_once, signature, writer_secret};
use crate::support::seaweed::Seaweed;
use crate::support::TestRepo;

/// The writer's stored manifest body.
fn body(repo: &TestRepo, server: &Seaweed) -> serde_json::Value {
    let (_, envelope) = stored_manifest(repo, server);
    serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap()
}

/// Where the content of the writer's file `path` is on the store: the pack's object name, and
/// where the content starts in it and its size.
pub(super) fn in_pack(repo: &TestRepo, server: &Seaweed, path: &str) -> (String, usize, usize) {
    let body = body(repo, server);
    let entries = body["manifest"]["entries"].as_array().unwrap();
    let size_of = |hash: &str| {
        entries
            .iter()
            .find(|e| e["sha256"] == hash)
            .map(|e| e["size"].as_u64().unwrap() as usize)
            .unwrap()
    };
    let file = entries.iter().find(|e| e["path"] == path).unwrap();
    let hash = file["sha256"].as_str().unwrap();
    for pack in body["packs"].as_array().unwrap() {
        let mut at = 0;
        for held in pack["holds"].as_array().unwrap() {
            let held = held.as_str().unwrap();
            if held == hash {
                let name = pack["sha256"].as_str().unwrap();
                let object = format!("team/web/packs/sha256/{}/{name}", &name[..2]);
                return (object, at, size_of(held));
            }
            at += size_of(held);
        }
    }
    panic!("{path} is in no pack: {body:#}");
}

#[test]
fn small_files_go_up_packed_under_the_hash_of_their_bytes() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let body = body(&repo, &server);
    let packs = body["packs"].as_array().unwrap();
    // lock-copy, index.js (= same.js) and tool in one pack; big.bin (300 KB) alone.
    assert_eq!(packs.len(), 1, "{body:#}");
    assert_eq!(packs[0]["holds"].as_array().unwrap().len(), 3, "{body:#}");
    let said = prepared(&repo, "1");
    assert!(said.contains("2 objects)"), "{said}");
    let (object, at, size) = in_pack(&repo, &server, "node_modules/pkg/lib/same.js");
    let bytes = server.read(&object);
    assert_eq!(&bytes[at..at + size], b"module.exports = 1\n");
    let name = object.rsplit('/').next().unwrap();
    let hash: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(name, hash);
    assert_eq!(packs[0]["size"].as_u64(), Some(bytes.len() as u64));
}

#[test]
fn a_truncated_pack_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let (object, at, _) = in_pack(&repo, &server, "node_modules/pkg/lib/index.js");
    let whole = server.read(&object);
    server.overwrite(&object, &whole[..at + 3]);
    let out = reader_prepares_again(&repo, &server);
    says_once(
        &out,
        &format!(
            "index.js's content is truncated (its pack {} ended after {} of {} bytes)",
            &object.rsplit('/').next().unwrap()[..12],
            at + 3,
            whole.len()
        ),
    );
    nothing_of_the_store_kept(&repo, "truncated");
}

/// A manifest listing a pack larger than what it holds (re-signed with the writer's own key,
/// as a writer gone rogue would): a miss before anything is fetched.
#[test]
fn a_pack_that_does_not_add_up_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let (object, _, _) = in_pack(&repo, &server, "node_modules/pkg/lib/index.js");
    let whole = server.read(&object);
    let longer = [&whole[..], b"tail"].concat();
    server.overwrite(&object, &longer);
    let (name, mut envelope) = stored_manifest(&repo, &server);
    let mut body = body(&repo, &server);
    body["packs"][0]["size"] = (longer.len() as u64).into();
    let body = body.to_string();
    envelope["signatures"] = serde_json::json!([signature(writer_secret(&repo), &body)]);
    envelope["body"] = body.into();
    server.overwrite(&name, envelope.to_string().as_bytes());
    let out = reader_prepares_again(&repo, &server);
    says_once(&out, "does not add up");
    nothing_of_the_store_kept(&repo, "does not add up");
}

/// Another key whose small files are the same bytes uploads their pack no more (its name is
/// its hash), only the large file whose bytes differ; its reader hits.
#[test]
fn packs_are_shared_between_entries_only_by_their_bytes() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let first = body(&repo, &server)["packs"].clone();
    // Another input (so another key), the same outputs.
    let rules = std::fs::read_to_string(repo.rules_path()).unwrap();
    let other = rules.replace(
        "inputs: [package-lock.json]",
        "inputs: [package-lock.json, .gitignore]",
    );
    assert_ne!(rules, other);
    std::fs::write(repo.rules_path(), other).unwrap();
    add(&repo, "2", &[("KARDWT_CACHE_WRITE", "1")]).expect_code(0);
    let said = prepared(&repo, "2");
    // big.bin is new random bytes; the pack of the small files is the same bytes again.
    assert!(
        said.contains("remote: uploaded 1 new files (300.0 kB, 1 object) and the manifest"),
        "{said}"
    );
    assert_eq!(repo.prepare_runs(), ["ran", "ran"]);
    let key = writer_key(&repo);
    another_machine(&repo);
    write_rules(&repo, &server.endpoint);
    let rules = std::fs::read_to_string(repo.rules_path()).unwrap();
    std::fs::write(
        repo.rules_path(),
        rules.replace(
            "inputs: [package-lock.json]",
            "inputs: [package-lock.json, .gitignore]",
        ),
    )
    .unwrap();
    trust_signer(&repo, &key);
    add(&repo, "3", &READER).expect_code(0);
    assert!(prepared(&repo, "3").starts_with("cache: remote hit"));
    assert_eq!(repo.prepare_runs(), ["ran", "ran"]);
    assert_eq!(local_entries(&repo), 1);
    assert!(leftovers(&repo).is_empty());
    let (_, envelope) = stored_manifest(&repo, &server);
    let second: serde_json::Value =
        serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
    assert_eq!(second["packs"], first);
}

/// An entry of the first format (every file a blob of its own, no packs), as a kardwt before
/// packs wrote it: still a remote hit.
#[test]
fn an_entry_written_before_packs_is_still_read() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    let one = write_one(&repo, &server);
    let (name, mut envelope) = stored_manifest(&repo, &server);
    let mut body = body(&repo, &server);
    // Each small file's content as its own blob, the packs gone from the manifest.
    for e in body["manifest"]["entries"].as_array().unwrap() {
        if e["kind"] == "file" && e["size"].as_u64().unwrap() < 256 << 10 {
            let path = e["path"].as_str().unwrap();
            let hash = e["sha256"].as_str().unwrap();
            let bytes = std::fs::read(one.join(path)).unwrap();
            server.overwrite(
                &format!("team/web/blobs/sha256/{}/{hash}", &hash[..2]),
                &bytes,
            );
        }
    }
    body.as_object_mut().unwrap().remove("packs");
    let body = body.to_string();
    envelope["format"] = 1.into();
    envelope["signatures"] = serde_json::json!([signature(writer_secret(&repo), &body)]);
    envelope["body"] = body.into();
    server.overwrite(&name, envelope.to_string().as_bytes());
    let written = crate::support::snapshot(&one.join("node_modules"));
    trusting_reader(&repo, &server);
    let out = add(&repo, "2", &READER);
    out.expect_code(0);
    assert!(
        prepared(&repo, "2").starts_with("cache: remote hit"),
        "{out}"
    );
    assert_eq!(repo.prepare_runs(), ["ran"], "{out}");
    assert!(crate::support::snapshot(&repo.card_path("2").join("node_modules")) == written);
}
