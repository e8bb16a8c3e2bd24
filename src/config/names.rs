//! Names that reach git and how values are quoted in errors:
//! pure checks, used for the rules file, records and what a remote reports, and the ref
//! kardwt keeps a fetched base at.
/// At most this many characters of any value are quoted in an error message.
pub(super) const QUOTE_CHARS: usize = 40;

/// `value` in double quotes, cut after [`QUOTE_CHARS`] characters with `…`, so an error about
/// a mistaken file (a symlink to `.env`) never prints a secret whole.
pub(crate) fn quote(value: &str) -> String {
    let mut chars = value.chars();
    let shown: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{:?}", format!("{shown}…"))
    } else {
        format!("{shown:?}")
    }
}

/// git's refname rules (`git help check-ref-format`, without `--allow-onelevel`, without
/// `--refspec-pattern`): `Err` says which rule `name` breaks.
pub(super) fn check_ref_format(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("a ref name must not be empty");
    }
    if name == "@" {
        return Err("a ref name must not be \"@\"");
    }
    if name.starts_with('-') {
        return Err("a ref name must not start with '-'");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return Err("a ref name must not start or end with '/' or hold \"//\"");
    }
    if !name.contains('/') {
        return Err("a ref name must hold at least one '/'");
    }
    if name.ends_with('.') {
        return Err("a ref name must not end with '.'");
    }
    if name.contains("..") {
        return Err("a ref name must not hold \"..\"");
    }
    if name.contains("@{") {
        return Err("a ref name must not hold \"@{\"");
    }
    if name
        .chars()
        .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
    {
        return Err("a ref name must not hold control characters, space, ~ ^ : ? * [ or \\");
    }
    if name
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return Err("no part of a ref name may start with '.' or end with \".lock\"");
    }
    Ok(())
}

