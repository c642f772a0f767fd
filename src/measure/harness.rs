//! What every measurement engine does before it measures: pin a thread to one CPU, lock memory,
//! optionally run at SCHED_FIFO, and stop cleanly when asked (Ctrl-C).

use crate::machine::CpuSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: u32) -> std::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    if cpu as usize >= rustix::thread::CpuSet::MAX_CPU {
        return Err(std::io::Error::other(format!(
            "CPU {cpu} is above the {} CPUs lowlat can pin to",
            rustix::thread::CpuSet::MAX_CPU
        )));
    }
    set.set(cpu as usize);
    rustix::thread::sched_setaffinity(None, &set).map_err(std::io::Error::from)
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> std::io::Result<CpuSet> {
    let set = rustix::thread::sched_getaffinity(None).map_err(std::io::Error::from)?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU as u32)
        .filter(|&cpu| set.is_set(cpu as usize))
        .collect())
}

/// Locks current and future memory of the process, so no page fault lands in a measurement.
/// Returns false (and changes nothing) when not permitted.
pub fn lock_memory() -> bool {
    rustix::mm::mlockall(rustix::mm::MlockAllFlags::CURRENT | rustix::mm::MlockAllFlags::FUTURE)
        .is_ok()
}

/// Runs the calling thread at SCHED_FIFO `priority` (1-99). Uses pthread_setschedparam, which
/// works on glibc and musl alike (musl's sched_setscheduler is ENOSYS by design).
pub fn set_fifo_priority(priority: u8) -> std::io::Result<()> {
    // SAFETY: sched_param is plain data; zero-initialise it since musl has extra fields.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = i32::from(priority);
    // SAFETY: pthread_self() is always a valid handle for the calling thread.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// A flag that measurement loops poll to stop early; set by Ctrl-C or when the duration ends.
#[derive(Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every holder to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Installs a SIGINT handler that only records the interrupt (so loops can stop and results can
/// still be written); [`interrupted`] reports it.
pub fn catch_interrupt() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

/// Whether Ctrl-C was pressed since [`catch_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
