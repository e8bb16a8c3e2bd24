//! The prepare cache through the real binary: a second card with the same
//! inputs gets prepare's outputs cloned in and the hook skipped; a changed input is a miss;
//! `on_cache_hit: run` runs the hook with `KARDWT_CACHE=hit`; a damaged entry is a miss and is
//! replaced; at most `cache_entries` entries; outputs stay beneath the tree (config check, and
//! a symlink output is never followed); and a clone-backed hit on a real XFS loop mount.
use std::path::{Path, PathBuf};

use crate::support::{free_kb, pinned, pinned_case, sh_quote, snapshot, TestRepo, XfsMount};

/// The lockfile and ignore rules every test commits on origin (node_modules ignored).
fn seed(repo: &TestRepo, lock: &str) {
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", lock),
        ],
        "lockfile",
    );
}

/// A prepare that logs `<card> cache=<KARDWT_CACHE or none>` (the card from the tree's name: a
/// cached prepare is not given `KARDWT_CARD`), then builds `node_modules` from
/// the lockfile (a file with its content, an executable, a symlink, a nested file), plus
/// `extra` (shell).
fn prepare(repo: &TestRepo, extra: &str) -> PathBuf {
    let log = sh_quote(&repo.prepare_log());
    repo.write_helper(
        "prepare",
        &format!(
            "echo \"${{PWD##*card-}} cache=${{KARDWT_CACHE:-none}}\" >> {log}\n\
             {extra}\n\
             mkdir -p node_modules/pkg/lib node_modules/.bin\n\
             cp package-lock.json node_modules/pkg/lock-copy\n\
             printf 'module.exports = 1\\n' > node_modules/pkg/lib/index.js\n\
             printf '#!/bin/sh\\n' > node_modules/.bin/tool && chmod 751 node_modules/.bin/tool\n\
             ln -sf ../pkg/lib/index.js node_modules/.bin/index\n\
             head -c 100000 /dev/zero > node_modules/pkg/big.bin\n"
        ),
    )
}

/// Rules running `script` with the cache keys `extra` (indented under `prepare:`).
fn rules(repo: &TestRepo, script: &Path, extra: &str) -> String {
    format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n{extra}",
        repo.rules_for(script, false)
    )
}

/// The cache's entries (key directories) under the common dir.
fn entries(repo: &TestRepo) -> Vec<PathBuf> {
    let dir = repo.common_dir().join("kardwt/cache");
    let mut keys: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    keys.sort();
    keys
}

/// The record's `prepare_cache` (key, outcome).
fn cache_use(repo: &TestRepo, tree: &Path) -> (String, String) {
    let rec = repo.record(tree);
    let c = rec
        .get("prepare_cache")
        .unwrap_or_else(|| panic!("no prepare_cache in {rec:?}"));
    (
        c["key"].as_str().unwrap().to_owned(),
        c["outcome"].as_str().unwrap().to_owned(),
    )
}

/// The `prepared` event's outcome for `card`.
fn prepared(repo: &TestRepo, card: &str) -> String {
    let events = repo.events(Some(card));
    let e = events
        .iter()
        .rev()
        .find(|e| e["event"] == "prepared")
        .unwrap_or_else(|| panic!("no prepared event for {card}: {events:?}"));
    e["outcome"].as_str().unwrap().to_owned()
}

/// The tree's `git status --porcelain` (untracked files included).
fn status(repo: &TestRepo, tree: &Path) -> String {
    repo.git(tree, &["status", "--porcelain", "--untracked-files=all"])
}

