//! Finding the worktrees verification judges: every linked worktree with its record, or,
//! through the claims, only the few one verification needs; and an [`Index`] of them,
//! so judging each of a thousand worktrees (`list`) searches no list a thousand times.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::git::{self, Linked, Repo};
use crate::state::Loaded;

/// One linked worktree with its record, as found by scanning the admin dirs.
#[derive(Debug)]
pub(crate) struct Entry {
    pub linked: Linked,
    pub record: Loaded,
}

/// From this many worktrees on, [`scan`] reads them on every core (a thread costs about as
/// much as reading a few dozen worktrees).
const SCAN_IN_PARALLEL_FROM: usize = 64;

/// Read every linked worktree's record, in the order of their admin dirs. Reading is most of
/// what `add`, `list` and `gc` pay for each worktree of a repository that has thousands, so
/// past [`SCAN_IN_PARALLEL_FROM`] they are read on every core (`sys::pool`).
pub(crate) fn scan(repo: &Repo) -> anyhow::Result<Vec<Entry>> {
    let admins = repo.admin_dirs()?;
    let read = |admin: &PathBuf| {
        git::linked_at(admin.clone()).map(|linked| Entry {
            record: crate::state::load_record(&linked.admin),
            linked,
        })
    };
    Ok(if admins.len() < SCAN_IN_PARALLEL_FROM {
        admins.iter().filter_map(read).collect()
    } else {
        crate::sys::in_parallel(&admins, read)
            .into_iter()
            .flatten()
            .collect()
    })
}

/// The entries `verify` of the worktree at `path` needs, read without listing every
/// worktree: its own admin dir, and the one the claim of each card involved (`card`, and the
/// card its own record names) says owns that card. `None` when the claims cannot answer (not
/// migrated yet, a card without a complete claim, a path that is not a directory or whose
/// `.git` names something unusual): the caller scans everything, as before claims.
pub(super) fn scan_for(repo: &Repo, path: &Path, card: Option<&str>) -> Option<Vec<Entry>> {
    if !crate::state::Cards::at(&repo.common_dir).migrated() {
        return None;
    }
    let path = git::absolutize(path);
    let worktrees = repo.worktrees_dir();
    let mut admins: Vec<PathBuf> = Vec::new();
    let mut cards: Vec<String> = card.map(str::to_owned).into_iter().collect();
    if path.is_dir() && path != repo.base {
        if let Some(target) = git::read_dot_git(&path) {
            if target.parent() != Some(worktrees.as_path()) || !target.is_dir() {
                return None;
            }
            if let Loaded::Parsed(r) = crate::state::load_record(&target) {
                cards.push(r.card.to_string());
            }
            admins.push(target);
        }
    } else if !path.is_dir() {
        return None;
    }
    for c in &cards {
        // No claim: no other worktree holds a record of this card (every record written
        // completes its card's claim, and migration claimed the older ones).
        let Some(claim) = crate::state::Cards::at(&repo.common_dir).claim(c) else {
            continue;
        };
        let claim = claim.ok()?;
        if claim.state != crate::state::ClaimState::Complete || claim.admin.is_empty() {
            return None;
        }
        let owner = worktrees.join(&claim.admin);
        if !admins.contains(&owner) {
            admins.push(owner);
        }
    }
    Some(
        admins
            .into_iter()
            .filter_map(git::linked_at)
            .map(|linked| Entry {
                record: crate::state::load_record(&linked.admin),
                linked,
            })
            .collect(),
    )
}

/// The entries `verify` of `card`'s worktree needs: narrowed through its claim (see
/// [`scan_for`]) when the claim names a worktree whose record is the card's, or, when the card
/// has no claim, to `default` (where `add` would create it); else all.
pub(crate) fn scan_card(repo: &Repo, card: &str, default: &Path) -> anyhow::Result<Vec<Entry>> {
    match crate::state::Cards::at(&repo.common_dir).claim(card) {
        Some(Ok(claim)) => {
            if let Some(entries) = scan_for(repo, &claim.path, Some(card)) {
                let owners = claims(&entries, card);
                if let [one] = owners.as_slice() {
                    if one.linked.path.as_deref() == Some(claim.path.as_path()) {
                        return Ok(entries);
                    }
                }
            }
        }
        None if !default.exists() => {
            if let Some(entries) = scan_for(repo, &repo.base, Some(card)) {
                return Ok(entries);
            }
        }
        None => {
            if let Some(entries) = scan_for(repo, default, Some(card)) {
                if claims(&entries, card).is_empty() {
                    return Ok(entries);
                }
            }
        }
        Some(Err(_)) => {}
    }
    scan(repo)
}

/// The entries `verify` of the worktree at `path` needs (see [`scan_for`]), else all.
pub(crate) fn scan_path(repo: &Repo, path: &Path) -> anyhow::Result<Vec<Entry>> {
    scan_path_card(repo, path, None)
}

/// [`scan_path`], with the holder of `card` too.
pub(crate) fn scan_path_card(
    repo: &Repo,
    path: &Path,
    card: Option<&str>,
) -> anyhow::Result<Vec<Entry>> {
    match scan_for(repo, path, card) {
        Some(entries) => Ok(entries),
        None => scan(repo),
    }
}

/// The entries whose record names `card`.
pub(crate) fn claims<'a>(entries: &'a [Entry], card: &str) -> Vec<&'a Entry> {
    entries
        .iter()
        .filter(|e| matches!(&e.record, Loaded::Parsed(r) if r.card == card))
        .collect()
}

/// The entries verification looks up (by admin dir, and by the card a record names), either
/// searched in order (one verification: building maps would cost more than it saves) or
/// through maps built once ([`Index::mapped`], for `list`: a linear search per
/// worktree made listing 1,000 of them quadratic). Both answer alike: the first entry of an
/// admin dir, and every entry naming a card in scan order.
pub(crate) struct Index<'a> {
    pub entries: &'a [Entry],
    maps: Option<Maps<'a>>,
}

struct Maps<'a> {
    by_admin: HashMap<&'a Path, &'a Entry>,
    by_card: HashMap<&'a str, Vec<&'a Entry>>,
}

impl<'a> Index<'a> {
    /// Searched in order, nothing built.
    pub(crate) fn linear(entries: &'a [Entry]) -> Index<'a> {
        Index {
            entries,
            maps: None,
        }
    }

    /// With maps built once, for judging every entry in turn.
    pub(crate) fn mapped(entries: &'a [Entry]) -> Index<'a> {
        let mut by_admin = HashMap::with_capacity(entries.len());
        let mut by_card: HashMap<&str, Vec<&Entry>> = HashMap::with_capacity(entries.len());
        for e in entries {
            by_admin.entry(e.linked.admin.as_path()).or_insert(e);
            if let Loaded::Parsed(r) = &e.record {
                by_card.entry(r.card.as_str()).or_default().push(e);
            }
        }
        Index {
            entries,
            maps: Some(Maps { by_admin, by_card }),
        }
    }

    /// The (first) entry administered in `admin`.
    pub(crate) fn admin(&self, admin: &Path) -> Option<&'a Entry> {
        match &self.maps {
            Some(m) => m.by_admin.get(admin).copied(),
            None => self.entries.iter().find(|e| e.linked.admin == admin),
        }
    }

    /// The entries whose record names `card`, in scan order.
    pub(crate) fn claims(&self, card: &str) -> Vec<&'a Entry> {
        match &self.maps {
            Some(m) => m.by_card.get(card).cloned().unwrap_or_default(),
            None => claims(self.entries, card),
        }
    }
}
