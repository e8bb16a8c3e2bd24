//! The agent command guard's pure core (SPEC R-GUARD): a POSIX-quoting tokenizer that accepts
//! exactly one shape (simple commands joined by unquoted `;`, `&&`, `||`, `|`, newlines) and
//! the rules that find, in those commands, a removal of a worktree kardwt manages. Nothing here
//! reads the disk or runs anything: the questions only the disk can answer go through [`World`].
//!
//! Invariant: anything the tokenizer or the rules cannot judge for certain ends in silence (no
//! [`Denial`]); a deny is only ever produced for a command whose argv was fully understood.
//!
//! Redirections (`>file`, `2>&1`, `<in`, `&>log`, …) are accepted and dropped from argv: they
//! do not change what a command removes. Heredocs and here-strings (`<<`) and process
//! substitution are not accepted.
use std::path::{Component, Path, PathBuf};

/// Why a command line cannot be judged; it always means silence, the text helps tests and
/// debugging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannotJudge(pub &'static str);

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word's text, quotes removed.
    pub text: String,
    /// It holds an unquoted or double-quoted `$` (parameter expansion) or a leading unquoted
    /// `~`: its value is not known until run time.
    pub expands: bool,
    /// It holds an unquoted glob or brace character (`*`, `?`, `[`, `{`, `}`): it may stand for
    /// other words than its text.
    pub globs: bool,
    /// The number of leading characters of `text` that were plain unquoted characters, so
    /// `NAME=value` is only an assignment when the `=` falls inside it.
    unquoted_prefix: usize,
}

