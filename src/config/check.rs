//! The checks across fields and the defaults: the typed `worktree:` block in, the effective
//! [`Config`] out, or a [`Problem`] naming the key path and the node its error points at.
use std::path::{Path, PathBuf};

use super::leaves::{Name, Port, RelPath};
use super::locate::display_path;
use super::locate::Seg::{self, Index, Key};
use super::model::{
    Adoption, CacheRemote, CheckoutMode, Cleanup, Config, EnvSharing, Ports, Prepare,
    SkillsSharing, DEFAULT_CACHE_ENTRIES, DEFAULT_CLEANUP_TIMEOUT, DEFAULT_PREPARE_TIMEOUT,
};
use super::read::{join_key, Block, Given, List};
use super::schema::{RawAdoption, RawPorts, RawWorktree, ROOT_KEY};

/// An error found across fields: the key path it names, the node it points at (at its key
/// when `at_key`), and what is wrong.
pub(super) struct Problem {
    pub(super) key: String,
    pub(super) at: Vec<Seg>,
    pub(super) at_key: bool,
    pub(super) msg: String,
}

fn at(path: &[Seg]) -> Vec<Seg> {
    let mut segs = vec![Seg::Key(ROOT_KEY)];
    segs.extend_from_slice(path);
    segs
}

fn problem(path: &[Seg], msg: impl Into<String>) -> Problem {
    Problem {
        key: display_path(&at(path)),
        at: at(path),
        at_key: false,
        msg: msg.into(),
    }
}

/// `key` is required in the block at `path`: point at the block's key when it has one.
fn require<T>(value: Given<T>, path: &[Seg], key: &'static str) -> Result<T, Problem> {
    value.0.ok_or_else(|| Problem {
        key: join_key(&display_path(&at(path)), key),
        at: at(path),
        at_key: matches!(path.last(), Some(Seg::Key(_))),
        msg: format!(
            "missing (required when {} is present)",
            display_path(&at(path))
        ),
    })
}

fn argv(given: Given<List<Name>>, block: &'static str) -> Result<Vec<String>, Problem> {
    let list = require(given, &[Seg::Key(block)], "argv")?;
    if list.0.is_empty() {
        return Err(problem(
            &[Seg::Key(block), Seg::Key("argv")],
            "must hold at least one element (the program)",
        ));
    }
    Ok(list.0.into_iter().map(|n| n.0).collect())
}

fn paths(given: Given<List<RelPath>>) -> Vec<std::path::PathBuf> {
    given
        .0
        .map_or_else(Vec::new, |l| l.0.into_iter().map(|p| p.0).collect())
}

/// `prepare.outputs`: each a path of its own, none beneath (or equal to) another, so a cache
/// entry clones each one whole into a place no other output claims.
fn outputs(given: Given<List<RelPath>>) -> Result<Vec<std::path::PathBuf>, Problem> {
    let list = paths(given);
    for (i, path) in list.iter().enumerate() {
        if let Some(j) = list[..i]
            .iter()
            .position(|o| path.starts_with(o) || o.starts_with(path))
        {
            return Err(problem(
                &[Key("prepare"), Key("outputs"), Index(i)],
                format!(
                    "{} overlaps {} ({}); outputs must not contain one another",
                    super::names::quote(&path.to_string_lossy()),
                    display_path(&at(&[Key("prepare"), Key("outputs"), Index(j)])),
                    super::names::quote(&list[j].to_string_lossy()),
                ),
            ));
        }
    }
    Ok(list)
}

