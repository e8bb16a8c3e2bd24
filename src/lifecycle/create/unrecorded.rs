//! A tree `add` has just made and holds no record of yet: its first
//! record, or the tree removed again when that cannot be written, so the next `add` starts
//! clean instead of meeting an unrecorded tree.
use crate::sys;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{admin_of, Action, Refusal};
use crate::ground::error::Fail;
use crate::state::{Origin, Reason, Record, State};

impl Action<'_> {
    /// Record the tree `add` has just made at `path` (state `preparing`, holding `ports`): its
    /// admin dir and the record naming the fetched `base` (ref and object id; on a kept branch,
    /// where the two meet). Writing the record completes the card's claim.
    pub(super) fn record_new(
        &self,
        path: &Path,
        kept_branch: bool,
        (base_ref, oid): (String, String),
        ports: Vec<u16>,
    ) -> Result<(Record, PathBuf)> {
        let admin = admin_of(path)?;
        // A kept branch is checked out as it is, so it starts from the fetched
        // base only when that is in its history; else from where the two meet.
        let oid = if kept_branch {
            crate::lifecycle::base::base_of_kept_branch(path, &oid)
        } else {
            oid
        };
        let now = crate::sys::now();
        let rec = Record {
            schema: 1,
            card: self.card.clone(),
            board: self.board.to_owned(),
            branch: self.card.branch(),
            path: path.to_path_buf(),
            common_dir: self.prep.ctx.repo.common_dir.clone(),
            base_remote: self.cfg().base.remote.clone(),
            base_ref,
            base_oid: oid,
            state: State::Preparing,
            origin: Origin::Add,
            reason: Reason::Create,
            created_at: now.clone(),
            updated_at: now,
            config_fingerprint: self.cfg().fingerprint(),
            links: Vec::new(),
            copies: Vec::new(),
            copy_method: String::new(),
            ports,
            last_hook: None,
            prepare_cache: None,
        };
        crate::state::write(&admin, &rec)?;
        Ok((rec, admin))
    }

    /// Remove the tree `add` has just made at `path` but could not record (`why`), under the
    /// repository lock; the branch is kept. The error says what failed and that a retry
    /// creates the tree again, or where it was left when removing it failed too.
    pub(super) fn unmake(
        &self,
        repo_lock: &sys::RepoLock,
        path: &Path,
        why: anyhow::Error,
    ) -> anyhow::Error {
        let cards = &self.prep.ctx.cards;
        match crate::context::remove_half_made(repo_lock, &self.prep.ctx.repo.base, path) {
            Ok(()) => {
                crate::context::clear_intent(cards, self.card, path);
                Fail::from(Refusal::Unmade {
                    card: self.card.clone(),
                    path: path.to_owned(),
                    why,
                })
                .into()
            }
            Err(refusal) => Fail::from(Refusal::Unremoved {
                card: self.card.clone(),
                path: path.to_owned(),
                why,
                refusal,
            })
            .into(),
        }
    }
}
