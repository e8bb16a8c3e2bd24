//! The guard's rules over parsed commands: `git worktree remove` and `rm -r` of a worktree
//! kardwt manages (or of the root or base holding some; a glob as the shell expands it,
//! [`super::glob`]), `git worktree prune` that would drop a managed entry; following `cd`,
//! `pushd` and `popd` ([`super::dirs`]), `git -C`, `--git-dir`, git's aliases
//! ([`super::alias`]), `command`, and long-option abbreviations the way the shell, git and GNU
//! rm read them; and kardwt's own `trust`, however it is reached ([`super::kardwt`]). Anything
//! not understood for certain is silence (no [`Denial`]).
use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::alias::{self, CmdlineAliases};
use super::dirs::Stack;
use super::glob::Expansion;
use super::lex::{base_name, CannotJudge, Joint, Simple, Word};
use super::world::{Repository, World};
use super::Denial;

/// What replaces `git worktree prune`: the gone entries only, their resources released.
pub(crate) const PRUNE_REPLACEMENT: &str = "git kardwt gc --apply --prunable";

/// The longest directory followed through `cd` and `git -C`. Only a pile of `cd`s gets past
/// it; the directory then counts as unknown (silence), so following stays linear in the line.
const DIR_MAX: usize = 4096;

/// The rules, over parsed commands: `git worktree remove` and `rm -r` of a managed worktree,
/// `git worktree prune` in a repository with a managed worktree whose directory is gone.
/// Empty means silence.
pub(crate) fn judge(commands: &[Simple], cwd: &Path, world: &dyn World) -> Vec<Denial> {
    match judge_all(commands, cwd, world) {
        Ok(mut denials) => {
            let mut seen = HashSet::new();
            denials.retain(|d| seen.insert(d.replacement.clone()));
            denials
        }
        Err(_) => Vec::new(),
    }
}

/// Where the commands of a line run, as far as it is known.
struct Place<'w> {
    world: &'w dyn World,
    /// `None`: no longer known (a `cd` we cannot follow).
    dir: Option<PathBuf>,
    /// What `pushd` saved, for `popd`.
    stack: Stack,
    /// Changes whenever `dir` does, so `repo` is asked of the world once per directory.
    id: usize,
    repo: Option<(usize, Option<Rc<Repository>>)>,
    /// A `git worktree prune` was denied already.
    prune_denied: bool,
}

impl Place<'_> {
    fn set(&mut self, dir: Option<PathBuf>) {
        self.dir = dir.filter(|d| d.as_os_str().len() <= DIR_MAX);
        self.id += 1;
    }

    /// The repository discovered from the current directory.
    fn repo(&mut self) -> Option<Rc<Repository>> {
        match &self.repo {
            Some((id, repo)) if *id == self.id => repo.clone(),
            _ => {
                let repo = self
                    .dir
                    .as_deref()
                    .and_then(|d| self.world.repository(d, false));
                self.repo = Some((self.id, repo.clone()));
                repo
            }
        }
    }
}