#[test]
fn a_second_card_with_the_same_inputs_gets_the_outputs_and_skips_prepare() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    assert_eq!(repo.prepare_runs(), ["1 cache=none"]);
    let said = prepared(&repo, "1");
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_first_add_misses", said));
    assert_eq!(entries(&repo).len(), 1);

    let two = repo.add_card("2");
    assert_eq!(
        repo.prepare_runs(),
        ["1 cache=none"],
        "the second card's prepare ran"
    );
    let outputs = snapshot(&one.join("node_modules"));
    assert!(outputs.len() >= 8, "{outputs:?}");
    assert_eq!(snapshot(&two.join("node_modules")), outputs);
    let tool = std::fs::metadata(two.join("node_modules/.bin/tool")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&tool.permissions()) & 0o7777,
        0o751
    );
    let (k1, o1) = cache_use(&repo, &one);
    let (k2, o2) = cache_use(&repo, &two);
    assert_eq!((k1.len(), o1.as_str(), o2.as_str()), (64, "miss", "hit"));
    assert_eq!(k1, k2);
    let said = prepared(&repo, "2");
    assert!(said.starts_with("cache: hit"), "{said}");
    assert_eq!(
        status(&repo, &two),
        "",
        "the restore left something git sees"
    );
    repo.kardwt_ok(&repo.base, &["verify", "2"]);
    let shown = repo.kardwt_ok(&repo.base, &["status", "2"]);
    assert!(shown.contains(&format!("hit {k2}")), "{shown}");
    let gc = repo.kardwt_ok(&repo.base, &["gc"]);
    assert!(gc.contains(&format!("prepare cache {}", &k2[..12])), "{gc}");
}

#[test]
fn a_changed_input_is_a_miss_and_prepare_runs() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    repo.commit_files(&[("package-lock.json", "v2\n")], "bump the lockfile");
    let two = repo.add_card("2");
    assert_eq!(repo.prepare_runs(), ["1 cache=none", "2 cache=none"]);
    assert_eq!(
        std::fs::read_to_string(two.join("node_modules/pkg/lock-copy")).unwrap(),
        "v2\n"
    );
    let ((k1, _), (k2, o2)) = (cache_use(&repo, &one), cache_use(&repo, &two));
    assert_ne!(k1, k2);
    assert_eq!(o2, "miss");
    assert!(prepared(&repo, "2").contains("cache: miss"));
    assert_eq!(entries(&repo).len(), 2);
}

#[test]
fn on_cache_hit_run_runs_prepare_with_kardwt_cache_hit_after_the_clone() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let log = sh_quote(&repo.prepare_log());
    let script = prepare(
        &repo,
        &format!(
            "test -f node_modules/pkg/big.bin && echo \"${{PWD##*card-}} outputs present\" >> {log}"
        ),
    );
    repo.write_rules(&rules(&repo, &script, "    on_cache_hit: run\n"));
    repo.add_card("1");
    let two = repo.add_card("2");
    assert_eq!(
        repo.prepare_runs(),
        ["1 cache=none", "2 cache=hit", "2 outputs present"]
    );
    assert_eq!(cache_use(&repo, &two).1, "hit");
    assert!(prepared(&repo, "2").contains("cache: hit"));
}

#[test]
fn a_damaged_entry_is_a_miss_prepare_runs_and_the_entry_is_replaced() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    let entry = entries(&repo).pop().unwrap();
    let big = entry.join("files/node_modules/pkg/big.bin");
    std::fs::File::options()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(10)
        .unwrap();
    let two = repo.add_card("2");
    assert_eq!(repo.prepare_runs(), ["1 cache=none", "2 cache=none"]);
    assert_eq!(
        snapshot(&two.join("node_modules")),
        snapshot(&one.join("node_modules"))
    );
    let said = prepared(&repo, "2");
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_damaged_entry_misses", said));
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        100_000,
        "not replaced"
    );

    // A missing manifest: a miss too, and replaced.
    std::fs::remove_file(entry.join("manifest.json")).unwrap();
    let three = repo.add_card("3");
    assert_eq!(repo.prepare_runs().len(), 3);
    assert_eq!(
        snapshot(&three.join("node_modules")),
        snapshot(&one.join("node_modules"))
    );
    assert!(entry.join("manifest.json").is_file(), "not replaced");
    repo.add_card("4");
    assert_eq!(
        repo.prepare_runs().len(),
        3,
        "the replaced entry was not used"
    );
}

