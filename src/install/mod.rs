//! What kardwt installs into a repository: git's hook shims and the agent runners' files.
mod runner_files;
mod shims;

pub(crate) use runner_files::{
    claude_hooks, codex_hooks, gemini_hooks, is_our_alias, is_our_script, merge_conductor,
    merge_cursor, merge_hooks, other_hooks, user_alias, Hook, MergeError, Planned,
};
pub(crate) use shims::{
    hooks_dir, named_binary, owner_of, runs_directly, shim_for, this_binary, Owner, Start,
    ANY_SHIM, INTERPRETER_ARG, SHIMS,
};
