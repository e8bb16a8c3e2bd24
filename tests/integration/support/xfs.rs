//! A real XFS file system with reflink for tests of clones: an image loop-mounted as root,
//! unmounted on drop; where it cannot be made (not root, no mkfs.xfs) a notice and a skip, and
//! under CI (which installs xfsprogs and runs as root) a failure.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// An XFS image with reflink, loop-mounted for the test, unmounted and detached on drop.
pub struct XfsMount {
    pub dir: PathBuf,
}

impl XfsMount {
    /// `None` (with a notice) where it cannot be made: not root, or no mkfs.xfs. Under CI,
    /// which installs xfsprogs, that is a failure instead.
    pub fn new(tmp: &Path) -> Option<XfsMount> {
        let why = if rustix_uid() != 0 {
            Some("not root")
        } else if Command::new("mkfs.xfs").arg("-V").output().is_err() {
            Some("mkfs.xfs not installed (apt-get install xfsprogs)")
        } else {
            None
        };
        if let Some(why) = why {
            assert!(
                std::env::var_os("CI").is_none(),
                "cannot make an XFS mount under CI: {why}"
            );
            eprintln!("SKIPPED: no XFS loop mount: {why}");
            return None;
        }
        let image = tmp.join("xfs.img");
        let dir = tmp.join("xfs");
        std::fs::create_dir(&dir).unwrap();
        let ok = |c: &mut Command| {
            let o = c.output().unwrap();
            assert!(
                o.status.success(),
                "{c:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        ok(Command::new("truncate").args(["-s", "512M"]).arg(&image));
        ok(Command::new("mkfs.xfs")
            .args(["-q", "-m", "reflink=1"])
            .arg(&image));
        ok(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&dir));
        Some(XfsMount { dir })
    }
}

impl Drop for XfsMount {
    fn drop(&mut self) {
        // `umount` of a loop mount made with -o loop also detaches the loop device.
        for _ in 0..20 {
            let done = Command::new("umount")
                .arg(&self.dir)
                .status()
                .is_ok_and(|s| s.success());
            if done || !is_mounted(&self.dir) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

pub fn is_mounted(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split(' ').nth(1) == Some(&dir.to_string_lossy()))
    })
}

fn rustix_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

pub fn free_kb(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-k", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}