#[test]
fn at_most_cache_entries_entries_are_kept() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, "    cache_entries: 1\n"));
    repo.add_card("1");
    repo.commit_files(&[("package-lock.json", "v2\n")], "bump the lockfile");
    let two = repo.add_card("2");
    let kept = entries(&repo);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].ends_with(cache_use(&repo, &two).0));
}

#[test]
fn outputs_stay_beneath_the_tree() {
    let repo = TestRepo::new();
    let script = prepare(&repo, "");
    let mut shown = String::new();
    for bad in ["../x", "/tmp/x"] {
        repo.write_rules(&format!(
            "{}    outputs: [{bad}]\n",
            repo.rules_for(&script, false)
        ));
        let out = repo.kardwt(&repo.base, &["config", "check"]);
        out.expect_code(2);
        shown.push_str(&pinned_case(bad, &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_outputs_outside_the_tree", shown));
}

#[test]
fn a_symlink_output_is_stored_as_a_symlink_never_followed() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let outside = repo.tmp.join("outside");
    std::fs::create_dir_all(outside.join("secret")).unwrap();
    std::fs::write(outside.join("secret/key"), "do not copy\n").unwrap();
    let log = sh_quote(&repo.prepare_log());
    let script = repo.write_helper(
        "prepare",
        &format!(
            "echo \"${{PWD##*card-}} cache=${{KARDWT_CACHE:-none}}\" >> {log}\n\
             ln -s {} node_modules\n\
             mkdir -p vendor && ln -s {} vendor/deps\n",
            sh_quote(&outside),
            sh_quote(&outside)
        ),
    );
    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules, vendor/deps/lib]\n",
        repo.rules_for(&script, false)
    ));
    let one = repo.add_card("1");
    assert!(one.join("node_modules").is_symlink());
    // vendor/deps is a symlink to outside: its `lib` is never stored, so nothing is.
    assert!(entries(&repo).is_empty(), "{:?}", entries(&repo));
    assert!(!outside.join("lib").exists());

    repo.write_rules(&format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n",
        repo.rules_for(&script, false)
    ));
    repo.add_card("2");
    let entry = entries(&repo).pop().expect("an entry");
    let stored = entry.join("files/node_modules");
    assert_eq!(std::fs::read_link(&stored).unwrap(), outside);
    assert!(stored.is_symlink());
    let cache = snapshot(&entry.join("files"));
    assert!(
        cache
            .keys()
            .all(|p| !p.to_string_lossy().contains("secret")),
        "followed the symlink: {cache:?}"
    );
    let three = repo.add_card("3");
    assert_eq!(repo.prepare_runs().len(), 2, "the third card's prepare ran");
    assert_eq!(
        std::fs::read_link(three.join("node_modules")).unwrap(),
        outside
    );
    assert_eq!(
        snapshot(&outside).len(),
        2,
        "something was written outside the tree"
    );
}

