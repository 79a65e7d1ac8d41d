//! Is the machine short of memory? Each OS's own measure: Linux `MemAvailable` (what the kernel
//! can hand out without swapping), Windows `ullAvailPhys` from `GlobalMemoryStatusEx`, macOS the
//! kernel's memory-pressure level (`kern.memorystatus_vm_pressure_level`, what Activity Monitor's
//! pressure graph shows): macOS compresses and purges memory, so "free" says little there.
//! Unknown counts as not tight: a reading that fails never stops anything.

/// `min_available_kib`: below this much available memory it is tight (Linux, Windows).
pub fn memory_is_tight(min_available_kib: u64) -> bool {
    imp::tight(min_available_kib).unwrap_or(false)
}

#[cfg(target_os = "linux")]
mod imp {
    pub fn tight(min_kib: u64) -> Option<bool> {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib: u64 =
            info.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?.split_whitespace().next()?.parse().ok()?;
        Some(kib < min_kib)
    }
}

#[cfg(target_os = "macos")]
mod imp {
    /// `kern.memorystatus_vm_pressure_level`: 1 normal, 2 warning, 4 critical
    /// (`DISPATCH_MEMORYPRESSURE_*`). Warning already means the system is reclaiming memory.
    pub fn tight(_min_kib: u64) -> Option<bool> {
        let mut level: libc::c_int = 0;
        let mut size = std::mem::size_of::<libc::c_int>();
        // SAFETY: a NUL-terminated name, an int-sized buffer and its size; nothing is written.
        let rc = unsafe {
            libc::sysctlbyname(
                c"kern.memorystatus_vm_pressure_level".as_ptr(),
                (&mut level as *mut libc::c_int).cast(),
                &mut size,
                std::ptr::null_mut(),
                0,
            )
        };
        (rc == 0).then_some(level >= 2)
    }
}

#[cfg(windows)]
mod imp {
    use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};

    pub fn tight(min_kib: u64) -> Option<bool> {
        let mut status =
            MEMORYSTATUSEX { dwLength: std::mem::size_of::<MEMORYSTATUSEX>() as u32, ..Default::default() };
        // SAFETY: a MEMORYSTATUSEX with dwLength set, as the call requires.
        let ok = unsafe { GlobalMemoryStatusEx(&mut status) } != 0;
        ok.then_some(status.ullAvailPhys / 1024 < min_kib)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod imp {
    pub fn tight(_min_kib: u64) -> Option<bool> {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_os_reading_is_there_and_the_threshold_applies() {
        // Every supported OS answers (a failing reading would silently keep spares under pressure).
        assert!(super::imp::tight(0).is_some(), "the memory reading failed on this OS");
        // macOS reads a pressure level, not a size: no threshold decides there.
        if cfg!(any(target_os = "linux", windows)) {
            assert_eq!(super::imp::tight(0), Some(false));
            assert_eq!(super::imp::tight(u64::MAX), Some(true));
        }
    }
}
