//! An `rm` operand with `*`, `?`, `[…]` or `{…}` as the shell expands it in the command's
//! directory (bash's defaults: braces first, then each `/`-separated part matched against the
//! directory's names, byte order, a leading `.` only matched by a `.`, a pattern matching
//! nothing passed on as it is), or the literal text it begins with when that is all that can be
//! known (a `$` expansion in it, too many words, a character class of a named kind). Pure: the
//! directories are listed through [`World`].
use std::path::{Path, PathBuf};

use super::lex::UNKNOWN;
use super::world::World;

/// The most words one operand may stand for; past it only its literal prefix is judged.
const MAX_WORDS: usize = 4096;

/// What an operand stands for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Expansion {
    /// The words rm gets, in the shell's order.
    Words(Vec<String>),
    /// Not known before run time: any path that begins with this text.
    Prefix(String),
}

/// Expand `pattern` (a [`super::lex::Word::pattern`]) from `dir`; `None` when nothing can be
/// known (a relative pattern where the directory is not known).
pub(super) fn expand(pattern: &str, dir: Option<&Path>, world: &dyn World) -> Option<Expansion> {
    let prefix = || {
        let p = literal_prefix(pattern);
        (p.starts_with('/') || dir.is_some()).then_some(Expansion::Prefix(p))
    };
    if has_unescaped(pattern, |c| c == UNKNOWN) {
        return prefix();
    }
    let mut alternatives = Vec::new();
    if !braces(pattern, &mut alternatives) {
        return prefix();
    }
    let mut words = Vec::new();
    for alt in alternatives {
        if !has_unescaped(&alt, |c| matches!(c, '*' | '?' | '[')) {
            words.push(unescape(&alt));
            continue;
        }
        if !alt.starts_with('/') && dir.is_none() {
            return None;
        }
        let Some(mut found) = glob(&alt, dir, world) else {
            return prefix();
        };
        if found.is_empty() {
            words.push(unescape(&alt));
        }
        words.append(&mut found);
        if words.len() > MAX_WORDS {
            return prefix();
        }
    }
    Some(Expansion::Words(words))
}

/// The pattern's text before its first character with a meaning (unescaped).
fn literal_prefix(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '*' | '?' | '[' | '{' | UNKNOWN => break,
            c => out.push(c),
        }
    }
    out
}

/// The pattern's text with its escapes removed: what rm gets when nothing matched.
fn unescape(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    out
}

fn has_unescaped(pattern: &str, special: impl Fn(char) -> bool) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else if special(c) {
            return true;
        }
    }
    false
}