impl Word {
    /// A literal word (what a plain unquoted `text` without special characters gives).
    pub fn literal(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            expands: false,
            globs: false,
            unquoted_prefix: text.chars().count(),
        }
    }

    /// Known before run time: no expansion and no globbing.
    pub fn is_plain(&self) -> bool {
        !self.expands && !self.globs
    }

    /// `NAME=value` (or `NAME+=value`) with the name unquoted: a variable assignment when it
    /// precedes the command word. Returns the name.
    pub fn assignment_name(&self) -> Option<&str> {
        let eq = self.text.find('=')?;
        if self.text[..eq].chars().count() >= self.unquoted_prefix {
            return None;
        }
        let name = self.text[..eq]
            .strip_suffix('+')
            .unwrap_or(&self.text[..eq]);
        let mut chars = name.chars();
        let first = chars.next()?;
        ((first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
    }
}

/// What joins a simple command to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joint {
    /// The first command of the line.
    Start,
    /// `;` or a newline.
    Then,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|`
    Pipe,
}

/// One simple command: its words (redirections removed) and what joins it to the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    pub after: Joint,
    pub words: Vec<Word>,
}

impl Simple {
    /// The words after the leading `NAME=value` assignments: the command word and its args.
    pub fn argv(&self) -> &[Word] {
        let n = self
            .words
            .iter()
            .take_while(|w| w.assignment_name().is_some())
            .count();
        &self.words[n..]
    }

    /// The names of the leading assignments.
    pub fn assignments(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map_while(Word::assignment_name)
    }
}

/// Shell reserved words: a command starting with one is a compound command we do not judge.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "time", "!", "[[", "]]", "{", "}", "coproc", "in",
];

/// Commands that run other commands (or redefine what names mean), so the argv we see is not
/// what finally runs. Matched on the command word's base name.
const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "su",
    "env",
    "xargs",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "exec",
    "command",
    "builtin",
    "eval",
    "source",
    ".",
    "watch",
    "parallel",
    "stdbuf",
    "setsid",
    "chroot",
    "flock",
    "unbuffer",
    "script",
    "strace",
    "ltrace",
    "busybox",
    "toybox",
    "time",
    "trap",
    "alias",
    "enable",
    "hash",
    "shopt",
    "ssh",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "perl",
    "ruby",
    "node",
    "deno",
    "bun",
    "php",
    "lua",
    "tclsh",
    "osascript",
];

/// Split `line` into simple commands, or say why it cannot be judged.
pub fn tokenize(line: &str) -> Result<Vec<Simple>, CannotJudge> {
    let mut lexer = Lexer {
        chars: line.chars().collect(),
        pos: 0,
    };
    let mut commands = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut after = Joint::Start;
    loop {
        lexer.skip_blanks();
        let Some(c) = lexer.peek(0) else { break };
        let joint = match (c, lexer.peek(1)) {
            (';', Some(';')) => return Err(CannotJudge("`;;` (case)")),
            (';' | '\n', _) => Some((Joint::Then, 1)),
            ('&', Some('&')) => Some((Joint::And, 2)),
            ('|', Some('|')) => Some((Joint::Or, 2)),
            ('|', Some('&')) => return Err(CannotJudge("`|&`")),
            ('|', _) => Some((Joint::Pipe, 1)),
            ('&', Some('>')) => None,
            ('&', _) => return Err(CannotJudge("background `&`")),
            _ => None,
        };
        if let Some((joint, len)) = joint {
            lexer.pos += len;
            if words.is_empty() {
                // A blank line (also after `&&`, `||`, `|`) is fine; `;` or an operator with
                // no command before it is a syntax error, or something we do not parse.
                if c == '\n' {
                    continue;
                }
                return Err(CannotJudge("an operator without a command before it"));
            }
            commands.push(finish(after, std::mem::take(&mut words))?);
            after = joint;
            continue;
        }
        if lexer.at_redirection() {
            lexer.redirection()?;
            continue;
        }
        if let Some(word) = lexer.word()? {
            words.push(word);
        }
    }
    if words.is_empty() {
        if matches!(after, Joint::And | Joint::Or | Joint::Pipe) {
            return Err(CannotJudge("the line ends with an operator"));
        }
    } else {
        commands.push(finish(after, words)?);
    }
    Ok(commands)
}

/// Check a finished simple command for keywords and wrappers.
fn finish(after: Joint, words: Vec<Word>) -> Result<Simple, CannotJudge> {
    let simple = Simple { after, words };
    if let Some(cmd) = simple.argv().first() {
        if KEYWORDS.contains(&cmd.text.as_str()) {
            return Err(CannotJudge("a shell keyword"));
        }
        let name = base_name(&cmd.text);
        let runs_commands = name == "find"
            && simple.argv()[1..].iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete"
                )
            });
        if runs_commands
            || WRAPPERS.contains(&name)
            || name.starts_with("python")
            || name.starts_with("pypy")
        {
            return Err(CannotJudge("a wrapper or interpreter"));
        }
    }
    Ok(simple)
}

/// The last `/`-separated component of a command word.
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(' ' | '\t'), _) => self.pos += 1,
                (Some('\\'), Some('\n')) => self.pos += 2,
                _ => return,
            }
        }
    }

    /// At `<`, `>`, `&>` or a file descriptor number directly followed by one of them.
    fn at_redirection(&self) -> bool {
        let digits = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        matches!(self.peek(digits), Some('<' | '>'))
            || (digits == 0 && self.peek(0) == Some('&') && self.peek(1) == Some('>'))
    }

    /// Consume a redirection operator and its target word.
    fn redirection(&mut self) -> Result<(), CannotJudge> {
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.peek(0) == Some('&') {
            self.pos += 1;
        }
        let op = self.peek(0);
        self.pos += 1;
        match (op, self.peek(0)) {
            (Some('<'), Some('<')) => return Err(CannotJudge("a heredoc or here-string")),
            (_, Some('(')) => return Err(CannotJudge("process substitution")),
            (Some('>'), Some('>' | '|' | '&')) | (Some('<'), Some('&' | '>')) => self.pos += 1,
            _ => {}
        }
        if self.peek(0) == Some('(') {
            return Err(CannotJudge("process substitution"));
        }
        self.skip_blanks();
        match self.peek(0) {
            None | Some(';' | '\n' | '&' | '|' | '<' | '>') => {
                Err(CannotJudge("a redirection without a target"))
            }
            _ => self.word().map(|_| ()),
        }
    }

    /// Read one word from the current position; `None` when it turned out empty of text and
    /// quotes (cannot happen for a well-formed start, kept for robustness).
    fn word(&mut self) -> Result<Option<Word>, CannotJudge> {
        let mut text = String::new();
        let mut expands = false;
        let mut globs = false;
        let mut quoted = false;
        let mut unquoted_prefix: Option<usize> = None;
        let mut count = 0usize;
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' => break,
                '(' | ')' => return Err(CannotJudge("a subshell, function or `$(`")),
                '`' => return Err(CannotJudge("command substitution")),
                '#' if self.pos == start => return Err(CannotJudge("a comment")),
                '\'' => {
                    unquoted_prefix.get_or_insert(count);
                    quoted = true;
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err(CannotJudge("an unclosed single quote")),
                            Some('\'') => break,
                            Some(q) => {
                                text.push(q);
                                count += 1;
                                self.pos += 1;
                            }
                        }
                    }
                    self.pos += 1;
                }
                '"' => {
                    unquoted_prefix.get_or_insert(count);
                    quoted = true;
                    self.pos += 1;
                    loop {
                        match (self.peek(0), self.peek(1)) {
                            (None, _) => return Err(CannotJudge("an unclosed double quote")),
                            (Some('"'), _) => break,
                            (Some('`'), _) => return Err(CannotJudge("command substitution")),
                            (Some('$'), Some('(')) => {
                                return Err(CannotJudge("command substitution"))
                            }
                            (Some('\\'), Some('\n')) => self.pos += 2,
                            (Some('\\'), Some(e @ ('"' | '\\' | '$' | '`'))) => {
                                text.push(e);
                                count += 1;
                                self.pos += 2;
                            }
                            (Some(q), _) => {
                                expands |= q == '$';
                                text.push(q);
                                count += 1;
                                self.pos += 1;
                            }
                        }
                    }
                    self.pos += 1;
                }
                '\\' => match self.peek(1) {
                    None => return Err(CannotJudge("a trailing backslash")),
                    Some('\n') => self.pos += 2,
                    Some(e) => {
                        unquoted_prefix.get_or_insert(count);
                        quoted = true;
                        text.push(e);
                        count += 1;
                        self.pos += 2;
                    }
                },
                '$' => {
                    match self.peek(1) {
                        Some('(') => return Err(CannotJudge("command substitution")),
                        Some('\'' | '"') => return Err(CannotJudge("`$'…'` or `$\"…\"` quoting")),
                        _ => {}
                    }
                    unquoted_prefix.get_or_insert(count);
                    expands = true;
                    text.push(c);
                    count += 1;
                    self.pos += 1;
                }
                _ => {
                    if c == '~' && self.pos == start {
                        unquoted_prefix.get_or_insert(count);
                        expands = true;
                    }
                    if matches!(c, '*' | '?' | '[' | '{' | '}') {
                        globs = true;
                    }
                    text.push(c);
                    count += 1;
                    self.pos += 1;
                }
            }
        }
        if text.is_empty() && !quoted {
            // Only line continuations: nothing to add.
            return Ok(None);
        }
        Ok(Some(Word {
            unquoted_prefix: unquoted_prefix.unwrap_or(count),
            text,
            expands,
            globs,
        }))
    }
}

