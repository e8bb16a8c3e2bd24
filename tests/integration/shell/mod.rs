//! `git kardwt shell init`: the `kardwt` function in the real bash, zsh and fish, run
//! non-interactively with the printed script loaded; and `shell cards`, which its completion
//! reads.
mod cards;
mod complete;
mod switch;

use std::path::Path;

use crate::support::{Output, TestRepo, COMMAND_TIMEOUT};

/// The shells `shell init` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

impl Shell {
    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }

    /// Whether the shell is installed. Under CI (which installs all three) a missing one
    /// fails the test; elsewhere it is skipped with a notice.
    fn present(self) -> bool {
        let found = std::process::Command::new(self.name())
            .args(["-c", "exit 0"])
            .stdin(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} is not installed, and CI installs it",
                self.name()
            );
            eprintln!(
                "SKIPPED: {} is not installed (apt-get install {})",
                self.name(),
                self.name()
            );
        }
        found
    }

    /// The line that loads the function, as the manual tells users to write it.
    fn load(self) -> String {
        match self {
            Shell::Bash | Shell::Zsh => {
                format!("eval \"$(git kardwt shell init {})\"", self.name())
            }
            Shell::Fish => "git kardwt shell init fish | source".to_owned(),
        }
    }

    /// The last command's exit status.
    fn status(self) -> &'static str {
        match self {
            Shell::Bash | Shell::Zsh => "$?",
            Shell::Fish => "$status",
        }
    }

    /// Run `script` in this shell in `dir`, without any startup file of the user's.
    fn run(self, repo: &TestRepo, dir: &Path, script: &str) -> Output {
        let flags: &[&str] = match self {
            Shell::Bash => &["--norc", "--noprofile", "-c"],
            Shell::Zsh => &["-f", "-c"],
            Shell::Fish => &["--no-config", "-c"],
        };
        let mut args = flags.to_vec();
        args.push(script);
        repo.spawn(self.name(), dir, &args).wait(COMMAND_TIMEOUT)
    }
}
