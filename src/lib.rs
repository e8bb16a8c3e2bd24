//! git-kardwt as a library: the binary in `main.rs` calls [`main`]; tests reach the pure parts.
pub mod card;
pub mod cli;
pub mod config;
pub mod error;

use clap::Parser;

/// Run the command line and return the process exit code.
pub fn main() -> i32 {
    let cli = cli::Cli::parse();
    let _ = cli;
    0
}
