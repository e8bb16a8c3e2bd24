//! Shell completion: `git kardwt completions bash` completes both the `git-kardwt` executable
//! and `git kardwt …` through git's own bash completion (which calls `_git_kardwt`).
use std::process::Command;

use crate::support::BIN;

/// git's bash completion as Debian's git package installs it.
const GIT_COMPLETION: &str = "/usr/share/bash-completion/completions/git";

/// Complete `line` in a bash that loaded git's completion and ours; the candidates.
fn complete(line: &str) -> Vec<String> {
    let script = format!(
        r#"
source {GIT_COMPLETION}
source <("{BIN}" completions bash)
line='{line}'
read -r -a COMP_WORDS <<<"$line"
[ "${{line: -1}}" = " " ] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="$line"; COMP_POINT=${{#line}}
COMPREPLY=()
if [ "${{COMP_WORDS[0]}}" = git ]; then
    __git_wrap__git_main git "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
else
    _git__kardwt git-kardwt "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
fi
printf '%s\n' "${{COMPREPLY[@]}}"
"#
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_git_kardwt_subcommands_and_their_options() {
    assert!(
        std::path::Path::new(GIT_COMPLETION).is_file(),
        "git's bash completion is missing at {GIT_COMPLETION}"
    );
    assert_eq!(complete("git kardwt ad"), ["add", "adopt"]);
    let remove = complete("git kardwt remove --");
    for opt in ["--path", "--force", "--delete-branch", "--grace", "--json"] {
        assert!(
            remove.contains(&opt.to_owned()),
            "{opt} missing: {remove:?}"
        );
    }
    assert_eq!(complete("git -C somewhere kardwt gc --ap"), ["--apply"]);
    assert_eq!(complete("git-kardwt gc --inc"), ["--include-failed"]);
    assert_eq!(complete("git-kardwt hook pre"), ["pre-push"]);
}

/// Bash completes card ids where a command takes one, from `git kardwt list`, for
/// `git kardwt …` and `git-kardwt …` alike; options and an option's value are left alone.
#[test]
fn bash_completes_card_ids_from_the_repository() {
    let repo = crate::support::TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    repo.add_card("12");
    repo.add_card("15");
    repo.add_card("27");
    let complete_in = |line: &str| -> Vec<String> {
        let script = format!(
            r#"
source {GIT_COMPLETION}
source <(git-kardwt completions bash)
line='{line}'
read -r -a COMP_WORDS <<<"$line"
[ "${{line: -1}}" = " " ] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="$line"; COMP_POINT=${{#line}}
COMPREPLY=()
if [ "${{COMP_WORDS[0]}}" = git ]; then
    __git_wrap__git_main git "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
else
    _git__kardwt git-kardwt "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
fi
printf '%s\n' "${{COMPREPLY[@]}}"
"#
        );
        let out = repo
            .command("bash", &repo.base)
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut words: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        words.sort();
        words
    };
    assert_eq!(complete_in("git kardwt status 1"), ["12", "15"]);
    assert_eq!(
        complete_in("git-kardwt remove --force "),
        ["12", "15", "27"]
    );
    assert_eq!(complete_in("git kardwt verify 2"), ["27"]);
    assert!(complete_in("git kardwt remove --path ")
        .iter()
        .all(|w| w != "12"));
    assert_eq!(complete_in("git kardwt gc --ap"), ["--apply"]);
    assert!(complete_in("git kardwt status --js").contains(&"--json".to_owned()));
}

/// Whatever the card ids read back hold, bash's completion of `git-kardwt <command> <card>`
/// offers them as words and never expands them (`compgen -W` would run a `$(…)` in them).
#[test]
fn bash_completion_of_card_ids_never_expands_what_it_reads() {
    let repo = crate::support::TestRepo::new();
    let fake = repo.tmp.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let git = fake.join("git");
    // Both a JSON row (what `list --json` gives) and a plain line (what `shell cards` gives).
    std::fs::write(
        &git,
        "#!/bin/sh\nprintf '%s\\n' '[{\"card\":\"a$(touch pwned)\"}]' 'a$(touch pwned)'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = format!(
        "source <(git-kardwt completions bash)\nPATH={}:\"$PATH\"\n\
         COMP_WORDS=(git-kardwt status a); COMP_CWORD=2; COMPREPLY=()\n\
         _git__kardwt git-kardwt a status\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        crate::support::sh_quote(&fake)
    );
    let out = repo
        .command("bash", &repo.base)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !repo.base.join("pwned").exists(),
        "completion ran what it read:\n{stdout}"
    );
    assert_eq!(stdout, "a$(touch pwned)\n");
}
