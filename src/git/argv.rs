//! The argv of one git call: the program's fixed options first, then every operand that comes
//! from outside the program after a single `--end-of-options`.
use std::ffi::OsString;

/// The argv of one git call: the subcommand and the program's own fixed
/// options first, then the operands that come from outside the program (paths, refs, remote
/// and branch names, from the rules file, records, git config or the command line) after a
/// single `--end-of-options`, so no value can ever be read as an option. Pathspecs go after
/// `--` instead, which is git's convention for them.
#[derive(Debug, Clone, Default)]
pub struct Argv {
    args: Vec<OsString>,
    ended: bool,
}

impl Argv {
    /// The subcommand and its fixed options, all written in the program itself.
    pub fn new<I, S>(fixed: I) -> Argv
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Argv {
            args: fixed.into_iter().map(Into::into).collect(),
            ended: false,
        }
    }

    /// One more fixed option, written in the program itself (before any outside operand).
    pub fn fixed(mut self, arg: impl Into<OsString>) -> Argv {
        debug_assert!(!self.ended, "a fixed option after an outside operand");
        self.args.push(arg.into());
        self
    }

    /// One operand from outside the program; the first one is preceded by `--end-of-options`.
    pub fn outside(mut self, arg: impl Into<OsString>) -> Argv {
        if !self.ended {
            self.args.push("--end-of-options".into());
            self.ended = true;
        }
        self.args.push(arg.into());
        self
    }

    /// Pathspecs, after `--` (git reads nothing after it as an option or a revision).
    pub fn paths<I, S>(mut self, paths: I) -> Argv
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.push("--".into());
        self.args.extend(paths.into_iter().map(Into::into));
        self.ended = true;
        self
    }
}

impl IntoIterator for Argv {
    type Item = OsString;
    type IntoIter = std::vec::IntoIter<OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.args.into_iter()
    }
}

impl<'a> IntoIterator for &'a Argv {
    type Item = &'a OsString;
    type IntoIter = std::slice::Iter<'a, OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.args.iter()
    }
}
