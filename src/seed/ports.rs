//! Per-worktree ports: `count` ports from `range`, none held by another record
//! of this repository, each free to bind right now on 127.0.0.1 and on every address (and on
//! IPv6's, where there is IPv6). The search starts at a point derived from the card id, so a
//! card tends to get the same ports back. Called under the repository lock, so two creations
//! never pick the same ports.
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketType};

use crate::config::Ports;
use crate::ground::error::{Code, Fail, Kind};

/// Allocate the configured ports for `card` (none when `worktree.ports` is absent). Call it
/// under the repository lock: it reads which ports the other records hold.
pub(crate) fn allocate_ports(
    ctx: &crate::context::Context,
    cfg: &crate::config::Config,
    card: &crate::ground::card::CardId,
) -> anyhow::Result<Vec<u16>> {
    let Some(spec) = &cfg.ports else {
        return Ok(Vec::new());
    };
    let held: std::collections::BTreeSet<u16> = crate::verify::scan(&ctx.repo)?
        .iter()
        .filter_map(|e| match &e.record {
            crate::state::Loaded::Parsed(r) if r.card != card.as_str() => Some(r.ports.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    Ok(allocate(card.as_str(), spec, &held, bindable)?)
}

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
pub(super) fn search_order(card: &str, range: [u16; 2]) -> Vec<u16> {
    let (low, high) = (u32::from(range[0]), u32::from(range[1]));
    let span = high - low + 1;
    let start = start_offset(card, span);
    (0..span)
        .filter_map(|i| u16::try_from(low + (start + i) % span).ok())
        .collect()
}

/// Can a server bind `port` now, whichever address it listens on? Probed on 127.0.0.1 and on
/// 0.0.0.0, then `[::1]` and `[::]`, by sockets without `SO_REUSEADDR` (which std's listeners
/// set): under BSD's rules (macOS) a socket with it binds 127.0.0.1 beside a listener on
/// 0.0.0.0, so the port would look free while a server holds it. Any IPv4 refusal makes the
/// port busy; on IPv6 only "in use" does (a machine without IPv6 refuses it all).
pub(super) fn bindable(port: u16) -> bool {
    let v4 = [Ipv4Addr::LOCALHOST, Ipv4Addr::UNSPECIFIED];
    let v6 = [Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED];
    v4.into_iter()
        .all(|ip| binds(SocketAddr::new(ip.into(), port)).is_ok())
        && v6
            .into_iter()
            .all(|ip| binds(SocketAddr::new(ip.into(), port)) != Err(Errno::ADDRINUSE))
}

/// Bind a TCP socket to `addr`, without `SO_REUSEADDR`, and close it at once (without
/// `SOCK_CLOEXEC`, which macOS lacks: the probe runs before any hook is started).
fn binds(addr: SocketAddr) -> Result<(), Errno> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let socket = rustix::net::socket(family, SocketType::STREAM, None)?;
    rustix::net::bind(&socket, &addr)
}

/// Pick the ports for `card`, skipping `held` ones and those `free` says are taken.
pub(super) fn allocate(
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
pub(super) struct NoPorts {
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

    /// A free port now (the kernel's pick), kept by nothing.
    fn free_port() -> u16 {
        std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn a_listener_on_any_address_or_on_loopback_makes_a_port_busy() {
        let any = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
        let loopback = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let (p, q) = (
            any.local_addr().unwrap().port(),
            loopback.local_addr().unwrap().port(),
        );
        assert!(!bindable(p), "a listener on 0.0.0.0:{p} was not seen");
        assert!(!bindable(q), "a listener on 127.0.0.1:{q} was not seen");
        drop((any, loopback));
        assert!(
            bindable(p) && bindable(q),
            "the probe holds the ports it tried"
        );
    }

    #[test]
    fn a_socket_bound_with_reuseaddr_makes_a_port_busy_as_it_would_under_bsd_rules() {
        // Bound with SO_REUSEADDR but not listening: a socket that sets it too (std's
        // listeners do) binds beside it even on Linux, as any would beside a listener under
        // BSD's rules. The probe sets no SO_REUSEADDR, so it sees the port taken.
        let port = free_port();
        let addr = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
        let bound = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
        rustix::net::sockopt::set_socket_reuseaddr(&bound, true).unwrap();
        rustix::net::bind(&bound, &addr).unwrap();
        let reusing = std::net::TcpListener::bind(addr);
        assert!(
            reusing.is_ok(),
            "a socket with SO_REUSEADDR could not bind beside it"
        );
        drop(reusing);
        assert!(
            !bindable(port),
            "port {port} looked free beside a bound socket"
        );
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
