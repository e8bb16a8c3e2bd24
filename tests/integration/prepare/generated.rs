//! The prepare cache over generated inputs, hooks and damage: committed inputs (a lockfile, a
//! directory of patches, one never committed), uncommitted edits and new untracked inputs, hooks
//! that build their outputs from the inputs (modes, symlinks, empty directories), that write
//! the tree's path, directory name, git dir or branch (in a file or a name), the ports, an
//! argument, a passed-through variable or one of the tree's facts into them, a helper edited between two cards, and stored entries damaged (a byte
//! flipped at the same size, a file removed or added, a mode changed). For every later
//! prepare, either the hook ran (a miss), or the tree after the hit is byte for byte (names,
//! contents, modes, symlinks) the tree a prepare run in it gives: the same command run again
//! with the cache set aside. The seed is printed; `KARDWT_SEED=<n>` replays it and
//! `KARDWT_CASES=<n>` runs more cases than the default suite's.
use std::path::{Path, PathBuf};

use crate::support::{sh_quote, tree_state, yaml_str, Output, Rng, TestRepo, COMMAND_TIMEOUT};

/// How many generated repositories the default suite runs (each two cards and a few prepares).
const DEFAULT_CASES: u64 = 60;

/// The facts a step may write into the outputs (per tree, or the same for every tree).
const FACTS: [&str; 8] = [
    "KARDWT_CARD",
    "KARDWT_BOARD",
    "KARDWT_BRANCH",
    "KARDWT_BASE_OID",
    "KARDWT_REASON",
    "KARDWT_PHASE",
    "KARDWT_BASE",
    "KARDWT_COMMON_DIR",
];

/// One generated repository: its rules and the hook's steps.
struct World {
    patches: bool,
    extra: bool,
    vendor: bool,
    ports: bool,
    passthrough: bool,
    arg: Option<String>,
    steps: Vec<String>,
    /// A step writes the tree's path or names: its outputs must never be stored.
    names_tree: bool,
    /// A step reads `KARDWT_REASON`, which differs between `add` and `prepare`.
    reads_reason: bool,
    said: Vec<String>,
}

