//! The fault sweep (`make test-faults`): every command of the lifecycle run with its
//! Nth call of one system call failing (kardwt alone, and with `-f` every process it starts)
//! or SIGKILLed there, a fresh repository per trial, then the invariants checked: no panic or
//! hang, the base untouched, `ready` means complete (checkout, `.env` link, `sharing.copy` and
//! `.worktreeinclude` copies, prepare), dirty work survives, and the next plain
//! command (or the one it names) repairs, after which `doctor` is clean.
//!
//! `KARDWT_FAULTS_PER_CALL` caps the trials per (command, call, mode), spread evenly over the
//! calls the busiest process made (0, the default of `make bench-faults`: every call);
//! `KARDWT_FAULTS_ONLY` picks commands or calls by substring, `KARDWT_FAULTS_WHEN=3,17` replays
//! those calls only; the report goes to stdout and to `target/faults-report.txt`.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::strace::Fault;
use crate::support::{Output, TestRepo, BIN};

/// How long one injected command may run before the trial counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// The calls swept, each with the error it fails with.
const CALLS: &[(&str, &str)] = &[
    ("openat", "EACCES"),
    ("read", "EIO"),
    ("write", "ENOSPC"),
    ("getdents64", "EIO"),
    ("rename", "EIO"),
    ("renameat2", "EIO"),
    ("unlink", "EIO"),
    ("unlinkat", "EIO"),
    ("rmdir", "EIO"),
    ("mkdir", "ENOSPC"),
    ("mkdirat", "ENOSPC"),
    ("fsync", "EIO"),
    ("symlinkat", "EIO"),
    ("ioctl", "EINVAL"),
    ("clone", "EAGAIN"),
    ("clone3", "EAGAIN"),
    ("execve", "EACCES"),
    ("pipe2", "EMFILE"),
    ("flock", "EIO"),
];

/// The lifecycle commands swept.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scenario {
    AddFresh,
    AddReuse,
    HookedWorktreeAdd,
    /// A plain `git worktree add` whose seeding is one link (recorded once, ready).
    HookedQuickAdd,
    RemoveClean,
    RemoveDirty,
    Release,
    GcApply,
}

impl Scenario {
    /// A plain `git worktree add` through the hook.
    fn hooked(self) -> bool {
        matches!(self, Scenario::HookedWorktreeAdd | Scenario::HookedQuickAdd)
    }

    fn name(self) -> &'static str {
        match self {
            Scenario::AddFresh => "add",
            Scenario::AddReuse => "add-reuse",
            Scenario::HookedWorktreeAdd => "git-worktree-add",
            Scenario::HookedQuickAdd => "git-worktree-add-quick",
            Scenario::RemoveClean => "remove",
            Scenario::RemoveDirty => "remove-dirty",
            Scenario::Release => "release",
            Scenario::GcApply => "gc-apply",
        }
    }
}

const CARD: &str = "f1";
const UNTRACKED: &str = "notes/untracked.txt";
const EDITED: &str = "README.md";
/// The file `.worktreeinclude` copies into each tree.
const INCLUDED: &str = "src/dev.local.toml";

/// A repository set up for one scenario, before the faulty command.
struct Scene {
    repo: TestRepo,
    tree: PathBuf,
    base_before: BTreeMap<PathBuf, Vec<u8>>,
}

