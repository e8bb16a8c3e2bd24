//! The guard's tokenizer: a command line, POSIX-quoted, into simple commands joined by
//! unquoted `;`, `&&`, `||`, `|` and newlines, or [`CannotJudge`] for any other shape
//! (substitutions, heredocs, compound commands, wrappers and interpreters). Pure: no disk.
//!
//! Redirections (`>file`, `2>&1`, `<in`, `&>log`, …) are accepted and dropped from argv: they
//! do not change what a command removes. Heredocs and here-strings (`<<`) and process
//! substitution are not accepted.

/// Marks in [`Word::pattern`] where a part not known until run time begins.
pub(crate) const UNKNOWN: char = '\0';

/// `c`, taken literally, as it goes into a glob pattern.
fn push_literal(pattern: &mut String, c: char) {
    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\' | UNKNOWN) {
        pattern.push('\\');
    }
    pattern.push(c);
}

/// Why a command line cannot be judged; it always means silence, the text helps tests and
/// debugging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CannotJudge(pub &'static str);

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word's text, quotes removed.
    pub text: String,
    /// It holds an unquoted or double-quoted `$` (parameter expansion) or a leading unquoted
    /// `~`: its value is not known until run time.
    pub expands: bool,
    /// It holds an unquoted glob or brace character (`*`, `?`, `[`, `{`, `}`): it may stand for
    /// other words than its text.
    pub globs: bool,
    /// The word as a glob pattern ([`super::glob`]): characters that were quoted and would
    /// mean something to globbing are escaped with `\`, and [`UNKNOWN`] stands where a `$`
    /// expansion or a leading `~` begins (what follows is not known until run time).
    pub pattern: String,
    /// The number of leading characters of `text` that were plain unquoted characters, so
    /// `NAME=value` is only an assignment when the `=` falls inside it.
    unquoted_prefix: usize,
}

impl Word {
    /// A literal word (what a plain unquoted `text` without special characters gives).
    pub(crate) fn literal(text: &str) -> Word {
        let mut pattern = String::new();
        text.chars().for_each(|c| push_literal(&mut pattern, c));
        Word {
            pattern,
            text: text.to_owned(),
            expands: false,
            globs: false,
            unquoted_prefix: text.chars().count(),
        }
    }

    /// Known before run time: no expansion and no globbing.
    pub(crate) fn is_plain(&self) -> bool {
        !self.expands && !self.globs
    }

    /// `NAME=value` (or `NAME+=value`) with the name unquoted: a variable assignment when it
    /// precedes the command word. Returns the name.
    pub(crate) fn assignment_name(&self) -> Option<&str> {
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
pub(crate) enum Joint {
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
pub(crate) struct Simple {
    pub after: Joint,
    pub words: Vec<Word>,
}

impl Simple {
    /// The words after the leading `NAME=value` assignments and any `command [-p] [--]`
    /// prefix: the command word and its args. `command -v`/`-V` (and any other option of
    /// `command`) only describe a command without running it: nothing, an empty argv.
    pub(crate) fn argv(&self) -> &[Word] {
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
    pub(crate) fn assignments(&self) -> impl Iterator<Item = &str> {
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
pub(crate) fn tokenize(line: &str) -> Result<Vec<Simple>, CannotJudge> {
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
pub(super) fn base_name(word: &str) -> &str {
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
        let mut pattern = String::new();
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
                                push_literal(&mut pattern, q);
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
                                push_literal(&mut pattern, e);
                                count += 1;
                                self.pos += 2;
                            }
                            (Some(q), _) => {
                                expands |= q == '$';
                                if q == '$' {
                                    pattern.push(UNKNOWN);
                                } else {
                                    push_literal(&mut pattern, q);
                                }
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
                        push_literal(&mut pattern, e);
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
                    pattern.push(UNKNOWN);
                    text.push(c);
                    count += 1;
                    self.pos += 1;
                }
                _ => {
                    if c == '~' && self.pos == start {
                        unquoted_prefix.get_or_insert(count);
                        expands = true;
                        pattern.push(UNKNOWN);
                    } else if c == UNKNOWN {
                        push_literal(&mut pattern, c);
                    } else {
                        pattern.push(c);
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
            pattern,
            text,
            expands,
            globs,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
