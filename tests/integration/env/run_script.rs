//! `git kardwt env`: the tree's facts under the hooks' names, so that a run script gets the
//! tree's own port.
use crate::support::TestRepo;

/// `env` prints the tree's facts with the hooks' names, so `eval "$(git kardwt env)"`
/// gives a run script the tree's own port; dotenv and JSON say the same; a tree kardwt does not
/// manage prints nothing.
#[test]
fn env_gives_a_run_script_the_trees_own_port() {
    let repo = TestRepo::new();
    repo.write_rules(&format!(
        "{}  ports: {{count: 2, range: [42100, 42199]}}\n",
        repo.rules_with_prepare(false)
    ));
    let wt = repo.add_card("42");
    let ports: Vec<i64> = repo.record(&wt)["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_integer().unwrap())
        .collect();
    assert_eq!(ports.len(), 2);
    // From inside the tree, as a run script would.
    let script = "eval \"$(git kardwt env)\" && printf '%s|%s|%s|%s' \"$KARDWT_PORT\" \"$KARDWT_PORTS\" \"$KARDWT_CARD\" \"$KARDWT_BRANCH\"";
    let out = repo
        .spawn("sh", &wt, &["-c", script])
        .wait(crate::support::COMMAND_TIMEOUT);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        format!("{}|{} {}|42|card/42", ports[0], ports[0], ports[1]),
        "{out}"
    );
    let json = repo.kardwt(&repo.base, &["env", "42", "--format", "json"]);
    json.expect_code(0);
    let v = json.json();
    assert_eq!(v["KARDWT_PORT"], ports[0].to_string(), "{json}");
    assert_eq!(v["KARDWT_WORKTREE"], wt.to_str().unwrap(), "{json}");
    let dotenv = repo.kardwt(&repo.base, &["env", "42", "--format", "dotenv"]);
    dotenv.expect_code(0);
    assert!(
        dotenv
            .stdout
            .lines()
            .any(|l| l == format!("KARDWT_PORT={}", ports[0])),
        "{dotenv}"
    );
    // Refusals print nothing.
    let out = repo.kardwt(&repo.base, &["env", "99"]);
    out.expect_code(1);
    assert_eq!(out.stdout, "", "{out}");
    let out = repo.kardwt(&repo.base, &["env", "--path", repo.base.to_str().unwrap()]);
    out.expect_code(3);
    assert_eq!(out.stdout, "", "{out}");
}
