//! Per-worktree ports, against real sockets: `count` ports from `range` per worktree,
//! skipping ports another record holds and ports something else has bound (on 127.0.0.1 or on
//! every address); the ports are recorded, handed to the prepare hook as
//! `KARDWT_PORT`/`KARDWT_PORTS`, shown by `status --json` and `list --json`, freed by `remove`;
//! exhaustion names the range and creates nothing. Every test uses its own range so tests running in parallel do not collide.
use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::support::{sh_quote, TestRepo};

/// `<tmp>/ports.log`: one `<card> <KARDWT_PORT> <KARDWT_PORTS>` line per prepare run.
fn ports_log(repo: &TestRepo) -> PathBuf {
    repo.tmp.join("ports.log")
}

/// Rules with the standard prepare script (which also logs the ports it was handed) and
/// `ports: {count, range: [low, high]}`.
fn rules_with_ports(repo: &TestRepo, count: u16, low: u16, high: u16) -> String {
    let log = sh_quote(&ports_log(repo));
    let script = repo.write_prepare(&format!(
        "echo \"$KARDWT_CARD $KARDWT_PORT $KARDWT_PORTS\" >> {log}"
    ));
    format!(
        "{}  ports: {{count: {count}, range: [{low}, {high}]}}\n",
        repo.rules_for(&script, false)
    )
}

/// The prepare hook's port lines for `card`: (first, all) per run.
fn hook_ports(repo: &TestRepo, card: &str) -> Vec<(u16, Vec<u16>)> {
    std::fs::read_to_string(ports_log(repo))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut words = l.split(' ');
            (words.next() == Some(card)).then(|| {
                let first = words.next().unwrap_or_default().parse().unwrap_or(0);
                let all = words.map(|w| w.parse().unwrap_or(0)).collect();
                (first, all)
            })
        })
        .collect()
}

/// The `ports` array of a JSON value as numbers (panics when it is not an array of ports).
fn json_ports(v: &serde_json::Value) -> Vec<u16> {
    v.as_array()
        .unwrap_or_else(|| panic!("ports is not an array: {v}"))
        .iter()
        .map(|p| {
            p.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or_else(|| panic!("not a port: {p}"))
        })
        .collect()
}

/// The ports in a worktree's record.
#[track_caller]
fn record_ports(repo: &TestRepo, wt: &Path) -> Vec<u16> {
    let rec = repo.record(wt);
    let ports = rec
        .get("ports")
        .and_then(|v| v.as_array())
        .unwrap_or_else(|| panic!("record has no ports array: {rec:?}"));
    ports
        .iter()
        .map(|p| {
            p.as_integer()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or_else(|| panic!("not a port: {p}"))
        })
        .collect()
}

/// `status <card> --json`'s `ports`.
#[track_caller]
fn status_ports(repo: &TestRepo, card: &str) -> Vec<u16> {
    let out = repo.kardwt(&repo.base, &["status", card, "--json"]);
    out.expect_code(0);
    json_ports(&out.json()["ports"])
}

/// `list --json`'s `ports` of the row at `wt`.
#[track_caller]
fn list_ports(repo: &TestRepo, wt: &Path) -> Vec<u16> {
    let row = repo
        .list_row(wt)
        .unwrap_or_else(|| panic!("{} not listed", wt.display()));
    json_ports(&row["ports"])
}

/// `count` distinct ports within `[low, high]`.
#[track_caller]
fn assert_well_formed(ports: &[u16], count: usize, low: u16, high: u16) {
    assert_eq!(ports.len(), count, "{ports:?}");
    assert_eq!(
        ports.iter().collect::<BTreeSet<_>>().len(),
        count,
        "ports repeat: {ports:?}"
    );
    assert!(
        ports.iter().all(|p| (low..=high).contains(p)),
        "ports outside [{low}, {high}]: {ports:?}"
    );
}

/// Every view of a worktree's ports agrees: the record, `status --json`, `list --json`, and
/// what the prepare hook was handed on its last run.
#[track_caller]
fn assert_views_agree(repo: &TestRepo, card: &str, wt: &Path) -> Vec<u16> {
    let rec = record_ports(repo, wt);
    assert_eq!(status_ports(repo, card), rec, "status --json vs record");
    assert_eq!(list_ports(repo, wt), rec, "list --json vs record");
    let runs = hook_ports(repo, card);
    let (first, all) = runs
        .last()
        .unwrap_or_else(|| panic!("the prepare hook never logged ports for {card}"))
        .clone();
    assert_eq!(all, rec, "KARDWT_PORTS vs record");
    assert_eq!(Some(&first), rec.first(), "KARDWT_PORT vs record");
    rec
}

