//! The prepare cache shared through a real S3-compatible server (SeaweedFS on 127.0.0.1): a
//! writer machine's prepare is a reader machine's remote hit, byte for byte; a blob altered on
//! the server and a stopped server are misses (prepare runs, one line says why) leaving no
//! partial entry; credentials never reach the hook, the events or the messages. Two machines
//! are two clones in turn at the same paths (as CI runners are), each with its own home and
//! local cache; the reader trusts the writer's signing key (`remote_signed.rs`: what it refuses).
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::seaweed::{Seaweed, ACCESS_KEY, BUCKET, SECRET_KEY};
use crate::support::{sh_quote, snapshot, Output, TestRepo};

/// The prepare: logs a line, dumps its environment to `<tmp>/hook-env`, builds node_modules.
fn prepare(repo: &TestRepo) -> PathBuf {
    let log = sh_quote(&repo.prepare_log());
    let env = sh_quote(&repo.tmp.join("hook-env"));
    repo.write_helper(
        "prepare",
        &format!(
            "echo ran >> {log}\n\
             env >> {env}\n\
             mkdir -p node_modules/pkg/lib node_modules/.bin node_modules/empty\n\
             cp package-lock.json node_modules/pkg/lock-copy\n\
             printf 'module.exports = 1\\n' > node_modules/pkg/lib/index.js\n\
             printf 'module.exports = 1\\n' > node_modules/pkg/lib/same.js\n\
             printf '#!/bin/sh\\n' > node_modules/.bin/tool && chmod 751 node_modules/.bin/tool\n\
             ln -sf ../pkg/lib/index.js node_modules/.bin/index\n\
             head -c 300000 /dev/urandom > node_modules/pkg/big.bin\n"
        ),
    )
}

/// A reader's `add` of card 1 that misses the store for `why`: within `within`, prepare ran,
/// and one line about the remote says `why`. Its output and how long it took.
fn reader_misses(repo: &TestRepo, why: &str, within: Duration) -> (Output, Duration) {
    let t = Instant::now();
    let out = add(repo, "1", &READER);
    out.expect_code(0);
    let took = t.elapsed();
    assert!(took < within, "took {took:?}");
    assert_eq!(repo.prepare_runs(), ["ran"]);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("remote"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains(why), "{out}");
    (out, took)
}

/// The second machine (after one wrote its entry) trusts the writer's signing key, adds card 2
/// as a reader, and the store's entry is a miss: its own prepare ran. Its output.
pub(super) fn reader_prepares_again(repo: &TestRepo, server: &Seaweed) -> Output {
    trusting_reader(repo, server);
    let out = add(repo, "2", &READER);
    out.expect_code(0);
    assert_eq!(
        repo.prepare_runs(),
        ["ran", "ran"],
        "prepare did not run:\n{out}"
    );
    out
}

/// The writer's public signing key, as `trust --public-key` prints it on the writer.
pub(super) fn writer_key(repo: &TestRepo) -> String {
    let key = repo.kardwt_ok(&repo.base, &["trust", "--public-key"]);
    assert!(
        key.starts_with("ed25519:") && key.trim().len() == 72,
        "{key}"
    );
    key.trim().to_owned()
}

/// Turn the writer's machine into a reader at the same paths ([`another_machine`]) whose rules
/// name `server` and whose user trusts the writer's signing key. Returns where the writer's
/// trees went.
pub(super) fn trusting_reader(repo: &TestRepo, server: &Seaweed) -> PathBuf {
    let key = writer_key(repo);
    let trees = another_machine(repo);
    write_rules(repo, &server.endpoint);
    trust_signer(repo, &key);
    trees
}

/// This machine's user trusts the signer `key`, as a person would.
pub(super) fn trust_signer(repo: &TestRepo, key: &str) {
    let said = repo.kardwt_ok(&repo.base, &["trust", "--signer", key]);
    assert!(said.starts_with("trusted signer ed25519:"), "{said}");
}

/// One machine's setup: the lockfile on origin, the rules naming the server.
fn setup(repo: &TestRepo, server: &Seaweed) {
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", "v1\n"),
        ],
        "lockfile",
    );
    write_rules(repo, &server.endpoint);
}

pub(super) fn write_rules(repo: &TestRepo, endpoint: &str) {
    let script = prepare(repo);
    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n    cache_remote:\n      url: s3://{BUCKET}/team/web\n      endpoint: {endpoint}\n",
        repo.rules_for(&script, false)
    ));
}

