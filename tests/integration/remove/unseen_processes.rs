//! When the processes of the machine cannot be seen (here `/proc` unmounted in a private mount
//! namespace, as macOS lacks it), removal and gc never call a tree unused: `remove` refuses and
//! changes nothing, `gc --apply` keeps the tree and says why, and `remove --force` goes on
//! without signalling anything, saying so.
use crate::support::{Output, TestRepo, COMMAND_TIMEOUT};

/// `git kardwt args` in a mount namespace of its own whose `/proc` is unmounted. `None` (with
/// a notice) where this machine cannot make one: not root, or no `unshare`; under CI a failure.
fn without_proc(repo: &TestRepo, args: &[&str]) -> Option<Output> {
    let mut all = vec![
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        r#"umount -l /proc && exec git kardwt "$@""#,
        "sh",
    ];
    all.extend_from_slice(args);
    let why = if !rustix::process::geteuid().is_root() {
        Some("not root".to_owned())
    } else if std::process::Command::new("unshare")
        .arg("--version")
        .output()
        .is_err()
    {
        Some("no unshare".to_owned())
    } else {
        None
    };
    if let Some(why) = why {
        assert!(
            std::env::var_os("CI").is_none(),
            "cannot hide /proc under CI: {why}"
        );
        eprintln!("SKIPPED: cannot hide /proc: {why}");
        return None;
    }
    Some(
        repo.spawn("unshare", &repo.base, &all)
            .wait(COMMAND_TIMEOUT),
    )
}

#[test]
fn processes_that_cannot_be_seen_keep_a_tree_unless_remove_is_forced() {
    let repo = TestRepo::new();
    let wt = repo.add_card("3");
    let Some(out) = without_proc(&repo, &["remove", "3"]) else {
        return;
    };
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("cannot be seen here") && out.stderr.contains("--force"),
        "{out}"
    );
    assert!(wt.is_dir(), "the tree was removed:\n{out}");
    assert_eq!(repo.record(&wt)["state"].as_str(), Some("ready"), "{out}");

    let gc = without_proc(&repo, &["gc", "--offline", "--include-failed", "--apply"]).unwrap();
    assert!(wt.is_dir(), "gc removed the tree:\n{gc}");

    let forced = without_proc(&repo, &["remove", "3", "--force"]).unwrap();
    assert_eq!(forced.code, 0, "{forced}");
    assert!(!wt.exists(), "{forced}");
    assert!(
        forced
            .stdout
            .contains("none signalled: the processes inside it cannot be seen"),
        "{forced}"
    );
}
