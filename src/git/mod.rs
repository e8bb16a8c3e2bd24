//! Everything kardwt asks of git, by topic; the only place that builds git's argv and spawns
//! `git`. Typed operations live in the topic files; every one that mutates the
//! repository (worktree add, remove, prune, branch delete, fetch) takes a
//! [`RepoLock`](crate::sys::RepoLock), which only [`crate::sys::take_repo_lock`] creates, so
//! holding the lock is checked by the compiler. Output parsers are pure, in [`parse`].
//!
//! | file | one job |
//! |---|---|
//! | `call` | the single spawner: scrubbed environment, deadline, trace |
//! | `argv` | the `Argv` builder, outside operands after `--end-of-options` |
//! | `worktree` | worktree add and remove, branch delete, status and ls-files of a tree |
//! | `branch_loss` | whether deleting a `card/*` branch would lose a commit (every deletion asks) |
//! | `query` | ancestry, merge bases, HEAD, refs, git paths and config, pre-push plumbing |
//! | `remote` | fetch, ls-remote, a remote's URL, what a failure tells the user |
//! | `parse` | git's output, parsed (pure) |
//! | `repo` | locating the repository with gix: common dir, base, admin dirs |
//! | `checkout` | whether a checkout matches its HEAD, judged in-process |
//! | `materialize` | a new tree's plain checkout written in-process on every core |
//! | `cache_tree` | the cache tree git's checkout primes, and the index written with it |
mod argv;
mod branch_loss;
mod cache_tree;
mod call;
mod checkout;
mod materialize;
mod parse;
mod query;
mod remote;
mod repo;
mod tree_files;
mod worktree;

pub(crate) use branch_loss::{may_delete_branch, History, MINE as CARD_BRANCHES};
pub(crate) use call::{raw_no_replace, Output};
pub(crate) use checkout::{gap as checkout_gap, Follow, Gap};
pub(crate) use materialize::check_out;
pub(crate) use parse::{
    crlf_to_lf, display_path, is_env_name, is_oid, parse_batch, FlaggedEntry, IndexEntry,
    StatusEntry,
};
#[cfg(test)]
pub(crate) use parse::{index_z as parse_index_z, status_z as parse_status_z};
pub(crate) use query::{
    branches_under, cat_file_batch, cat_file_batch_check, changes_contained, common_dir_of,
    config_get, config_regexp_z, git_path, head_oid, head_reflog, is_ancestor,
    local_config_names_kardwt, log_raw_z, ls_tree_path_z, ls_tree_z, merge_base, not_on_remotes,
    on_no_other_ref, reachable_from_any, ref_commit, ref_exists, reflog_commits, reflog_time,
    rev_list_objects, symbolic_ref, tracking_contains, tree_id, unpushed_commit, user_config_get,
    user_config_set, without_equivalent,
};
pub(crate) use remote::{
    fetch_ref, ls_remote_head, ls_remote_refs, remote_failure, remote_url, symref_head,
};
pub(crate) use repo::{
    absolutize, absolutize_keep_last, canonical, linked_at, names_gone_admin, read_admin_gitdir,
    read_bounded, read_dot_git, read_head, remembered_base, Head, Layout, Linked, NoRepo, Parents,
    PostCheckout, Repo,
};
pub(crate) use worktree::{
    ahead_behind, branch_delete, check_ignore, check_ignore_z, checked_out_branches, flagged_z,
    hash_paths, ignored_paths, index_z, is_dirty, ls_ignored_untracked_z, status_z, worktree_add,
    worktree_remove, Force, NewWorktree,
};

#[cfg(test)]
mod tests {
    use super::argv::Argv;

    fn strings(argv: &Argv) -> Vec<String> {
        argv.into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn outside_operands_follow_a_single_end_of_options() {
        let argv = Argv::new(["fetch", "--quiet"])
            .fixed("--no-tags")
            .outside("--upload-pack=touch x")
            .outside("+refs/heads/main:refs/remotes/o/main");
        assert_eq!(
            strings(&argv),
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--end-of-options",
                "--upload-pack=touch x",
                "+refs/heads/main:refs/remotes/o/main"
            ]
        );
    }

    #[test]
    fn without_outside_operands_nothing_is_added() {
        assert_eq!(strings(&Argv::new(["status"])), ["status"]);
    }

    #[test]
    fn pathspecs_follow_a_double_dash() {
        let argv = Argv::new(["check-ignore"]).paths(["-x", ".env"]);
        assert_eq!(strings(&argv), ["check-ignore", "--", "-x", ".env"]);
    }

    #[test]
    fn remote_failures_are_one_line_with_a_hint() {
        let raw = "fatal: '/gone/x.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        let f = super::remote_failure("origin", Some("/gone/x.git"), "its HEAD", raw);
        assert_eq!(f.code as i32, 1);
        assert!(!f.message.contains('\n'), "{}", f.message);
        assert!(f.message.contains("does not appear to be a git repository"));
        assert_eq!(f.hints.len(), 1);
        let f = super::remote_failure("origin", None, "its HEAD", raw);
        assert_eq!(f.code as i32, 2);
        assert!(
            f.message.contains("no remote named origin"),
            "{}",
            f.message
        );
        let f = super::remote_failure(
            "origin",
            Some("u"),
            "refs/heads/nope",
            "fatal: couldn't find remote ref refs/heads/nope\n",
        );
        assert_eq!(f.code as i32, 2);
        assert!(
            f.message.contains("has no refs/heads/nope"),
            "{}",
            f.message
        );
        assert!(matches!(
            f.kind(),
            Some(super::remote::Unreachable::NoRef { what, .. }) if what == "refs/heads/nope"
        ));
        let f = super::remote_failure("origin", None, "its HEAD", raw);
        assert!(matches!(
            f.kind(),
            Some(super::remote::Unreachable::NoRemote { remote }) if remote == "origin"
        ));
    }

    #[test]
    fn the_remote_head_is_read_from_ls_remote() {
        let out = "ref: refs/heads/main\tHEAD\n0123abcd\tHEAD\n";
        assert_eq!(super::symref_head(out).as_deref(), Some("refs/heads/main"));
        assert_eq!(super::symref_head("0123abcd\tHEAD\n"), None);
    }
}