/// `git kardwt add <card>` with `env` set, as the machine's user runs it.
pub(super) fn add(repo: &TestRepo, card: &str, env: &[(&str, &str)]) -> Output {
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    repo.spawn_with_env("git", &repo.base, &["kardwt", "add", card], &env)
        .wait(Duration::from_secs(120))
}

/// The writer's credentials, in its home's credentials file (the reader's come from the
/// environment).
fn writer_credentials(repo: &TestRepo) {
    let aws = repo.home.join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        ),
    )
    .unwrap();
}

pub(super) const READER: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
    ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
];

/// Turn this test's machine into another one at the same paths: the writer's base, trees and
/// home moved aside, a fresh clone of origin (no local cache) and an empty home. Returns
/// where the writer's trees went.
pub(super) fn another_machine(repo: &TestRepo) -> PathBuf {
    let aside = repo.tmp.join("writer");
    std::fs::create_dir(&aside).unwrap();
    std::fs::rename(&repo.base, aside.join("base")).unwrap();
    std::fs::rename(repo.root(), aside.join("trees")).unwrap();
    std::fs::rename(&repo.home, aside.join("home")).unwrap();
    std::fs::create_dir(&repo.home).unwrap();
    std::fs::write(repo.home.join(".gitconfig"), "").unwrap();
    repo.git(&repo.tmp, &["clone", "--quiet", "origin.git", "base"]);
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/kardbrd.yml\n");
    std::fs::write(&exclude, text).unwrap();
    aside.join("trees")
}

pub(super) fn prepared(repo: &TestRepo, card: &str) -> String {
    let events = repo.events(Some(card));
    let e = events
        .iter()
        .rev()
        .find(|e| e["event"] == "prepared")
        .unwrap_or_else(|| panic!("no prepared event for {card}: {events:?}"));
    e["outcome"].as_str().unwrap().to_owned()
}

