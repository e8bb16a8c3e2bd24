//! Never ready when broken, and every interrupted state has a working repair, under strace
//! fault injection: `git kardwt add` and a hooked `git worktree add` with one system
//! call failing (or SIGKILL on entering it), swept over a bounded set of `when` values, a fresh
//! repository per trial. After each trial, every tree `list` shows ready is complete (the index
//! holds HEAD's entries, every tracked file is there, the `.env` and `sharing.link` links, every
//! copy byte for byte with its blob id kept for pre-push, prepare ran, ports held, no copy
//! temporaries); and a plain `add` of the card (no fault), or the one command it names, gives a
//! ready, complete tree.
use std::path::{Path, PathBuf};

use crate::support::strace::{strace, Fault};
use crate::support::{yaml_str, Output, TestRepo, COMMAND_TIMEOUT};

const CARD: &str = "1";

/// The base's copied and linked paths, with what each file holds.
const COPIED: &[(&str, &str)] = &[
    ("cache/a.bin", "alpha\n"),
    ("cache/b.bin", "bravo bravo\n"),
    ("cache/sub/c.bin", "charlie\n"),
    ("cache/sub/d.bin", "delta delta delta\n"),
    ("cache/sub/deeper/e.bin", "echo\n"),
    ("cache/f.bin", "foxtrot\n"),
    ("cache/g.bin", "golf\n"),
    ("cache/h.bin", "hotel\n"),
    ("vendor/lib/one.js", "module.exports = 1\n"),
    ("vendor/lib/two.js", "module.exports = 2\n"),
    ("vendor/three.js", "module.exports = 3\n"),
    ("vendor/four.js", "module.exports = 4\n"),
    ("cache/sub/.env.test", "TOKEN=cache\n"),
    ("vendor/.env.local", "TOKEN=vendor\n"),
];

/// A repository whose rules link `.env` and `data` in, copy `cache` (`.worktreeinclude`) and
/// `vendor` (`sharing.copy`), hold one port and run a prepare hook that leaves `.prepared`.
fn scene() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            (
                ".gitignore",
                ".env\n.env.*\ncache/\nvendor/\ndata/\n.prepared\n",
            ),
            (".worktreeinclude", "cache/\n"),
            ("src/two.txt", "two\n"),
            ("docs/guide/intro.md", "# intro\n"),
        ],
        "ignore rules, .worktreeinclude and more files",
    );
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    for (rel, body) in COPIED {
        let p = repo.base.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    std::fs::create_dir_all(repo.base.join("data")).unwrap();
    std::fs::write(repo.base.join("data/model.txt"), "weights\n").unwrap();
    let script = repo.write_prepare("touch .prepared");
    repo.write_rules(&format!(
        "worktree:\n  helpers:\n    stable_root: {}\n  prepare:\n    argv: [{}]\n  sharing:\n    env: link\n    copy: [vendor]\n    link: [data]\n  ports: {{count: 1, range: [47100, 47199]}}\n",
        yaml_str(&repo.stable_root()),
        yaml_str(&script),
    ));
    repo
}

