//! `git NAME …` read the way git reads it: the command git finally runs after
//! following `alias.NAME` (set with `-c` on the command line, else in the configuration the
//! [`World`] reads), or `None` when that cannot be known for certain. Pure: no disk.
//!
//! git's order (git.c, `run_argv`): its own commands win over an alias of the same name, a
//! `git-NAME` program on the PATH wins over an alias, a value starting with `!` runs a shell,
//! and a loop or an alias naming itself is fatal. Values are split as git's `split_cmdline`
//! splits them. An alias that starts with a global option is not judged (git refuses most of
//! them: "changes environment variables").
use std::borrow::Cow;

use super::lex::Word;
use super::world::World;

/// The most aliases followed in a row; git itself stops only at a loop.
const CHAIN_MAX: usize = 16;

/// git's own commands (`git --list-cmds=main`, and a few newer ones): an alias of one of these
/// names is ignored by git, so the name runs the command itself.
#[rustfmt::skip]
const GIT_COMMANDS: &[&str] = &[
    "add", "am", "annotate", "apply", "archimport", "archive", "backfill", "bisect", "blame",
    "branch", "bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap",
    "check-ref-format", "checkout", "checkout--worker", "checkout-index", "cherry",
    "cherry-pick", "citool", "clean", "clone", "column", "commit", "commit-graph", "commit-tree",
    "config", "count-objects", "credential", "credential-cache", "credential-cache--daemon",
    "credential-store", "cvsexportcommit", "cvsimport", "cvsserver", "daemon", "describe",
    "diagnose", "diff", "diff-files", "diff-index", "diff-pairs", "diff-tree", "difftool",
    "difftool--helper", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch",
    "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "fsck-objects",
    "fsmonitor--daemon", "gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help", "hook",
    "http-backend", "http-fetch", "http-push", "imap-send", "index-pack", "init", "init-db",
    "instaweb", "interpret-trailers", "last-modified", "log", "ls-files", "ls-remote",
    "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file",
    "merge-index", "merge-octopus", "merge-one-file", "merge-ours", "merge-recursive",
    "merge-recursive-ours", "merge-recursive-theirs", "merge-resolve", "merge-subtree",
    "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv", "name-rev", "notes",
    "p4", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "pickaxe", "prune",
    "prune-packed", "pull", "push", "quiltimport", "range-diff", "read-tree", "rebase",
    "receive-pack", "reflog", "refs", "remote", "remote-ext", "remote-fd", "remote-ftp",
    "remote-ftps", "remote-http", "remote-https", "repack", "replace", "replay", "repo",
    "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
    "send-email", "send-pack", "sh-i18n--envsubst", "shell", "shortlog", "show", "show-branch",
    "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace",
    "submodule", "submodule--helper", "subtree", "svn", "switch", "symbolic-ref", "tag",
    "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info",
    "upload-archive", "upload-archive--writer", "upload-pack", "var", "verify-commit",
    "verify-pack", "verify-tag", "version", "web--browse", "whatchanged", "worktree",
    "write-tree",
];

/// What the command line itself says about aliases: `-c alias.NAME=VALUE`, in order (the last
/// one of a name wins, over the configuration files).
#[derive(Debug, Default)]
pub(super) struct CmdlineAliases {
    /// Name (ASCII lower-cased, as git compares it) and value; `None`: no value, which git
    /// refuses when it looks the alias up.
    set: Vec<(String, Option<String>)>,
    /// An `include.*` or `includeIf.*` was given: any alias may come from a file it names.
    includes: bool,
}

impl CmdlineAliases {
    /// Note the argument of a `-c`; `false` when git refuses it (an invalid key), so the
    /// command runs nothing.
    pub(super) fn note(&mut self, arg: &str) -> bool {
        let (key, value) = match arg.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned())),
            None => (arg, None),
        };
        if !valid_key(key) {
            return false;
        }
        let (section, rest) = key.split_once('.').unwrap_or((key, ""));
        if section.eq_ignore_ascii_case("alias") {
            self.set.push((rest.to_ascii_lowercase(), value));
        } else if section.eq_ignore_ascii_case("include")
            || section.eq_ignore_ascii_case("includeif")
        {
            self.includes = true;
        }
        true
    }

    /// `Some(value)` when the command line sets `name`, `value` `None` when without a value.
    fn get(&self, name: &str) -> Option<Option<&str>> {
        let name = name.to_ascii_lowercase();
        self.set
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_deref())
    }
}

