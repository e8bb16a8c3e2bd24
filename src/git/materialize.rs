//! The checkout of a tree `git kardwt add` creates, written in-process on every core (kardwt's
//! own writers in [`super::tree_files`], the objects read through gix) instead of by the
//! single `git reset --hard` that `git worktree add` runs, where that is plainly git's own
//! result: the start commit's files copied byte for byte. [`plan`] decides
//! before git creates anything and declines (git then checks out, as always) when anything
//! could make git write other bytes or another index: attributes anywhere (filters, line
//! endings), submodules, sparse checkout, case-folding or Unicode-composing file systems,
//! index formats other than git's default, a path beneath another tracked file, or one core.
//! [`check_out`] then writes the files and the index of the new tree. [`config_declines`] and
//! [`tree_declines`] are pure.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use gix::bstr::ByteSlice;
use gix::index::entry::Mode;

/// A checkout kardwt will write itself: the start commit's tree as an index, not yet on disk.
pub(crate) struct Planned {
    tree: gix::ObjectId,
    state: gix::index::State,
    /// The cache tree git's `reset --hard` would have primed, where it covers every entry.
    cache_tree: Option<gix::index::extension::Tree>,
    threads: usize,
}

/// Why git checks the new tree out instead of kardwt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Declined {
    /// One core: git's checkout is as fast (measured).
    OneCore,
    /// A setting that changes what a checkout writes, or how.
    Config(String),
    /// An attributes file outside the tree.
    AttributesFile(PathBuf),
    /// Something the tree holds: what, and the first such path.
    Tracked(&'static str, String),
    /// The start commit or its tree could not be read (git will say why).
    Unreadable(String),
}

impl std::fmt::Display for Declined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Declined::OneCore => write!(f, "one core"),
            Declined::Config(key) => write!(f, "{key} is set"),
            Declined::AttributesFile(p) => write!(f, "attributes file {}", p.display()),
            Declined::Tracked(what, path) => write!(f, "the tree holds {what} ({path})"),
            Declined::Unreadable(why) => write!(f, "{why}"),
        }
    }
}

/// Which values of a setting are harmless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Harmless {
    /// A boolean: only `false`.
    False,
    /// A boolean: only `true`.
    True,
    /// Only this value.
    Exactly(&'static str),
    /// None: any value declines.
    Unset,
}

/// Settings under which kardwt leaves the checkout to git, with their harmless values.
const SETTINGS: &[(&str, Harmless)] = &[
    ("core.sparseCheckout", Harmless::False),
    ("core.autocrlf", Harmless::False),
    ("core.eol", Harmless::Unset),
    ("core.symlinks", Harmless::True),
    ("core.fileMode", Harmless::True),
    ("core.ignoreCase", Harmless::False),
    ("core.precomposeUnicode", Harmless::False),
    ("core.attributesFile", Harmless::Unset),
    ("core.splitIndex", Harmless::False),
    ("core.fsmonitor", Harmless::False),
    ("core.untrackedCache", Harmless::False),
    ("index.version", Harmless::Exactly("2")),
    ("index.skipHash", Harmless::False),
    ("index.sparse", Harmless::False),
    ("feature.manyFiles", Harmless::False),
    ("extensions.worktreeConfig", Harmless::False),
    // A partial clone: git fetches the blobs it lacks while it checks out; gix does not.
    ("extensions.partialClone", Harmless::Unset),
    ("core.hooksPath", Harmless::Unset),
    // HEAD of the new tree is read through git there (gix reads no reftable).
    ("extensions.refStorage", Harmless::Exactly("files")),
    // SHA-256 objects: this build of gix reads SHA-1 ones only.
    ("extensions.objectFormat", Harmless::Exactly("sha1")),
    // The user chose how git's checkout runs in parallel: git's checkout it is.
    ("checkout.workers", Harmless::Unset),
];

/// The first setting in [`SETTINGS`] that `get` has with a value that is not harmless (pure).
/// `get(key, boolean)` answers with the key's last value, a boolean's as `true` or `false`
/// (anything git would not read as one as it is).
pub(crate) fn config_declines(get: impl Fn(&str, bool) -> Option<String>) -> Option<String> {
    SETTINGS.iter().find_map(|(key, harmless)| {
        let boolean = matches!(harmless, Harmless::False | Harmless::True);
        let value = get(key, boolean)?;
        let fine = match harmless {
            Harmless::False => value == "false",
            Harmless::True => value == "true",
            Harmless::Exactly(v) => value == *v,
            Harmless::Unset => false,
        };
        (!fine).then(|| format!("{key}={value}"))
    })
}

