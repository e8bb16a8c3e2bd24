//! `remove` over generated tree states: tracked edits (and rewrites to the same bytes),
//! untracked and ignored files and directories, kardwt's own link, a real file or directory
//! in its place or hidden by another tree's link entry, nested repositories and worktrees, and index entries flagged skip-worktree or
//! assume-unchanged, edited or left absent. Each state holds either some user work, and then
//! `remove` must refuse with nothing on disk changed, or only what can be recreated (HEAD's
//! bytes, what the tree's own ignore rules call expendable, what sparse-checkout left out), and
//! then `remove` must remove the tree. The seed is printed; `KARDWT_SEED=<n>` replays it and
//! `KARDWT_CASES=<n>` runs more cases than the default suite's few.
use std::path::Path;

use crate::support::{snapshot, Rng, TestRepo};

/// How many generated trees the default suite judges (each one a card made and removed).
const DEFAULT_CASES: u64 = 60;

/// One change to a fresh card tree, and whether it is work that removing the tree would lose.
struct Change {
    what: String,
    work: bool,
}

/// The tracked files the repository commits, with their bytes.
const TRACKED: [(&str, &str); 4] = [
    ("src/a.txt", "a\n"),
    ("src/b.txt", "b\n"),
    ("conf/app.ini", "committed\n"),
    ("README.md", "readme\n"),
];

/// Apply one generated change (number `n` of the case) to the tree at `wt`; a change to a
/// tracked file changes `TRACKED[tracked]`, which no other change of the case touches (so each
/// change's verdict stands on its own).
fn change(repo: &TestRepo, rng: &mut Rng, wt: &Path, n: usize, tracked: usize) -> Change {
    let (path, bytes) = TRACKED[tracked];
    let at = wt.join(path);
    let done = |what: String, work: bool| Change { what, work };
    match rng.below(13) {
        0 => {
            std::fs::write(&at, format!("{bytes}edited {n}\n")).unwrap();
            done(format!("edit tracked {path}"), true)
        }
        1 => {
            std::fs::write(&at, bytes).unwrap();
            done(format!("rewrite tracked {path} with its own bytes"), false)
        }
        2 => {
            std::fs::create_dir_all(wt.join("notes")).unwrap();
            std::fs::write(wt.join(format!("notes/n{n}.txt")), "mine\n").unwrap();
            done(format!("untracked notes/n{n}.txt"), true)
        }
        3 => {
            let dir = wt.join(format!("build/out{n}/deep"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("x.o"), "object\n").unwrap();
            std::fs::write(wt.join(format!("run{n}.log")), "log\n").unwrap();
            done(format!("ignored build/out{n}/ and run{n}.log"), false)
        }
        4 => {
            // In place of this tree's own link, if it has one (never written through it), or of
            // the directory an earlier change of the case made there.
            let _ = std::fs::remove_file(wt.join("seed.sql"));
            let _ = std::fs::remove_dir_all(wt.join("seed.sql"));
            std::fs::write(wt.join("seed.sql"), format!("my seed {n}\n")).unwrap();
            done("a real seed.sql, hidden by the link entry".into(), true)
        }
        12 => {
            let _ = std::fs::remove_file(wt.join("seed.sql"));
            std::fs::create_dir_all(wt.join("seed.sql")).unwrap();
            std::fs::write(wt.join("seed.sql/part.sql"), "part\n").unwrap();
            done("a real directory at the link path seed.sql".into(), true)
        }
        5 => {
            let nest = wt.join(format!("build/nest{n}"));
            std::fs::create_dir_all(&nest).unwrap();
            repo.git(&nest, &["init", "--quiet"]);
            std::fs::write(nest.join("draft.txt"), "draft\n").unwrap();
            done(format!("a repository at ignored build/nest{n}"), true)
        }
        6 => {
            let inner = wt.join(format!("build/wt{n}"));
            let branch = format!("gen/{}/{n}", wt.file_name().unwrap().to_string_lossy());
            repo.git(
                &repo.base,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    &branch,
                    inner.to_str().unwrap(),
                ],
            );
            done(format!("a worktree at ignored build/wt{n}"), true)
        }
        7 => {
            repo.git(wt, &["update-index", "--skip-worktree", path]);
            std::fs::write(&at, format!("local {n}\n")).unwrap();
            done(format!("edit skip-worktree {path}"), true)
        }
        8 => {
            repo.git(wt, &["update-index", "--assume-unchanged", path]);
            std::fs::write(&at, format!("local {n}\n")).unwrap();
            done(format!("edit assume-unchanged {path}"), true)
        }
        9 => {
            repo.git(wt, &["update-index", "--skip-worktree", path]);
            let _ = std::fs::remove_file(&at);
            done(format!("skip-worktree {path} left absent"), false)
        }
        10 => {
            repo.git(wt, &["update-index", "--assume-unchanged", path]);
            done(format!("assume-unchanged {path}, unedited"), false)
        }
        _ => {
            std::os::unix::fs::symlink("src/a.txt", wt.join(format!("link{n}"))).unwrap();
            done(format!("untracked symlink link{n}"), true)
        }
    }
}

