//! `git kardwt runner install opencode`: OpenCode's plugin (`.opencode/plugin/kardwt.js`, the
//! recipe shipped as `githooks/runners/opencode/kardwt.js`) written once, naming no path of one
//! machine, never over a file that is not kardwt's. `make test-runners` has the real OpenCode
//! load it, deny, and make and remove its workspaces through it.
use std::path::Path;

use crate::support::recipes::runners_dir;
use crate::support::{pinned, pinned_case, TestRepo, BIN};

#[test]
fn opencode_install_writes_the_shipped_plugin_once_and_never_over_another_file() {
    let repo = TestRepo::new();
    let plugin = repo.base.join(".opencode/plugin/kardwt.js");
    let shipped = std::fs::read_to_string(runners_dir().join("opencode/kardwt.js")).unwrap();
    let printed = repo.kardwt_ok(&repo.base, &["runner", "install", "opencode", "--print"]);
    assert!(printed.contains("tool.execute.before"), "{printed}");
    assert!(!plugin.exists());

    let out = repo.kardwt(&repo.base, &["runner", "install", "opencode"]);
    out.expect_code(0);
    let mut shown = pinned_case("runner install opencode", &out);
    let text = std::fs::read_to_string(&plugin).unwrap();
    assert_eq!(text, shipped);
    let exe = Path::new(BIN).canonicalize().unwrap();
    assert!(!text.contains(&*exe.to_string_lossy()), "{text}");
    // It runs `git kardwt guard` before OpenCode's bash tool, and denies when that cannot run;
    // it makes and drops OpenCode's "worktree" workspaces through kardwt, releasing first.
    for needed in [
        "\"tool.execute.before\"",
        "input.tool !== \"bash\"",
        "[\"kardwt\", \"guard\", \"--format\", \"text\"",
        "throw new Error(",
        "experimental_workspace.register(\"worktree\"",
        "[\"add\", info.name]",
        "[\"remove\", \"--path\", tree, \"--delete-branch\"]",
        "[\"release\", \"--path\", tree]",
    ] {
        assert!(text.contains(needed), "the plugin lacks {needed}");
    }

    let again = repo.kardwt(&repo.base, &["runner", "install", "opencode"]);
    again.expect_code(0);
    shown.push_str(&pinned_case("runner install opencode, again", &again));

    // Someone else's plugin of that name: refused, kept, nothing written.
    let theirs = "export const Mine = async () => ({});\n";
    std::fs::write(&plugin, theirs).unwrap();
    let out = repo.kardwt(&repo.base, &["runner", "install", "opencode"]);
    out.expect_code(3);
    shown.push_str(&pinned_case(
        "runner install opencode, over another plugin",
        &out,
    ));
    pinned(&repo).bind(|| insta::assert_snapshot!("opencode_install", shown));
    assert_eq!(std::fs::read_to_string(&plugin).unwrap(), theirs);
}
