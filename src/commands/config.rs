//! `git kardwt config check [--json]`: validate the rules strictly, apply
//! every check `add` and `doctor` apply to them (each hook's `argv[0]` resolved beneath
//! `stable_root`, or in the trusted copy of the committed helpers at the base's HEAD, by the
//! same functions, so the refusal reads the same), and print the
//! effective configuration, defaults filled in. Exit 2 on any configuration error. The YAML
//! printed is itself a valid rules file meaning the same configuration: an unset value
//! (`ref`, `ports`, a hook) is left out, never printed as the `null` the decoder refuses.
use std::io::Write;

use anyhow::Result;

use crate::cli::ConfigCheckArgs;
use crate::context::Context;

pub(crate) fn check(ctx: &Context, args: &ConfigCheckArgs, out: &mut dyn Write) -> Result<i32> {
    let rules = ctx.rules()?;
    // What `add` (prepare) and `remove` (cleanup) would refuse before running anything.
    // Committed helpers: as trusted for the base's HEAD.
    let head = ctx.head_commit();
    crate::seed::check_hooks(ctx, &rules.config, head.as_deref())?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&rules.config)?)?;
        return Ok(0);
    }
    match &rules.file {
        Some(f) => eprintln!("{}: ok", f.display()),
        None => eprintln!(
            "no rules file ({}): defaults apply",
            ctx.rules_path().0.display()
        ),
    }
    let mut effective = serde_json::json!({ "worktree": rules.config });
    drop_nulls(&mut effective);
    let yaml = yaml_serde::to_string(&effective)?;
    write!(out, "{yaml}")?;
    Ok(0)
}

/// Remove every `null` member of the objects in `value`, at any depth.
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            members.retain(|_, v| !v.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
