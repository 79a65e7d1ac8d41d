//! Windows: every CLI tree in its own Job Object. A job holds the process and everything it starts
//! (children are put in their parent's job by the kernel, and ours do not allow breaking away), so
//! one `TerminateJobObject` stops the CLI, its shells and their tools, whatever they did with
//! consoles or process groups. The job is made with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: its
//! handle is the sidecar's alone (not inheritable), so when the sidecar exits in any way, crash
//! and Task Manager included, the kernel closes the handle and kills the tree.
//!
//! The child is created suspended and assigned to the job before its first instruction, then
//! resumed: nothing it starts can be outside the job. std does not hand out the main thread's
//! handle, so the thread is found in a Toolhelp snapshot (a new suspended process has exactly one).

use std::io;
use std::mem::size_of;

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

/// `CREATE_SUSPENDED | CREATE_NO_WINDOW` (no console flashes up for each turn).
pub(super) const CREATION_FLAGS: u32 =
    windows_sys::Win32::System::Threading::CREATE_SUSPENDED | windows_sys::Win32::System::Threading::CREATE_NO_WINDOW;

/// A Job Object handle; closing it (drop) kills whatever is still in the job.
pub(super) struct Job(HANDLE);

// SAFETY: a job handle may be used and closed from any thread.
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

impl Job {
    pub fn new() -> io::Result<Job> {
        // SAFETY: no security attributes (the handle is not inheritable), no name.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(io::Error::last_os_error());
        }
        let job = Job(handle);
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: a valid job handle and a limit struct of the size passed.
        let ok = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Put the (suspended) process in the job. Then [`resume`] it, whether this worked or not: a
    /// process must never be left suspended.
    pub fn adopt(&self, process: HANDLE) -> io::Result<()> {
        // SAFETY: valid job and process handles.
        if unsafe { AssignProcessToJobObject(self.0, process) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Kill every process in the job (the leader included). Asynchronous in the kernel, like
    /// SIGKILL: the processes are gone once their handles signal.
    pub fn terminate(&self) {
        // SAFETY: a valid job handle.
        unsafe { TerminateJobObject(self.0, 1) };
    }

    /// Processes in the job that have not exited (for tests and diagnostics).
    #[allow(dead_code)]
    pub fn active_processes(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: a valid job handle and an accounting struct of the size passed.
        let ok = unsafe {
            QueryInformationJobObject(
                self.0,
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            0
        } else {
            info.ActiveProcesses
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: our handle, closed once. KILL_ON_JOB_CLOSE ends what is left in the job.
        unsafe { CloseHandle(self.0) };
    }
}

/// Resume every thread of the (suspended) process `pid`.
pub(super) fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let mut entry = THREADENTRY32 { dwSize: size_of::<THREADENTRY32>() as u32, ..Default::default() };
    let mut resumed = 0;
    // SAFETY: a valid snapshot and an entry whose dwSize is set, as Thread32First/Next require.
    let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: plain handle calls; the thread handle is closed right after use.
            unsafe {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(thread);
                }
            }
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle, closed once.
    unsafe { CloseHandle(snapshot) };
    if resumed == 0 {
        return Err(io::Error::other(format!("could not resume process {pid}")));
    }
    Ok(())
}
