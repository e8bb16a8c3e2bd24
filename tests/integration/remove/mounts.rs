//! Removal never deletes across a file system boundary: a tree with a file system mounted in it
//! (a tmpfs, a bind mount of a directory elsewhere on the same file system) is refused, forced
//! or not, naming the mount and touching nothing; and the deleter of a tree already moved aside
//! leaves alone whatever was mounted in it after it was judged. Real mounts, as root.

use super::aside::{killed_removal, records};
use crate::support::mount::Mounted;
use crate::support::{pinned, pinned_case, snapshot, TestRepo};

/// A repository whose cards ignore `data/` and `cache/`, and card `card` with both made.
fn card_with_ignored_dirs(repo: &TestRepo, card: &str) -> std::path::PathBuf {
    let wt = repo.add_card(card);
    std::fs::create_dir_all(wt.join("data")).unwrap();
    std::fs::create_dir_all(wt.join("cache")).unwrap();
    wt
}

#[test]
fn a_tree_with_a_file_system_mounted_in_it_is_refused_and_the_mounted_bytes_stay() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[(".gitignore", "data/\ncache/\n")],
        "ignore data and cache",
    );
    let wt = card_with_ignored_dirs(&repo, "42");
    let Some(tmpfs) = Mounted::tmpfs(&repo.tmp, &wt.join("data")) else {
        return;
    };
    std::fs::write(wt.join("data/precious.db"), "mounted bytes\n").unwrap();
    // A directory elsewhere on the same file system, bind-mounted: the same device.
    let outside = repo.sibling("outside");
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    std::fs::write(outside.join("deep/keep.txt"), "outside\n").unwrap();
    let other = card_with_ignored_dirs(&repo, "43");
    let Some(bind) = Mounted::bind(&repo.tmp, &outside, &other.join("cache")) else {
        return;
    };
    let (before, other_before, outside_before) =
        (snapshot(&wt), snapshot(&other), snapshot(&outside));

    // Each names the mount, says nothing was released, and how to unmount it.
    let mut shown = String::new();
    for (card, tree, what) in [("42", &wt, "tmpfs"), ("43", &other, "bind mount")] {
        for args in [&["remove", card][..], &["remove", "--force", card]] {
            let out = repo.kardwt(&repo.base, args);
            out.expect_code(3);
            shown.push_str(&pinned_case(&format!("{what}: {}", args.join(" ")), &out));
            assert!(repo.is_registered(tree), "{args:?}: {out}");
        }
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("remove_refuses_mounts", shown));
    assert_eq!(snapshot(&wt), before, "the refusal changed the tree");
    assert_eq!(
        snapshot(&other),
        other_before,
        "the refusal changed the tree"
    );
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "the bound directory changed"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("data/precious.db")).unwrap(),
        "mounted bytes\n"
    );
    assert!(records(&repo).is_empty(), "something was moved aside");

    // Unmounted, the trees go as any other.
    drop((tmpfs, bind));
    repo.kardwt_ok(&repo.base, &["remove", "42"]);
    repo.kardwt_ok(&repo.base, &["remove", "43"]);
    assert!(!wt.exists() && !other.exists());
    assert_eq!(
        snapshot(&outside),
        outside_before,
        "the bound directory changed"
    );
}

