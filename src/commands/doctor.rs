//! `git kardwt doctor [--json] [--try]`: are the hooks installed where git
//! looks and is `git-kardwt` reachable on PATH; does the rules file decode; are `stable_root`
//! and the hook executables sound; which worktrees are unseeded, failed or prunable, which
//! claims are orphans, malformed, half-removed trees or interrupted intents, which trees
//! removals moved aside could not be deleted, and which temporary files killed writes left
//! (each with the command that fixes it); when the hook last fired. `--try` rehearses a whole creation on a throwaway card, runs the cleanup hook
//! as `remove` would and removes it again. Exit 1 when a problem was found.
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::context::Context;
use crate::lifecycle::{rehearse, Step};
use crate::sandbox;
use crate::state::State;
use crate::verify::{self, Verdict};

#[derive(Debug, Serialize)]
struct Finding {
    check: String,
    ok: bool,
    detail: String,
    /// The command that fixes it, when there is one.
    fix: Option<String>,
}

fn finding(check: &str, ok: bool, detail: impl Into<String>, fix: Option<String>) -> Finding {
    Finding {
        check: check.to_owned(),
        ok,
        detail: detail.into(),
        fix,
    }
}

pub(crate) fn run(ctx: &Context, args: &DoctorArgs, out: &mut dyn Write) -> Result<i32> {
    let mut findings = Vec::new();
    hooks_findings(ctx, &mut findings);
    let rules = ctx.rules();
    match &rules {
        Ok(r) => {
            let detail = r
                .file
                .as_ref()
                .map_or("no rules file: the defaults apply".to_owned(), |f| {
                    format!("{} decodes", f.display())
                });
            findings.push(finding("rules", true, detail, None));
            // The prepare cache's store: asked once, for at most a few seconds.
            let remote = r
                .config
                .prepare
                .as_ref()
                .and_then(|p| p.cache_remote.as_ref());
            if let Some(remote) = remote {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
                findings.push(match crate::seed::cache_remote_answers(remote, deadline) {
                    Ok(at) => finding("prepare.cache_remote", true, format!("{at} answers"), None),
                    Err(why) => finding(
                        "prepare.cache_remote",
                        false,
                        format!("{why:#}; every card prepares on this machine until it does"),
                        Some(
                            "check the endpoint, the network and this machine's credentials (AWS_ACCESS_KEY_ID, ~/.aws/credentials)".into(),
                        ),
                    ),
                });
                let writes = crate::seed::cache_writes(ctx.repo.config_string("kardwt.cacheWrite"));
                findings.push(match crate::seed::cache_signers(writes) {
                    Ok(who) => finding("prepare.cache_remote signers", true, who, None),
                    Err(why) => finding(
                        "prepare.cache_remote signers",
                        false,
                        format!("{why:#}"),
                        Some(
                            "ask whoever writes the cache for their key (git kardwt trust --public-key, run as them), check it is theirs, then git kardwt trust --signer KEY".into(),
                        ),
                    ),
                });
            }
            let mut said = std::collections::HashSet::new();
            for (key, argv) in [
                (
                    "worktree.prepare.argv",
                    r.config.prepare.as_ref().map(|p| &p.argv),
                ),
                (
                    "worktree.cleanup.argv",
                    r.config.cleanup.as_ref().map(|c| &c.argv),
                ),
            ] {
                let Some(argv) = argv else { continue };
                for (commit, at) in helper_commits(ctx, &r.config) {
                    // One cause once: the helpers directory not trusted at a commit is one
                    // finding, not one per hook that would run from it.
                    let site = commit.as_deref().map(|commit| sandbox::Site {
                        common_dir: &ctx.repo.common_dir,
                        repo_dir: &ctx.repo.base,
                        commit,
                    });
                    let res = sandbox::resolve_hook(argv, &r.config.helpers, key, site);
                    findings.push(match res {
                        Ok(Some(p)) => {
                            finding(key, true, format!("{} is sound{at}", p.display()), None)
                        }
                        Ok(None) => finding(key, true, format!("nothing to resolve{at}"), None),
                        Err(e) if !said.insert(e.to_string()) => continue,
                        Err(e) => {
                            let fix = e
                                .hints
                                .first()
                                .cloned()
                                .unwrap_or_else(|| "fix the rules file".into());
                            finding(key, false, format!("{e}{at}"), Some(fix))
                        }
                    });
                }
            }
        }
        Err(e) => findings.push(finding(
            "rules",
            false,
            format!("{e:#}"),
            Some("git kardwt config check".into()),
        )),
    }
    let entries = verify::scan(&ctx.repo)?;
    worktree_findings(ctx, &entries, &mut findings);
    leftover_findings(ctx, &entries, &mut findings);
    // Orphans: claims that outlived their worktree (or its directory).
    for (o, kind) in ctx.cards.orphans(&ctx.repo.base) {
        let detail = match kind {
            crate::state::Orphan::Gone => format!(
                "card {}'s claim names {}, which git no longer has: its cleanup and ports were never released",
                o.card,
                o.path.display()
            ),
            crate::state::Orphan::Replaced => format!(
                "card {}'s claim names {}, which now holds another worktree: the claim is stale",
                o.card,
                o.path.display()
            ),
        };
        findings.push(finding(
            "orphan",
            false,
            detail,
            Some("git kardwt gc --apply".into()),
        ));
    }
    // Malformed claims are reported, never acted on.
    for (c, why) in ctx.cards.malformed(&ctx.repo.base) {
        findings.push(finding(
            "claim",
            false,
            format!(
                "card {}'s claim is malformed: {why}; kardwt never acts on it",
                c.card
            ),
            Some(format!(
                "inspect {} and delete it by hand if no worktree of card {} is in use",
                ctx.cards.claim_file(&c.card).display(),
                c.card
            )),
        ));
    }
    // When each hook last fired, from the events only that hook writes.
    let events = ctx.cards.events(None).events;
    let last = |fired: fn(&crate::state::LoggedEvent) -> bool| {
        events
            .iter()
            .rev()
            .find(|e| fired(e))
            .map(|e| format!("{} ({} {})", e.time, e.event, e.path))
    };
    let post_checkout =
        last(|e| e.event == "hook-noop" || (e.event == "created" && e.outcome == "hook"));
    let pre_push = last(|e| e.event == "push-checked" || e.event == "push-blocked");
    let rehearsal = match (&rules, args.r#try) {
        (Ok(r), true) => Some(rehearse(ctx, &r.config)),
        (Err(_), true) => Some(vec![Step::timed(
            "rules",
            false,
            Duration::ZERO,
            "the rules file does not decode",
        )]),
        _ => None,
    };
    let problems = findings.iter().any(|f| !f.ok)
        || rehearsal
            .as_ref()
            .is_some_and(|steps| steps.iter().any(|s| !s.ok));
    if args.json {
        let json = DoctorJson {
            ok: !problems,
            checks: &findings,
            hook_last_fired: HooksFired {
                post_checkout: post_checkout.as_deref(),
                pre_push: pre_push.as_deref(),
            },
            r#try: rehearsal.as_deref(),
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        let w = crate::ground::cap::width(findings.iter().map(|f| f.check.as_str()), 22, 40);
        for f in &findings {
            writeln!(
                out,
                "{} {}{}",
                if f.ok { "ok  " } else { "FAIL" },
                crate::ground::cap::cell(&f.check, 5, w),
                f.detail
            )?;
            if let Some(fix) = f.fix.as_ref().filter(|_| !f.ok) {
                writeln!(out, "     fix: {fix}")?;
            }
        }
        for (name, when) in [("post-checkout", &post_checkout), ("pre-push", &pre_push)] {
            let when = when.as_deref().unwrap_or("never (per the event log)");
            writeln!(out, "{name} hook last fired: {when}")?;
        }
        for s in rehearsal.iter().flatten() {
            writeln!(out, "try  {}", s.line(w))?;
        }
    }
    Ok(i32::from(problems))
}

fn hooks_findings(ctx: &Context, findings: &mut Vec<Finding>) {
    match crate::install::hooks_dir(ctx) {
        Ok(dir) => {
            for (name, _) in crate::install::SHIMS {
                let hook = dir.join(name);
                let marker = format!("git-kardwt {name} shim");
                let ours = |p: &Path| std::fs::read_to_string(p).is_ok_and(|c| c.contains(&marker));
                let mut legacy = hook.as_os_str().to_owned();
                legacy.push(".legacy");
                // With lefthook or husky, the line install-hooks printed is in their files.
                let line = format!("git kardwt hook {name}");
                let managed = [
                    ctx.repo.base.join("lefthook.yml"),
                    ctx.repo.base.join(".husky").join(name),
                ]
                .iter()
                .any(|p| std::fs::read_to_string(p).is_ok_and(|c| c.contains(&line)));
                let installed = ours(&hook) || ours(Path::new(&legacy)) || managed;
                let detail = if installed {
                    format!("installed in {}", dir.display())
                } else {
                    format!("not installed in {}", dir.display())
                };
                let fix = Some("git kardwt install-hooks".to_owned());
                findings.push(finding(&format!("{name} hook"), installed, detail, fix));
            }
        }
        Err(e) => findings.push(finding("hooks", false, format!("{e:#}"), None)),
    }
    if let Some(p) = ctx
        .repo
        .config_string("core.hooksPath")
        .filter(|p| !Path::new(p).is_absolute())
    {
        findings.push(finding(
            "core.hooksPath",
            false,
            format!("{p:?} is relative: git resolves it against each worktree, so new worktrees may not find the hook"),
            Some(format!("git config core.hooksPath {}", crate::ground::quote::sh_path(&ctx.repo.base.join(&p)))),
        ));
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("git-kardwt").is_file()))
        .unwrap_or(false);
    // The binary each installed shim names (by absolute path): that is what a caller with a bare
    // PATH reaches; without one, the shim falls back to `git kardwt` on the caller's PATH.
    let named: Vec<(String, Option<String>, bool)> = crate::install::hooks_dir(ctx)
        .map(|dir| {
            crate::install::SHIMS
                .iter()
                .filter_map(|(name, _)| {
                    let hook = dir.join(name);
                    let mut legacy = hook.as_os_str().to_owned();
                    legacy.push(".legacy");
                    [hook, legacy.into()]
                        .iter()
                        .filter_map(|p| std::fs::read_to_string(p).ok())
                        .find(|c| c.contains(&format!("git-kardwt {name} shim")))
                        .map(|c| {
                            let direct = crate::install::runs_directly(&c);
                            ((*name).to_owned(), crate::install::named_binary(&c), direct)
                        })
                })
                .collect()
        })
        .unwrap_or_default();
    let executable = |p: &str| {
        std::fs::metadata(p).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        })
    };
    for (name, exe, direct) in &named {
        let ok = exe.as_deref().is_some_and(executable);
        let detail = match exe {
            Some(exe) if ok => format!("runs {exe}, whatever the caller's PATH"),
            Some(exe) if *direct => format!(
                "names {exe} as the hook's interpreter, which is gone: git cannot run the \
                 {name} hook, and every checkout says so and exits non-zero"
            ),
            Some(exe) => format!(
                "names {exe}, which is gone: falls back to `git kardwt` on the caller's PATH{}",
                if on_path { "" } else { " (not on this one)" }
            ),
            None => "names no binary (an older shim): a caller whose PATH lacks git-kardwt gets \
                     `'kardwt' is not a git command`"
                .to_owned(),
        };
        findings.push(finding(
            &format!("{name} shim binary"),
            ok,
            detail,
            Some("git kardwt install-hooks (rewrites the shims to name this binary)".into()),
        ));
    }
    findings.push(finding(
        "git-kardwt on PATH",
        on_path,
        if on_path {
            "found"
        } else {
            "not found on this PATH: `git kardwt` works only through the path the shims name"
        },
        Some("make install PREFIX=… and put PREFIX/bin on PATH".into()),
    ));
}