fn world(rng: &mut Rng) -> World {
    let mut w = World {
        patches: rng.chance(1, 2),
        extra: rng.chance(1, 3),
        vendor: rng.chance(1, 3),
        ports: rng.chance(1, 2),
        passthrough: rng.chance(1, 2),
        arg: rng
            .chance(1, 3)
            .then(|| format!("--mode=m{}", rng.below(3))),
        steps: vec!["cat package-lock.json > node_modules/lock-copy".into()],
        names_tree: false,
        reads_reason: false,
        said: Vec::new(),
    };
    if w.patches {
        w.steps
            .push("if [ -d patches ]; then cp -R patches node_modules/patches; fi".into());
    }
    if w.extra {
        w.steps
            .push("if [ -f extra.lock ]; then cp extra.lock node_modules/extra-copy; fi".into());
    }
    for n in 0..1 + rng.below(4) {
        let (step, said) = match rng.below(9) {
            0 => (
                "mkdir -p node_modules/.bin node_modules/empty node_modules/private && \
                 printf '#!/bin/sh\\n' > node_modules/.bin/tool && chmod 751 node_modules/.bin/tool && \
                 printf s > node_modules/secret && chmod 600 node_modules/secret && \
                 chmod 700 node_modules/private && ln -sf ../lock-copy node_modules/.bin/lock"
                    .to_owned(),
                "modes and symlinks".to_owned(),
            ),
            1 => {
                let size = rng.below(70_000);
                let byte = b'a' + rng.below(26) as u8;
                (
                    format!(
                        "mkdir -p node_modules/pkg{n} && head -c {size} /dev/zero | tr '\\0' '{}' > node_modules/pkg{n}/data",
                        byte as char
                    ),
                    format!("{size} bytes"),
                )
            }
            2 if rng.chance(1, 2) => {
                w.names_tree = true;
                let step = *rng.pick(&[
                    "printf 'home = %s/.venv\\n' \"$PWD\" > node_modules/pyvenv.cfg",
                    "printf '#!%s/node_modules/.venv/bin/python\\n' \"$KARDWT_WORKTREE\" > node_modules/tool",
                    "ln -sfn \"$PWD/src\" node_modules/proj",
                    "printf 'COMPOSE_PROJECT_NAME=%s\\n' \"$(basename \"$PWD\")\" > node_modules/.env.compose",
                    "basename \"$PWD\" | tr a-z- A-Z_ > node_modules/project",
                    "mkdir -p \"node_modules/.cache/${PWD##*/}\"",
                    "git branch --show-current > node_modules/built-from",
                    "git rev-parse --absolute-git-dir > node_modules/gitdir",
                ]);
                (step.to_owned(), "the tree's path or names".to_owned())
            }
            3 => (
                "printf '%s|%s\\n' \"${KARDWT_PORT:-none}\" \"${KARDWT_PORTS:-none}\" > node_modules/port"
                    .to_owned(),
                "the ports".to_owned(),
            ),
            4 => (
                "printf '%s\\n' \"$*\" > node_modules/args".to_owned(),
                "its arguments".to_owned(),
            ),
            5 => (
                "printf '%s\\n' \"${GEN_FLAVOR:-unset}\" > node_modules/flavor".to_owned(),
                "GEN_FLAVOR".to_owned(),
            ),
            6 => {
                let fact = *rng.pick(&FACTS);
                w.reads_reason |= fact == "KARDWT_REASON";
                (
                    format!("printf '%s\\n' \"${{{fact}:-unset}}\" > node_modules/fact-{fact}"),
                    fact.to_owned(),
                )
            }
            7 if w.vendor => (
                "mkdir -p vendor/lib && cp package-lock.json vendor/lib/a.so".to_owned(),
                "vendor/lib".to_owned(),
            ),
            _ => (
                format!("mkdir -p node_modules/n{n}/deep && echo {n} > node_modules/n{n}/deep/f"),
                "a nested file".to_owned(),
            ),
        };
        w.steps.push(step);
        w.said.push(said);
    }
    w
}

/// The rules of `w`, running `script`.
fn rules(repo: &TestRepo, w: &World, script: &Path) -> String {
    let mut inputs = vec!["package-lock.json"];
    if w.patches {
        inputs.push("patches");
    }
    if w.extra {
        inputs.push("extra.lock");
    }
    let outputs = if w.vendor {
        "[node_modules, vendor/lib]"
    } else {
        "[node_modules]"
    };
    let arg = w
        .arg
        .as_ref()
        .map(|a| format!(", {a:?}"))
        .unwrap_or_default();
    let mut yaml = format!(
        "worktree:\n  helpers:\n    stable_root: {}\n  prepare:\n    argv: [{}{arg}]\n    \
         inputs: [{}]\n    outputs: {outputs}\n",
        yaml_str(&repo.stable_root()),
        yaml_str(script),
        inputs.join(", ")
    );
    if w.ports {
        yaml.push_str("  ports: {count: 2, range: [47300, 47399]}\n");
    }
    if w.passthrough {
        yaml.push_str("  environment:\n    passthrough: [GEN_FLAVOR]\n");
    }
    yaml
}

/// The hook of `w`, its own bytes marked with `version`.
fn write_hook(repo: &TestRepo, w: &World, version: u32) -> PathBuf {
    let log = sh_quote(&repo.prepare_log());
    repo.write_helper(
        "prepare",
        &format!(
            "echo \"${{PWD##*card-}} cache=${{KARDWT_CACHE:-none}}\" >> {log}\nset -e\n\
             mkdir -p node_modules\necho v{version} > node_modules/version\n{}",
            w.steps.join("\n")
        ),
    )
}

