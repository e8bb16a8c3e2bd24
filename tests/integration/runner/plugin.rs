//! The Claude Code plugin shipped under `githooks/runners/claude-plugin/` (a local marketplace
//! holding the plugin `kardwt`): its hooks are the Claude Code recipe's, the marketplace names
//! the plugin's directory, and its skill tells the agent which commands make, find and remove a
//! card's tree and which never to run. `make test-runners` has the real client install it.
use serde_json::Value;

use crate::support::recipes::{read_json, runners_dir};

#[test]
fn the_claude_plugin_ships_the_recipes_hooks_and_a_skill_for_cards() {
    let market = read_json("claude-plugin/.claude-plugin/marketplace.json");
    let plugins = market["plugins"].as_array().expect("plugins");
    assert_eq!(plugins.len(), 1, "{market}");
    assert_eq!(plugins[0]["name"], "kardwt");
    let source = plugins[0]["source"].as_str().unwrap();
    let dir = runners_dir().join("claude-plugin").join(source);
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "kardwt");
    assert_eq!(manifest["version"], plugins[0]["version"]);

    // The same hooks as the recipe, so both ways of installing behave alike.
    assert_eq!(
        read_json(&format!("claude-plugin/{source}/hooks/hooks.json")),
        read_json("claude/hooks.json")
    );

    let skill = std::fs::read_to_string(dir.join("skills/kardwt-cards/SKILL.md")).unwrap();
    let front = skill
        .strip_prefix("---\n")
        .and_then(|s| s.split_once("\n---\n"))
        .map(|(f, _)| f)
        .expect("SKILL.md starts with front matter");
    assert!(front.contains("name: kardwt-cards"), "{front}");
    assert!(
        front.lines().any(|l| l.starts_with("description: ")),
        "{front}"
    );
    for told in [
        "git kardwt add <card>",
        "git kardwt select <card> --existing-or-base",
        "git kardwt remove <card>",
        "git kardwt remove --path <tree>",
    ] {
        assert!(skill.contains(told), "SKILL.md does not show `{told}`");
    }
    let never = skill.split_once("## Never").expect("a Never section").1;
    for forbidden in ["`rm -rf`", "`git worktree remove`"] {
        assert!(never.contains(forbidden), "Never does not name {forbidden}");
    }
}
