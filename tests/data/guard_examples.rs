//! Reads `guard-examples.txt`, the guard's table of examples, for the unit tests (a fake disk)
//! and the integration tests (a real repository): included by both with `#[path]`, so the
//! table is compiled into the test binaries only, never into `git-kardwt`.
use std::path::{Path, PathBuf};

/// The aliases of the repository the examples run in, as `git config alias.NAME VALUE` sets
/// them (the table's header says what each is for).
pub const ALIASES: &[(&str, &str)] = &[
    ("rmwt", "worktree remove"),
    ("rmwtf", "rmwt --force"),
    ("sq", r#"'work'tree "remove""#),
    ("pr", "worktree prune"),
    ("shrm", "!git worktree remove"),
    ("loopa", "loopb"),
    ("loopb", "loopa"),
    ("itself", "itself worktree remove"),
    ("st", "status"),
    ("status", "worktree remove"),
    ("optwt", "--no-pager worktree remove"),
    ("quote", "worktree remove 'unclosed"),
    ("kt", "kardwt trust"),
];

/// The table, one `command => replacement` a line (see its header).
const TABLE: &str = include_str!("guard-examples.txt");

/// Single-quote `s` for a POSIX shell (as the guard quotes its replacements).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The examples as (command, replacement) pairs with the placeholders filled in for a
/// repository whose base is `<tmp>/base`.
pub fn examples(tmp: &Path) -> Vec<(String, String)> {
    let q = |p: PathBuf| quote(&p.to_string_lossy());
    let card = |id: &str| tmp.join("base.worktrees").join(format!("card-{id}"));
    let fill = |s: &str| {
        s.replace("{P}", &q(card("42")))
            .replace("{p}", &card("42").to_string_lossy())
            .replace("{Q}", &q(card("7")))
            .replace("{T}", &q(tmp.to_path_buf()))
            .replace("{t}", &tmp.to_string_lossy())
            .replace("{B}", &q(tmp.join("base")))
            .replace("{NL}", "\n")
    };
    TABLE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.rsplit_once("=>") {
            Some((cmd, rep)) => (fill(cmd.trim()), fill(rep.trim())),
            None => panic!("guard-examples.txt: a line without `=>`: {l:?}"),
        })
        .collect()
}
