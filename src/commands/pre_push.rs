//! `git kardwt hook pre-push <remote> <url>`: block a push (exit 1,
//! naming the reason, the path and the commit) from a managed worktree that fails verification,
//! or of a commit new to that remote that brings in (added, modified or type-changed; a merge
//! diffed against each parent, judged on what differs from all of them, its tree's symlinks
//! on any change) a link kardwt made, a `.env`/`.env.*` at any depth that the ignore rules
//! would ignore, a blob equal to a file kardwt shares from the base (a root `.env`, or any file
//! beneath a linked path) or copied into a worktree (also after that tree is gone), a file
//! `.worktreeinclude` names forced past the ignore rules, or a symlink that leaves the
//! repository or reaches a shared file through the tree's other symlinks. Deletions pass.
//! Everything is read with `-z` as bytes, in a handful of git processes whatever the commit
//! count.
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::cli::PrePushArgs;
use crate::git::push::{self, Entry, RefUpdate, Resolved};
use crate::ground::error::{Code, Fail, Kind};
use crate::session::context::Context;
use crate::state::record::Loaded;
use crate::verify::{self, Verdict};
use crate::{git, state::events};

/// Why a push is refused, and what to do instead.
#[derive(Debug)]
struct Refusal {
    why: String,
    hint: &'static str,
}

const UNDO: &str = "nothing was pushed; take the file out of the pushed commits (`git rm --cached \
                    <path>` and `git commit --amend`, or `git rebase -i` for an older commit), \
                    then push again; pushing the same commits from another checkout is blocked too";

pub fn run(global: crate::cli::GlobalArgs, args: &PrePushArgs) -> Result<i32> {
    let started = Instant::now();
    // Read whole before anything else, so git never writes into a closed pipe.
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("could not read git's ref lines on stdin")?;
    let Some(ctx) = crate::session::unmanaged::hook_context(global, "pre-push")? else {
        return Ok(0);
    };
    let updates = push::parse_updates(&input).map_err(Fail::from)?;
    let entries = verify::scan(&ctx.repo)?;
    let here = ctx
        .repo
        .current
        .clone()
        .unwrap_or_else(|| ctx.repo.base.clone());
    let mut card = String::new();
    let blocked = |refusal: Refusal, card: &str| -> anyhow::Error {
        events::append(
            &ctx.repo.common_dir,
            crate::state::events::Kind::PushBlocked,
            card,
            &here,
            &refusal.why,
            started.elapsed(),
        );
        Fail::from(Blocked {
            remote: args.remote.clone(),
            refusal,
        })
        .into()
    };

    if here != ctx.repo.base {
        let report = verify::verify(&ctx.repo, &entries, &here, None);
        card = report.card.clone().unwrap_or_default();
        if report.verdict == Verdict::Foreign {
            let refusal = Refusal {
                why: format!("{} (commit {})", report.explain(), head_of(&updates)),
                hint: "nothing was pushed; repair this worktree's record first \
                       (`git kardwt verify` and `git kardwt doctor` say how)",
            };
            return Err(blocked(refusal, &card));
        }
    }

    let links: BTreeSet<Vec<u8>> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Loaded::Parsed(r) => Some(r.links.clone()),
            _ => None,
        })
        .flatten()
        .map(String::into_bytes)
        .collect();
    let pushed = pushed_entries(&ctx, args, &updates)?;
    if !pushed.is_empty() {
        let check = Check {
            ctx: &ctx,
            here: &here,
            ignorecase: config_bool(&ctx, "core.ignorecase"),
            links,
            admins: entries.iter().map(|e| e.linked.admin.clone()).collect(),
            public: public_tips(&ctx, args, &updates)?,
        };
        if let Some(why) = check.forbidden(&pushed)? {
            return Err(blocked(Refusal { why, hint: UNDO }, &card));
        }
    }
    events::append(
        &ctx.repo.common_dir,
        crate::state::events::Kind::PushChecked,
        &card,
        &here,
        "ok",
        started.elapsed(),
    );
    Ok(0)
}

fn head_of(updates: &[RefUpdate]) -> String {
    updates
        .iter()
        .find(|u| !u.is_deletion())
        .map_or("-".to_owned(), |u| u.local_oid.clone())
}

