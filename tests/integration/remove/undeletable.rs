//! A tree whose files cannot all be deleted (an immutable file: as root, permissions stop
//! nothing) is never hidden: `remove` says where its files are being deleted from, the failed
//! background deletion is counted in its record and named by `list`, `doctor` and `gc`, it is
//! retried by itself a bounded number of times, and once the cause is gone `gc --apply`
//! deletes it.
use std::path::Path;
use std::time::Duration;

use super::aside::{asides, records, tree_with_files};
use crate::support::mount::Immutable;
use crate::support::{wait_until, TestRepo};

/// The failed attempts the record of the move counts (0 while none failed or it is gone).
fn attempts(record: &Path) -> u64 {
    std::fs::read(record)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["attempts"].as_u64())
        .unwrap_or(0)
}

#[test]
fn a_deletion_that_fails_is_counted_reported_everywhere_and_retried_a_bounded_number_of_times() {
    let repo = TestRepo::new();
    let wt = tree_with_files(&repo, "42", 40);
    let Some(_immutable) = Immutable::new(&repo.tmp, &wt.join("d3/f3.txt")) else {
        return;
    };
    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(0);
    let aside = asides(&wt).pop().expect("moved aside");
    // It says where the files are until they are gone.
    let mut shown = crate::support::pinned_case("remove 42", &out);
    let record = records(&repo).pop().expect("the move is recorded");
    assert!(
        wait_until(Duration::from_secs(60), || attempts(&record) == 1),
        "the failed deletion was not counted"
    );
    assert!(aside.join("d3/f3.txt").is_file());

    // list, doctor and gc name it, and what stays.
    let row = repo
        .list_json()
        .into_iter()
        .find(|r| r["state"] == "undeleted")
        .expect("list names the undeleted tree");
    assert_eq!(row["card"], "42");
    assert_eq!(row["path"], aside.to_str().unwrap());
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor}");
    assert!(
        doctor
            .stdout
            .contains(&format!("card 42's tree, removed from {}", wt.display()))
            && doctor.stdout.contains("d3/f3.txt: Operation not permitted")
            && doctor.stdout.contains("fix: fix what stops the deletion"),
        "{doctor}"
    );
    // gc names it, what stays and why, and that gc --apply tries again (not "would delete").
    let gc = repo.kardwt(&repo.base, &["gc", "--offline"]);
    shown.push_str(&crate::support::pinned_case("gc --offline", &gc));

    // Each command that takes the repository lock tries again, until the bound.
    for (i, card) in ["43", "44"].iter().enumerate() {
        repo.kardwt_ok(&repo.base, &["add", card]);
        let want = i as u64 + 2;
        assert!(
            wait_until(Duration::from_secs(60), || attempts(&record) == want),
            "attempt {want} was not made: {}",
            attempts(&record)
        );
    }
    repo.kardwt_ok(&repo.base, &["add", "45"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(attempts(&record), 3, "retried past the bound");
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("3 attempts, no longer retried by itself"),
        "{doctor}"
    );

    // The cause gone, gc --apply deletes it, and nothing is reported any more.
    drop(_immutable);
    let gc = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    gc.expect_code(0);
    shown.push_str(&crate::support::pinned_case("gc --apply --offline", &gc));
    crate::support::pinned(&repo)
        .bind(|| insta::assert_snapshot!("remove_undeletable_then_gc", shown));
    assert!(!aside.exists() && records(&repo).is_empty(), "{gc}");
    assert!(!repo.list_json().iter().any(|r| r["state"] == "undeleted"));
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    assert!(!doctor.stdout.contains("moved aside"), "{doctor}");
}
