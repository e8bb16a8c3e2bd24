//! Reftable repositories (`extensions.refStorage=reftable`), whose refs kardwt cannot read:
//! a plain `git worktree add` keeps its tree and succeeds, whatever its branch, and
//! `git kardwt add` refuses before doing anything, naming the setting.
use super::*;

/// A reftable clone of origin beside the base, with kardwt's shims installed.
fn reftable_clone(repo: &TestRepo) -> PathBuf {
    let clone = repo.sibling("reftable");
    let origin = repo.origin.to_str().unwrap();
    repo.git(
        &repo.tmp,
        &[
            "clone",
            "--quiet",
            "--ref-format=reftable",
            origin,
            clone.to_str().unwrap(),
        ],
    );
    assert_eq!(
        repo.git(&clone, &["config", "extensions.refStorage"])
            .trim(),
        "reftable"
    );
    repo.kardwt(&clone, &["install-hooks"]).expect_code(0);
    clone
}

/// Every file under `dir` with its bytes (the `.git` directory included).
fn everything(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all = files_of(dir);
    all.extend(
        files_of(&dir.join(".git"))
            .into_iter()
            .map(|(p, b)| (Path::new(".git").join(p), b)),
    );
    all
}

#[test]
fn a_plain_worktree_add_in_a_reftable_repository_keeps_its_tree_and_succeeds() {
    let repo = TestRepo::new();
    let clone = reftable_clone(&repo);
    for (name, branch) in [("plain", "plain"), ("card-7", "card/7")] {
        let path = repo.sibling(name);
        let out = repo.git_output(
            &clone,
            &["worktree", "add", "-b", branch, path.to_str().unwrap()],
        );
        out.expect_code(0);
        assert!(
            !out.stderr.contains("kardwt"),
            "spoke through a pipe:\n{out}"
        );
        assert_intact(&repo, &path);
        assert!(!clone
            .join(format!(".git/worktrees/{name}/kardwt.toml"))
            .exists());
    }
    let notes = noop_notes(&clone.join(".git"));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("extensions.refStorage=reftable"),
        "{notes:?}"
    );
}

#[test]
fn add_in_a_reftable_repository_refuses_naming_the_setting_and_changes_nothing() {
    let repo = TestRepo::new();
    let clone = reftable_clone(&repo);
    repo.commit_on_origin("origin moves on");
    let before = everything(&clone);
    let out = repo.kardwt(&clone, &["add", "9"]);
    out.expect_code(3);
    assert!(
        out.stderr
            .contains("refs in reftable (extensions.refStorage=reftable)"),
        "{out}"
    );
    assert!(out.stderr.contains("hint: "), "{out}");
    assert!(everything(&clone) == before, "add changed the repository");
    assert!(!repo.sibling("reftable.worktrees").exists());
}