/// What only the disk can answer. Paths handed in are absolute but not normalized: symlinks
/// and `..` are the world's to resolve.
pub trait World {
    /// The absolute path of the managed (verified) worktree `path` names, if it names one.
    fn managed_worktree(&self, path: &Path) -> Option<PathBuf>;
    /// Does the repository containing `dir` have worktrees kardwt manages (records)?
    fn has_managed_worktrees(&self, dir: &Path) -> bool;
    /// Every worktree path of the repository containing `dir` (for git's suffix lookup).
    fn worktree_paths(&self, dir: &Path) -> Vec<PathBuf>;
    /// Is `path` itself a symbolic link (not followed)?
    fn is_symlink(&self, path: &Path) -> bool;
    /// The managed worktrees directly inside `dir` (the worktree root holds them as
    /// `card-<id>`), sorted.
    fn managed_within(&self, dir: &Path) -> Vec<PathBuf>;
}

/// One denied command: why, and the exact command to run instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub reason: String,
    pub replacement: String,
}

/// Judge a whole command line run from `cwd` (absolute): the denials, empty for silence.
pub fn judge_line(line: &str, cwd: &Path, world: &dyn World) -> Vec<Denial> {
    match tokenize(line) {
        Ok(commands) => judge(&commands, cwd, world),
        Err(_) => Vec::new(),
    }
}

/// The rules, over parsed commands: `git worktree remove` and `rm -r` of a managed worktree,
/// `git worktree prune` in a repository with managed worktrees. Empty means silence.
pub fn judge(commands: &[Simple], cwd: &Path, world: &dyn World) -> Vec<Denial> {
    match judge_all(commands, cwd, world) {
        Ok(mut denials) => {
            let mut seen = Vec::new();
            denials.retain(|d| {
                let new = !seen.contains(&d.replacement);
                seen.push(d.replacement.clone());
                new
            });
            denials
        }
        Err(_) => Vec::new(),
    }
}