/// Brace expansion, left to right, into `out`; `false` when it gives too many words.
fn braces(pattern: &str, out: &mut Vec<String>) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => {
                if let Some((close, alternatives)) = brace_at(&chars, i) {
                    let head: String = chars[..i].iter().collect();
                    let tail: String = chars[close + 1..].iter().collect();
                    return alternatives
                        .iter()
                        .all(|alt| braces(&format!("{head}{alt}{tail}"), out));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.push(pattern.to_owned());
    out.len() <= MAX_WORDS
}

/// The brace expression opening at `chars[open]`: where it closes and its alternatives
/// (`{a,b}`, or a sequence `{1..3}`, `{a..e}`); `None` when it is none (`{}`, `{a}`).
fn brace_at(chars: &[char], open: usize) -> Option<(usize, Vec<String>)> {
    let (mut depth, mut commas, mut i) = (0, Vec::new(), open + 1);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            '}' if commas.is_empty() => {
                let body: String = chars[open + 1..i].iter().collect();
                return sequence(&body).map(|alts| (i, alts));
            }
            '}' => {
                let mut alternatives = Vec::new();
                let mut start = open + 1;
                for &end in commas.iter().chain([&i]) {
                    alternatives.push(chars[start..end].iter().collect());
                    start = end + 1;
                }
                return Some((i, alternatives));
            }
            ',' if depth == 0 => commas.push(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `{x..y[..step]}` of integers (zero-padded as bash pads them) or of single letters.
fn sequence(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    let (from, to, step) = match parts[..] {
        [a, b] => (a, b, 1),
        [a, b, s] => (a, b, s.parse::<i64>().ok()?.unsigned_abs().max(1)),
        _ => return None,
    };
    let step = usize::try_from(step).ok()?;
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        if a.abs_diff(b) / step as u64 > MAX_WORDS as u64 {
            return None;
        }
        let padded = |t: &str| {
            t.trim_start_matches('-').len() > 1 && t.trim_start_matches('-').starts_with('0')
        };
        let width = if padded(from) || padded(to) {
            from.len().max(to.len())
        } else {
            0
        };
        let range: Vec<i64> = if a <= b {
            (a..=b).step_by(step).collect()
        } else {
            (b..=a).rev().step_by(step).collect()
        };
        return Some(range.iter().map(|n| format!("{n:0width$}")).collect());
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    let (Some(x), None, Some(y), None) = (a.next(), a.next(), b.next(), b.next()) else {
        return None;
    };
    if !x.is_ascii_alphabetic() || !y.is_ascii_alphabetic() {
        return None;
    }
    let (x, y) = (x as u8, y as u8);
    let range: Vec<u8> = if x <= y {
        (x..=y).step_by(step).collect()
    } else {
        (y..=x).rev().step_by(step).collect()
    };
    Some(range.into_iter().map(|c| (c as char).to_string()).collect())
}

/// One piece of a pattern's part.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Char(char),
    /// `?`
    One,
    /// `*`
    Any,
    /// `[…]`: the ranges it holds, and whether `!` or `^` negates them.
    Class(bool, Vec<(char, char)>),
}

/// One `/`-separated part of a pattern as pieces; `None` for a class of a named kind
/// (`[[:alpha:]]`), which is not matched here.
fn pieces(part: &str) -> Option<Vec<Piece>> {
    let chars: Vec<char> = part.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' if i < chars.len() => {
                out.push(Piece::Char(chars[i]));
                i += 1;
            }
            '?' => out.push(Piece::One),
            '*' => out.push(Piece::Any),
            '[' => match class(&chars, i)? {
                Some((piece, next)) => {
                    out.push(piece);
                    i = next;
                }
                None => out.push(Piece::Char('[')),
            },
            c => out.push(Piece::Char(c)),
        }
    }
    Some(out)
}

/// The class whose body starts at `chars[start]`: `Some(None)` when it never closes (a plain
/// `[`), `None` for a named kind.
fn class(chars: &[char], start: usize) -> Option<Option<(Piece, usize)>> {
    let mut i = start;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    i += usize::from(negated);
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&c) = chars.get(i) else {
            return Some(None);
        };
        if c == ']' && !first {
            return Some(Some((Piece::Class(negated, ranges), i + 1)));
        }
        if c == '['
            && chars
                .get(i + 1)
                .is_some_and(|n| matches!(n, ':' | '=' | '.'))
        {
            return None;
        }
        first = false;
        let (lo, mut next) = match c {
            '\\' => (*chars.get(i + 1)?, i + 2),
            c => (c, i + 1),
        };
        let mut hi = lo;
        if chars.get(next) == Some(&'-') && chars.get(next + 1).is_some_and(|&n| n != ']') {
            let (h, after) = match chars[next + 1] {
                '\\' => (*chars.get(next + 2)?, next + 3),
                h => (h, next + 2),
            };
            hi = h;
            next = after;
        }
        ranges.push((lo, hi));
        i = next;
    }
}

