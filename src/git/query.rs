//! Reads of the repository: ancestry and merge bases, HEAD and refs, git's own paths and
//! config, and the plumbing pre-push reads commits and trees through (replace refs off).
use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;

use super::argv::Argv;
use super::call::{raw_no_replace, run, Call};

/// Is `ancestor` an ancestor of (or equal to) `descendant`?
pub(crate) fn is_ancestor(dir: &Path, ancestor: &str, descendant: &str) -> bool {
    let args = Argv::new(["merge-base", "--is-ancestor"])
        .outside(ancestor)
        .outside(descendant);
    Call::new(dir, args).output().is_ok_and(|o| o.ok)
}

/// Does `base` already contain the changes of `branch` (a squash or rebase
/// merge)? True when merging `branch` into `base` (`git merge-tree --write-tree`, which touches
/// no worktree and no ref) merges cleanly and yields exactly `base`'s tree.
pub(crate) fn changes_contained(dir: &Path, base: &str, branch: &str) -> bool {
    let merged = Call::new(
        dir,
        Argv::new(["merge-tree", "--write-tree", "--no-messages"])
            .outside(base)
            .outside(branch),
    )
    .output();
    let Some(merged) = merged.ok().filter(|o| o.ok) else {
        return false;
    };
    let tree = merged.stdout.lines().next().unwrap_or_default().trim();
    let base_tree = run(
        dir,
        Argv::new(["rev-parse", "--verify", "--quiet"]).outside(format!("{base}^{{tree}}")),
    );
    !tree.is_empty() && base_tree.is_ok_and(|t| t == tree)
}

/// The merge base of `a` and `b`, if they have one.
pub(crate) fn merge_base(dir: &Path, a: &str, b: &str) -> Option<String> {
    run(dir, Argv::new(["merge-base"]).outside(a).outside(b)).ok()
}

/// The commit HEAD names in `dir`, if any.
pub(crate) fn head_oid(dir: &Path) -> Option<String> {
    run(dir, ["rev-parse", "--verify", "--quiet", "HEAD"]).ok()
}

/// The ref the symbolic ref `name` points to, if it is one.
pub(crate) fn symbolic_ref(dir: &Path, name: &str) -> Option<String> {
    run(dir, Argv::new(["symbolic-ref", "--quiet"]).outside(name)).ok()
}

/// `git rev-parse --git-path <what>` (the program's own name: `hooks`), as git prints it.
pub(crate) fn git_path(dir: &Path, what: &str) -> Result<String> {
    run(dir, ["rev-parse", "--git-path", what])
}