fn judge_all(
    commands: &[Simple],
    cwd: &Path,
    world: &dyn World,
) -> Result<Vec<Denial>, CannotJudge> {
    let mut denials = Vec::new();
    let mut place = Place {
        world,
        dir: Some(cwd.to_path_buf()),
        stack: Stack::default(),
        id: 0,
        repo: None,
        prune_denied: false,
    };
    let mut moved = false;
    for (i, cmd) in commands.iter().enumerate() {
        if cmd.assignments().any(|n| n.starts_with("GIT_")) {
            return Err(CannotJudge("a GIT_* variable changes what git does"));
        }
        let in_pipeline =
            cmd.after == Joint::Pipe || commands.get(i + 1).is_some_and(|n| n.after == Joint::Pipe);
        let argv = cmd.argv();
        // After `||` the command runs only when the left side failed, maybe before its `cd`.
        // `exit` there ends the shell: what follows runs only when the left side succeeded,
        // so the directory stays what the left side made it (`cd DIR || exit; …`).
        let exits = !in_pipeline
            && argv
                .first()
                .is_some_and(|w| w.is_plain() && w.text == "exit");
        if cmd.after == Joint::Or && moved && !exits {
            place.set(None);
            place.stack.forget();
        }
        // After `;` the rest runs even when a `pushd` before it failed.
        if cmd.after == Joint::Then {
            place.stack.forget();
        }
        let Some(first) = argv.first() else { continue };
        if first.expands {
            // `$CMD …` could be anything, a `cd` included.
            place.set(None);
            place.stack.forget();
            moved = true;
            continue;
        }
        match base_name(&first.text) {
            "cd" | "pushd" | "popd" | "dirs" => {
                let (dir, args) = (place.dir.as_deref(), &argv[1..]);
                if let Some(to) = place.stack.step(&first.text, args, dir, in_pipeline) {
                    moved = true;
                    place.set(to);
                }
            }
            "export" | "declare" | "typeset" | "local" | "readonly"
                if argv[1..]
                    .iter()
                    .any(|w| w.text.starts_with("GIT_") || w.text.starts_with("CDPATH")) =>
            {
                return Err(CannotJudge("exports a GIT_* or CDPATH variable"));
            }
            "git" if !first.globs => denials.extend(judge_git(&argv[1..], &mut place)?),
            "git-kardwt" | "kardwt" => denials.extend(super::kardwt::judge(&argv[..1], &argv[1..])),
            "rm" if !first.globs => {
                denials.extend(judge_rm(&argv[1..], place.dir.as_deref(), world))
            }
            _ => {}
        }
    }
    Ok(denials)
}