/// Run `program args…` in `dir` under strace with `fault` injected, counting (and failing)
/// only the calls on `path` when one is given (`-P`): a fault in one file git reads.
fn inject(
    repo: &TestRepo,
    fault: &Fault,
    path: Option<&Path>,
    program: &str,
    dir: &Path,
    args: &[&str],
) -> Output {
    let mut all: Vec<String> = vec!["-qq".into(), "-o".into(), "/dev/null".into()];
    if fault.follow {
        all.push("-f".into());
    }
    if let Some(p) = path {
        all.push("-P".into());
        all.push(p.to_string_lossy().into_owned());
    }
    all.push("-e".into());
    all.push(fault.expression());
    all.push(program.to_owned());
    all.extend(args.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    repo.spawn(strace(), dir, &refs).wait(COMMAND_TIMEOUT)
}

/// Why the tree at `tree` is not complete, if it is not: what `ready` promises.
fn incomplete(repo: &TestRepo, tree: &Path) -> Option<String> {
    let git = |args: &[&str]| repo.spawn("git", tree, args).wait(COMMAND_TIMEOUT);
    let index = git(&["diff-index", "--cached", "--quiet", "HEAD", "--"]);
    if index.code != 0 {
        let listed = git(&["ls-files"]).stdout.lines().count();
        return Some(format!(
            "its index is not HEAD's ({listed} entries listed):\n{index}"
        ));
    }
    let deleted = git(&["ls-files", "--deleted"]);
    if deleted.code != 0 || !deleted.stdout.is_empty() {
        return Some(format!("tracked files are missing:\n{deleted}"));
    }
    for (link, target) in [(".env", ".env"), ("data", "data")] {
        match std::fs::read_link(tree.join(link)) {
            Ok(t) if t == repo.base.join(target) => {}
            other => return Some(format!("{link} is not the link to the base's: {other:?}")),
        }
    }
    for (rel, body) in COPIED {
        match std::fs::read_to_string(tree.join(rel)) {
            Ok(b) if b == *body => {}
            other => return Some(format!("the copy {rel} is not the base's: {other:?}")),
        }
    }
    let admin = repo.admin_dir(tree);
    let kept = std::fs::read(admin.join("kardwt-copied")).unwrap_or_default();
    let kept = String::from_utf8_lossy(&kept);
    let rels: Vec<&str> = COPIED.iter().map(|(r, _)| *r).collect();
    let mut args = vec!["hash-object", "--"];
    args.extend(&rels);
    let ids = repo.git(&repo.base, &args);
    // Pre-push protects the `.env`-like files of a copied directory, not its dependencies:
    // only those are hashed.
    for (id, rel) in ids.lines().zip(&rels) {
        let protected = rel.rsplit('/').next().unwrap().starts_with(".env.");
        if kept.split('\0').any(|e| e.starts_with(&format!("{id} "))) != protected {
            return Some(format!(
                "the blob id of the copy {rel} is {}kept for pre-push: {kept:?}",
                if protected { "not " } else { "" }
            ));
        }
    }
    if !tree.join(".prepared").is_file() {
        return Some("prepare did not run in it".into());
    }
    let rec = repo.record(tree);
    if rec["ports"].as_array().map_or(0, Vec::len) != 1 {
        return Some(format!("it holds no port: {rec:?}"));
    }
    let leftovers = git(&["ls-files", "--others", "--ignored", "--exclude-standard"]);
    if leftovers.stdout.contains(".kardwt-tmp-") {
        return Some(format!("a copy's temporary is left:\n{leftovers}"));
    }
    None
}

/// Every tree `list` shows ready is complete (`what` names the trial in the message).
#[track_caller]
fn assert_ready_means_complete(repo: &TestRepo, what: &str, out: &Output) {
    for row in repo.list_json() {
        if row["state"] != "ready" {
            continue;
        }
        let tree = PathBuf::from(row["path"].as_str().unwrap());
        if let Some(why) = incomplete(repo, &tree) {
            panic!(
                "{what}: {} is recorded ready but {why}\nthe faulted run:\n{out}",
                tree.display()
            );
        }
    }
}

/// A plain `add` of the card (following the one command it names, when it refuses) gives a
/// ready, complete tree.
#[track_caller]
fn assert_next_add_repairs(repo: &TestRepo, what: &str) {
    let next = repo.kardwt(&repo.base, &["add", CARD]);
    let next = match next.code {
        0 => next,
        _ => {
            let named = next
                .stderr
                .lines()
                .find_map(|l| l.find("git kardwt ").map(|i| l[i..].to_owned()))
                .unwrap_or_else(|| panic!("{what}: the next add fails naming nothing:\n{next}"));
            let followed = repo
                .spawn("sh", &repo.base, &["-c", &named])
                .wait(COMMAND_TIMEOUT);
            assert_eq!(
                followed.code, 0,
                "{what}: following {named:?} failed:\n{followed}\nafter:\n{next}"
            );
            let again = repo.kardwt(&repo.base, &["add", CARD]);
            assert_eq!(again.code, 0, "{what}: add after {named:?}:\n{again}");
            again
        }
    };
    let tree = PathBuf::from(next.stdout.trim());
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    if let Some(why) = incomplete(repo, &tree) {
        panic!(
            "{what}: the next add gave {} but {why}\n{next}",
            tree.display()
        );
    }
}

/// One trial of `git kardwt add` with `fault` (on `path` only, when given); returns the
/// faulted run's exit code.
fn add_trial(fault: &Fault, path: impl Fn(&TestRepo) -> Option<PathBuf>) -> i32 {
    add_trial_with(fault, path, false)
}

/// [`add_trial`], the checkout left to git (`checkout.workers` set) when `git_checks_out`.
fn add_trial_with(
    fault: &Fault,
    path: impl Fn(&TestRepo) -> Option<PathBuf>,
    git_checks_out: bool,
) -> i32 {
    let repo = scene();
    if git_checks_out {
        repo.git(&repo.base, &["config", "checkout.workers", "1"]);
    }
    let filter = path(&repo);
    let out = inject(
        &repo,
        fault,
        filter.as_deref(),
        crate::support::BIN,
        &repo.base,
        &["add", CARD],
    );
    let what = format!("add with {fault}");
    assert_ready_means_complete(&repo, &what, &out);
    assert_next_add_repairs(&repo, &what);
    out.code
}

/// A sweep that never changed an outcome tested nothing: at least one trial must have failed.
#[track_caller]
fn assert_some_failed(codes: &[i32], what: &str) {
    assert!(
        codes.iter().any(|c| *c != 0),
        "{what}: no trial failed ({codes:?}): the faults never hit"
    );
}

/// The new tree's HEAD file in git's admin dir (`worktrees/card-1/HEAD`).
fn card_head(repo: &TestRepo) -> Option<PathBuf> {
    Some(repo.common_dir().join("worktrees/card-1/HEAD"))
}

/// (a) One failed open of the new tree's HEAD inside git's checkout: `git reset --hard` takes
/// HEAD for unborn, empties the index, writes no file and exits 0. Never ready. Also when
/// kardwt checks the tree out itself (the open then fails kardwt's checkout).
#[test]
fn a_checkout_git_broke_silently_is_never_recorded_ready_by_add() {
    for git_checks_out in [true, false] {
        let codes: Vec<i32> = (1..=6)
            .map(|when| {
                let fault = Fault::new("openat", "EACCES", when, true);
                add_trial_with(&fault, card_head, git_checks_out)
            })
            .collect();
        assert_some_failed(
            &codes,
            &format!("openat of the new tree's HEAD ({git_checks_out})"),
        );
    }
}

/// (a) The same inside a plain `git worktree add` seeded by the post-checkout hook.
#[test]
fn a_checkout_git_broke_silently_is_never_recorded_ready_by_the_hook() {
    let mut codes = Vec::new();
    for when in 1..=6 {
        let repo = scene();
        repo.install_hooks();
        let tree = repo.sibling("wt-1");
        let head = repo.common_dir().join("worktrees/wt-1/HEAD");
        let fault = Fault::new("openat", "EACCES", when, true);
        let args = ["worktree", "add", tree.to_str().unwrap(), "-b", "card/1"];
        let out = inject(&repo, &fault, Some(&head), "git", &repo.base, &args);
        let what = format!("hooked git worktree add with {fault}");
        assert_ready_means_complete(&repo, &what, &out);
        assert_next_add_repairs(&repo, &what);
        codes.push(out.code);
    }
    assert_some_failed(&codes, "openat of the new tree's HEAD under the hook");
}

/// (c) A failed directory read in kardwt while it seeds (the base's root for `.env` files, a
/// copied directory): a failure, never a ready tree without its link or copies.
#[test]
fn a_failed_read_of_the_base_while_seeding_is_a_failure() {
    let repo = scene();
    let (out, counts) = repo.syscall_counts(
        crate::support::BIN,
        &repo.base,
        &["add", CARD],
        &["getdents64"],
        false,
    );
    out.expect_code(0);
    let calls = counts.get("getdents64").copied().unwrap_or(0);
    assert!(calls > 4, "too few directory reads to sweep: {counts:?}");
    let codes: Vec<i32> = (1..=calls)
        .map(|when| add_trial(&Fault::new("getdents64", "EIO", when, false), |_| None))
        .collect();
    assert_some_failed(&codes, "getdents64");
}

/// (c) The first files each copy worker opens fail (with `-f` every process's first opens
/// fail too): a copy left out in silence was a ready tree without it.
#[test]
fn a_base_file_a_copy_cannot_open_fails_the_copy() {
    let codes: Vec<i32> = (1..=3)
        .map(|when| add_trial(&Fault::new("openat", "EACCES", when, true), |_| None))
        .collect();
    assert_some_failed(&codes, "openat -f");
}

/// (b) SIGKILL while copying, at the renames that move copies into place (each worker counts
/// its own): the retry completes every copy, keeps their blob ids and leaves no temporary.
#[test]
fn add_killed_while_copying_is_completed_by_the_next_add() {
    let codes: Vec<i32> = (1..=4)
        .map(|when| add_trial(&Fault::new("renameat2", "KILL", when, true), |_| None))
        .collect();
    assert_some_failed(&codes, "renameat2 SIGKILL");
}

/// (b) SIGKILL right after every copy is in place and before their blob ids are kept: the
/// main thread's first `utimensat` (no `-f`) gives the directories it made the base's times,
/// once the workers are done. The retry keeps each copy and must keep its id for pre-push.
#[test]
fn add_killed_after_its_copies_before_their_ids_are_kept_is_completed_by_the_next_add() {
    let codes: Vec<i32> = (1..=2)
        .map(|when| add_trial(&Fault::new("utimensat", "KILL", when, false), |_| None))
        .collect();
    assert_some_failed(&codes, "utimensat SIGKILL");
}

/// (b) SIGKILL on the main thread while it walks what to copy (no `-f`): its `statx` calls
/// from the start of seeding on, with a stride.
#[test]
fn add_killed_while_walking_the_copies_is_completed_by_the_next_add() {
    let repo = scene();
    let (out, counts) = repo.syscall_counts(
        crate::support::BIN,
        &repo.base,
        &["add", CARD],
        &["statx"],
        false,
    );
    out.expect_code(0);
    let calls = counts.get("statx").copied().unwrap_or(0);
    assert!(calls > 20, "too few statx calls to sweep: {counts:?}");
    let stride = (calls as usize / 12).max(1);
    let codes: Vec<i32> = (calls / 3..=calls)
        .step_by(stride)
        .map(|when| add_trial(&Fault::new("statx", "KILL", when, false), |_| None))
        .collect();
    assert_some_failed(&codes, "statx SIGKILL");
}

/// (d) The record's first write fails (its rename): the next add names no repair that leaves
/// the tree without copies, links or ports; it creates or repairs a complete tree.
#[test]
fn a_failed_record_write_is_repaired_by_the_next_add() {
    let codes: Vec<i32> = (1..=4)
        .map(|when| add_trial(&Fault::new("renameat", "EIO", when, false), |_| None))
        .collect();
    assert_some_failed(&codes, "renameat");
}

/// (d) `add` killed while copying leaves the tree `preparing`: the command `doctor` names for
/// it makes the same complete tree `add` would (links, copies, ports, prepare).
#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "it kills add at its second renameat2, which the portable build never calls"
)]
fn the_fix_doctor_names_for_a_preparing_tree_completes_it() {
    let repo = scene();
    let fault = Fault::new("renameat2", "KILL", 2, true);
    let out = inject(
        &repo,
        &fault,
        None,
        crate::support::BIN,
        &repo.base,
        &["add", CARD],
    );
    let tree = repo.card_path(CARD);
    assert_eq!(
        repo.record(&tree)["state"].as_str(),
        Some("preparing"),
        "{out}"
    );
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    let fix = doctor
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("fix: "))
        .find(|f| f.contains("prepare --path"))
        .unwrap_or_else(|| panic!("doctor names no prepare --path:\n{doctor}"))
        .to_owned();
    let followed = repo
        .spawn("sh", &repo.base, &["-c", &fix])
        .wait(COMMAND_TIMEOUT);
    assert_eq!(followed.code, 0, "following {fix:?} failed:\n{followed}");
    assert_eq!(repo.record(&tree)["state"].as_str(), Some("ready"));
    if let Some(why) = incomplete(&repo, &tree) {
        panic!("doctor's fix {fix:?} left {} with {why}", tree.display());
    }
}

