//! Where file systems are mounted, so removal never deletes across one: the mount points at
//! or beneath a directory (on Linux one read of `/proc/self/mountinfo`, which also knows bind
//! mounts of the same file system; elsewhere a walk comparing each directory's device), and
//! whether one directory entry is a mount point (`statx`'s mount-root mark on Linux, its
//! device otherwise), for the deleter that meets whatever is mounted later.
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

/// The mount points at `tree` or beneath it, relative to it (`""`: the tree itself), sorted.
pub(crate) fn under(tree: &Path) -> std::io::Result<Vec<PathBuf>> {
    let real = std::fs::canonicalize(tree)?;
    #[cfg(target_os = "linux")]
    if let Ok(table) = std::fs::read("/proc/self/mountinfo") {
        return Ok(in_table(&table, &real));
    }
    walk(&real)
}

/// The mount points of a `/proc/self/mountinfo` text at `tree` or beneath it, relative to it
/// (pure). The fifth field is the mount point, with space, tab, newline and backslash written
/// as octal escapes. Read on Linux only; tested everywhere.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn in_table(table: &[u8], tree: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = table
        .split(|b| *b == b'\n')
        .filter_map(|line| line.split(|b| *b == b' ').nth(4))
        .map(|field| PathBuf::from(OsStr::from_bytes(&unescape(field))))
        .filter_map(|at| at.strip_prefix(tree).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `\040` and the like back to their bytes (pure).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| {
            field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3'
        });
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// The directories beneath `tree` (and itself) on another device than its parent's, by a walk
/// that never follows a symlink and does not descend into what it finds.
fn walk(tree: &Path) -> std::io::Result<Vec<PathBuf>> {
    let parent_dev = tree
        .parent()
        .map(|p| rustix::fs::lstat(p).map(|st| st.st_dev))
        .transpose()?;
    let root = crate::sys::beneath::root(tree)?;
    let dev = rustix::fs::fstat(&root)?.st_dev;
    if parent_dev.is_some_and(|d| d != dev) {
        return Ok(vec![PathBuf::new()]);
    }
    let mut out = Vec::new();
    let mut dirs = vec![(root, PathBuf::new())];
    while let Some((dir, rel)) = dirs.pop() {
        for name in names(&dir)? {
            let Some(mounted) = mount_point(&dir, &name, dev)? else {
                continue;
            };
            let at = rel.join(&name);
            if mounted {
                out.push(at);
            } else if let Ok(Ok(sub)) = crate::sys::beneath::child(&dir, &name, &at, None) {
                dirs.push((sub, at));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The names in a directory, `.` and `..` left out.
pub(crate) fn names(dir: &OwnedFd) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut out = Vec::new();
    for e in rustix::fs::Dir::read_from(dir)? {
        let e = e?;
        let name = OsStr::from_bytes(e.file_name().to_bytes());
        if name != "." && name != ".." {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// Is the directory `name` in `dir` a mount point (another device than `dev`, or the root of
/// a mount of the same file system)? `None` when it is not a directory (or is gone). Never
/// follows a symlink.
pub(crate) fn mount_point(
    dir: &OwnedFd,
    name: &OsStr,
    dev: rustix::fs::Dev,
) -> std::io::Result<Option<bool>> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{StatxAttributes, StatxFlags};
        let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
        match rustix::fs::statx(dir, name, flags, StatxFlags::TYPE) {
            Ok(st) => {
                if FileType::from_raw_mode(u32::from(st.stx_mode)) != FileType::Directory {
                    return Ok(None);
                }
                let root = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
                    && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
                let other = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor) != dev;
                return Ok(Some(root || other));
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            // No statx (an old kernel, a seccomp filter): the device alone, below.
            Err(_) => {}
        }
    }
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
            Ok(Some(st.st_dev != dev))
        }
        Ok(_) | Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_mount_points_beneath_the_tree_unescaped() {
        let table = b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
            40 22 0:40 / /w/card-1/data rw - tmpfs tmpfs rw\n\
            41 22 8:1 /src /w/card-1/my\\040cache rw - ext4 /dev/sda1 rw\n\
            42 22 0:41 / /w/card-10 rw - tmpfs tmpfs rw\n\
            43 22 0:42 / /w/card-1 rw - tmpfs tmpfs rw\n";
        assert_eq!(
            in_table(table, Path::new("/w/card-1")),
            [
                PathBuf::new(),
                PathBuf::from("data"),
                PathBuf::from("my cache")
            ]
        );
        assert!(in_table(table, Path::new("/w/card-2")).is_empty());
        assert_eq!(unescape(br"a\134b\011c\9"), b"a\\b\tc\\9");
    }

    #[test]
    fn a_tree_without_mounts_has_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        assert!(under(dir.path()).unwrap().is_empty());
        assert!(walk(dir.path()).unwrap().is_empty());
        let root = crate::sys::beneath::root(dir.path()).unwrap();
        let dev = rustix::fs::fstat(&root).unwrap().st_dev;
        assert_eq!(
            mount_point(&root, OsStr::new("a"), dev).unwrap(),
            Some(false)
        );
        assert_eq!(mount_point(&root, OsStr::new("x"), dev).unwrap(), None);
    }
}
