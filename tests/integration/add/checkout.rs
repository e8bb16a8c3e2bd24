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
fn the_in_process_checkout_creates_each_file_by_its_name_beneath_its_open_directory() {
    let repo = TestRepo::new();
    plain_tree(&repo);
    let log = repo.tmp.join("strace-dirfd.log");
    let out = repo
        .command(crate::support::strace::strace(), &repo.base)
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=openat,symlinkat,mkdir,mkdirat",
            "-o",
        ])
        .arg(&log)
        .args([BIN, "add", "named"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    // Every file, link and directory of the tree is made by its bare name relative to the
    // directory the writer opened (one path component looked up, not the tree's whole path).
    let made: Vec<&str> = text
        .lines()
        .filter(|l| {
            (l.contains("O_CREAT") && l.contains("O_EXCL"))
                || l.contains("symlinkat(")
                || l.contains("mkdir")
        })
        .filter(|l| !l.contains("/kardwt/") && !l.contains("/worktrees/"))
        .collect();
    for name in ["run.sh\"", "lib\"", "c.txt\"", "\"deep\"", "\"b\""] {
        assert!(
            made.iter().any(|l| l.contains(name)),
            "{name} made: {made:#?}"
        );
    }
    // (git itself writes the tree's `.git` file by its path.)
    let by_path: Vec<&&str> = made
        .iter()
        .filter(|l| l.contains("card-named/") && !l.contains("card-named/.git\""))
        .collect();
    assert!(by_path.is_empty(), "made by a path: {by_path:#?}");
    repo.kardwt(&repo.card_path("named"), &["verify"])
        .expect_code(0);
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

/// A post-checkout hook that logs its arguments, directory, git dir and whether `GIT_DIR` and
/// `GIT_WORK_TREE` are set, appending to `log`.
fn logging_hook(log: &Path) -> String {
    format!(
        "#!/bin/sh\necho \"$1 $2 $3 $(pwd) $(git rev-parse --git-dir) dir=${{GIT_DIR+set}} tree=${{GIT_WORK_TREE+set}}\" >> {}\n",
        sh_quote(log)
    )
}

#[test]
fn a_post_checkout_hook_of_the_users_leaves_the_checkout_to_git_which_runs_it_as_always() {
    let repo = TestRepo::new();
    let log = repo.tmp.join("hook.log");
    let hook = repo.common_dir().join("hooks/post-checkout");
    executable(&hook, &logging_hook(&log));
    assert!(add_traced(&repo, "hooked", &[]), "git checks out");
    let wt = repo.card_path("hooked");
    let head = repo.git(&wt, &["rev-parse", "HEAD"]);
    let admin = repo.admin_dir(&wt);
    let ran = std::fs::read_to_string(&log).unwrap();
    // Exactly what a plain `git worktree add` gives the same hook.
    std::fs::remove_file(&log).unwrap();
    let plain = repo.tmp.join("plain");
    repo.git(
        &repo.base,
        &[
            "worktree",
            "add",
            "--detach",
            plain.to_str().unwrap(),
            head.trim(),
        ],
    );
    let by_git = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        ran,
        by_git
            .replace(plain.to_str().unwrap(), wt.to_str().unwrap())
            .replace(
                repo.admin_dir(&plain).to_str().unwrap(),
                admin.to_str().unwrap()
            ),
        "once, as git runs it after a checkout of a new worktree"
    );
    assert!(
        ran.starts_with(&format!("{} {} 1 ", "0".repeat(40), head.trim())),
        "{ran}"
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
fn kardwts_own_shim_alone_keeps_the_checkout_in_process_and_a_hook_chained_behind_it_does_not() {
    let repo = TestRepo::new();
    repo.install_hooks();
    assert!(
        !add_traced(&repo, "shimmed", &[]),
        "only kardwt's shim: in-process"
    );
    repo.kardwt(&repo.card_path("shimmed"), &["verify"])
        .expect_code(0);

    // A hook that was there first runs behind the shim: git checks out and runs both.
    let log = repo.tmp.join("hook.log");
    let chained = repo.common_dir().join("hooks/post-checkout.kardwt-chained");
    executable(&chained, &logging_hook(&log));
    assert!(add_traced(&repo, "chained", &[]), "a chained hook: git");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran.lines().count(), 1, "{ran}");
    assert!(ran.starts_with(&"0".repeat(40)), "{ran}");
    repo.kardwt(&repo.card_path("chained"), &["verify"])
        .expect_code(0);

    // An edited shim is not kardwt's as shipped: git checks out, and the edit runs.
    std::fs::remove_file(&chained).unwrap();
    let hook = repo.common_dir().join("hooks/post-checkout");
    let shim = std::fs::read_to_string(&hook).unwrap();
    let mark = repo.tmp.join("edited");
    // (Edited as a shell script: the first line runs it through the shell.)
    let first = shim.lines().next().unwrap();
    let edited = shim.replacen(first, "#!/bin/sh", 1).replacen(
        "\n",
        &format!("\ntouch {}\n", sh_quote(&mark)),
        1,
    );
    executable(&hook, &edited);
    assert!(add_traced(&repo, "edited", &[]), "an edited shim: git");
    assert!(mark.exists(), "the edited shim ran");
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

#[test]
fn settings_given_on_gits_command_line_or_in_its_environment_reach_gits_checkout() {
    let repo = TestRepo::new();
    repo.commit_files(&[("text/a.txt", "a\nb\n")], "text");
    let crlf = |card: &str| std::fs::read(repo.card_path(card).join("text/a.txt")).unwrap();

    let (out, by_git) = run_traced(
        &repo,
        "git",
        &["-c", "core.autocrlf=true", "kardwt", "add", "dash-c"],
        &[],
    );
    assert!(by_git, "git -c: git checks out\n{out}");
    assert_eq!(crlf("dash-c"), b"a\r\nb\r\n", "git -c core.autocrlf=true");

    let env = [
        ("GIT_CONFIG_COUNT", "1".as_ref()),
        ("GIT_CONFIG_KEY_0", "core.autocrlf".as_ref()),
        ("GIT_CONFIG_VALUE_0", "true".as_ref()),
    ];
    let (out, by_git) = run_traced(&repo, BIN, &["add", "count"], &env);
    assert!(by_git, "GIT_CONFIG_COUNT: git checks out\n{out}");
    assert_eq!(crlf("count"), b"a\r\nb\r\n", "GIT_CONFIG_COUNT");

    // The user's hooks directory given with -c: git checks out and runs its hook.
    let hooks = repo.tmp.join("my-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let log = repo.tmp.join("hook.log");
    executable(&hooks.join("post-checkout"), &logging_hook(&log));
    let flag = format!("core.hooksPath={}", hooks.display());
    let (out, by_git) = run_traced(&repo, "git", &["-c", &flag, "kardwt", "add", "hooks"], &[]);
    assert!(by_git, "git -c core.hooksPath: git checks out\n{out}");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert!(
        ran.starts_with(&"0".repeat(40)),
        "the user's hook ran: {ran}"
    );
    // And without any, the tree is kardwt's plain copy again (nothing was left set).
    assert!(!add_traced(&repo, "plain", &[]));
    assert_eq!(crlf("plain"), b"a\nb\n");
}

#[test]
fn with_core_file_mode_false_an_executable_file_is_written_as_git_writes_it() {
    let repo = TestRepo::new();
    let script = repo.scratch.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&repo.scratch, &["add", "run.sh"]);
    repo.commit_files(&[("other.txt", "x\n")], "an executable file");
    repo.git(&repo.base, &["config", "core.fileMode", "false"]);
    assert!(add_traced(&repo, "modes", &[]), "core.fileMode=false: git");
    let plain = repo.tmp.join("plain");
    repo.git(
        &repo.base,
        &["worktree", "add", "--detach", plain.to_str().unwrap()],
    );
    let mode = |p: &Path| p.join("run.sh").metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&repo.card_path("modes")), mode(&plain));
    assert_ne!(mode(&plain) & 0o111, 0, "git writes it executable");
}

#[test]
fn in_a_blobless_partial_clone_add_checks_out_files_upstream_added_since() {
    let repo = TestRepo::new();
    repo.git(&repo.origin, &["config", "uploadpack.allowFilter", "true"]);
    let url = format!("file://{}", repo.origin.display());
    let partial = repo.tmp.join("partial");
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--filter=blob:none",
            &url,
            partial.to_str().unwrap(),
        ],
    );
    // Upstream moves on with a file the partial clone has never seen.
    repo.commit_files(&[("new/file.txt", "fresh\n")], "a new file");
    let out = repo
        .spawn_with_env(
            BIN,
            &partial,
            &["add", "lazy"],
            &[("KARDWT_TRACE", "1".as_ref())],
        )
        .wait(Duration::from_secs(60));
    out.expect_code(0);
    let wt = partial
        .parent()
        .unwrap()
        .join("partial.worktrees/card-lazy");
    assert_eq!(
        std::fs::read(wt.join("new/file.txt")).unwrap(),
        b"fresh\n",
        "{out}"
    );
    assert_eq!(repo.git(&wt, &["status", "--porcelain"]), "");
}
