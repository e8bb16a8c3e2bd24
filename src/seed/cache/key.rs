//! The prepare cache's key (SPEC §26): SHA-256 over the rules' fingerprint, the prepare argv
//! and the id of each input at the tree's HEAD (read through gix; an input HEAD lacks is part
//! of the key as `absent`). Two trees get the same key exactly when prepare would start from
//! the same rules, program and input content. [`digest`] is pure.
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// Each input with its object id at `tree`'s HEAD, `None` when HEAD does not have it (a
/// directory input is named by its tree id, so any change beneath it changes the key).
pub fn input_ids(tree: &Path, inputs: &[PathBuf]) -> Result<Vec<(PathBuf, Option<String>)>> {
    if inputs.is_empty() {
        return Ok(Vec::new());
    }
    let repo = gix::open(tree).with_context(|| format!("cannot open {}", tree.display()))?;
    let commit = repo
        .head_commit()
        .with_context(|| format!("{} has no HEAD commit", tree.display()))?;
    let head = commit.tree().context("cannot read HEAD's tree")?;
    inputs
        .iter()
        .map(|p| {
            let entry = head
                .lookup_entry_by_path(p)
                .with_context(|| format!("cannot look up {} at HEAD", p.display()))?;
            Ok((p.clone(), entry.map(|e| e.object_id().to_string())))
        })
        .collect()
}

/// The key: 64 hex digits.
pub fn digest(fingerprint: &str, argv: &[String], inputs: &[(PathBuf, Option<String>)]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    // Each field is length-prefixed, so no two different lists read the same.
    let mut field = |tag: &str, value: &[u8]| {
        h.update(format!("{tag} {}:", value.len()).as_bytes());
        h.update(value);
        h.update(b"\n");
    };
    field("kardwt-prepare-cache", b"1");
    field("rules", fingerprint.as_bytes());
    for arg in argv {
        field("argv", arg.as_bytes());
    }
    for (path, id) in inputs {
        use std::os::unix::ffi::OsStrExt;
        field("input", path.as_os_str().as_bytes());
        field("id", id.as_deref().unwrap_or("absent").as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_changes_the_key_and_nothing_else_does() {
        let lock =
            |id: Option<&str>| vec![(PathBuf::from("package-lock.json"), id.map(str::to_owned))];
        let argv = vec!["/opt/h/prepare".to_owned()];
        let k = digest("sha256:a", &argv, &lock(Some("1111")));
        assert_eq!(k.len(), 64);
        assert_eq!(k, digest("sha256:a", &argv, &lock(Some("1111"))));
        assert_ne!(k, digest("sha256:b", &argv, &lock(Some("1111"))));
        assert_ne!(k, digest("sha256:a", &argv, &lock(Some("2222"))));
        assert_ne!(k, digest("sha256:a", &argv, &lock(None)));
        assert_ne!(
            k,
            digest(
                "sha256:a",
                &["/opt/h/prepare2".to_owned()],
                &lock(Some("1111"))
            )
        );
        // Argument boundaries count: ["a b"] is not ["a", "b"].
        assert_ne!(
            digest("f", &["a b".to_owned()], &[]),
            digest("f", &["a".to_owned(), "b".to_owned()], &[])
        );
    }
}
