//! The one quoting function for every command kardwt suggests or writes for a shell (hints,
//! retry commands, the guard's replacements, the hook shims' binary line): a word of only
//! characters no shell treats specially stays bare, anything else goes in single quotes with a
//! `'` inside written as `'\''`, so any path (spaces, quotes, `$`, newlines) pastes back as the
//! same word (pure). Also how any text from outside (a committed file name, a record's field)
//! is shown to a person: [`visible`], every control character written out as an escape.
use std::borrow::Cow;
use std::path::Path;

/// `word` as one sh word.
pub fn sh(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A path as one sh word (lossy for bytes that are not UTF-8, as every message is).
pub fn sh_path(path: &Path) -> String {
    sh(&path.to_string_lossy())
}

/// `text` with every character that could move the cursor, erase or hide text on a terminal
/// written out instead: control characters (`\e`, `\r`, `\n`, `\t`, else `\xNN` or
/// `\u{NNNN}`), the invisible and direction-changing format characters, and `\` itself
/// (`\\`), so what is shown is unambiguous. Text with none of them is returned as it is.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\x1b' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && needs_escape(c) => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`visible`], cut to at most `max` characters with `…`: a value from outside as an error
/// message quotes it.
pub fn shown(text: &str, max: usize) -> String {
    let seen = visible(text);
    if seen.chars().count() <= max {
        return seen.into_owned();
    }
    let mut cut: String = seen.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}'
            | '\u{feff}' | '\u{061c}' | '\u{00ad}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_text_hides_nothing_and_leaves_plain_text_alone() {
        assert!(matches!(visible("tools/kardwt/prepare"), Cow::Borrowed(_)));
        assert_eq!(visible("a\u{1b}[1Ab\rc\nd\te"), r"a\e[1Ab\rc\nd\te");
        assert_eq!(visible("x\u{7f}\u{9b}\u{202e}y"), r"x\x7f\x9b\u{202e}y");
        assert_eq!(visible(r"a\e"), r"a\\e");
        assert_eq!(visible("é 日本"), "é 日本");
        let escaped = visible("\u{1b}]0;x\u{7}");
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
        assert_eq!(shown("abcdef", 4), "abc…");
        assert_eq!(shown("a\u{1b}", 40), r"a\e");
    }

    #[test]
    fn a_quoted_word_survives_sh() {
        for word in ["plain", "with space", "it's", "$HOME `x` \"q\"", "a\nb", ""] {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", sh(word))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word);
        }
        assert_eq!(sh("/a/it's"), r"'/a/it'\''s'");
        assert_eq!(sh("/usr/bin/git-kardwt"), "/usr/bin/git-kardwt");
        assert_eq!(sh("feature/card-7"), "feature/card-7");
    }
}