fn judge_all(
    commands: &[Simple],
    cwd: &Path,
    world: &dyn World,
) -> Result<Vec<Denial>, CannotJudge> {
    let mut denials = Vec::new();
    // `None`: the directory is no longer known (a `cd` we cannot follow).
    let mut dir = Some(cwd.to_path_buf());
    let mut moved = false;
    for (i, cmd) in commands.iter().enumerate() {
        if cmd.assignments().any(|n| n.starts_with("GIT_")) {
            return Err(CannotJudge("a GIT_* variable changes what git does"));
        }
        // After `||` the command runs only when the left side failed, maybe before its `cd`.
        if cmd.after == Joint::Or && moved {
            dir = None;
        }
        let in_pipeline =
            cmd.after == Joint::Pipe || commands.get(i + 1).is_some_and(|n| n.after == Joint::Pipe);
        let argv = cmd.argv();
        let Some(first) = argv.first() else { continue };
        if first.expands {
            // `$CMD …` could be anything, a `cd` included.
            dir = None;
            moved = true;
            continue;
        }
        match base_name(&first.text) {
            "cd" | "pushd" | "popd" => {
                moved = true;
                dir = match (&dir, in_pipeline) {
                    (Some(d), false) if first.text == "cd" => cd_target(d, &argv[1..]),
                    _ => None,
                };
            }
            "export" | "declare" | "typeset" | "local" | "readonly"
                if argv[1..]
                    .iter()
                    .any(|w| w.text.starts_with("GIT_") || w.text.starts_with("CDPATH")) =>
            {
                return Err(CannotJudge("exports a GIT_* or CDPATH variable"));
            }
            "git" if !first.globs => denials.extend(judge_git(&argv[1..], dir.as_deref(), world)?),
            "rm" if !first.globs => denials.extend(judge_rm(&argv[1..], dir.as_deref(), world)),
            _ => {}
        }
    }
    Ok(denials)
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

/// `git [global options] worktree remove|prune …`.
fn judge_git(
    args: &[Word],
    dir: Option<&Path>,
    world: &dyn World,
) -> Result<Option<Denial>, CannotJudge> {
    if args.iter().any(|w| !w.is_plain()) {
        return Ok(None);
    }
    let mut dir = dir.map(Path::to_path_buf);
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let w = w.text.as_str();
        match w {
            "-C" => {
                let Some(to) = args.get(i + 1) else {
                    return Ok(None);
                };
                if !to.text.is_empty() {
                    dir = match dir {
                        Some(d) => Some(d.join(&to.text)),
                        None if Path::new(&to.text).is_absolute() => Some(PathBuf::from(&to.text)),
                        None => None,
                    };
                }
                i += 2;
            }
            "-c" | "--config-env" | "--attr-source" => i += 2,
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
            _ if w.starts_with("--config-env=") || w.starts_with("--attr-source=") => i += 1,
            _ if [
                "--git-dir",
                "--work-tree",
                "--namespace",
                "--bare",
                "--exec-path",
            ]
            .iter()
            .any(|o| w == *o || w.starts_with(&format!("{o}="))) =>
            {
                return Err(CannotJudge(
                    "git told to use another repository or worktree",
                ))
            }
            _ if w.starts_with('-') => return Ok(None),
            _ => break,
        }
    }
    if args.get(i).map(|w| w.text.as_str()) != Some("worktree") {
        return Ok(None);
    }
    let rest = &args[i + 1..];
    Ok(match rest.first().map(|w| w.text.as_str()) {
        Some("remove") => judge_worktree_remove(&rest[1..], dir.as_deref(), world),
        Some("prune") => dir.and_then(|d| judge_worktree_prune(&rest[1..], &d, world)),
        _ => None,
    })
}

fn judge_worktree_remove(args: &[Word], dir: Option<&Path>, world: &dyn World) -> Option<Denial> {
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
    let [arg] = operands[..] else { return None };
    if arg.is_empty() {
        return None;
    }
    // git looks the argument up as a unique path suffix among the repository's worktrees
    // first, then as a path (worktree.c, find_worktree). An absolute argument can only be a
    // suffix of itself, so it needs no directory.
    let target = match dir {
        Some(dir) => {
            let mut suffixed = world
                .worktree_paths(dir)
                .into_iter()
                .filter(|p| has_suffix(p, arg));
            match (suffixed.next(), suffixed.next()) {
                (Some(one), None) => one,
                _ => dir.join(arg),
            }
        }
        None if Path::new(arg).is_absolute() => PathBuf::from(arg),
        None => return None,
    };
    let managed = world.managed_worktree(&target)?;
    Some(Denial {
        reason: format!(
            "`git worktree remove` of {} skips kardwt's release steps (its processes, cleanup hook and ports are left behind)",
            managed.display()
        ),
        replacement: remove_command(&managed, force),
    })
}

