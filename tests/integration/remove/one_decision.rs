//! One decision whether a tree may be removed: `remove`, `gc --apply` and Claude's
//! WorktreeRemove refuse the same tree for the same reason, in the same words.
use std::path::Path;

use crate::support::mount::Mounted;
use crate::support::recipes::{claude_commands, kept_line, remove_payload, run_sh};
use crate::support::TestRepo;

/// Commit a file in `wt`, push its branch and land it, so gc would collect the tree.
fn landed(repo: &TestRepo, wt: &Path, card: &str) {
    std::fs::write(wt.join(format!("{card}.txt")), "work\n").unwrap();
    repo.git(wt, &["add", "--", &format!("{card}.txt")]);
    repo.git(wt, &["commit", "--quiet", "-m", card]);
    repo.push_and_merge(wt, &format!("card/{card}"));
}

/// Each tree state refused by the three paths: the reason each gave, about "it", must be one
/// text; the whole lines are pinned. The runner releases a tree it keeps only when what it holds
/// is known: not one with a mount in it, dirty or not.
#[test]
fn remove_gc_and_the_runner_refuse_a_tree_for_the_same_reason_in_the_same_words() {
    let repo = TestRepo::new();
    let exclude = repo.common_dir().join("info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/build/\n");
    std::fs::write(&exclude, text).unwrap();
    // A mount needs root: without it that row is left out (CI runs as root).
    let mut states = vec!["dirty", "nested", "locked", "mounted"];
    let mut trees = Vec::new();
    let mut mounts = Vec::new();
    for card in states.clone() {
        let wt = repo.add_card(card);
        landed(&repo, &wt, card);
        match card {
            "dirty" => std::fs::write(wt.join("notes.txt"), "work in progress\n").unwrap(),
            "nested" => drop(repo.nested_worktree(&wt)),
            "locked" => drop(repo.git(&repo.base, &["worktree", "lock", wt.to_str().unwrap()])),
            _ => {
                // Dirty too: the mount is the first reason, and nothing is released for it.
                std::fs::write(wt.join("notes.txt"), "work in progress\n").unwrap();
                std::fs::create_dir(wt.join("build")).unwrap();
                match Mounted::tmpfs(&repo.tmp, &wt.join("build")) {
                    Some(m) => mounts.push(m),
                    None => {
                        states.pop();
                        break;
                    }
                }
            }
        }
        trees.push(wt);
    }
    // `remove` first and gc next: neither changes anything here; the runner releases.
    let removes: Vec<_> = states
        .iter()
        .map(|card| repo.kardwt(&repo.base, &["remove", card]))
        .collect();
    let gc = repo.kardwt(&repo.base, &["gc", "--apply", "--json"]);
    gc.expect_code(0);
    let v = gc.json();
    let (_, hook) = claude_commands();
    let mut pinned = String::new();
    for ((card, wt), remove) in states.iter().zip(&trees).zip(&removes) {
        let shown = wt.display().to_string();
        let mounted = *card == "mounted";
        remove.expect_code(if mounted { 3 } else { 1 });
        let said_by_remove = remove
            .stderr
            .lines()
            .next()
            .unwrap()
            .strip_prefix("error: ")
            .and_then(|l| l.strip_suffix("; nothing was released or removed"))
            .unwrap_or_else(|| panic!("{remove}"))
            .replacen(&shown, "it", 1);
        let kept = v["kept"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["card"] == *card)
            .unwrap_or_else(|| panic!("{card} not kept: {v}"));
        let reason = kept["reason"].as_str().unwrap();
        let said_by_gc = reason.split_once(", but ").map_or(reason, |(_, r)| r);
        let runner = run_sh(
            &repo,
            &repo.base,
            &hook,
            &remove_payload(&repo.base, wt),
            &[],
        );
        runner.expect_code(1);
        let line = kept_line(&runner, wt);
        let released = if mounted {
            "; nothing was released"
        } else {
            "; its processes, cleanup hook and ports were released"
        };
        let said_by_runner = line
            .strip_prefix(&format!("kept {shown}: "))
            .and_then(|l| l.split_once(released))
            .map(|(said, _)| said)
            .unwrap_or_else(|| panic!("{runner}"));
        let state = repo.record(wt)["state"].as_str().unwrap().to_owned();
        assert_eq!(state, if mounted { "ready" } else { "released" }, "{card}");
        assert_eq!(
            (said_by_gc, said_by_runner),
            (said_by_remove.as_str(), said_by_remove.as_str()),
            "{card}: {remove}\n{gc}\n{runner}"
        );
        assert!(repo.is_registered(wt), "{card}");
        pinned.push_str(&format!(
            "## {card}: {said_by_remove}\nremove: {}gc: {}\nrunner: {line}\n\n",
            remove.stderr.lines().next().unwrap().to_owned() + "\n",
            serde_json::to_string(kept).unwrap()
        ));
    }
    crate::support::pinned(&repo).bind(|| insta::assert_snapshot!("one_decision", pinned));
    drop(mounts);
}
