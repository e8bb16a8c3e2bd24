//! The verdict of a failed preparation, as the user and an agent runner read it: what failed,
//! the retry that works, the hook's own words, what became of the tree, laid out to fit
//! [`ERROR_BLOCK_MAX`] characters with the verdict first.
use std::path::PathBuf;

use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::sandbox::{self, Ending};

/// Why preparation did not finish.
pub(crate) enum Failure {
    Hook(sandbox::Outcome),
    Other(anyhow::Error),
}

/// A new tree removed (its branch kept) after its preparation failed, as the failure block
/// tells it.
pub(crate) struct Removed {
    pub path: PathBuf,
    /// Why removing it failed, when it did.
    pub refusal: Option<crate::context::RemovalError>,
    /// The branch that stays, `None` when the tree was detached.
    pub branch: Option<String>,
}

impl Failure {
    /// The final error block, verdict first: what failed, the retry that works (`retry`, a
    /// command), the hook's own words and where its whole output is; then what happened to
    /// the tree. `removed` is `None` when the tree was kept. Paths are shortened in the
    /// middle when the block would not fit [`ERROR_BLOCK_MAX`] otherwise.
    pub(crate) fn into_error(
        self,
        card: &CardId,
        retry: &str,
        removed: Option<Removed>,
    ) -> anyhow::Error {
        let retry = match &removed {
            Some(_) => format!("a retry ({retry}) re-creates and re-prepares it"),
            None => format!("a retry ({retry}) prepares it again"),
        };
        let (stop, what) = match &self {
            Failure::Hook(o) => match o.ending {
                Ending::Exited(c) => (Stop::Hook, format!("the prepare hook exited with {c}")),
                Ending::Cap => (
                    Stop::Hook,
                    "the prepare hook ran past timeout_seconds and was killed".to_owned(),
                ),
                Ending::Deadline => (
                    Stop::Deadline,
                    "the action deadline passed during the prepare hook".to_owned(),
                ),
                Ending::Signal(s) => (
                    Stop::Stopped(s.code()),
                    format!("interrupted by {}: the prepare hook was killed", s.name()),
                ),
            },
            // A deadline or an interrupt keeps its own exit code (5, 129, 130, 143).
            Failure::Other(e) => match crate::ground::error::code_of(e) {
                Some(Code::Deadline) => (Stop::Deadline, format!("{e:#}")),
                Some(c @ (Code::Hangup | Code::Interrupt | Code::Terminate)) => {
                    (Stop::Stopped(c), format!("{e:#}"))
                }
                _ => (Stop::Hook, format!("{e:#}")),
            },
        };
        let mut paths = Vec::new();
        let log = match &self {
            Failure::Hook(sandbox::Outcome { log: Some(log), .. }) => {
                paths.push(log.display().to_string());
                format!(" (its output is in {})", log.display())
            }
            _ => String::new(),
        };
        // A sentence of its own after the retry's full stop: capitalized.
        let mut chars = what.chars();
        let what: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        let message = format!("preparing card {card} failed; {retry}. {what}{log}");
        let hint = match removed {
            Some(Removed {
                path,
                refusal: None,
                branch,
            }) => {
                paths.push(path.display().to_string());
                let kept = match branch {
                    Some(b) => format!("branch {b} is kept"),
                    None => "it was detached, so no branch is kept".to_owned(),
                };
                format!("the new worktree {} was removed; {kept}", path.display())
            }
            Some(Removed {
                path,
                refusal: Some(refusal),
                ..
            }) => {
                paths.push(path.display().to_string());
                // The command first: a block cut to fit loses the end of git's words, never
                // the command (a suggested command must work).
                format!(
                    "{} could not be removed; remove it by hand before the retry: {} (why: {})",
                    path.display(),
                    crate::context::manual_removal(&path),
                    shorten_middle(&refusal.to_string(), 120)
                )
            }
            None => "the worktree is kept and recorded as failed".to_owned(),
        };
        let tail = match &self {
            Failure::Hook(o) => o.tail.as_str(),
            Failure::Other(_) => "",
        };
        let (message, hint) = fit_error_block(&message, tail, &hint, &paths);
        Fail::from(Unprepared {
            stop,
            message,
            hint,
        })
        .into()
    }
}

