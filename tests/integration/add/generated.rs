//! `add`'s checkout against git's own over generated trees × settings × formats: in the same
//! repository, the tree `git kardwt add <card>` writes (itself or through git) holds exactly
//! what `git worktree add` writes for the same commit: every path's bytes, mode and link
//! target, the index entry by entry, a clean status, and `verify` passes. Trees hold random
//! bytes (LF, CRLF, binary, empty), executables, symlinks (relative, dangling, absolute, to
//! directories), deep paths, names with spaces, Unicode and bytes that are not UTF-8, a
//! crowded directory, sometimes attributes and a submodule; settings come from the repository's
//! config, `git -c` or `GIT_CONFIG_COUNT`. The seed is printed; `KARDWT_SEED=<n>` replays it
//! and `KARDWT_CASES=<n>` runs more cases than the default suite's few.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Format, Rng, TestRepo};

/// How many generated cases the default suite runs (each a commit, two trees and their checks).
const DEFAULT_CASES: u64 = 12;

/// The settings a case runs under (none, or settings that change what a checkout writes).
const SETTINGS: &[&[(&str, &str)]] = &[
    &[],
    &[("core.autocrlf", "true")],
    &[("core.autocrlf", "input")],
    &[("core.fileMode", "false")],
    &[("core.symlinks", "false")],
    &[("core.eol", "crlf")],
    &[
        ("checkout.workers", "2"),
        ("checkout.thresholdForParallelism", "1"),
    ],
];

/// Where the settings of a case are given.
#[derive(Debug, Clone, Copy)]
enum Given {
    /// In the repository's config.
    Config,
    /// `git -c key=value kardwt add` (and `git -c … worktree add` for git's tree).
    DashC,
    /// `GIT_CONFIG_COUNT` with `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`.
    Count,
}

/// Name components: plain, with spaces, Unicode, bytes that are not UTF-8, leading dashes.
const NAMES: &[&[u8]] = &[
    b"a",
    b"src",
    b"with space",
    b"caf\xc3\xa9",
    b"\xe6\x97\xa5\xe6\x9c\xac",
    b"lat\xe9n",
    b"\xfc",
    b"-dash",
    b".hidden",
    b"x.y.z",
    b"UPPER",
    b"back\\slash",
    b"trail. ",
    b"col:on*?",
    b"CON",
    b"aux.txt",
    b"tab\tnew\nline",
];

/// What a file's name says about its bytes (so attribute rules never see a CRLF blob they would
/// normalize, which git itself then shows as modified).
const KINDS: &[&str] = &["txt", "crlf", "bin", "bat", "sh", "dat", ""];

fn lines(rng: &mut Rng, eol: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(6) {
        for _ in 0..rng.below(30) {
            out.push(b"abcdefgh ijk_XYZ0123\t"[rng.below(21)]);
        }
        out.extend_from_slice(eol);
    }
    if rng.chance(1, 3) {
        out.extend_from_slice(b"no final newline");
    }
    out
}

/// The bytes of a file of `kind`.
fn content(rng: &mut Rng, kind: &str) -> Vec<u8> {
    if rng.chance(1, 10) {
        return Vec::new();
    }
    match kind {
        "txt" | "bat" | "sh" => lines(rng, b"\n"),
        "crlf" => lines(rng, b"\r\n"),
        "bin" => {
            let mut b: Vec<u8> = (0..rng.below(300)).map(|_| rng.next() as u8).collect();
            b.push(0);
            b
        }
        // Anything: mixed line endings, lone CRs, NULs.
        _ => {
            let pool = b"ab\r\n\x00\xff \r\n";
            (0..rng.below(200))
                .map(|_| match rng.chance(1, 2) {
                    true => pool[rng.below(pool.len())],
                    false => rng.next() as u8,
                })
                .collect()
        }
    }
}

/// A random relative directory (possibly the top level, sometimes deep).
fn random_dir(rng: &mut Rng) -> Vec<u8> {
    let depth = match rng.chance(1, 8) {
        true => 8 + rng.below(8),
        false => rng.below(3),
    };
    let parts: Vec<&[u8]> = (0..depth).map(|_| *rng.pick(NAMES)).collect();
    parts.join(&b'/')
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    match dir.is_empty() {
        true => name.to_vec(),
        false => [dir, b"/", name].concat(),
    }
}

fn os(p: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(p))
}