/// `git kardwt args…` in the base with `GEN_FLAVOR=flavor`.
fn kardwt(repo: &TestRepo, flavor: &str, args: &[&str]) -> Output {
    let mut all = vec!["kardwt"];
    all.extend_from_slice(args);
    repo.spawn_with_env(
        "git",
        &repo.base,
        &all,
        &[("GEN_FLAVOR", std::ffi::OsStr::new(flavor))],
    )
    .wait(COMMAND_TIMEOUT)
}

/// The record's cache key and outcome (`hit`, `miss`).
fn cache_use(repo: &TestRepo, tree: &Path) -> (String, String) {
    let rec = repo.record(tree);
    let c = &rec["prepare_cache"];
    (
        c["key"].as_str().unwrap().to_owned(),
        c["outcome"].as_str().unwrap().to_owned(),
    )
}

/// Every file, symlink and directory beneath an entry's `files/`, relative to it.
fn stored(entry: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let files = entry.join("files");
    let mut all = Vec::new();
    crate::support::walk(&files, &mut |p, m| {
        all.push((p.strip_prefix(&files).unwrap().to_path_buf(), m.clone()));
    });
    all
}

/// Damage the entry at `entry` one way; `None` when it holds nothing to damage that way.
fn damage(rng: &mut Rng, entry: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let all = stored(entry);
    let files: Vec<&PathBuf> = all
        .iter()
        .filter(|(_, m)| m.is_file() && m.len() > 0)
        .map(|(p, _)| p)
        .collect();
    let dirs: Vec<&PathBuf> = all
        .iter()
        .filter(|(_, m)| m.is_dir())
        .map(|(p, _)| p)
        .collect();
    let at = |rel: &Path| entry.join("files").join(rel);
    match rng.below(4) {
        0 if !files.is_empty() => {
            use std::os::unix::fs::FileExt;
            let rel = *rng.pick(&files);
            let f = std::fs::File::options()
                .read(true)
                .write(true)
                .open(at(rel))
                .unwrap();
            let len = f.metadata().unwrap().len();
            let off = rng.next() % len;
            let mut b = [0u8];
            f.read_exact_at(&mut b, off).unwrap();
            f.write_all_at(&[b[0] ^ 0x20], off).unwrap();
            Some(format!("flipped byte {off} of {}", rel.display()))
        }
        1 => {
            let leaves: Vec<&PathBuf> = all
                .iter()
                .filter(|(_, m)| !m.is_dir())
                .map(|(p, _)| p)
                .collect();
            let rel = *rng.pick(&leaves);
            std::fs::remove_file(at(rel)).unwrap();
            Some(format!("removed {}", rel.display()))
        }
        2 if !dirs.is_empty() => {
            let rel = rng.pick(&dirs).join("planted");
            std::fs::write(at(&rel), "planted\n").unwrap();
            Some(format!("added {}", rel.display()))
        }
        _ if !files.is_empty() => {
            let rel = *rng.pick(&files);
            let mode = std::fs::metadata(at(rel)).unwrap().permissions().mode();
            std::fs::set_permissions(at(rel), std::fs::Permissions::from_mode(mode ^ 0o100))
                .unwrap();
            Some(format!("chmod of {}", rel.display()))
        }
        _ => None,
    }
}

/// The outputs of `w`, relative to a tree.
fn outputs(w: &World) -> Vec<&'static str> {
    if w.vendor {
        vec!["node_modules", "vendor/lib"]
    } else {
        vec!["node_modules"]
    }
}

