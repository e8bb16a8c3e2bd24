//! `gc --branches --apply` and `remove` (plain, `--delete-branch`, `--force`) over generated
//! branch topologies and mounts: cards (made by `git kardwt add`) with new, edited, reverted,
//! amended and empty commits, a merge of main, a symlink to a directory outside, or commits that
//! cancel out; merged, squash-merged or rebase-merged upstream, pushed in part or not at all,
//! their remote branch deleted or not, the base fetched (and pruned) or not; some with a tmpfs
//! or a bind mount of a directory outside the trees at an ignored path (`data/`, `sub/cache/`).
//! The oracle is git's: no commit that a ref or reflog reached before becomes unreachable from
//! every ref and reflog unless a commit still reached makes the same change (equal patch ids,
//! `git cherry`'s rule); and no byte outside the trees changes: the directories outside, the
//! base, and what is mounted (the tmpfs's files, the bound directory), whatever remove and gc
//! say; remove refuses a tree with a mount, naming it. Mounts need root: without it those cases
//! are skipped with a notice. The seed is printed; `KARDWT_SEED=<n>` replays it and
//! `KARDWT_CASES=<n>` runs more cases.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use crate::support::mount::Mounted;
use crate::support::{snapshot, Rng, TestRepo};

/// How many generated repositories the default suite judges (each a few cards, removed and
/// collected).
const DEFAULT_CASES: u64 = 12;

/// What happens to a card's branch upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fate {
    Merged,
    Squashed,
    Rebased,
    PartlyPushed,
    Unpushed,
}

const FATES: [Fate; 5] = [
    Fate::Merged,
    Fate::Squashed,
    Fate::Rebased,
    Fate::PartlyPushed,
    Fate::Unpushed,
];

/// `sh -c script` in `dir` with the test's environment; its stdout (asserting exit 0).
#[track_caller]
fn sh(repo: &TestRepo, dir: &Path, script: &str) -> String {
    let out = repo
        .command("sh", dir)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every commit a ref or reflog of the repository reaches (`git rev-list --all --reflog`).
fn reached(repo: &TestRepo) -> BTreeSet<String> {
    sh(repo, &repo.base, "git rev-list --all --reflog")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The patch id of every non-merge commit a ref or reflog reaches (`git patch-id --stable`),
/// by commit; a commit that changes nothing has none and is keyed `empty`, as git's cherry
/// rule pairs empty commits.
fn patch_ids(repo: &TestRepo, commits: &BTreeSet<String>) -> BTreeMap<String, String> {
    let list = repo.tmp.join("commits-to-patch-id");
    let body: String = commits.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(&list, body).unwrap();
    let out = sh(
        repo,
        &repo.base,
        &format!(
            "git log --no-walk=unsorted --stdin -p --format='commit %H' < {} | git patch-id --stable",
            crate::support::sh_quote(&list)
        ),
    );
    let mut ids: BTreeMap<String, String> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, c)| (c.to_owned(), id.to_owned()))
        .collect();
    for c in commits {
        ids.entry(c.clone()).or_insert_with(|| "empty".to_owned());
    }
    ids
}

/// Is `commit` a merge?
fn is_merge(repo: &TestRepo, commit: &str) -> bool {
    repo.git(
        &repo.base,
        &["rev-list", "--no-walk", "--min-parents=2", commit],
    )
    .trim()
    .eq(commit)
}

