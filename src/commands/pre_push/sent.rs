//! What a push sends, as git would send it: the remote whose remote-tracking refs say what the
//! push target has, the entries of every pushed commit, and the objects `git rev-list --objects`
//! lists for every pushed ref less what the remote has. Reads only.
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;

use super::push::{self, Entry, RefUpdate};
use crate::context::Context;
use crate::git;

/// The remote whose remote-tracking refs say what the push target already has, as a name that
/// can be given as `--remotes=<name>` (not an option, no glob characters): `remote` when it is
/// a configured remote, else (a push by URL) the configured remote whose `url` or `pushurl` is
/// exactly `url`. None when there is none.
pub(super) fn tracking_remote(ctx: &Context, remote: &str, url: &str) -> Result<Option<String>> {
    let plain = |name: &str| {
        !name.is_empty()
            && !name.starts_with('-')
            && !name.contains(['*', '?', '[', '\\', ':'])
            && !name.contains("..")
    };
    let configured = |name: &str| {
        ctx.repo
            .config_string(&format!("remote.{name}.url"))
            .is_some()
    };
    if plain(remote) && configured(remote) {
        return Ok(Some(remote.to_owned()));
    }
    let raw = git::config_regexp_z(&ctx.repo.base, r"^remote\..*\.(push)?url$")?;
    Ok(raw
        .split(|b| *b == 0)
        .filter_map(|rec| {
            let nl = rec.iter().position(|b| *b == b'\n')?;
            let key = std::str::from_utf8(&rec[..nl]).ok()?;
            let name = key.strip_prefix("remote.")?;
            let name = name
                .strip_suffix(".url")
                .or_else(|| name.strip_suffix(".pushurl"))?;
            (&rec[nl + 1..] == url.as_bytes() && plain(name)).then(|| name.to_owned())
        })
        .next())
}

/// Every entry of every commit the push sends that `remote` does not have yet: reachable from
/// the pushed oids, not from the remote oids git gave on stdin nor from that remote's
/// remote-tracking refs (for a push by URL, those of the configured remote with that URL;
/// another remote's refs do not count). One `git log` pass; a merge is diffed against each
/// parent, a root commit against the empty tree.
pub(super) fn pushed_entries(
    ctx: &Context,
    tracking: Option<&str>,
    updates: &[RefUpdate],
) -> Result<Vec<Entry>> {
    let tips: Vec<&RefUpdate> = updates.iter().filter(|u| !u.is_deletion()).collect();
    if tips.is_empty() {
        return Ok(Vec::new());
    }
    let mut log: Vec<OsString> = tips.iter().map(|u| OsString::from(&u.local_oid)).collect();
    for u in updates {
        // The remote's old tip is a boundary only when we have it (read through gix).
        if !u.is_new() && ctx.repo.has_object(&u.remote_oid) {
            log.push(format!("^{}", u.remote_oid).into());
        }
    }
    if let Some(name) = tracking {
        log.push("--not".into());
        log.push(format!("--remotes={name}").into());
    }
    let raw = git::log_raw_z(&ctx.repo.base, log)?;
    Ok(push::parse_entries(&raw))
}

/// What the remote already has, as far as this repository knows: the old tips git gave on
/// stdin that are at hand and the tips of its remote-tracking refs, each once.
pub(super) fn remote_tips(
    ctx: &Context,
    tracking: Option<&str>,
    updates: &[RefUpdate],
) -> Result<Vec<String>> {
    let mut tips: Vec<String> = updates
        .iter()
        .filter(|u| !u.is_new() && ctx.repo.has_object(&u.remote_oid))
        .map(|u| u.remote_oid.clone())
        .collect();
    if let Some(name) = tracking {
        let tracking = git::branches_under(&ctx.repo.base, &format!("refs/remotes/{name}/"))?;
        tips.extend(tracking.into_iter().map(|(_, oid)| oid));
    }
    tips.sort();
    tips.dedup();
    Ok(tips)
}

/// Exactly the objects git would send: `git rev-list --objects` of every pushed local object
/// (a commit, an annotated tag, a tree, a blob, a notes commit), not reachable from what the
/// remote has (`known`), each with the path rev-list first reached it at. One process.
pub(super) fn sent_objects(
    base: &Path,
    known: &[String],
    updates: &[RefUpdate],
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut revs: Vec<u8> = Vec::new();
    for u in updates.iter().filter(|u| !u.is_deletion()) {
        revs.extend_from_slice(format!("{}\n", u.local_oid).as_bytes());
    }
    if revs.is_empty() {
        return Ok(BTreeMap::new());
    }
    for tip in known {
        revs.extend_from_slice(format!("^{tip}\n").as_bytes());
    }
    let raw = git::rev_list_objects(base, revs)?;
    Ok(push::parse_objects(&raw))
}
