//! A prepare-cache hit carries no other tree's identity: outputs that hold the tree's directory
//! name, its git dir, its branch or its card id (in the spellings kardwt looks for: as is, any
//! case, separators turned into `-`, `_` or dropped) are not stored, the event naming the file and
//! what it named, and the next card prepares itself; so are outputs holding the locks held for
//! the tree (`KARDWT_HELD_LOCKS`) and a file named after the tree; a tree whose directory name or branch is too short to look for never stores.
use std::path::{Path, PathBuf};

use crate::support::{pinned, sh_quote, TestRepo};

/// Commit a lockfile and ignore the outputs.
fn seed(repo: &TestRepo) {
    repo.commit_files(
        &[
            (".gitignore", ".env\n.env.*\nnode_modules/\n"),
            ("package-lock.json", "v1\n"),
        ],
        "lockfile",
    );
}

/// Rules running a prepare that logs the tree's name, builds `node_modules` from the
/// lockfile and then runs `step` (shell, in the tree).
fn rules_with_step(repo: &TestRepo, step: &str) -> String {
    let log = sh_quote(&repo.prepare_log());
    let script = repo.write_helper(
        "prepare",
        &format!(
            "set -e\necho \"${{PWD##*/}}\" >> {log}\n\
             mkdir -p node_modules/pkg\n\
             cp package-lock.json node_modules/pkg/lock-copy\n{step}"
        ),
    );
    format!(
        "{}    inputs: [package-lock.json]\n    outputs: [node_modules]\n",
        repo.rules_for(&script, false)
    )
}

/// The cache's entries (key directories).
fn entries(repo: &TestRepo) -> Vec<PathBuf> {
    std::fs::read_dir(repo.common_dir().join("kardwt/cache"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect()
}

/// The last `prepared` event's outcome for `card`.
fn prepared(repo: &TestRepo, card: &str) -> String {
    let events = repo.events(Some(card));
    let e = events
        .iter()
        .rev()
        .find(|e| e["event"] == "prepared")
        .unwrap_or_else(|| panic!("no prepared event for {card}: {events:?}"));
    e["outcome"].as_str().unwrap().to_owned()
}

/// Every name (relative to `dir`) and byte beneath `dir`, as text, for "does it name X" checks.
fn everything(dir: &Path) -> String {
    let mut all = String::new();
    crate::support::walk(dir, &mut |p, m| {
        all.push_str(&p.strip_prefix(dir).unwrap().to_string_lossy());
        all.push('\n');
        if m.is_file() {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(p).unwrap()));
        } else if m.file_type().is_symlink() {
            all.push_str(&std::fs::read_link(p).unwrap().to_string_lossy());
        }
        all.push('\n');
    });
    all
}

/// With the prepare step `step`, card `first`'s outputs are not stored (the event says why,
/// naming the file and what it found there: the snapshot `name`), and card `second` runs
/// prepare itself and holds nothing of `first`'s `shows` (what the step wrote for `first`).
fn never_stored(step: &str, name: &str, (first, second): (&str, &str), shows: &str) {
    let repo = TestRepo::new();
    seed(&repo);
    repo.write_rules(&rules_with_step(&repo, step));
    let one = repo.add_card(first);
    let said = prepared(&repo, first);
    let case = format!("step {step:?}");
    pinned(&repo).bind(|| insta::assert_snapshot!(name, said));
    assert!(
        everything(&one.join("node_modules")).contains(shows),
        "{case}: the step did not write {shows:?} in its own tree"
    );
    assert!(
        entries(&repo).is_empty(),
        "{case}: an entry naming card {first}'s tree was stored"
    );
    let two = repo.add_card(second);
    assert_eq!(
        repo.prepare_runs(),
        [format!("card-{first}"), format!("card-{second}")],
        "{case}: card {second}'s prepare did not run"
    );
    let held = everything(&two.join("node_modules"));
    assert!(
        !held.contains(shows),
        "{case}: card {second} was handed card {first}'s {shows:?}:\n{held}"
    );
}