fn scene(scenario: Scenario) -> Scene {
    let repo = TestRepo::new();
    std::fs::write(repo.base.join(".env"), "TOKEN=base\n").unwrap();
    let cache = repo.base.join(".env.cache");
    std::fs::create_dir_all(cache.join("deep")).unwrap();
    let blob: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
    std::fs::write(cache.join("blob.bin"), &blob).unwrap();
    std::fs::write(cache.join("deep/small.txt"), "small\n").unwrap();
    // A `.worktreeinclude` match in a tracked directory: git's listing of ignored files must
    // not silently leave it out.
    std::fs::write(repo.base.join(".worktreeinclude"), "src/*.local.toml\n").unwrap();
    std::fs::write(repo.base.join(INCLUDED), "local = true\n").unwrap();
    let exclude = repo.common_dir().join("info/exclude");
    let mut rules = std::fs::read_to_string(&exclude).unwrap_or_default();
    rules.push_str("/.worktreeinclude\nsrc/*.local.toml\n");
    std::fs::write(&exclude, rules).unwrap();
    let script = repo.write_prepare(": > .env.prepared");
    repo.write_rules(&format!(
        "{}    copy: [.env.cache]\n  ports: {{count: 1, range: [31000, 31999]}}\n",
        repo.rules_sharing(&script)
    ));
    if scenario == Scenario::HookedQuickAdd {
        // Seeding is the `.env` link alone: no copies, ports or prepare hook.
        std::fs::remove_file(repo.base.join(".worktreeinclude")).unwrap();
        repo.write_rules("worktree:\n  sharing:\n    env: link\n");
    }
    repo.install_hooks();
    let tree = repo.card_path(CARD);
    match scenario {
        Scenario::AddFresh => {}
        Scenario::HookedWorktreeAdd | Scenario::HookedQuickAdd => {}
        Scenario::AddReuse | Scenario::RemoveClean | Scenario::Release => {
            repo.kardwt_ok(&repo.base, &["add", CARD]);
        }
        Scenario::RemoveDirty => {
            repo.kardwt_ok(&repo.base, &["add", CARD]);
            std::fs::create_dir_all(tree.join("notes")).unwrap();
            std::fs::write(tree.join(UNTRACKED), "work\n").unwrap();
            std::fs::write(tree.join(EDITED), "# edited\n").unwrap();
        }
        Scenario::GcApply => {
            repo.kardwt_ok(&repo.base, &["add", CARD]);
            std::fs::write(tree.join("landed.txt"), "landed\n").unwrap();
            repo.git(&tree, &["add", "landed.txt"]);
            repo.git(&tree, &["commit", "--quiet", "-m", "landed"]);
            repo.push_and_merge(&tree, &format!("card/{CARD}"));
        }
    }
    let base_before = repo.snapshot_base();
    Scene {
        repo,
        tree,
        base_before,
    }
}

/// The command a scenario injects into: (program, args), run in the base.
fn command(scenario: Scenario, tree: &Path) -> (String, Vec<String>) {
    let kardwt = |args: &[&str]| (BIN.to_owned(), args.iter().map(|a| a.to_string()).collect());
    match scenario {
        Scenario::AddFresh | Scenario::AddReuse => kardwt(&["add", CARD]),
        Scenario::HookedWorktreeAdd | Scenario::HookedQuickAdd => (
            "git".to_owned(),
            vec![
                "worktree".into(),
                "add".into(),
                "--quiet".into(),
                "-b".into(),
                format!("card/{CARD}"),
                tree.to_string_lossy().into_owned(),
                "origin/main".into(),
            ],
        ),
        Scenario::RemoveClean | Scenario::RemoveDirty => kardwt(&["remove", CARD]),
        Scenario::Release => kardwt(&["release", CARD]),
        Scenario::GcApply => kardwt(&["gc", "--apply"]),
    }
}

/// What the tree's record says its state is (`None`: no record, or no tree).
fn state(repo: &TestRepo, tree: &Path) -> Option<String> {
    let text = std::fs::read_to_string(tree.join(".git")).ok()?;
    let admin = PathBuf::from(text.trim_end().strip_prefix("gitdir: ")?);
    let record = std::fs::read_to_string(admin.join("kardwt.toml")).ok()?;
    let table: toml::Table = record.parse().ok()?;
    let _ = repo;
    table.get("state")?.as_str().map(str::to_owned)
}

