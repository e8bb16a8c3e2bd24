//! pre-push sees every way in, through `git push` with the hooks installed: a
//! forced-in ignored `.env` with any byte in its name, at any depth, case-folded under
//! `core.ignorecase`, or renamed into place; a `.env` brought in by a merge commit; a tracked
//! symlink retargeted (M) or made from a file (T) to leave the repository or reach the base's
//! shared `.env`, directly, through the tree's other symlinks, or re-added after a deletion; a
//! copy or hardlink of the shared `.env` under any name; a commit that exists only on another
//! remote; a commit hidden behind `git replace`. Commits already on the remote being pushed to
//! are not rechecked.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::support::push::{
    assert_blocked, commit, commit_links, head, ls_remote, push, repo_with_card,
};
use crate::support::{Output, TestRepo};

/// The base holds an ignored `.env` (`TOKEN=base`) that the rules share by link; hooks
/// installed; card `card` added (its `.env` is kardwt's link). Returns the repo and worktree.
fn repo_sharing_env(card: &str) -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    repo.share_env_with_prepare();
    repo.install_hooks();
    let wt = repo.add_card(card);
    let meta = wt.join(".env").symlink_metadata().unwrap();
    assert!(
        meta.file_type().is_symlink(),
        "the base's .env is not shared"
    );
    (repo, wt)
}

/// Replace whatever is at `rel` in `wt` by a symlink to `target`, stage it, commit; returns
/// the oid.
#[track_caller]
fn relink(repo: &TestRepo, wt: &Path, rel: &str, target: &str, msg: &str) -> String {
    let p = wt.join(rel);
    let _ = std::fs::remove_file(&p);
    std::os::unix::fs::symlink(target, &p).unwrap();
    repo.git(wt, &["add", "--", rel]);
    repo.git(wt, &["commit", "--quiet", "-m", msg]);
    head(repo, wt)
}

/// Drop the last commit of `wt`'s branch.
fn undo(repo: &TestRepo, wt: &Path) {
    repo.git(wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
}

/// `git push --no-verify <remote> <refspec>`: how a commit gets somewhere without the check.
#[track_caller]
fn push_unchecked(repo: &TestRepo, wt: &Path, remote: &str, refspec: &str) {
    repo.git(wt, &["push", "--quiet", "--no-verify", remote, refspec]);
}

#[track_caller]
fn assert_pushed(repo: &TestRepo, out: &Output, oid: &str) {
    assert_eq!(out.code, 0, "the push was refused:\n{out}");
    assert!(ls_remote(repo).contains(oid), "{out}");
}

/// A forced `.env.é` (UTF-8) and `.env.<0xff>` (not UTF-8): git quotes both unless read with
/// `-z`. The refusal says what to do instead, not "push from elsewhere".
#[test]
fn a_forced_env_file_with_any_byte_in_its_name_is_refused() {
    let (repo, wt) = repo_with_card("42");
    let bad = commit(&repo, &wt, &[(".env.é", "TOKEN=x\n")], true, "accent");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.é", &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_env_file_with_any_byte",
            crate::support::pinned_case("push card/42", &out)
        )
    });

    undo(&repo, &wt);
    let name = OsStr::from_bytes(b".env.\xff");
    std::fs::write(wt.join(name), "TOKEN=x\n").unwrap();
    repo.git(&wt, &["add", "-f", "--", ".env.*"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "byte"]);
    let bad = head(&repo, &wt);
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.\\xff", &bad);
}

/// A merge commit that brings in a `.env` of its own is diffed against each parent.
#[test]
fn a_env_file_brought_in_by_a_merge_commit_is_refused() {
    let (repo, wt) = repo_with_card("42");
    let wt43 = repo.add_card("43");
    commit(&repo, &wt43, &[("side.txt", "side\n")], false, "side");
    commit(&repo, &wt, &[("main.txt", "main\n")], false, "main");
    repo.git(
        &wt,
        &["merge", "--quiet", "--no-ff", "--no-commit", "card/43"],
    );
    std::fs::write(wt.join(".env"), "TOKEN=secret\n").unwrap();
    repo.git(&wt, &["add", "-f", "--", ".env"]);
    repo.git(&wt, &["commit", "--quiet", "--no-edit"]);
    let merge = head(&repo, &wt);
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env", &merge);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_env_by_merge",
            format!("exit {}\n{}", out.code, out.stderr)
        )
    });
}