/// A tree moved aside whose deleter was killed, then a tmpfs and a bind mount put inside it:
/// neither the deleter nor `gc --apply` deletes across them, both say so, and once unmounted
/// `gc --apply` deletes the tree.
#[test]
fn the_deleter_leaves_what_was_mounted_after_the_move_alone() {
    let repo = TestRepo::new();
    let (_wt, aside) = killed_removal(&repo);
    let Some(tmpfs) = Mounted::tmpfs(&repo.tmp, &aside.join("d3")) else {
        return;
    };
    std::fs::write(aside.join("d3/precious.db"), "mounted bytes\n").unwrap();
    let outside = repo.sibling("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "outside\n").unwrap();
    let Some(bind) = Mounted::bind(&repo.tmp, &outside, &aside.join("d4")) else {
        return;
    };
    let outside_before = snapshot(&outside);
    let record = records(&repo).pop().unwrap();

    let out = repo.kardwt(&repo.base, &["delete-aside", record.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out}");
    let check = |what: &str| {
        assert_eq!(
            std::fs::read_to_string(aside.join("d3/precious.db")).unwrap(),
            "mounted bytes\n",
            "{what}"
        );
        assert_eq!(snapshot(&outside), outside_before, "{what}");
    };
    check("the deleter");
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(kept["attempts"], 1, "{kept}");
    let failed = kept["failed"].as_str().unwrap();
    assert!(
        failed.contains("a file system is mounted in it")
            && failed.contains(&aside.join("d3").display().to_string())
            && failed.contains(&aside.join("d4").display().to_string()),
        "{failed}"
    );

    let mounted = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    check("gc --apply");

    drop((tmpfs, bind));
    let out = repo.kardwt(&repo.base, &["gc", "--apply", "--offline"]);
    out.expect_code(0);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "gc_leaves_mounts_in_a_moved_tree",
            pinned_case("mounted", &mounted) + &pinned_case("unmounted", &out)
        )
    });
    assert!(!aside.exists() && records(&repo).is_empty(), "{out}");
    assert_eq!(snapshot(&outside), outside_before);
}

/// The cleanup hook mounts a tmpfs in the tree after the refusals were made: where the tree is
/// moved aside, its deleter deletes nothing across the mount and the failure is named; where it
/// stays in place for git (a rename failing with EXDEV, injected), remove stops before git
/// deletes anything, exit 3, naming the mount. The mounted bytes are whole either way.
#[test]
fn a_mount_made_by_the_cleanup_hook_after_the_checks_is_never_deleted_across() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[(".gitignore", "data/\ncache/\n")],
        "ignore data and cache",
    );
    let hook = "mount -t tmpfs tmpfs \"$KARDWT_WORKTREE/data\" && \
                echo mounted > \"$KARDWT_WORKTREE/data/precious.db\"";
    repo.write_rules(&crate::support::cleanup::rules_with_cleanup(&repo, hook));
    let wt = card_with_ignored_dirs(&repo, "42");
    let Some(_guard) = Mounted::expected(&repo.tmp, &wt.join("data")) else {
        return;
    };
    let out = repo.kardwt(&repo.base, &["remove", "42"]);
    out.expect_code(0);
    let aside = super::aside::asides(&wt).pop().expect("moved aside");
    let record = records(&repo).pop().expect("recorded");
    let counted = crate::support::wait_until(std::time::Duration::from_secs(60), || {
        std::fs::read_to_string(&record).is_ok_and(|t| t.contains("\"attempts\":1"))
    });
    assert!(counted, "the deleter did not count its refusal:\n{out}");
    assert!(
        crate::support::mount::mounted(&aside.join("data")),
        "the hook's mount is gone:\n{out}"
    );
    assert_eq!(
        std::fs::read_to_string(aside.join("data/precious.db")).unwrap(),
        "mounted\n"
    );
    assert!(
        std::fs::read_to_string(&record)
            .unwrap()
            .contains("a file system is mounted in it"),
        "{out}"
    );

    // In place: a rename that fails (EXDEV) leaves the tree for git, which would delete across
    // the mount; remove stops first.
    let wt = card_with_ignored_dirs(&repo, "43");
    let Some(_guard) = Mounted::expected(&repo.tmp, &wt.join("data")) else {
        return;
    };
    let syscalls = "rename,renameat,renameat2";
    let args = [
        "-qq",
        "-o",
        "/dev/null",
        "-P",
        wt.to_str().unwrap(),
        "-e",
        &format!("trace={syscalls}"),
        "-e",
        &format!("inject={syscalls}:error=EXDEV"),
        crate::support::BIN,
        "remove",
        "43",
    ];
    let cmd = repo.command(crate::support::strace::strace(), &repo.base);
    let out = repo
        .start_command(cmd, &repo.base, &args)
        .wait(crate::support::COMMAND_TIMEOUT);
    out.expect_code(3);
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "remove_refuses_a_late_mount",
            pinned_case("remove 43", &out)
        )
    });
    assert!(repo.is_registered(&wt), "{out}");
    assert_eq!(
        std::fs::read_to_string(wt.join("data/precious.db")).unwrap(),
        "mounted\n",
        "{out}"
    );
}
