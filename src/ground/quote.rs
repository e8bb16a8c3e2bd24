//! The one quoting function for every command kardwt suggests or writes for a shell (hints,
//! retry commands, the guard's replacements, the hook shims' binary line): a word of only
//! characters no shell treats specially stays bare, anything else goes in single quotes with a
//! `'` inside written as `'\''`, so any path (spaces, quotes, `$`, newlines) pastes back as the
//! same word (pure).
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

#[cfg(test)]
mod tests {
    use super::*;

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
