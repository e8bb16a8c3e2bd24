//! Completion of `kardwt`: subcommands first, then after `switch` the repository's card ids
//! (through `git kardwt shell cards`) and add's options, as each shell's own completion asks.
use super::Shell;
use crate::support::TestRepo;

/// A repository with cards 3, 10 and 12.
fn repo_with_cards() -> TestRepo {
    let repo = TestRepo::new();
    for card in ["3", "10", "12"] {
        repo.add_card(card);
    }
    repo
}

/// The candidates of each request, separated by `--` lines in `out`.
fn answers(text: &str) -> Vec<Vec<String>> {
    text.split("--\n")
        .map(|block| block.lines().map(str::to_owned).collect())
        .collect()
}

/// bash: `_kardwt` called as bash's programmable completion calls it, with `COMP_WORDS` and
/// `COMP_CWORD` set; it is registered for `kardwt`, and what is not `switch` goes to the
/// completion of `git kardwt completions bash` when that is loaded.
#[test]
fn bash_completes_subcommands_card_ids_and_options() {
    if !Shell::Bash.present() {
        return;
    }
    let repo = repo_with_cards();
    let script = format!(
        "{load}\n\
         complete -p kardwt\n\
         ask() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _kardwt; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\" --; }}\n\
         ask kardwt sw\n\
         ask kardwt switch ''\n\
         ask kardwt switch 1\n\
         ask kardwt switch --ti\n\
         ask kardwt switch --board ''\n\
         source <(git kardwt completions bash)\n\
         ask kardwt list --j\n",
        load = Shell::Bash.load()
    );
    let out = Shell::Bash.run(&repo, &repo.card_path("3"), &script);
    out.expect_code(0);
    let (registered, rest) = out.stdout.split_once('\n').unwrap();
    assert_eq!(registered, "complete -F _kardwt kardwt", "{out}");
    let got = answers(rest);
    assert_eq!(
        got,
        [
            vec!["switch"],
            vec!["3", "10", "12"],
            vec!["10", "12"],
            vec!["--timeout"],
            vec![],
            vec!["--json"],
            vec![],
        ],
        "{out}"
    );
}

/// zsh: with compinit run first, the script registers `_kardwt` for `kardwt`; the function,
/// called with the words and position zsh's completion gives it, offers what it hands to
/// `compadd` (recorded by a `compadd` of the test's that then calls the real one).
#[test]
fn zsh_registers_its_completion_and_offers_card_ids() {
    if !Shell::Zsh.present() {
        return;
    }
    let repo = repo_with_cards();
    let script = format!(
        "autoload -Uz compinit && compinit -u -D\n\
         {load}\n\
         print -r -- \"registered=$_comps[kardwt]\"\n\
         compadd() {{ local -a a; a=(\"$@\"); print -rl -- \"${{(@)a[${{a[(i)--]}}+1,-1]}}\"; }}\n\
         ask() {{ local -a words; words=(\"$@\"); local CURRENT=$#; local PREFIX=${{@[-1]}}; \
         _kardwt; print -- --; }}\n\
         ask kardwt ''\n\
         ask kardwt switch ''\n\
         ask kardwt switch --\n\
         ask kardwt switch --board ''\n",
        load = Shell::Zsh.load()
    );
    let out = Shell::Zsh.run(&repo, &repo.card_path("3"), &script);
    out.expect_code(0);
    let (registered, rest) = out.stdout.split_once('\n').unwrap();
    assert_eq!(registered, "registered=_kardwt", "{out}");
    let got = answers(rest);
    assert_eq!(got[0].first().map(String::as_str), Some("switch"), "{out}");
    assert!(got[0].iter().any(|w| w == "list"), "{out}");
    assert_eq!(got[1], ["3", "10", "12"], "{out}");
    assert!(got[2].iter().any(|w| w == "--timeout"), "{out}");
    assert!(got[2].iter().all(|w| w.starts_with("--")), "{out}");
    assert!(got[3].is_empty(), "{out}");
}

/// zsh, through its line editor: an interactive zsh on a pseudo-terminal (zsh's own zpty) that
/// ran compinit and loaded the script gets a Tab after each partial line, and writes the line
/// the completion left to a file.
#[test]
fn zsh_completes_on_tab_in_its_line_editor() {
    if !Shell::Zsh.present() {
        return;
    }
    let repo = TestRepo::new();
    for card in ["3", "10", "feature-x"] {
        repo.add_card(card);
    }
    let mut script = String::from(
        "zmodload zsh/zpty\n\
         zpty z 'TERM=dumb zsh -f -i'\n\
         zpty -w z 'PS1=\"> \"; autoload -Uz compinit; compinit -u -D; \
         eval \"$(git kardwt shell init zsh)\"'\n",
    );
    for line in [
        "kardwt sw",
        "kardwt switch fe",
        "kardwt switch 1",
        "kardwt switch --ti",
    ] {
        // Tab, then to the start of the line to make it a `print` into the file, and run it.
        script.push_str(&format!(
            "zpty -w -n z $'{line}\\t'\n\
             zpty -w -n z $'\\x01print -r -- \\x05>> \"$HOME/completed\"\\n'\n"
        ));
    }
    // Every line has run once the shell answers this.
    script.push_str("zpty -w z 'print D$((6*7))ONE'\nzpty -r z line '*D42ONE*'\nzpty -d z\n");
    let out = Shell::Zsh.run(&repo, &repo.card_path("3"), &script);
    out.expect_code(0);
    let completed = std::fs::read_to_string(repo.home.join("completed")).unwrap_or_default();
    assert_eq!(
        completed,
        "kardwt switch\nkardwt switch feature-x\nkardwt switch 10\nkardwt switch --timeout\n",
        "{out}"
    );
}