/// git's `find_worktree_by_suffix`: `suffix` ends `path` at a directory boundary.
fn has_suffix(path: &Path, suffix: &str) -> bool {
    let path = path.to_string_lossy();
    path.strip_suffix(suffix)
        .is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

fn judge_worktree_prune(args: &[Word], dir: &Path, world: &dyn World) -> Option<Denial> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-n" | "--dry-run" => return None,
            "-v" | "--verbose" => i += 1,
            "--expire" => i += 2,
            t if t.starts_with("--expire=") => i += 1,
            _ => return None,
        }
    }
    world.has_managed_worktrees(dir).then(|| Denial {
        reason: format!(
            "`git worktree prune` in {} drops kardwt's records of vanished worktrees before what they held is released",
            dir.display()
        ),
        replacement: "git kardwt gc --apply".to_owned(),
    })
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
        match t {
            "--" => options_done = true,
            "--recursive" => recursive = true,
            "--force" => force = true,
            "--dir" | "--verbose" | "--one-file-system" | "--no-preserve-root"
            | "--interactive" | "--preserve-root" => {}
            _ if t.starts_with("--interactive=") || t.starts_with("--preserve-root=") => {}
            _ if t.starts_with("--") => return Vec::new(),
            _ => {
                for c in t[1..].chars() {
                    match c {
                        'r' | 'R' => recursive = true,
                        'f' => force = true,
                        'i' | 'I' | 'v' | 'd' => {}
                        _ => return Vec::new(),
                    }
                }
            }
        }
    }
    if !recursive || operands.iter().any(|w| !w.is_plain()) {
        return Vec::new();
    }
    operands
        .iter()
        .filter_map(|w| {
            let trimmed = w.text.trim_end_matches('/');
            let slash = trimmed.len() != w.text.len();
            let trimmed = if trimmed.is_empty() && slash { "/" } else { trimmed };
            // rm refuses `.` and `..` as the last component.
            if trimmed.is_empty()
                || matches!(
                    Path::new(trimmed).components().next_back(),
                    Some(Component::CurDir | Component::ParentDir)
                )
                || trimmed.ends_with("/.")
                || trimmed == "."
            {
                return None;
            }
            let path = match dir {
                Some(d) => d.join(trimmed),
                None if Path::new(trimmed).is_absolute() => PathBuf::from(trimmed),
                None => return None,
            };
            // Without a trailing slash, `rm -r link` removes the link, not what it points to.
            if !slash && world.is_symlink(&path) {
                return None;
            }
            if let Some(managed) = world.managed_worktree(&path) {
                return Some(vec![Denial {
                    reason: format!(
                        "`rm -r` of {} deletes a worktree kardwt manages without releasing its processes, cleanup hook and ports, and leaves its registration behind",
                        managed.display()
                    ),
                    replacement: remove_command(&managed, force),
                }]);
            }
            // A directory holding managed worktrees (the worktree root): remove those first.
            let inside = world.managed_within(&path);
            Some(
                inside
                    .iter()
                    .map(|managed| Denial {
                        reason: format!(
                            "`rm -r` of {} deletes the worktree {} kardwt manages inside it without releasing it; remove it first, then run the rm again",
                            path.display(),
                            managed.display()
                        ),
                        replacement: remove_command(managed, force),
                    })
                    .collect(),
            )
        })
        .flatten()
        .collect()
}