/// With 23000 held by a listener and `range: [23000, 23005]`, `count: 2` (five
/// usable ports), two cards get four distinct ports, none 23000; a third fails naming the
/// range and creates nothing; once one card is removed, the third succeeds.
#[test]
fn ports_skip_a_bound_port_and_held_ports_and_exhaustion_creates_nothing() {
    let listener = TcpListener::bind(("127.0.0.1", 23000))
        .expect("port 23000 must be free for this test to hold it");
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_ports(&repo, 2, 23000, 23005));

    let a = repo.add_card("a");
    let b = repo.add_card("b");
    let pa = assert_views_agree(&repo, "a", &a);
    let pb = assert_views_agree(&repo, "b", &b);
    assert_well_formed(&pa, 2, 23000, 23005);
    assert_well_formed(&pb, 2, 23000, 23005);
    let both: BTreeSet<u16> = pa.iter().chain(&pb).copied().collect();
    assert_eq!(both.len(), 4, "a {pa:?} and b {pb:?} overlap");
    assert!(
        !both.contains(&23000),
        "the bound port was handed out: {both:?}"
    );

    // One usable port is left: card c cannot get two.
    let refs = repo.all_refs();
    let out = repo.kardwt(&repo.base, &["add", "c"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("[23000, 23005]"),
        "range not named:\n{out}"
    );
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "add_no_free_ports",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
    assert!(
        !repo.card_path("c").exists(),
        "a directory was created:\n{out}"
    );
    assert!(
        !repo.is_registered(&repo.card_path("c")),
        "registered:\n{out}"
    );
    assert!(
        !repo.branch_exists("card/c"),
        "branch card/c created:\n{out}"
    );
    assert_eq!(repo.all_refs(), refs, "refs changed:\n{out}");
    assert_eq!(repo.worktrees().len(), 3, "{:?}", repo.worktrees());
    assert!(hook_ports(&repo, "c").is_empty(), "prepare ran for c");
    // a and b kept their ports.
    assert_eq!(record_ports(&repo, &a), pa);
    assert_eq!(record_ports(&repo, &b), pb);

    // Removing a frees its ports: c now fits, still beside b and the bound port.
    repo.kardwt_ok(&repo.base, &["remove", "a"]);
    assert!(!a.exists());
    let c = repo.add_card("c");
    let pc = assert_views_agree(&repo, "c", &c);
    assert_well_formed(&pc, 2, 23000, 23005);
    assert!(
        !pc.contains(&23000),
        "the bound port was handed out: {pc:?}"
    );
    assert!(
        pc.iter().all(|p| !pb.contains(p)),
        "c {pc:?} overlaps b {pb:?}"
    );
    assert_eq!(record_ports(&repo, &b), pb);
    drop(listener);
}

/// A server listening on every address (0.0.0.0) holds its port as surely as one on
/// 127.0.0.1: with one of each in `range: [23600, 23603]`, `count: 2`, the card gets the two
/// others (under BSD's rules a probe with `SO_REUSEADDR` would bind beside the first).
#[test]
fn ports_skip_a_listener_on_every_address_and_one_on_loopback() {
    let any = TcpListener::bind(("0.0.0.0", 23600))
        .expect("port 23600 must be free for this test to hold it");
    let loopback = TcpListener::bind(("127.0.0.1", 23601))
        .expect("port 23601 must be free for this test to hold it");
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_ports(&repo, 2, 23600, 23603));
    let a = repo.add_card("a");
    let mut got = assert_views_agree(&repo, "a", &a);
    got.sort_unstable();
    assert_eq!(got, [23602, 23603], "a held port was handed out");
    drop((any, loopback));
}

/// Ports survive in the record and `status --json`; a card removed and created
/// again gets the same ports back (they are free), even with another card holding ports.
#[test]
fn ports_survive_in_the_record_and_a_recreated_card_gets_the_same_ports() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_ports(&repo, 2, 23100, 23110));
    let a = repo.add_card("a");
    let pa = assert_views_agree(&repo, "a", &a);
    assert_well_formed(&pa, 2, 23100, 23110);
    let b = repo.add_card("b");
    let pb = assert_views_agree(&repo, "b", &b);
    assert_well_formed(&pb, 2, 23100, 23110);
    assert!(pa.iter().all(|p| !pb.contains(p)), "a {pa:?} b {pb:?}");

    // A later command (reuse) leaves them where they are.
    repo.kardwt_ok(&repo.base, &["add", "a"]);
    assert_eq!(record_ports(&repo, &a), pa, "reuse changed the ports");
    assert_eq!(status_ports(&repo, "a"), pa);

    repo.kardwt_ok(&repo.base, &["remove", "a"]);
    assert!(!a.exists());
    assert!(!repo.list_json().iter().any(|r| r["card"] == "a"));
    let a2 = repo.add_card("a");
    assert_eq!(a2, a);
    let again = assert_views_agree(&repo, "a", &a2);
    assert_eq!(again, pa, "the re-created card got other ports");
    assert_eq!(record_ports(&repo, &b), pb);
}

/// A plain `git worktree add -b card/9` with the hooks installed allocates ports too, and they
/// are held against a later `git kardwt add`.
#[test]
fn a_worktree_created_by_plain_git_with_hooks_installed_gets_ports() {
    let repo = TestRepo::new();
    repo.write_rules(&rules_with_ports(&repo, 2, 23200, 23210));
    repo.install_hooks();
    let out = repo.worktree_add(&["../x", "-b", "card/9"]);
    out.expect_code(0);
    let x = repo.sibling("x");
    let px = assert_views_agree(&repo, "9", &x);
    assert_well_formed(&px, 2, 23200, 23210);
    assert_eq!(repo.record(&x)["origin"].as_str(), Some("hook"));

    let y = repo.add_card("10");
    let py = assert_views_agree(&repo, "10", &y);
    assert_well_formed(&py, 2, 23200, 23210);
    assert!(px.iter().all(|p| !py.contains(p)), "9 {px:?} 10 {py:?}");
}
