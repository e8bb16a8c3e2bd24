//! Capping text for messages (pure): what a child wrote on stderr, or git's cause, shown in at
//! most a given number of characters; and the columns of the tables commands print, sized to
//! what they hold.

/// The last `max` characters of `text`, trimmed, for error messages.
pub(crate) fn tail_chars(text: &str, max: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - max + 1;
    format!("…{}", text.chars().skip(skip).collect::<String>())
}

/// What a failed hook said, to end the message that says what was kept (pure): `: ` and the
/// tail of its stderr, or, when it wrote nothing there, that it did not (never an empty `: `).
pub(crate) fn hook_said(tail: &str) -> String {
    match tail.trim() {
        "" => " (the hook wrote nothing on stderr)".to_owned(),
        words => format!(": {words}"),
    }
}

/// The width of a column holding `cells` (pure): the longest that fits in `max`, at least
/// `min` (a longer cell goes on a line of its own: see [`cell`]).
pub(crate) fn width<'a>(cells: impl IntoIterator<Item = &'a str>, min: usize, max: usize) -> usize {
    cells
        .into_iter()
        .map(|c| c.chars().count())
        .filter(|&n| n <= max)
        .max()
        .unwrap_or(0)
        .max(min)
}

/// `text` left-aligned in a column `width` wide that starts `start` characters into the
/// line, followed by the one space between columns (pure). Text too long for it stands on a
/// line of its own, and the row goes on below at the next column's edge, so the columns stay
/// aligned.
pub(crate) fn cell(text: &str, start: usize, width: usize) -> String {
    let n = text.chars().count();
    if n <= width {
        format!("{text}{} ", " ".repeat(width - n))
    } else {
        format!("{text}\n{} ", " ".repeat(start + width))
    }
}

#[cfg(test)]
mod tests {
    use super::{cell, hook_said, width};

    #[test]
    fn a_hook_that_said_nothing_is_said_to_have_said_nothing() {
        assert_eq!(
            hook_said("cannot stop the database"),
            ": cannot stop the database"
        );
        assert_eq!(hook_said(" \n"), " (the hook wrote nothing on stderr)");
    }

    #[test]
    fn columns_fit_their_content_and_long_cells_stand_alone() {
        assert_eq!(width(["1", "12345"], 3, 10), 5);
        assert_eq!(width(["1"], 3, 10), 3);
        assert_eq!(width(["x".repeat(50).as_str(), "abcd"], 3, 10), 4);
        assert_eq!(cell("ab", 0, 4), "ab   ");
        assert_eq!(cell("abcdef", 0, 4), "abcdef\n     ");
        assert_eq!(cell("abcdef", 2, 4), "abcdef\n       ");
    }
}