/// What stopped a preparation, as far as the exit code tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The prepare hook failed, or what the pipeline ran in its place (exit 4).
    Hook,
    /// The action deadline passed (exit 5).
    Deadline,
    /// A signal stopped it: the code a shell reports for that signal (129, 130, 143).
    Stopped(Code),
}

/// A failed preparation as its failure block says it, laid out to fit [`ERROR_BLOCK_MAX`]:
/// `stop` fixes the exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(super) struct Unprepared {
    pub stop: Stop,
    message: String,
    hint: String,
}

impl Kind for Unprepared {
    fn code(&self) -> Code {
        match self.stop {
            Stop::Hook => Code::Hook,
            Stop::Deadline => Code::Deadline,
            Stop::Stopped(code) => code,
        }
    }
    fn hints(&self) -> Vec<String> {
        vec![self.hint.clone()]
    }
}

/// Agent runners keep only the head of an error: the final block (`error: …` and `hint: …`)
/// fits in this many characters, verdict first.
pub(super) const ERROR_BLOCK_MAX: usize = 500;

/// Room kept for the hook's own words: paths are shortened before these are given up.
const HOOK_WORDS_MIN: usize = 80;

/// The verdict with the hook's own words appended (at most 300 characters: its last lines,
/// the first words of a line first), and the hint; every one of `paths` in them is shortened
/// in the middle until the block fits with room for the hook's words; the verdict and then
/// the hint are cut at their end only when even that is not enough (pure).
pub(super) fn fit_error_block(
    verdict: &str,
    hook_tail: &str,
    hint: &str,
    paths: &[String],
) -> (String, String) {
    let len = |s: &str| s.chars().count();
    let cut = |s: &str, max: usize| -> String {
        if len(s) <= max {
            s.to_owned()
        } else {
            let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    };
    // "error: " + verdict + ": " + words + "\n" + "hint: " + hint + "\n"
    let frame = len("error: : \nhint: \n");
    let wanted = len(hook_tail.trim()).min(HOOK_WORDS_MIN);
    let mut paths: Vec<&String> = paths.iter().filter(|p| !p.is_empty()).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(len(p)));
    let shortened = |text: &str, max: usize| {
        paths.iter().fold(text.to_owned(), |t, p| {
            t.replace(p.as_str(), &shorten_middle(p, max))
        })
    };
    let mut fitted = (verdict.to_owned(), hint.to_owned());
    for max in [usize::MAX, 160, 120, 96, 80, 64, 48, 40, 32, 24] {
        fitted = (shortened(verdict, max), shortened(hint, max));
        if frame + len(&fitted.0) + len(&fitted.1) + wanted <= ERROR_BLOCK_MAX {
            break;
        }
    }
    let verdict = cut(&fitted.0, ERROR_BLOCK_MAX - frame - 40);
    let hint = cut(
        &fitted.1,
        ERROR_BLOCK_MAX.saturating_sub(frame + len(&verdict)),
    );
    let room = ERROR_BLOCK_MAX.saturating_sub(frame + len(&verdict) + len(&hint));
    let words = hook_words(hook_tail, room.min(300));
    let message = if words.is_empty() || room < 4 {
        verdict
    } else {
        format!("{verdict}: {words}")
    };
    (message, hint)
}

