//! What `remove` reads: a dirty tree's names as git quotes them (a renamed non-ASCII file, a
//! byte that is not UTF-8), and the record as it is once `remove` holds the card's lock.
use std::time::Duration;

use crate::support::procs::{hold_flock, wait_until_open};
use crate::support::{pinned, pinned_case, TestRepo};

#[test]
fn remove_names_a_renamed_non_ascii_file_and_any_byte_of_a_dirty_tree() {
    use std::os::unix::ffi::OsStrExt;
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    std::fs::write(wt.join("äb.txt"), "x\n").unwrap();
    repo.git(&wt, &["add", "äb.txt"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "a non-ASCII name"]);
    repo.git(&wt, &["mv", "äb.txt", "öc.txt"]);
    let odd = std::ffi::OsStr::from_bytes(b"n\xff.txt");
    std::fs::write(wt.join(odd), "y\n").unwrap();

    let out = repo.kardwt(&repo.base, &["remove", "k1"]);
    out.expect_code(1);
    // The renamed file by its new name only; a byte that is not UTF-8 as git quotes it, not as
    // U+FFFD.
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_names_what_git_quotes",
            pinned_case("remove k1", &out)
        )
    });
    assert!(wt.join("öc.txt").is_file() && wt.join(odd).is_file());
    assert!(repo.is_registered(&wt));
}

#[test]
fn remove_acts_on_the_record_it_reads_under_the_card_lock() {
    let repo = TestRepo::new();
    let wt = repo.add_card("k1");
    let lock = repo.common_dir().join("kardwt/cards/k1.lock");
    let mut holder = hold_flock(&repo, &lock);
    let waiting = repo.spawn_kardwt_bin(&repo.base, &["remove", "k1"]);
    let opened = wait_until_open(waiting.pid(), &lock);
    // Meanwhile the record stops matching the tree (it names another card now).
    repo.edit_record(&wt, "card", "k2");
    holder.kill();
    let _ = holder.wait(Duration::from_secs(10));
    let out = waiting.wait(Duration::from_secs(60));
    assert!(opened, "remove never waited for the card lock:\n{out}");
    out.expect_code(1);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_record_changed_while_waiting",
            pinned_case("remove k1", &out)
        )
    });
    assert!(wt.is_dir() && repo.is_registered(&wt), "{out}");
    assert_eq!(repo.record(&wt)["card"].as_str(), Some("k2"));
}
