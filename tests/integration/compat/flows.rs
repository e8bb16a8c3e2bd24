//! The main flows in every repository format and setting git supports: `install-hooks`, `add`,
//! a plain `git worktree add` seeded by the post-checkout hook, `verify`, `list --json`, a push
//! through the pre-push hook (one allowed, one blocked for committing the shared `.env`),
//! `remove` and `gc --apply`, run alike in SHA-256 and reftable repositories, blobless,
//! treeless and shallow clones, with `core.fileMode=false`, `core.symlinks=false` or
//! `extensions.worktreeConfig`, with a submodule, and with settings given through `git -c`,
//! `GIT_CONFIG_PARAMETERS` and `GIT_CONFIG_COUNT`.
use std::ffi::OsStr;

use super::*;
use crate::support::push::{assert_blocked, commit, ls_remote};

/// How the commands of a flow reach git: settings on every command line (`git -c`) or in the
/// environment (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`), or neither.
#[derive(Default)]
struct Given {
    dash_c: Vec<String>,
    env: Vec<(String, String)>,
}

impl Given {
    fn dash_c(settings: &[(&str, &str)]) -> Given {
        let dash_c = settings
            .iter()
            .flat_map(|(k, v)| ["-c".to_owned(), format!("{k}={v}")])
            .collect();
        Given {
            dash_c,
            env: Vec::new(),
        }
    }

    /// In `GIT_CONFIG_PARAMETERS` as a tool exports it (git's own quoting: `'key'='value'`,
    /// space-separated), not through `git -c`.
    fn parameters(settings: &[(&str, &str)]) -> Given {
        let quoted: Vec<String> = settings
            .iter()
            .map(|(k, v)| format!("'{k}'='{v}'"))
            .collect();
        Given {
            dash_c: Vec::new(),
            env: vec![("GIT_CONFIG_PARAMETERS".to_owned(), quoted.join(" "))],
        }
    }

    fn count(settings: &[(&str, &str)]) -> Given {
        let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), settings.len().to_string())];
        for (i, (k, v)) in settings.iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
            env.push((format!("GIT_CONFIG_VALUE_{i}"), v.to_string()));
        }
        Given {
            dash_c: Vec::new(),
            env,
        }
    }
}

/// One repository the flows run in.
struct Flow<'r> {
    repo: &'r TestRepo,
    given: Given,
    name: &'static str,
}

impl Flow<'_> {
    /// `git [settings] args…` in `dir`. Does not assert.
    fn git(&self, dir: &Path, args: &[&str]) -> Output {
        let mut all: Vec<&str> = self.given.dash_c.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        let env: Vec<(&str, &OsStr)> = self
            .given
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_ref()))
            .collect();
        self.repo
            .spawn_with_env("git", dir, &all, &env)
            .wait(COMMAND_TIMEOUT)
    }

    /// `git [settings] args…` in `dir`, asserting exit 0; stdout.
    #[track_caller]
    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git(dir, args);
        assert_eq!(out.code, 0, "{}: unexpected failure\n{out}", self.name);
        out.stdout
    }

    /// `git [settings] kardwt args…` in `dir`, asserting exit 0; stdout.
    #[track_caller]
    fn kardwt(&self, dir: &Path, args: &[&str]) -> String {
        let mut all = vec!["kardwt"];
        all.extend_from_slice(args);
        self.ok(dir, &all)
    }
}

/// Is `path` a link to the base's `.env`?
#[track_caller]
fn links_env(flow: &Flow, tree: &Path) {
    let link = std::fs::read_link(tree.join(".env"))
        .unwrap_or_else(|e| panic!("{}: no .env link in {}: {e}", flow.name, tree.display()));
    assert_eq!(link, flow.repo.base.join(".env"), "{}", flow.name);
}