/// `text` in at most `max` characters, its middle replaced by `…` (pure).
pub(super) fn shorten_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    if max < 3 {
        return text.chars().take(max).collect();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// The hook's own words in at most `max` characters: its last whole lines that fit (`…` first
/// when earlier ones are left out), or the start and end of its last line when that alone is
/// too long.
fn hook_words(tail: &str, max: usize) -> String {
    let len = |s: &str| s.chars().count();
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let Some(last) = lines.last() else {
        return String::new();
    };
    let mut picked: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in lines.iter().rev() {
        // Room for this line, its newline and a leading "…\n" should earlier ones be left out.
        let need = len(line) + usize::from(!picked.is_empty()) + 2;
        if used + need > max {
            break;
        }
        used += len(line) + usize::from(!picked.is_empty());
        picked.push(line);
    }
    if picked.is_empty() {
        return shorten_middle(last, max);
    }
    picked.reverse();
    let words = picked.join("\n");
    if picked.len() < lines.len() {
        format!("…\n{words}")
    } else {
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(message: &str, hint: &str) -> String {
        format!("error: {message}\nhint: {hint}\n")
    }

    #[test]
    fn the_error_block_fits_and_keeps_the_verdict_first() {
        let verdict = "preparing card 7 failed; a retry (git kardwt add 7) re-creates and re-prepares it. The prepare hook exited with 1";
        let long_tail = format!("{}FINAL no token", "x".repeat(3000));
        let long_path = format!("/{}", "deep/".repeat(60));
        for (tail, hint) in [
            (
                "no token",
                "the new worktree /w/card-7 was removed; branch card/7 is kept".to_owned(),
            ),
            (
                long_tail.as_str(),
                "the new worktree /w/card-7 was removed; branch card/7 is kept".to_owned(),
            ),
            (
                long_tail.as_str(),
                format!("the new worktree {long_path} was removed; branch card/7 is kept"),
            ),
        ] {
            let (message, hint) = fit_error_block(verdict, tail, &hint, &[]);
            let text = block(&message, &hint);
            assert!(
                text.chars().count() <= ERROR_BLOCK_MAX,
                "{} chars: {text}",
                text.chars().count()
            );
            assert!(
                message.starts_with("preparing card 7 failed; a retry"),
                "{message}"
            );
        }
        let lines = format!("{}\nsecond to last\nFINAL no token\n", "x".repeat(3000));
        let (message, _) = fit_error_block(verdict, &lines, "short", &[]);
        assert!(
            message.ends_with("…\nsecond to last\nFINAL no token"),
            "the last lines are what matters: {message}"
        );
        let (message, _) = fit_error_block(verdict, &long_tail, "short", &[]);
        assert!(
            message.contains(": xxxx")
                && message.contains("x…x")
                && message.ends_with("FINAL no token"),
            "a line too long shows its first and last words: {message}"
        );
    }

    #[test]
    fn long_paths_are_shortened_in_the_middle_so_the_retry_and_the_words_fit() {
        let path = format!("/tmp/{}/card-7", "long-directory-name/".repeat(14));
        assert!(path.chars().count() > 280);
        let log = "/tmp/repo/.git/kardwt/logs/card-7.log".to_owned();
        let verdict = format!(
            "preparing card card-7 failed; a retry (git worktree add {path} feature/card-7) re-creates and re-prepares it. The prepare hook exited with 1 (its output is in {log})"
        );
        let hint = format!("the new worktree {path} was removed; branch feature/card-7 is kept");
        let tail = format!(
            "{}\nprepare: missing token FOO_TOKEN, set it in .env\n",
            "noise ".repeat(900)
        );
        let (message, hint) = fit_error_block(&verdict, &tail, &hint, &[path.clone(), log.clone()]);
        let text = block(&message, &hint);
        assert!(text.chars().count() <= ERROR_BLOCK_MAX, "{text}");
        assert!(
            message.contains("a retry (git worktree add /tmp/long-directory"),
            "{text}"
        );
        assert!(message.contains("…"), "{text}");
        assert!(
            message.contains("card-7 feature/card-7) re-creates and re-prepares it"),
            "{text}"
        );
        assert!(message.contains(&log), "a short path is kept whole: {text}");
        assert!(
            message.ends_with("prepare: missing token FOO_TOKEN, set it in .env"),
            "{text}"
        );
        assert!(
            hint.ends_with("was removed; branch feature/card-7 is kept"),
            "{text}"
        );
        assert_eq!(shorten_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(shorten_middle("abc", 5), "abc");
    }
}
