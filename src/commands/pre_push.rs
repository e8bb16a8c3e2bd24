//! `git kardwt hook pre-push <remote> <url>`: block a push (exit 1,
//! naming the reason, the path and the commit or object) from a managed worktree that fails
//! verification, or that sends an object holding bytes kardwt shared into a tree: of the
//! objects git would send (`git rev-list --objects` of every pushed ref, branches, tags to
//! commits, trees or blobs, notes, less what the remote has), a blob equal to a file kardwt
//! shares from the base (a root `.env`, or any file beneath a linked path), to any version of
//! those kardwt remembered, or to a file it copied into a worktree (also after that tree is
//! gone). Of the pushed commits (added, modified or type-changed entries; a merge diffed against
//! each parent, judged on what differs from all of them, its tree's symlinks on any change) it
//! also blocks a link kardwt made, a `.env`/`.env.*` at any depth that the ignore rules would
//! ignore, a file `.worktreeinclude` names forced past the ignore rules, or a symlink that
//! leaves the repository or reaches a shared file through the tree's other symlinks. Deletions
//! pass. Everything is read as bytes, in a handful of git processes whatever the ref count.
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::cli::PrePushArgs;
use crate::context::Context;
use crate::git;
use crate::ground::error::{Code, Fail, Kind};
use crate::state::Loaded;
use crate::verify::{self, Verdict};

mod push;
mod sent;
use push::{says, Entry, RefUpdate, Resolved, Sent};
use sent::{pushed_entries, remote_tips, sent_objects, tracking_remote};

/// Why a push is refused, and what to do instead.
#[derive(Debug)]
struct Refusal {
    why: String,
    hint: &'static str,
}

const UNDO: &str = "nothing was pushed; take the file out of the pushed commits (`git rm --cached \
                    <path>` and `git commit --amend`, or `git rebase -i` for an older commit; \
                    a tag or a note: delete it), then push again; pushing the same commits from \
                    another checkout is blocked too";

