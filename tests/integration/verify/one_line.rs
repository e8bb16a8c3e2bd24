//! What a person reads from `verify` and `status`: one line when every check passed, what
//! failed when one did, and every check with `-v`, each named in words.
use crate::support::*;

fn lines(s: &str) -> Vec<&str> {
    s.lines().filter(|l| !l.trim().is_empty()).collect()
}

#[test]
fn verify_and_status_say_one_line_on_success_and_every_check_with_v() {
    let repo = TestRepo::new();
    let tree = repo.add_card("1");

    let out = repo.kardwt(&repo.base, &["verify", "1"]);
    out.expect_code(0);
    assert_eq!(lines(&out.stdout).len(), 1, "{out}");
    assert!(
        out.stdout.contains("is card 1's worktree, state ready"),
        "{out}"
    );

    let out = repo.kardwt(&repo.base, &["verify", "1", "-v"]);
    out.expect_code(0);
    let all = lines(&out.stdout);
    assert_eq!(all.len(), 10, "nine checks and the verdict:\n{out}");
    assert!(all.iter().take(9).all(|l| l.starts_with("ok   ")), "{out}");
    for words in [
        ".git file",
        "registered with git",
        "record's card",
        "card unique",
    ] {
        assert!(out.stdout.contains(words), "{words} is not named:\n{out}");
    }
    assert!(!out.stdout.contains("dot_git"), "an internal name:\n{out}");

    let out = repo.kardwt(&repo.base, &["status", "1"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("checks:          all 9 passed"),
        "{out}"
    );
    assert!(
        !out.stdout.contains("ok   "),
        "status listed every check:\n{out}"
    );
    let out = repo.kardwt(&repo.base, &["status", "1", "--verbose"]);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("  ok   "))
            .count(),
        9,
        "{out}"
    );

    // A failing check is shown without -v, and the summary names it.
    repo.edit_record(&tree, "card", "2");
    let out = repo.kardwt(&tree, &["verify"]);
    out.expect_code(3);
    let shown = lines(&out.stdout);
    assert_eq!(shown.len(), 2, "the failed check and the verdict:\n{out}");
    assert!(shown[0].starts_with("FAIL record agrees"), "{out}");
    let out = repo.kardwt(&tree, &["status"]);
    assert!(
        out.stdout.contains("failed (-v shows every check)"),
        "{out}"
    );
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("  FAIL"))
            .count(),
        1,
        "{out}"
    );
}