#[test]
fn remove_refuses_or_deletes_only_what_can_be_recreated() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!(
        "remove over generated trees: seed {seed}, {cases} cases (KARDWT_SEED={seed} replays)"
    );
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);

    let repo = TestRepo::new();
    let mut files: Vec<(&str, &str)> = TRACKED.to_vec();
    files.push((".gitignore", "build/\n*.log\n"));
    repo.commit_files(&files, "tracked files and ignore rules");
    std::fs::write(repo.base.join("seed.sql"), "base seed\n").unwrap();
    let plain = repo.rules_with_prepare(false);
    // Another card links the base's seed.sql: its exclude entry hides seed.sql in every tree.
    let linking = format!("{plain}  sharing:\n    link: [seed.sql]\n");
    repo.write_rules(&linking);
    let other = repo.add_card("other");
    let other_before = snapshot(&other);

    let (mut refused, mut removed) = (0, 0);
    for case in 0..cases {
        let card = format!("g{case}");
        // A third of the trees get their own link of seed.sql (expendable while intact).
        let linked = rng.chance(1, 3);
        repo.write_rules(if linked { &linking } else { &plain });
        let wt = repo.add_card(&card);
        let first = rng.below(TRACKED.len());
        let changes: Vec<Change> = (0..rng.below(TRACKED.len()))
            .map(|n| change(&repo, &mut rng, &wt, n, (first + n) % TRACKED.len()))
            .collect();
        let work = changes.iter().any(|c| c.work);
        let said: Vec<&str> = changes.iter().map(|c| c.what.as_str()).collect();
        let what = format!("seed {seed}, case {case} (own link: {linked}): {said:?}");
        let before = snapshot(&wt);
        let base = repo.snapshot_base();
        let out = repo.kardwt(&repo.base, &["remove", &card, "--grace", "1"]);
        if work {
            assert_ne!(out.code, 0, "{what}: user work was removed:\n{out}");
            assert_eq!(
                snapshot(&wt),
                before,
                "{what}: a refusal changed the tree:\n{out}"
            );
            assert!(repo.is_registered(&wt), "{what}:\n{out}");
            refused += 1;
        } else {
            assert_eq!(out.code, 0, "{what}: nothing here is work, yet:\n{out}");
            assert!(!wt.exists(), "{what}:\n{out}");
            removed += 1;
        }
        assert_eq!(
            repo.snapshot_base(),
            base,
            "{what}: the base changed:\n{out}"
        );
        assert_eq!(
            snapshot(&other),
            other_before,
            "{what}: the other card changed"
        );
    }
    eprintln!(
        "remove over generated trees: {cases} cases ({refused} refused, {removed} removed) in {:?}",
        started.elapsed()
    );
}
