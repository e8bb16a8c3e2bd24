//! Where `cd`, `pushd` and `popd` leave the shell: the directory
//! each moves to, and the stack of directories `pushd` saved within the line, so `popd`
//! returns to the last one. Pure: no disk. Anything not known statically is `None`: the
//! stack the shell had before the line, `pushd` without a directory or with `+N`/`-N`,
//! `popd` with arguments, and what was saved before `dirs` with arguments, a `cd` (zsh's
//! `AUTO_PUSHD` makes `cd` push) or a `;` (the `pushd` before it may have failed).
use std::path::{Path, PathBuf};

use super::lex::Word;

/// The directories `pushd` saved during the line, the last saved last. What lies beneath them
/// (the stack the shell had before the line, or entries it may have gained in ways not
/// followed) is never known, so `popd` past them is not followed.
#[derive(Debug, Default)]
pub(super) struct Stack(Vec<PathBuf>);

impl Stack {
    /// What was saved is no longer known for certain: forget it.
    pub(super) fn forget(&mut self) {
        self.0.clear();
    }

    /// Where `name ARGS` (`cd`, `pushd`, `popd` or `dirs`, as typed) leaves a shell standing in
    /// `dir`: `None` when it does not move (`dirs`), `Some(None)` when where is not known (in a
    /// pipeline it runs in a subshell, which moves nothing after it, but that is not followed).
    pub(super) fn step(
        &mut self,
        name: &str,
        args: &[Word],
        dir: Option<&Path>,
        in_pipeline: bool,
    ) -> Option<Option<PathBuf>> {
        if in_pipeline {
            self.forget();
            return (name != "dirs").then_some(None);
        }
        match name {
            "dirs" => {
                // `dirs` alone only prints; `-c` clears, `+N` and `-N` print one entry.
                if !args.is_empty() {
                    self.forget();
                }
                None
            }
            "cd" => {
                self.forget();
                Some(dir.and_then(|d| cd_target(d, args)))
            }
            // `-n` only adds to the stack (bash), or is refused (zsh): the shell stays.
            "pushd" if args.first().is_some_and(|w| w.is_plain() && w.text == "-n") => {
                self.forget();
                None
            }
            "pushd" => {
                let to = dir.and_then(|d| pushd_target(d, args));
                match (&to, dir) {
                    (Some(_), Some(d)) => self.0.push(d.to_path_buf()),
                    _ => self.forget(),
                }
                Some(to)
            }
            "popd" => {
                if !args.is_empty() {
                    self.forget();
                }
                Some(self.0.pop())
            }
            // `/usr/bin/cd` and the like: not the shell's own.
            _ => {
                self.forget();
                Some(None)
            }
        }
    }
}

/// Where `cd ARGS` goes from `dir`, or `None` when that is not known statically.
fn cd_target(dir: &Path, args: &[Word]) -> Option<PathBuf> {
    let mut operands = args
        .iter()
        .skip_while(|w| matches!(w.text.as_str(), "-P" | "-L" | "-e" | "-@" | "-LP" | "-PL"));
    let mut first = operands.next()?;
    if first.text == "--" {
        first = operands.next()?;
    }
    if operands.next().is_some() || !first.is_plain() || first.text.is_empty() || first.text == "-"
    {
        return None;
    }
    Some(dir.join(&first.text))
}

/// Where `pushd ARGS` goes from `dir`: `pushd [--] DIR` only. Without a directory it swaps
/// the top two entries, `+N` and `-N` rotate the stack: not followed.
fn pushd_target(dir: &Path, args: &[Word]) -> Option<PathBuf> {
    let args = match args.split_first() {
        Some((dashes, rest)) if dashes.is_plain() && dashes.text == "--" => rest,
        _ => args,
    };
    match args {
        [to] if to.is_plain() && !to.text.is_empty() && !to.text.starts_with(['-', '+']) => {
            Some(dir.join(&to.text))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn popd_returns_only_to_what_pushd_saved_in_the_line() {
        let mut stack = Stack::default();
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        assert_eq!(stack.step("popd", &[], Some(a), false), Some(None));
        let mut stack = Stack::default();
        assert_eq!(
            stack.step("pushd", &words("/b"), Some(a), false),
            Some(Some(b.into()))
        );
        assert_eq!(
            stack.step("pushd", &words("-- c"), Some(b), false),
            Some(Some("/b/c".into()))
        );
        assert_eq!(stack.step("dirs", &[], None, false), None);
        assert_eq!(stack.step("pushd", &words("-n /x"), Some(a), false), None);
        assert_eq!(stack.step("popd", &[], None, false), Some(None));
        let mut stack = Stack::default();
        stack.step("pushd", &words("/b"), Some(a), false);
        stack.step("pushd", &words("-- c"), Some(b), false);
        assert_eq!(stack.step("popd", &[], None, false), Some(Some(b.into())));
        assert_eq!(
            stack.step("popd", &[], Some(b), false),
            Some(Some(a.into()))
        );
        assert_eq!(stack.step("popd", &[], Some(a), false), Some(None));
        for (name, args) in [
            ("pushd", ""),
            ("pushd", "+1"),
            ("pushd", "-1"),
            ("pushd", "/b /c"),
            ("pushd", "-"),
        ] {
            let mut stack = Stack::default();
            assert_eq!(
                stack.step(name, &words(args), Some(a), false),
                Some(None),
                "{name} {args}"
            );
            assert_eq!(stack.step("popd", &[], None, false), Some(None));
        }
        // What forgets the stack: `cd`, `dirs -c`, popd's arguments, a pipeline, a `;`.
        for forget in [
            |s: &mut Stack| drop(s.step("cd", &words("/c"), Some(Path::new("/")), false)),
            |s: &mut Stack| drop(s.step("dirs", &words("-c"), None, false)),
            |s: &mut Stack| drop(s.step("popd", &words("+1"), None, false)),
            |s: &mut Stack| drop(s.step("pushd", &words("/c"), Some(Path::new("/")), true)),
            |s: &mut Stack| s.forget(),
        ] {
            let mut stack = Stack::default();
            stack.step("pushd", &words("/b"), Some(a), false);
            stack.step("pushd", &words("/c"), Some(b), false);
            forget(&mut stack);
            assert_eq!(stack.step("popd", &[], None, false), Some(None));
        }
    }
}
