//! What pre-push judges is every object a push sends, and every version kardwt shared: the
//! linked `.env` as it was when a card was added stays blocked after the base edits it, a
//! version pre-push saw stays blocked after the next edit, and shared bytes in a tag naming a
//! blob, a tree or a commit (plain or annotated) or in a notes ref are refused like the same
//! bytes in a commit, while harmless tags and notes go through.
use std::path::Path;

use crate::support::push::{assert_blocked, commit, head, ls_remote, push};
use crate::support::TestRepo;

/// A repository that links `.env` and `data`, with card 1 added; the base's `.env` holds
/// `env`, `data/deep/creds.json` holds `creds`. Returns the card's tree.
fn linked(repo: &TestRepo, env: &str, creds: &str) -> std::path::PathBuf {
    repo.commit_files(&[(".gitignore", ".env\n.env.*\ndata/\n")], "ignore");
    std::fs::write(repo.base.join(".env"), env).unwrap();
    std::fs::create_dir_all(repo.base.join("data/deep")).unwrap();
    std::fs::write(repo.base.join("data/deep/creds.json"), creds).unwrap();
    repo.write_rules("worktree:\n  sharing:\n    env: link\n    link: [data]\n");
    repo.install_hooks();
    repo.add_card("1")
}

/// Write `bytes` as a blob in `dir`'s repository; its id.
pub(crate) fn blob(repo: &TestRepo, dir: &Path, bytes: &str) -> String {
    let tmp = repo.tmp.join("blob-in");
    std::fs::write(&tmp, bytes).unwrap();
    let id = repo.git(dir, &["hash-object", "-w", "--", tmp.to_str().unwrap()]);
    id.trim().to_owned()
}

/// `git mktree` of `entries` (`<mode> <type> <oid>\t<name>` lines) in `dir`; the tree's id.
pub(crate) fn mktree(repo: &TestRepo, dir: &Path, entries: &str) -> String {
    let script = "printf '%s' \"$1\" | git mktree";
    let out = repo
        .spawn("sh", dir, &["-c", script, "sh", entries])
        .wait(crate::support::COMMAND_TIMEOUT);
    assert_eq!(out.code, 0, "mktree failed:\n{out}");
    out.stdout.trim().to_owned()
}

/// Does origin hold the object `oid`?
pub(crate) fn origin_has(repo: &TestRepo, oid: &str) -> bool {
    repo.git_output(&repo.origin, &["cat-file", "-e", oid]).code == 0
}