/// The local cache's leftovers of a fetch (temporary entries).
pub(super) fn leftovers(repo: &TestRepo) -> Vec<String> {
    std::fs::read_dir(repo.common_dir().join("kardwt/cache"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

pub(super) fn local_entries(repo: &TestRepo) -> usize {
    std::fs::read_dir(repo.common_dir().join("kardwt/cache"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count()
}

/// The writer's first card: prepare runs and its entry is uploaded. Returns its tree.
pub(super) fn write_one(repo: &TestRepo, server: &Seaweed) -> PathBuf {
    setup(repo, server);
    writer_credentials(repo);
    let out = add(repo, "1", &[("KARDWT_CACHE_WRITE", "1")]);
    out.expect_code(0);
    assert_eq!(repo.prepare_runs(), ["ran"]);
    let said = prepared(repo, "1");
    assert!(
        said.contains("cache: miss") && said.contains("remote: uploaded 4 new files"),
        "{said}\n{out}"
    );
    repo.card_path("1")
}

#[test]
fn a_writers_prepare_is_a_readers_remote_hit_byte_for_byte() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    let one = write_one(&repo, &server);
    let written = snapshot(&one.join("node_modules"));
    assert!(written.len() >= 8, "{written:?}");
    // A second card on the writer is a local hit, and uploads nothing again.
    let out = add(&repo, "2", &[("KARDWT_CACHE_WRITE", "1")]);
    out.expect_code(0);
    assert!(prepared(&repo, "2").starts_with("cache: hit"), "{out}");

    let key = writer_key(&repo);
    let (_, envelope) = stored_manifest(&repo, &server);
    assert_eq!(envelope["signatures"][0]["key"], key.as_str(), "{envelope}");
    let trees = trusting_reader(&repo, &server);
    let t = Instant::now();
    let out = add(&repo, "3", &READER);
    out.expect_code(0);
    assert_eq!(
        repo.prepare_runs(),
        ["ran"],
        "the reader's prepare ran:\n{out}"
    );
    let three = repo.card_path("3");
    assert!(
        snapshot(&three.join("node_modules")) == written,
        "the trees differ"
    );
    assert!(snapshot(&trees.join("card-1/node_modules")) == written);
    let tool = std::fs::metadata(three.join("node_modules/.bin/tool")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&tool.permissions()) & 0o7777,
        0o751
    );
    let said = prepared(&repo, "3");
    assert!(said.starts_with("cache: remote hit"), "{said}");
    let rec = repo.record(&three);
    assert_eq!(rec["prepare_cache"]["outcome"].as_str(), Some("remote hit"));
    assert_eq!(local_entries(&repo), 1, "the fetched entry is kept locally");
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
    repo.kardwt_ok(&repo.base, &["verify", "3"]);
    let shown = repo.kardwt_ok(&repo.base, &["status", "3"]);
    assert!(shown.contains("remote hit"), "{shown}");
    // The next card on the reader is a local hit.
    add(&repo, "4", &READER).expect_code(0);
    assert!(prepared(&repo, "4").starts_with("cache: hit"));
    eprintln!("reader's first card ready in {:?}", t.elapsed());

    // Neither the hook's environment nor the events nor any message hold a credential.
    let hook_env = std::fs::read_to_string(repo.tmp.join("hook-env")).unwrap();
    assert!(hook_env.contains("KARDWT_PHASE=prepare"), "{hook_env}");
    let events =
        std::fs::read_to_string(repo.common_dir().join("kardwt/events.jsonl")).unwrap_or_default();
    let writer_events =
        std::fs::read_to_string(repo.tmp.join("writer/base/.git/kardwt/events.jsonl"))
            .unwrap_or_default();
    assert!(!writer_events.is_empty() && !events.is_empty());
    for text in [&hook_env, &events, &writer_events, &out.stdout, &out.stderr] {
        assert!(
            !text.contains(SECRET_KEY) && !text.contains(ACCESS_KEY) && !text.contains("AWS_"),
            "{text}"
        );
    }
}

#[test]
fn an_altered_blob_is_a_miss_and_prepare_runs() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    // The server now serves other bytes (of the same size) for one file's content, inside
    // the pack that holds it.
    let (pack, at, size) =
        super::remote_packs::in_pack(&repo, &server, "node_modules/pkg/lib/index.js");
    let mut bytes = server.read(&pack);
    assert_eq!(&bytes[at..at + size], b"module.exports = 1\n");
    bytes[at + size - 2] = b'2';
    server.overwrite(&pack, &bytes);

    let out = reader_prepares_again(&repo, &server);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("remote not used"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    // index.js and same.js share the content: the first of them is named.
    assert!(
        lines[0].contains("node_modules/pkg/lib/index.js's content does not match its hash"),
        "{out}"
    );
    let said = prepared(&repo, "2");
    assert!(
        said.contains("cache: miss") && said.contains("does not match"),
        "{said}"
    );
    let two = repo.card_path("2");
    assert_eq!(
        std::fs::read_to_string(two.join("node_modules/pkg/lib/index.js")).unwrap(),
        "module.exports = 1\n"
    );
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
    assert_eq!(
        local_entries(&repo),
        1,
        "only prepare's own entry is stored"
    );
    // The reader's hook ran with the credentials in kardwt's environment: not in the hook's.
    let hook_env = std::fs::read_to_string(repo.tmp.join("hook-env")).unwrap();
    assert_eq!(
        hook_env.matches("KARDWT_PHASE=prepare").count(),
        2,
        "{hook_env}"
    );
    assert!(
        !hook_env.contains(SECRET_KEY) && !hook_env.contains("AWS_"),
        "{hook_env}"
    );
}

#[test]
fn a_stopped_server_is_a_miss_within_seconds() {
    let Some(mut server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    setup(&repo, &server);
    server.stop();
    let (out, _) = reader_misses(&repo, "Connection refused", Duration::from_secs(15));
    assert!(leftovers(&repo).is_empty());
    // Nothing is written without the opt-in either: the writer's warning is not there.
    assert!(!out.stderr.contains("not uploaded"), "{out}");
}

/// Reading needs no opt-in and writing does: a reader's miss uploads nothing.
#[test]
fn a_machine_writes_only_where_its_user_says_so() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    setup(&repo, &server);
    writer_credentials(&repo);
    add(&repo, "1", &[]).expect_code(0);
    let said = prepared(&repo, "1");
    assert!(
        said.contains("none on the remote") && !said.contains("uploaded"),
        "{said}"
    );
    // git config opts in.
    repo.git(&repo.base, &["config", "kardwt.cacheWrite", "true"]);
    let dir = repo.common_dir().join("kardwt/cache");
    std::fs::remove_dir_all(&dir).unwrap();
    add(&repo, "2", &[]).expect_code(0);
    assert!(
        prepared(&repo, "2").contains("remote: uploaded"),
        "{}",
        prepared(&repo, "2")
    );
}

/// The store's name for the blob of the writer's 300 KB `node_modules/pkg/big.bin`.
pub(super) fn big_blob(repo: &TestRepo, server: &Seaweed) -> String {
    let (_, envelope) = stored_manifest(repo, server);
    let body: serde_json::Value = serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
    let big = body["manifest"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "node_modules/pkg/big.bin")
        .unwrap();
    let hash = big["sha256"].as_str().unwrap();
    format!("team/web/blobs/sha256/{}/{hash}", &hash[..2])
}

/// The writer's entry as stored: its manifest's object name and the envelope.
pub(super) fn stored_manifest(repo: &TestRepo, server: &Seaweed) -> (String, serde_json::Value) {
    let key = std::fs::read_dir(repo.common_dir().join("kardwt/cache"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| !n.starts_with('.'))
        .unwrap();
    // The platform as kardwt names it: the C library is musl where its loader is installed.
    let musl = std::fs::read_dir("/lib").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("ld-musl-"))
    });
    let libc = match (std::env::consts::OS, musl) {
        ("linux", true) => "musl",
        ("linux", false) => "gnu",
        _ => "system",
    };
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    let name = format!("team/web/entries/{os}-{arch}-{libc}/{key}.json");
    let bytes = server.read(&name);
    (name, serde_json::from_slice(&bytes).unwrap())
}

#[test]
fn a_manifest_replaced_to_write_outside_the_tree_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let (name, mut envelope) = stored_manifest(&repo, &server);
    let mut body: serde_json::Value =
        serde_json::from_str(envelope["body"].as_str().unwrap()).unwrap();
    let entries = body["manifest"]["entries"].as_array_mut().unwrap();
    let mut evil = entries
        .iter()
        .find(|e| e["path"] == "node_modules/pkg/lib/index.js")
        .unwrap()
        .clone();
    evil["path"] = "node_modules/../../../escaped.js".into();
    entries.push(evil);
    // Signed with the writer's own key, as a writer gone rogue (or its stolen key) would.
    let body = body.to_string();
    envelope["signatures"] = serde_json::json!([super::remote_signed::signature(
        super::remote_signed::writer_secret(&repo),
        &body
    )]);
    envelope["body"] = body.into();
    server.overwrite(&name, envelope.to_string().as_bytes());

    let out = reader_prepares_again(&repo, &server);
    assert!(out.stderr.contains("unsafe or unsorted path"), "{out}");
    for dir in [&repo.tmp, &repo.root(), &repo.base] {
        assert!(!dir.join("escaped.js").exists());
    }
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
}

