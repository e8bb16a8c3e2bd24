//! What kardwt installs into a repository: git's hook shims and the agent runners' files.
pub(crate) mod runner_files;
mod shims;

pub(crate) use shims::{
    hooks_dir, named_binary, owner_of, runs_directly, shim_for, this_binary, Owner, ANY_SHIM,
    INTERPRETER_ARG, SHIMS,
};