/// The effective configuration from the typed block: defaults, then the checks across fields.
pub(super) fn build(wt: RawWorktree) -> Result<Config, Problem> {
    let mut cfg = Config::default();
    if let Some(Block(b)) = wt.base.0 {
        if let Some(r) = b.remote.0 {
            cfg.base.remote = r.0;
        }
        cfg.base.git_ref = b.git_ref.0.map(|r| r.0);
    }
    if let Some(Block(h)) = wt.helpers.0 {
        cfg.helpers.stable_root = h.stable_root.0.map(|p| p.0);
        cfg.helpers.from_repository = h.from_repository.0.map(|p| p.0);
        if cfg.helpers.stable_root.is_some() && cfg.helpers.from_repository.is_some() {
            return Err(problem(
                &[Key("helpers"), Key("from_repository")],
                "cannot be set with helpers.stable_root: hooks run from one of them",
            ));
        }
    }
    if let Some(Block(c)) = wt.checkout.0 {
        cfg.checkout.mode = c.mode.0.unwrap_or(CheckoutMode::Full);
    }

    let mut prepare_cap = None;
    if let Some(Block(p)) = wt.prepare.0 {
        prepare_cap = p.timeout_seconds.0.map(|t| t.0);
        cfg.prepare = Some(Prepare {
            argv: argv(p.argv, "prepare")?,
            on_create: p.on_create.0.is_none_or(|f| f.0),
            on_reuse: p.on_reuse.0.is_some_and(|f| f.0),
            timeout_seconds: prepare_cap.unwrap_or(DEFAULT_PREPARE_TIMEOUT),
            inputs: paths(p.inputs),
            outputs: outputs(p.outputs)?,
            on_cache_hit: p.on_cache_hit.0.unwrap_or_default(),
            cache_entries: p.cache_entries.0.map_or(DEFAULT_CACHE_ENTRIES, |n| n.0),
            cache_remote: None,
        });
        if let Some(Block(r)) = p.cache_remote.0 {
            let at = [Key("prepare"), Key("cache_remote")];
            let (bucket, prefix) = require(r.url, &at, "url")?.0;
            let endpoint = r.endpoint.0.map(|e| e.0);
            let region = match (r.region.0, &endpoint) {
                (Some(r), _) => r.0,
                (None, Some(_)) => "us-east-1".to_owned(),
                (None, None) => {
                    return Err(problem(
                        &at,
                        "names no region: AWS S3 needs the bucket's (region: us-east-1…), \
                         or give the endpoint of an S3-compatible store",
                    ))
                }
            };
            if cfg.prepare.as_ref().is_some_and(|p| p.outputs.is_empty()) {
                return Err(problem(
                    &at,
                    "needs prepare.outputs: without outputs there is no cache to share",
                ));
            }
            if let Some(p) = cfg.prepare.as_mut() {
                p.cache_remote = Some(CacheRemote {
                    bucket,
                    prefix,
                    endpoint,
                    region,
                });
            }
        }
    }
    let mut cleanup_cap = None;
    if let Some(Block(c)) = wt.cleanup.0 {
        cleanup_cap = c.timeout_seconds.0.map(|t| t.0);
        cfg.cleanup = Some(Cleanup {
            argv: argv(c.argv, "cleanup")?,
            timeout_seconds: cleanup_cap.unwrap_or(DEFAULT_CLEANUP_TIMEOUT),
        });
    }

    if let Some(Block(s)) = wt.sharing.0 {
        cfg.sharing.env = s.env.0.unwrap_or(EnvSharing::Disabled);
        cfg.sharing.skills = s.skills.0.unwrap_or(SkillsSharing::Fallback);
        cfg.sharing.copy = s
            .copy
            .0
            .map_or_else(Vec::new, |l| l.0.into_iter().map(|p| p.0).collect());
        cfg.sharing.copy_method = s.copy_method.0.unwrap_or_default();
        cfg.sharing.link = s
            .link
            .0
            .map_or_else(Vec::new, |l| l.0.into_iter().map(|p| p.0).collect());
    }
    if let Some(Block(e)) = wt.environment.0 {
        let names = e.passthrough.0.map_or_else(Vec::new, |l| l.0);
        cfg.environment.passthrough = names.into_iter().map(|n| n.0).collect();
        let shared = cfg
            .prepare
            .as_ref()
            .is_some_and(|p| p.cache_remote.is_some());
        let credential = cfg.environment.passthrough.iter().position(|n| {
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
            ]
            .contains(&n.as_str())
        });
        if let Some(i) = credential.filter(|_| shared) {
            return Err(problem(
                &[Key("environment"), Key("passthrough"), Index(i)],
                "is a credential of prepare.cache_remote's store, never handed to hooks; \
                 give the hook its own variable",
            ));
        }
    }
    if let Some(Block(p)) = wt.ports.0 {
        cfg.ports = Some(ports(p)?);
    }
    let action_written = wt.action_timeout_seconds.0.map(|t| t.0);
    if let Some(action) = action_written {
        cfg.action_timeout_seconds = action;
    }
    if let Some(list) = wt.adoptions.0 {
        cfg.adoptions = adoptions(list)?;
    }

    // A hook cap written above a written action timeout is an error; any other is clamped.
    let action = cfg.action_timeout_seconds;
    for (block, written) in [("prepare", prepare_cap), ("cleanup", cleanup_cap)] {
        if let (Some(value), Some(_)) = (written, action_written) {
            if value > action {
                return Err(problem(
                    &[Key(block), Key("timeout_seconds")],
                    format!(
                        "{value} is above {ROOT_KEY}.action_timeout_seconds ({action}); a hook \
                         cannot outlive its action"
                    ),
                ));
            }
        }
    }
    if let Some(p) = cfg.prepare.as_mut() {
        p.timeout_seconds = p.timeout_seconds.min(action);
    }
    if let Some(c) = cfg.cleanup.as_mut() {
        c.timeout_seconds = c.timeout_seconds.min(action);
    }

    if cfg.checkout.mode == CheckoutMode::Delegated && cfg.prepare.is_none() {
        return Err(problem(
            &[Key("checkout"), Key("mode")],
            format!("delegated requires a prepare hook ({ROOT_KEY}.prepare.argv is not set)"),
        ));
    }

    let cached = cfg.prepare.as_ref().is_some_and(|p| !p.outputs.is_empty());
    if cfg.checkout.mode == CheckoutMode::Delegated && cached {
        return Err(problem(
            &[Key("prepare"), Key("outputs")],
            "cannot be cached with checkout.mode delegated (the prepare hook makes the checkout, so it can never be skipped)",
        ));
    }

    if let Some(dir) = &cfg.helpers.from_repository {
        for (hook, argv) in [
            ("prepare", cfg.prepare.as_ref().map(|p| &p.argv)),
            ("cleanup", cfg.cleanup.as_ref().map(|c| &c.argv)),
        ] {
            if let Some(program) = argv.and_then(|a| a.first()) {
                if !beneath(Path::new(program), dir) {
                    return Err(problem(
                        &[Key(hook), Key("argv")],
                        format!(
                            "argv[0] {program:?} must be a path relative to the repository's root beneath helpers.from_repository ({})",
                            dir.display()
                        ),
                    ));
                }
            }
        }
    }
    if cfg.helpers.stable_root.is_none() && cfg.helpers.from_repository.is_none() {
        let hook = if cfg.prepare.is_some() {
            Some("prepare")
        } else if cfg.cleanup.is_some() {
            Some("cleanup")
        } else {
            None
        };
        if let Some(hook) = hook {
            return Err(Problem {
                key: display_path(&at(&[Key("helpers"), Key("stable_root")])),
                at: at(&[Key(hook), Key("argv")]),
                at_key: true,
                msg: format!("missing; required because {ROOT_KEY}.{hook}.argv is set"),
            });
        }
    }
    Ok(cfg)
}