/// Why a name that reaches git was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NameError {
    #[error("must be a full branch ref starting with refs/heads/")]
    NotBranchRef,
    #[error("must name a tag after refs/tags/")]
    EmptyTag,
    #[error(
        "must be a full branch ref (refs/heads/…), a tag ref (refs/tags/…) or a full commit id"
    )]
    NotBase,
    #[error(
        "a pull request's number must be a positive decimal number, without sign or leading \
         zero (e.g. pr/7)"
    )]
    PrNumber,
    /// A rule of `git check-ref-format` the name breaks.
    #[error("{0}")]
    RefFormat(&'static str),
    #[error("a remote name must not start with '-'")]
    RemoteDash,
    #[error("a remote name must not be \".\" or \"..\"")]
    RemoteDots,
    #[error("not a valid remote name ({0})")]
    RemoteFormat(&'static str),
    /// One of a record's base fields, named, with its value quoted.
    #[error("{field} {}: {why}", quote(value))]
    Recorded {
        field: &'static str,
        value: String,
        why: Box<NameError>,
    },
}

/// A full branch ref, `refs/heads/<branch>`, that git accepts.
pub(crate) fn check_branch_ref(name: &str) -> Result<(), NameError> {
    match name.strip_prefix("refs/heads/") {
        Some(branch) if !branch.is_empty() && !branch.starts_with('-') => {
            check_ref_format(name).map_err(NameError::RefFormat)
        }
        _ => Err(NameError::NotBranchRef),
    }
}

/// The number of a pull request as `pr/<n>` names it: a positive decimal number, no sign, no
/// leading zero, at most 18 digits (so it fits any counter a forge keeps).
pub(crate) fn check_pr_number(n: &str) -> Result<u64, NameError> {
    let digits = !n.is_empty() && n.len() <= 18 && n.bytes().all(|b| b.is_ascii_digit());
    match n.parse::<u64>() {
        Ok(v) if digits && !n.starts_with('0') => Ok(v),
        _ => Err(NameError::PrNumber),
    }
}

/// The refs a forge keeps a change's head at, in the order they are asked for: GitHub's
/// `refs/pull/<n>/head`, then GitLab's `refs/merge-requests/<n>/head`.
pub(crate) fn pr_refs(n: u64) -> [String; 2] {
    [
        format!("refs/pull/{n}/head"),
        format!("refs/merge-requests/{n}/head"),
    ]
}

/// Is `name` one of [`pr_refs`] with a number [`check_pr_number`] takes?
pub(crate) fn is_pr_ref(name: &str) -> bool {
    ["refs/pull/", "refs/merge-requests/"].iter().any(|p| {
        name.strip_prefix(p)
            .and_then(|rest| rest.strip_suffix("/head"))
            .is_some_and(|n| check_pr_number(n).is_ok())
    })
}

/// What a record's base may be: a full branch ref, a full tag ref (`refs/tags/<tag>`) that git
/// accepts, a pull request's head ([`pr_refs`]) or a full commit id (what `add --base` takes).
pub(crate) fn check_base_ref(name: &str) -> Result<(), NameError> {
    if is_pr_ref(name) {
        return Ok(());
    }
    let hex = |n: &str| {
        n.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if (name.len() == 40 || name.len() == 64) && hex(name) {
        return Ok(());
    }
    match name.strip_prefix("refs/tags/") {
        Some(tag) if !tag.is_empty() && !tag.starts_with('-') => {
            check_ref_format(name).map_err(NameError::RefFormat)
        }
        Some(_) => Err(NameError::EmptyTag),
        None => check_branch_ref(name).map_err(|_| NameError::NotBase),
    }
}

/// Where kardwt keeps `base_ref` of `remote` as last fetched (pure): a branch at its
/// remote-tracking ref `refs/remotes/<remote>/<branch>`; a pull request's head
/// (`refs/pull/<n>/head`, `refs/merge-requests/<n>/head`) at
/// `refs/kardwt/remotes/<remote>/pull/<n>/head` (or `…/merge-requests/<n>/head`): not under
/// `refs/remotes/<remote>/`, where a branch of the remote named `pr/<n>` would land and which
/// `git fetch --prune` empties of whatever no branch of the remote backs. `None` for a tag or a
/// commit (a tag is kept at its own name, a commit by the card's branch).
pub(crate) fn tracking_ref_of(remote: &str, base_ref: &str) -> Option<String> {
    if let Some(branch) = base_ref.strip_prefix("refs/heads/") {
        return Some(format!("refs/remotes/{remote}/{branch}"));
    }
    let pr = base_ref.strip_prefix("refs/")?;
    check_base_ref(base_ref)
        .ok()
        .filter(|_| pr.starts_with("pull/") || pr.starts_with("merge-requests/"))
        .map(|_| format!("refs/kardwt/remotes/{remote}/{pr}"))
}

/// A remote name git accepts (`refs/remotes/<name>/x` is a valid ref) that can never be read
/// as an option.
pub(super) fn check_remote_name(name: &str) -> Result<(), NameError> {
    if name.starts_with('-') {
        return Err(NameError::RemoteDash);
    }
    if name == "." || name == ".." {
        return Err(NameError::RemoteDots);
    }
    check_ref_format(&format!("refs/remotes/{name}/x")).map_err(NameError::RemoteFormat)
}

/// A record's `base_remote` and `base_ref` (`""`: not known), checked whenever a record is
/// read, so a tampered record is refused as malformed instead of handing its values to git.
pub(crate) fn check_recorded_base(remote: &str, base_ref: &str) -> Result<(), NameError> {
    fn recorded<'a>(
        field: &'static str,
        value: &'a str,
    ) -> impl FnOnce(NameError) -> NameError + 'a {
        move |why| NameError::Recorded {
            field,
            value: value.to_owned(),
            why: Box::new(why),
        }
    }
    check_remote_name(remote).map_err(recorded("base_remote", remote))?;
    if !base_ref.is_empty() {
        check_base_ref(base_ref).map_err(recorded("base_ref", base_ref))?;
    }
    Ok(())
}