#[test]
fn a_truncated_blob_is_a_miss() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    write_one(&repo, &server);
    let name = big_blob(&repo, &server);
    let whole = server.read(&name);
    assert_eq!(whole.len(), 300_000);
    server.overwrite(&name, &whole[..1000]);
    let out = reader_prepares_again(&repo, &server);
    assert!(
        out.stderr
            .contains("big.bin's content is truncated (1000 of 300000 bytes)"),
        "{out}"
    );
    assert!(leftovers(&repo).is_empty(), "{:?}", leftovers(&repo));
}

/// A store that accepts connections and never answers costs a bounded wait, then a miss.
#[test]
fn a_silent_store_is_a_miss_within_a_bounded_time() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", "v1\n"),
        ],
        "lockfile",
    );
    write_rules(&repo, &format!("http://127.0.0.1:{port}"));
    let (_, took) = reader_misses(&repo, "did not answer in time", Duration::from_secs(25));
    eprintln!("a silent store cost {took:?}");
}

/// `doctor` asks the store once: it answers (a HEAD of an entry that need not exist), or the
/// finding fails naming the store and why, with what to check; the credentials never shown.
#[test]
fn doctor_says_whether_the_store_answers() {
    let Some(mut server) = Seaweed::start() else {
        return;
    };
    let repo = TestRepo::new();
    setup(&repo, &server);
    let finding = |env: &[(&str, &str)]| {
        let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
        let out = repo
            .spawn_with_env("git", &repo.base, &["kardwt", "doctor", "--json"], &env)
            .wait(Duration::from_secs(60));
        assert!(!out.to_string().contains(SECRET_KEY), "{out}");
        let json = out.json();
        let found = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "prepare.cache_remote")
            .cloned();
        (
            out,
            found.unwrap_or_else(|| panic!("no prepare.cache_remote check: {json:#}")),
        )
    };
    let (out, ok) = finding(&READER);
    assert_eq!(ok["ok"], true, "{out}");
    let detail = ok["detail"].as_str().unwrap();
    assert!(
        detail.contains(BUCKET) && detail.ends_with("answers"),
        "{detail}"
    );
    server.stop();
    let (out, down) = finding(&READER);
    assert_ne!(out.code, 0, "{out}");
    assert_eq!(down["ok"], false, "{out}");
    let detail = down["detail"].as_str().unwrap();
    assert!(detail.contains("does not answer"), "{detail}");
    assert!(
        down["fix"].as_str().unwrap().contains("credentials"),
        "{out}"
    );
}