fn config_bool(ctx: &Context, key: &str) -> bool {
    ctx.repo
        .config_string(key)
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"))
}

/// The remote whose remote-tracking refs say what the push target already has, as a name that
/// can be given as `--remotes=<name>` (not an option, no glob characters): `remote` when it is
/// a configured remote, else (a push by URL) the configured remote whose `url` or `pushurl` is
/// exactly `url`. None when there is none.
fn tracking_remote(ctx: &Context, remote: &str, url: &str) -> Result<Option<String>> {
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
fn pushed_entries(
    ctx: &Context,
    push_args: &PrePushArgs,
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
    if let Some(name) = tracking_remote(ctx, &push_args.remote, &push_args.url)? {
        log.push("--not".into());
        log.push(format!("--remotes={name}").into());
    }
    let raw = git::log_raw_z(&ctx.repo.base, log)?;
    Ok(push::parse_entries(&raw))
}

/// The commits `remote` already has, for [`Check::public`]: the old tips git gave on stdin that
/// are at hand and the tips of its remote-tracking refs, each once.
fn public_tips(ctx: &Context, args: &PrePushArgs, updates: &[RefUpdate]) -> Result<Vec<String>> {
    let mut tips: Vec<String> = updates
        .iter()
        .filter(|u| !u.is_new() && ctx.repo.has_object(&u.remote_oid))
        .map(|u| u.remote_oid.clone())
        .collect();
    if let Some(name) = tracking_remote(ctx, &args.remote, &args.url)? {
        let tracking = git::branches_under(&ctx.repo.base, &format!("refs/remotes/{name}/"))?;
        tips.extend(tracking.into_iter().map(|(_, oid)| oid));
    }
    tips.sort();
    tips.dedup();
    Ok(tips)
}

/// The files kardwt shares from the base: names, and blob ids mapped to the name.
struct Shared {
    names: Vec<Vec<u8>>,
    blobs: BTreeMap<String, Vec<u8>>,
}

/// What the pushed entries are judged against.
struct Check<'a> {
    ctx: &'a Context,
    here: &'a Path,
    ignorecase: bool,
    /// Paths records list as links kardwt made.
    links: BTreeSet<Vec<u8>>,
    /// The linked worktrees' admin dirs, where the blob ids of their copies are kept.
    admins: Vec<std::path::PathBuf>,
    /// Commits the remote already has: its old tips git gave (those at hand) and the
    /// remote-tracking refs' tips. Content in their trees is public, not a secret.
    public: Vec<String>,
}