/// Variables under which git's checkout may differ from what kardwt's reading of the
/// configuration says: settings given on git's command line (`git -c`, which git passes on in
/// `GIT_CONFIG_PARAMETERS`) or in `GIT_CONFIG_COUNT`, and the attributes of another tree.
const ENV_VARS: &[&str] = &[
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_ATTR_SOURCE",
];

/// The first of [`ENV_VARS`] that `set` says is set (pure).
pub(crate) fn env_declines(set: impl Fn(&str) -> bool) -> Option<&'static str> {
    ENV_VARS.iter().copied().find(|v| set(v))
}

/// What in a tree's entries (path, mode) makes git's checkout differ from a byte copy, if
/// anything (pure): an attributes or submodules file at any depth, a submodule, or a path
/// beneath another tracked file (`a` and `a/x`, which git refuses or resolves its own way).
pub(crate) fn tree_declines<'a>(
    entries: impl Iterator<Item = (&'a [u8], Mode)>,
) -> Option<Declined> {
    let mut files = std::collections::HashSet::new();
    let mut dirs = std::collections::HashSet::new();
    for (path, mode) in entries {
        let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
        let shown = || String::from_utf8_lossy(path).into_owned();
        if name == b".gitattributes" {
            return Some(Declined::Tracked("an attributes file", shown()));
        }
        if name == b".gitmodules" || mode == Mode::COMMIT {
            return Some(Declined::Tracked("a submodule", shown()));
        }
        let mut at = 0;
        while let Some(slash) = path[at..].iter().position(|b| *b == b'/') {
            dirs.insert(&path[..at + slash]);
            at += slash + 1;
        }
        files.insert(path);
    }
    let mut beneath: Vec<&&[u8]> = files.iter().filter(|f| dirs.contains(**f)).collect();
    beneath.sort();
    beneath.first().map(|p| {
        Declined::Tracked(
            "a path beneath another tracked file",
            String::from_utf8_lossy(p).into_owned(),
        )
    })
}

/// Attribute files git reads outside any tree, wherever they are looked for: the repository's
/// `info/attributes`, the user's (`$XDG_CONFIG_HOME/git/attributes` or
/// `~/.config/git/attributes`) and the system's (`/etc/gitattributes`, and beside the git
/// that runs: `<prefix>/etc/gitattributes`, `<prefix>/share/git-core/gitattributes`).
fn attribute_files(common_dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![common_dir.join("info").join("attributes")];
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) => files.push(PathBuf::from(xdg).join("git").join("attributes")),
        None => {
            if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
                files.push(PathBuf::from(home).join(".config/git/attributes"));
            }
        }
    }
    if std::env::var_os("GIT_ATTR_NOSYSTEM").is_none() {
        files.push(PathBuf::from("/etc/gitattributes"));
        for prefix in git_prefixes() {
            files.push(prefix.join("etc/gitattributes"));
            files.push(prefix.join("share/git-core/gitattributes"));
        }
    }
    files
}

