//! Why no repository kardwt can work on was found where it runs: outside any, in a bare one,
//! or in a git dir elsewhere that names no checkout.
use std::path::PathBuf;

use crate::ground::error::{Code, Kind};

/// Why there is no repository to work in (a usage error: where kardwt runs).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoRepo {
    #[error("not in a git repository ({}): {why}", cwd.display())]
    Outside { cwd: PathBuf, why: String },
    #[error("the repository at {} has no main worktree (it is bare)", common_dir.display())]
    Bare { common_dir: PathBuf },
    /// A git dir elsewhere whose checkout neither `core.worktree` nor kardwt's memory names
    /// (`GIT_DIR` and `GIT_WORK_TREE` alone, or a checkout kardwt has not seen).
    #[error(
        "the repository at {} names no main worktree: its git dir is elsewhere, and neither \
         core.worktree nor a run of kardwt in the checkout says where that is",
        common_dir.display()
    )]
    Elsewhere { common_dir: PathBuf },
}

impl Kind for NoRepo {
    fn code(&self) -> Code {
        Code::Usage
    }
    fn hints(&self) -> Vec<String> {
        vec![match self {
            NoRepo::Outside { .. } => {
                "run git kardwt from inside the repository whose worktrees it manages".to_owned()
            }
            NoRepo::Bare { .. } => {
                "git kardwt needs a base checkout, or the bare layout: `git clone --bare <url> \
                 <project>/.git`, with the cards beside it in <project>"
                    .to_owned()
            }
            NoRepo::Elsewhere { common_dir } => format!(
                "name the checkout: git --git-dir={} config core.worktree <checkout> (a checkout \
                 whose .git file names this git dir is found once git kardwt has run in it)",
                common_dir.display()
            ),
        }]
    }
}
