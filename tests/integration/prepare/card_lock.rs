//! `git kardwt prepare` of a card waits for the card's lock, and a record written meanwhile
//! under that lock is never overwritten by a stale one.
use std::time::Duration;

use crate::support::procs::{hold_flock, wait_until_open};
use crate::support::TestRepo;

#[test]
fn a_record_written_while_prepare_waits_for_the_card_lock_is_not_overwritten() {
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let waiting = repo.spawn_kardwt_bin(&repo.base, &["prepare", "k1"]);
    let opened = wait_until_open(waiting.pid(), &lock);
    // Another command, holding the card's lock, writes a newer record meanwhile.
    repo.edit_record(&wt, "board", "newer");
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = waiting.wait(Duration::from_secs(60));
    assert!(opened, "prepare never waited for the card lock:\n{out}");
    out.expect_code(0);
    let rec = repo.record(&wt);
    assert_eq!(rec["board"].as_str(), Some("newer"), "{rec:?}");
    assert_eq!(rec["state"].as_str(), Some("ready"), "{rec:?}");
}