fn ports(p: RawPorts) -> Result<Ports, Problem> {
    let count = require(p.count, &[Key("ports")], "count")?.0;
    let range = require(p.range, &[Key("ports")], "range")?.0;
    let range_at = [Key("ports"), Key("range")];
    let [Port(low), Port(high)] = range[..] else {
        return Err(problem(
            &range_at,
            format!(
                "expected a list of two ports [LOW, HIGH], found {} elements",
                range.len()
            ),
        ));
    };
    if low > high {
        return Err(problem(
            &range_at,
            format!("low port {low} is above high port {high}"),
        ));
    }
    let size = u64::from(high - low) + 1;
    if count > size {
        return Err(problem(
            &[Key("ports"), Key("count")],
            format!(
                "{count} is more than the {size} ports in {}",
                display_path(&at(&range_at))
            ),
        ));
    }
    Ok(Ports {
        // At most `size`, itself at most 65536 - 1024.
        count: u16::try_from(count).unwrap_or(u16::MAX),
        range: [low, high],
    })
}

fn adoptions(list: List<Block<RawAdoption>>) -> Result<Vec<Adoption>, Problem> {
    let mut out: Vec<Adoption> = Vec::new();
    for (i, Block(a)) in list.0.into_iter().enumerate() {
        let item = [Key("adoptions"), Index(i)];
        let card = require(a.card, &item, "card")?.0;
        if let Some(j) = out.iter().position(|o| o.card == card) {
            return Err(problem(
                &[Key("adoptions"), Index(i), Key("card")],
                format!(
                    "card {card:?} is already declared by {}",
                    display_path(&at(&[Key("adoptions"), Index(j)]))
                ),
            ));
        }
        out.push(Adoption {
            card,
            path: require(a.path, &item, "path")?.0,
            common_dir: require(a.common_dir, &item, "common_dir")?.0,
            branch: require(a.branch, &item, "branch")?.0,
        });
    }
    Ok(out)
}

/// Is the relative `program` a normal path strictly beneath the relative directory `dir`?
fn beneath(program: &Path, dir: &Path) -> bool {
    let normal: Option<PathBuf> = program
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| match c {
            std::path::Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    normal.is_some_and(|p| p != dir && p.starts_with(dir))
}
