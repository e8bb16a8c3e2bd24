//! pre-push over generated placements of the bytes kardwt shares into trees: the root `.env`
//! (linked), a file linked whole, files at any depth inside a linked directory, a copied file,
//! each committed under another name at any depth, renamed afterwards, buried under a commit
//! that deletes it, as a symlink reaching it or as kardwt's own link forced past the ignore
//! rules; pushed from the tree, from the base, from a second card that merged the first, or
//! from the base after the first tree was removed with its branch kept. No push carries one:
//! it is refused and the remote lacks the blob. Innocuous commits (the same size with one byte
//! changed, a prefix, content the base tracks, a tracked `.env.example`, a deletion, ordinary
//! work) must pass, so the test fails both ways. The seed is printed; `KARDWT_SEED=<n>`
//! replays it and `KARDWT_CASES=<n>` runs more cases than the default suite's.
use std::path::{Path, PathBuf};

use crate::support::push::{head, push};
use crate::support::{Rng, TestRepo};

mod objects;

/// How many generated repositories the default suite runs (each a few pushes).
const DEFAULT_CASES: u64 = 50;

/// A file kardwt shares into trees: its path in a tree and its bytes.
struct Shared {
    path: String,
    bytes: Vec<u8>,
    /// kardwt's own link in the tree (a root `.env` or a linked file), not a file inside a
    /// linked directory or a copy.
    is_link: bool,
}

fn write(root: &Path, rel: &str, body: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// The base's shared files, written with bytes unique to `case`; the rules that share them.
fn share(repo: &TestRepo, rng: &mut Rng, case: u64) -> Vec<Shared> {
    let token = |rng: &mut Rng, what: &str| format!("{what}-{case}-{:016x}", rng.next());
    let mut shared = vec![
        Shared {
            path: ".env".into(),
            bytes: format!("TOKEN={}\n", token(rng, "env")).into_bytes(),
            is_link: true,
        },
        Shared {
            path: "seed.sql".into(),
            bytes: format!("insert into keys values ('{}');\n", token(rng, "seed")).into_bytes(),
            is_link: true,
        },
        Shared {
            path: "config/dev.local.toml".into(),
            bytes: format!("token = \"{}\"\n", token(rng, "copied")).into_bytes(),
            is_link: false,
        },
    ];
    for depth in 0..1 + rng.below(4) {
        let dirs: String = (0..depth).map(|d| format!("d{d}/")).collect();
        shared.push(Shared {
            path: format!("data/{dirs}creds{depth}.json"),
            bytes: format!("{{\"api_key\": \"{}\"}}\n", token(rng, "linked")).into_bytes(),
            is_link: false,
        });
    }
    for s in &shared {
        write(&repo.base, &s.path, &s.bytes);
    }
    // Linked files of other sizes: never read unless a pushed blob has their size.
    for i in 0..rng.below(40) {
        write(
            &repo.base,
            &format!("data/bulk/{i}.bin"),
            &vec![b'x'; 300 + i],
        );
    }
    repo.write_rules(
        "worktree:\n  sharing:\n    env: link\n    copy: [config/dev.local.toml]\n    \
         link: [data, seed.sql]\n",
    );
    shared
}

/// Where a commit is made and pushed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    Tree,
    Base,
    /// A second card, after merging the first card's branch.
    SecondCard,
}

/// A random path for a new file, at depth 0 to 4, never ignored.
fn new_path(rng: &mut Rng, n: usize) -> String {
    let dirs: String = (0..rng.below(5)).map(|d| format!("p{d}/")).collect();
    let name = *rng.pick(&["notes", "creds", "fixture", "dump", "x"]);
    let ext = *rng.pick(&[".txt", ".json", "", ".md"]);
    format!("{dirs}{name}{n}{ext}")
}

/// Commit `files` in `dir` (plain `git add`); returns the new HEAD.
fn commit(repo: &TestRepo, dir: &Path, files: &[(&str, &[u8])], msg: &str) -> String {
    for (rel, body) in files {
        write(dir, rel, body);
        repo.git(dir, &["add", "--", rel]);
    }
    repo.git(dir, &["commit", "--quiet", "-m", msg]);
    head(repo, dir)
}

/// The blob id of `bytes`.
fn blob_id(repo: &TestRepo, bytes: &[u8]) -> String {
    let tmp = repo.tmp.join("blob-probe");
    std::fs::write(&tmp, bytes).unwrap();
    let id = repo.git(&repo.base, &["hash-object", "--", tmp.to_str().unwrap()]);
    std::fs::remove_file(tmp).unwrap();
    id.trim().to_owned()
}

/// Does origin hold the object `oid`?
fn origin_has(repo: &TestRepo, oid: &str) -> bool {
    repo.git_output(&repo.origin, &["cat-file", "-e", oid]).code == 0
}

