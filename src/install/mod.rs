//! What kardwt installs into a repository: git's hook shims and the agent runners' files.
pub(crate) mod runner_files;
pub(crate) mod shims;