/// Every main flow in the repository `repo` (its base as the variant made it), with commands
/// given `given`.
fn main_flows(repo: &TestRepo, name: &'static str, given: Given) {
    let flow = Flow { repo, given, name };
    let base = &repo.base;
    repo.share_env_with_prepare();
    flow.kardwt(base, &["install-hooks"]);

    // add
    let out = flow.kardwt(base, &["add", "1"]);
    let card = PathBuf::from(out.trim());
    assert_eq!(card, repo.card_path("1"), "{name}");
    assert_eq!(flow.ok(&card, &["status", "--porcelain"]), "", "{name}");
    assert_eq!(
        flow.ok(&card, &["rev-parse", "HEAD"]).trim(),
        repo.origin_main(),
        "{name}"
    );
    links_env(&flow, &card);
    assert!(card.join("src/lib.txt").is_file(), "{name}");

    // A plain `git worktree add`, seeded by the hook.
    let plain = repo.sibling("plain");
    flow.ok(
        base,
        &[
            "worktree",
            "add",
            "-b",
            "feature/plain",
            plain.to_str().unwrap(),
        ],
    );
    links_env(&flow, &plain);
    assert!(repo.record_path(&plain).is_file(), "{name}: not recorded");
    assert_eq!(flow.ok(&plain, &["status", "--porcelain"]), "", "{name}");

    // verify, list
    flow.kardwt(&card, &["verify"]);
    flow.kardwt(&plain, &["verify"]);
    let list = flow.kardwt(base, &["list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let paths: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["path"].as_str())
        .collect();
    for tree in [&card, &plain] {
        assert!(paths.contains(&tree.to_str().unwrap()), "{name}: {list}");
    }

    // A push through the pre-push hook: allowed, then blocked for the shared `.env`.
    let oid = commit(repo, &card, &[("notes.txt", "ordinary\n")], false, "notes");
    flow.ok(&card, &["push", "--quiet", "origin", "card/1"]);
    assert!(ls_remote(repo).contains(&oid), "{name}");
    flow.ok(&card, &["add", "-f", ".env"]);
    flow.ok(&card, &["commit", "--quiet", "-m", "the shared env"]);
    let bad = flow.ok(&card, &["rev-parse", "HEAD"]).trim().to_owned();
    let out = flow.git(&card, &["push", "origin", "card/1"]);
    assert_blocked(repo, &out, ".env", &bad);
    // Undone, the link stays as sharing made it.
    flow.ok(&card, &["reset", "--quiet", "--soft", "HEAD~1"]);
    flow.ok(&card, &["rm", "--quiet", "--cached", ".env"]);
    links_env(&flow, &card);
    flow.kardwt(&card, &["verify"]);

    // remove
    flow.kardwt(base, &["remove", "1"]);
    assert!(!card.exists(), "{name}: card 1 is still there");
    assert!(!repo.is_registered(&card), "{name}");

    // gc: a card merged into origin's main and pushed is collected.
    let out = flow.kardwt(base, &["add", "2"]);
    let two = PathBuf::from(out.trim());
    commit(repo, &two, &[("two.txt", "two\n")], false, "two");
    repo.push_and_merge(&two, "card/2");
    let dry = flow.kardwt(base, &["gc", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&dry).unwrap();
    let candidates = report["candidates"].as_array().unwrap();
    assert!(
        candidates
            .iter()
            .any(|c| c["path"] == two.to_str().unwrap()),
        "{name}: card 2 is no gc candidate\n{dry}"
    );
    let out = flow.git(base, &["kardwt", "gc", "--apply"]);
    assert!(!two.exists(), "{name}: gc left card 2\n{dry}\n{out}");
    assert!(plain.is_dir(), "{name}: gc took the plain tree");
}

#[test]
fn the_main_flows_work_in_a_sha256_repository() {
    let repo = TestRepo::in_format(Format::Sha256);
    main_flows(&repo, "sha256", Given::default());
}

#[test]
fn the_main_flows_work_in_a_reftable_repository() {
    let repo = TestRepo::in_format(Format::Reftable);
    main_flows(&repo, "reftable", Given::default());
}

/// A base cloned again from origin (serving filters) with `flags`.
fn recloned(flags: &[&str]) -> TestRepo {
    let repo = TestRepo::new();
    repo.git(&repo.origin, &["config", "uploadpack.allowFilter", "true"]);
    repo.reclone_base(flags);
    repo
}

#[test]
fn the_main_flows_work_in_a_blobless_partial_clone() {
    let repo = recloned(&["--filter=blob:none"]);
    main_flows(&repo, "blobless", Given::default());
}

#[test]
fn the_main_flows_work_in_a_treeless_partial_clone() {
    let repo = recloned(&["--filter=tree:0"]);
    main_flows(&repo, "treeless", Given::default());
}

#[test]
fn the_main_flows_work_in_a_shallow_clone() {
    let repo = recloned(&["--depth=1"]);
    main_flows(&repo, "shallow", Given::default());
}

#[test]
fn the_main_flows_work_with_core_file_mode_false() {
    let repo = TestRepo::new();
    repo.git(&repo.base, &["config", "core.fileMode", "false"]);
    main_flows(&repo, "core.fileMode=false", Given::default());
}

#[test]
fn the_main_flows_work_with_core_symlinks_false() {
    let repo = TestRepo::new();
    repo.git(&repo.base, &["config", "core.symlinks", "false"]);
    main_flows(&repo, "core.symlinks=false", Given::default());
}

#[test]
fn the_main_flows_work_with_extensions_worktree_config() {
    let repo = TestRepo::new();
    repo.git(&repo.base, &["config", "extensions.worktreeConfig", "true"]);
    repo.git(
        &repo.base,
        &["config", "--worktree", "user.name", "Base Only"],
    );
    main_flows(&repo, "extensions.worktreeConfig", Given::default());
}

#[test]
fn the_main_flows_work_in_a_repository_with_a_submodule() {
    let repo = TestRepo::new();
    // A submodule of origin's own history (any repository would do), committed on main.
    let s = &repo.scratch;
    let url = repo.origin.to_str().unwrap();
    repo.git(
        s,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "--quiet",
            url,
            "sub",
        ],
    );
    repo.git(s, &["commit", "--quiet", "-m", "a submodule"]);
    repo.git(s, &["push", "--quiet", "origin", "main"]);
    repo.git(&repo.base, &["pull", "--quiet", "--ff-only"]);
    repo.git(
        &repo.base,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "update",
            "--quiet",
            "--init",
        ],
    );
    main_flows(&repo, "submodule", Given::default());
}

/// Settings that change a checkout, given on the command line of every command.
const SETTINGS: &[(&str, &str)] = &[("core.autocrlf", "true"), ("core.fileMode", "false")];

#[test]
fn the_main_flows_work_with_settings_given_by_git_dash_c() {
    let repo = TestRepo::new();
    main_flows(&repo, "git -c", Given::dash_c(SETTINGS));
}

#[test]
fn the_main_flows_work_with_settings_given_in_git_config_count() {
    let repo = TestRepo::new();
    main_flows(&repo, "GIT_CONFIG_COUNT", Given::count(SETTINGS));
}

#[test]
fn the_main_flows_work_with_settings_given_in_git_config_parameters() {
    let repo = TestRepo::new();
    let given = Given::parameters(SETTINGS);
    // git reads them as given.
    let (var, value) = &given.env[0];
    let seen = repo
        .spawn_with_env(
            "git",
            &repo.base,
            &["config", "core.autocrlf"],
            &[(var.as_str(), value.as_ref())],
        )
        .wait(COMMAND_TIMEOUT);
    assert_eq!(seen.stdout, "true\n", "{seen}");
    main_flows(&repo, "GIT_CONFIG_PARAMETERS", given);
}
