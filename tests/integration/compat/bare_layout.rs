//! The bare layout, `git clone --bare <url> project/.git` with the cards' trees beside it in
//! `project/`: install-hooks, add (from `project/`, `project/.git` and a card), the seeding of a
//! plain `git worktree add`, verify, list, pre-push, remove and gc work there; the rules come
//! from the base commit's committed `kardbrd.yml`, shared files from `kardwt.sharedFrom`, and
//! nothing but `.git`, the cards and what the user put there ever appears in `project/`.
//! `select` has no base checkout to fall back to there. A bare repository of another shape
//! (`foo.git`) is refused by `add`, touching nothing.
use super::*;

/// Commit `kardbrd.yml` with `yaml` on origin's main (through the scratch clone).
fn commit_rules(repo: &TestRepo, yaml: &str) {
    std::fs::write(repo.scratch.join("kardbrd.yml"), yaml).unwrap();
    repo.git(&repo.scratch, &["add", "kardbrd.yml"]);
    repo.git(&repo.scratch, &["commit", "--quiet", "-m", "rules"]);
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
}

/// `git clone --bare origin <tmp>/project/.git`, with worktrunk's advised fetch refspec when
/// `refspec`; returns `project/`.
fn bare_layout(repo: &TestRepo, refspec: bool) -> PathBuf {
    let project = repo.sibling("project");
    let git_dir = project.join(".git");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--bare",
            origin,
            git_dir.to_str().unwrap(),
        ],
    );
    if refspec {
        let fetch = "+refs/heads/*:refs/remotes/origin/*";
        repo.git(&git_dir, &["config", "remote.origin.fetch", fetch]);
    }
    project
}

/// The names in `project/`, kardwt's removal asides (deleted in the background) waited out.
fn names_in(project: &Path) -> Vec<String> {
    let read = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(project)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let aside = |n: &String| n.contains(".kardwt-removing-");
    wait_until(COMMAND_TIMEOUT, || !read().iter().any(aside));
    read()
}

#[test]
fn a_bare_layout_works_end_to_end_with_the_rules_of_the_base_commit() {
    let repo = TestRepo::new();
    // Rules as committed upstream: nothing shared yet.
    commit_rules(&repo, "worktree:\n  sharing:\n    env: disabled\n");
    let project = bare_layout(&repo, true);
    let git_dir = project.join(".git");
    // A kardbrd.yml lying in project/ is no checkout's and is never read (this one would not
    // decode).
    std::fs::write(project.join("kardbrd.yml"), "worktree: [\n").unwrap();
    let out = repo.kardwt(&project, &["install-hooks"]);
    out.expect_code(0);
    assert!(git_dir.join("hooks/post-checkout").is_file(), "{out}");
    assert!(git_dir.join("hooks/pre-push").is_file(), "{out}");

    // The shared directory is the user's, named in git config (relative to project/).
    let shared = project.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join(".env"), "SECRET=1\n").unwrap();
    repo.git(&git_dir, &["config", "kardwt.sharedFrom", "shared"]);

    let out = repo.kardwt(&project, &["add", "1"]);
    out.expect_code(0);
    let one = PathBuf::from(out.stdout.trim());
    assert_eq!(one, project.join("card-1"), "{out}");
    assert!(one.join("kardbrd.yml").is_file());
    assert!(
        one.join(".env").symlink_metadata().is_err(),
        "the committed rules share nothing"
    );

    // Upstream now asks for the .env link: the next card follows the committed rules.
    commit_rules(&repo, "worktree:\n  sharing:\n    env: link\n");
    let out = repo.kardwt(&git_dir, &["add", "2"]);
    out.expect_code(0);
    let two = PathBuf::from(out.stdout.trim());
    assert_eq!(two, project.join("card-2"), "{out}");
    assert_eq!(
        std::fs::read_link(two.join(".env")).unwrap(),
        shared.join(".env"),
        "card 2 does not follow the rules committed upstream"
    );
    assert_eq!(
        repo.git(&two, &["rev-parse", "HEAD"]).trim(),
        repo.origin_main()
    );

    // A plain `git worktree add` from a card is seeded by the hook, as the rules in force say.
    let plain = project.join("plain");
    let out = repo.git_output(
        &one,
        &["worktree", "add", "--quiet", plain.to_str().unwrap()],
    );
    out.expect_code(0);
    assert!(
        git_dir.join("worktrees/plain/kardwt.toml").is_file(),
        "{out}"
    );
    assert_eq!(
        std::fs::read_link(plain.join(".env")).unwrap(),
        shared.join(".env")
    );

    for card in [&one, &two, &plain] {
        repo.kardwt(card, &["verify"]).expect_code(0);
    }
    let out = repo.kardwt(&project, &["list", "--json"]);
    out.expect_code(0);
    let listed: Vec<(String, String, String)> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("card"), s("state"), s("path"))
        })
        .collect();
    let want = |card: &str, path: &Path| {
        (
            card.to_owned(),
            "ready".to_owned(),
            path.display().to_string(),
        )
    };
    assert_eq!(
        listed,
        vec![want("1", &one), want("2", &two), want("plain", &plain)]
    );

    // pre-push: work goes through; the shared .env committed is blocked.
    std::fs::write(two.join("work.txt"), "work\n").unwrap();
    repo.git(&two, &["add", "work.txt"]);
    repo.git(&two, &["commit", "--quiet", "-m", "work"]);
    let out = repo.git_output(
        &two,
        &["push", "--quiet", "origin", "HEAD:refs/heads/card-2"],
    );
    out.expect_code(0);
    let work = repo.git(&two, &["rev-parse", "HEAD"]);
    assert_eq!(
        repo.git(&repo.origin, &["rev-parse", "refs/heads/card-2"]),
        work
    );
    repo.git(&plain, &["add", "--force", ".env"]);
    repo.git(&plain, &["commit", "--quiet", "-m", "secret"]);
    let out = repo.git_output(&plain, &["push", "origin", "HEAD:refs/heads/plain-env"]);
    assert_ne!(out.code, 0, "{out}");
    pinned(&repo).bind(|| {
        insta::assert_snapshot!(
            "bare_layout_env_push_blocked",
            pinned_case("git push", &out)
        )
    });
    let pushed = ["rev-parse", "--verify", "--quiet", "refs/heads/plain-env"];
    assert_ne!(
        repo.git_output(&repo.origin, &pushed).code,
        0,
        "the .env was pushed"
    );
    repo.git(&plain, &["reset", "--quiet", "--hard", "HEAD~1"]);

    let names = [".git", "card-1", "card-2", "kardbrd.yml", "plain", "shared"];
    assert_eq!(names_in(&project), names);

    // remove (from project/ and from a card), then gc collects the merged card.
    repo.kardwt(&project, &["remove", "1"]).expect_code(0);
    assert!(!one.exists());
    repo.kardwt(&two, &["remove", "plain"]).expect_code(0);
    assert!(!plain.exists());
    repo.git(&repo.scratch, &["fetch", "--quiet", "origin"]);
    repo.git(
        &repo.scratch,
        &["merge", "--quiet", "--ff-only", "origin/card-2"],
    );
    repo.git(&repo.scratch, &["push", "--quiet", "origin", "main"]);
    repo.git(&git_dir, &["fetch", "--quiet", "origin"]);
    let out = repo.kardwt(&git_dir, &["gc", "--apply"]);
    out.expect_code(0);
    assert!(!two.exists(), "gc kept the merged card:\n{out}");
    assert_eq!(names_in(&project), [".git", "kardbrd.yml", "shared"]);
}

