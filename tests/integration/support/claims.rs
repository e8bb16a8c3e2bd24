//! A card's claim under `<common dir>/kardwt/claims/`: its file, and its contents as TOML.
use std::path::PathBuf;

use crate::support::TestRepo;

pub(crate) fn claim_file(repo: &TestRepo, card: &str) -> PathBuf {
    repo.common_dir().join("kardwt/claims").join(card)
}

pub(crate) fn claim(repo: &TestRepo, card: &str) -> toml::Table {
    let text = std::fs::read_to_string(claim_file(repo, card))
        .unwrap_or_else(|e| panic!("no claim for card {card}: {e}"));
    text.parse()
        .unwrap_or_else(|e| panic!("claim {card} is not TOML ({e}):\n{text}"))
}
