//! Whether deleting a `card/*` branch would lose a commit: the one decision every deletion of
//! a card branch asks (`remove --delete-branch`, the runner's removal, `gc --branches`,
//! `doctor --try`'s cleanup). Every commit on the branch or named by its reflog (an amended or
//! reset commit stays there, and goes with the branch) must be reached by a ref kardwt did not
//! make (a remote-tracking ref, a tag, a branch outside `card/`) or make a change a commit of
//! the base also makes (`git cherry`'s rule), judged commit by commit, never by tips or trees.
//! Reads only: git is asked, never told.
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The branches below `refs/heads/` whose commits do not count as kept elsewhere: kardwt's.
pub(crate) const MINE: &str = "card/";

/// Why a card branch may not be deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WouldLose {
    /// A commit of the branch or its reflog would be on no ref and no commit of the base makes
    /// its change.
    #[error("{}", lost(.first, *.more, .base.as_deref()))]
    Commits {
        /// The oldest such commit.
        first: String,
        /// How many more there are.
        more: usize,
        /// The base they were compared with (`origin/main`), when there was one.
        base: Option<String>,
    },
    /// git could not answer.
    #[error("could not tell whether its commits are kept elsewhere: {0}")]
    Unknown(String),
}

/// The text of [`WouldLose::Commits`].
fn lost(first: &str, more: usize, base: Option<&str>) -> String {
    let more = match more {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    let change = base.map_or(String::new(), |b| {
        format!(" and {b} has no commit with the same change")
    });
    format!(
        "commit {}{more}, on the branch or in its reflog, is on no other ref{change}: deleting \
         the branch would lose it",
        first.get(..12).unwrap_or(first)
    )
}

/// What git is asked once for all the branches judged together: the commits each branch's
/// reflog has named, and which of those and the tips' commits no ref kardwt did not make
/// reaches. Or why it could not be told.
pub(crate) struct History(Result<Asked, String>);

struct Asked {
    /// By full branch ref.
    reflogs: HashMap<String, Vec<String>>,
    lonely: HashSet<String>,
}

impl History {
    /// Ask about the branches `(full ref, tip)`: two git processes for all of them.
    pub(crate) fn ask(dir: &Path, branches: &[(&str, &str)]) -> History {
        History(Self::asked(dir, branches).map_err(|e| format!("{e:#}")))
    }

    fn asked(dir: &Path, branches: &[(&str, &str)]) -> anyhow::Result<Asked> {
        let refs: Vec<&str> = branches.iter().map(|(r, _)| *r).collect();
        let reflogs = super::reflog_commits(dir, &refs)?;
        let mut heads: Vec<&str> = branches.iter().map(|(_, tip)| *tip).collect();
        heads.extend(reflogs.values().flatten().map(String::as_str));
        heads.sort_unstable();
        heads.dedup();
        let lonely = super::on_no_other_ref(dir, &heads, MINE)?;
        Ok(Asked { reflogs, lonely })
    }

    /// May the branch `full` (a full ref, asked about) at `tip` be deleted without a commit
    /// becoming unreachable from every other ref? `base`: `(commit, name)` of the base whose
    /// commits' changes count as kept; without one, every commit must be on another ref.
    pub(crate) fn may_delete(
        &self,
        dir: &Path,
        base: Option<(&str, &str)>,
        full: &str,
        tip: &str,
    ) -> Result<(), WouldLose> {
        let asked = self.0.as_ref().map_err(|e| WouldLose::Unknown(e.clone()))?;
        let mut heads = vec![tip];
        if let Some(logged) = asked.reflogs.get(full) {
            heads.extend(logged.iter().map(String::as_str));
        }
        heads.sort_unstable();
        heads.dedup();
        let candidates = match base {
            Some((oid, _)) => super::without_equivalent(dir, oid, &heads),
            None => super::on_no_other_ref(dir, &heads, MINE).map(|set| set.into_iter().collect()),
        }
        .map_err(|e| WouldLose::Unknown(format!("{e:#}")))?;
        let lost: Vec<&String> = candidates
            .iter()
            .filter(|c| asked.lonely.contains(*c))
            .collect();
        match lost.first() {
            None => Ok(()),
            Some(first) => Err(WouldLose::Commits {
                first: (*first).clone(),
                more: lost.len() - 1,
                base: base.map(|(_, name)| name.to_owned()),
            }),
        }
    }
}

/// [`History::may_delete`] for one branch, `branch` its short name (`card/42`), at its tip
/// now. A branch that does not exist loses nothing.
pub(crate) fn may_delete_branch(
    dir: &Path,
    base: Option<(&str, &str)>,
    branch: &str,
) -> Result<(), WouldLose> {
    let full = format!("refs/heads/{branch}");
    let Some(tip) = super::ref_commit(dir, &full) else {
        return Ok(());
    };
    History::ask(dir, &[(&full, &tip)]).may_delete(dir, base, &full, &tip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_oldest_commit_the_count_and_the_base() {
        let lost = WouldLose::Commits {
            first: "0123456789abcdef0123".into(),
            more: 2,
            base: Some("origin/main".into()),
        };
        assert_eq!(
            lost.to_string(),
            "commit 0123456789ab (and 2 more), on the branch or in its reflog, is on no other \
             ref and origin/main has no commit with the same change: deleting the branch would \
             lose it"
        );
        let alone = WouldLose::Commits {
            first: "abc".into(),
            more: 0,
            base: None,
        };
        assert_eq!(
            alone.to_string(),
            "commit abc, on the branch or in its reflog, is on no other ref: deleting the branch \
             would lose it"
        );
    }
}