/// `git [global options] worktree remove|prune …`.
fn judge_git(args: &[Word], place: &mut Place) -> Result<Option<Denial>, CannotJudge> {
    if args.iter().any(|w| !w.is_plain()) {
        return Ok(None);
    }
    let world = place.world;
    // `-C` moves this one git; `None` for `dir` means it is no longer known.
    let mut moved: Option<Option<PathBuf>> = None;
    let mut git_dir: Option<&str> = None;
    let mut aliases = CmdlineAliases::default();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let w = w.text.as_str();
        let value = |i: usize| args.get(i + 1).map(|v| v.text.as_str());
        match w {
            "-C" => {
                let Some(to) = value(i) else { return Ok(None) };
                if !to.is_empty() {
                    let dir = moved.clone().unwrap_or_else(|| place.dir.clone());
                    let to = match dir {
                        Some(d) => Some(d.join(to)),
                        None if Path::new(to).is_absolute() => Some(PathBuf::from(to)),
                        None => None,
                    };
                    moved = Some(to.filter(|d| d.as_os_str().len() <= DIR_MAX));
                }
                i += 2;
            }
            "--git-dir" => {
                let Some(to) = value(i) else { return Ok(None) };
                git_dir = Some(to);
                i += 2;
            }
            _ if w.starts_with("--git-dir=") => {
                git_dir = Some(&w["--git-dir=".len()..]);
                i += 1;
            }
            "-c" => {
                match value(i) {
                    Some(setting) if aliases.note(setting) => {}
                    _ => return Ok(None),
                }
                i += 2;
            }
            // git dies when the variable is not set, and its value is not known here.
            _ if w == "--config-env" || w.starts_with("--config-env=") => return Ok(None),
            // The work tree and namespace change neither the repository nor which worktree
            // `worktree remove` names (its path is taken from where git was started).
            "--attr-source" | "--work-tree" | "--namespace" => i += 2,
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--no-replace-objects"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-advice"
            | "--no-lazy-fetch" => i += 1,
            _ if ["--attr-source=", "--work-tree=", "--namespace="]
                .iter()
                .any(|o| w.starts_with(o)) =>
            {
                i += 1
            }
            _ if ["--bare", "--exec-path"]
                .iter()
                .any(|o| w == *o || w.starts_with(&format!("{o}="))) =>
            {
                return Err(CannotJudge(
                    "git told to use another repository or programs",
                ))
            }
            _ if w.starts_with('-') => return Ok(None),
            _ => break,
        }
    }
    let dir = moved.clone().unwrap_or_else(|| place.dir.clone());
    // The repository git uses: the named git dir, or the one found from where it runs.
    let explicit = git_dir.is_some();
    let repo = |place: &mut Place| match git_dir {
        Some("") => None,
        Some(g) => {
            let g = match &dir {
                _ if Path::new(g).is_absolute() => PathBuf::from(g),
                Some(d) => d.join(g),
                None => return None,
            };
            world.repository(&g, true)
        }
        None => match &moved {
            None => place.repo(),
            Some(d) => d.as_deref().and_then(|d| world.repository(d, false)),
        },
    };
    // The command git runs: `worktree …` as typed, or what an alias of it expands to.
    let command = match args.get(i) {
        None => return Ok(None),
        Some(w) if w.text == "worktree" => Cow::Borrowed(&args[i..]),
        Some(_) => {
            let mut config = |name: &str| repo(place).and_then(|r| world.alias(&r, name));
            match alias::expand(&args[i..], &aliases, &mut config, world) {
                Some(argv) => argv,
                None => return Ok(None),
            }
        }
    };
    if command[0].text == "kardwt" {
        let shown: Vec<Word> = std::iter::once(Word::literal("git"))
            .chain(args[..i].iter().cloned())
            .chain([Word::literal("kardwt")])
            .collect();
        return Ok(super::kardwt::judge(&shown, &command[1..]));
    }
    if command[0].text != "worktree" {
        return Ok(None);
    }
    let rest = &command[1..];
    Ok(match rest.first().map(|w| w.text.as_str()) {
        Some("remove") => {
            let (arg, force) = match worktree_remove_args(&rest[1..]) {
                Some(found) => found,
                None => return Ok(None),
            };
            let repo = repo(place);
            if explicit && repo.is_none() {
                return Ok(None);
            }
            // git looks the argument up as a unique path suffix among the repository's
            // worktrees first, then as a path (worktree.c, find_worktree). An absolute
            // argument can only be a suffix of itself, so it needs no directory.
            let target = {
                let mut suffixed = repo.iter().flat_map(|r| r.suffixed(arg));
                match (suffixed.next(), suffixed.next(), &dir) {
                    (Some(one), None, _) => one.clone(),
                    (_, _, Some(dir)) => dir.join(arg),
                    _ if Path::new(arg).is_absolute() => PathBuf::from(arg),
                    _ => return Ok(None),
                }
            };
            let Some(managed) = world.managed_worktree(&target) else {
                return Ok(None);
            };
            if explicit && repo.is_none_or(|r| r.common_dir != managed.common_dir) {
                // git works on another repository, where this is no worktree: it fails.
                return Ok(None);
            }
            Some(Denial {
                reason: format!(
                    "`git worktree remove` of {} skips kardwt's release steps (its processes, cleanup hook and ports are left behind)",
                    managed.path.display()
                ),
                replacement: remove_command(&managed.path, force),
            })
        }
        // Only a prune that drops a managed entry is denied: with none gone, it touches only
        // unmanaged entries (the ones `gc --prunable` leaves to it). Every prune gets the same
        // answer: the first one found is enough.
        Some("prune") if prune_prunes(&rest[1..]) && !place.prune_denied => {
            let shown = match (&dir, git_dir) {
                (_, Some(g)) => g.to_owned(),
                (Some(d), None) => d.display().to_string(),
                (None, None) => return Ok(None),
            };
            let managed = repo(place).is_some_and(|r| r.managed_gone);
            place.prune_denied |= managed;
            managed.then(|| Denial {
                reason: format!(
                    "`git worktree prune` in {shown} drops kardwt's records of vanished worktrees before what they held is released"
                ),
                replacement: PRUNE_REPLACEMENT.to_owned(),
            })
        }
        _ => None,
    })
}

/// The one operand of `worktree remove` and whether it forces, or `None` when git would
/// refuse the arguments (or they are not understood).
fn worktree_remove_args(args: &[Word]) -> Option<(&str, bool)> {
    let mut force = false;
    let mut operands = Vec::new();
    let mut options_done = false;
    for w in args {
        let t = w.text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            operands.push(t);
        } else if t == "--" {
            options_done = true;
        } else if t == "--force" || (t.len() > 1 && t[1..].chars().all(|c| c == 'f')) {
            force = true;
        } else {
            return None;
        }
    }
    match operands[..] {
        [arg] if !arg.is_empty() => Some((arg, force)),
        _ => None,
    }
}