/// The tree at `tree` after a hit must be what the same prepare gives there without the
/// cache: set the cache aside, remove the outputs, run `args` again (a miss: the hook runs),
/// compare, and put the cache back as it was.
fn assert_hit_is_a_prepare(
    repo: &TestRepo,
    w: &World,
    tree: &Path,
    flavor: &str,
    card: &str,
    what: &str,
) {
    let hit = tree_state(tree);
    let cache = repo.common_dir().join("kardwt/cache");
    let aside = repo.common_dir().join("kardwt/cache-aside");
    std::fs::rename(&cache, &aside).unwrap();
    for out in outputs(w) {
        let _ = std::fs::remove_dir_all(tree.join(out));
    }
    let runs = repo.prepare_runs().len();
    let out = kardwt(repo, flavor, &["prepare", card]);
    assert_eq!(
        out.code, 0,
        "{what}: the prepare without a cache failed:\n{out}"
    );
    assert_eq!(
        repo.prepare_runs().len(),
        runs + 1,
        "{what}: the hook did not run"
    );
    let made = tree_state(tree);
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::rename(&aside, &cache).unwrap();
    if hit != made {
        let differ: Vec<_> = hit
            .keys()
            .chain(made.keys())
            .filter(|k| hit.get(*k) != made.get(*k))
            .map(|k| {
                let show = |v: Option<&(u32, Vec<u8>)>| {
                    v.map(|(m, b)| {
                        format!("{m:o} {:?}", String::from_utf8_lossy(&b[..b.len().min(80)]))
                    })
                };
                format!(
                    "{}: hit {:?}, prepare {:?}",
                    k.display(),
                    show(hit.get(k)),
                    show(made.get(k))
                )
            })
            .collect();
        panic!(
            "{what}: the hit is not the tree prepare makes there:\n{}",
            differ.join("\n")
        );
    }
}

/// What changes between the first card's prepare and the second card's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Between {
    /// The first card edits an input without committing and prepares again (a key of its own).
    Dirty,
    /// The first card creates an input HEAD lacks and prepares again.
    Untracked,
    /// The stored entry is damaged.
    Damage,
    /// The helper's bytes change.
    EditHelper,
    /// origin's lockfile changes.
    Bump,
    /// origin moves on without touching an input.
    Unrelated,
    /// The second card runs with another GEN_FLAVOR.
    Flavor,
}

/// What may come between the two cards, the changes that keep the key twice as likely.
const BETWEEN: [Between; 10] = [
    Between::Dirty,
    Between::Dirty,
    Between::Untracked,
    Between::Untracked,
    Between::Unrelated,
    Between::Damage,
    Between::EditHelper,
    Between::Bump,
    Between::Unrelated,
    Between::Flavor,
];

/// Remove `card`'s outputs, set `input` to `bytes` (uncommitted), prepare again.
fn reprepare(
    repo: &TestRepo,
    w: &World,
    tree: &Path,
    card: &str,
    flavor: &str,
    input: &str,
    bytes: &str,
) -> Output {
    std::fs::write(tree.join(input), bytes).unwrap();
    for out in outputs(w) {
        let _ = std::fs::remove_dir_all(tree.join(out));
    }
    let out = kardwt(repo, flavor, &["prepare", card]);
    assert_eq!(out.code, 0, "prepare {card} failed:\n{out}");
    out
}