/// Make the card tree `wt` (card `n`) a history of `k` commits drawn at random; returns what
/// was done, for the failure message.
fn commits(repo: &TestRepo, rng: &mut Rng, wt: &Path, n: usize, outside: &Path) -> Vec<String> {
    let fork = repo.git(wt, &["rev-parse", "HEAD"]).trim().to_owned();
    let mut done = Vec::new();
    let k = 1 + rng.below(3);
    for j in 0..k {
        let step = match rng.below(7) {
            0 => {
                std::fs::write(wt.join(format!("g{n}-{j}.txt")), format!("new {n} {j}\n")).unwrap();
                repo.git(wt, &["add", "-A"]);
                "new file"
            }
            1 => {
                let f = wt.join(format!("shared-{n}.txt"));
                let was = std::fs::read_to_string(&f).unwrap_or_default();
                std::fs::write(&f, format!("{was}line {j}\n")).unwrap();
                repo.git(wt, &["add", "-A"]);
                "edit"
            }
            2 if j > 0 => {
                // A merge or an empty commit does not revert: then nothing is done.
                if repo.git_output(wt, &["revert", "--no-edit", "HEAD"]).code == 0 {
                    done.push("revert".to_owned());
                } else {
                    let _ = repo.git_output(wt, &["revert", "--abort"]);
                }
                continue;
            }
            3 => "empty",
            6 if j > 0 => {
                // The last commit amended: the one it replaces stays only in the reflogs.
                std::fs::write(wt.join(format!("amend-{n}-{j}.txt")), "amended\n").unwrap();
                repo.git(wt, &["add", "-A"]);
                repo.git(wt, &["commit", "--quiet", "--amend", "--no-edit"]);
                done.push("amend".to_owned());
                continue;
            }
            4 => {
                let link = wt.join(format!("out-{n}"));
                if !link.exists() {
                    std::os::unix::fs::symlink(outside, &link).unwrap();
                }
                repo.git(wt, &["add", "-A"]);
                "symlink outside"
            }
            _ => {
                // main moves on and the card merges it.
                repo.commit_on_origin(&format!("main moves on for g{n} {j}"));
                repo.git(wt, &["fetch", "--quiet", "origin"]);
                repo.git(
                    wt,
                    &[
                        "merge",
                        "--quiet",
                        "--no-ff",
                        "-m",
                        "merge main",
                        "origin/main",
                    ],
                );
                done.push("merge main".to_owned());
                continue;
            }
        };
        repo.git(
            wt,
            &[
                "commit",
                "--quiet",
                "--allow-empty",
                "-m",
                &format!("g{n} {step} {j}"),
            ],
        );
        done.push(step.to_owned());
    }
    if rng.chance(1, 4) {
        // Cancel it all out: the tree of the fork again, in one more commit.
        repo.git(wt, &["rm", "-r", "-q", "--", "."]);
        repo.git(wt, &["checkout", &fork, "--", "."]);
        repo.git(
            wt,
            &["commit", "--quiet", "--allow-empty", "-m", "cancel out"],
        );
        done.push("cancel out".to_owned());
    }
    done
}

/// Land `branch` upstream as `fate` says (through the scratch clone); returns what was done.
fn land(repo: &TestRepo, rng: &mut Rng, wt: &Path, branch: &str, fate: Fate) -> String {
    let s = &repo.scratch;
    let theirs = format!("origin/{branch}");
    match fate {
        Fate::Unpushed => return "not pushed".into(),
        Fate::PartlyPushed => {
            repo.git(
                wt,
                &[
                    "push",
                    "--quiet",
                    "origin",
                    &format!("HEAD~1:refs/heads/{branch}"),
                ],
            );
        }
        _ => {
            repo.git(wt, &["push", "--quiet", "origin", branch]);
        }
    }
    repo.git(s, &["fetch", "--quiet", "origin"]);
    repo.git(s, &["reset", "--quiet", "--hard", "origin/main"]);
    let how = match fate {
        Fate::Merged | Fate::PartlyPushed if rng.chance(1, 2) || fate == Fate::Merged => {
            let merged = repo.git_output(
                s,
                &["merge", "--quiet", "--no-ff", "-m", "merge it", &theirs],
            );
            if merged.code != 0 {
                repo.git(s, &["merge", "--abort"]);
                "pushed, merge conflicted"
            } else {
                "pushed and merged"
            }
        }
        Fate::Squashed => {
            let squashed = repo.git_output(s, &["merge", "--quiet", "--squash", &theirs]);
            if squashed.code != 0 {
                repo.git(s, &["reset", "--quiet", "--hard", "origin/main"]);
                "pushed, squash conflicted"
            } else {
                repo.git(s, &["commit", "--quiet", "--allow-empty", "-m", "squashed"]);
                "pushed and squash-merged"
            }
        }
        Fate::Rebased => {
            let picks = repo.git(
                s,
                &[
                    "rev-list",
                    "--reverse",
                    "--no-merges",
                    &format!("origin/main..{theirs}"),
                ],
            );
            let mut how = "pushed and rebase-merged";
            for c in picks.lines() {
                let picked = repo.git_output(s, &["cherry-pick", "--allow-empty", c]);
                if picked.code != 0 {
                    let _ = repo.git_output(s, &["cherry-pick", "--skip"]);
                    how = "pushed and rebase-merged in part";
                }
            }
            how
        }
        _ => "pushed in part",
    };
    repo.git(s, &["push", "--quiet", "origin", "HEAD:refs/heads/main"]);
    if rng.chance(1, 2) {
        repo.git(s, &["push", "--quiet", "origin", "--delete", branch]);
        return format!("{how}, remote branch deleted");
    }
    how.into()
}