fn worktree_findings(ctx: &Context, entries: &[verify::Entry], findings: &mut Vec<Finding>) {
    // The intents of interrupted adds, by the path they name: what made an unseeded tree.
    let intents: std::collections::HashMap<std::path::PathBuf, crate::ground::card::CardId> = ctx
        .cards
        .claims()
        .into_iter()
        .filter(|c| c.state == crate::state::ClaimState::Intent)
        .map(|c| (c.path, c.card))
        .collect();
    // A delegated checkout has no index until its prepare hook makes one: only git's mark counts.
    let delegated = ctx
        .rules()
        .is_ok_and(|r| r.config.checkout.mode == crate::config::CheckoutMode::Delegated);
    let unseeded_probe = match delegated {
        true => verify::Probe::Mark,
        false => verify::Probe::Files,
    };
    // Each tree verified through maps built once (a linear search per tree is quadratic).
    let index = verify::Index::mapped(entries);
    for e in entries {
        let Some(path) = e.linked.path.clone() else {
            continue;
        };
        let at = crate::git::absolutize_keep_last(&path);
        let report = verify::verify_resolved(&ctx.repo, &index, at, None);
        let p = crate::ground::quote::sh_path(&path);
        let (ok, detail, fix) = match (report.verdict, report.state()) {
            (Verdict::Verified, Some(State::Ready)) => continue,
            // Released on purpose (a runner deletes it, or `add` takes it up again).
            (Verdict::Verified, Some(State::Released)) => (
                true,
                "released: its processes, cleanup hook and ports were released".to_owned(),
                format!("git kardwt remove --path {p} drops it; git kardwt prepare --path {p} uses it again"),
            ),
            (Verdict::Unseeded, _) => {
                // prepare refuses a tree whose checkout never completed: an add killed
                // during its own checkout is made again by the same add; any other is
                // repaired as prepare would say.
                let half = report
                    .admin
                    .as_deref()
                    .and_then(|a| verify::checkout_incomplete(&path, a, unseeded_probe));
                let card = intents.get(&path);
                let detail = match card {
                    Some(card) => format!("unseeded: a git kardwt add of card {card} was interrupted before it recorded the tree"),
                    None => "unseeded: created without the trigger".to_owned(),
                };
                match (half, card) {
                    (None, _) => (false, detail, format!("git kardwt prepare --path {p}")),
                    (Some(why), Some(card)) => (
                        false,
                        format!("{detail}; {}", why.describe()),
                        format!("git kardwt add {card}"),
                    ),
                    (Some(why), None) => (
                        false,
                        format!("{detail}; {}", why.describe()),
                        why.repair(&path),
                    ),
                }
            }
            // Prepare refuses a tree whose checkout never completed; its fix is
            // the one prepare would name.
            (Verdict::Verified, Some(s)) => match report
                .admin
                .as_deref()
                .and_then(|a| verify::checkout_incomplete(&path, a, verify::Probe::Files))
            {
                Some(why) => (
                    false,
                    format!("state {}; {}", s.as_str(), why.describe()),
                    why.repair(&path),
                ),
                None => (
                    false,
                    format!("state {}", s.as_str()),
                    format!("git kardwt prepare --path {p}"),
                ),
            },
            // Locked, so git keeps it (a removable disk); never prunable.
            (Verdict::Prunable, _) if report.locked => (
                true,
                "locked: its directory is missing, and git worktree lock keeps it".to_owned(),
                format!("git worktree unlock {p} if it is not coming back"),
            ),
            (Verdict::Prunable, _) => (
                false,
                "prunable: its directory is gone".to_owned(),
                "git kardwt gc --apply".to_owned(),
            ),
            _ => (false, report.explain(), "inspect it by hand".to_owned()),
        };
        findings.push(finding(&format!("worktree {p}"), ok, detail, Some(fix)));
    }
}