#[test]
fn outputs_holding_the_trees_directory_name_are_not_stored() {
    // A compose project name from the directory, as compose spells it (and upper case).
    never_stored(
        "echo \"COMPOSE_PROJECT_NAME=$(basename \"$PWD\")\" > node_modules/.env.compose",
        "not_stored_directory_name",
        ("1", "2"),
        "card-1",
    );
    never_stored(
        "basename \"$PWD\" | tr a-z- A-Z_ > node_modules/PROJECT",
        "not_stored_directory_name_changed",
        ("1", "2"),
        "CARD_1",
    );
}

#[test]
fn outputs_holding_the_trees_branch_or_git_dir_are_not_stored() {
    never_stored(
        "git branch --show-current > node_modules/built-from",
        "not_stored_branch",
        ("1", "2"),
        "card/1",
    );
    never_stored(
        "git rev-parse --absolute-git-dir > node_modules/gitdir",
        "not_stored_git_dir",
        ("1", "2"),
        "worktrees/card-1",
    );
}

#[test]
fn outputs_holding_a_card_id_long_enough_to_look_for_are_not_stored() {
    // The id cut out of the directory name, written alone.
    never_stored(
        "printf 'card = %s\\n' \"${PWD##*card-}\" > node_modules/card.toml",
        "not_stored_card_id",
        ("login-form", "signup-page"),
        "card = login-form",
    );
}

#[test]
fn outputs_holding_the_locks_held_for_the_tree_are_not_stored() {
    // KARDWT_HELD_LOCKS is given to every hook (a kardwt command it runs fails at once on a
    // lock its parent holds); its fields name the card's lock and the command holding it.
    never_stored(
        "printf '%s\\n' \"$KARDWT_HELD_LOCKS\" | cut -f3 > node_modules/holder",
        "not_stored_held_lock",
        ("1", "2"),
        "add 1",
    );
}

#[test]
fn a_file_named_after_the_tree_is_not_stored() {
    never_stored(
        "mkdir -p \"node_modules/.cache/${PWD##*/}\" && echo x > \"node_modules/.cache/${PWD##*/}/data\"",
        "not_stored_file_named_after_the_tree",
        ("1", "2"),
        ".cache/card-1",
    );
}

#[test]
fn a_tree_whose_name_is_too_short_to_look_for_never_stores_its_outputs() {
    let repo = TestRepo::new();
    seed(&repo);
    repo.write_rules(&rules_with_step(
        &repo,
        "basename \"$PWD\" > node_modules/name",
    ));
    // A worktree made by hand, its directory and branch `wt1`, prepared by kardwt.
    std::fs::create_dir_all(repo.root()).unwrap();
    let tree = repo.root().join("wt1");
    repo.worktree_add_unhooked(&[tree.to_str().unwrap(), "-b", "wt1", "origin/main"]);
    let out = repo.kardwt(&repo.base, &["prepare", "--path", tree.to_str().unwrap()]);
    out.expect_code(0);
    assert_eq!(
        std::fs::read_to_string(tree.join("node_modules/name")).unwrap(),
        "wt1\n",
        "the tree keeps its own outputs"
    );
    let card = repo.record(&tree)["card"].as_str().unwrap().to_owned();
    let said = prepared(&repo, &card);
    // Not stored, naming "wt1" as too short to look for; said on stderr too.
    let shown = format!("{said}\n--- stderr\n{}", out.stderr);
    pinned(&repo).bind(|| insta::assert_snapshot!("not_stored_name_too_short", shown));
    assert!(entries(&repo).is_empty(), "{:?}", entries(&repo));
    // A card with a name long enough to look for stores as ever (its outputs name only itself
    // through the file this step writes, so write none).
    repo.write_rules(&rules_with_step(&repo, ""));
    repo.add_card("1");
    assert_eq!(entries(&repo).len(), 1);
}