/// Make one generated commit (or two) in `dir` carrying a shared file's bytes; returns what it
/// did and the blob that must not reach the remote (`None` for a symlink placement).
fn carry(
    repo: &TestRepo,
    rng: &mut Rng,
    dir: &Path,
    s: &Shared,
    n: usize,
) -> (String, Option<String>) {
    let blob = Some(blob_id(repo, &s.bytes));
    let at = new_path(rng, n);
    match rng.below(6) {
        0 => {
            commit(repo, dir, &[(&at, &s.bytes)], "copy");
            (format!("{} copied to {at}", s.path), blob)
        }
        1 => {
            // Read through the tree's own link or copy, not from the base.
            let bytes = std::fs::read(dir.join(&s.path)).unwrap_or_else(|_| s.bytes.clone());
            commit(repo, dir, &[(&at, &bytes)], "through the tree");
            (
                format!("{} read in the tree, committed as {at}", s.path),
                blob,
            )
        }
        2 => {
            commit(repo, dir, &[(&at, &s.bytes)], "copy");
            let to = new_path(rng, n + 100);
            if let Some(parent) = Path::new(&to).parent() {
                std::fs::create_dir_all(dir.join(parent)).unwrap();
            }
            repo.git(dir, &["mv", "--", &at, &to]);
            repo.git(dir, &["commit", "--quiet", "-m", "rename"]);
            (
                format!("{} committed as {at}, renamed to {to}", s.path),
                blob,
            )
        }
        3 => {
            commit(repo, dir, &[(&at, &s.bytes)], "copy");
            repo.git(dir, &["rm", "--quiet", "--", &at]);
            repo.git(dir, &["commit", "--quiet", "-m", "gone again"]);
            (
                format!("{} committed as {at}, deleted in the next commit", s.path),
                blob,
            )
        }
        4 if !s.path.starts_with("config/") => {
            // A symlink inside the repository that reaches a file kardwt links (a symlink to
            // a copy's path carries no byte of it: a clone has no such file).
            let link = PathBuf::from(&at);
            let up = "../".repeat(link.components().count() - 1);
            let target = format!("{up}{}", s.path);
            let p = dir.join(&link);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&target, &p).unwrap();
            repo.git(dir, &["add", "--", &at]);
            repo.git(dir, &["commit", "--quiet", "-m", "link"]);
            (format!("symlink {at} -> {target}"), None)
        }
        // (A reset after a refused push takes a link forced in before with it: then it is not
        // there to force.)
        _ if s.is_link && dir != repo.base && dir.join(&s.path).symlink_metadata().is_ok() => {
            // kardwt's own link, forced past the ignore rules.
            repo.git(dir, &["add", "-f", "--", &s.path]);
            // The same link may have been forced in by an earlier case in this tree already.
            repo.git(dir, &["commit", "--quiet", "--allow-empty", "-m", "forced"]);
            (format!("kardwt's link {} forced in", s.path), None)
        }
        _ => {
            let deep = format!("deep/er/{at}");
            commit(repo, dir, &[(&deep, &s.bytes)], "deep copy");
            (format!("{} copied to {deep}", s.path), blob)
        }
    }
}

/// Make one generated innocuous commit in `dir`; returns what it did.
fn innocuous(repo: &TestRepo, rng: &mut Rng, dir: &Path, shared: &[Shared], n: usize) -> String {
    let at = new_path(rng, n);
    let s = rng.pick(shared);
    match rng.below(6) {
        0 => {
            let mut b = s.bytes.clone();
            let i = rng.below(b.len() - 1);
            b[i] = if b[i] == b'Q' { b'R' } else { b'Q' };
            commit(repo, dir, &[(&at, &b)], "same size");
            format!("{} with one byte changed, as {at}", s.path)
        }
        1 => {
            commit(repo, dir, &[(&at, &s.bytes[..s.bytes.len() - 1])], "prefix");
            format!("{} less its last byte, as {at}", s.path)
        }
        2 => {
            let readme = std::fs::read(dir.join("README.md")).unwrap();
            commit(repo, dir, &[(&at, &readme)], "tracked content");
            format!("README.md's content as {at}")
        }
        3 => {
            // Its own directory per commit: two cards adding different examples at one path
            // would only make a merge conflict of the second card's merge.
            let body = format!("TOKEN=\n# {n}\n");
            let at = if n == 0 {
                ".env.example".to_owned()
            } else {
                format!("ex{n}/.env.example")
            };
            commit(repo, dir, &[(&at, body.as_bytes())], "example");
            at
        }
        4 if dir.join("src/lib.txt").is_file() => {
            repo.git(dir, &["rm", "--quiet", "--", "src/lib.txt"]);
            repo.git(dir, &["commit", "--quiet", "-m", "delete"]);
            "src/lib.txt deleted".into()
        }
        _ => {
            commit(
                repo,
                dir,
                &[(&at, format!("work {n}\n").as_bytes())],
                "work",
            );
            format!("ordinary work {at}")
        }
    }
}

