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
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
    /// The words after the leading `NAME=value` assignments and any `command [-p] [--]`
    /// prefix: the command word and its args. `command -v`/`-V` (and any other option of
    /// `command`) only describe a command without running it: nothing, an empty argv.
    pub fn argv(&self) -> &[Word] {
        let n = self
            .words
            .iter()
            .take_while(|w| w.assignment_name().is_some())
            .count();
        let mut argv = &self.words[n..];
        while let Some((first, rest)) = argv.split_first() {
            if !(first.is_plain() && first.text == "command") {
                break;
            }
            argv = rest;
            while let Some((opt, rest)) = argv.split_first() {
                match opt.text.as_str() {
                    "--" if opt.is_plain() => {
                        argv = rest;
                        break;
                    }
                    t if opt.is_plain()
                        && t.strip_prefix('-')
                            .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b == b'p')) =>
                    {
                        argv = rest
                    }
                    t if t.starts_with('-') => return &[],
                    _ => break,
                }
            }
        }
        argv
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
/// and `..` are the world's to resolve. An answer should cost about the length of the path
/// asked about, not the depth of the directory it sits in, so that a line is judged in time
/// linear in its length.
pub trait World {
    /// The managed (verified) worktree `path` names, if it names one.
    fn managed_worktree(&self, path: &Path) -> Option<Managed>;
    /// The repository git would use: discovered from the directory `at`, or with `git_dir`
    /// the git directory `at` itself (`git --git-dir=…`); `None` when there is none.
    fn repository(&self, at: &Path, git_dir: bool) -> Option<Rc<Repository>>;
    /// Is `path` itself a symbolic link (not followed)?
    fn is_symlink(&self, path: &Path) -> bool;
    /// The managed worktrees directly inside `dir` (the worktree root holds them as
    /// `card-<id>`), sorted.
    fn managed_within(&self, dir: &Path) -> Vec<PathBuf>;
}

/// A worktree kardwt manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    /// Its recorded absolute path.
    pub path: PathBuf,
    /// The common dir of its repository (canonical).
    pub common_dir: PathBuf,
}

/// What the rules need to know of a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repository {
    /// Canonical.
    pub common_dir: PathBuf,
    /// The base and every linked worktree (for git's suffix lookup).
    pub worktree_paths: Vec<PathBuf>,
    /// It has a worktree kardwt manages whose directory is gone: an entry `git worktree prune`
    /// would drop before what its record holds is released.
    pub managed_gone: bool,
    /// Indexes into `worktree_paths` by last component, so a suffix lookup costs the length
    /// of the argument, not the number of worktrees.
    by_name: HashMap<OsString, Vec<usize>>,
}

impl Repository {
    pub fn new(common_dir: PathBuf, worktree_paths: Vec<PathBuf>, managed_gone: bool) -> Self {
        let mut by_name: HashMap<OsString, Vec<usize>> = HashMap::new();
        for (i, p) in worktree_paths.iter().enumerate() {
            if let Some(name) = p.file_name() {
                by_name.entry(name.to_owned()).or_default().push(i);
            }
        }
        Repository {
            common_dir,
            worktree_paths,
            managed_gone,
            by_name,
        }
    }

    /// The worktrees `suffix` ends at a directory boundary (git's `find_worktree_by_suffix`).
    fn suffixed<'r>(&'r self, suffix: &'r str) -> impl Iterator<Item = &'r PathBuf> + 'r {
        let last = suffix.rsplit('/').next().unwrap_or(suffix);
        self.by_name
            .get(OsStr::new(last))
            .into_iter()
            .flatten()
            .map(|&i| &self.worktree_paths[i])
            .filter(move |p| has_suffix(p, suffix))
    }
}

/// One denied command: why, and the exact command to run instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub reason: String,
    pub replacement: String,
}

/// What replaces `git worktree prune`: the gone entries only, their resources released.
pub const PRUNE_REPLACEMENT: &str = "git kardwt gc --apply --prunable";

/// The longest directory followed through `cd` and `git -C`. Only a pile of `cd`s gets past
/// it; the directory then counts as unknown (silence), so following stays linear in the line.
const DIR_MAX: usize = 4096;

