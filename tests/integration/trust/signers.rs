//! Signers of the shared prepare cache, trusted once per user like the helpers:
//! `trust --public-key` prints this user's key (made on first use, the same key after), and
//! `trust --signer KEY` records a signer, once; a key that is not one is refused (exit 2)
//! writing nothing, and `--dry-run` writes nothing.
use crate::support::*;

#[test]
fn a_user_shows_its_own_key_and_trusts_anothers_once() {
    let repo = TestRepo::new();
    let data = repo.home.join(".local/share/git-kardwt");
    let mine = repo.kardwt_ok(&repo.base, &["trust", "--public-key"]);
    assert!(
        mine.starts_with("ed25519:") && mine.trim().len() == 72,
        "{mine}"
    );
    assert_eq!(repo.kardwt_ok(&repo.base, &["trust", "--public-key"]), mine);
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    assert_eq!(mode(&data.join("signing/cache-ed25519")), 0o600);
    assert_eq!(mode(&data.join("signing")), 0o700);
    // Its own key is trusted already.
    let said = repo.kardwt_ok(&repo.base, &["trust", "--signer", mine.trim()]);
    assert!(
        said.starts_with("already trusted: signer ed25519:"),
        "{said}"
    );

    let public = ed25519_dalek::SigningKey::from_bytes(&[5; 32]).verifying_key();
    let hex: String = public
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let theirs = format!("ed25519:{hex}");
    let before = snapshot(&data);
    let not_a_point = format!("ed25519:{}", "3b".repeat(32));
    for bad in ["3b3b", "ed25519:zz", "rsa:3b3b", "", &not_a_point] {
        let out = repo.kardwt(&repo.base, &["trust", "--signer", bad]);
        out.expect_code(2);
        assert!(out.stderr.contains("is not a signer's public key"), "{out}");
    }
    let said = repo.kardwt_ok(&repo.base, &["trust", "--signer", &theirs, "--dry-run"]);
    assert!(said.starts_with("would trust signer"), "{said}");
    assert!(
        snapshot(&data) == before,
        "a refusal or a dry run wrote something"
    );
    let said = repo.kardwt_ok(&repo.base, &["trust", "--signer", &theirs]);
    assert!(
        said.starts_with(&format!("trusted signer {theirs}")),
        "{said}"
    );
    assert!(data.join("signers").join(&hex).is_file());
    assert_eq!(mode(&data.join("signers")), 0o700);
    let said = repo.kardwt_ok(&repo.base, &["trust", "--signer", &theirs]);
    assert!(said.starts_with("already trusted"), "{said}");
}
