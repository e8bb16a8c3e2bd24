//! Capping text for messages (pure): what a child wrote on stderr, or git's cause, shown in at
//! most a given number of characters.

/// The last `max` characters of `text`, trimmed, for error messages.
pub fn tail_chars(text: &str, max: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - max + 1;
    format!("…{}", text.chars().skip(skip).collect::<String>())
}