/// Write a generated tree into `dir` (emptied first but for `.git`); returns a description.
fn generate_tree(rng: &mut Rng, dir: &Path) -> String {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name() != ".git" {
            let p = e.path();
            match p.symlink_metadata().unwrap().is_dir() {
                true => std::fs::remove_dir_all(&p).unwrap(),
                false => std::fs::remove_file(&p).unwrap(),
            }
        }
    }
    let mut files: Vec<Vec<u8>> = Vec::new();
    let mut dirs: Vec<Vec<u8>> = Vec::new();
    let put = |rel: &[u8], bytes: &[u8], exec: bool| -> bool {
        let p = dir.join(os(rel));
        if p.symlink_metadata().is_ok()
            || p.parent()
                .is_some_and(|d| std::fs::create_dir_all(d).is_err())
        {
            return false;
        }
        std::fs::write(&p, bytes).unwrap();
        if exec {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        true
    };
    let mut notes = Vec::new();
    for n in 0..1 + rng.below(25) {
        let kind = *rng.pick(KINDS);
        let d = random_dir(rng);
        let mut name = rng.pick(NAMES).to_vec();
        name.extend_from_slice(format!("{n}").as_bytes());
        if !kind.is_empty() {
            name.extend_from_slice(format!(".{kind}").as_bytes());
        }
        let rel = join(&d, &name);
        let bytes = content(rng, kind);
        if put(&rel, &bytes, kind == "sh" || rng.chance(1, 10)) {
            files.push(rel);
            if !d.is_empty() {
                dirs.push(d);
            }
        }
    }
    if rng.chance(1, 4) {
        let count = 100 + rng.below(200);
        for n in 0..count {
            put(format!("crowd/f{n}.txt").as_bytes(), b"x\n", false);
        }
        notes.push(format!("{count} files in crowd/"));
    }
    // Links: to a file, to a directory (both relative), dangling, absolute.
    for n in 0..rng.below(5) {
        let d = random_dir(rng);
        let up: Vec<u8> = b"../".repeat(d.split(|b| *b == b'/').count() * !d.is_empty() as usize);
        let target = match rng.below(4) {
            0 if !files.is_empty() => {
                [up.as_slice(), rng.pick(files.as_slice()).as_slice()].concat()
            }
            1 if !dirs.is_empty() => [up.as_slice(), rng.pick(dirs.as_slice()).as_slice()].concat(),
            2 => b"/nonexistent/target".to_vec(),
            _ => b"nowhere/at/all".to_vec(),
        };
        let rel = join(&d, format!("link{n}").as_bytes());
        let p = dir.join(os(&rel));
        if p.symlink_metadata().is_err() && std::fs::create_dir_all(p.parent().unwrap()).is_ok() {
            std::os::unix::fs::symlink(os(&target), &p).unwrap();
        }
    }
    if rng.chance(1, 4) {
        let rules = [
            "* text=auto\n",
            "*.txt text\n",
            "*.bat text eol=crlf\n",
            "*.sh text eol=lf\n",
            "*.bin binary\n",
            "*.crlf -text\n",
            "*.dat -text\n",
        ];
        let chosen: String = rules.iter().filter(|_| rng.chance(1, 2)).copied().collect();
        let at = match dirs.is_empty() || rng.chance(1, 2) {
            true => b".gitattributes".to_vec(),
            false => join(rng.pick::<Vec<u8>>(&dirs), b".gitattributes"),
        };
        put(&at, chosen.as_bytes(), false);
        notes.push(format!(
            "attributes {:?}: {chosen:?}",
            String::from_utf8_lossy(&at)
        ));
    }
    if rng.chance(1, 12) {
        // A name git's default core.protectNTFS refuses to check out (an 8.3 alias of `.git`).
        let refused: &[&[u8]] = &[b"git~1", b"GIT~1"];
        let name: &[u8] = rng.pick::<&[u8]>(refused);
        let rel = join(&random_dir(rng), name);
        if put(&rel, b"refused\n", false) {
            notes.push(format!("the refused {:?}", String::from_utf8_lossy(&rel)));
        }
    }
    if files.is_empty() {
        put(b"only.txt", b"only\n", false);
    }
    format!("{} files; {}", files.len(), notes.join("; "))
}