impl Check<'_> {
    /// Of `candidates` (blob ids a pushed commit brings that equal a shared file), those the
    /// remote already has in the tree of one of its commits: public content, not a secret (a
    /// `.env` copied unchanged from a tracked `.env.example`). What the base merely tracks does
    /// not count: committing a secret in the base would make it tracked. Read only when there
    /// are candidates, one `ls-tree` per remote tip until every candidate is found.
    fn public(&self, candidates: &BTreeSet<&str>) -> Result<BTreeSet<String>> {
        let mut found = BTreeSet::new();
        for tip in &self.public {
            if found.len() == candidates.len() {
                break;
            }
            let blobs = push::tree_blobs(&git::ls_tree_z(&self.ctx.repo.base, tip)?);
            found.extend(
                candidates
                    .iter()
                    .filter(|c| blobs.contains(**c))
                    .map(|c| (*c).to_owned()),
            );
        }
        Ok(found)
    }

    /// The first reason found not to push `pushed`, if any.
    fn forbidden(&self, pushed: &[Entry]) -> Result<Option<String>> {
        let brought: Vec<&Entry> = push::introduced(pushed)
            .into_iter()
            .filter(|e| e.mode != "160000")
            .collect();
        let says = |e: &Entry| if e.status == b'A' { "adds" } else { "changes" };
        for e in &brought {
            if let Some(l) = self.links.iter().find(|l| self.same(&e.path, l)) {
                return Ok(Some(format!(
                    "commit {} {} {}, a link kardwt shares from the base",
                    e.commit,
                    says(e),
                    push::show(l)
                )));
            }
        }
        let Shared {
            names: shared_names,
            blobs: shared_blobs,
        } = self.shared_from_base(&brought, pushed.iter().any(Entry::touches_symlink))?;
        for e in brought.iter().filter(|e| !e.is_symlink()) {
            if let Some(name) = shared_blobs.get(&e.blob) {
                return Ok(Some(format!(
                    "commit {} {} {}, whose content is the base's {}, a file kardwt shares",
                    e.commit,
                    says(e),
                    push::show(&e.path),
                    push::show(name)
                )));
            }
        }
        if let Some(why) = self.in_linked(&brought)? {
            return Ok(Some(why));
        }
        if let Some(why) = self.copied(&brought)? {
            return Ok(Some(why));
        }
        let envs: Vec<&&Entry> = brought
            .iter()
            .filter(|e| push::is_env_name(push::basename(&e.path), self.ignorecase))
            .collect();
        let paths: BTreeSet<&[u8]> = envs.iter().map(|e| &e.path[..]).collect();
        let hit = git::ignored_paths(self.here, &paths.into_iter().collect::<Vec<_>>(), true)?;
        if let Some(e) = envs.iter().find(|e| hit.contains(&e.path)) {
            return Ok(Some(format!(
                "commit {} {} {}, which the ignore rules exclude: a secret forced past .gitignore",
                e.commit,
                says(e),
                push::show(&e.path)
            )));
        }
        // Every linked path, not only the live records' links: after `remove` a symlink to a
        // path kardwt linked into that tree is refused all the same.
        let mut shared: Vec<Vec<u8>> = shared_names;
        if pushed.iter().any(Entry::touches_symlink) {
            shared.extend(self.linked_paths());
        }
        self.symlinks(pushed, &shared)
    }

    /// A blob equal to a file at or beneath a path kardwt links from the base (`sharing.link`,
    /// whole directories at any depth, the skills directories: what the records, the rules and
    /// the exclude block name), under any name, unless the remote already has that content. Sizes
    /// come first (one `git cat-file --batch-check`): a linked file is read only when it has
    /// the size of a pushed blob.
    fn in_linked(&self, brought: &[&Entry]) -> Result<Option<String>> {
        let base = &self.ctx.repo.base;
        let rels = self.linked_paths();
        let blobs: BTreeSet<&str> = brought
            .iter()
            .filter(|e| !e.is_symlink())
            .map(|e| e.blob.as_str())
            .collect();
        if rels.is_empty() || blobs.is_empty() {
            return Ok(None);
        }
        let input: Vec<u8> = blobs
            .iter()
            .flat_map(|o| o.bytes().chain([b'\n']))
            .collect();
        let sizes = push::parse_batch_check(&git::cat_file_batch_check(base, input)?);
        let found = crate::seed::linked::matching(base, &rels, &sizes, self.hash_kind());
        if found.is_empty() {
            return Ok(None);
        }
        let tracked = self.public(&found.keys().map(String::as_str).collect())?;
        let says = |e: &Entry| if e.status == b'A' { "adds" } else { "changes" };
        Ok(brought
            .iter()
            .filter(|e| !e.is_symlink() && !tracked.contains(&e.blob))
            .find_map(|e| {
                let file = found.get(&e.blob)?;
                Some(format!(
                    "commit {} {} {}, whose content is the base's {}, a file kardwt links",
                    e.commit,
                    says(e),
                    push::show(&e.path),
                    push::show(file)
                ))
            }))
    }

    /// Every path kardwt links from the base: what the records, kardwt's block in
    /// `info/exclude` (so a removed tree's links count) and the rules name.
    fn linked_paths(&self) -> BTreeSet<Vec<u8>> {
        let mut rels = self.links.clone();
        let excluded = crate::seed::links::excluded_links(&self.ctx.repo.common_dir);
        rels.extend(excluded.into_iter().map(String::into_bytes));
        // Rules that do not decode are reported by the commands that use them, not here.
        if let Ok(rules) = self.ctx.rules() {
            let link = rules.config.sharing.link.iter();
            rels.extend(link.map(|p| p.as_os_str().as_bytes().to_vec()));
        }
        rels
    }

    /// The repository's object format.
    fn hash_kind(&self) -> gix::hash::Kind {
        match self.ctx.repo.config_string("extensions.objectformat") {
            Some(f) if f.eq_ignore_ascii_case("sha256") => gix::hash::Kind::Sha256,
            _ => gix::hash::Kind::Sha1,
        }
    }

    /// A blob equal to a file kardwt copied into a worktree (its id kept at copy time), unless
    /// the remote already has that content; a file `.worktreeinclude` names, forced past the
    /// ignore rules.
    fn copied(&self, brought: &[&Entry]) -> Result<Option<String>> {
        let says = |e: &Entry| if e.status == b'A' { "adds" } else { "changes" };
        // The repository's list outlives the trees; the admin dirs hold the ids of copies
        // made before it existed.
        let mut copied = crate::state::blobs::load_repo(&self.ctx.repo.common_dir);
        for admin in &self.admins {
            copied.extend(crate::state::blobs::load(admin));
        }
        let hits: Vec<&&Entry> = brought
            .iter()
            .filter(|e| !e.is_symlink() && copied.contains_key(&e.blob))
            .collect();
        if !hits.is_empty() {
            let tracked = self.public(&hits.iter().map(|e| e.blob.as_str()).collect())?;
            if let Some(e) = hits.iter().find(|e| !tracked.contains(&e.blob)) {
                return Ok(Some(format!(
                    "commit {} {} {}, whose content is {}, a file kardwt copied into a worktree",
                    e.commit,
                    says(e),
                    push::show(&e.path),
                    copied.get(&e.blob).map_or("?", String::as_str)
                )));
            }
        }
        let Some(include) = crate::seed::copy::Include::load(&self.ctx.repo.base)
            .ok()
            .flatten()
        else {
            return Ok(None);
        };
        let named: Vec<&&Entry> = brought
            .iter()
            .filter(|e| {
                let rel = Path::new(std::ffi::OsStr::from_bytes(&e.path));
                include.includes(rel, false)
            })
            .collect();
        let paths: BTreeSet<&[u8]> = named.iter().map(|e| &e.path[..]).collect();
        let hit = git::ignored_paths(self.here, &paths.into_iter().collect::<Vec<_>>(), true)?;
        Ok(named.iter().find(|e| hit.contains(&e.path)).map(|e| {
            format!(
                "commit {} {} {}, which {} names and the ignore rules exclude: a file \
                 forced past .gitignore",
                e.commit,
                says(e),
                push::show(&e.path),
                crate::seed::copy::INCLUDE_FILE
            )
        }))
    }

    fn same(&self, a: &[u8], b: &[u8]) -> bool {
        push::same_path(a, b, self.ignorecase)
    }

    /// The base's root-level `.env`/`.env.*` files that git ignores and does not track (what
    /// `sharing.env: link` links), non-empty regular files (followed through a symlink) of at
    /// most 16 MiB: their names, and their blob ids (as stored, and with CRLF made LF, as a
    /// text conversion would commit them) mapped to the name, leaving out content the remote
    /// already has. Whether git ignores or tracks them is asked only when it matters: some pushed
    /// blob has one of their ids, or the names are needed (`need_names`: a pushed commit
    /// touches a symlink).
    fn shared_from_base(&self, pushed: &[&Entry], need_names: bool) -> Result<Shared> {
        const MAX: u64 = 16 << 20;
        let base = &self.ctx.repo.base;
        let kind = self.hash_kind();
        // Each candidate with its ids; two names may hold the same content.
        let mut files: Vec<(Vec<u8>, Vec<String>)> = Vec::new();
        let dir = std::fs::read_dir(base)
            .with_context(|| format!("could not read {}", base.display()))?;
        for entry in dir.filter_map(|e| e.ok()) {
            let name = entry.file_name().into_vec();
            if !push::is_env_name(&name, self.ignorecase) {
                continue;
            }
            let path = entry.path();
            let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX);
            let Some(data) = regular.then(|| std::fs::read(&path).ok()).flatten() else {
                continue;
            };
            if data.is_empty() {
                continue;
            }
            let hash = |content: &[u8]| -> Result<String> {
                Ok(
                    gix::objs::compute_hash(kind, gix::objs::Kind::Blob, content)
                        .context("could not hash a shared file")?
                        .to_string(),
                )
            };
            let ids = vec![hash(&data)?, hash(&push::crlf_to_lf(&data))?];
            files.push((name, ids));
        }
        let hit = |files: &[(Vec<u8>, Vec<String>)]| {
            pushed
                .iter()
                .any(|e| files.iter().any(|(_, ids)| ids.contains(&e.blob)))
        };
        if files.is_empty() || !(hit(&files) || need_names) {
            return Ok(Shared {
                names: Vec::new(),
                blobs: BTreeMap::new(),
            });
        }
        let refs: Vec<&[u8]> = files.iter().map(|(n, _)| n.as_slice()).collect();
        let shared = git::ignored_paths(base, &refs, false)?;
        files.retain(|(name, _)| shared.contains(name));
        if hit(&files) {
            // Content the remote already has is not a secret kardwt shares (a `.env` copied
            // unchanged from a tracked `.env.example`).
            let candidates: BTreeSet<&str> = files
                .iter()
                .flat_map(|(_, ids)| ids.iter().map(String::as_str))
                .filter(|id| pushed.iter().any(|e| e.blob == *id))
                .collect();
            let tracked = self.public(&candidates)?;
            for (_, ids) in &mut files {
                ids.retain(|id| !tracked.contains(id));
            }
        }
        let blobs = files
            .iter()
            .flat_map(|(name, ids)| ids.iter().map(move |id| (id.clone(), name.clone())))
            .collect();
        Ok(Shared {
            names: shared.into_iter().collect(),
            blobs,
        })
    }

    /// In every pushed commit whose diff touches a symlink, every symlink of its tree, resolved
    /// through the tree's other symlinks: none may leave the repository or reach `shared`.
    fn symlinks(&self, pushed: &[Entry], shared: &[Vec<u8>]) -> Result<Option<String>> {
        let commits: BTreeSet<&str> = pushed
            .iter()
            .filter(|e| e.touches_symlink())
            .map(|e| e.commit.as_str())
            .collect();
        let mut trees: Vec<(&str, push::TreeLinks)> = Vec::new();
        for commit in commits {
            let raw = git::ls_tree_z(&self.ctx.repo.base, commit)?;
            trees.push((commit, push::parse_tree_links(&raw)));
        }
        let oids: BTreeSet<&str> = trees
            .iter()
            .flat_map(|(_, l)| l.iter().map(|(_, o)| o.as_str()))
            .collect();
        if oids.is_empty() {
            return Ok(None);
        }
        let input: Vec<u8> = oids.iter().flat_map(|o| o.bytes().chain([b'\n'])).collect();
        let raw = git::cat_file_batch(&self.ctx.repo.base, input)?;
        let targets = push::parse_batch(&raw);
        for (commit, links) in &trees {
            let map: BTreeMap<Vec<u8>, Vec<u8>> = links
                .iter()
                .map(|(p, o)| (p.clone(), targets.get(o).cloned().unwrap_or_default()))
                .collect();
            for (path, target) in &map {
                let shown = format!("{} -> {}", push::show(path), push::show(target));
                match push::resolve_link(path, target, &map) {
                    Resolved::Leaves => {
                        return Ok(Some(format!(
                            "commit {commit} has the symlink {shown}, which leaves the repository"
                        )))
                    }
                    Resolved::Loop => {
                        return Ok(Some(format!(
                            "commit {commit} has the symlink {shown}, which loops"
                        )))
                    }
                    Resolved::Inside(to) => {
                        if let Some(s) = shared
                            .iter()
                            .find(|s| push::reaches(&to, s, self.ignorecase))
                        {
                            return Ok(Some(format!(
                                "commit {commit} has the symlink {shown}, which reaches {}, \
                                 a file kardwt shares from the base",
                                push::show(s)
                            )));
                        }
                    }
                }
            }
        }
        Ok(None)
    }
}

/// A push the hook blocks (exit 1, so git stops it): to which remote, and why.
#[derive(Debug, thiserror::Error)]
#[error("push to {remote} blocked: {}", refusal.why)]
struct Blocked {
    remote: String,
    refusal: Refusal,
}

impl Kind for Blocked {
    fn code(&self) -> Code {
        Code::Failed
    }
    fn hints(&self) -> Vec<String> {
        vec![self.refusal.hint.to_owned()]
    }
}