#[test]
fn a_cache_hit_is_the_tree_prepare_makes_or_prepare_runs() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!("prepare cache over generated hooks: seed {seed}, {cases} cases (KARDWT_SEED={seed} replays)");
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);
    let (mut hits, mut misses) = (0, 0);
    for case in 0..cases {
        let w = world(&mut rng);
        let repo = TestRepo::new();
        let lock = format!("lock {}\n", rng.next());
        let mut files = vec![
            (
                ".gitignore".to_owned(),
                ".env\n.env.*\nnode_modules/\nvendor/lib/\n".to_owned(),
            ),
            ("package-lock.json".to_owned(), lock.clone()),
        ];
        if w.patches && rng.chance(3, 4) {
            files.push((
                "patches/a.patch".into(),
                format!("patch {}\n", rng.below(9)),
            ));
            files.push(("patches/sub/b.patch".into(), "b\n".into()));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_str()))
            .collect();
        repo.commit_files(&files, "inputs");
        let mut version = 1;
        let script = write_hook(&repo, &w, version);
        repo.write_rules(&rules(&repo, &w, &script));
        let between: Vec<Between> = (0..rng.below(3)).map(|_| *rng.pick(&BETWEEN)).collect();
        let what = format!("seed {seed}, case {case}: hook writes {:?}, arg {:?}, ports {}, passthrough {}, then {between:?}", w.said, w.arg, w.ports, w.passthrough);

        let out = kardwt(&repo, "a", &["add", "1"]);
        assert_eq!(out.code, 0, "{what}:\n{out}");
        let one = repo.card_path("1");
        let (key1, _) = cache_use(&repo, &one);
        let (mut key_moved, mut damaged) = (false, None);
        let mut flavor = "a";
        let mut dirty_bytes = None;
        for b in &between {
            match b {
                Between::Dirty => {
                    let bytes = format!("dirty {}\n", rng.below(3));
                    reprepare(&repo, &w, &one, "1", "a", "package-lock.json", &bytes);
                    dirty_bytes = Some(bytes);
                }
                Between::Untracked if w.extra => {
                    reprepare(&repo, &w, &one, "1", "a", "extra.lock", "new untracked\n");
                }
                Between::Damage => {
                    let entry = repo.common_dir().join("kardwt/cache").join(&key1);
                    // One damage an entry: a second could undo the first (a planted file
                    // removed again, a mode flipped back), and the entry would be whole.
                    if entry.is_dir() && damaged.is_none() {
                        damaged = damage(&mut rng, &entry);
                    }
                }
                Between::EditHelper => {
                    version += 1;
                    write_hook(&repo, &w, version);
                    key_moved = true;
                }
                Between::Bump => {
                    repo.commit_files(
                        &[("package-lock.json", &format!("bumped {}\n", rng.next()))],
                        "bump",
                    );
                    key_moved = true;
                }
                Between::Unrelated => {
                    repo.commit_files(
                        &[("src/other.txt", &format!("other {}\n", rng.next()))],
                        "other",
                    );
                }
                Between::Flavor => {
                    flavor = "b";
                    key_moved |= w.passthrough;
                }
                Between::Untracked => {}
            }
        }
        let what = format!("{what} (damage: {damaged:?})");
        let runs = repo.prepare_runs().len();
        let out = kardwt(&repo, flavor, &["add", "2"]);
        assert_eq!(out.code, 0, "{what}:\n{out}");
        let two = repo.card_path("2");
        let (_, outcome) = cache_use(&repo, &two);
        let ran = repo.prepare_runs().len() > runs;
        assert_eq!(
            ran,
            outcome == "miss",
            "{what}: the record says {outcome}:\n{out}"
        );
        let expect_hit = !w.names_tree && !key_moved && damaged.is_none();
        assert_eq!(outcome == "hit", expect_hit, "{what}:\n{out}");
        if outcome == "hit" {
            hits += 1;
            if !w.reads_reason {
                assert_hit_is_a_prepare(
                    &repo,
                    &w,
                    &two,
                    flavor,
                    "2",
                    &format!("{what}, card 2 added"),
                );
            }
        } else {
            misses += 1;
        }
        // A second look: the second card edits its lockfile, to the first card's dirty bytes
        // (a hit when those were stored) or to new ones, and prepares again.
        if rng.chance(1, 2) {
            let bytes = dirty_bytes
                .clone()
                .filter(|_| rng.chance(2, 3))
                .unwrap_or_else(|| format!("dirty {}\n", rng.below(3)));
            let runs = repo.prepare_runs().len();
            let out = reprepare(&repo, &w, &two, "2", flavor, "package-lock.json", &bytes);
            let (_, outcome) = cache_use(&repo, &two);
            let ran = repo.prepare_runs().len() > runs;
            assert_eq!(
                ran,
                outcome == "miss",
                "{what}: the record says {outcome}:\n{out}"
            );
            if outcome == "hit" {
                hits += 1;
                assert_hit_is_a_prepare(
                    &repo,
                    &w,
                    &two,
                    flavor,
                    "2",
                    &format!("{what}, card 2 dirty {bytes:?}"),
                );
            } else {
                misses += 1;
            }
        }
    }
    eprintln!(
        "prepare cache over generated hooks: {cases} cases ({hits} hits checked, {misses} misses) in {:?}",
        started.elapsed()
    );
}