/// git's `git_config_parse_key`: `section[.subsection].name`, the section and the name made of
/// ASCII letters, digits and `-`, the name starting with a letter, no newline anywhere.
fn valid_key(key: &str) -> bool {
    let Some((head, name)) = key.rsplit_once('.') else {
        return false;
    };
    let section = head.split('.').next().unwrap_or(head);
    let keychars = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    !section.is_empty()
        && keychars(section)
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && keychars(name)
        && !head.contains('\n')
}

/// The argv git runs for `git ARGV…` (global options already read): `argv` itself when its
/// first word is one of git's own commands or `kardwt`, else the alias expanded (as often as it
/// names another alias). `None` when git would not run one of its own commands or it cannot be
/// known: no such alias, a shell alias, a loop, a value not known here or not understood.
/// Aliases the command line does not set are asked of `config` (the repository's configuration,
/// read through the [`World`], which also says what is on the PATH).
pub(super) fn expand<'a>(
    argv: &'a [Word],
    cmdline: &CmdlineAliases,
    config: &mut dyn FnMut(&str) -> Option<String>,
    world: &dyn World,
) -> Option<Cow<'a, [Word]>> {
    let mut argv = Cow::Borrowed(argv);
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..=CHAIN_MAX {
        let name = argv.first()?.text.clone();
        // kardwt itself (the `git-kardwt` program running this guard) is judged by its rule.
        if GIT_COMMANDS.contains(&name.as_str()) || name == "kardwt" {
            return Some(argv);
        }
        // A `git-NAME` program runs before an alias of that name is looked at.
        if cmdline.includes || seen.contains(&name) || world.git_program(&name) {
            return None;
        }
        let value = match cmdline.get(&name) {
            Some(value) => value?.to_owned(),
            None => config(&name)?,
        };
        if value.starts_with('!') {
            return None;
        }
        let words = split_cmdline(&value)?;
        match words.first() {
            Some(first) if !first.is_empty() && !first.starts_with('-') && *first != name => {}
            _ => return None,
        }
        argv.to_mut()
            .splice(..1, words.iter().map(|w| Word::literal(w)));
        seen.push(name);
    }
    None
}

/// git's `split_cmdline`: words split at unquoted whitespace, `'…'` and `"…"` quoting, a
/// backslash escaping the next character outside single quotes. `None` where git fails (an
/// unclosed quote, a trailing backslash). Like git, a leading or trailing blank makes an
/// empty word.
pub(super) fn split_cmdline(value: &str) -> Option<Vec<String>> {
    let mut words = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quote) {
            (' ' | '\t' | '\n' | '\r', None) => {
                while chars
                    .next_if(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
                    .is_some()
                {}
                words.push(String::new());
            }
            ('\'' | '"', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('\\', q) if q != Some('\'') => words.last_mut()?.push(chars.next()?),
            (c, _) => words.last_mut()?.push(c),
        }
    }
    quote.is_none().then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_as_git_splits_them() {
        let split = |s: &str| split_cmdline(s).map(|w| w.join("|"));
        assert_eq!(split("worktree remove").as_deref(), Some("worktree|remove"));
        assert_eq!(
            split(r#"'work'tree  "re move" a\ b"#).as_deref(),
            Some("worktree|re move|a b")
        );
        assert_eq!(split(r#""a\"b" 'c\d'"#).as_deref(), Some(r#"a"b|c\d"#));
        assert_eq!(split(" a\t\tb ").as_deref(), Some("|a|b|"));
        assert_eq!(split("").as_deref(), Some(""));
        for bad in ["a 'b", "a \"b", "a\\"] {
            assert_eq!(split(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_command_line_wins_and_the_last_setting_counts() {
        let mut c = CmdlineAliases::default();
        assert!(c.note("alias.wr=status"));
        assert!(c.note("ALIAS.Wr=worktree remove"));
        assert!(c.note("core.x=1"));
        assert_eq!(c.get("wR"), Some(Some("worktree remove")));
        assert!(c.note("alias.wr"));
        assert_eq!(c.get("wr"), Some(None));
        // git compares names as ASCII only.
        assert!(c.note("alias.É.sub=x"));
        assert_eq!(c.get("É.SUB"), Some(Some("x")));
        assert_eq!(c.get("é.sub"), None);
        assert_eq!(c.get("other"), None);
        assert!(!c.includes);
        assert!(c.note("includeIf.gitdir:/x/.path=/y"));
        assert!(c.includes);
        for bad in [
            "x=1",
            ".x=1",
            "alias.=1",
            "alias.a_b=1",
            "alias.1x=1",
            "al_ias.x=1",
            "a.b\nc.d=1",
        ] {
            assert!(!c.note(bad), "{bad:?}");
        }
    }
}