/// Does `git worktree prune ARGS` prune (not a dry run, arguments understood)?
fn prune_prunes(args: &[Word]) -> bool {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-n" | "--dry-run" => return false,
            "-v" | "--verbose" => i += 1,
            "--expire" => i += 2,
            t if t.starts_with("--expire=") => i += 1,
            _ => return false,
        }
    }
    true
}

/// What a long option of GNU rm does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RmLong {
    Recursive,
    Force,
    /// Changes nothing this guard cares about; `true` if it takes an optional `=VALUE`.
    Other(bool),
    /// `--help`, `--version`: rm prints and exits without removing anything.
    Exits,
}

/// GNU rm's long options (coreutils `rm.c`), matched the way `getopt_long` does.
const RM_LONG: &[(&str, RmLong)] = &[
    ("force", RmLong::Force),
    ("interactive", RmLong::Other(true)),
    ("one-file-system", RmLong::Other(false)),
    ("no-preserve-root", RmLong::Other(false)),
    ("preserve-root", RmLong::Other(true)),
    ("-presume-input-tty", RmLong::Other(false)),
    ("recursive", RmLong::Recursive),
    ("dir", RmLong::Other(false)),
    ("verbose", RmLong::Other(false)),
    ("help", RmLong::Exits),
    ("version", RmLong::Exits),
];

/// `--name[=value]` as `getopt_long` reads it for rm: an exact name, or an abbreviation that
/// starts exactly one option's name. `None`: rm rejects it (unknown, ambiguous such as
/// `--v`, or a value given to an option without one) and removes nothing.
fn rm_long(arg: &str) -> Option<RmLong> {
    let body = arg.strip_prefix("--")?;
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    if name.is_empty() {
        return None;
    }
    let kind = match RM_LONG.iter().find(|(n, _)| *n == name) {
        Some((_, kind)) => *kind,
        None => {
            let mut found = RM_LONG.iter().filter(|(n, _)| n.starts_with(name));
            match (found.next(), found.next()) {
                (Some((_, kind)), None) => *kind,
                _ => return None,
            }
        }
    };
    match (kind, value) {
        (RmLong::Other(true), _) | (_, None) => Some(kind),
        _ => None,
    }
}

/// `rm` with a recursive flag: one denial per operand that is a managed worktree.
fn judge_rm(args: &[Word], dir: Option<&Path>, world: &dyn World) -> Vec<Denial> {
    let (mut recursive, mut force) = (false, false);
    let mut operands = Vec::new();
    let mut options_done = false;
    for w in args {
        let t = w.text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            operands.push(w);
            continue;
        }
        if !w.is_plain() {
            return Vec::new();
        }
        if t == "--" {
            options_done = true;
            continue;
        }
        if t.starts_with("--") {
            match rm_long(t) {
                Some(RmLong::Recursive) => recursive = true,
                Some(RmLong::Force) => force = true,
                Some(RmLong::Other(_)) => {}
                Some(RmLong::Exits) | None => return Vec::new(),
            }
            continue;
        }
        for c in t[1..].chars() {
            match c {
                'r' | 'R' => recursive = true,
                'f' => force = true,
                'i' | 'I' | 'v' | 'd' => {}
                _ => return Vec::new(),
            }
        }
    }
    if !recursive {
        return Vec::new();
    }
    // What each operand stands for: itself, or what the shell expands it to (a `$` alone is
    // not known: not judged). The same word twice is judged once.
    let mut seen = HashSet::new();
    let mut denials = Vec::new();
    for w in operands {
        let words = match (w.globs, w.expands) {
            (false, false) => vec![w.text.clone()],
            (false, true) => continue,
            (true, _) => match super::glob::expand(&w.pattern, dir, world) {
                None => continue,
                Some(Expansion::Words(words)) => words,
                Some(Expansion::Prefix(prefix)) => {
                    denials.extend(judge_rm_prefix(&prefix, dir, world, force));
                    continue;
                }
            },
        };
        for word in words {
            if seen.insert(word.clone()) {
                denials.extend(judge_rm_path(&word, dir, world, force));
            }
        }
    }
    denials
}