/// `git [-c k=v…] args…` in `dir`, asserting exit 0; stdout as bytes.
#[track_caller]
fn git_bytes(repo: &TestRepo, dir: &Path, settings: &[(&str, &str)], args: &[&str]) -> Vec<u8> {
    let mut cmd = repo.command("git", dir);
    for (k, v) in settings {
        cmd.arg("-c").arg(format!("{k}={v}"));
    }
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// One path of a checked-out tree: its path, what it is, its mode bits, its bytes or target.
type Seen = (PathBuf, char, u32, Vec<u8>);

/// Every path of the tree at `dir` but `.git`, in order.
fn walk(dir: &Path) -> Vec<Seen> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if d == dir && e.file_name() == ".git" {
                continue;
            }
            let meta = p.symlink_metadata().unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let mode = meta.permissions().mode() & 0o777;
            let ft = meta.file_type();
            if ft.is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((rel, 'l', 0, target.into_os_string().into_encoded_bytes()));
            } else if ft.is_dir() {
                out.push((rel, 'd', mode, Vec::new()));
                todo.push(p);
            } else {
                out.push((rel, 'f', mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Add a submodule entry (a gitlink at `sub/module` with its `.gitmodules`) to scratch's index.
fn add_submodule(repo: &TestRepo) {
    let s = &repo.scratch;
    let url = repo.origin.to_str().unwrap();
    std::fs::write(
        s.join(".gitmodules"),
        format!("[submodule \"sub/module\"]\n\tpath = sub/module\n\turl = {url}\n"),
    )
    .unwrap();
    let head = repo.git(s, &["rev-parse", "HEAD"]);
    let entry = format!("160000,{},sub/module", head.trim());
    repo.git(s, &["add", ".gitmodules"]);
    repo.git(s, &["update-index", "--add", "--cacheinfo", &entry]);
}

/// What one case compared, for the summary.
struct Outcome {
    in_process: bool,
    /// git refused the tree (and so did add).
    refused: bool,
}

/// Run one case: commit a generated tree on origin's main, add card `card` and git's own tree
/// of the same commit under `settings` given as `given`, and compare them.
fn one_case(
    repo: &TestRepo,
    rng: &mut Rng,
    card: &str,
    settings: &[(&str, &str)],
    given: Given,
    label: &str,
) -> Outcome {
    let mut described = generate_tree(rng, &repo.scratch);
    let s = &repo.scratch;
    repo.git(s, &["rm", "-r", "-q", "--cached", "--ignore-unmatch", "."]);
    // Names git refuses to check out (`git~1`, `CON`…, under its default core.protectNTFS) get
    // into some trees, as a tree made elsewhere can hold them.
    repo.git(s, &["-c", "core.protectNTFS=false", "add", "-A"]);
    if rng.chance(1, 8) {
        add_submodule(repo);
        described.push_str("; a submodule");
    }
    repo.git(s, &["commit", "--quiet", "--allow-empty", "-m", card]);
    repo.git(s, &["push", "--quiet", "origin", "HEAD:main"]);
    let commit = repo.origin_main();
    let label = format!("{label} tree: {described}");

    let mut dash_c: Vec<String> = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    match given {
        Given::Config => {
            for (k, v) in settings {
                repo.git(&repo.base, &["config", k, v]);
            }
        }
        Given::DashC => {
            for (k, v) in settings {
                dash_c.extend(["-c".to_owned(), format!("{k}={v}")]);
            }
        }
        Given::Count => {
            env.push(("GIT_CONFIG_COUNT".into(), settings.len().to_string()));
            for (i, (k, v)) in settings.iter().enumerate() {
                env.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
                env.push((format!("GIT_CONFIG_VALUE_{i}"), v.to_string()));
            }
        }
    }
    let run = |args: &[&str], trace: bool| {
        let mut all: Vec<&str> = dash_c.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        let mut vars: Vec<(&str, &OsStr)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_ref())).collect();
        if trace {
            vars.push(("KARDWT_TRACE", "1".as_ref()));
        }
        repo.spawn_with_env("git", &repo.base, &all, &vars)
            .wait(Duration::from_secs(120))
    };
    let added = run(&["kardwt", "add", card], true);
    let in_process = added
        .stderr
        .lines()
        .any(|l| l.contains(" worktree add ") && l.contains("--no-checkout"));
    let ours = repo.card_path(card);
    let theirs = repo.tmp.join(format!("git-{card}"));
    let by_git = run(
        &[
            "worktree",
            "add",
            "--detach",
            theirs.to_str().unwrap(),
            &commit,
        ],
        false,
    );
    // Settings put in the repository's config are taken out again whatever the case finds, so
    // that no later case runs under them unawares (a refused case once left them behind, and
    // with them every later case went to git's checkout).
    let unset = || {
        if let Given::Config = given {
            for (k, _) in settings {
                repo.git(&repo.base, &["config", "--unset-all", k]);
            }
        }
    };
    // Where git refuses the tree, so does add, and it leaves none behind.
    if by_git.code != 0 || added.code != 0 {
        unset();
        assert!(
            by_git.code != 0 && added.code != 0,
            "{label}: one checked out what the other refused (in process: {in_process})\n\
             {added}\n{by_git}"
        );
        assert!(!ours.exists(), "{label}: a refused tree was left\n{added}");
        return Outcome {
            in_process,
            refused: true,
        };
    }
    assert_eq!(added.stdout.trim(), ours.to_str().unwrap(), "{label}");
    assert_eq!(
        repo.git(&ours, &["rev-parse", "HEAD"]).trim(),
        commit,
        "{label}"
    );

    // Files, modes, links.
    let (mine, git) = (walk(&ours), walk(&theirs));
    if mine != git {
        let diff = mine
            .iter()
            .zip(&git)
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("kardwt {a:?}\ngit    {b:?}"))
            .unwrap_or_else(|| format!("{} paths against {}", mine.len(), git.len()));
        panic!("{label}: the trees differ (in process: {in_process})\n{diff}");
    }
    // The index, entry by entry, and the status, read with the same settings.
    let reads: &[(&str, &str)] = match given {
        Given::Config => &[],
        _ => settings,
    };
    let index = |wt: &Path| git_bytes(repo, wt, reads, &["ls-files", "-s", "-z"]);
    let (mine, git) = (index(&ours), index(&theirs));
    let entries = |b: &[u8]| -> Vec<String> {
        b.split(|c| *c == 0)
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    };
    assert_eq!(
        entries(&mine),
        entries(&git),
        "{label}: the indexes differ (in process: {in_process})"
    );
    let status = |wt: &Path| {
        git_bytes(
            repo,
            wt,
            reads,
            &["status", "--porcelain", "-z", "--untracked-files=all"],
        )
    };
    assert_eq!(
        String::from_utf8_lossy(&status(&theirs)),
        "",
        "{label}: git's own tree"
    );
    assert_eq!(
        String::from_utf8_lossy(&status(&ours)),
        "",
        "{label}: kardwt's tree is not clean (in process: {in_process})"
    );
    let verified = run(&["-C", ours.to_str().unwrap(), "kardwt", "verify"], false);
    assert_eq!(
        verified.code, 0,
        "{label}: verify (in process: {in_process})\n{verified}"
    );
    unset();
    Outcome {
        in_process,
        refused: false,
    }
}

