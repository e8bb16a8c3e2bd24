//! `git kardwt cache remote [--json]`: the shared store the rules name for the prepare cache
//! (URL, endpoint, region), whether this machine uploads to it, and whether it answers (asked
//! once, for at most a few seconds, as `doctor` asks). Exit 1 when it does not answer. It
//! never prints a credential: only what the rules and the machine's opt-in say.
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::cli::CacheListArgs;
use crate::context::Context;

/// What `--json` prints; `configured: false` and nothing else when the rules name no store.
#[derive(Serialize)]
struct RemoteJson {
    configured: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<bool>,
    /// Where it is and that it answers, or why it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

pub fn run(ctx: &Context, args: &CacheListArgs, out: &mut dyn Write) -> Result<i32> {
    let rules = ctx.rules()?;
    let Some(remote) = rules
        .config
        .prepare
        .as_ref()
        .and_then(|p| p.cache_remote.clone())
    else {
        if args.json {
            let none = RemoteJson {
                configured: false,
                url: None,
                endpoint: None,
                region: None,
                writes: None,
                answers: None,
                detail: None,
            };
            writeln!(out, "{}", serde_json::to_string(&none)?)?;
        } else {
            writeln!(
                out,
                "no shared store: the rules name no prepare.cache_remote (every machine prepares for itself)"
            )?;
        }
        return Ok(0);
    };
    let url = match remote.prefix.trim_matches('/') {
        "" => format!("s3://{}", remote.bucket),
        prefix => format!("s3://{}/{prefix}", remote.bucket),
    };
    let writes = crate::seed::cache_writes(ctx.repo.config_string("kardwt.cacheWrite"));
    let deadline = Instant::now() + Duration::from_secs(15);
    let answered = crate::seed::cache_remote_answers(&remote, deadline);
    let ok = answered.is_ok();
    let detail = match answered {
        Ok(at) => format!("{at} answers"),
        Err(why) => format!("{why:#}"),
    };
    if args.json {
        let json = RemoteJson {
            configured: true,
            url: Some(url),
            endpoint: remote.endpoint.clone(),
            region: Some(remote.region.clone()),
            writes: Some(writes),
            answers: Some(ok),
            detail: Some(detail),
        };
        writeln!(out, "{}", serde_json::to_string(&json)?)?;
    } else {
        let endpoint = remote
            .endpoint
            .as_deref()
            .unwrap_or("AWS S3 (the region's endpoint)");
        let uploads = if writes {
            "yes (KARDWT_CACHE_WRITE or git config kardwt.cacheWrite)"
        } else {
            "no, reads only (KARDWT_CACHE_WRITE=1 or git config kardwt.cacheWrite true uploads)"
        };
        writeln!(out, "url:      {url}")?;
        writeln!(out, "endpoint: {endpoint}")?;
        writeln!(out, "region:   {}", remote.region)?;
        writeln!(out, "uploads:  {uploads}")?;
        writeln!(out, "answers:  {}: {detail}", if ok { "yes" } else { "no" })?;
    }
    Ok(if ok { 0 } else { 1 })
}