/// A tracked symlink retargeted (status M) out of the repository or to the base's shared
/// `.env`, and a tracked file turned into such a symlink (status T), are refused.
#[test]
fn a_tracked_symlink_retargeted_out_or_to_the_shared_env_is_refused() {
    let (repo, wt) = repo_sharing_env("42");
    let ok = commit_links(&repo, &wt, &[("cfg", "README.md")], "cfg");
    let ok2 = commit(&repo, &wt, &[("plain.txt", "plain\n")], false, "plain");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok2);
    assert!(ls_remote(&repo).contains(&ok2) && !ok.is_empty());

    for target in ["../../outside", ".env", "src/../.env"] {
        let bad = relink(&repo, &wt, "cfg", target, "retarget");
        let out = push(&repo, &wt, &["card/42"]);
        assert_blocked(&repo, &out, &format!("cfg -> {target}"), &bad);
        if target == ".env" {
            crate::support::pinned(&repo).bind(|| {
                insta::assert_snapshot!(
                    "pre_push_symlink_to_the_shared_env",
                    format!("exit {}\n{}", out.code, out.stderr)
                )
            });
        }
        undo(&repo, &wt);
    }
    for target in ["/etc/passwd", ".env"] {
        let bad = relink(&repo, &wt, "plain.txt", target, "file to link");
        let out = push(&repo, &wt, &["card/42"]);
        assert_blocked(&repo, &out, &format!("plain.txt -> {target}"), &bad);
        undo(&repo, &wt);
    }
    let fine = relink(&repo, &wt, "cfg", "src/lib.txt", "retarget inside");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &fine);
}

/// Targets are resolved through the pushed tree's other symlinks: `dot -> .` makes
/// `leak -> dot/../.env` leave the repository, whether both come in one commit or `dot` comes
/// after `leak`. A chain that stays inside passes.
#[test]
fn a_symlink_chain_through_the_tree_s_own_symlinks_is_refused() {
    let (repo, wt) = repo_sharing_env("42");
    let ok = commit_links(&repo, &wt, &[("d", "src"), ("x", "d/lib.txt")], "inside");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);

    let bad = commit_links(
        &repo,
        &wt,
        &[("dot", "."), ("leak", "dot/../.env")],
        "chain",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "leak -> dot/../.env", &bad);
    undo(&repo, &wt);

    commit_links(
        &repo,
        &wt,
        &[("leak", "dot/../README.md")],
        "harmless alone",
    );
    let bad = commit_links(&repo, &wt, &[("dot", ".")], "dot");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "leak -> dot/../README.md", &bad);
}

/// A tracked symlink deleted, then re-added pointing at the shared `.env`, is refused.
#[test]
fn a_symlink_deleted_then_readded_to_the_shared_env_is_refused() {
    let (repo, wt) = repo_sharing_env("42");
    let ok = commit_links(&repo, &wt, &[("cfg", "README.md")], "cfg");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);
    repo.git(&wt, &["rm", "--quiet", "--", "cfg"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "drop cfg"]);
    let bad = commit_links(&repo, &wt, &[("cfg", ".env")], "cfg again");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "cfg -> .env", &bad);
}

/// Forced `.env` files the ignore rules ignore are refused at any depth (`s/.env`), renamed into
/// place (`git mv`), and case-folded when `core.ignorecase` is true (`.ENV`).
#[test]
fn forced_env_files_are_refused_at_any_depth_renamed_and_case_folded() {
    let (repo, wt) = repo_with_card("42");
    let bad = commit(&repo, &wt, &[("s/.env", "TOKEN=x\n")], true, "nested");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "s/.env", &bad);
    undo(&repo, &wt);

    let ok = commit(&repo, &wt, &[("notes/plain.txt", "X=1\n")], false, "plain");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);
    repo.git(&wt, &["mv", "notes/plain.txt", "notes/.env.prod"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "rename"]);
    let bad = head(&repo, &wt);
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "notes/.env.prod", &bad);
    undo(&repo, &wt);

    repo.git(&repo.base, &["config", "core.ignorecase", "true"]);
    let bad = commit(&repo, &wt, &[(".ENV", "TOKEN=x\n")], true, "upper");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".ENV", &bad);
}

/// A blob equal to the base's shared `.env` is refused under any name: a copy, a hardlink, a
/// file modified to hold it, an LF copy of a CRLF file. Other content passes.
#[test]
fn a_copy_or_hardlink_of_the_shared_env_is_refused_under_any_name() {
    let (repo, wt) = repo_sharing_env("42");
    let ok = commit(
        &repo,
        &wt,
        &[("notes.txt", "TOKEN=other\n")],
        false,
        "notes",
    );
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);

    let bad = commit(
        &repo,
        &wt,
        &[("conf/settings.txt", "TOKEN=base\n")],
        false,
        "copy",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "conf/settings.txt", &bad);
    crate::support::pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "pre_push_copy_of_the_base_env",
            crate::support::pinned_case("push card/42", &out)
        )
    });
    undo(&repo, &wt);

    std::fs::hard_link(repo.base.join(".env"), wt.join("hard")).unwrap();
    repo.git(&wt, &["add", "--", "hard"]);
    repo.git(&wt, &["commit", "--quiet", "-m", "hardlink"]);
    let bad = head(&repo, &wt);
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "hard", &bad);
    undo(&repo, &wt);

    let bad = commit(
        &repo,
        &wt,
        &[("notes.txt", "TOKEN=base\n")],
        false,
        "modified",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "notes.txt", &bad);
    undo(&repo, &wt);

    // A CRLF .env committed elsewhere with LF endings, as a text conversion would store it.
    std::fs::write(repo.base.join(".env"), "A=1\r\nB=2\r\n").unwrap();
    let bad = commit(
        &repo,
        &wt,
        &[("conf/lf.txt", "A=1\nB=2\n")],
        false,
        "lf copy",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "conf/lf.txt", &bad);
}