/// What interrupted commands left behind (orphans and malformed claims are
/// reported above): trees a failed removal left half deleted, intents of adds interrupted
/// before git created their tree, temporary files of killed writes.
fn leftover_findings(ctx: &Context, entries: &[verify::Entry], findings: &mut Vec<Finding>) {
    use crate::lifecycle::Unbacked;
    // Trees removals moved aside whose deletion failed: their bytes stay there.
    for a in ctx.cards.failing_asides() {
        let shown = crate::ground::quote::sh_path(&a.path);
        let retried = if a.attempts >= crate::state::ATTEMPTS {
            "no longer retried by itself"
        } else {
            "retried by the next command that takes the repository lock"
        };
        findings.push(finding(
            &format!("moved aside {shown}"),
            false,
            format!(
                "card {}'s tree, removed from {}, could not be deleted ({} attempt{}, {retried}): {}",
                a.card,
                a.from.display(),
                a.attempts,
                if a.attempts == 1 { "" } else { "s" },
                a.failed
            ),
            Some(format!(
                "fix what stops the deletion (an immutable file: chattr -i; a mount: umount), then \
                 git kardwt gc --apply; or delete {shown} by hand and run git kardwt gc --apply"
            )),
        ));
    }
    let every = std::collections::HashSet::new();
    for (claim, state) in crate::lifecycle::unbacked(ctx, entries, &every) {
        let card = crate::ground::quote::sh(&claim.card);
        match state {
            Unbacked::HalfRemoved(rem) => {
                let (detail, fix) = crate::lifecycle::remnant_advice(&rem);
                let check = format!("half-removed {}", crate::ground::quote::sh_path(rem.path()));
                findings.push(finding(&check, false, detail, Some(fix)));
            }
            Unbacked::Interrupted => {
                let interrupted = format!(
                    "card {}'s claim is the intent of a git kardwt add that was interrupted before git created its worktree",
                    claim.card
                );
                let (detail, fix) = if claim.path.symlink_metadata().is_err() {
                    (interrupted, format!("git kardwt add {card}"))
                } else {
                    (
                        format!(
                            "{interrupted}; {} holds something kardwt cannot prove it made",
                            claim.path.display()
                        ),
                        format!(
                            "move {} away, then run git kardwt add {card}",
                            crate::ground::quote::sh_path(&claim.path)
                        ),
                    )
                };
                findings.push(finding("intent", false, detail, Some(fix)));
            }
            Unbacked::Orphan | Unbacked::Malformed => {}
        }
    }
    let admins: Vec<std::path::PathBuf> = entries.iter().map(|e| e.linked.admin.clone()).collect();
    let temporaries = ctx.cards.dead_temporaries(&admins);
    if !temporaries.is_empty() {
        let shown: Vec<String> = temporaries
            .iter()
            .take(3)
            .map(|t| t.display().to_string())
            .collect();
        findings.push(finding(
            "temporary files",
            false,
            format!(
                "{} temporary file(s) that killed writes left: {}{}",
                temporaries.len(),
                shown.join(", "),
                if temporaries.len() > 3 { ", …" } else { "" }
            ),
            Some("git kardwt gc --apply".into()),
        ));
    }
}