/// The common dir of the repository git finds from `dir`, absolute (asked of git itself, for
/// a repository kardwt could not open).
pub(crate) fn common_dir_of(dir: &Path) -> Option<std::path::PathBuf> {
    run(
        dir,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .ok()
    .filter(|d| !d.is_empty())
    .map(std::path::PathBuf::from)
}

/// What HEAD of the repository at `dir` names, asked of git (for refs gix cannot read, as in
/// a reftable repository): the branch (short name) when HEAD is symbolic, else the commit.
/// `None` when git cannot say.
pub(super) fn head_of(dir: &Path) -> Option<super::repo::Head> {
    if let Ok(full) = run(dir, ["symbolic-ref", "--quiet", "HEAD"]) {
        let short = full.strip_prefix("refs/heads/").unwrap_or(&full);
        return Some(super::repo::Head::Branch(short.to_owned()));
    }
    run(dir, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .ok()
        .map(super::repo::Head::Detached)
}

/// The tree HEAD of the repository at `dir` names, asked of git.
pub(super) fn head_tree(dir: &Path) -> Result<String> {
    run(dir, ["rev-parse", "--verify", "HEAD^{tree}"])
}

/// Does the repository's own config file (`--local`) set any `kardwt.*` key?
pub(crate) fn local_config_names_kardwt(dir: &Path) -> bool {
    run(dir, ["config", "--local", "--get-regexp", "^kardwt\\."]).is_ok_and(|o| !o.is_empty())
}

/// Where kardwt keeps the pull request heads it fetched (`<remote>/pull/<n>/head`, …), as a
/// `--glob`: refs of a remote as last fetched, like the remote-tracking refs.
const KEPT_REMOTE_REFS: &str = "--glob=refs/kardwt/remotes/*";

/// One commit HEAD has that no remote-tracking ref (nor a pull request head kardwt fetched)
/// reaches, if any.
pub(crate) fn unpushed_commit(dir: &Path) -> Result<Option<String>> {
    let args = [
        "rev-list",
        "-n",
        "1",
        "HEAD",
        "--not",
        "--remotes",
        KEPT_REMOTE_REFS,
    ];
    let out = run(dir, args)?;
    let oid = out.trim();
    Ok((!oid.is_empty()).then(|| oid.to_owned()))
}

/// Of the commits `heads`, those (and their ancestors) that no remote-tracking ref (nor a pull
/// request head kardwt fetched) reaches: one walk, `git rev-list --stdin --not --remotes
/// --glob=refs/kardwt/remotes/*`, the heads on stdin (any number of them).
pub(crate) fn not_on_remotes(
    dir: &Path,
    heads: &[&str],
) -> Result<std::collections::HashSet<String>> {
    if heads.is_empty() {
        return Ok(Default::default());
    }
    let mut input = heads.join("\n");
    input.push('\n');
    let args = [
        "rev-list",
        "--stdin",
        "--not",
        "--remotes",
        KEPT_REMOTE_REFS,
    ];
    let out = Call::new(dir, args).stdin(input.into_bytes()).run()?;
    Ok(out.lines().map(str::to_owned).collect())
}

/// Of the commits `tips` and their ancestors, those no ref outside `refs/heads/<mine>*` reaches:
/// not a remote-tracking ref, not a tag, not another local branch. One walk, `git rev-list
/// --stdin --not --remotes --tags --exclude=<mine>* --branches`, the tips on stdin (one this
/// repository no longer has is skipped). `mine` is the branch prefix under `refs/heads/` whose
/// refs do not count (`card/`).
pub(crate) fn on_no_other_ref(
    dir: &Path,
    tips: &[&str],
    mine: &str,
) -> Result<std::collections::HashSet<String>> {
    if tips.is_empty() {
        return Ok(Default::default());
    }
    let mut input = tips.join("\n");
    input.push('\n');
    let args = Argv::new([
        "rev-list".to_owned(),
        "--ignore-missing".to_owned(),
        "--stdin".to_owned(),
        "--not".to_owned(),
        "--remotes".to_owned(),
        "--tags".to_owned(),
        format!("--exclude={mine}*"),
        "--branches".to_owned(),
    ]);
    let out = Call::new(dir, args).stdin(input.into_bytes()).run()?;
    Ok(out.lines().map(str::to_owned).collect())
}

/// The commits of `heads` that `base` lacks and that make no change a commit of `base` (since
/// their merge base) also makes: `git rev-list --cherry-mark --right-only <base>...<head>…`'s
/// `+` lines, `git cherry`'s rule (patch ids; a merge commit never matches), oldest first. A
/// head this repository no longer has is skipped.
pub(crate) fn without_equivalent(dir: &Path, base: &str, heads: &[&str]) -> Result<Vec<String>> {
    let mut args = Argv::new([
        "rev-list",
        "--reverse",
        "--ignore-missing",
        "--cherry-mark",
        "--right-only",
    ]);
    for head in heads {
        args = args.outside(format!("{base}...{head}"));
    }
    let out = run(dir, args)?;
    Ok(out
        .lines()
        .filter_map(|l| l.strip_prefix('+'))
        .map(str::to_owned)
        .collect())
}

/// The HEAD reflog of the worktree at `worktree` as git keeps it in a loose `logs/HEAD`
/// (`<old> <new> <ident> <time> <zone>\t<message>` per line, oldest first), asked of git
/// (`git log --walk-reflogs`) for a ref store without loose logs (reftable). Each entry's old
/// id is the one before it (git's walk prints only the new). Empty when there is none.
pub(crate) fn head_reflog(worktree: &Path) -> Result<String> {
    let args = [
        "log",
        "--walk-reflogs",
        "--no-show-signature",
        "--date=raw",
        "--format=%H%x09%gd%x09%gn <%ge>%x09%gs",
        "HEAD",
        "--",
    ];
    let out = run(worktree, args)?;
    let mut entries: Vec<(&str, &str, &str, &str)> = Vec::new();
    for line in out.lines() {
        let mut f = line.splitn(4, '\t');
        let (Some(new), Some(selector), Some(ident), Some(message)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        // `HEAD@{<time> <zone>}` under --date=raw.
        let when = selector
            .rsplit_once("@{")
            .map_or("", |(_, w)| w.trim_end_matches('}'));
        entries.push((new, ident, when, message));
    }
    let zero = "0".repeat(entries.first().map_or(40, |e| e.0.len()));
    let mut text = String::new();
    let mut old = zero.as_str();
    for (new, ident, when, message) in entries.iter().rev() {
        text.push_str(&format!("{old} {new} {ident} {when}\t{message}\n"));
        old = new;
    }
    Ok(text)
}

/// When (Unix seconds) the reflog of `name` (a full ref name) last recorded a move, asked of
/// git run in `dir` (a worktree or a git dir), for a ref store without loose logs
/// (reftable); `None` without a reflog.
pub(crate) fn reflog_time(dir: &Path, name: &str) -> Option<u64> {
    let args = Argv::new([
        "log",
        "--walk-reflogs",
        "--no-show-signature",
        "--max-count=1",
        "--date=unix",
        "--format=%gd",
    ])
    .outside(name);
    let args: Vec<OsString> = args.into_iter().chain([OsString::from("--")]).collect();
    let out = Call::new(dir, args).untraced().output().ok()?;
    // `<short name>@{<time>}` under --date=unix.
    let (_, when) = out.stdout.trim_end().rsplit_once("@{")?;
    when.strip_suffix('}')?.parse().ok()
}

/// The commits the reflogs of `refs` (full ref names) have named, by ref: one `git log
/// --walk-reflogs` for all of them. A ref without a reflog has none.
pub(crate) fn reflog_commits(
    dir: &Path,
    refs: &[&str],
) -> Result<std::collections::HashMap<String, Vec<String>>> {
    let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
    if refs.is_empty() {
        return Ok(out);
    }
    let mut args = Argv::new([
        "log",
        "--walk-reflogs",
        "--no-show-signature",
        "--format=%gD %H",
    ]);
    for r in refs {
        args = args.outside(*r);
    }
    let args: Vec<OsString> = args.into_iter().chain([OsString::from("--")]).collect();
    for line in run(dir, args)?.lines() {
        let Some((entry, oid)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = entry.rsplit_once("@{").map_or(entry, |(n, _)| n);
        out.entry(name.to_owned()).or_default().push(oid.to_owned());
    }
    Ok(out)
}

/// Does a remote-tracking ref of `remote` (`refs/remotes/<remote>/…`) reach the commit `oid`
/// (a full object id)? `git for-each-ref --count=1 --contains`.
pub(crate) fn tracking_contains(dir: &Path, remote: &str, oid: &str) -> Result<bool> {
    let args = Argv::new([
        "for-each-ref".to_owned(),
        "--count=1".to_owned(),
        "--format=%(refname)".to_owned(),
        format!("--contains={oid}"),
    ])
    .outside(format!("refs/remotes/{remote}/"));
    Ok(!run(dir, args)?.trim().is_empty())
}

/// Is the commit `oid` one of `tips` or an ancestor of one? Tips this repository lacks are
/// skipped (`--ignore-missing`): one `git rev-list -n 1 --stdin` walk, `oid ^tip…` on stdin.
pub(crate) fn reachable_from_any(dir: &Path, oid: &str, tips: &[&str]) -> Result<bool> {
    let mut input = format!("{oid}\n");
    for t in tips {
        input.push_str(&format!("^{t}\n"));
    }
    let out = Call::new(dir, ["rev-list", "-n", "1", "--ignore-missing", "--stdin"])
        .stdin(input.into_bytes())
        .run()?;
    Ok(out.trim().is_empty())
}

/// pre-push's one pass over the pushed commits (`revs`: tips, `^boundaries`, `--not
/// --remotes=<name>`, all made by the program from git's own output): every commit with its
/// parents and its raw diff against each parent (a root against the empty tree), `-z`.
pub(crate) fn log_raw_z(dir: &Path, revs: Vec<OsString>) -> Result<Vec<u8>> {
    let mut args: Vec<OsString> = [
        "log",
        "-z",
        "--format=%H %P",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        "--diff-merges=separate",
        "--root",
        "--no-show-signature",
        "--no-relative",
    ]
    .map(OsString::from)
    .to_vec();
    args.extend(revs);
    args.push("--".into());
    raw_no_replace(dir, args, None)
}

/// `git rev-list --objects --stdin` with `revs` (one a line, `^<oid>` for what is not wanted)
/// on stdin: every object reachable from the wanted and not from the unwanted, one process
/// for any number of refs. Each line is `<oid>` or `<oid> <path>` (a path cut at a newline).
pub(crate) fn rev_list_objects(dir: &Path, revs: Vec<u8>) -> Result<Vec<u8>> {
    let args = ["rev-list", "--objects", "--stdin"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), Some(revs))
}

/// `git ls-tree -r -z --full-tree <commit>`: every entry of a commit's tree.
pub(crate) fn ls_tree_z(dir: &Path, commit: &str) -> Result<Vec<u8>> {
    let args = ["ls-tree", "-r", "-z", "--full-tree", commit, "--"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// `git cat-file --batch` with one object id a line on stdin.
pub(crate) fn cat_file_batch(dir: &Path, oids: Vec<u8>) -> Result<Vec<u8>> {
    let args = ["cat-file", "--batch"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), Some(oids))
}

/// `git cat-file --batch-check`: `<oid> <type> <size>` (or `<oid> missing`) per line of `oids`.
pub(crate) fn cat_file_batch_check(dir: &Path, oids: Vec<u8>) -> Result<Vec<u8>> {
    let args = ["cat-file", "--batch-check"].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), Some(oids))
}

/// `git config -z --get-regexp <regexp>` (the program's own pattern).
pub(crate) fn config_regexp_z(dir: &Path, regexp: &str) -> Result<Vec<u8>> {
    let args = ["config", "-z", "--get-regexp", regexp].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// Does ref `name` (a full ref name) exist in `dir`'s repository?
pub(crate) fn ref_exists(dir: &Path, name: &str) -> bool {
    run(
        dir,
        Argv::new(["rev-parse", "--verify", "--quiet"]).outside(name),
    )
    .is_ok()
}

/// The local branches under `prefix` (`refs/heads/card/`), each with the commit it names:
/// `(full ref name, object id)`. Ref names hold no space or newline, so text is safe.
pub(crate) fn branches_under(dir: &Path, prefix: &str) -> Result<Vec<(String, String)>> {
    let out = run(
        dir,
        Argv::new(["for-each-ref", "--format=%(refname) %(objectname)"]).outside(prefix),
    )?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(r, o)| (r.to_owned(), o.to_owned()))
        .collect())
}

/// The commit the full ref `name` names now, if it exists.
pub(crate) fn ref_commit(dir: &Path, name: &str) -> Option<String> {
    run(
        dir,
        Argv::new(["rev-parse", "--verify", "--quiet"]).outside(format!("{name}^{{commit}}")),
    )
    .ok()
}

/// The id of the tree at `path` (relative to the root) in `commit`, when it is a directory
/// there (`git ls-tree -d -z`).
pub(crate) fn tree_id(dir: &Path, commit: &str, path: &str) -> Option<String> {
    let args = ["ls-tree", "-d", "-z", "--full-tree", commit, "--", path].map(OsString::from);
    let raw = raw_no_replace(dir, args.to_vec(), None).ok()?;
    raw.split(|b| *b == 0).find_map(|rec| {
        let tab = rec.iter().position(|b| *b == b'\t')?;
        let meta = std::str::from_utf8(&rec[..tab]).ok()?;
        match meta.split(' ').collect::<Vec<_>>().as_slice() {
            ["040000", "tree", oid] if &rec[tab + 1..] == path.as_bytes() => {
                Some((*oid).to_owned())
            }
            _ => None,
        }
    })
}

/// `git ls-tree -r -z --full-tree <commit> -- <path>`: the entries beneath one directory.
pub(crate) fn ls_tree_path_z(dir: &Path, commit: &str, path: &str) -> Result<Vec<u8>> {
    let args = ["ls-tree", "-r", "-z", "--full-tree", commit, "--", path].map(OsString::from);
    raw_no_replace(dir, args.to_vec(), None)
}

/// The value of `key` in the user's own git config (`--global`: `~/.gitconfig` or
/// `$XDG_CONFIG_HOME/git/config`), if it is set.
pub(crate) fn user_config_get(dir: &Path, key: &str) -> Option<String> {
    run(dir, Argv::new(["config", "--global", "--get"]).outside(key))
        .ok()
        .filter(|v| !v.is_empty())
}

/// Set `key` to `value` in the user's own git config (`--global`), written by git itself.
pub(crate) fn user_config_set(dir: &Path, key: &str, value: &str) -> Result<()> {
    run(
        dir,
        Argv::new(["config", "--global", "--replace-all"])
            .outside(key)
            .outside(value),
    )
    .map(drop)
}

/// The value of git config `key` (the program's own key name), if it is set.
pub(crate) fn config_get(dir: &Path, key: &str) -> Option<String> {
    run(dir, Argv::new(["config", "--get"]).outside(key))
        .ok()
        .filter(|v| !v.is_empty())
}