#[test]
fn without_the_fetch_refspec_or_a_shared_directory_nothing_is_shared_and_project_stays_empty() {
    let repo = TestRepo::new();
    commit_rules(&repo, "worktree:\n  sharing:\n    env: link\n");
    let project = bare_layout(&repo, false);
    // A .env beside .git is not a checkout's file: it is never shared.
    std::fs::write(project.join(".env"), "SECRET=1\n").unwrap();
    repo.kardwt_ok(&project, &["install-hooks"]);
    let out = repo.kardwt(&project, &["add", "7"]);
    out.expect_code(0);
    let card = project.join("card-7");
    assert_eq!(PathBuf::from(out.stdout.trim()), card);
    assert!(card.join(".env").symlink_metadata().is_err());
    // Nothing shared, said once, naming kardwt.sharedFrom.
    assert_eq!(out.stderr.matches("nothing shared").count(), 1, "{out}");
    let mut shown = pinned_case("add 7", &out);
    repo.kardwt(&card, &["verify"]).expect_code(0);
    // The remote out of reach: a ready card is still reused, with the last fetched rules.
    let git_dir = project.join(".git");
    let gone = repo.sibling("gone.git");
    let url = repo.origin.to_str().unwrap();
    repo.git(
        &git_dir,
        &["remote", "set-url", "origin", gone.to_str().unwrap()],
    );
    let out = repo.kardwt(&project, &["add", "7"]);
    out.expect_code(0);
    assert_eq!(PathBuf::from(out.stdout.trim()), card);
    shown.push_str(&pinned_case("add 7, the remote out of reach", &out));
    repo.git(&git_dir, &["remote", "set-url", "origin", url]);
    // The rules in force are the committed ones of the fetched base.
    let out = repo.kardwt(&project, &["config", "check"]);
    out.expect_code(0);
    let named = format!("{}:kardbrd.yml: ok", repo.origin_main());
    assert!(out.stderr.contains(&named), "{out}");
    assert!(out.stdout.contains("env: link"), "{out}");
    // --rules names a file of the user's instead.
    let own = repo.sibling("own rules.yml");
    std::fs::write(&own, "worktree:\n  sharing:\n    env: disabled\n").unwrap();
    let out = repo.kardwt(
        &project,
        &["--rules", own.to_str().unwrap(), "config", "check"],
    );
    out.expect_code(0);
    assert!(out.stdout.contains("env: disabled"), "{out}");
    // No base checkout to fall back to: select says why and prints no path.
    let out = repo.kardwt(&project, &["select", "9", "--existing-or-base"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
    shown.push_str(&pinned_case("select 9 --existing-or-base", &out));
    pinned(&repo).bind(|| insta::assert_snapshot!("bare_layout_nothing_shared", shown));
    // From inside a card, the next card lands beside it, not in a tree of its own.
    let out = repo.kardwt(&card, &["add", "8"]);
    out.expect_code(0);
    assert_eq!(PathBuf::from(out.stdout.trim()), project.join("card-8"));
    repo.kardwt(&card, &["remove", "8"]).expect_code(0);
    assert_eq!(names_in(&project), [".env", ".git", "card-7"]);
    repo.kardwt(&card, &["remove", "7"]).expect_code(0);
    assert_eq!(names_in(&project), [".env", ".git"]);
}

#[test]
fn add_in_a_bare_repository_of_another_shape_is_refused_touching_nothing() {
    let repo = TestRepo::new();
    let bare = repo.sibling("project.git");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &["clone", "--quiet", "--bare", origin, bare.to_str().unwrap()],
    );
    let before = snapshot(&repo.tmp);
    let out = repo.kardwt(&bare, &["add", "1"]);
    out.expect_code(2);
    pinned(&repo)
        .bind(|| insta::assert_snapshot!("bare_of_another_shape", pinned_case("add 1", &out)));
    assert_eq!(snapshot(&repo.tmp), before, "add changed something");
}