/// A file system mounted in a card's tree, and what it held when mounted.
struct Mount {
    guard: Mounted,
    /// `tmpfs` or `bind`, for the failure message.
    kind: &'static str,
    /// The bound directory outside the trees (for a bind mount), checked byte for byte.
    source: Option<std::path::PathBuf>,
    before: BTreeMap<std::path::PathBuf, Vec<u8>>,
}

/// Mount a tmpfs holding known bytes, or bind-mount a directory outside the trees holding
/// known bytes, at an ignored path in the card tree `wt` (`data/`, or `sub/cache/` nested).
/// `None` when mounts cannot be made here (not root: the support says so).
fn mount_in(repo: &TestRepo, rng: &mut Rng, wt: &Path, n: usize) -> Option<Mount> {
    let at = if rng.chance(1, 2) {
        wt.join("data")
    } else {
        wt.join("sub/cache")
    };
    std::fs::create_dir_all(&at).unwrap();
    let (guard, kind, source) = if rng.chance(1, 2) {
        let guard = Mounted::tmpfs(&repo.tmp, &at)?;
        std::fs::create_dir_all(at.join("deep")).unwrap();
        std::fs::write(at.join("precious.db"), format!("mounted bytes of g{n}\n")).unwrap();
        std::fs::write(at.join("deep/more.bin"), [0u8, 1, 2, 255]).unwrap();
        (guard, "tmpfs", None)
    } else {
        let source = repo.tmp.join(format!("bound-{n}"));
        std::fs::create_dir_all(source.join("deep")).unwrap();
        std::fs::write(source.join("keep.txt"), format!("bound bytes of g{n}\n")).unwrap();
        std::fs::write(source.join("deep/more.bin"), [9u8, 8, 7]).unwrap();
        (
            Mounted::bind(&repo.tmp, &source, &at)?,
            "bind",
            Some(source),
        )
    };
    let before = snapshot(&at);
    Some(Mount {
        guard,
        kind,
        source,
        before,
    })
}

/// The arguments of one generated `remove` of `card`: plain, `--delete-branch`, or both with
/// `--force`.
fn remove_args<'a>(rng: &mut Rng, card: &'a str) -> Vec<&'a str> {
    match rng.below(4) {
        0 => vec!["remove", card],
        1 => vec!["remove", card, "--delete-branch"],
        2 => vec!["remove", card, "--delete-branch", "--force"],
        _ => vec!["remove", card, "--force"],
    }
}