#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "the portable build never clones: FICLONE is off"
)]
fn a_hit_on_a_real_xfs_loop_mount_clones_the_blocks() {
    let scratch = tempfile::tempdir().unwrap();
    let Some(mount) = XfsMount::new(scratch.path()) else {
        return;
    };
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let base = mount.dir.join("base");
    repo.git(
        &mount.dir,
        &["clone", "--quiet", &repo.origin.to_string_lossy(), "base"],
    );
    std::fs::write(base.join(".git/info/exclude"), "/kardbrd.yml\n").unwrap();
    // 8 files of 8 MiB each: 64 MiB of outputs.
    let script = prepare(
        &repo,
        "mkdir -p node_modules/blobs && for i in 1 2 3 4 5 6 7 8; do \
         head -c 8388608 /dev/urandom > node_modules/blobs/part$i.bin; done",
    );
    std::fs::write(base.join("kardbrd.yml"), rules(&repo, &script, "")).unwrap();
    let out = repo.kardwt(&base, &["add", "1"]);
    out.expect_code(0);
    let one = PathBuf::from(out.stdout.trim());
    assert!(one.starts_with(&mount.dir), "{out}");
    let before = free_kb(&mount.dir);
    let out = repo.kardwt(&base, &["add", "2"]);
    out.expect_code(0);
    let two = PathBuf::from(out.stdout.trim());
    assert_eq!(repo.prepare_runs(), ["1 cache=none"], "{out}");
    assert_eq!(
        std::fs::read(two.join("node_modules/blobs/part5.bin")).unwrap(),
        std::fs::read(one.join("node_modules/blobs/part5.bin")).unwrap()
    );
    assert_eq!(cache_use(&repo, &two).1, "hit");
    // 64 MiB cloned in: the blocks are shared, so far less new space is used.
    let used_kb = before.saturating_sub(free_kb(&mount.dir));
    assert!(
        used_kb < 16 * 1024,
        "{used_kb} KiB of new space for a 64 MiB hit"
    );
    // Every file cloned, the entry's own files are hashed: one byte flipped there (the same
    // size) is a miss all the same, and the next card prepares.
    let entry = std::fs::read_dir(base.join(".git/kardwt/cache"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    {
        use std::os::unix::fs::FileExt;
        let part = entry.join("files/node_modules/blobs/part3.bin");
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .open(part)
            .unwrap();
        let mut b = [0u8];
        f.read_exact_at(&mut b, 4_000_000).unwrap();
        f.write_all_at(&[b[0] ^ 1], 4_000_000).unwrap();
    }
    let out = repo.kardwt(&base, &["add", "3"]);
    out.expect_code(0);
    assert_eq!(
        repo.prepare_runs(),
        ["1 cache=none", "3 cache=none"],
        "the damaged entry was used:\n{out}"
    );
}

#[test]
fn a_prepare_run_on_an_uncommitted_lockfile_edit_is_never_handed_to_a_clean_card() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    // Card 1 edits its lockfile without committing and prepares again, the cache empty.
    std::fs::write(one.join("package-lock.json"), "v2-uncommitted\n").unwrap();
    std::fs::remove_dir_all(one.join("node_modules")).unwrap();
    for e in entries(&repo) {
        std::fs::remove_dir_all(e).unwrap();
    }
    repo.kardwt(&repo.base, &["prepare", "1"]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(one.join("node_modules/pkg/lock-copy")).unwrap(),
        "v2-uncommitted\n"
    );
    // Card 2 has the committed lockfile: it must get outputs made from it.
    let two = repo.add_card("2");
    assert_eq!(
        std::fs::read_to_string(two.join("node_modules/pkg/lock-copy")).unwrap(),
        "v1\n",
        "card 2 was handed outputs made from card 1's uncommitted lockfile"
    );
    assert_ne!(cache_use(&repo, &one).0, cache_use(&repo, &two).0);
    // A third card with the same committed lockfile is a hit again.
    let three = repo.add_card("3");
    assert_eq!(
        cache_use(&repo, &three),
        (cache_use(&repo, &two).0, "hit".into())
    );
}

#[test]
fn outputs_naming_the_tree_path_are_not_stored_and_say_which_file_did() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(
        &repo,
        "mkdir -p node_modules/.venv/bin\n\
         printf '#!%s/node_modules/.venv/bin/python\\n' \"$PWD\" > node_modules/.venv/bin/tool\n",
    );
    repo.write_rules(&format!(
        "{}  ports: {{count: 2, range: [47300, 47399]}}\n",
        rules(&repo, &script, "")
    ));
    let one = repo.add_card("1");
    let said = prepared(&repo, "1");
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_not_stored_tool_names_tree", said));
    assert!(
        entries(&repo).is_empty(),
        "an entry naming tree 1 was stored"
    );
    let two = repo.add_card("2");
    assert_eq!(repo.prepare_runs().len(), 2, "card 2's prepare did not run");
    let tool = std::fs::read_to_string(two.join("node_modules/.venv/bin/tool")).unwrap();
    assert!(tool.contains(&two.display().to_string()), "{tool}");
    assert!(!tool.contains(&one.display().to_string()), "{tool}");
}

