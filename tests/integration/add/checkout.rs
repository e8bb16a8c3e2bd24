//! `git kardwt add` checks a plain tree out itself, on every core, with the same files, modes,
//! links and index git's own checkout writes, and runs the post-checkout hooks git would have
//! run; anything that could make git write other bytes leaves the checkout to git.
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::support::{sh_quote, TestRepo, BIN};

/// `git kardwt add <card>` traced (exit 0); did git's `worktree add` check the files out
/// itself (no `--no-checkout`)?
fn add_traced(repo: &TestRepo, card: &str, extra: &[&str]) -> bool {
    let mut args = vec!["add", card];
    args.extend_from_slice(extra);
    run_traced(repo, BIN, &args, &[]).1
}

/// `program args…` with `KARDWT_TRACE=1` and `env` (exit 0): its output, and whether git's
/// `worktree add` checked the files out itself.
fn run_traced(
    repo: &TestRepo,
    program: &str,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (crate::support::Output, bool) {
    let mut env = env.to_vec();
    env.push(("KARDWT_TRACE", "1".as_ref()));
    let out = repo
        .spawn_with_env(program, &repo.base, args, &env)
        .wait(Duration::from_secs(60));
    out.expect_code(0);
    let add = out
        .stderr
        .lines()
        .find(|l| l.contains(" worktree add "))
        .unwrap_or_else(|| panic!("no traced worktree add:\n{out}"));
    let by_git = !add.contains("--no-checkout");
    (out, by_git)
}

/// Write an executable script at `path`.
fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A tracked file: its name, mode bits and content (a link's target).
type FileSeen = (String, u32, Vec<u8>);

/// What a tree holds, as git sees it: the index (`ls-files -s`), the status, and each file's
/// content, mode and link target.
fn as_git_sees(repo: &TestRepo, wt: &Path) -> (String, String, Vec<FileSeen>) {
    let staged = repo.git(wt, &["ls-files", "-s"]);
    let status = repo.git(wt, &["status", "--porcelain", "--untracked-files=all"]);
    let mut files = Vec::new();
    for name in repo.git(wt, &["ls-files"]).lines() {
        let p = wt.join(name);
        let meta = p.symlink_metadata().unwrap();
        let body = match meta.file_type().is_symlink() {
            true => std::fs::read_link(&p)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes(),
            false => std::fs::read(&p).unwrap(),
        };
        files.push((name.to_owned(), meta.permissions().mode() & 0o777, body));
    }
    (staged, status, files)
}

/// The TREE extension (signature, size, data) of the index of the tree at `wt`, if it has one:
/// the fixture's names never hold "TREE", so the first occurrence after the header is it.
fn cache_tree_of(repo: &TestRepo, wt: &Path) -> Option<Vec<u8>> {
    let index = repo.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let bytes = std::fs::read(index.trim()).unwrap();
    let at = bytes.windows(4).skip(12).position(|w| w == b"TREE")? + 12;
    let size = u32::from_be_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    Some(bytes[at..at + 8 + size].to_vec())
}

fn plain_tree(repo: &TestRepo) {
    let script = repo.scratch.join("bin/run.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "#!/bin/sh\necho run\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("../src/lib.txt", repo.scratch.join("bin/lib")).unwrap();
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.commit_files(&[("deep/a/b/c.txt", "deep\r\nline\n")], "a plain tree");
}

#[test]
fn a_plain_tree_is_checked_out_in_process_exactly_as_git_checks_it_out() {
    let repo = TestRepo::new();
    plain_tree(&repo);
    assert!(
        !add_traced(&repo, "fast", &[]),
        "kardwt checks a plain tree out itself"
    );
    let fast = repo.card_path("fast");
    // git's own checkout of the same commit, beside it.
    repo.git(&repo.base, &["config", "checkout.workers", "1"]);
    assert!(
        add_traced(&repo, "git", &[]),
        "checkout.workers leaves it to git"
    );
    let by_git = repo.card_path("git");
    let (staged, status, files) = as_git_sees(&repo, &fast);
    let (git_staged, git_status, git_files) = as_git_sees(&repo, &by_git);
    assert_eq!(staged, git_staged);
    assert_eq!(status, "", "a fresh tree is clean");
    assert_eq!(git_status, "");
    assert_eq!(files, git_files);
    assert!(files
        .iter()
        .any(|(n, m, _)| n == "bin/run.sh" && m & 0o111 != 0));
    assert!(files
        .iter()
        .any(|(n, _, b)| n == "bin/lib" && b == b"../src/lib.txt"));
    // The index holds the cache tree git's checkout primes, byte for byte, and git trusts it.
    let ours = cache_tree_of(&repo, &fast);
    assert!(ours.is_some(), "the in-process index has a cache tree");
    assert_eq!(ours, cache_tree_of(&repo, &by_git));
    assert_eq!(
        repo.git(&fast, &["write-tree"]),
        repo.git(&fast, &["rev-parse", "HEAD^{tree}"])
    );
    // Nothing is staged against HEAD, and the tree verifies.
    assert_eq!(repo.git(&fast, &["diff", "--cached", "--name-only"]), "");
    repo.kardwt(&fast, &["verify"]).expect_code(0);
}

#[test]
fn attributes_submodules_sparse_checkout_and_line_ending_settings_leave_the_checkout_to_git() {
    let repo = TestRepo::new();
    repo.commit_files(
        &[
            ("docs/.gitattributes", "*.txt text eol=crlf\n"),
            ("docs/a.txt", "a\n"),
        ],
        "attrs",
    );
    assert!(add_traced(&repo, "attrs", &[]), "a tracked attributes file");
    // git's conversion happened: the file has CRLF on disk.
    assert_eq!(
        std::fs::read(repo.card_path("attrs").join("docs/a.txt")).unwrap(),
        b"a\r\n"
    );

    let repo = TestRepo::new();
    repo.git(&repo.base, &["config", "core.autocrlf", "true"]);
    assert!(add_traced(&repo, "crlf", &[]), "core.autocrlf");

    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.home.join(".config/git")).unwrap();
    std::fs::write(repo.home.join(".config/git/attributes"), "*.md -text\n").unwrap();
    assert!(add_traced(&repo, "user", &[]), "the user's attributes file");

    let repo = TestRepo::new();
    std::fs::write(repo.common_dir().join("info/attributes"), "*.md -text\n").unwrap();
    assert!(
        add_traced(&repo, "info", &[]),
        "the repository's info/attributes"
    );

    let repo = TestRepo::new();
    repo.git(
        &repo.base,
        &["sparse-checkout", "set", "--no-cone", "/src/"],
    );
    assert!(add_traced(&repo, "sparse", &[]), "sparse checkout");
    assert!(
        !repo.card_path("sparse").join("README.md").exists(),
        "git kept the patterns"
    );
}

#[test]
fn one_core_leaves_the_checkout_to_git() {
    let repo = TestRepo::new();
    let (out, by_git) = run_traced(&repo, "taskset", &["-c", "0", BIN, "add", "solo"], &[]);
    assert!(by_git, "one core:\n{out}");
}

#[test]
fn a_tree_checked_out_in_process_runs_the_post_checkout_hooks_git_would_have_run() {
    let repo = TestRepo::new();
    let log = repo.tmp.join("hook.log");
    let hook = repo.common_dir().join("hooks/post-checkout");
    let body = "#!/bin/sh\necho \"$1 $2 $3 $(pwd) $(git rev-parse --git-dir)\" >> ";
    executable(&hook, &format!("{body}{}\n", sh_quote(&log)));
    assert!(!add_traced(&repo, "hooked", &[]));
    let wt = repo.card_path("hooked");
    let head = repo.git(&wt, &["rev-parse", "HEAD"]);
    let admin = repo.admin_dir(&wt);
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        ran,
        format!(
            "{} {} 1 {} {}\n",
            "0".repeat(40),
            head.trim(),
            wt.display(),
            admin.display()
        ),
        "once, as git runs it after a checkout of a new worktree"
    );

    // A failing hook fails the add as git's would, and the new tree goes again.
    std::fs::write(&hook, "#!/bin/sh\necho no >&2\nexit 3\n").unwrap();
    let out = repo.kardwt(&repo.base, &["add", "refused"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(!repo.card_path("refused").exists(), "{out}");
    assert!(repo
        .worktrees()
        .iter()
        .all(|(p, _, _)| !p.ends_with("card-refused")));
}

#[test]
fn with_a_hook_and_a_git_without_hook_run_the_checkout_stays_with_git() {
    let repo = TestRepo::new();
    let log = repo.tmp.join("hook.log");
    let hook = repo.common_dir().join("hooks/post-checkout");
    executable(
        &hook,
        &format!("#!/bin/sh\necho \"$1 $3\" >> {}\n", sh_quote(&log)),
    );
    // A git first on PATH that says it is 2.35 and is the real one otherwise.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let real = std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH");
    let dir = repo.tmp.join("old-git");
    std::fs::create_dir_all(&dir).unwrap();
    let body = format!(
        "#!/bin/sh\nfor a; do last=$a; done\n[ \"$last\" = version ] && {{ echo 'git version 2.35.8'; exit 0; }}\nexec {} \"$@\"\n",
        sh_quote(&real)
    );
    executable(&dir.join("git"), &body);
    let mut dirs = vec![dir, Path::new(BIN).parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(dirs).unwrap();
    let (out, by_git) = run_traced(&repo, BIN, &["add", "old"], &[("PATH", path.as_os_str())]);
    assert!(by_git, "git 2.35 checks out:\n{out}");
    assert!(
        out.stderr.contains(" version "),
        "git was asked its version:\n{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("{} 1\n", "0".repeat(40))
    );
}

#[test]
fn names_that_are_not_utf8_are_checked_out_in_process_byte_for_byte() {
    use std::os::unix::ffi::OsStrExt;
    let repo = TestRepo::new();
    // Latin-1 "café.txt" and a directory "ü" (0xfc), neither valid UTF-8.
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    let dir = std::ffi::OsStr::from_bytes(b"\xfc");
    std::fs::write(repo.scratch.join(name), b"latin\n").unwrap();
    std::fs::create_dir_all(repo.scratch.join(dir)).unwrap();
    std::fs::write(repo.scratch.join(dir).join(name), b"nested\n").unwrap();
    repo.git(&repo.scratch, &["add", "-A"]);
    repo.commit_files(&[("plain.txt", "plain\n")], "names in Latin-1");
    assert!(
        !add_traced(&repo, "latin", &[]),
        "kardwt checks such a tree out itself"
    );
    let fast = repo.card_path("latin");
    repo.git(&repo.base, &["config", "checkout.workers", "1"]);
    assert!(add_traced(&repo, "git", &[]));
    let by_git = repo.card_path("git");
    assert_eq!(
        std::fs::read(fast.join(name)).unwrap(),
        b"latin\n",
        "the name's bytes, as committed"
    );
    assert_eq!(
        std::fs::read(fast.join(dir).join(name)).unwrap(),
        b"nested\n"
    );
    // The index as bytes (the harness's strings are lossy).
    let staged = |wt: &Path| {
        let out = std::process::Command::new("git")
            .args(["ls-files", "-s", "-z"])
            .current_dir(wt)
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
    };
    assert_eq!(staged(&fast), staged(&by_git));
    let index = staged(&fast);
    let nested = b"\xfc/caf\xe9.txt";
    assert!(index.windows(nested.len()).any(|w| w == nested));
    assert_eq!(
        repo.git(&fast, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert_eq!(cache_tree_of(&repo, &fast), cache_tree_of(&repo, &by_git));
    repo.kardwt(&fast, &["verify"]).expect_code(0);
}