#[test]
fn gc_and_remove_lose_no_commit_and_no_byte_outside_over_generated_branch_topologies() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!(
        "gc and remove over generated branch topologies and mounts: seed {seed}, {cases} cases \
         (KARDWT_SEED={seed} replays)"
    );
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let mut tally: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let (mut can_mount, mut mounted, mut refused, mut gc_failed) = (true, 0, 0, 0);
    for case in 0..cases {
        let repo = TestRepo::new();
        repo.commit_files(
            &[(".gitignore", "data/\ncache/\n")],
            "ignore data and cache",
        );
        let outside = repo.tmp.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep.txt"), "not the tree's\n").unwrap();
        let mut cards = Vec::new();
        for n in 0..2 + rng.below(3) {
            let card = format!("g{n}");
            let wt = repo.add_card(&card);
            let made = commits(&repo, &mut rng, &wt, n, &outside);
            let fate = *rng.pick(&FATES);
            let how = land(&repo, &mut rng, &wt, &format!("card/{card}"), fate);
            cards.push((card, wt, fate, format!("{made:?}, {how}")));
        }
        if rng.chance(1, 2) {
            repo.git(&repo.base, &["fetch", "--quiet", "--prune", "origin"]);
        }
        // Declared after the repository: unmounted first, a failing case included.
        let mut mounts: BTreeMap<String, Mount> = BTreeMap::new();
        for (n, (card, wt, _, _)) in cards.iter().enumerate() {
            if can_mount && rng.chance(1, 3) {
                match mount_in(&repo, &mut rng, wt, n) {
                    Some(m) => {
                        mounts.insert(card.clone(), m);
                    }
                    None => {
                        can_mount = false;
                        eprintln!("SKIPPED: the mount cases (mounts need root)");
                    }
                }
            }
        }
        mounted += mounts.len();
        let ran = std::cell::RefCell::new(Vec::new());
        let what = |extra: &str| {
            let shown: Vec<String> = cards
                .iter()
                .map(|(c, _, f, how)| {
                    let m = mounts.get(c).map_or(String::new(), |m| {
                        format!(", a {} mounted at {}", m.kind, m.guard.at.display())
                    });
                    format!("{c} {f:?}: {how}{m}")
                })
                .collect();
            format!(
                "seed {seed}, case {case}: {shown:#?}\nran: {:?}\n{extra}",
                ran.borrow()
            )
        };

        let before = reached(&repo);
        let outside_before = snapshot(&outside);
        let sources_before: Vec<_> = mounts
            .values()
            .filter_map(|m| m.source.as_ref().map(|s| (s.clone(), snapshot(s))))
            .collect();
        let base_before = repo.snapshot_base();
        let mut removed_with_branch = BTreeSet::new();
        for (card, wt, _, _) in &cards {
            let mount = mounts.get(card);
            if mount.is_none() && !rng.chance(3, 4) {
                continue;
            }
            let args = remove_args(&mut rng, card);
            let out = repo.kardwt(&repo.base, &args);
            ran.borrow_mut()
                .push(format!("{} (exit {})", args.join(" "), out.code));
            if let Some(m) = mount {
                // Refused, naming the mount, forced or not; the tree stays registered.
                refused += 1;
                assert!(
                    out.code == 3
                        && out.stderr.contains(&format!(
                            "has a file system mounted in it ({})",
                            m.guard.at.display()
                        )),
                    "{args:?}: {}",
                    what(&out.to_string())
                );
                assert!(repo.is_registered(wt), "{}", what(&out.to_string()));
            } else if out.code == 0 && !repo.branch_exists(&format!("card/{card}")) {
                removed_with_branch.insert(card.clone());
            }
            // Any other refusal is an answer too; the oracle below judges what it left.
        }
        let gc = repo.kardwt(&repo.base, &["gc", "--branches", "--apply", "--json"]);
        // gc's removal of a tree with a mount in it fails (exit 1), naming it.
        assert!(
            gc.code == 0 || (gc.code == 1 && !mounts.is_empty()),
            "{}",
            what(&gc.to_string())
        );
        assert!(
            gc.code == 0 || gc.to_string().contains("a file system mounted in it"),
            "{}",
            what(&gc.to_string())
        );
        gc_failed += usize::from(gc.code != 0);

        // No byte outside the trees changed: what is mounted (still mounted where it was),
        // the bound directories, the directory outside, the base.
        for (card, m) in &mounts {
            let at = &m.guard.at;
            assert!(
                crate::support::mount::mounted(at),
                "{card}'s mount at {} is gone: {}",
                at.display(),
                what(&gc.to_string())
            );
            assert_eq!(snapshot(at), m.before, "{}", what("the mounted bytes"));
        }
        for (source, was) in &sources_before {
            assert_eq!(&snapshot(source), was, "{}", what("a bound directory"));
        }
        assert_eq!(snapshot(&outside), outside_before, "{}", what("outside"));
        assert_eq!(repo.snapshot_base(), base_before, "{}", what("the base"));

        let after = reached(&repo);
        let lost: BTreeSet<String> = before.difference(&after).cloned().collect();
        if !lost.is_empty() {
            let ids_after: BTreeSet<String> = patch_ids(&repo, &after).into_values().collect();
            for (commit, id) in patch_ids(&repo, &lost) {
                let shown = repo.git(&repo.base, &["log", "-1", "--stat", &commit]);
                assert!(
                    !is_merge(&repo, &commit),
                    "a merge commit is lost: {shown}\n{}",
                    what(&gc.to_string())
                );
                assert!(
                    ids_after.contains(&id),
                    "a commit is lost with no commit making its change: {shown}\n{}",
                    what(&gc.to_string())
                );
            }
        }

        let v = gc.json();
        let deleted: BTreeSet<String> = v["branches"]["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["outcome"] == "deleted")
            .map(|b| b["branch"].as_str().unwrap().to_owned())
            .collect();
        for (card, _, fate, _) in &cards {
            let slot = tally.entry(format!("{fate:?}")).or_default();
            if removed_with_branch.contains(card) {
                slot.0 += 1;
            } else if deleted.contains(&format!("card/{card}")) {
                slot.1 += 1;
            } else {
                slot.2 += 1;
            }
        }
        drop(mounts);
    }
    eprintln!(
        "gc and remove over generated branch topologies and mounts: {cases} cases in {:.1?}; \
         {mounted} mounts, {refused} removals of a mounted tree refused, {gc_failed} gc runs \
         failing on one; branches deleted by \
         remove/deleted by gc/kept, by fate: {tally:?}",
        started.elapsed()
    );
}
