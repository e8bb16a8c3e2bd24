//! git-kardwt started as a hook before clap reads anything: as the post-checkout shim's
//! interpreter (its first line `#!<this binary> hook-shim`, so the kernel starts kardwt with no
//! shell in between), doing what the shell shim does (the chained hook first, then every
//! checkout but `git worktree add`'s leaves at once), and the hooks' own command lines, which
//! are read without building the whole command line's parser.
use std::ffi::OsString;
use std::path::Path;

use crate::cli::{Cli, Command, GlobalArgs, HookCommand, PostCheckoutArgs};
use crate::install::INTERPRETER_ARG;

/// What `main` does with its arguments.
pub(crate) enum Entry {
    /// Exit with this code now (an ordinary checkout, or the chained hook failed).
    Exit(i32),
    /// Run this command line, already read.
    Run(Box<Cli>),
    /// Let clap read these arguments.
    Parse(Vec<OsString>),
}

/// Read `args` (the whole argv) as far as a hook needs, without clap.
pub(crate) fn entry(args: Vec<OsString>) -> Entry {
    match args.get(1).and_then(|a| a.to_str()) {
        Some(INTERPRETER_ARG) => interpreted(&args),
        Some("hook") if args.get(2).is_some_and(|a| a == "post-checkout") => {
            post_checkout(&args[3..]).map_or(Entry::Parse(args), Entry::Run)
        }
        _ => Entry::Parse(args),
    }
}

/// `git-kardwt hook-shim <hook file> <git's arguments…>`, as the kernel runs a direct shim.
fn interpreted(args: &[OsString]) -> Entry {
    let Some((script, given)) = args.get(2..).and_then(<[OsString]>::split_first) else {
        eprintln!(
            "error: `git-kardwt {INTERPRETER_ARG}` is what a hook file's first line runs, with \
             the hook file after it"
        );
        eprintln!("hint: run `git kardwt install-hooks` to write the hooks again");
        return Entry::Exit(2);
    };
    // `post-checkout`, or where a hook manager keeps it (pre-commit's `post-checkout.legacy`).
    let name = Path::new(script).file_name().unwrap_or_default();
    if !name.as_encoded_bytes().starts_with(b"post-checkout") {
        eprintln!(
            "error: {} names git-kardwt as its interpreter, which only the post-checkout shim \
             does",
            Path::new(script).display()
        );
        eprintln!("hint: run `git kardwt install-hooks` to write the hooks again");
        return Entry::Exit(2);
    }
    let mut chained = script.clone();
    chained.push(".kardwt-chained");
    if crate::sys::executable(Path::new(&chained)) {
        match crate::sys::run_inheriting(Path::new(&chained), given) {
            Ok(0) => {}
            Ok(code) => return Entry::Exit(code),
            Err(e) => {
                eprintln!(
                    "error: could not run the chained hook {}: {e}",
                    Path::new(&chained).display()
                );
                return Entry::Exit(126);
            }
        }
    }
    // As the shell shim: only an old id of zeros (`git worktree add`, a clone) goes on.
    if given
        .first()
        .is_some_and(|old| old.as_encoded_bytes().iter().any(|b| *b != b'0'))
    {
        return Entry::Exit(0);
    }
    let mut argv = vec![args[0].clone(), "hook".into(), "post-checkout".into()];
    argv.extend(given.iter().cloned());
    entry(argv)
}

/// `hook post-checkout <old> <new> <flag>`, read; `None` for anything else (clap says why).
fn post_checkout(given: &[OsString]) -> Option<Box<Cli>> {
    let [old, new, flag] = given else {
        return None;
    };
    let word = |w: &OsString| {
        w.to_str()
            .filter(|w| !w.starts_with('-'))
            .map(str::to_owned)
    };
    Some(Box::new(Cli {
        global: GlobalArgs::default(),
        command: Command::Hook(HookCommand::PostCheckout(PostCheckoutArgs {
            old: word(old)?,
            new: word(new)?,
            flag: word(flag)?,
        })),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_hooks_command_line_is_read_without_clap_and_anything_else_goes_to_clap() {
        let zeros = "0".repeat(40);
        let read = entry(args(&["k", "hook", "post-checkout", &zeros, "abc", "1"]));
        let Entry::Run(cli) = read else {
            panic!("not read")
        };
        let Command::Hook(HookCommand::PostCheckout(a)) = cli.command else {
            panic!("not post-checkout")
        };
        assert_eq!(
            (a.old.as_str(), a.new.as_str(), a.flag.as_str()),
            (zeros.as_str(), "abc", "1")
        );
        for other in [
            &["k", "hook", "post-checkout", "a", "b"][..],
            &["k", "hook", "post-checkout", "a", "b", "1", "extra"],
            &["k", "hook", "post-checkout", "--help", "b", "1"],
            &["k", "hook", "pre-push", "origin", "url"],
            &["k", "list"],
            &["k"],
        ] {
            assert!(matches!(entry(args(other)), Entry::Parse(_)), "{other:?}");
        }
    }

    #[test]
    fn the_interpreter_lets_only_a_worktree_adds_checkout_through() {
        let zeros = "0".repeat(40);
        let hook = "/nowhere/hooks/post-checkout";
        let ordinary = entry(args(&["k", INTERPRETER_ARG, hook, "abc", "def", "1"]));
        assert!(matches!(ordinary, Entry::Exit(0)));
        let add = entry(args(&["k", INTERPRETER_ARG, hook, &zeros, "def", "1"]));
        assert!(matches!(add, Entry::Run(_)));
        let legacy = "/nowhere/hooks/post-checkout.legacy";
        let kept = entry(args(&["k", INTERPRETER_ARG, legacy, &zeros, "def", "1"]));
        assert!(matches!(kept, Entry::Run(_)));
        let other = entry(args(&[
            "k",
            INTERPRETER_ARG,
            "/nowhere/hooks/pre-push",
            "o",
            "u",
        ]));
        assert!(matches!(other, Entry::Exit(2)));
        assert!(matches!(
            entry(args(&["k", INTERPRETER_ARG])),
            Entry::Exit(2)
        ));
    }
}
