//! Names that reach git (SPEC R-TRUST 1) and how values are quoted in errors (R-TRUST 2):
//! pure checks, used for the rules file, records and what a remote reports.
/// At most this many characters of any value are quoted in an error message (SPEC R-TRUST 2).
pub const QUOTE_CHARS: usize = 40;

/// `value` in double quotes, cut after [`QUOTE_CHARS`] characters with `…`, so an error about
/// a mistaken file (a symlink to `.env`) never prints a secret whole.
pub fn quote(value: &str) -> String {
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
pub fn check_ref_format(name: &str) -> Result<(), &'static str> {
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

/// A full branch ref, `refs/heads/<branch>`, that git accepts.
pub fn check_branch_ref(name: &str) -> Result<(), String> {
    match name.strip_prefix("refs/heads/") {
        Some(branch) if !branch.is_empty() && !branch.starts_with('-') => {
            check_ref_format(name).map_err(str::to_owned)
        }
        _ => Err("must be a full branch ref starting with refs/heads/".to_owned()),
    }
}

/// What a record's base may be: a full branch ref, a full tag ref (`refs/tags/<tag>`) that git
/// accepts, or a full commit id (what `add --base` takes).
pub fn check_base_ref(name: &str) -> Result<(), String> {
    let hex = |n: &str| {
        n.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if (name.len() == 40 || name.len() == 64) && hex(name) {
        return Ok(());
    }
    match name.strip_prefix("refs/tags/") {
        Some(tag) if !tag.is_empty() && !tag.starts_with('-') => {
            check_ref_format(name).map_err(str::to_owned)
        }
        Some(_) => Err("must name a tag after refs/tags/".to_owned()),
        None => check_branch_ref(name)
            .map_err(|_| "must be a full branch ref (refs/heads/…), a tag ref (refs/tags/…) or a full commit id".to_owned()),
    }
}

/// A remote name git accepts (`refs/remotes/<name>/x` is a valid ref) that can never be read
/// as an option.
pub fn check_remote_name(name: &str) -> Result<(), String> {
    if name.starts_with('-') {
        return Err("a remote name must not start with '-'".to_owned());
    }
    if name == "." || name == ".." {
        return Err("a remote name must not be \".\" or \"..\"".to_owned());
    }
    check_ref_format(&format!("refs/remotes/{name}/x"))
        .map_err(|why| format!("not a valid remote name ({why})"))
}

/// A record's `base_remote` and `base_ref` (`""`: not known), checked whenever a record is
/// read, so a tampered record is refused as malformed instead of handing its values to git.
pub fn check_recorded_base(remote: &str, base_ref: &str) -> Result<(), String> {
    check_remote_name(remote).map_err(|e| format!("base_remote {}: {e}", quote(remote)))?;
    if !base_ref.is_empty() {
        check_base_ref(base_ref).map_err(|e| format!("base_ref {}: {e}", quote(base_ref)))?;
    }
    Ok(())
}
