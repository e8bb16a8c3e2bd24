//! The guard's rule for kardwt itself: `trust` approves the committed helpers to run on this
//! machine, a review a person makes, so an agent's `git kardwt trust` is denied however it is
//! spelled (`git kardwt`, `git -C DIR kardwt`, an alias of git's expanding to `kardwt …`, the
//! `git-kardwt` program, the `kardwt` shell function), and so is `trust --signer KEY`, which
//! makes this machine use the shared prepare cache's entries that key signs; `trust --dry-run`,
//! which only shows, `--public-key` and `--help` are silence. Pure: no disk.
use super::lex::Word;
use super::rules::shell_quote;
use super::Denial;

/// kardwt's global options that take a value (clap reads them before or after the subcommand).
const VALUED: &[&str] = &["--root", "--rules"];

/// The words kardwt is run with (after `git-kardwt`, `kardwt` or `git … kardwt`), `shown`
/// being the words that ran it as typed (`git -C DIR kardwt`): a denial when they approve
/// helpers, `None` for anything else or anything not understood for certain.
pub(super) fn judge(shown: &[Word], args: &[Word]) -> Option<Denial> {
    if shown.iter().chain(args).any(|w| !w.is_plain()) {
        return None;
    }
    let (before, rest) = split_subcommand(args)?;
    let (first, after) = rest.split_first()?;
    if first.text != "trust" {
        return None;
    }
    // Options after the subcommand: a dry run approves nothing, help prints and exits, anything
    // else clap refuses (nothing runs).
    let mut globals = Vec::new();
    let mut signer = false;
    let mut i = 0;
    while let Some(w) = after.get(i) {
        let t = w.text.as_str();
        match t {
            "--dry-run" | "--public-key" | "-h" | "--help" | "-V" | "--version" => return None,
            "--signer" => {
                globals.extend(after.get(i..i + 2)?);
                signer = true;
                i += 2;
            }
            _ if t.starts_with("--signer=") => {
                globals.push(w);
                signer = true;
                i += 1;
            }
            _ if VALUED.contains(&t) => {
                globals.extend(after.get(i..i + 2)?);
                i += 2;
            }
            _ if VALUED.iter().any(|o| t.starts_with(&format!("{o}="))) => {
                globals.push(w);
                i += 1;
            }
            _ => return None,
        }
    }
    let words: Vec<String> = shown
        .iter()
        .chain(before)
        .chain([first])
        .chain(globals)
        .map(|w| shell_quote(&w.text))
        .chain(["--dry-run".to_owned()])
        .collect();
    let reason = if signer {
        "`git kardwt trust --signer` makes this machine use the prepare outputs that key \
         signs in the shared cache, a decision only a person may make: ask the user to check \
         whose key it is and run the command themselves"
    } else {
        "`git kardwt trust` approves the committed helpers to run on this machine, a \
         review only a person may make: ask the user to read the helpers and run \
         git kardwt trust themselves (the dry run below shows what they would approve)"
    };
    Some(Denial {
        reason: reason.into(),
        replacement: words.join(" "),
    })
}

/// The global options before the subcommand, and the subcommand with what follows; `None`
/// when clap would refuse them or print help instead.
fn split_subcommand(args: &[Word]) -> Option<(&[Word], &[Word])> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if VALUED.contains(&t) {
            i += 2;
        } else if VALUED.iter().any(|o| t.starts_with(&format!("{o}="))) {
            i += 1;
        } else if t.starts_with('-') {
            return None;
        } else {
            return Some((args.get(..i)?, &args[i..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split(' ')
            .filter(|w| !w.is_empty())
            .map(Word::literal)
            .collect()
    }

    #[test]
    fn only_a_trust_that_approves_is_denied() {
        let shown = words("git kardwt");
        let judged = |args: &str| judge(&shown, &words(args)).map(|d| d.replacement);
        assert_eq!(
            judged("trust").as_deref(),
            Some("git kardwt trust --dry-run")
        );
        assert_eq!(
            judged("--rules r.yml trust --root=/w").as_deref(),
            Some("git kardwt --rules r.yml trust --root=/w --dry-run")
        );
        // Trusting a signer of the shared cache is a person's decision too.
        assert_eq!(
            judged("trust --signer ed25519:ab").as_deref(),
            Some("git kardwt trust --signer ed25519:ab --dry-run")
        );
        assert_eq!(
            judged("trust --signer=ed25519:ab").as_deref(),
            Some("git kardwt trust --signer=ed25519:ab --dry-run")
        );
        for silent in [
            "trust --dry-run",
            "trust --signer ed25519:ab --dry-run",
            "trust --public-key",
            "trust --signer",
            "trust --help",
            "trust -h",
            "--help trust",
            "trust --dry",
            "trust x",
            "help trust",
            "list",
            "--root",
            "trust --rules",
            "",
        ] {
            assert_eq!(judged(silent), None, "{silent:?}");
        }
    }
}
