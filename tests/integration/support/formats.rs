//! Test repositories in git's other formats: origin, scratch and base rebuilt as SHA-256
//! repositories, or the base cloned again with other flags (reftable refs, a partial or
//! shallow clone), with the template's two commits and its info/exclude.
use std::path::Path;

use super::TestRepo;

/// The object and ref formats a repository can be made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SHA-1 objects, loose and packed refs: the template's.
    Sha1,
    /// `--object-format=sha256` (origin and every clone of it).
    Sha256,
    /// A base cloned with `--ref-format=reftable`.
    Reftable,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Sha1, Format::Sha256, Format::Reftable];

    pub fn name(self) -> &'static str {
        match self {
            Format::Sha1 => "sha1",
            Format::Sha256 => "sha256",
            Format::Reftable => "reftable",
        }
    }
}

impl TestRepo {
    /// A repository like [`TestRepo::new`]'s, in `format`.
    pub fn in_format(format: Format) -> TestRepo {
        let repo = TestRepo::new();
        match format {
            Format::Sha1 => {}
            Format::Sha256 => repo.rebuild_sha256(),
            Format::Reftable => repo.reclone_base(&["--ref-format=reftable"]),
        }
        repo
    }

    /// Origin, scratch and base made again as SHA-256 repositories with the template's content.
    fn rebuild_sha256(&self) {
        for dir in [&self.origin, &self.scratch, &self.base] {
            std::fs::remove_dir_all(dir).unwrap();
        }
        let sha256 = "--object-format=sha256";
        let origin = self.origin.to_str().unwrap();
        self.git(
            &self.tmp,
            &["init", "--quiet", "--bare", "-b", "main", sha256, origin],
        );
        self.git(&self.tmp, &["clone", "--quiet", origin, "scratch"]);
        let s = &self.scratch;
        self.git(s, &["switch", "--quiet", "-c", "main"]);
        std::fs::write(s.join("README.md"), "# project\n").unwrap();
        std::fs::create_dir(s.join("src")).unwrap();
        std::fs::write(s.join("src/lib.txt"), "one\n").unwrap();
        std::fs::write(s.join(".gitignore"), ".env\n.env.*\n").unwrap();
        self.git(s, &["add", "-A"]);
        self.git(s, &["commit", "--quiet", "-m", "first"]);
        std::fs::write(s.join("src/lib.txt"), "one\ntwo\n").unwrap();
        self.git(s, &["commit", "--quiet", "-am", "second"]);
        self.git(s, &["push", "--quiet", "-u", "origin", "main"]);
        self.reclone_base(&[]);
        assert_eq!(
            self.git(&self.base, &["rev-parse", "--show-object-format"])
                .trim(),
            "sha256"
        );
    }

    /// The base cloned again from origin with `flags` (`--ref-format=reftable`,
    /// `--filter=blob:none`, `--depth=1`…), `/kardbrd.yml` excluded as in the template.
    pub fn reclone_base(&self, flags: &[&str]) {
        if self.base.exists() {
            std::fs::remove_dir_all(&self.base).unwrap();
        }
        let url = format!("file://{}", self.origin.display());
        let mut args = vec!["clone", "--quiet"];
        args.extend_from_slice(flags);
        args.extend([url.as_str(), self.base.to_str().unwrap()]);
        self.git(&self.tmp, &args);
        // The template's clone names origin by path; a file:// URL is kept only where a
        // filter or a depth needs the transport.
        if !flags
            .iter()
            .any(|f| f.starts_with("--filter") || f.starts_with("--depth"))
        {
            let origin = self.origin.to_str().unwrap();
            self.git(&self.base, &["config", "remote.origin.url", origin]);
        }
        exclude_rules(&self.common_dir());
    }
}

/// `/kardbrd.yml` in `common_dir`'s info/exclude, so rules written in the base stay untracked
/// and out of its status.
fn exclude_rules(common_dir: &Path) {
    let exclude = common_dir.join("info/exclude");
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/kardbrd.yml\n");
    std::fs::write(&exclude, text).unwrap();
}