/// (a) Without strace: the user's own post-checkout hook (chained before kardwt's) leaves
/// the new tree with an empty index and git exits 0, as a checkout one of git's reads broke
/// does. Neither `add` nor the hooked `git worktree add` records it ready; the retry each
/// names creates a complete tree once the hook is fixed.
#[test]
fn an_empty_index_after_git_exited_0_is_never_ready() {
    let repo = scene();
    let hooks = repo.common_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let user_hook = hooks.join("post-checkout");
    std::fs::write(&user_hook, "#!/bin/sh\ngit read-tree --empty\n").unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&user_hook, mode).unwrap();
    repo.install_hooks();

    let out = repo.kardwt(&repo.base, &["add", CARD]);
    assert_eq!(out.code, 4, "{out}");
    assert!(out.stderr.contains("its index is empty"), "{out}");
    assert!(
        !repo.card_path(CARD).exists(),
        "the broken tree was kept:\n{out}"
    );
    assert_ready_means_complete(&repo, "add", &out);

    let tree = repo.sibling("wt-2");
    let args = ["worktree", "add", tree.to_str().unwrap(), "-b", "card/2"];
    let hooked = repo.git_output(&repo.base, &args);
    assert_eq!(hooked.code, 4, "{hooked}");
    assert!(hooked.stderr.contains("its index is empty"), "{hooked}");
    assert!(!tree.exists(), "the broken tree was kept:\n{hooked}");
    assert_ready_means_complete(&repo, "hooked git worktree add", &hooked);

    std::fs::write(&user_hook, "#!/bin/sh\nexit 0\n").unwrap();
    assert_next_add_repairs(&repo, "add once the hook is fixed");
}

