//! What every measurement engine does before it measures: pin a thread to one CPU, lock memory,
//! optionally run at SCHED_FIFO, and stop cleanly when asked (Ctrl-C).

use crate::machine::CpuSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Pins the calling thread to one CPU.
pub(crate) fn pin_current_thread(cpu: u32) -> std::io::Result<()> {
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
pub(crate) fn current_affinity() -> std::io::Result<CpuSet> {
    let set = rustix::thread::sched_getaffinity(None).map_err(std::io::Error::from)?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU as u32)
        .filter(|&cpu| set.is_set(cpu as usize))
        .collect())
}

/// How much of the process's memory is locked (mlockall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryLock {
    /// Current and future memory: nothing can page-fault.
    All,
    /// Only the memory mapped when it was locked: locking future memory too would lock each
    /// new thread's stack against `RLIMIT_MEMLOCK`, and starting the threads would fail.
    Current {
        /// `RLIMIT_MEMLOCK`, bytes.
        limit_bytes: u64,
    },
    /// Nothing: not permitted.
    None,
}

/// Locks the memory of the process, so no page fault lands in a measurement: current and
/// future memory where `RLIMIT_MEMLOCK` does not apply (unlimited, or root), else only the
/// current memory (see [`MemoryLock::Current`]); changes nothing when not permitted.
pub(crate) fn lock_memory() -> MemoryLock {
    use rustix::mm::{MlockAllFlags, mlockall};
    let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock).current;
    let unlimited = limit.is_none() || rustix::process::geteuid().is_root();
    if unlimited && mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE).is_ok() {
        return MemoryLock::All;
    }
    match (limit, mlockall(MlockAllFlags::CURRENT)) {
        (Some(limit_bytes), Ok(())) => MemoryLock::Current { limit_bytes },
        _ => MemoryLock::None,
    }
}

/// Runs the calling thread at SCHED_FIFO `priority` (1-99). Uses pthread_setschedparam, which
/// works on glibc and musl alike (musl's sched_setscheduler is ENOSYS by design).
pub(crate) fn set_fifo_priority(priority: u8) -> std::io::Result<()> {
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

/// A helper thread: runs on its CPU until the stop flag is set.
pub(crate) type Helper<'a> = Box<dyn FnOnce(&StopFlag) + Send + 'a>;

/// A flag that measurement loops poll to stop early; set by Ctrl-C or when the duration ends.
/// Threads that sleep between their work ([`StopFlag::sleep_until`]) are woken by the stop.
#[derive(Clone, Default)]
pub(crate) struct StopFlag(Arc<StopInner>);

#[derive(Default)]
struct StopInner {
    stopped: AtomicBool,
    lock: Mutex<()>,
    woken: Condvar,
}

impl StopFlag {
    /// A flag not yet set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Asks every holder to stop, and wakes those sleeping in [`StopFlag::sleep_until`].
    pub(crate) fn stop(&self) {
        let _guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.stopped.store(true, Ordering::Relaxed);
        self.0.woken.notify_all();
    }

    /// Whether a stop was asked for.
    pub(crate) fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::Relaxed)
    }

    /// The flag itself, for loops that poll it with a plain load.
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0.stopped
    }

    /// Sleeps until `deadline_ns` (`CLOCK_MONOTONIC`) or the stop, whichever comes first;
    /// returns whether the stop came.
    pub(crate) fn sleep_until(&self, deadline_ns: u64) -> bool {
        let mut guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.is_stopped() {
                return true;
            }
            let now = monotonic_ns();
            if now >= deadline_ns {
                return false;
            }
            let left = std::time::Duration::from_nanos(deadline_ns - now);
            guard = match self.0.woken.wait_timeout(guard, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The signal [`wake_thread`] sends: ignored by default, so a stray one never ends the
/// process; its handler does nothing but end the sleep it lands in.
const WAKE_SIGNAL: libc::c_int = libc::SIGURG;

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs a SIGINT handler that only records the interrupt (so loops can stop and results can
/// still be written); [`interrupted`] reports it. Also installs the handler of
/// [`wake_thread`].
pub(crate) fn catch_interrupt() {
    // SAFETY: the handlers only store to an atomic or do nothing, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        libc::signal(WAKE_SIGNAL, on_wake as *const () as libc::sighandler_t);
    }
}

/// Makes SIGTERM end a run as Ctrl-C does (the run stops, its results are written and
/// whatever it changed, a trace session, is undone) rather than kill the process at once.
/// Installed only by what must be undone: without it SIGTERM keeps its default.
pub(crate) fn catch_terminate() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_sigint as *const () as libc::sighandler_t);
    }
}

