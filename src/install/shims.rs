//! kardwt's git hook shims as facts: the templates, the line that
//! names the installing binary, the marks that say who owns a hook file, and the hooks
//! directory git really uses. `install-hooks` writes from these; `doctor` checks against them.
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::context::Context;
use crate::git;

/// The shims kardwt installs, by hook name.
pub(crate) const SHIMS: [(&str, &str); 2] = [
    (
        "post-checkout",
        include_str!("../../githooks/post-checkout"),
    ),
    ("pre-push", include_str!("../../githooks/pre-push")),
];

/// The line of a shim template that names the installing binary (empty in `githooks/`).
const BINARY_LINE: &str = "kardwt=''";

/// The word after the binary on the first line of a shim git runs through `git-kardwt` itself.
pub(crate) const INTERPRETER_ARG: &str = "hook-shim";

/// How git starts the post-checkout shim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// Through `/bin/sh` (the default): an ordinary checkout costs one small shell, and a gone
    /// binary falls back to `git kardwt`.
    Shell,
    /// Through `git-kardwt` itself (`install-hooks --direct`): no shell before a `git worktree
    /// add`'s hook, but a binary started on every checkout, and no hook while it is gone.
    Direct,
}

/// The shim `template` for the hook `name` as installed: its `kardwt=''` line names `exe`, the
/// absolute path of the installing `git-kardwt`, shell-quoted, so no PATH is needed. With
/// [`Start::Direct`] the post-checkout shim also names `exe` as its interpreter
/// (`#!<exe> hook-shim`) where the kernel can read that line, so no shell starts in between;
/// the pre-push shim always keeps the shell, which falls back to `git kardwt` when `exe` is
/// gone (pure).
pub(crate) fn shim_for(name: &str, template: &str, exe: Option<&str>, start: Start) -> String {
    let Some(exe) = exe else {
        return template.to_owned();
    };
    let named = template.replacen(BINARY_LINE, &format!("kardwt={}", sh_quote(exe)), 1);
    match interpreter_line(exe) {
        Some(line) if name == "post-checkout" && start == Start::Direct => {
            named.replacen("#!/bin/sh", &line, 1)
        }
        _ => named,
    }
}

/// `#!<exe> hook-shim`, where every kernel reads it whole: an absolute path, nothing the kernel
/// would split at, under the 128 bytes older Linux kernels read of a first line (pure).
fn interpreter_line(exe: &str) -> Option<String> {
    let line = format!("#!{exe} {INTERPRETER_ARG}");
    (exe.starts_with('/') && !exe.contains(char::is_whitespace) && line.len() < 128).then_some(line)
}

/// Does the shim `content` start `git-kardwt` directly (its first line names the binary)?
pub(crate) fn runs_directly(content: &str) -> bool {
    content
        .lines()
        .next()
        .is_some_and(|l| l.starts_with("#!/") && l.ends_with(&format!(" {INTERPRETER_ARG}")))
}

/// The binary a shim names on its `kardwt=` line, if any (pure; undoes [`sh_quote`]).
pub(crate) fn named_binary(shim: &str) -> Option<String> {
    let quoted = shim.lines().find_map(|l| l.strip_prefix("kardwt="))?;
    let mut out = String::new();
    let mut rest = quoted;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("\\'") {
            out.push('\'');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'')?;
            out.push_str(&r[..end]);
            rest = &r[end + 1..];
        } else {
            // A bare run (the quoter leaves plain words unquoted).
            let end = rest.find(['\'', '\\']).unwrap_or(rest.len());
            let bare = &rest[..end];
            if end == 0
                || bare
                    .chars()
                    .any(|c| c.is_whitespace() || "\"$`;&|<>()".contains(c))
            {
                return None;
            }
            out.push_str(bare);
            rest = &rest[end..];
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `s` in single quotes for sh, a `'` inside written as `'\''` (pure).
pub(super) fn sh_quote(s: &str) -> String {
    crate::ground::quote::sh(s)
}

/// The absolute path of this `git-kardwt`, when it is one a shell can name: the first
/// `git-kardwt` on `PATH` that is this very file, when one is (a package manager's link, such
/// as Homebrew's `bin/git-kardwt`, outlives an upgrade that moves the file it points to),
/// else the file's own path.
pub(crate) fn this_binary() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let pinned = on_path
        .iter()
        .filter(|d| d.is_absolute())
        .map(|d| d.join("git-kardwt"))
        .find(|p| std::fs::canonicalize(p).is_ok_and(|c| c == exe))
        .unwrap_or(exe);
    pinned
        .to_str()
        .filter(|s| !s.contains('\n'))
        .map(str::to_owned)
}