/// `git kardwt remove --path '<path>' [--force]`, runnable from any directory.
pub fn remove_command(path: &Path, force: bool) -> String {
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
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guard's table of examples, shared by the unit tests (a fake disk) and the end-to-end
/// test (a real repository): `command => replacement`, an empty replacement meaning silence.
/// Placeholders: `{P}`/`{p}` the managed worktree of card 42 (shell-quoted/raw), `{Q}` that of
/// card 7, `{T}`/`{t}` the directory holding the base (`{T}/base`) and the worktree root
/// (`{T}/base.worktrees`), `{B}` the base; `{T}/link-to-42` is a symlink to `{P}`; `{NL}` is a
/// newline. Commands run from the base.
#[doc(hidden)]
pub const EXAMPLES: &str = r#"
git worktree remove {P} => git kardwt remove --path {P}
/usr/bin/git worktree remove {P} => git kardwt remove --path {P}
git -c k=v worktree remove {P} => git kardwt remove --path {P}
git -C {B} worktree remove ../base.worktrees/card-42 => git kardwt remove --path {P}
git -C .. -C base.worktrees worktree remove card-42 => git kardwt remove --path {P}
cd /tmp && git worktree remove {P} => git kardwt remove --path {P}
cd .. && git worktree remove base.worktrees/card-42 => git kardwt remove --path {P}
cd {T}; git worktree remove ./base.worktrees/card-42/ => git kardwt remove --path {P}
git worktree remove card-42 => git kardwt remove --path {P}
git worktree remove --force {P} => git kardwt remove --path {P} --force
git worktree remove -f -f {P} => git kardwt remove --path {P} --force
git worktree remove -ff -- {P} => git kardwt remove --path {P} --force
git --no-pager -P worktree remove ../base.worktrees/card-42 => git kardwt remove --path {P}
git worktree remove "{p}" => git kardwt remove --path {P}
\git worktree remove {Q} => git kardwt remove --path {Q}
FOO=1 git worktree remove {P} => git kardwt remove --path {P}
echo $HOME && git worktree remove {P} => git kardwt remove --path {P}
ls | grep x; git worktree remove {P} 2>&1 | tail -1 => git kardwt remove --path {P}
git worktree remove {P} >/dev/null 2>&1 => git kardwt remove --path {P}
git status{NL}git worktree remove {P} => git kardwt remove --path {P}
rm -rf {P} => git kardwt remove --path {P} --force
rm -r -f {P}/ => git kardwt remove --path {P} --force
rm -fr ../base.worktrees/card-42 => git kardwt remove --path {P} --force
rm -R {P} => git kardwt remove --path {P}
rm --recursive --force -- {P} => git kardwt remove --path {P} --force
rm -vrf {Q} => git kardwt remove --path {Q} --force
rm {P} -r => git kardwt remove --path {P}
/bin/rm -rf {P} => git kardwt remove --path {P} --force
rm -rf {T}/base.worktrees => git kardwt remove --path {P} --force && git kardwt remove --path {Q} --force
cd {T} && rm -r base.worktrees/ => git kardwt remove --path {P} && git kardwt remove --path {Q}
cd {T}/base.worktrees && rm -rf card-42 => git kardwt remove --path {P} --force
rm -rf {T}/link-to-42/ => git kardwt remove --path {P} --force
git worktree remove {P} || true => git kardwt remove --path {P}
git -C {T} worktree remove base.worktrees/card-42 => git kardwt remove --path {P}
cd {T} && cd base.worktrees && git worktree remove card-7 => git kardwt remove --path {Q}
git --no-optional-locks worktree remove {P} => git kardwt remove --path {P}
git worktree remove {Q}; echo done => git kardwt remove --path {Q}
rm -Rf {Q}/ => git kardwt remove --path {Q} --force
rm -rf -- {P} => git kardwt remove --path {P} --force
true && rm -rf {P} => git kardwt remove --path {P} --force
git worktree prune => git kardwt gc --apply
git worktree prune -v --expire now => git kardwt gc --apply
git -C {B} worktree prune => git kardwt gc --apply
printf '%s' "git worktree remove {p}" =>
echo 'rm -rf {p}' =>
git worktree remove $(echo {P}) =>
git worktree remove `echo {P}` =>
cat <<EOF{NL}git worktree remove {p}{NL}EOF =>
sudo git worktree remove {P} =>
bash -c 'git worktree remove {p}' =>
sh -c "rm -rf {p}" =>
python3 -c 'import shutil; shutil.rmtree("{p}")' =>
env git worktree remove {P} =>
xargs rm -rf < list =>
eval 'git worktree remove {p}' =>
timeout 5 git worktree remove {P} =>
if true; then git worktree remove {P}; fi =>
for d in a; do rm -rf {P}; done =>
(git worktree remove {P}) =>
{ git worktree remove {P}; } =>
f() { rm -rf {P}; } =>
ls # git worktree remove {P} =>
git worktree remove $WT =>
git worktree remove "$WT" =>
git worktree remove ${WT} =>
git worktree remove /not/managed =>
git worktree add ../x -b card/1 =>
git worktree list =>
git worktree remove {P} & =>
GIT_DIR=/elsewhere git worktree remove {P} =>
git --git-dir=/x/.git worktree remove {P} =>
git --work-tree /x worktree remove {P} =>
cd $DIR && git worktree remove base.worktrees/card-42 =>
cd && git worktree remove card-42/x =>
cd - && git worktree prune =>
cd {T}/base.worktrees || git worktree remove card-42/ =>
rm -f {P} =>
rm -d {P} =>
rm -rf {P}/src =>
rm -rf {T}/base.worktrees/card-* =>
rm -rf ~/x =>
rm -rf {T}/link-to-42 =>
rm -rf {P}/. =>
git worktree prune --dry-run =>
cd / && git worktree prune =>
git worktree remove {P} {T}/other =>
git worktree remove 'unclosed =>
git worktree remove {P} && =>
git worktree remove <(echo) =>
git worktree remove {P} <<< x =>
$GIT worktree remove {P} =>
export GIT_DIR=/x; git worktree remove {P} =>
git wt remove {P} =>
time git worktree remove {P} =>
! git worktree remove {P} =>
find {T} -name card-42 -exec rm -rf {} + =>
git worktree remove $'{p}' =>
=>
"#;

/// The examples as (command, replacement) pairs with the placeholders filled in.
#[doc(hidden)]
pub fn examples(tmp: &Path) -> Vec<(String, String)> {
    let q = |p: PathBuf| shell_quote(&p.to_string_lossy());
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
    EXAMPLES
        .lines()
        .filter_map(|l| l.rsplit_once("=>"))
        .map(|(cmd, rep)| (fill(cmd.trim()), fill(rep.trim())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "/t t";

    /// A fake disk: managed worktrees `card-42` and `card-7`, a repository at `{T}/base` with
    /// them, and the symlink `{T}/link-to-42`.
    struct Fake;

    /// Resolve `.` and `..` lexically (the fake has no symlinks on the way).
    fn normalize(p: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                c => out.push(c),
            }
        }
        out
    }

    fn at(rel: &str) -> PathBuf {
        Path::new(T).join(rel)
    }

    impl World for Fake {
        fn managed_worktree(&self, path: &Path) -> Option<PathBuf> {
            let mut p = normalize(path);
            if p == at("link-to-42") {
                p = at("base.worktrees/card-42");
            }
            (p == at("base.worktrees/card-42") || p == at("base.worktrees/card-7")).then_some(p)
        }
        fn has_managed_worktrees(&self, dir: &Path) -> bool {
            normalize(dir).starts_with(at("base"))
        }
        fn worktree_paths(&self, dir: &Path) -> Vec<PathBuf> {
            if normalize(dir).starts_with(at("base")) {
                ["base", "base.worktrees/card-42", "base.worktrees/card-7"]
                    .map(at)
                    .to_vec()
            } else {
                Vec::new()
            }
        }
        fn is_symlink(&self, path: &Path) -> bool {
            normalize(path) == at("link-to-42")
        }
        fn managed_within(&self, dir: &Path) -> Vec<PathBuf> {
            if normalize(dir) == at("base.worktrees") {
                vec![at("base.worktrees/card-42"), at("base.worktrees/card-7")]
            } else {
                Vec::new()
            }
        }
    }

    fn run(line: &str) -> Vec<Denial> {
        judge_line(line, &at("base"), &Fake)
    }

    fn replacements(denials: &[Denial]) -> String {
        denials
            .iter()
            .map(|d| d.replacement.as_str())
            .collect::<Vec<_>>()
            .join(" && ")
    }

    #[test]
    fn examples_table() {
        let table = examples(Path::new(T));
        let denied = table.iter().filter(|(_, r)| !r.is_empty()).count();
        assert!(
            denied >= 25 && table.len() - denied >= 25,
            "{denied} of {}",
            table.len()
        );
        let mut wrong = Vec::new();
        for (line, want) in &table {
            let got = replacements(&run(line));
            if got != *want {
                wrong.push(format!(
                    "{line:?}\n   want {want:?}\n   got  {got:?} ({:?})",
                    tokenize(line)
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn multiple_operands_give_one_replacement_each() {
        let got = run("rm -rf '/t t/base.worktrees/card-42' /t\\ t/base.worktrees/card-7 '/t t/base.worktrees/card-42/'");
        assert_eq!(
            replacements(&got),
            "git kardwt remove --path '/t t/base.worktrees/card-42' --force && git kardwt remove --path '/t t/base.worktrees/card-7' --force"
        );
    }

    fn texts(line: &str) -> Vec<(Joint, Vec<String>)> {
        tokenize(line)
            .unwrap()
            .into_iter()
            .map(|s| (s.after, s.words.into_iter().map(|w| w.text).collect()))
            .collect()
    }

    #[test]
    fn tokenizer_splits_and_unquotes() {
        use Joint::*;
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            texts(r#"a 'b c'"d\"e" f\ g && h||i | j;k"#),
            vec![
                (Start, v(&["a", "b cd\"e", "f g"])),
                (And, v(&["h"])),
                (Or, v(&["i"])),
                (Pipe, v(&["j"])),
                (Then, v(&["k"]))
            ]
        );
        assert_eq!(
            texts(r#"echo "a\b\$c\`\\""#),
            vec![(Start, v(&["echo", "a\\b$c`\\"]))]
        );
        assert_eq!(
            texts("a \\\n b\n\nc;"),
            vec![(Start, v(&["a", "b"])), (Then, v(&["c"]))]
        );
        assert_eq!(
            texts("a >out 2>&1 <in b &>log c>>x"),
            vec![(Start, v(&["a", "b", "c"]))]
        );
        assert_eq!(texts("a '' \"\""), vec![(Start, v(&["a", "", ""]))]);
        assert_eq!(texts("a#b c"), vec![(Start, v(&["a#b", "c"]))]);
        assert_eq!(texts(""), vec![]);
    }

    #[test]
    fn tokenizer_flags_expansion_and_assignments() {
        let cmds = tokenize(r#"A=1 "B=2" c=$x d '$e' "$f" ~/g h*"#).unwrap();
        let w = &cmds[0].words;
        assert_eq!(w[0].assignment_name(), Some("A"));
        assert_eq!(w[1].assignment_name(), None);
        assert_eq!(cmds[0].argv()[0].text, "B=2");
        assert!(w[2].expands && w[2].assignment_name() == Some("c"));
        assert!(!w[4].expands && w[5].expands && w[6].expands && w[7].globs);
    }

    #[test]
    fn tokenizer_refuses_what_it_cannot_judge() {
        for line in [
            "a $(b)",
            "a `b`",
            "a \"$(b)\"",
            "a <(b)",
            "a >(b)",
            "a <<EOF",
            "a <<<x",
            "# c",
            "a #c",
            "(a)",
            "a && (b)",
            "{ a; }",
            "if a; then b; fi",
            "while a; do b; done",
            "case a in b) c;; esac",
            "f() { a; }",
            "function f { a; }",
            "a &",
            "a |& b",
            "a 'b",
            "a \"b",
            "a \\",
            "a &&",
            "&& a",
            "a ;; b",
            "; a",
            "sudo a",
            "/usr/bin/env a",
            "bash -c a",
            "python3.12 -c a",
            "exec a",
            "a > ",
            "A=1 sudo rm -rf x",
            "a $'x'",
            "a $\"x\"",
            "time a",
            "! a",
            "[[ a ]]",
            "nohup a",
            "watch a",
        ] {
            assert!(
                tokenize(line).is_err(),
                "should not judge {line:?}: {:?}",
                tokenize(line)
            );
        }
    }

    #[test]
    fn quoting_of_replacement_survives_single_quotes() {
        assert_eq!(
            remove_command(Path::new("/a/it's"), true),
            r"git kardwt remove --path '/a/it'\''s' --force"
        );
    }

    /// xorshift64*: deterministic, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn fuzz_never_panics() {
        #[rustfmt::skip]
        const PIECES: &[&str] = &[
            "git", "rm", "-rf", "worktree", "remove", "prune", "cd", "-C", " ", " ", "\t", "\n",
            "'", "\"", "\\", "$", "(", ")", "{", "}", "`", ";", "&", "|", "<", ">", "#", "~", "*",
            "=", "GIT_DIR=", "/t t/base.worktrees/card-42", "card-42", "..", "/", "-", "--",
            "2>&1", "é", "\u{0}", "-f", "&&", "||", "\\\n", "<<", ">(", "-c", "sudo",
        ];
        let table = examples(Path::new(T));
        let mut denied = 0;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let n = (rng.next() % 24) as usize;
            // Half the lines are mutations of the examples (so denials happen), half noise.
            let mut line = if rng.next().is_multiple_of(2) {
                table[(rng.next() % table.len() as u64) as usize].0.clone()
            } else {
                String::new()
            };
            for _ in 0..if line.is_empty() { n } else { n % 3 } {
                let piece = if rng.next().is_multiple_of(8) {
                    char::from_u32((rng.next() % 0x3000) as u32)
                        .unwrap_or('?')
                        .to_string()
                } else {
                    PIECES[(rng.next() % PIECES.len() as u64) as usize].to_owned()
                };
                let at: Vec<usize> = line
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain([line.len()])
                    .collect();
                line.insert_str(at[(rng.next() % at.len() as u64) as usize], &piece);
            }
            let denials = run(&line);
            // The invariant: a line the tokenizer cannot judge is never denied.
            assert!(
                tokenize(&line).is_ok() || denials.is_empty(),
                "{line:?} denied: {denials:?}"
            );
            denied += usize::from(!denials.is_empty());
            let bytes: Vec<u8> = (0..n * 3).map(|_| rng.next() as u8).collect();
            let _ = run(&String::from_utf8_lossy(&bytes));
        }
        assert!(denied > 1000, "only {denied} fuzzed lines were denied");
    }
}