/// Does `name` match `pieces` (a leading `.` only by a `.`)?
fn matches(pieces: &[Piece], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    if name.first() == Some(&'.') && pieces.first() != Some(&Piece::Char('.')) {
        return false;
    }
    // Iterative matching with one backtrack point for the last `*`.
    let (mut p, mut n, mut star) = (0, 0, None);
    while n < name.len() {
        let ok = match pieces.get(p) {
            Some(Piece::Any) => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(Piece::One) => true,
            Some(Piece::Char(c)) => *c == name[n],
            Some(Piece::Class(negated, ranges)) => {
                ranges
                    .iter()
                    .any(|&(lo, hi)| lo <= name[n] && name[n] <= hi)
                    != *negated
            }
            None => false,
        };
        if ok {
            p += 1;
            n += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pieces[p..].iter().all(|x| *x == Piece::Any)
}

/// The existing paths `pattern` (braces already expanded) matches, as rm gets them, sorted
/// within each directory; `None` when that cannot be known.
fn glob(pattern: &str, dir: Option<&Path>, world: &dyn World) -> Option<Vec<String>> {
    let resolve = |text: &str| -> Option<PathBuf> {
        match dir {
            _ if text.starts_with('/') => Some(PathBuf::from(text)),
            Some(d) if text.is_empty() => Some(d.to_path_buf()),
            Some(d) => Some(d.join(text)),
            None => None,
        }
    };
    let parts: Vec<&str> = split_parts(pattern);
    let mut found = vec![String::new()];
    let mut globbed = false;
    for (k, part) in parts.iter().enumerate() {
        let sep = if k == 0 { "" } else { "/" };
        let is_glob = has_unescaped(part, |c| matches!(c, '*' | '?' | '['));
        let mut next = Vec::new();
        for text in &found {
            let at = format!("{text}{sep}");
            if !is_glob {
                let name = unescape(part);
                // After a matched part, what follows must exist too.
                let exists = !globbed
                    || match world.entries(&resolve(&at)?) {
                        Some(names) => name.is_empty() || names.contains(&name),
                        None => false,
                    };
                if exists {
                    next.push(format!("{at}{name}"));
                }
                continue;
            }
            let pieces = pieces(part)?;
            let Some(mut names) = world.entries(&resolve(&at)?) else {
                continue;
            };
            names.retain(|n| n != "." && n != ".." && matches(&pieces, n));
            names.sort();
            next.extend(names.into_iter().map(|n| format!("{at}{n}")));
            if next.len() > MAX_WORDS {
                return None;
            }
        }
        globbed |= is_glob;
        found = next;
    }
    Some(found)
}

/// The `/`-separated parts of a pattern (a `/` cannot be escaped away).
fn split_parts(pattern: &str) -> Vec<&str> {
    pattern.split('/').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(pattern: &str) -> Vec<String> {
        let mut out = Vec::new();
        assert!(braces(pattern, &mut out));
        out
    }

    #[test]
    fn braces_expand_as_bash_does() {
        assert_eq!(all("card-{1,2}"), ["card-1", "card-2"]);
        assert_eq!(all("a{b,c}d{e,f}"), ["abde", "abdf", "acde", "acdf"]);
        assert_eq!(all("x{a,{b,c}}"), ["xa", "xb", "xc"]);
        assert_eq!(all("c{1..3}"), ["c1", "c2", "c3"]);
        assert_eq!(all("c{3..1}"), ["c3", "c2", "c1"]);
        assert_eq!(all("c{08..10}"), ["c08", "c09", "c10"]);
        assert_eq!(all("c{a..c}"), ["ca", "cb", "cc"]);
        assert_eq!(all("c{1..5..2}"), ["c1", "c3", "c5"]);
        for literal in ["c{}", "c{a}", "c\\{a,b}", "c{a\\,b}", "c{a,b", "c{1..x}"] {
            assert_eq!(all(literal), [literal], "{literal}");
        }
        assert_eq!(all("{1..9999999}"), ["{1..9999999}"]);
    }

    #[test]
    fn names_match_as_the_shell_matches_them() {
        let m = |p: &str, n: &str| matches(&pieces(p).unwrap(), n);
        assert!(m("card-*", "card-42") && m("card-?", "card-7") && !m("card-?", "card-42"));
        assert!(m("*", "base") && !m("*", ".git") && m(".*", ".git"));
        assert!(
            m("card-[47]*", "card-42") && m("card-[!4]", "card-7") && !m("card-[^7]", "card-7")
        );
        assert!(m("card-[0-9]", "card-7") && !m("card-[a-z]", "card-7"));
        assert!(m("c*d*", "card-42") && m("*-*2", "card-42") && !m("*x*", "card-42"));
        assert!(m("\\*", "*") && !m("\\*", "a") && m("a[", "a["));
        assert!(pieces("[[:digit:]]").is_none());
        assert_eq!(
            literal_prefix("/t/base.worktrees/card-\\*x*"),
            "/t/base.worktrees/card-*x"
        );
        assert_eq!(literal_prefix(&format!("a/{UNKNOWN}N*")), "a/");
    }
}