/// fish: its own completion engine (`complete -C`) answers for a command line.
#[test]
fn fish_completes_subcommands_card_ids_and_options() {
    if !Shell::Fish.present() {
        return;
    }
    let repo = repo_with_cards();
    let script = format!(
        "{load}\n\
         for line in 'kardwt sw' 'kardwt switch ' 'kardwt switch 1' 'kardwt switch --ti'\n\
         complete -C $line | string replace -r '\\t.*' ''\n\
         printf '%s\\n' --\n\
         end\n",
        load = Shell::Fish.load()
    );
    let out = Shell::Fish.run(&repo, &repo.card_path("3"), &script);
    out.expect_code(0);
    let got = answers(&out.stdout);
    assert_eq!(
        got[..4],
        [
            vec!["switch".to_owned()],
            ["3", "10", "12"].map(String::from).to_vec(),
            ["10", "12"].map(String::from).to_vec(),
            vec!["--timeout".to_owned()],
        ],
        "{out}"
    );
}

/// Whatever `git kardwt shell cards` prints (an older kardwt, a damaged store), each shell's
/// completion offers it as words and never expands it: bash's `compgen -W` would run a `$(…)`
/// in it.
#[test]
fn completion_never_expands_what_it_reads() {
    let repo = TestRepo::new();
    let fake = repo.tmp.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    // Relative to where completion runs (the base): the temporary directory's name has spaces.
    let witness = repo.base.join("pwned");
    let git = fake.join("git");
    std::fs::write(
        &git,
        "#!/bin/sh\nprintf '%s\\n' 'a$(touch pwned)' 'ab`touch pwned`' '$HOME' 'b*' 'c(touch pwned)'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("PATH={}:\"$PATH\"", crate::support::sh_quote(&fake));
    let all = [
        "a$(touch pwned)",
        "ab`touch pwned`",
        "$HOME",
        "b*",
        "c(touch pwned)",
    ];
    for shell in super::SHELLS {
        if !shell.present() {
            continue;
        }
        let script = match shell {
            Shell::Bash => format!(
                "{load}\n{path}\n\
                 COMP_WORDS=(kardwt switch a); COMP_CWORD=2; _kardwt; printf '%s\\n' \"${{COMPREPLY[@]}}\" --\n\
                 COMP_WORDS=(kardwt switch ''); COMP_CWORD=2; _kardwt; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
                load = shell.load()
            ),
            Shell::Zsh => format!(
                "autoload -Uz compinit && compinit -u -D\n{load}\n{path}\n\
                 compadd() {{ local -a a; a=(\"$@\"); print -rl -- \"${{(@)a[${{a[(i)--]}}+1,-1]}}\"; }}\n\
                 ask() {{ local -a words; words=(\"$@\"); local CURRENT=$#; local PREFIX=${{@[-1]}}; _kardwt; }}\n\
                 ask kardwt switch a; print -- --; ask kardwt switch ''\n",
                load = shell.load()
            ),
            Shell::Fish => format!(
                "{load}\nset -x PATH {fake} $PATH\n\
                 complete -C 'kardwt switch a' | string replace -r '\\t.*' ''\nprintf '%s\\n' --\n\
                 complete -C 'kardwt switch ' | string replace -r '\\t.*' ''\n",
                load = shell.load(),
                fake = crate::support::sh_quote(&fake)
            ),
        };
        let out = shell.run(&repo, &repo.base, &script);
        out.expect_code(0);
        let mut got = answers(&out.stdout);
        // zsh hands compadd every id and lets its matcher filter them; fish sorts them.
        for answer in &mut got {
            answer.sort();
        }
        let mut every: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        every.sort();
        let with_a: Vec<String> = every
            .iter()
            .filter(|w| w.starts_with('a'))
            .cloned()
            .collect();
        let first = if shell == Shell::Zsh { &every } else { &with_a };
        assert_eq!(got, [first.clone(), every.clone()], "{shell:?}:\n{out}");
        assert!(
            !witness.exists(),
            "{shell:?}: completion ran what it read:\n{out}"
        );
    }
}