/// Judge a whole command line run from `cwd` (absolute): the denials, empty for silence.
pub fn judge_line(line: &str, cwd: &Path, world: &dyn World) -> Vec<Denial> {
    match tokenize(line) {
        Ok(commands) => judge(&commands, cwd, world),
        Err(_) => Vec::new(),
    }
}

/// The rules, over parsed commands: `git worktree remove` and `rm -r` of a managed worktree,
/// `git worktree prune` in a repository with a managed worktree whose directory is gone.
/// Empty means silence.
pub fn judge(commands: &[Simple], cwd: &Path, world: &dyn World) -> Vec<Denial> {
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
        }
        let Some(first) = argv.first() else { continue };
        if first.expands {
            // `$CMD …` could be anything, a `cd` included.
            place.set(None);
            moved = true;
            continue;
        }
        match base_name(&first.text) {
            "cd" | "pushd" | "popd" => {
                moved = true;
                let to = match (&place.dir, in_pipeline) {
                    (Some(d), false) if first.text == "cd" => cd_target(d, &argv[1..]),
                    _ => None,
                };
                place.set(to);
            }
            "export" | "declare" | "typeset" | "local" | "readonly"
                if argv[1..]
                    .iter()
                    .any(|w| w.text.starts_with("GIT_") || w.text.starts_with("CDPATH")) =>
            {
                return Err(CannotJudge("exports a GIT_* or CDPATH variable"));
            }
            "git" if !first.globs => denials.extend(judge_git(&argv[1..], &mut place)?),
            "rm" if !first.globs => {
                denials.extend(judge_rm(&argv[1..], place.dir.as_deref(), world))
            }
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
fn judge_git(args: &[Word], place: &mut Place) -> Result<Option<Denial>, CannotJudge> {
    if args.iter().any(|w| !w.is_plain()) {
        return Ok(None);
    }
    let world = place.world;
    // `-C` moves this one git; `None` for `dir` means it is no longer known.
    let mut moved: Option<Option<PathBuf>> = None;
    let mut git_dir: Option<&str> = None;
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
            // The work tree and namespace change neither the repository nor which worktree
            // `worktree remove` names (its path is taken from where git was started).
            "-c" | "--config-env" | "--attr-source" | "--work-tree" | "--namespace" => i += 2,
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
            _ if [
                "--config-env=",
                "--attr-source=",
                "--work-tree=",
                "--namespace=",
            ]
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
    if args.get(i).map(|w| w.text.as_str()) != Some("worktree") {
        return Ok(None);
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
    let rest = &args[i + 1..];
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

/// git's `find_worktree_by_suffix`: `suffix` ends `path` at a directory boundary.
fn has_suffix(path: &Path, suffix: &str) -> bool {
    let path = path.to_string_lossy();
    path.strip_suffix(suffix)
        .is_some_and(|head| head.is_empty() || head.ends_with('/'))
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
    if !recursive || operands.iter().any(|w| !w.is_plain()) {
        return Vec::new();
    }
    // The same operand twice is judged once.
    let mut seen = HashSet::new();
    operands.retain(|w| seen.insert(w.text.as_str()));
    operands
        .iter()
        .filter_map(|w| {
            let trimmed = w.text.trim_end_matches('/');
            let slash = trimmed.len() != w.text.len();
            let trimmed = if trimmed.is_empty() && slash { "/" } else { trimmed };
            // rm refuses `.` and `..` as the last component.
            if trimmed.is_empty() || matches!(trimmed.rsplit('/').next(), Some("." | "..")) {
                return None;
            }
            let path = match dir {
                _ if Path::new(trimmed).is_absolute() => PathBuf::from(trimmed),
                Some(d) => d.join(trimmed),
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
                        managed.path.display()
                    ),
                    replacement: remove_command(&managed.path, force),
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
/// newline. The repository also has a managed worktree whose directory is gone (so `git
/// worktree prune` would drop its record). Commands run from the base.
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
git worktree prune => git kardwt gc --apply --prunable
git worktree prune -v --expire now => git kardwt gc --apply --prunable
git -C {B} worktree prune => git kardwt gc --apply --prunable
rm --rec {P} => git kardwt remove --path {P}
rm --recurs --for {P} => git kardwt remove --path {P} --force
rm --r -f --verb {P} => git kardwt remove --path {P} --force
rm --recursive --interactive=never --one {P} => git kardwt remove --path {P}
git --git-dir={B}/.git worktree remove {P} => git kardwt remove --path {P}
git --git-dir {B}/.git --work-tree={B} worktree remove card-42 => git kardwt remove --path {P}
cd / && git --git-dir={B}/.git worktree remove --force {Q} => git kardwt remove --path {Q} --force
git --work-tree /x worktree remove {P} => git kardwt remove --path {P}
git --git-dir={B}/.git worktree prune => git kardwt gc --apply --prunable
command rm -rf {P} => git kardwt remove --path {P} --force
command -p git worktree remove {P} => git kardwt remove --path {P}
command -- rm -r {Q} => git kardwt remove --path {Q}
cd {T}/base.worktrees || exit; rm -rf card-42 => git kardwt remove --path {P} --force
cd {T}/base.worktrees || exit 1 && git worktree remove card-7 => git kardwt remove --path {Q}
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
rm --v -r {P} =>
rm --recursive=yes {P} =>
rm -rf --help {P} =>
rm --rec --vers {P} =>
git --git-dir={B} worktree remove {P} =>
git --git-dir= worktree remove {P} =>
git --git-dir=/x/.git worktree prune =>
command -v rm -rf {P} =>
command -V git worktree remove {P} =>
cd {T}/base.worktrees || echo; rm -rf card-42 =>
cd {T}/base.worktrees || exit | cat; rm -rf card-42 =>
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
    use std::path::Component;

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
        fn managed_worktree(&self, path: &Path) -> Option<Managed> {
            let mut p = normalize(path);
            if p == at("link-to-42") {
                p = at("base.worktrees/card-42");
            }
            (p == at("base.worktrees/card-42") || p == at("base.worktrees/card-7")).then(|| {
                Managed {
                    path: p,
                    common_dir: at("base/.git"),
                }
            })
        }
        fn repository(&self, at_: &Path, git_dir: bool) -> Option<Rc<Repository>> {
            let p = normalize(at_);
            let found = if git_dir {
                p == at("base/.git")
            } else {
                p.starts_with(at("base"))
            };
            found.then(|| {
                Rc::new(Repository::new(
                    at("base/.git"),
                    ["base", "base.worktrees/card-42", "base.worktrees/card-7"]
                        .map(at)
                        .to_vec(),
                    true,
                ))
            })
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
    fn command_prefix_is_stripped_or_runs_nothing() {
        let argv = |line: &str| -> Vec<String> {
            tokenize(line).unwrap()[0]
                .argv()
                .iter()
                .map(|w| w.text.clone())
                .collect()
        };
        assert_eq!(argv("command rm -r x"), ["rm", "-r", "x"]);
        assert_eq!(argv("A=1 command -p -- command -pp git x"), ["git", "x"]);
        assert!(argv("command -v rm").is_empty());
        assert!(argv("command -pV rm").is_empty());
        assert_eq!(argv("command é x"), ["é", "x"]);
        assert_eq!(argv("command"), Vec::<String>::new());
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
    #[ignore = "fuzzer: make test-slow"]
    fn fuzz_never_panics() {
        #[rustfmt::skip]
        const PIECES: &[&str] = &[
            "git", "rm", "-rf", "worktree", "remove", "prune", "cd", "-C", " ", " ", "\t", "\n",
            "'", "\"", "\\", "$", "(", ")", "{", "}", "`", ";", "&", "|", "<", ">", "#", "~", "*",
            "=", "GIT_DIR=", "/t t/base.worktrees/card-42", "card-42", "..", "/", "-", "--",
            "2>&1", "é", "\u{0}", "-f", "&&", "||", "\\\n", "<<", ">(", "-c", "sudo",
            "command", "exit", "--rec", "--git-dir=",
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
