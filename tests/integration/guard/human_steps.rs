//! The steps only a person may take stay a person's: an agent's `git kardwt trust`, reached
//! through any spelling, is denied through the real hook payload with a reason that sends it
//! to the user, and what it may run instead (the dry run) approves nothing.
use crate::support::guarded::*;
use crate::support::{pinned, TestRepo};

#[test]
fn an_agents_trust_is_denied_and_sent_to_the_user() {
    let repo = managed_repo();
    // git reads the alias from the repository's configuration, as an agent could set it.
    repo.git(&repo.base, &["config", "alias.approve", "kardwt trust"]);
    // Each denied, with the same reason: only a person may trust, ask the user, the dry run.
    let mut answers = serde_json::Map::new();
    for command in [
        "git kardwt trust",
        "git -C .. -C base kardwt trust",
        "git approve",
        "git-kardwt trust",
        "kardwt trust",
    ] {
        let out = guard(
            &repo,
            &repo.tmp,
            &["--format", "claude"],
            &payload("Bash", command, &repo.base),
        );
        out.expect_code(0);
        answers.insert(command.into(), out.json());
    }
    pinned(&repo).bind(|| insta::assert_json_snapshot!("guard_denies_an_agents_trust", answers));
    // Trusting a signer of the shared prepare cache is a person's decision too.
    let out = guard(
        &repo,
        &repo.tmp,
        &["--format", "claude"],
        &payload("Bash", "git kardwt trust --signer ed25519:3b3b", &repo.base),
    );
    let json = out.json();
    let answer = &json["hookSpecificOutput"];
    assert_eq!(answer["permissionDecision"], "deny", "{out}");
    let reason = answer["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("trust --signer` makes this machine use")
            && reason.contains("trust --signer ed25519:3b3b --dry-run"),
        "{reason}"
    );
    for allowed in [
        "git kardwt trust --dry-run",
        "git kardwt trust --help",
        "git kardwt trust --public-key",
    ] {
        let out = guard(
            &repo,
            &repo.tmp,
            &["--format", "claude"],
            &payload("Bash", allowed, &repo.base),
        );
        out.expect_code(0);
        assert_eq!(out.stdout, "", "{allowed}: {out}");
    }
}

/// The replacement the guard gives is safe to run: it shows and copies nothing.
#[test]
fn the_replacement_of_a_denied_trust_copies_nothing() {
    let repo = TestRepo::new();
    let out = repo.kardwt(
        &repo.base,
        &["guard", "--format", "text", "--command", "git kardwt trust"],
    );
    out.expect_code(2);
    let replacement = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("hint: run instead: "))
        .unwrap_or_else(|| panic!("no replacement:\n{out}"));
    assert!(replacement.ends_with("trust --dry-run"), "{out}");
}
