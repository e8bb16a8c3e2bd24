//! Messages on stderr that cannot panic: `eprintln!` and `eprint!` here shadow the
//! standard library's, which panic when the write fails (stderr closed, a full disk behind
//! `2>file`, a broken pipe). A lost message changes nothing about what kardwt did, so the write's
//! error is dropped and the exit code stays the action's own. Declared first in `lib.rs` with
//! `#[macro_use]`, so every module below it gets these. `println!` and `print!` do not compile:
//! results go to the command's `out` writer, a [`Results`], whose failures are errors.
use std::io::{self, Write};

/// Like `std::eprintln!`, but a failed write is ignored instead of panicking.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// Like `std::eprint!`, but a failed write is ignored instead of panicking.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// Results go to the command's `out` writer (see `lib.rs`), never straight to stdout.
#[allow(unused_macros)]
macro_rules! println {
    ($($arg:tt)*) => {
        compile_error!(
            "write results to the command's `out` writer: println! panics when stdout fails"
        )
    };
}

/// Results go to the command's `out` writer (see `lib.rs`), never straight to stdout.
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        compile_error!(
            "write results to the command's `out` writer: print! panics when stdout fails"
        )
    };
}

/// The command's results on their way to stdout: the first failed write is kept, so that the
/// entry point can tell a reader that went away (`git kardwt list | head -1`: a broken pipe,
/// nothing to report) from results that were lost (`> /dev/full`: an error, exit 1, even when
/// the command itself went on).
pub(crate) struct Results<W: Write> {
    inner: W,
    failed: Option<io::Error>,
}

impl<W: Write> Results<W> {
    pub(crate) fn new(inner: W) -> Self {
        Results {
            inner,
            failed: None,
        }
    }

    /// Flush what is buffered, then the first write that failed, if one did.
    pub(crate) fn finish(mut self) -> Option<io::Error> {
        let _ = self.flush();
        self.failed
    }

    fn keep<T>(&mut self, result: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &result {
            if self.failed.is_none() && e.kind() != io::ErrorKind::Interrupted {
                self.failed = Some(io::Error::new(e.kind(), e.to_string()));
            }
        }
        result
    }
}

impl<W: Write> Write for Results<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.keep(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.keep(result)
    }
}

/// How a command whose results went to a [`Results`] ends (pure): `failed` is its first failed
/// write. A broken pipe means the reader has what it wanted: the command's own exit code, or 0
/// when the broken pipe is what stopped it. Any other failed write is an error naming stdout,
/// which says whether the action itself had completed.
pub(crate) fn outcome(
    result: anyhow::Result<i32>,
    failed: Option<io::Error>,
) -> anyhow::Result<i32> {
    let Some(failed) = failed else {
        return result;
    };
    if failed.kind() == io::ErrorKind::BrokenPipe {
        return match result {
            Err(err) if crate::ground::error::is_broken_pipe(&err) => Ok(0),
            other => other,
        };
    }
    let lost = "could not write the results to stdout";
    Err(match result {
        Err(err) => anyhow::Error::new(
            crate::ground::error::Fail::wrap(crate::ground::error::Code::Failed, lost, err).hint(
                "what the command did before it printed stands: `git kardwt list` shows every \
                 card's state",
            ),
        ),
        Ok(code) => anyhow::Error::new(
            crate::ground::error::failed(format!("{lost}: {failed}")).hint(format!(
                "the command itself completed (exit {code}); only what it printed was lost"
            )),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose every write fails with `kind`.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn written(
        kind: io::ErrorKind,
        result: impl FnOnce(&mut dyn Write) -> anyhow::Result<i32>,
    ) -> anyhow::Result<i32> {
        let mut out = Results::new(Failing(kind));
        let result = result(&mut out);
        outcome(result, out.finish())
    }

    #[test]
    fn a_reader_that_went_away_is_not_an_error() {
        let code = written(io::ErrorKind::BrokenPipe, |out| {
            writeln!(out, "x")?;
            Ok(0)
        });
        assert_eq!(code.unwrap(), 0);
        let kept = written(io::ErrorKind::BrokenPipe, |out| {
            let _ = writeln!(out, "x");
            Ok(1)
        });
        assert_eq!(kept.unwrap(), 1, "the command's own code stays");
        let other = written(io::ErrorKind::BrokenPipe, |_| anyhow::bail!("boom"));
        assert!(
            other.is_err(),
            "an error that is not the pipe is still reported"
        );
    }

    #[test]
    fn lost_results_are_an_error_that_names_stdout() {
        let err = written(io::ErrorKind::StorageFull, |out| {
            writeln!(out, "x")?;
            Ok(0)
        })
        .unwrap_err();
        assert_eq!(crate::ground::error::exit_code(&err), 1);
        assert!(
            format!("{err:#}").contains("could not write the results to stdout"),
            "{err:#}"
        );
        let err = written(io::ErrorKind::StorageFull, |out| {
            let _ = writeln!(out, "x");
            Ok(0)
        })
        .unwrap_err();
        let text = crate::ground::error::render(&err);
        assert!(text.contains("only what it printed was lost"), "{text}");
        assert_eq!(crate::ground::error::exit_code(&err), 1);
        let fine = {
            let mut out = Results::new(Vec::new());
            writeln!(out, "x").unwrap();
            outcome(Ok(0), out.finish())
        };
        assert_eq!(fine.unwrap(), 0);
    }

    #[test]
    fn messages_with_and_without_arguments_compile_and_return_unit() {
        let x = 3;
        let () = eprintln!();
        let () = eprintln!("plain");
        let () = eprintln!("{x} and {}", x + 1);
        let () = eprint!("{x}");
    }
}
