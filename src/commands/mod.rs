//! One module per subcommand; each has a `run` that orchestrates and writes results to `out`.
pub mod add;
pub mod config;
pub mod list;
pub mod select;
pub mod status;
pub mod verify;