/// `doctor --json`.
#[derive(Serialize)]
struct DoctorJson<'a> {
    ok: bool,
    checks: &'a [Finding],
    hook_last_fired: HooksFired<'a>,
    r#try: Option<&'a [Step]>,
}

/// When each of git's hooks last reached kardwt, from the event log.
#[derive(Serialize)]
struct HooksFired<'a> {
    #[serde(rename = "post-checkout")]
    post_checkout: Option<&'a str>,
    #[serde(rename = "pre-push")]
    pre_push: Option<&'a str>,
}

/// The commits whose committed helpers doctor checks, each with how its findings say it: the
/// base's HEAD and the last fetched tip of the base ref (where an upstream change shows
/// first). One `(None, "")` when hooks run from `stable_root`.
fn helper_commits(ctx: &Context, cfg: &crate::config::Config) -> Vec<(Option<String>, String)> {
    if cfg.helpers.from_repository.is_none() {
        return vec![(None, String::new())];
    }
    let mut out = vec![(ctx.head_commit(), " (at the base's HEAD)".to_owned())];
    let tracking = match &cfg.base.git_ref {
        Some(r) => format!(
            "refs/remotes/{}/{}",
            cfg.base.remote,
            r.strip_prefix("refs/heads/").unwrap_or(r)
        ),
        None => format!("refs/remotes/{}/HEAD", cfg.base.remote),
    };
    // The fetched tip is checked too only where its helpers differ from the HEAD's.
    let dir = cfg
        .helpers
        .from_repository
        .as_ref()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tree = |c: &str| crate::git::tree_id(&ctx.repo.base, c, &dir);
    if let Some(tip) = crate::git::ref_commit(&ctx.repo.base, &tracking) {
        let same = out[0]
            .0
            .as_deref()
            .is_some_and(|head| head == tip || tree(head).is_some_and(|t| Some(t) == tree(&tip)));
        if !same {
            let shown = tracking.strip_prefix("refs/remotes/").unwrap_or(&tracking);
            out.push((Some(tip), format!(" (at {shown}, last fetched)")));
        }
    }
    out
}