/// An operand known only by the text it begins with: every entry of its directory that
/// starts with the rest could be meant, and anything beneath it (as if it ended in `/`).
fn judge_rm_prefix(
    prefix: &str,
    dir: Option<&Path>,
    world: &dyn World,
    force: bool,
) -> Vec<Denial> {
    let (parent, start) = match prefix.rsplit_once('/') {
        Some((p, s)) => (format!("{p}/"), s),
        None => (String::new(), prefix),
    };
    let listed = match dir {
        _ if parent.starts_with('/') => PathBuf::from(&parent),
        Some(d) => d.join(&parent),
        None => return Vec::new(),
    };
    let mut names = world.entries(&listed).unwrap_or_default();
    names.retain(|n| n.starts_with(start) && n != "." && n != "..");
    names.sort();
    names
        .iter()
        .flat_map(|n| judge_rm_path(&format!("{parent}{n}/"), dir, world, force))
        .collect()
}

/// `rm -r WORD` from `dir`: a managed worktree, a directory holding some (the worktree root)
/// or the base of their repository is denied.
fn judge_rm_path(word: &str, dir: Option<&Path>, world: &dyn World, force: bool) -> Vec<Denial> {
    let trimmed = word.trim_end_matches('/');
    let slash = trimmed.len() != word.len();
    let trimmed = if trimmed.is_empty() && slash {
        "/"
    } else {
        trimmed
    };
    // rm refuses `.` and `..` as the last component.
    if trimmed.is_empty() || matches!(trimmed.rsplit('/').next(), Some("." | "..")) {
        return Vec::new();
    }
    let path = match dir {
        _ if Path::new(trimmed).is_absolute() => PathBuf::from(trimmed),
        Some(d) => d.join(trimmed),
        None => return Vec::new(),
    };
    // Without a trailing slash, `rm -r link` removes the link, not what it points to.
    if !slash && world.is_symlink(&path) {
        return Vec::new();
    }
    if let Some(managed) = world.managed_worktree(&path) {
        return vec![Denial {
            reason: format!(
                "`rm -r` of {} deletes a worktree kardwt manages without releasing its processes, cleanup hook and ports, and leaves its registration behind",
                managed.path.display()
            ),
            replacement: remove_command(&managed.path, force),
        }];
    }
    // A directory holding managed worktrees (the worktree root): remove those first.
    let inside = world.managed_within(&path).into_iter().map(|managed| Denial {
        reason: format!(
            "`rm -r` of {} deletes the worktree {} kardwt manages inside it without releasing it; remove it first, then run the rm again",
            path.display(),
            managed.display()
        ),
        replacement: remove_command(&managed, force),
    });
    // The base: its worktrees lose their repository.
    let of_base = world.managed_of_base(&path).into_iter().map(|managed| Denial {
        reason: format!(
            "`rm -r` of {} deletes the repository of the worktree {} kardwt manages without releasing it; remove it first, then run the rm again",
            path.display(),
            managed.display()
        ),
        replacement: remove_command(&managed, force),
    });
    inside.chain(of_base).collect()
}

/// `git kardwt remove --path '<path>' [--force]`, runnable from any directory.
pub(crate) fn remove_command(path: &Path, force: bool) -> String {
    let mut cmd = format!(
        "git kardwt remove --path {}",
        shell_quote(&path.to_string_lossy())
    );
    if force {
        cmd.push_str(" --force");
    }
    cmd
}

/// Single-quote `s` for a POSIX shell.
pub(crate) fn shell_quote(s: &str) -> String {
    crate::ground::quote::sh(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_of_replacement_survives_single_quotes() {
        assert_eq!(
            remove_command(Path::new("/a/it's"), true),
            r"git kardwt remove --path '/a/it'\''s' --force"
        );
    }
}