#[test]
fn an_earlier_version_of_a_shared_file_stays_blocked_after_the_base_edits_it() {
    let repo = TestRepo::new();
    let env = "TOKEN=first-version-31\n";
    let creds = "{\"key\": \"linked-version-31\"}\n";
    let wt = linked(&repo, env, creds);
    // Copied out of the links as they are when the card was added.
    let oid = commit(
        &repo,
        &wt,
        &[("notes/env.txt", env), ("fixtures/creds.json", creds)],
        false,
        "copies",
    );
    let out = push(&repo, &wt, &["card/1"]);
    assert_blocked(&repo, &out, "notes/env.txt", &oid);
    // Someone appends a line to the base's `.env` and edits the linked file: the old copies
    // are still secrets.
    std::fs::write(repo.base.join(".env"), format!("{env}MORE=1\n")).unwrap();
    std::fs::write(repo.base.join("data/deep/creds.json"), "{}\n").unwrap();
    let out = push(&repo, &wt, &["card/1"]);
    assert_blocked(&repo, &out, "notes/env.txt", &oid);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_an_older_version_of_a_shared_file",
            crate::support::pinned_case("push card/1", &out)
        )
    });
    let env_blob = blob(&repo, &wt, env);
    assert!(
        !origin_has(&repo, &env_blob),
        "origin received the old .env"
    );
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    let oid = commit(
        &repo,
        &wt,
        &[("fixtures/creds.json", creds)],
        false,
        "creds",
    );
    let out = push(&repo, &wt, &["card/1"]);
    assert_blocked(&repo, &out, "fixtures/creds.json", &oid);
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);

    // A version the base's `.env` had only after the card was added, seen by a push, stays
    // blocked after the next edit.
    let second = format!("{env}MORE=1\n");
    let ok = commit(&repo, &wt, &[("work.txt", "work\n")], false, "work");
    push(&repo, &wt, &["card/1"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
    std::fs::write(repo.base.join(".env"), "TOKEN=third-version\n").unwrap();
    let oid = commit(&repo, &wt, &[("dump/env.bak", &second)], false, "bak");
    let out = push(&repo, &wt, &["card/1"]);
    assert_blocked(&repo, &out, "dump/env.bak", &oid);
    repo.git(&wt, &["reset", "--quiet", "--hard", "HEAD~1"]);

    // Content kardwt never shared (a version that was never there) goes through.
    let ok = commit(
        &repo,
        &wt,
        &[("notes/other.txt", "TOKEN=first-version-32\n")],
        false,
        "other",
    );
    push(&repo, &wt, &["card/1"]).expect_code(0);
    assert!(ls_remote(&repo).contains(&ok));
}

#[test]
fn shared_bytes_in_tags_and_notes_are_refused_like_in_commits() {
    let repo = TestRepo::new();
    let env = "TOKEN=tagged-secret-33\n";
    let wt = linked(&repo, env, "{\"key\": \"linked-33\"}\n");
    let secret = blob(&repo, &wt, env);
    let harmless = blob(&repo, &wt, "just a release note\n");
    let tree_of = |id: &str| {
        let tree = mktree(&repo, &wt, &format!("100644 blob {id}\tkey.txt\n"));
        mktree(&repo, &wt, &format!("040000 tree {tree}\tconf\n"))
    };
    let (tree, harmless_tree) = (tree_of(&secret), tree_of(&harmless));
    // A commit on no branch, holding the secret nested and renamed.
    let side = repo
        .git(&wt, &["commit-tree", &tree, "-m", "side"])
        .trim()
        .to_owned();
    let mut n = 0;
    for (target, bad) in [
        (&secret, true),
        (&tree, true),
        (&side, true),
        (&harmless, false),
        (&harmless_tree, false),
    ] {
        for annotated in [false, true] {
            n += 1;
            let name = format!("t{n}");
            let mut args = vec!["tag"];
            if annotated {
                args.extend(["-a", "-m", "release"]);
            }
            args.extend([name.as_str(), target.as_str()]);
            repo.git(&wt, &args);
            let refspec = format!("refs/tags/{name}");
            let out = push(&repo, &wt, &[&refspec]);
            let what = format!("tag {name} (annotated: {annotated}) naming {target}");
            if bad {
                assert_ne!(out.code, 0, "{what}: the push went through:\n{out}");
                assert!(
                    out.stderr.contains("blocked"),
                    "{what}: not refused:\n{out}"
                );
                // The blob (a lightweight tag names it: the tag is named too), or the commit.
                let named = out.stderr.contains(&secret) || out.stderr.contains(&side);
                if target == &secret && !annotated {
                    assert!(
                        out.stderr.contains(&refspec),
                        "{what}: the tag is not named:\n{out}"
                    );
                }
                assert!(
                    named,
                    "{what}: neither the object nor the commit is named:\n{out}"
                );
                assert!(
                    !ls_remote(&repo).contains(&refspec),
                    "{what}: origin has it"
                );
            } else {
                out.expect_code(0);
                assert!(
                    ls_remote(&repo).contains(&refspec),
                    "{what}: origin lacks it"
                );
            }
        }
    }
    assert!(!origin_has(&repo, &secret), "origin received the secret");

    // Notes: a note holding the secret is refused, a harmless one passes.
    let tip = head(&repo, &wt);
    repo.git(&wt, &["notes", "add", "-f", "-C", &secret, &tip]);
    let out = push(&repo, &wt, &["refs/notes/commits"]);
    assert_ne!(
        out.code, 0,
        "a note holding the secret went through:\n{out}"
    );
    assert!(out.stderr.contains("blocked"), "{out}");
    assert!(!origin_has(&repo, &secret), "origin received the secret");
    // Replaced, the note is still in the notes ref's history: sent, and refused.
    repo.git(&wt, &["notes", "add", "-f", "-C", &harmless, &tip]);
    let out = push(&repo, &wt, &["refs/notes/commits"]);
    assert_ne!(
        out.code, 0,
        "the replaced note's history went through:\n{out}"
    );
    repo.git(&wt, &["update-ref", "-d", "refs/notes/commits"]);
    repo.git(&wt, &["notes", "add", "-C", &harmless, &tip]);
    push(&repo, &wt, &["refs/notes/commits"]).expect_code(0);
    assert!(ls_remote(&repo).contains("refs/notes/commits"));
    assert!(!origin_has(&repo, &secret), "origin received the secret");
}
