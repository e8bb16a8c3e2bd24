//! Real mounts inside test trees (a tmpfs, a bind mount), made as root and always unmounted on
//! drop, a failing test included; where they cannot be made (not root) a notice and a skip, and
//! under CI (which runs as root) a failure. Also file attributes set with `chattr` (immutable),
//! always cleared on drop, so the temporary directory can be deleted.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A file system mounted at `at` for the test, unmounted on drop, wherever the directory it
/// is mounted on was moved to within `scope` (every mount under `scope` is unmounted).
pub struct Mounted {
    pub at: PathBuf,
    scope: PathBuf,
}

impl Mounted {
    /// A fresh tmpfs at `at` (a directory that exists).
    pub fn tmpfs(scope: &Path, at: &Path) -> Option<Mounted> {
        Self::mount(scope, at, &["-t", "tmpfs", "tmpfs"])
    }

    /// `from` bind-mounted at `at` (both directories that exist).
    pub fn bind(scope: &Path, from: &Path, at: &Path) -> Option<Mounted> {
        Self::mount(scope, at, &["--bind", from.to_str().unwrap()])
    }

    /// A guard for a mount something else makes at `at` (a hook): unmounted on drop, wherever
    /// it moved within `scope`. `None` (with a notice) when not root.
    pub fn expected(scope: &Path, at: &Path) -> Option<Mounted> {
        root("mount").then(|| Mounted {
            at: at.to_path_buf(),
            scope: scope.to_path_buf(),
        })
    }

    fn mount(scope: &Path, at: &Path, args: &[&str]) -> Option<Mounted> {
        if !root("mount") {
            return None;
        }
        let out = Command::new("mount").args(args).arg(at).output().unwrap();
        assert!(
            out.status.success(),
            "mount {args:?} {}: {}",
            at.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Mounted {
            at: at.to_path_buf(),
            scope: scope.to_path_buf(),
        })
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let mut left = false;
        for _ in 0..20 {
            let done = Command::new("umount")
                .arg(&self.at)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            left = !done && mounted(&self.at);
            if !left {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        if left {
            let _ = Command::new("umount").arg("-l").arg(&self.at).status();
        }
        // Moved with its directory (a removal that renamed the tree): unmounted there.
        for at in mounts_under(&self.scope).into_iter().rev() {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&at)
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// The mount points under `scope`, shallowest first.
pub fn mounts_under(scope: &Path) -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut out: Vec<PathBuf> = table
        .lines()
        .filter_map(|l| l.split(' ').nth(1))
        .map(|p| PathBuf::from(p.replace("\\040", " ").replace("\\134", "\\")))
        .filter(|p| p.starts_with(scope))
        .collect();
    out.sort();
    out
}

/// Is something mounted at `at` (the mount table writes a space as `\040`)?
pub fn mounted(at: &Path) -> bool {
    let want = at
        .to_string_lossy()
        .replace('\\', "\\134")
        .replace(' ', "\\040");
    std::fs::read_to_string("/proc/self/mounts")
        .is_ok_and(|m| m.lines().any(|l| l.split(' ').nth(1) == Some(&want)))
}

/// Files made immutable (`chattr +i`) for the test; every file under `dir` is made mutable
/// again on drop.
pub struct Immutable {
    dir: PathBuf,
}

impl Immutable {
    /// `chattr +i` on `file`; `None` (with a notice) where that cannot be done (not root, a
    /// file system without the attribute). `dir` holds everything it may move to.
    pub fn new(dir: &Path, file: &Path) -> Option<Immutable> {
        if !root("chattr +i") {
            return None;
        }
        let guard = Immutable {
            dir: dir.to_path_buf(),
        };
        let out = Command::new("chattr").arg("+i").arg(file).output().unwrap();
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(
                std::env::var_os("CI").is_none(),
                "chattr +i failed under CI: {why}"
            );
            eprintln!("SKIPPED: chattr +i failed: {why}");
            return None;
        }
        Some(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr")
            .args(["-R", "-f", "-i"])
            .arg(&self.dir)
            .status();
    }
}

/// Are we root? A notice and `false` when not (a failure under CI).
fn root(what: &str) -> bool {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        });
    if uid.as_deref() == Some("0") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} needs root under CI"
    );
    eprintln!("SKIPPED: {what} needs root");
    false
}
