//! Entry point of `git-kardwt`: parse the command line, run it, print the error chain and exit
//! with the contract's exit code (see `ground/error.rs`).
fn main() {
    std::process::exit(git_kardwt::main());
}
