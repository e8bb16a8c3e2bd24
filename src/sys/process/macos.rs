//! Processes as macOS's kernel shows them (`proc_listallpids`, then `proc_pidinfo` for the
//! parent, the state and the cwd), through `sysinfo`: its safe API reads exactly these, with
//! only the cwd asked for on top of what it always reads. One look is taken per question and
//! kept for it: unlike `/proc`, nothing here is read lazily.
use std::path::PathBuf;

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System, UpdateKind};

use super::Unseen;

/// Every process this user can see, with its parent and, where it can be read, its cwd.
pub struct Table(System);

impl Table {
    /// One look at every process. It must show this process and its cwd, or nothing says the
    /// others are shown (a sandboxed kardwt, for one, sees no process at all).
    pub fn take() -> Result<Table, Unseen> {
        let mut system = System::new();
        let kind = ProcessRefreshKind::nothing().with_cwd(UpdateKind::Always);
        system.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
        let me = Pid::from_u32(std::process::id());
        match system.process(me) {
            Some(p) if p.cwd().is_some() => Ok(Table(system)),
            Some(_) => Err(Unseen::new(
                "the kernel's process info shows no cwd for kardwt itself",
            )),
            None => Err(Unseen::new(
                "the kernel's process info does not list kardwt itself",
            )),
        }
    }

    /// Every process whose cwd could be read, with it.
    pub fn cwds(&self) -> Vec<(i32, PathBuf)> {
        self.0
            .processes()
            .iter()
            .filter_map(|(pid, p)| Some((raw(*pid)?, p.cwd()?.to_path_buf())))
            .collect()
    }

    /// The parent of `pid`, if it was seen.
    pub fn parent(&self, pid: i32) -> Option<i32> {
        raw(self
            .0
            .process(Pid::from_u32(u32::try_from(pid).ok()?))?
            .parent()?)
    }

    /// Every `(pid, parent)` link seen.
    pub fn parents(&self) -> Vec<(i32, i32)> {
        self.0
            .processes()
            .iter()
            .filter_map(|(pid, p)| Some((raw(*pid)?, raw(p.parent()?)?)))
            .collect()
    }
}

fn raw(pid: Pid) -> Option<i32> {
    i32::try_from(pid.as_u32()).ok()
}

/// One look at `pid` alone, without its cwd.
fn one(pid: i32) -> Option<System> {
    let pid = Pid::from_u32(u32::try_from(pid).ok()?);
    let mut system = System::new();
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::nothing(),
    );
    Some(system)
}

/// The command name: its executable's file name.
pub fn name(pid: i32) -> Option<String> {
    let system = one(pid)?;
    let p = system.process(Pid::from_u32(u32::try_from(pid).ok()?))?;
    Some(p.name().to_string_lossy().into_owned())
}

/// Running: seen and not a zombie. `None` when not seen (the kernel shows a zombie or another
/// user's process only in part): the caller asks `kill(pid, 0)` then.
pub fn alive(pid: i32) -> Option<bool> {
    let system = one(pid)?;
    let p = system.process(Pid::from_u32(u32::try_from(pid).ok()?))?;
    Some(p.status() != ProcessStatus::Zombie)
}