/// Ends the sleep (`clock_nanosleep`) thread `tid` of this process is in, if any, so that it
/// sees its stop flag now rather than at its next deadline. Needs [`catch_interrupt`] first.
pub(crate) fn wake_thread(tid: u32) {
    // SAFETY: tgkill only sends a signal to a thread of this process; its handler is a no-op.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid as libc::pid_t,
            WAKE_SIGNAL,
        );
    }
}

/// Whether Ctrl-C was pressed since [`catch_interrupt`].
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The kernel thread id of the calling thread.
pub(crate) fn gettid() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

/// Test helper: the first `n` CPUs this process may run on (fewer on a smaller machine, so a
/// test that needs `n` checks the length and has nothing to measure otherwise).
#[cfg(test)]
pub(crate) fn first_allowed_cpus(n: usize) -> Vec<u32> {
    current_affinity()
        .expect("sched_getaffinity of this process")
        .iter()
        .take(n)
        .collect()
}

/// Test helper: the first two CPUs this process may run on, for a test measured between two;
/// `None` on a smaller machine, said through `missing_data` (a failure under CI, which has
/// two, so the test cannot pass there having measured nothing).
#[cfg(test)]
pub(crate) fn two_allowed_cpus() -> Option<Vec<u32>> {
    let cpus = first_allowed_cpus(2);
    if cpus.len() < 2 {
        crate::test_tree::missing_data("a second CPU this process may run on");
        return None;
    }
    Some(cpus)
}

/// Restricts the calling thread to `cpus` (e.g. the housekeeping CPUs, to keep the main
/// thread off the measured ones).
pub(crate) fn pin_current_thread_to(cpus: &CpuSet) -> std::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    for cpu in cpus
        .iter()
        .filter(|&c| (c as usize) < rustix::thread::CpuSet::MAX_CPU)
    {
        set.set(cpu as usize);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(std::io::Error::from)
}

/// Whether threads of this process may run at SCHED_FIFO `priority`: tried on a short-lived
/// thread, so the caller's own policy is untouched. A refusal says why, where the live files
/// tell ([`crate::machine::rt_permission::refusal_causes`]: RLIMIT_RTPRIO, CAP_SYS_NICE, the
/// cgroup's real-time budget, kernel.sched_rt_runtime_us, seccomp).
pub(crate) fn fifo_permitted(priority: u8) -> std::io::Result<()> {
    let tried = std::thread::Builder::new()
        .spawn(move || set_fifo_priority(priority))?
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")));
    tried.map_err(|e| {
        let root = crate::sysroot::SysRoot::live();
        let mut reader = crate::machine::Reader::new(&root);
        let causes = crate::machine::rt_permission::refusal_causes(&mut reader, "self", priority);
        if causes.is_empty() {
            e
        } else {
            std::io::Error::new(e.kind(), format!("{e}: {}", causes.join("; ")))
        }
    })
}

/// Blocks (`true`) or unblocks (`false`) SIGINT and SIGTERM in the calling thread. Threads inherit the
/// mask of the thread that creates them: blocking it before spawning the measuring threads
/// keeps Ctrl-C off the measured CPUs, and the main thread takes it instead.
pub(crate) fn block_interrupt(block: bool) {
    // SAFETY: sigset_t is plain data initialised by sigemptyset before use; pthread_sigmask
    // only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// `CLOCK_MONOTONIC` in ns.
pub(crate) fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `deadline_ns` (`CLOCK_MONOTONIC`), or until Ctrl-C (see [`catch_interrupt`])
/// or `stop`. Returns true when it was cut short by Ctrl-C. Wakes only for those (a signal
/// interrupts the sleep), never to poll.
pub(crate) fn sleep_until(deadline_ns: u64, stop: &StopFlag) -> bool {
    let deadline = rustix::time::Timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as i64,
        tv_nsec: (deadline_ns % 1_000_000_000) as _,
    };
    loop {
        if interrupted() {
            return true;
        }
        if stop.is_stopped() || monotonic_ns() >= deadline_ns {
            return false;
        }
        let _ =
            rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &deadline);
    }
}

/// Writes every page of `buf` once, so that a later first write does not page-fault.
pub(crate) fn prefault<T: Copy>(buf: &mut Vec<T>, fill: T, len: usize) {
    buf.clear();
    buf.resize(len, fill);
    buf.clear();
}

