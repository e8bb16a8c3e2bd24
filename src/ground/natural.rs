//! Natural order of names such as card ids: runs of digits compare as numbers, so `3` comes
//! before `10` and `card-2` before `card-10`; everything else compares byte by byte. Pure, and a
//! total order (names that read as equal numbers, `7` and `07`, are still told apart).
use std::cmp::Ordering;

/// `a` against `b` in natural order.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let (m, rest_x) = split_digits(x);
                let (n, rest_y) = split_digits(y);
                let by_number = number(m).cmp(&number(n));
                if by_number != Ordering::Equal {
                    return by_number;
                }
                (x, y) = (rest_x, rest_y);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

/// The leading run of ASCII digits and what follows it.
fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let end = s
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    s.split_at(end)
}

/// A run of digits as something that orders like its number, however long: without leading
/// zeros, shorter is smaller, and equal lengths compare digit by digit.
fn number(digits: &[u8]) -> (usize, &[u8]) {
    let start = digits
        .iter()
        .position(|&c| c != b'0')
        .unwrap_or(digits.len());
    let significant = &digits[start..];
    (significant.len(), significant)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        v.sort_by(|a, b| compare(a, b));
        v
    }

    #[test]
    fn numbers_compare_as_numbers() {
        assert_eq!(
            sorted(&["10", "3", "2", "100", "1"]),
            ["1", "2", "3", "10", "100"]
        );
        assert_eq!(
            sorted(&["card-10", "card-2", "card-1"]),
            ["card-1", "card-2", "card-10"]
        );
        assert_eq!(
            sorted(&["a10b2", "a10b10", "a9"]),
            ["a9", "a10b2", "a10b10"]
        );
    }

    #[test]
    fn text_compares_byte_by_byte_and_a_prefix_comes_first() {
        assert_eq!(sorted(&["b", "a", "ab", "A"]), ["A", "a", "ab", "b"]);
        assert_eq!(sorted(&["fix-2", "fix", "feat"]), ["feat", "fix", "fix-2"]);
        assert_eq!(compare("x1", "xa"), Ordering::Less);
    }

    #[test]
    fn equal_numbers_are_still_told_apart() {
        assert_eq!(compare("7", "07"), "7".cmp("07"));
        assert_ne!(compare("007", "7"), Ordering::Equal);
        assert_eq!(compare("42", "42"), Ordering::Equal);
        // Longer than any integer type holds.
        assert_eq!(
            compare("99999999999999999999999", "100000000000000000000000"),
            Ordering::Less
        );
    }

    #[test]
    fn the_order_is_total_and_consistent() {
        let names = [
            "1", "01", "1a", "a1", "a01", "a", "10", "9z", "", "-", "card-2",
        ];
        for a in names {
            assert_eq!(compare(a, a), Ordering::Equal);
            for b in names {
                assert_eq!(compare(a, b), compare(b, a).reverse(), "{a:?} {b:?}");
                for c in names {
                    if compare(a, b).is_le() && compare(b, c).is_le() {
                        assert!(compare(a, c).is_le(), "{a:?} {b:?} {c:?}");
                    }
                }
            }
        }
    }
}
