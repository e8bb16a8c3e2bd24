//! `git kardwt shell cards`: the card ids completion offers, from the records alone.
use crate::support::{TestRepo, BIN};

/// One id per line in natural order, from the base and from inside a tree; a worktree kardwt
/// did not make is not a card; the ids are read without starting any process.
#[test]
fn cards_lists_the_recorded_ids_in_natural_order_and_starts_nothing() {
    let repo = TestRepo::new();
    for card in ["10", "3", "b-2"] {
        repo.add_card(card);
    }
    repo.add_unhooked_worktree("plain", "plain");
    let listed = repo.kardwt_ok(&repo.base, &["shell", "cards"]);
    assert_eq!(listed, "3\n10\nb-2\n");
    let inside = repo.kardwt_ok(&repo.card_path("10"), &["shell", "cards"]);
    assert_eq!(inside, listed);
    let (out, counts) = repo.syscall_counts(
        BIN,
        &repo.base,
        &["shell", "cards"],
        &["clone", "clone3", "fork", "vfork", "execve"],
        false,
    );
    out.expect_code(0);
    assert_eq!(out.stdout, listed, "{out}");
    // Its own execve only: no child started.
    let started: u32 = ["clone", "clone3", "fork", "vfork"]
        .iter()
        .filter_map(|s| counts.get(*s))
        .sum();
    assert_eq!(started, 0, "{counts:?}");
    assert_eq!(counts.get("execve"), Some(&1), "{counts:?}");
}

/// A record whose card field is not a card id (one planted to run a command when a shell
/// completes it) is refused like any tampered record: `shell cards` leaves it out, `verify`
/// and `list` say why without printing its control characters, and completing `kardwt switch`
/// in bash, zsh and fish runs nothing.
#[test]
fn a_record_whose_card_is_not_an_id_is_refused_and_completion_runs_nothing() {
    use super::{Shell, SHELLS};
    let repo = TestRepo::new();
    repo.add_card("3");
    let planted = repo.add_card("7");
    let witness = repo.tmp.join("pwned");
    let card = format!(
        "$(touch {})`touch {}`;touch {}\u{1b}[2K",
        witness.display(),
        witness.display(),
        witness.display()
    );
    repo.edit_record(&planted, "card", &card);

    assert_eq!(repo.kardwt_ok(&repo.base, &["shell", "cards"]), "3\n");
    let out = repo.kardwt(&planted, &["verify"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains("not a valid card id") || out.stderr.contains("not a valid card id"),
        "{out}"
    );
    let out = repo.kardwt(&repo.base, &["list"]);
    assert!(
        !out.stdout.contains('\u{1b}') && !out.stderr.contains('\u{1b}'),
        "{out}"
    );
    assert!(
        !out.stdout.contains("$(touch"),
        "list shows the planted card as a card:\n{out}"
    );
    let out = repo.kardwt(&repo.base, &["remove", "--path", planted.to_str().unwrap()]);
    out.expect_code(3);
    assert!(planted.exists(), "{out}");

    for shell in SHELLS {
        if !shell.present() {
            continue;
        }
        let script = match shell {
            Shell::Bash => format!(
                "{}\nCOMP_WORDS=(kardwt switch ''); COMP_CWORD=2; _kardwt; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
                shell.load()
            ),
            Shell::Zsh => format!(
                "autoload -Uz compinit && compinit -u -D\n{}\n\
                 compadd() {{ local -a a; a=(\"$@\"); print -rl -- \"${{(@)a[${{a[(i)--]}}+1,-1]}}\"; }}\n\
                 ask() {{ local -a words; words=(\"$@\"); local CURRENT=$#; local PREFIX=${{@[-1]}}; _kardwt; }}\n\
                 ask kardwt switch ''\n",
                shell.load()
            ),
            Shell::Fish => format!("{}\ncomplete -C 'kardwt switch ' | string replace -r '\\t.*' ''\n", shell.load()),
        };
        let out = shell.run(&repo, &repo.base, &script);
        out.expect_code(0);
        assert_eq!(
            out.stdout.lines().collect::<Vec<_>>(),
            ["3"],
            "{shell:?}:\n{out}"
        );
        assert!(
            !witness.exists(),
            "{shell:?}: completion ran the planted card:\n{out}"
        );
    }
}

/// A claim whose card is not a card id is malformed: `list` shows its row without a card (a
/// script reading `--json` may hand cards to a shell), `doctor` says why, `gc --apply` leaves
/// it as it is.
#[test]
fn a_claim_whose_card_is_not_an_id_is_malformed_and_never_shown_as_a_card() {
    use crate::support::claims::claim_file;
    let repo = TestRepo::new();
    let tree = repo.add_card("c1");
    let template = std::fs::read_to_string(claim_file(&repo, "c1")).unwrap();
    let gone = repo.root().join("card-evil");
    let text = template
        .replace("\"c1\"", "\"$(touch pwned)\"")
        .replace(tree.to_str().unwrap(), gone.to_str().unwrap());
    std::fs::write(claim_file(&repo, "evil"), &text).unwrap();

    let rows = repo.list_json();
    let row = rows
        .iter()
        .find(|r| r["path"] == gone.to_str().unwrap())
        .unwrap_or_else(|| panic!("list does not show the claim: {rows:#?}"));
    assert_eq!(row["state"], "malformed", "{row}");
    assert!(row["card"].is_null(), "{row}");
    let doctor = repo.kardwt(&repo.base, &["doctor"]);
    assert!(doctor.stdout.contains("not a valid card id"), "{doctor}");
    repo.kardwt(&repo.base, &["gc", "--apply"]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(claim_file(&repo, "evil")).unwrap(),
        text
    );
    assert_eq!(repo.kardwt_ok(&repo.base, &["shell", "cards"]), "c1\n");
}