/// Why a tree recorded `ready` is not complete (empty: complete).
fn incomplete(repo: &TestRepo, tree: &Path, quick: bool) -> Vec<String> {
    let mut why = Vec::new();
    let listed = repo.git_output(tree, &["ls-files", "-z"]);
    let head = repo.git_output(tree, &["ls-tree", "-r", "-z", "--name-only", "HEAD"]);
    if listed.code != 0 || head.code != 0 || listed.stdout != head.stdout {
        why.push("the index does not hold HEAD's entries".to_owned());
    }
    let deleted = repo.git_output(tree, &["ls-files", "-d"]);
    if deleted.code != 0 || !deleted.stdout.is_empty() {
        why.push(format!("tracked files missing: {}", deleted.stdout.trim()));
    }
    let env = tree.join(".env");
    let linked = std::fs::symlink_metadata(&env)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    if !linked || std::fs::read_to_string(&env).ok().as_deref() != Some("TOKEN=base\n") {
        why.push(".env is not linked to the base's".to_owned());
    }
    if quick {
        return why; // the link is all its seeding
    }
    for file in ["blob.bin", "deep/small.txt"] {
        let want = std::fs::read(repo.base.join(".env.cache").join(file)).unwrap();
        if std::fs::read(tree.join(".env.cache").join(file)).ok() != Some(want) {
            why.push(format!(".env.cache/{file} is not a complete copy"));
        }
    }
    if std::fs::read_to_string(tree.join(INCLUDED)).ok().as_deref() != Some("local = true\n") {
        why.push(format!("{INCLUDED} (.worktreeinclude) is not copied"));
    }
    if !tree.join(".env.prepared").exists() {
        why.push("prepare did not run".to_owned());
    }
    why
}

/// The `git kardwt …` commands a message names, in order.
fn named_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = ["git kardwt ", "git worktree remove "]
            .iter()
            .filter_map(|p| rest.find(p))
            .min()
        {
            let tail = &rest[at..];
            let end = tail.find(['`', ')', ';']).unwrap_or(tail.len());
            let cmd = tail[..end].trim().trim_end_matches(['.', ',']).to_owned();
            if !cmd.contains('<') && !cmd.contains('…') && !found.contains(&cmd) {
                found.push(cmd);
            }
            rest = &tail[end..];
        }
    }
    found
}