/// A commit that exists only on another remote is checked when pushed to origin; commits
/// already on origin (its remote oid, or any of its remote-tracking refs for a new ref, also
/// when pushing to origin's URL) are not rechecked.
#[test]
fn only_commits_already_on_the_target_remote_are_exempt() {
    let (repo, wt) = repo_with_card("42");
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", "--bare", "origin.git", "other.git"],
    );
    let other = repo.tmp.join("other.git");
    repo.git(
        &repo.base,
        &["remote", "add", "other", other.to_str().unwrap()],
    );
    let bad = commit(&repo, &wt, &[(".env.prod", "TOKEN=x\n")], true, "secret");
    push_unchecked(&repo, &wt, "other", "card/42");
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.prod", &bad);

    // Once origin has it (pushed past the check), later pushes do not re-judge it.
    push_unchecked(&repo, &wt, "origin", "card/42");
    let ok = commit(&repo, &wt, &[("notes.txt", "fine\n")], false, "notes");
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);
    let out = push(&repo, &wt, &["card/42:refs/heads/copy"]);
    assert_eq!(
        out.code, 0,
        "a new ref of known commits was refused:\n{out}"
    );
    assert!(ls_remote(&repo).contains("refs/heads/copy"));

    // Pushed by URL: the configured remote with that URL lends its remote-tracking refs.
    let url = repo.origin.to_str().unwrap();
    let out = repo.git_output(&wt, &["push", url, "card/42:refs/heads/by-url"]);
    assert_eq!(out.code, 0, "a push by URL rechecked known commits:\n{out}");
    assert!(ls_remote(&repo).contains("refs/heads/by-url"));
}

/// `git replace` makes `git log` show another commit in place of the pushed one, but the pack
/// git pushes ignores replace refs: the check reads what really leaves.
#[test]
fn a_commit_hidden_by_git_replace_is_still_checked() {
    let (repo, wt) = repo_with_card("42");
    let bad = commit(&repo, &wt, &[(".env.prod", "TOKEN=x\n")], true, "secret");
    undo(&repo, &wt);
    let good = commit(&repo, &wt, &[("notes.txt", "fine\n")], false, "notes");
    repo.git(&wt, &["reset", "--quiet", "--hard", &bad]);
    repo.git(&wt, &["replace", &bad, &good]);
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, ".env.prod", &bad);
}

/// A shared `.env` copied unchanged from the tracked `.env.example` holds nothing secret: a
/// pushed copy of that content passes. A copy of another shared file (`.env.local`) does not.
#[test]
fn shared_content_the_base_tracks_is_not_a_secret() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\n!.env.example\n"),
            (".env.example", "TOKEN=\n"),
        ],
        "example",
    );
    repo.share_env_with_prepare();
    std::fs::write(repo.base.join(".env"), "TOKEN=\n").unwrap();
    std::fs::write(repo.base.join(".env.local"), "TOKEN=local\n").unwrap();
    repo.install_hooks();
    let wt = repo.add_card("42");
    let ok = commit(
        &repo,
        &wt,
        &[("conf/defaults", "TOKEN=\n")],
        false,
        "defaults",
    );
    assert_pushed(&repo, &push(&repo, &wt, &["card/42"]), &ok);

    let bad = commit(
        &repo,
        &wt,
        &[("conf/local", "TOKEN=local\n")],
        false,
        "local",
    );
    let out = push(&repo, &wt, &["card/42"]);
    assert_blocked(&repo, &out, "conf/local", &bad);
    assert!(out.stderr.contains("the base's .env.local"), "{out}");
}

/// Merging main brings in what main already has on the remote, such as a tracked `.env.ci` that
/// the ignore rules match: the merge passes. Its own additions are still judged (see
/// `a_env_file_brought_in_by_a_merge_commit_is_refused`).
#[test]
fn a_merge_of_what_the_remote_already_has_passes() {
    let (repo, wt) = repo_with_card("42");
    commit(&repo, &wt, &[("mine.txt", "mine\n")], false, "mine");
    repo.commit_files(&[(".env.ci", "CI=1\n")], "tracked ci env");
    repo.git(&wt, &["fetch", "--quiet", "origin"]);
    repo.git(&wt, &["merge", "--quiet", "--no-edit", "origin/main"]);
    let merge = head(&repo, &wt);
    let out = push(&repo, &wt, &["card/42"]);
    assert_pushed(&repo, &out, &merge);
}
