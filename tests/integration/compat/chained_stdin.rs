//! A pre-push hook kardwt chained (the user's own, kept as `pre-push.kardwt-chained`) reads
//! exactly the bytes git gives a pre-push hook: the same as the same hook installed plainly in
//! another clone, for a push of a new branch and for an up-to-date push (no line at all).
use std::os::unix::fs::PermissionsExt;

use super::*;

/// A pre-push hook in `hooks` that appends what it read on stdin to `dump`, then a `--` line.
fn dumping_hook(hooks: &Path, dump: &Path) {
    std::fs::create_dir_all(hooks).unwrap();
    let hook = hooks.join("pre-push");
    let body = format!(
        "#!/bin/sh\ncat >> {dump}\necho -- >> {dump}\n",
        dump = sh_quote(dump)
    );
    std::fs::write(&hook, body).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_chained_pre_push_hook_reads_exactly_what_git_gives() {
    let repo = TestRepo::new();
    let chained_dump = repo.sibling("chained stdin");
    dumping_hook(&repo.common_dir().join("hooks"), &chained_dump);
    repo.install_hooks();
    assert!(repo
        .common_dir()
        .join("hooks/pre-push.kardwt-chained")
        .is_file());

    let plain = repo.sibling("plain");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", origin, plain.to_str().unwrap()],
    );
    let plain_dump = repo.sibling("plain stdin");
    dumping_hook(&plain.join(".git/hooks"), &plain_dump);

    // The same commit pushed to two empty remotes, then the same push again (up to date).
    for (clone, name) in [(&repo.base, "from-base.git"), (&plain, "from-plain.git")] {
        let target = repo.sibling(name);
        repo.git(
            &repo.tmp,
            &["init", "--quiet", "--bare", target.to_str().unwrap()],
        );
        for _ in 0..2 {
            repo.git(
                clone,
                &["push", "--quiet", target.to_str().unwrap(), "main"],
            );
        }
    }
    let git_gave = std::fs::read(&plain_dump).unwrap();
    let main = repo.origin_main();
    let zero = "0".repeat(main.len());
    let want = format!("refs/heads/main {main} refs/heads/main {zero}\n--\n--\n");
    assert_eq!(
        String::from_utf8_lossy(&git_gave),
        want,
        "git changed its input"
    );
    let chained_got = std::fs::read(&chained_dump).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&chained_got),
        String::from_utf8_lossy(&git_gave)
    );
}
