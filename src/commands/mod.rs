//! One module per subcommand; each has a `run` that orchestrates and writes results to `out`.
pub mod add;
pub mod adopt;
pub mod config;
pub mod doctor;
pub mod gc;
pub mod guard;
pub mod help;
pub mod hook;
pub mod install_hooks;
pub mod list;
pub mod log;
pub mod pre_push;
pub mod prepare;
pub mod remove;
pub mod select;
pub mod status;
pub mod verify;