/// What marks a file as any of kardwt's shims.
pub(crate) const ANY_SHIM: &str = "shim (installed by `git kardwt install-hooks`";

/// Which hook manager (if any) owns a hook file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Absent,
    Kardwt,
    PreCommit,
    Lefthook,
    Husky,
    Other,
}

/// Classify the content of an existing hook (pure).
pub(crate) fn owner_of(content: Option<&str>, hooks_dir: &Path) -> Owner {
    let in_husky = hooks_dir.ends_with(".husky/_") || hooks_dir.ends_with(".husky");
    match content {
        None if in_husky => Owner::Husky,
        None => Owner::Absent,
        Some(c) if c.contains(ANY_SHIM) => Owner::Kardwt,
        Some(c) if c.contains("File generated by pre-commit") => Owner::PreCommit,
        Some(c) if c.contains("lefthook") => Owner::Lefthook,
        Some(c) if in_husky || c.contains("husky") => Owner::Husky,
        Some(_) => Owner::Other,
    }
}

/// The directory git runs hooks from, as seen from the base.
pub(crate) fn hooks_dir(ctx: &Context) -> Result<PathBuf> {
    let raw = git::git_path(&ctx.repo.base, "hooks")?;
    let p = Path::new(&raw);
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.repo.base.join(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners() {
        let d = Path::new("/r/.git/hooks");
        assert_eq!(owner_of(None, d), Owner::Absent);
        assert_eq!(owner_of(Some(SHIMS[0].1), d), Owner::Kardwt);
        assert_eq!(
            owner_of(Some("#!/bin/sh\n# File generated by pre-commit: x\n"), d),
            Owner::PreCommit
        );
        assert_eq!(
            owner_of(Some("#!/bin/sh\ncall_lefthook run\n"), d),
            Owner::Lefthook
        );
        assert_eq!(owner_of(Some("#!/bin/sh\necho mine\n"), d), Owner::Other);
        assert_eq!(owner_of(None, Path::new("/r/.husky/_")), Owner::Husky);
    }

    #[test]
    fn shims_name_the_installing_binary_and_read_it_back() {
        for (name, template) in SHIMS {
            assert_eq!(named_binary(template), None);
            for exe in ["/usr/local/bin/git-kardwt", "/opt/it's here/git-kardwt"] {
                let shim = shim_for(name, template, Some(exe), Start::Direct);
                assert_eq!(named_binary(&shim).as_deref(), Some(exe), "{shim}");
                assert_eq!(
                    owner_of(Some(&shim), Path::new("/r/.git/hooks")),
                    Owner::Kardwt
                );
            }
            assert_eq!(shim_for(name, template, None, Start::Direct), template);
        }
    }

    #[test]
    fn only_a_direct_post_checkout_shim_names_its_binary_as_interpreter_and_only_where_it_can() {
        let [(pc, pc_template), (pp, pp_template)] = SHIMS;
        let direct = shim_for(
            pc,
            pc_template,
            Some("/usr/local/bin/git-kardwt"),
            Start::Direct,
        );
        let shell = shim_for(
            pc,
            pc_template,
            Some("/usr/local/bin/git-kardwt"),
            Start::Shell,
        );
        assert!(
            shell.starts_with("#!/bin/sh\n") && !runs_directly(&shell),
            "{shell}"
        );
        assert!(
            direct.starts_with("#!/usr/local/bin/git-kardwt hook-shim\n"),
            "{direct}"
        );
        assert!(runs_directly(&direct));
        assert_eq!(
            named_binary(&direct).as_deref(),
            Some("/usr/local/bin/git-kardwt")
        );
        let long = format!("/{}/git-kardwt", "d".repeat(120));
        for exe in [
            "/opt/it's here/git-kardwt",
            "/opt/tab\there/git-kardwt",
            long.as_str(),
        ] {
            let shim = shim_for(pc, pc_template, Some(exe), Start::Direct);
            assert!(
                shim.starts_with("#!/bin/sh\n") && !runs_directly(&shim),
                "{shim}"
            );
            assert_eq!(named_binary(&shim).as_deref(), Some(exe));
        }
        let push = shim_for(
            pp,
            pp_template,
            Some("/usr/local/bin/git-kardwt"),
            Start::Direct,
        );
        assert!(
            push.starts_with("#!/bin/sh\n") && !runs_directly(&push),
            "{push}"
        );
        assert!(!runs_directly(pc_template));
    }
}
