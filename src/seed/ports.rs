//! Per-worktree ports: `count` ports from `range`, none held by another record
//! of this repository, each free to bind on 127.0.0.1 right now. The search starts at a point
//! derived from the card id, so a card tends to get the same ports back. Called under the
//! repository lock, so two creations never pick the same ports.
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};

use crate::config::Ports;
use crate::ground::error::{Code, Fail, Kind};

/// A stable hash of the card id (FNV-1a), so the starting point survives restarts.
fn start_offset(card: &str, span: u32) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in card.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % span
}

/// The ports of `range` in the order a card searches them (pure).
pub fn search_order(card: &str, range: [u16; 2]) -> Vec<u16> {
    let (low, high) = (u32::from(range[0]), u32::from(range[1]));
    let span = high - low + 1;
    let start = start_offset(card, span);
    (0..span)
        .filter_map(|i| u16::try_from(low + (start + i) % span).ok())
        .collect()
}

/// Can a listener bind `port` on 127.0.0.1 now?
pub fn bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Pick the ports for `card`, skipping `held` ones and those `free` says are taken.
pub fn allocate(
    card: &str,
    spec: &Ports,
    held: &BTreeSet<u16>,
    free: impl Fn(u16) -> bool,
) -> Result<Vec<u16>, Fail> {
    let mut chosen = Vec::new();
    for port in search_order(card, spec.range) {
        if chosen.len() == usize::from(spec.count) {
            break;
        }
        if !held.contains(&port) && free(port) {
            chosen.push(port);
        }
    }
    if chosen.len() < usize::from(spec.count) {
        return Err(Fail::from(NoPorts {
            count: spec.count,
            range: spec.range,
            card: card.to_string(),
        }));
    }
    Ok(chosen)
}

/// Fewer free ports are left in the range than a card needs (exit 1).
#[derive(Debug, thiserror::Error)]
#[error(
    "no {count} free port(s) left in worktree.ports.range [{}, {}] for card {card}: the others \
     are held by other worktrees or in use",
    range[0],
    range[1]
)]
pub struct NoPorts {
    pub count: u16,
    pub range: [u16; 2],
    pub card: String,
}

impl Kind for NoPorts {
    fn code(&self) -> Code {
        Code::Failed
    }
    fn hints(&self) -> Vec<String> {
        vec![
            "remove a worktree you no longer need (git kardwt remove, git kardwt gc) or widen \
              the range"
                .into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_covers_the_range_once_and_is_stable() {
        let a = search_order("42", [20000, 20009]);
        assert_eq!(a.len(), 10);
        assert_eq!(a.iter().copied().collect::<BTreeSet<_>>().len(), 10);
        assert_eq!(a, search_order("42", [20000, 20009]));
        assert_eq!(search_order("x", [1024, 1024]), vec![1024]);
    }

    #[test]
    fn allocation_skips_held_and_busy_ports_and_reports_exhaustion() {
        let spec = Ports {
            count: 2,
            range: [23000, 23005],
        };
        let held: BTreeSet<u16> = [23001, 23002].into();
        let got = allocate("a", &spec, &held, |p| p != 23000).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|p| ![23000, 23001, 23002].contains(p)));
        let held: BTreeSet<u16> = (23001..=23005).collect();
        let err = allocate("a", &spec, &held, |_| true).unwrap_err();
        assert!(err.message.contains("[23000, 23005]"), "{}", err.message);
        assert_eq!(err.code, crate::ground::error::Code::Failed);
    }
}