pub(crate) fn run(global: crate::cli::GlobalArgs, args: &PrePushArgs) -> Result<i32> {
    let started = Instant::now();
    // Read whole before anything else, so git never writes into a closed pipe.
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("could not read git's ref lines on stdin")?;
    let Some(ctx) = crate::context::hook_context(global, "pre-push")? else {
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
        ctx.cards.log(
            crate::state::EventKind::PushBlocked,
            card,
            &here,
            &refusal.why,
            started.elapsed(),
        );
        Fail::from(PushBlocked {
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
    let tracking = tracking_remote(&ctx, &args.remote, &args.url)?;
    let known = remote_tips(&ctx, tracking.as_deref(), &updates)?;
    // The pushed commits' entries and the objects git would send, read side by side (two git
    // processes); one after the other where the system refuses a thread.
    let base = ctx.repo.base.clone();
    let (pushed, sent) = std::thread::scope(|scope| {
        let sending = std::thread::Builder::new()
            .spawn_scoped(scope, || sent_objects(&base, &known, &updates))
            .ok();
        let pushed = pushed_entries(&ctx, tracking.as_deref(), &updates);
        let sent = match sending {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("reading the sent objects failed"))),
            None => sent_objects(&base, &known, &updates),
        };
        (pushed, sent)
    });
    let (pushed, sent) = (pushed?, sent?);
    if !pushed.is_empty() || !sent.is_empty() {
        let check = Check {
            ctx: &ctx,
            here: &here,
            ignorecase: config_bool(&ctx, "core.ignorecase"),
            links,
            admins: entries.iter().map(|e| e.linked.admin.clone()).collect(),
            kind: ctx.cards.hash_kind(),
            public: &known,
        };
        if let Some(why) = check.forbidden(&pushed, &sent, &updates)? {
            return Err(blocked(Refusal { why, hint: UNDO }, &card));
        }
    }
    ctx.cards.log(
        crate::state::EventKind::PushChecked,
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

/// The base's root `.env` files kardwt shares: names, and blob ids mapped to the name.
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
    /// The repository's object format.
    kind: gix::hash::Kind,
    /// Commits the remote already has: its old tips git gave (those at hand) and the
    /// remote-tracking refs' tips. Content in their trees is public, not a secret.
    public: &'a [String],
}

impl Check<'_> {
    /// Of the sent objects `holds` names, the first the remote does not already have in the
    /// tree of one of its commits (public content, not a secret: a `.env` copied unchanged from
    /// a tracked `.env.example`), with where it is sent and what `holds` says of it. What the
    /// base merely tracks does not count: committing a secret in the base would make it
    /// tracked. The remote's trees are read only when there is a hit, one `ls-tree` per
    /// remote tip until every hit is found.
    fn first_secret<'m>(
        &self,
        sent: &Sent<'_>,
        holds: &'m BTreeMap<String, Vec<u8>>,
    ) -> Result<Option<(String, &'m [u8])>> {
        let hits: BTreeSet<&str> = sent
            .objects
            .keys()
            .filter(|o| holds.contains_key(*o))
            .map(String::as_str)
            .collect();
        let mut public = BTreeSet::new();
        for tip in self.public {
            if hits.is_empty() || public.len() == hits.len() {
                break;
            }
            let blobs = push::tree_blobs(&git::ls_tree_z(&self.ctx.repo.base, tip)?);
            public.extend(hits.iter().filter(|h| blobs.contains(**h)).copied());
        }
        Ok(hits
            .iter()
            .find(|h| !public.contains(*h))
            .map(|h| (sent.site(h), &holds[*h][..])))
    }

    /// The first reason found not to push: `pushed` the commits' entries, `objects` every
    /// object git would send, `updates` the pushed refs (to name them).
    fn forbidden(
        &self,
        pushed: &[Entry],
        objects: &BTreeMap<String, Vec<u8>>,
        updates: &[RefUpdate],
    ) -> Result<Option<String>> {
        let sent = Sent {
            brought: push::introduced(pushed)
                .into_iter()
                .filter(|e| e.mode != "160000")
                .collect(),
            objects,
            updates,
        };
        for e in &sent.brought {
            if let Some(l) = self.links.iter().find(|l| self.same(&e.path, l)) {
                return Ok(Some(format!(
                    "commit {} {} {}, a link kardwt shares from the base",
                    e.commit,
                    says(e),
                    push::show(l)
                )));
            }
        }
        // The repository's list outlives the trees; the admin dirs hold the ids of copies
        // made before it existed.
        let mut remembered = self.ctx.cards.remembered_blobs();
        for admin in &self.admins {
            remembered.extend(crate::state::copied_blobs(admin));
        }
        let need_names = pushed.iter().any(Entry::touches_symlink);
        let shared = self.shared_from_base(objects, need_names, &remembered)?;
        if let Some((site, name)) = self.first_secret(&sent, &shared.blobs)? {
            return Ok(Some(format!(
                "{site}, whose content is the base's {}, a file kardwt shares",
                push::show(name)
            )));
        }
        if let Some(why) = self.in_linked(&sent)? {
            return Ok(Some(why));
        }
        let remembered: BTreeMap<String, Vec<u8>> = remembered
            .into_iter()
            .map(|(id, path)| (id, path.into_bytes()))
            .collect();
        if let Some((site, path)) = self.first_secret(&sent, &remembered)? {
            return Ok(Some(format!(
                "{site}, whose content is a version of {}, a file kardwt shared into a worktree",
                push::show(path)
            )));
        }
        if let Some(why) = self.forced_include(&sent.brought)? {
            return Ok(Some(why));
        }
        let envs: Vec<&&Entry> = sent
            .brought
            .iter()
            .filter(|e| git::is_env_name(push::basename(&e.path), self.ignorecase))
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
        let mut shared_paths: Vec<Vec<u8>> = shared.names;
        if need_names {
            shared_paths.extend(self.linked_paths());
        }
        self.symlinks(pushed, &shared_paths)
    }

    /// A sent blob equal to a file at or beneath a path kardwt links from the base
    /// (`sharing.link`, whole directories at any depth, the skills directories: what the
    /// records, the rules and the exclude block name), under any name. Sizes come first (one
    /// `git cat-file --batch-check`): a linked file is read only when it has the size of a sent
    /// blob.
    fn in_linked(&self, sent: &Sent<'_>) -> Result<Option<String>> {
        let base = &self.ctx.repo.base;
        let rels = self.linked_paths();
        if rels.is_empty() || sent.objects.is_empty() {
            return Ok(None);
        }
        let input: Vec<u8> = sent
            .objects
            .keys()
            .flat_map(|o| o.bytes().chain([b'\n']))
            .collect();
        let sizes = push::parse_batch_check(&git::cat_file_batch_check(base, input)?);
        let found =
            crate::seed::shared_files_matching(&self.ctx.links_from(), &rels, &sizes, self.kind);
        Ok(self.first_secret(sent, &found)?.map(|(site, file)| {
            format!(
                "{site}, whose content is the base's {}, a file kardwt links",
                push::show(file)
            )
        }))
    }

    /// Every path kardwt links from the base: what the records, kardwt's block in
    /// `info/exclude` (so a removed tree's links count) and the rules name.
    fn linked_paths(&self) -> BTreeSet<Vec<u8>> {
        let mut rels = self.links.clone();
        let excluded = crate::seed::excluded_links(&self.ctx.repo.common_dir);
        rels.extend(excluded.into_iter().map(String::into_bytes));
        // Rules that do not decode are reported by the commands that use them, not here.
        if let Ok(rules) = self.ctx.rules() {
            let link = rules.config.sharing.link.iter();
            rels.extend(link.map(|p| p.as_os_str().as_bytes().to_vec()));
        }
        rels
    }

    /// A file `.worktreeinclude` names, forced past the ignore rules.
    fn forced_include(&self, brought: &[&Entry]) -> Result<Option<String>> {
        let Some(include) = crate::seed::Include::load(&self.ctx.repo.base)
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
                crate::seed::INCLUDE_FILE
            )
        }))
    }

    fn same(&self, a: &[u8], b: &[u8]) -> bool {
        push::same_path(a, b, self.ignorecase)
    }

    /// The base's root-level `.env`/`.env.*` files that git ignores and does not track (what
    /// `sharing.env: link` links), non-empty regular files (followed through a symlink) of at
    /// most 16 MiB: their names, and their blob ids (as stored, and with CRLF made LF, as a
    /// text conversion would commit them) mapped to the name. Whether git ignores or tracks them
    /// is asked only when it matters: a sent object has one of their ids, the names are needed
    /// (`need_names`: a pushed commit touches a symlink), or their content is new to
    /// `remembered` (then the new version is added to the repository's list, so it stays
    /// blocked after the next edit).
    fn shared_from_base(
        &self,
        sent: &BTreeMap<String, Vec<u8>>,
        need_names: bool,
        remembered: &BTreeMap<String, String>,
    ) -> Result<Shared> {
        const MAX: u64 = 16 << 20;
        let Some((base, checkout)) = self.ctx.shared_from() else {
            return Ok(Shared {
                names: Vec::new(),
                blobs: BTreeMap::new(),
            });
        };
        let base = &base;
        // Each candidate with its ids; two names may hold the same content.
        let mut files: Vec<(Vec<u8>, Vec<String>)> = Vec::new();
        let dir = std::fs::read_dir(base)
            .with_context(|| format!("could not read {}", base.display()))?;
        for entry in dir.filter_map(|e| e.ok()) {
            let name = entry.file_name().into_vec();
            if !git::is_env_name(&name, self.ignorecase) {
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
                    gix::objs::compute_hash(self.kind, gix::objs::Kind::Blob, content)
                        .context("could not hash a shared file")?
                        .to_string(),
                )
            };
            let ids = vec![hash(&data)?, hash(&git::crlf_to_lf(&data))?];
            files.push((name, ids));
        }
        let ids = || files.iter().flat_map(|(_, ids)| ids);
        let hit = ids().any(|id| sent.contains_key(id));
        let new = ids().any(|id| !remembered.contains_key(id));
        if files.is_empty() || !(hit || need_names || new) {
            return Ok(Shared {
                names: Vec::new(),
                blobs: BTreeMap::new(),
            });
        }
        let refs: Vec<&[u8]> = files.iter().map(|(n, _)| n.as_slice()).collect();
        // A shared directory that is no checkout has no ignore rules: all of them are shared.
        let shared = match checkout {
            true => git::ignored_paths(base, &refs, false)?,
            false => refs.iter().map(|r| r.to_vec()).collect(),
        };
        files.retain(|(name, _)| shared.contains(name));
        let versions: Vec<(String, String)> = files
            .iter()
            .flat_map(|(name, ids)| ids.iter().map(move |id| (id, name)))
            .filter(|(id, _)| !remembered.contains_key(*id))
            .map(|(id, name)| (id.clone(), String::from_utf8_lossy(name).into_owned()))
            .collect();
        if let Err(e) = self.ctx.cards.remember_blobs(&versions) {
            eprintln!("warning: could not remember the base's .env version for pre-push: {e:#}");
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
        let targets = git::parse_batch(&raw);
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
struct PushBlocked {
    remote: String,
    refusal: Refusal,
}

impl Kind for PushBlocked {
    fn code(&self) -> Code {
        Code::Failed
    }
    fn hints(&self) -> Vec<String> {
        vec![self.refusal.hint.to_owned()]
    }
}