/// `text` split into words as sh would, for kardwt's quoting: bare words and `'…'` (with
/// `'\''` for a quote inside).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut quoted = false;
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            word.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            '\\' if !quoted => {
                escaped = true;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// Invariants right after the faulty run.
fn check_after_fault(scenario: Scenario, scene: &Scene, out: &Output) -> Vec<String> {
    let mut bad = Vec::new();
    let repo = &scene.repo;
    if out.code == 101 || out.stderr.contains("panicked at") {
        bad.push(format!("panic (exit {})", out.code));
    }
    for line in out.stdout.lines().chain(out.stderr.lines()) {
        let l = line.to_lowercase();
        let removal_failed = ["removing it failed", "could not remove", "failed to remove"]
            .iter()
            .any(|f| l.contains(f));
        if (l.contains("collected") && l.contains("failed"))
            || (l.contains("was removed") && removal_failed)
        {
            bad.push(format!("a message says both done and failed: {line}"));
        }
    }
    if matches!(scenario, Scenario::GcApply)
        && out.stdout.contains("collected")
        && scene.tree.exists()
    {
        bad.push("gc says collected but the tree is still there".to_owned());
    }
    if repo.snapshot_base() != scene.base_before {
        bad.push("the base checkout changed".to_owned());
    }
    if state(repo, &scene.tree).as_deref() == Some("ready") {
        for why in incomplete(repo, &scene.tree, scenario == Scenario::HookedQuickAdd) {
            bad.push(format!("recorded ready but {why}"));
        }
    }
    if scenario == Scenario::RemoveDirty {
        bad.extend(lost_work(&scene.tree));
    }
    bad
}

/// The dirty scenario's work, if any of it is gone.
fn lost_work(tree: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    if std::fs::read_to_string(tree.join(UNTRACKED))
        .ok()
        .as_deref()
        != Some("work\n")
    {
        bad.push(format!("the untracked {UNTRACKED} was lost"));
    }
    if std::fs::read_to_string(tree.join(EDITED)).ok().as_deref() != Some("# edited\n") {
        bad.push(format!("the edit to {EDITED} was lost"));
    }
    bad
}

/// Run `git kardwt args…` in the base; if it fails, run each command it names, then it again.
fn repair_step(repo: &TestRepo, args: &[&str], bad: &mut Vec<String>) -> Output {
    let first = repo.kardwt(&repo.base, args);
    if first.code == 0 {
        return first;
    }
    let named = named_commands(&format!("{}\n{}", first.stdout, first.stderr));
    if named.is_empty() {
        return first;
    }
    for cmd in &named {
        // A hint may run on in prose after the command ("git kardwt gc --apply clears …"):
        // words are dropped from the end while the command is a usage error (exit 2, which
        // does nothing).
        let mut words = shell_words(cmd);
        let out = loop {
            // `git kardwt …` through git, as a user runs it; `git worktree …` as it is.
            let refs: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
            let out = repo.spawn("git", &repo.base, &refs).wait(HANG);
            if out.code == 2 && out.stderr.contains("unexpected argument") && words.len() > 3 {
                words.pop();
                continue;
            }
            break out;
        };
        if out.code != 0 {
            bad.push(format!(
                "`git kardwt {}` failed and named `{cmd}`, which failed too:\n{out}",
                args.join(" ")
            ));
        }
    }
    repo.kardwt(&repo.base, args)
}

/// The repair: the plain command again (following what it names), then `doctor` clean.
fn check_repair(scenario: Scenario, scene: &Scene) -> Vec<String> {
    let mut bad = Vec::new();
    let repo = &scene.repo;
    let tree = &scene.tree;
    match scenario {
        Scenario::AddFresh | Scenario::AddReuse | Scenario::Release | Scenario::RemoveDirty => {
            if scenario == Scenario::RemoveDirty {
                let again = repo.kardwt(&repo.base, &["remove", CARD]);
                if again.code == 0 {
                    bad.push("remove of the dirty tree succeeded".to_owned());
                }
                bad.extend(lost_work(tree));
            }
            let out = repair_step(repo, &["add", CARD], &mut bad);
            if out.code != 0 {
                bad.push(format!("the next add does not repair:\n{out}"));
            } else if state(repo, tree).as_deref() != Some("ready") {
                bad.push("the next add exits 0 but the tree is not ready".to_owned());
            } else {
                for why in incomplete(repo, tree, scenario == Scenario::HookedQuickAdd) {
                    bad.push(format!("after the next add: {why}"));
                }
            }
            if scenario == Scenario::RemoveDirty {
                bad.extend(lost_work(tree));
            }
        }
        Scenario::HookedWorktreeAdd | Scenario::HookedQuickAdd => {
            if repo.is_registered(tree) && state(repo, tree).as_deref() != Some("ready") {
                let path = tree.to_string_lossy().into_owned();
                let out = repair_step(repo, &["prepare", "--path", &path], &mut bad);
                if out.code != 0 && repo.is_registered(tree) {
                    bad.push(format!("prepare --path does not repair:\n{out}"));
                }
            }
            if !repo.is_registered(tree) {
                if tree.exists() {
                    bad.push("the directory is left without its worktree".to_owned());
                } else {
                    // Gone (git's own failure, or removed as the repair named): the user
                    // creates it again, on the branch if it was kept.
                    let branch = format!("card/{CARD}");
                    let path = tree.to_string_lossy().into_owned();
                    let args: Vec<&str> = if repo.branch_exists(&branch) {
                        vec!["worktree", "add", "--quiet", &path, &branch]
                    } else {
                        vec![
                            "worktree",
                            "add",
                            "--quiet",
                            "-b",
                            &branch,
                            &path,
                            "origin/main",
                        ]
                    };
                    let again = repo.git_output(&repo.base, &args);
                    if again.code != 0 {
                        bad.push(format!("git worktree add again fails:\n{again}"));
                    }
                }
            }
            if state(repo, tree).as_deref() != Some("ready") {
                bad.push("the tree is not ready after the repair".to_owned());
            } else {
                for why in incomplete(repo, tree, scenario == Scenario::HookedQuickAdd) {
                    bad.push(format!("after the repair: {why}"));
                }
            }
        }
        Scenario::RemoveClean | Scenario::GcApply => {
            if tree.exists() || repo.is_registered(tree) {
                // Its exit status aside (after a command it named did the work, the second
                // run finds nothing to remove), the tree must be gone.
                let out = repair_step(repo, &["remove", CARD], &mut bad);
                if tree.exists() || repo.is_registered(tree) {
                    bad.push(format!("the next remove does not repair:\n{out}"));
                }
            }
            let again = repo.kardwt(&repo.base, &["add", CARD]);
            if again.code != 0 {
                bad.push(format!("the card cannot be added again:\n{again}"));
            } else {
                for why in incomplete(repo, tree, scenario == Scenario::HookedQuickAdd) {
                    bad.push(format!("after adding it again: {why}"));
                }
            }
        }
    }
    // What doctor still finds, it names a fix for; each fix must work and leave it clean.
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    if doctor.code != 0 {
        for fix in named_commands(&doctor.stdout) {
            let words = shell_words(&fix);
            let refs: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
            let out = repo.spawn("git", &repo.base, &refs).wait(HANG);
            if out.code != 0 {
                bad.push(format!("doctor's fix `{fix}` fails:\n{out}"));
            }
        }
        let again = repo.kardwt(&repo.base, &["doctor"]);
        if again.code != 0 {
            bad.push(format!(
                "doctor is not clean after the repair and its fixes:\n{doctor}\nthen:\n{again}"
            ));
        }
    }
    if repo.snapshot_base() != scene.base_before {
        bad.push("the repair changed the base checkout".to_owned());
    }
    bad
}

/// One trial: a fresh scene, the faulty command, the invariants, the repair.
fn trial(scenario: Scenario, fault: &Fault) -> Vec<String> {
    let scene = scene(scenario);
    let (program, args) = command(scenario, &scene.tree);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(out) = scene
        .repo
        .injected_within(fault, &program, &scene.repo.base, &refs, HANG)
    else {
        return vec![format!("hung for more than {HANG:?}")];
    };
    let mut bad = check_after_fault(scenario, &scene, &out);
    bad.extend(check_repair(scenario, &scene));
    if !bad.is_empty() {
        bad.push(format!("the faulty run:\n{out}"));
    }
    bad
}

/// The `when` values to try out of `calls`, at most `cap` of them (0: all), evenly spread.
fn whens(calls: u32, cap: u32) -> Vec<u32> {
    if cap == 0 || calls <= cap {
        return (1..=calls).collect();
    }
    let mut picked: Vec<u32> = (0..cap)
        .map(|i| 1 + (i as u64 * (calls as u64 - 1) / (cap as u64 - 1).max(1)) as u32)
        .collect();
    picked.dedup();
    picked
}

/// Sweep one scenario: count its calls, then a trial per (call, mode, when).
fn sweep(scenario: Scenario) {
    let cap: u32 = std::env::var("KARDWT_FAULTS_PER_CALL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let only = std::env::var("KARDWT_FAULTS_ONLY").unwrap_or_default();
    // To replay what a report names: only these `when` values.
    let only_whens: Option<Vec<u32>> = std::env::var("KARDWT_FAULTS_WHEN")
        .ok()
        .map(|v| v.split(',').filter_map(|w| w.trim().parse().ok()).collect());
    let picked = |what: &str| only.is_empty() || only.split(',').any(|o| what.contains(o));
    if !picked(scenario.name()) && !CALLS.iter().any(|(c, _)| picked(c)) {
        return;
    }
    let names: Vec<&str> = CALLS.iter().map(|(c, _)| *c).collect();
    let mut rows: Vec<(String, usize, Vec<String>)> = Vec::new();
    let started = Instant::now();
    for follow in [false, true] {
        let counting = scene(scenario);
        let (program, args) = command(scenario, &counting.tree);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, counts) =
            counting
                .repo
                .syscall_counts(&program, &counting.repo.base, &refs, &names, follow);
        drop(counting);
        for (call, errno) in CALLS {
            if !(picked(scenario.name()) || picked(call)) {
                continue;
            }
            let n = counts.get(*call).copied().unwrap_or(0);
            // SIGKILL at kardwt's own calls only: with -f it would kill git, not kardwt.
            let modes: &[&str] = if follow { &[errno] } else { &[errno, "KILL"] };
            for mode in modes {
                if scenario.hooked() && !follow {
                    continue; // kardwt runs only as git's child there
                }
                let mut trials = 0;
                let mut violations = Vec::new();
                let chosen: Vec<u32> = match &only_whens {
                    Some(list) => list.iter().copied().filter(|w| *w <= n).collect(),
                    None => whens(n, cap),
                };
                for when in chosen {
                    let fault = Fault::new(call, mode, when, follow);
                    trials += 1;
                    let bad = trial(scenario, &fault);
                    if !bad.is_empty() {
                        let mut text = format!("{fault}: {}", bad.join("\n  "));
                        if text.len() > 3000 {
                            let mut cut = 3000;
                            while !text.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            text.truncate(cut);
                            text.push_str(" […]");
                        }
                        violations.push(text);
                    }
                }
                let label = format!(
                    "{:<17} {:<11} {:<7} {:<3} calls {n:>5}",
                    scenario.name(),
                    call,
                    mode,
                    if follow { "-f" } else { "" }
                );
                rows.push((label, trials, violations));
            }
        }
    }
    report(scenario, &rows, started.elapsed());
}

/// Print the table and append it to `target/faults-report.txt`; fail on any violation.
fn report(scenario: Scenario, rows: &[(String, usize, Vec<String>)], took: Duration) {
    let mut text = String::new();
    let trials: usize = rows.iter().map(|r| r.1).sum();
    let broken: usize = rows.iter().map(|r| r.2.len()).sum();
    text.push_str(&format!(
        "== {}: {trials} trials, {broken} violations, {:.0} s\n",
        scenario.name(),
        took.as_secs_f64()
    ));
    for (label, n, bad) in rows {
        if *n > 0 {
            text.push_str(&format!(
                "{label} trials {n:>4} violations {:>3}\n",
                bad.len()
            ));
        }
    }
    for (_, _, bad) in rows {
        for b in bad {
            text.push_str(&format!("VIOLATION {b}\n"));
        }
    }
    print!("{text}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../faults-report.txt");
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = f.write_all(text.as_bytes());
    }
    assert_eq!(broken, 0, "{broken} trials broke a promise:\n{text}");
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_add() {
    sweep(Scenario::AddFresh);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_add_reuse() {
    sweep(Scenario::AddReuse);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_hooked_worktree_add() {
    sweep(Scenario::HookedWorktreeAdd);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_hooked_quick_worktree_add() {
    sweep(Scenario::HookedQuickAdd);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_remove() {
    sweep(Scenario::RemoveClean);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_remove_dirty() {
    sweep(Scenario::RemoveDirty);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_release() {
    sweep(Scenario::Release);
}

#[test]
#[ignore = "make test-faults (bounded) or make bench-faults (every call)"]
fn faults_gc_apply() {
    sweep(Scenario::GcApply);
}

#[test]
fn the_sweep_spreads_its_trials_over_the_calls() {
    assert_eq!(whens(3, 0), vec![1, 2, 3]);
    assert_eq!(whens(3, 5), vec![1, 2, 3]);
    assert_eq!(whens(100, 3), vec![1, 50, 100]);
    assert_eq!(whens(0, 3), Vec::<u32>::new());
    assert_eq!(
        shell_words("git kardwt prepare --path '/tmp/a b/it'\\''s' x"),
        vec!["git", "kardwt", "prepare", "--path", "/tmp/a b/it's", "x"]
    );
    assert_eq!(
        named_commands("hint: run `git kardwt remove 5 --force` then git kardwt add 5."),
        vec!["git kardwt remove 5 --force", "git kardwt add 5"]
    );
}
