//! The prepare cache's key: SHA-256 over what prepare reads: the rules'
//! fingerprint, the prepare argv, the bytes of the program `argv[0]` resolved to (an edited
//! helper is a new key), the environment kardwt hands the hook less its per-tree values, and
//! each input as it is on disk in the tree when prepare runs (a file's bytes, a symlink's
//! target, a directory's whole content, or `absent`), so an uncommitted edit is a key of its
//! own, never the committed input's. Two trees get the same key exactly when prepare would
//! start from the same rules, program, environment and input content. Where this machine keeps
//! things is not part of it (the home, the base's path, the common dir: [`MACHINE`]), so two
//! machines set up differently share entries through the store. [`digest`] is pure.
use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};

/// What the key is made of, besides the rules' fingerprint and argv.
pub struct Parts {
    /// SHA-256 of the program's bytes.
    pub program: String,
    /// The hook's environment less its per-tree values.
    pub env: BTreeMap<String, String>,
    /// Each input with the digest of what is on disk at it.
    pub inputs: Vec<(PathBuf, String)>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the regular file at `path` (followed), streamed.
pub fn file_digest(path: &Path) -> Result<String> {
    let mut file = crate::sys::open_regular_following(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Each input with the digest of what is at it in `tree` now, never following a symlink.
pub fn input_digests(tree: &Path, inputs: &[PathBuf]) -> Result<Vec<(PathBuf, String)>> {
    inputs
        .iter()
        .map(|p| Ok((p.clone(), on_disk(tree, p)?)))
        .collect()
}

/// `absent`, `link:<target>`, `file:<mode>:<sha256>` or `dir:<sha256 of every entry beneath>`.
fn on_disk(tree: &Path, rel: &Path) -> Result<String> {
    let path = tree.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok("absent".into()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = std::fs::read_link(&path)?;
        return Ok(format!("link:{}", hex(target.as_os_str().as_bytes())));
    }
    if ft.is_file() {
        let x = meta.permissions().mode() & 0o111 != 0;
        return Ok(format!("file:{}:{}", u8::from(x), file_digest(&path)?));
    }
    if !ft.is_dir() {
        anyhow::bail!(
            "{} is neither a file, a directory nor a symlink",
            path.display()
        );
    }
    let mut h = Sha256::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(sub) = todo.pop() {
        let dir = path.join(&sub);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<_>>()?;
        names.sort();
        for name in names {
            let rel = sub.join(&name);
            let is_dir = std::fs::symlink_metadata(path.join(&rel)).is_ok_and(|m| m.is_dir());
            let what = if is_dir {
                todo.push(rel.clone());
                "dir".to_owned()
            } else {
                on_disk(&path, &rel)?
            };
            let rel = rel.as_os_str().as_bytes();
            h.update(format!("{} {}:", rel.len(), what.len()).as_bytes());
            h.update(rel);
            h.update(what.as_bytes());
        }
    }
    Ok(format!("dir:{}", hex(&h.finalize())))
}

/// The hook's variables that say only where this machine keeps things: left out of the key.
/// Outputs that name the tree itself are never stored (`identity.rs`).
const MACHINE: [&str; 3] = ["HOME", "KARDWT_BASE", "KARDWT_COMMON_DIR"];

/// The key: 64 hex digits.
pub fn digest(fingerprint: &str, argv: &[String], parts: &Parts) -> String {
    let mut h = Sha256::new();
    // Each field is length-prefixed, so no two different lists read the same.
    let mut field = |tag: &str, value: &[u8]| {
        h.update(format!("{tag} {}:", value.len()).as_bytes());
        h.update(value);
        h.update(b"\n");
    };
    // 3: entries stored before outputs were searched for the tree's names are never used;
    // 4: the key no longer holds the machine's paths.
    field("kardwt-prepare-cache", b"4");
    field("rules", fingerprint.as_bytes());
    for arg in argv {
        field("argv", arg.as_bytes());
    }
    field("program", parts.program.as_bytes());
    for (name, value) in parts
        .env
        .iter()
        .filter(|(n, _)| !MACHINE.contains(&n.as_str()))
    {
        field("env", name.as_bytes());
        field("value", value.as_bytes());
    }
    for (path, id) in &parts.inputs {
        field("input", path.as_os_str().as_bytes());
        field("id", id.as_bytes());
    }
    hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(program: &str, env: &[(&str, &str)], lock: &str) -> Parts {
        Parts {
            program: program.into(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            inputs: vec![(PathBuf::from("package-lock.json"), lock.into())],
        }
    }

    #[test]
    fn every_part_changes_the_key_and_nothing_else_does() {
        let argv = vec!["/opt/h/prepare".to_owned()];
        let p = |prog, lock| parts(prog, &[("HOME", "/h"), ("LANG", "C")], lock);
        let k = digest("sha256:a", &argv, &p("aa", "1111"));
        assert_eq!(k.len(), 64);
        assert_eq!(k, digest("sha256:a", &argv, &p("aa", "1111")));
        assert_ne!(k, digest("sha256:b", &argv, &p("aa", "1111")));
        assert_ne!(k, digest("sha256:a", &argv, &p("aa", "2222")));
        assert_ne!(k, digest("sha256:a", &argv, &p("bb", "1111")));
        assert_ne!(
            k,
            digest(
                "sha256:a",
                &argv,
                &parts("aa", &[("LANG", "de_DE")], "1111")
            )
        );
        // Where the machine keeps things is not part of it.
        let elsewhere = [
            ("HOME", "/g"),
            ("LANG", "C"),
            ("KARDWT_BASE", "/elsewhere/repo"),
            ("KARDWT_COMMON_DIR", "/elsewhere/repo/.git"),
        ];
        assert_eq!(
            k,
            digest("sha256:a", &argv, &parts("aa", &elsewhere, "1111"))
        );
        let other = vec!["/opt/h/prepare2".to_owned()];
        assert_ne!(k, digest("sha256:a", &other, &p("aa", "1111")));
        // Argument boundaries count: ["a b"] is not ["a", "b"].
        let none = parts("", &[], "");
        assert_ne!(
            digest("f", &["a b".to_owned()], &none),
            digest("f", &["a".to_owned(), "b".to_owned()], &none)
        );
    }

    #[test]
    fn inputs_are_read_as_they_are_on_disk() {
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        let read = |rel: &str| on_disk(t, Path::new(rel)).unwrap();
        assert_eq!(read("lock"), "absent");
        std::fs::write(t.join("lock"), "v1\n").unwrap();
        let v1 = read("lock");
        std::fs::write(t.join("lock"), "v2\n").unwrap();
        assert_ne!(read("lock"), v1);
        std::fs::create_dir_all(t.join("patches/sub")).unwrap();
        std::fs::write(t.join("patches/sub/a.patch"), "x").unwrap();
        let d1 = read("patches");
        std::fs::write(t.join("patches/sub/a.patch"), "y").unwrap();
        let d2 = read("patches");
        assert_ne!(d1, d2);
        std::fs::rename(t.join("patches/sub/a.patch"), t.join("patches/sub/b.patch")).unwrap();
        assert_ne!(read("patches"), d2);
        std::os::unix::fs::symlink("lock", t.join("l")).unwrap();
        assert!(read("l").starts_with("link:"));
    }
}