#[test]
fn a_prepare_whose_outputs_are_cached_is_not_given_the_per_tree_facts() {
    // The ports, the card, its branch, base commit, board and reason are too short to look for
    // in the outputs: not given, they cannot be stored and handed to another tree.
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let names = [
        "KARDWT_PORT",
        "KARDWT_PORTS",
        "KARDWT_CARD",
        "KARDWT_BRANCH",
        "KARDWT_BASE_OID",
        "KARDWT_BOARD",
        "KARDWT_REASON",
    ];
    let writes: Vec<String> = names
        .iter()
        .map(|n| format!("echo \"{n}=${{{n}:-withheld}}\" >> facts.txt"))
        .collect();
    let script = prepare(
        &repo,
        &format!(
            "{}\necho \"tree=${{KARDWT_WORKTREE:-withheld}}\" >> facts.txt\n\
             mkdir -p node_modules && grep -v tree= facts.txt > node_modules/facts.txt",
            writes.join("\n")
        ),
    );
    repo.write_rules(&format!(
        "{}  ports: {{count: 2, range: [47300, 47399]}}\n",
        rules(&repo, &script, "")
    ));
    let one = repo.add_card("1");
    let withheld: String = names.iter().map(|n| format!("{n}=withheld\n")).collect();
    assert_eq!(
        std::fs::read_to_string(one.join("facts.txt")).unwrap(),
        format!("{withheld}tree={}\n", one.display()),
        "the tree's path is given (the outputs are searched for it), the rest withheld"
    );
    let two = repo.add_card("2");
    assert_eq!(repo.prepare_runs().len(), 1, "card 2 was not a hit");
    assert_eq!(
        std::fs::read_to_string(two.join("node_modules/facts.txt")).unwrap(),
        withheld
    );
    // The tree still has its ports and its card, through `git kardwt env`.
    let env = repo.kardwt_ok(&two, &["env"]);
    assert!(
        env.contains("KARDWT_PORT=") && env.contains("KARDWT_CARD="),
        "{env}"
    );
}

#[test]
fn an_edited_prepare_helper_is_a_miss_and_its_new_step_runs() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    let before = cache_use(&repo, &one).0;
    // Same path, same arguments, new bytes.
    prepare(
        &repo,
        "mkdir -p node_modules && echo new > node_modules/new-step",
    );
    let two = repo.add_card("2");
    assert_eq!(
        repo.prepare_runs().len(),
        2,
        "the edited helper did not run"
    );
    assert_eq!(
        std::fs::read_to_string(two.join("node_modules/new-step")).unwrap(),
        "new\n"
    );
    assert_ne!(cache_use(&repo, &two).0, before);
}

#[test]
fn one_damaged_byte_in_an_entry_is_a_miss_and_the_entry_is_replaced() {
    let repo = TestRepo::new();
    seed(&repo, "v1\n");
    let script = prepare(&repo, "");
    repo.write_rules(&rules(&repo, &script, ""));
    let one = repo.add_card("1");
    let entry = entries(&repo).pop().unwrap();
    let big = entry.join("files/node_modules/pkg/big.bin");
    let meta = std::fs::symlink_metadata(&big).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::options().write(true).open(&big).unwrap();
        f.write_all_at(b"\x01", 5000).unwrap();
    }
    assert_eq!(std::fs::metadata(&big).unwrap().len(), meta.len());
    let two = repo.add_card("2");
    assert_eq!(
        repo.prepare_runs(),
        ["1 cache=none", "2 cache=none"],
        "the damaged entry was used"
    );
    assert_eq!(
        snapshot(&two.join("node_modules")),
        snapshot(&one.join("node_modules"))
    );
    let said = prepared(&repo, "2");
    pinned(&repo).bind(|| insta::assert_snapshot!("cache_altered_file_misses", said));
    let replaced = std::fs::read(&big).unwrap();
    assert!(
        replaced.iter().all(|b| *b == 0),
        "the entry was not replaced"
    );
    repo.add_card("3");
    assert_eq!(
        repo.prepare_runs().len(),
        2,
        "the replaced entry was not used"
    );
}
