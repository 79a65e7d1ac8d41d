//! The process table: every process with its parent, group, session and start time, read from the
//! OS's own process APIs (`/proc` on Linux, libproc on macOS). Descendants are found through
//! parent links, so a process that moved to another group or session (`setsid`) is still found.
//! Windows has no table here: each CLI tree lives in a Job Object, which holds every descendant
//! whatever it does (see `job.rs`).

use std::collections::HashMap;

/// One process. `(pid, start)` names it for good: pids are reused, the pair is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(unix), allow(dead_code))] // never made where there is no table
pub(super) struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// 'Z' for a zombie (exited, not reaped); anything else runs.
    pub state: char,
    pub pgid: u32,
    pub sid: u32,
    /// Linux: clock ticks after boot; macOS: microseconds since the epoch.
    pub start: u64,
}

#[cfg(target_os = "linux")]
pub(super) use linux::{own_children, proc_table, read_proc};
#[cfg(target_os = "macos")]
pub(super) use macos::{proc_table, read_proc};

#[cfg(target_os = "linux")]
mod linux {
    use super::Proc;

    pub fn read_proc(pid: u32) -> Option<Proc> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &stat)
    }

    /// `pid (comm) state ppid pgrp session … starttime(22nd) …`; comm may contain spaces and
    /// parentheses, so split at the last ')'.
    pub fn parse_stat(pid: u32, stat: &str) -> Option<Proc> {
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Proc {
            pid,
            state: fields.first()?.chars().next()?,
            ppid: fields.get(1)?.parse().ok()?,
            pgid: fields.get(2)?.parse().ok()?,
            sid: fields.get(3)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    /// Every process in `/proc`.
    pub fn proc_table() -> Vec<Proc> {
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
            .filter_map(read_proc)
            .collect()
    }

    /// This process's children, from the kernel's list of each of its threads
    /// (`/proc/self/task/<tid>/children`): a few small reads, where [`proc_table`] reads every
    /// process on the machine. `None` when the kernel keeps no such lists (built without
    /// `CONFIG_PROC_CHILDREN`) or one cannot be read.
    pub fn own_children() -> Option<Vec<u32>> {
        let mut out = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            match std::fs::read_to_string(task.path().join("children")) {
                Ok(list) => out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok())),
                // A thread that ended since the listing has no list, and no children.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && task.path().exists() => return None,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => return None,
            }
        }
        Some(out)
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "42 (a) b (c)) S 1 42 40 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0";
        let p = parse_stat(42, line).unwrap();
        assert_eq!((p.state, p.ppid, p.pgid, p.sid, p.start), ('S', 1, 42, 40, 123456));
    }
}

/// libproc (`<libproc.h>`, what `ps` and Activity Monitor use): `proc_listallpids` for the pids,
/// `proc_pidinfo(PROC_PIDTBSDINFO)` for parent, group, state and start time. It answers for this
/// user's processes, which every process we start is.
#[cfg(target_os = "macos")]
mod macos {
    use super::Proc;
    use std::mem::{size_of, MaybeUninit};

    pub fn read_proc(pid: u32) -> Option<Proc> {
        let mut info = MaybeUninit::<libc::proc_bsdinfo>::zeroed();
        let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
        // SAFETY: the buffer is a proc_bsdinfo of the size passed; the call fills at most that.
        let got = unsafe {
            libc::proc_pidinfo(pid as libc::c_int, libc::PROC_PIDTBSDINFO, 0, info.as_mut_ptr().cast(), size)
        };
        if got != size {
            return None; // gone, or not ours to read
        }
        // SAFETY: proc_pidinfo filled the whole struct (it returned its size).
        let info = unsafe { info.assume_init() };
        // SAFETY: getsid only reads; -1 (no such process, or another session we may not see).
        let sid = unsafe { libc::getsid(pid as libc::pid_t) };
        Some(Proc {
            pid,
            ppid: info.pbi_ppid,
            state: if info.pbi_status == libc::SZOMB { 'Z' } else { 'R' },
            pgid: info.pbi_pgid,
            sid: if sid < 0 { 0 } else { sid as u32 },
            start: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
        })
    }

    pub fn proc_table() -> Vec<Proc> {
        // SAFETY: a null buffer asks only for the number of pids.
        let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
        if count <= 0 {
            return Vec::new();
        }
        // Room for processes started between the two calls.
        let mut pids = vec![0 as libc::pid_t; count as usize + 64];
        let bytes = (pids.len() * size_of::<libc::pid_t>()) as libc::c_int;
        // SAFETY: the buffer holds `bytes` bytes; the call returns how many pids it wrote.
        let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
        pids.truncate(got.max(0) as usize);
        pids.into_iter().filter(|&p| p > 0).filter_map(|p| read_proc(p as u32)).collect()
    }
}

/// No process table (Windows, other systems): the Job Object holds the tree instead.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn read_proc(_pid: u32) -> Option<Proc> {
    None
}
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn proc_table() -> Vec<Proc> {
    Vec::new()
}

/// Only Linux lists a process's children cheaply; elsewhere the sweep reads the table.
#[cfg(all(unix, not(target_os = "linux")))]
pub(super) fn own_children() -> Option<Vec<u32>> {
    None
}

/// All descendants of `pid` in `table`, found through parent links.
pub(super) fn descendants_in(table: &[Proc], pid: u32) -> Vec<Proc> {
    let mut children: HashMap<u32, Vec<&Proc>> = HashMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for c in children.get(&p).into_iter().flatten() {
            out.push(**c);
            stack.push(c.pid);
        }
    }
    out
}

/// All descendants of `pid` now.
pub(super) fn descendants(pid: u32) -> Vec<Proc> {
    descendants_in(&proc_table(), pid)
}