/// Where the git that runs is installed: from `GIT_EXEC_PATH` (`<prefix>/libexec/git-core`,
/// set when git runs kardwt) and from the `git` on `PATH` (`<prefix>/bin/git`), as named and
/// with its links resolved.
fn git_prefixes() -> Vec<PathBuf> {
    let mut prefixes = Vec::new();
    if let Some(exec) = std::env::var_os("GIT_EXEC_PATH") {
        if let Some(p) = Path::new(&exec).parent().and_then(Path::parent) {
            prefixes.push(p.to_path_buf());
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(git) = std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
    {
        for g in [Some(git.clone()), std::fs::canonicalize(&git).ok()]
            .into_iter()
            .flatten()
        {
            if let Some(p) = g.parent().and_then(Path::parent) {
                prefixes.push(p.to_path_buf());
            }
        }
    }
    prefixes.dedup();
    prefixes
}

/// Decide, before git creates the tree, whether kardwt checks out `commit` itself: `Ok` with
/// the tree read into an index, or why git does.
pub(crate) fn plan(
    repo: &gix::Repository,
    common_dir: &Path,
    commit: &str,
) -> Result<Planned, Declined> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 {
        return Err(Declined::OneCore);
    }
    let config = repo.config_snapshot();
    let get = |key: &str, boolean: bool| {
        let raw = config.string(key).map(|v| v.to_string());
        match boolean {
            true => config.boolean(key).map(|b| b.to_string()).or(raw),
            false => raw,
        }
    };
    if let Some(setting) = config_declines(get) {
        return Err(Declined::Config(setting));
    }
    // A partial clone (git 2.47 marks one by a promisor remote): git fetches the blobs it
    // lacks while it checks out; gix does not.
    let promisor = config
        .plumbing()
        .sections_by_name("remote")
        .into_iter()
        .flatten()
        .find(|s| {
            s.value("promisor").is_some_and(|v| {
                let v = v.to_ascii_lowercase();
                !matches!(v.as_slice(), b"false" | b"no" | b"off" | b"0")
            })
        });
    if let Some(remote) = promisor {
        let name = remote.header().subsection_name().map(|n| n.to_string());
        return Err(Declined::Config(format!(
            "remote.{}.promisor",
            name.unwrap_or_default()
        )));
    }
    if let Some(var) = env_declines(|k| std::env::var_os(k).is_some()) {
        return Err(Declined::Config(var.to_owned()));
    }
    if let Some(file) = attribute_files(common_dir)
        .into_iter()
        .find(|f| f.symlink_metadata().is_ok())
    {
        return Err(Declined::AttributesFile(file));
    }
    let unreadable = |e: &dyn std::fmt::Display| Declined::Unreadable(format!("{commit}: {e}"));
    let id = gix::ObjectId::from_hex(commit.as_bytes()).map_err(|e| unreadable(&e))?;
    let tree = repo
        .find_commit(id)
        .map_err(|e| unreadable(&e))?
        .tree_id()
        .map_err(|e| unreadable(&e))?
        .detach();
    // The tree objects are read twice (the entries, then the cache tree): the second time from
    // memory.
    let mut repo = repo.clone();
    repo.object_cache_size_if_unset(4 << 20);
    let index = repo.index_from_tree(&tree).map_err(|e| unreadable(&e))?;
    // Only the state: the file's path is the base's index, never written here.
    let (state, _) = index.into_parts();
    let entries = state
        .entries()
        .iter()
        .map(|e| (e.path(&state).as_bytes(), e.mode));
    if let Some(why) = tree_declines(entries) {
        return Err(why);
    }
    // Where it does not cover every entry (it always should), the index is written without one.
    let cache_tree = super::cache_tree::of(&repo, tree).ok().filter(|t| {
        t.num_entries
            .is_some_and(|n| n as usize == state.entries().len())
    });
    Ok(Planned {
        tree,
        state,
        cache_tree,
        threads,
    })
}

/// Write `planned` into the tree git just created at `tree` with `--no-checkout`: its files on
/// every core, then its index. Fails, writing no index, when the tree's HEAD is not the planned
/// commit's or any file could not be written; the caller removes the tree then.
pub(crate) fn check_out(tree: &Path, planned: Planned, deadline: Instant) -> Result<usize> {
    let repo = gix::open(tree).with_context(|| format!("cannot open {}", tree.display()))?;
    let head = repo
        .head_tree_id()
        .with_context(|| format!("cannot read HEAD's tree in {}", tree.display()))?;
    anyhow::ensure!(
        head == planned.tree,
        "HEAD of {} is tree {head}, not the planned {}",
        tree.display(),
        planned.tree
    );
    // The tree's own index in its admin dir, never one a caller's GIT_INDEX_FILE names.
    let mut index = gix::index::File::from_state(planned.state, repo.git_dir().join("index"));
    let objects = repo
        .objects
        .clone()
        .into_arc()
        .context("cannot share the object database between threads")?;
    // SIGINT, SIGTERM, SIGHUP or the deadline stop the writers between files, as they stop
    // git's checkout; the caller removes the tree.
    let stop = AtomicBool::new(false);
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let wrote = std::thread::scope(|scope| {
        let stop = &stop;
        // Without a watcher (the system refused a thread) the checkout runs to its end, and a
        // signal is noticed right after it.
        let _ = std::thread::Builder::new()
            .name("kardwt-checkout-watch".to_owned())
            .spawn_scoped(scope, move || watch(finished, stop, deadline));
        let (entries, paths) = index.entries_mut_and_pathbacking();
        let wrote = super::tree_files::write(tree, entries, paths, &objects, planned.threads, stop);
        drop(done);
        wrote
    });
    if stop.load(Ordering::Relaxed) {
        let why = match crate::sys::caught_signal() {
            Some(sig) => sig.name().to_owned(),
            None => "the action deadline passed".to_owned(),
        };
        anyhow::bail!("checking out {} was stopped: {why}", tree.display());
    }
    let wrote = wrote.with_context(|| format!("checking out {} failed", tree.display()))?;
    crate::ground::trace::phase("add: files written");
    // Every file written (symbolic links are not counted; their failures are errors above):
    // the caller relies on it and looks at no file again.
    let files = index
        .entries()
        .iter()
        .filter(|e| e.mode != Mode::SYMLINK)
        .count();
    if wrote != files {
        anyhow::bail!(
            "checking out {} wrote {wrote} of its {files} files",
            tree.display(),
        );
    }
    let written = match &planned.cache_tree {
        Some(t) => super::cache_tree::write_index(index.path(), &index, t),
        None => index
            .write(Default::default())
            .map_err(|e| anyhow::anyhow!("{e}")),
    };
    written.with_context(|| format!("cannot write the index of {}", tree.display()))?;
    crate::ground::trace::phase("add: index written");
    Ok(wrote)
}

/// Until `finished` closes: set `stop` once a signal came or `deadline` passed, looking every
/// few milliseconds.
fn watch(finished: Receiver<()>, stop: &AtomicBool, deadline: Instant) {
    loop {
        if crate::sys::caught_signal().is_some() || Instant::now() >= deadline {
            stop.store(true, Ordering::Relaxed);
            return;
        }
        match finished.recv_timeout(Duration::from_millis(5)) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_decline_unless_harmless() {
        let none = |_: &str, _: bool| None;
        assert_eq!(config_declines(none), None);
        let harmless = |k: &str, _: bool| match k {
            "core.autocrlf" | "core.ignoreCase" => Some("false".to_owned()),
            "core.symlinks" => Some("true".to_owned()),
            "index.version" => Some("2".to_owned()),
            _ => None,
        };
        assert_eq!(config_declines(harmless), None);
        let crlf = |k: &str, _: bool| (k == "core.autocrlf").then(|| "input".to_owned());
        assert_eq!(
            config_declines(crlf).as_deref(),
            Some("core.autocrlf=input")
        );
        let workers = |k: &str, _: bool| (k == "checkout.workers").then(|| "1".to_owned());
        assert_eq!(
            config_declines(workers).as_deref(),
            Some("checkout.workers=1")
        );
        let sparse = |k: &str, _: bool| (k == "core.sparseCheckout").then(|| "true".to_owned());
        assert!(config_declines(sparse).is_some());
        let sha256 = |k: &str, _: bool| (k == "extensions.objectFormat").then(|| "sha256".into());
        assert_eq!(
            config_declines(sha256).as_deref(),
            Some("extensions.objectFormat=sha256")
        );
        let v4 = |k: &str, _: bool| (k == "index.version").then(|| "4".to_owned());
        assert_eq!(config_declines(v4).as_deref(), Some("index.version=4"));
    }

    fn declines(entries: &[(&str, Mode)]) -> Option<Declined> {
        tree_declines(entries.iter().map(|(p, m)| (p.as_bytes(), *m)))
    }

    #[test]
    fn trees_decline_what_git_writes_otherwise() {
        let f = Mode::FILE;
        assert_eq!(
            declines(&[("a", f), ("d/b", f), ("d/e/c", Mode::SYMLINK)]),
            None
        );
        assert_eq!(
            declines(&[("a", f), ("d/.gitattributes", f)]),
            Some(Declined::Tracked(
                "an attributes file",
                "d/.gitattributes".into()
            ))
        );
        assert!(matches!(
            declines(&[(".gitmodules", f)]),
            Some(Declined::Tracked("a submodule", _))
        ));
        assert!(matches!(
            declines(&[("lib", Mode::COMMIT)]),
            Some(Declined::Tracked("a submodule", _))
        ));
        // Not adjacent in git's order: `a`, `a.`, `a/x`.
        assert_eq!(
            declines(&[("a", Mode::SYMLINK), ("a.", f), ("a/x", f)]),
            Some(Declined::Tracked(
                "a path beneath another tracked file",
                "a".into()
            ))
        );
        // A name that merely starts like a directory is not beneath it.
        assert_eq!(
            declines(&[("ab", f), ("a/x", f), ("x.gitattributes", f)]),
            None
        );
    }
}