#[test]
fn add_checks_out_what_git_worktree_add_checks_out_over_generated_trees_settings_and_formats() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!(
        "add's checkout against git's over generated trees: seed {seed}, {cases} cases \
         (KARDWT_SEED={seed} replays)"
    );
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);
    let mut repos: Vec<Option<TestRepo>> = Format::ALL.iter().map(|_| None).collect();
    let (mut in_process, mut refused) = (0, 0);
    for case in 0..cases {
        // Every format in turn (SHA-1 twice as often: only there can kardwt check out
        // itself), settings and where they are given at random.
        let which = [0, 1, 0, 2][case as usize % 4];
        let format = Format::ALL[which];
        let repo = repos[which].get_or_insert_with(|| TestRepo::in_format(format));
        // Half the cases without settings: those kardwt may check out itself.
        let settings = match rng.chance(1, 2) {
            true => SETTINGS[0],
            false => *rng.pick(SETTINGS),
        };
        let given = *rng.pick(&[Given::Config, Given::DashC, Given::Count]);
        let label = format!(
            "seed {seed} case {case}: {} {settings:?} in {given:?}",
            format.name()
        );
        let out = one_case(repo, &mut rng, &format!("g{case}"), settings, given, &label);
        in_process += out.in_process as u64;
        refused += out.refused as u64;
    }
    eprintln!(
        "{cases} cases ({in_process} checked out in process, {} by git, {refused} refused by \
         both) in {:.1?}",
        cases - in_process,
        started.elapsed()
    );
}
