//! `git kardwt delete-aside <record>` (hidden): the detached process `remove` starts to delete
//! the bytes of a tree it moved aside, after `remove` has returned (`state/aside.rs`).
//! It deletes only the directory its record names, and only while that is still the very
//! directory that was moved (device and inode); it prints nothing.
use anyhow::Result;

use crate::cli::DeleteAsideArgs;
use crate::ground::error::{Code, Fail};

pub fn run(args: &DeleteAsideArgs) -> Result<i32> {
    // Out of the caller's session and process group: its terminal's signals, and its end, do
    // not end the deletion.
    let _ = rustix::process::setsid();
    let in_aside = args.record.parent().is_some_and(|d| {
        d.file_name().is_some_and(|n| n == "aside")
            && d.parent()
                .and_then(|k| k.file_name())
                .is_some_and(|n| n == "kardwt")
    });
    if !in_aside {
        return Err(Fail::new(
            Code::Usage,
            format!(
                "{} is not a record of a tree kardwt moved aside (<common dir>/kardwt/aside/)",
                args.record.display()
            ),
        )
        .into());
    }
    Ok(match crate::state::delete_aside(&args.record) {
        crate::state::Deletion::Deleted | crate::state::Deletion::Gone => 0,
        crate::state::Deletion::Busy => 0,
        _ => 1,
    })
}
