//! The name of the file system holding a path or an open file, for the messages that say a file
//! system refused something (a clone, a no-replace rename, a hard link). Linux says it as
//! `statfs`'s magic number, named here; macOS (and the BSDs) as `f_fstypename` (`apfs`, `hfs`,
//! `smbfs`…), used as it is.
use std::os::fd::AsFd;
use std::path::Path;

/// The name of the file system holding `path`, or `unknown`.
pub(crate) fn of_path(path: &Path) -> String {
    rustix::fs::statfs(path).map_or_else(|_| "unknown".to_owned(), |s| named(&s))
}

/// The name of the file system holding the open file or directory `fd`, or `unknown`.
pub(crate) fn of_fd(fd: impl AsFd) -> String {
    rustix::fs::fstatfs(fd).map_or_else(|_| "unknown".to_owned(), |s| named(&s))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn named(s: &rustix::fs::StatFs) -> String {
    // The field's type differs between architectures; the magic numbers are 32 bits.
    magic_name(s.f_type as u64)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn named(s: &rustix::fs::StatFs) -> String {
    type_name(s.f_fstypename.iter().map(|&c| c as u8))
}

/// A file system's name from its statfs magic number (pure).
#[cfg(any(test, target_os = "linux", target_os = "android"))]
fn magic_name(magic: u64) -> String {
    let name = match (magic & 0xffff_ffff) as u32 {
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        // ext2, ext3 and ext4 share it.
        0xef53 => "ext4",
        0x0102_1994 => "tmpfs",
        0x794c_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2fc1_2fc1 => "zfs",
        0xf2f5_2010 => "f2fs",
        0xca45_1a4e => "bcachefs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        0xff53_4d42 => "cifs",
        0xfe53_4d42 => "smb2",
        0x517b => "smb",
        0x4d44 => "vfat",
        0x2011_bab0 => "exfat",
        0x5346_544e => "ntfs",
        0x7366_746e => "ntfs3",
        0x7371_7368 => "squashfs",
        0x8584_58f6 => "ramfs",
        0x6264_6576 => "bdevfs",
        0x9fa0 => "proc",
        other => return format!("file system type {other:#x}"),
    };
    name.to_owned()
}

/// A file system's name from the bytes of `f_fstypename`, up to the first NUL (pure).
#[cfg(any(test, not(any(target_os = "linux", target_os = "android"))))]
fn type_name(bytes: impl IntoIterator<Item = u8>) -> String {
    let name: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
    match String::from_utf8_lossy(&name).into_owned() {
        n if n.is_empty() => "unknown".to_owned(),
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_magic_numbers_are_named() {
        assert_eq!(magic_name(0x5846_5342), "xfs");
        assert_eq!(magic_name(0xef53), "ext4");
        assert_eq!(magic_name(0x0102_1994), "tmpfs");
        assert_eq!(magic_name(0x794c_7630), "overlayfs");
        assert_eq!(magic_name(0x6969), "nfs");
        // Some architectures' f_type is signed: the high bits of a sign-extended one go.
        assert_eq!(magic_name(0xffff_ffff_9123_683e), "btrfs");
        assert_eq!(magic_name(0x1234), "file system type 0x1234");
    }

    #[test]
    fn bsd_type_names_are_read_up_to_their_nul() {
        let field = |name: &[u8]| {
            let mut raw = [0u8; 16];
            raw[..name.len()].copy_from_slice(name);
            type_name(raw)
        };
        assert_eq!(field(b"apfs"), "apfs");
        assert_eq!(field(b"smbfs"), "smbfs");
        assert_eq!(field(b"fifteen-letters"), "fifteen-letters");
        assert_eq!(field(b""), "unknown");
    }

    #[test]
    fn this_machine_names_its_own_file_systems() {
        let dir = tempfile::tempdir().unwrap();
        let named = of_path(dir.path());
        assert_ne!(named, "unknown");
        assert_eq!(of_fd(std::fs::File::open(dir.path()).unwrap()), named);
        assert_eq!(of_path(Path::new("/no/such/dir")), "unknown");
    }
}
