//! `git kardwt install-hooks` / `uninstall-hooks`: put kardwt's shims into the
//! hooks directory git really uses (`git rev-parse --git-path hooks`, so `core.hooksPath` is
//! honoured). An existing hook is never overwritten: it is kept as `<name>.kardwt-chained` and
//! run first by the shim; with pre-commit the shim becomes `<name>.legacy`, which pre-commit
//! runs first; with lefthook or husky the exact lines to add are printed. Idempotent;
//! uninstall restores what was there byte for byte.
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::context::Context;
use crate::install::{hooks_dir, owner_of, shim_for, this_binary, Owner, Start, ANY_SHIM, SHIMS};

fn read(p: &Path) -> Option<String> {
    std::fs::read(p)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn write_executable(p: &Path, content: &str) -> Result<()> {
    std::fs::write(p, content).with_context(|| format!("could not write {}", p.display()))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("could not make {} executable", p.display()))
}

fn chained(hook: &Path) -> PathBuf {
    suffixed(hook, ".kardwt-chained")
}

fn suffixed(hook: &Path, suffix: &str) -> PathBuf {
    let mut s = hook.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

pub(crate) fn install(
    ctx: &Context,
    args: &crate::cli::InstallHooksArgs,
    out: &mut dyn Write,
) -> Result<i32> {
    let dir = hooks_dir(ctx)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let exe = this_binary();
    let start = match args.direct {
        true => Start::Direct,
        false => Start::Shell,
    };
    for (name, template) in SHIMS {
        let shim = &shim_for(name, template, exe.as_deref(), start);
        let hook = dir.join(name);
        let existing = read(&hook);
        match owner_of(existing.as_deref(), &dir) {
            Owner::Absent => {
                write_executable(&hook, shim)?;
                writeln!(out, "installed {}", hook.display())?;
            }
            Owner::Kardwt => {
                // An older shim, or one naming another binary, is brought up to date.
                if existing.as_deref() == Some(shim.as_str()) {
                    writeln!(out, "already installed: {}", hook.display())?;
                } else {
                    write_executable(&hook, shim)?;
                    writeln!(out, "updated {}", hook.display())?;
                }
            }
            Owner::Other => {
                let keep = chained(&hook);
                if keep.exists() {
                    anyhow::bail!(
                        "{} exists and so does {}: refusing to overwrite either; move one away by hand",
                        hook.display(),
                        keep.display()
                    );
                }
                std::fs::rename(&hook, &keep)
                    .with_context(|| format!("could not move {} aside", hook.display()))?;
                write_executable(&hook, shim)?;
                writeln!(
                    out,
                    "installed {} (your hook is kept as {} and runs first)",
                    hook.display(),
                    keep.display()
                )?;
            }
            Owner::PreCommit => {
                let legacy = suffixed(&hook, ".legacy");
                match read(&legacy) {
                    Some(c) if !c.contains(ANY_SHIM) => anyhow::bail!(
                        "pre-commit already runs {} first; add this line to it by hand:\n  {}",
                        legacy.display(),
                        husky_line(name)
                    ),
                    _ => write_executable(&legacy, shim)?,
                }
                writeln!(
                    out,
                    "installed {} (pre-commit runs it before its own hooks)",
                    legacy.display()
                )?;
            }
            Owner::Lefthook => {
                writeln!(
                    out,
                    "lefthook manages {}; add to lefthook.yml, then run `lefthook install`:",
                    hook.display()
                )?;
                writeln!(out, "{}", lefthook_lines(name))?;
            }
            Owner::Husky => {
                writeln!(
                    out,
                    "husky manages {}; add this line to .husky/{name}:",
                    dir.display()
                )?;
                writeln!(out, "{}", husky_line(name))?;
            }
        }
    }
    Ok(0)
}

/// The one line that runs kardwt from another hook script (post-checkout keeps the shim's
/// fast path: nothing starts on an ordinary checkout).
pub(crate) fn husky_line(name: &str) -> String {
    if name == "post-checkout" {
        format!("case \"$1\" in *[!0]*) ;; *) git kardwt hook {name} \"$@\" || exit $? ;; esac")
    } else {
        format!("git kardwt hook {name} \"$@\" || exit $?")
    }
}

/// The lefthook.yml lines that run kardwt's hook `name`.
pub(crate) fn lefthook_lines(name: &str) -> String {
    if name == "post-checkout" {
        format!("{name}:\n  commands:\n    kardwt:\n      run: git kardwt hook {name} {{1}} {{2}} {{3}}")
    } else {
        format!("{name}:\n  commands:\n    kardwt:\n      run: git kardwt hook {name} {{1}} {{2}}\n      use_stdin: true")
    }
}

pub(crate) fn uninstall(ctx: &Context, out: &mut dyn Write) -> Result<i32> {
    let dir = hooks_dir(ctx)?;
    for (name, _) in SHIMS {
        let hook = dir.join(name);
        let legacy = suffixed(&hook, ".legacy");
        if read(&hook).is_some_and(|c| c.contains(ANY_SHIM)) {
            let keep = chained(&hook);
            if keep.exists() {
                std::fs::rename(&keep, &hook)
                    .with_context(|| format!("could not restore {}", hook.display()))?;
                writeln!(out, "restored {}", hook.display())?;
            } else {
                std::fs::remove_file(&hook)
                    .with_context(|| format!("could not remove {}", hook.display()))?;
                writeln!(out, "removed {}", hook.display())?;
            }
        } else if read(&legacy).is_some_and(|c| c.contains(ANY_SHIM)) {
            std::fs::remove_file(&legacy)
                .with_context(|| format!("could not remove {}", legacy.display()))?;
            writeln!(out, "removed {}", legacy.display())?;
        } else {
            writeln!(out, "not installed: {}", hook.display())?;
        }
    }
    Ok(0)
}