/// (c) again, inside git: a directory of the base git could not read while listing its ignored
/// files looks empty to it (exit 0), so a `.worktreeinclude` match in it would be left out.
/// kardwt's own walk of the base confirms the listing: every directory read failing in turn,
/// in every process, never gives a ready tree without the included file, and the next `add`
/// copies it.
#[test]
fn a_directory_git_could_not_read_never_leaves_an_include_out() {
    let mut codes = Vec::new();
    for when in 1..=10 {
        let repo = scene();
        repo.commit_files(
            &[
                (
                    ".gitignore",
                    ".env\n.env.*\ncache/\nvendor/\ndata/\n.prepared\nconf/*.local.toml\n",
                ),
                (".worktreeinclude", "cache/\nconf/*.local.toml\n"),
                ("conf/app.toml", "tracked = true\n"),
            ],
            "include a file in a tracked directory",
        );
        std::fs::write(repo.base.join("conf/dev.local.toml"), "local\n").unwrap();
        let fault = Fault::new("getdents64", "EIO", when, true);
        let out = inject(
            &repo,
            &fault,
            None,
            crate::support::BIN,
            &repo.base,
            &["add", CARD],
        );
        let what = format!("add with {fault}");
        let included = repo.card_path(CARD).join("conf/dev.local.toml");
        let ready = repo
            .list_json()
            .iter()
            .any(|row| row["card"] == CARD && row["state"] == "ready");
        assert!(
            !ready || included.is_file(),
            "{what}: ready without the included conf/dev.local.toml\n{out}"
        );
        assert_ready_means_complete(&repo, &what, &out);
        codes.push(out.code);
        assert_next_add_repairs(&repo, &what);
        assert!(included.is_file(), "{what}: the next add left it out");
    }
    assert_some_failed(&codes, "getdents64 with -f");
}