/// The PM QoS file through which a process forbids deep C-states while it holds it open.
pub(crate) const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// A CPU wake-up latency limit held through /dev/cpu_dma_latency, as cyclictest and oslat hold
/// one (0 µs) while they measure: the kernel keeps the request while the file is open and
/// drops it when it closes, even if lowlat dies, so the machine is left as it was.
pub(crate) struct DmaLatencyLimit {
    _file: std::fs::File,
    /// The limit held, µs.
    pub limit_us: i32,
}

impl DmaLatencyLimit {
    /// Opens /dev/cpu_dma_latency under `root` and writes `limit_us` (a native 32-bit value).
    pub(crate) fn hold(
        root: &crate::sysroot::SysRoot,
        limit_us: i32,
    ) -> Result<Self, DmaLatencyError> {
        use std::io::Write;
        let mut file = root.open_existing_for_write(CPU_DMA_LATENCY)?;
        file.write_all(&limit_us.to_ne_bytes())
            .map_err(DmaLatencyError::Write)?;
        Ok(Self {
            _file: file,
            limit_us,
        })
    }
}

/// Why the idle-state limit could not be held, with the first cause found of the refusal (a
/// missing capability, a device mode).
#[derive(Debug, thiserror::Error)]
#[error("{error}{}", cause.as_ref().map_or(String::new(), |cause| format!(": {cause}")))]
pub(crate) struct IdleLimitRefused {
    /// What failed.
    pub error: DmaLatencyError,
    /// Why, when found.
    pub cause: Option<String>,
}

impl DmaLatencyLimit {
    /// [`DmaLatencyLimit::hold`], with the cause of a refusal looked up.
    pub(crate) fn hold_or_why(
        root: &crate::sysroot::SysRoot,
        limit_us: i32,
    ) -> Result<Self, IdleLimitRefused> {
        Self::hold(root, limit_us).map_err(|error| IdleLimitRefused {
            error,
            cause: crate::machine::rt_permission::dma_latency_refusal_causes(
                &mut crate::machine::Reader::new(root),
                "self",
            )
            .into_iter()
            .next(),
        })
    }
}

/// Why the idle-state limit could not be held.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DmaLatencyError {
    /// The device could not be opened.
    #[error(transparent)]
    Open(#[from] crate::sysroot::WriteError),
    /// The limit could not be written.
    #[error("{CPU_DMA_LATENCY}: {0}")]
    Write(#[source] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_ends_a_long_sleep_at_once() {
        // Regression: an injector slept through its whole period after the run ended.
        let stop = StopFlag::new();
        let started = std::time::Instant::now();
        std::thread::scope(|s| {
            let sleeper = s.spawn(|| stop.sleep_until(monotonic_ns() + 60_000_000_000));
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.stop();
            assert!(sleeper.join().unwrap());
        });
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(!StopFlag::new().sleep_until(monotonic_ns() + 1_000_000));
    }

    #[test]
    fn memory_is_locked_so_that_threads_can_still_start() {
        // Regression: under a finite RLIMIT_MEMLOCK, locking future memory made every new
        // thread stack count against it and spawning panicked.
        let lock = lock_memory();
        let started = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| 1)
            .map(|t| t.join().unwrap());
        assert_eq!(started.ok(), Some(1), "{lock:?}");
        if !rustix::process::geteuid().is_root()
            && rustix::process::getrlimit(rustix::process::Resource::Memlock)
                .current
                .is_some()
        {
            assert_ne!(lock, MemoryLock::All);
        }
        rustix::mm::munlockall().unwrap();
    }

    #[test]
    fn the_limit_is_written_as_a_native_32_bit_value_and_held() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        let device = dir.path().join("dev/cpu_dma_latency");
        std::fs::write(&device, b"").unwrap();
        let root = crate::sysroot::SysRoot::dir(dir.path());
        let limit = DmaLatencyLimit::hold(&root, 0).unwrap();
        assert_eq!(limit.limit_us, 0);
        assert_eq!(std::fs::read(&device).unwrap(), 0i32.to_ne_bytes());
        let missing = crate::sysroot::SysRoot::dir(dir.path().join("nothing"));
        let err = DmaLatencyLimit::hold(&missing, 0).err().unwrap();
        assert!(
            format!("{err:#}").contains("/dev/cpu_dma_latency"),
            "{err:#}"
        );
    }
}
