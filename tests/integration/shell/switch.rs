//! `kardwt switch <card>`: the shell goes to the tree `add` creates or reuses, and stays where
//! it was when add fails, with add's messages and exit code.
use super::{Shell, SHELLS};
use crate::support::TestRepo;

/// In each shell: a switch to a new card creates its tree and goes there, a switch to a card
/// that has one reuses it (same path, nothing new registered), and a switch add refuses leaves
/// the directory, the worktrees and add's exit code and messages as they were.
#[test]
fn switch_goes_to_the_cards_tree_and_stays_put_when_add_fails() {
    for shell in SHELLS {
        if shell.present() {
            switch_in(shell);
        }
    }
}

fn switch_in(shell: Shell) {
    let repo = TestRepo::new();
    let existing = repo.add_card("42");
    let refused = repo.kardwt(&repo.base, &["add", "../x"]);
    assert_ne!(refused.code, 0, "{refused}");
    let before = repo.worktrees();
    let st = shell.status();
    let script = format!(
        "{load}\n\
         kardwt switch 7; echo \"code={st}\"; pwd\n\
         kardwt switch 42; echo \"code={st}\"; pwd\n\
         kardwt switch ../x; echo \"code={st}\"; pwd\n\
         kardwt switch 42 --quiet; echo \"code={st}\"; pwd\n",
        load = shell.load()
    );
    let out = shell.run(&repo, &repo.base, &script);
    out.expect_code(0);
    let created = repo.card_path("7");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let expected = [
        "code=0".to_owned(),
        created.display().to_string(),
        "code=0".to_owned(),
        existing.display().to_string(),
        format!("code={}", refused.code),
        existing.display().to_string(),
        "code=0".to_owned(),
        existing.display().to_string(),
    ];
    assert_eq!(lines, expected, "{}: {out}", shell.name());
    assert!(
        out.stderr.contains(refused.stderr.trim_end()),
        "{}: add's messages are kept:\n{refused}\n{out}",
        shell.name()
    );
    // The failed switch registered nothing: only the tree of card 7 is new.
    let after = repo.worktrees();
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert!(after
        .iter()
        .any(|(p, b, _)| p == &created && b == "refs/heads/card/7"));
    assert!(!repo.tmp.join("x").exists() && !repo.root().join("x").exists());
}

/// Everything but `switch` is `git kardwt` itself: its output, its exit code, and no change of
/// directory; `switch --help` shows add's help and stays.
#[test]
fn other_commands_pass_through_to_git_kardwt() {
    for shell in SHELLS {
        if !shell.present() {
            continue;
        }
        let repo = TestRepo::new();
        let wt = repo.add_card("42");
        let st = shell.status();
        let script = format!(
            "{load}\n\
             kardwt status 42; echo \"code={st}\"\n\
             kardwt verify 99; echo \"code={st}\"\n\
             kardwt switch --help; echo \"code={st}\"; pwd\n",
            load = shell.load()
        );
        let out = shell.run(&repo, &repo.base, &script);
        out.expect_code(0);
        // status, not list: list's ages move on between two runs.
        let list = repo.kardwt_ok(&repo.base, &["status", "42"]);
        assert!(out.stdout.starts_with(&list), "{}: {out}", shell.name());
        assert!(list.contains(wt.to_str().unwrap()), "{list}");
        let absent = repo.kardwt(&repo.base, &["verify", "99"]);
        assert_ne!(absent.code, 0, "{absent}");
        let rest = &out.stdout[list.len()..];
        let verified = format!("code=0\n{}code={}\n", absent.stdout, absent.code);
        assert!(rest.starts_with(&verified), "{}: {out}", shell.name());
        let help = repo.kardwt_ok(&repo.base, &["add", "--help"]);
        let help_at = out.stdout.find(help.trim_end()).unwrap_or_else(|| {
            panic!("{}: add's help is shown:\n{out}", shell.name());
        });
        let tail: Vec<&str> = out.stdout[help_at + help.trim_end().len()..]
            .lines()
            .filter(|l| !l.is_empty())
            .collect();
        let base = repo.base.display().to_string();
        assert_eq!(tail, ["code=0", base.as_str()], "{}: {out}", shell.name());
    }
}