#[test]
fn no_push_carries_shared_bytes_and_ordinary_work_passes() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!("pre-push over generated placements: seed {seed}, {cases} cases (KARDWT_SEED={seed} replays)");
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);
    let (mut refused, mut passed) = (0, 0);
    for case in 0..cases {
        let repo = TestRepo::new();
        repo.commit_files(
            &[(
                ".gitignore",
                ".env\n.env.*\n!.env.example\nconfig/*.local.toml\ndata/\nseed.sql\n",
            )],
            "ignore rules",
        );
        let shared = share(&repo, &mut rng, case);
        repo.install_hooks();
        let one = repo.add_card("1");
        repo.git(&repo.base, &["switch", "--quiet", "-c", "topic"]);
        let mut second: Option<PathBuf> = None;
        for n in 0..1 + rng.below(4) {
            let from = *rng.pick(&[From::Tree, From::Tree, From::Base, From::SecondCard]);
            let (dir, branch) = match from {
                From::Tree => (one.clone(), "card/1"),
                From::Base => (repo.base.clone(), "topic"),
                From::SecondCard => {
                    let two = second.get_or_insert_with(|| repo.add_card("2")).clone();
                    repo.git(&two, &["merge", "--quiet", "--no-edit", "card/1"]);
                    (two, "card/2")
                }
            };
            let before = head(&repo, &dir);
            let mut said = Vec::new();
            let mut carried = Vec::new();
            // Half the pushes carry shared bytes in one of their commits, half are innocuous.
            let carrying = rng.chance(1, 2);
            let commits = 1 + rng.below(3);
            let carrier = rng.below(commits);
            let mut bad = false;
            for k in 0..commits {
                if carrying && (k == carrier || rng.chance(1, 3)) {
                    let s = rng.pick(&shared);
                    let (what, blob) = carry(&repo, &mut rng, &dir, s, n * 10 + k);
                    said.push(what);
                    carried.extend(blob);
                    bad = true;
                } else {
                    said.push(innocuous(&repo, &mut rng, &dir, &shared, n * 10 + k));
                }
            }
            let tip = head(&repo, &dir);
            let what = format!("seed {seed}, case {case}, push {n} from {from:?}: {said:?}");
            let out = push(&repo, &dir, &[branch]);
            if bad {
                assert_ne!(out.code, 0, "{what}: the push went through:\n{out}");
                assert!(
                    out.stderr.contains("blocked"),
                    "{what}: not refused by the check:\n{out}"
                );
                for blob in &carried {
                    assert!(
                        !origin_has(&repo, blob),
                        "{what}: origin received blob {blob}"
                    );
                }
                assert!(!origin_has(&repo, &tip), "{what}: origin received {tip}");
                repo.git(&dir, &["reset", "--quiet", "--hard", &before]);
                refused += 1;
            } else {
                assert_eq!(out.code, 0, "{what}: an innocuous push was refused:\n{out}");
                assert!(origin_has(&repo, &tip), "{what}: origin lacks {tip}");
                passed += 1;
            }
        }
        // Last, sometimes: card 1 commits shared bytes and is removed with its branch kept;
        // the branch pushed from the base, or merged into a new card, is refused all the same.
        if rng.chance(1, 2) {
            let s = rng.pick(&shared);
            let (what, blob) = carry(&repo, &mut rng, &one, s, 99);
            let tip = head(&repo, &one);
            let what = format!("seed {seed}, case {case}, after removal: {what}");
            let out = repo.kardwt(&repo.base, &["remove", "1"]);
            assert_eq!(out.code, 0, "{what}: remove 1:\n{out}");
            let out = if rng.chance(1, 2) {
                push(&repo, &repo.base, &["card/1"])
            } else {
                let three = repo.add_card("3");
                repo.git(&three, &["merge", "--quiet", "--no-edit", "card/1"]);
                push(&repo, &three, &["card/3"])
            };
            assert_ne!(out.code, 0, "{what}: the push went through:\n{out}");
            assert!(
                out.stderr.contains("blocked"),
                "{what}: not refused by the check:\n{out}"
            );
            if let Some(blob) = blob {
                assert!(
                    !origin_has(&repo, &blob),
                    "{what}: origin received blob {blob}"
                );
            }
            assert!(!origin_has(&repo, &tip), "{what}: origin received {tip}");
            refused += 1;
        }
    }
    eprintln!(
        "pre-push over generated placements: {cases} cases ({refused} pushes refused, {passed} passed) in {:?}",
        started.elapsed()
    );
}
