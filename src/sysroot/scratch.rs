//! The private directory a machine's files are unpacked into (a snapshot, a must-gather node):
//! removed when dropped, and also when SIGINT, SIGTERM or SIGHUP ends lowlat while it lives.
//! Those signals end the process without running a destructor, which left the tree (up to
//! hundreds of megabytes) in the temporary directory until a later run.
//!
//! The handler only writes the signal's number to a pipe (async-signal-safe); a thread reads
//! it, removes every scratch directory alive, restores the signal's previous disposition and
//! raises it again, so lowlat ends as the signal would have ended it. A signal ignored when the
//! first scratch directory is made is left alone. The handlers stay for the life of the
//! process: with no scratch directory alive, a signal only passes through.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use super::signals::Handlers;

/// The signals that end lowlat and after which its scratch directories are removed.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A private temporary directory, removed when dropped or when a signal ends lowlat.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new directory in the temporary directory (`$TMPDIR`, else `/tmp`) whose name starts
    /// with `prefix`.
    pub fn new(prefix: &str) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(std::env::temp_dir())?;
        watcher()
            .alive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.path().to_path_buf());
        Ok(Self { dir })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mut alive = watcher().alive.lock().unwrap_or_else(|e| e.into_inner());
        alive.retain(|dir| dir != self.dir.path());
        // The TempDir removes the directory as it drops, after this.
    }
}

/// The scratch directories alive, and the handlers over the signals' previous dispositions
/// (none when the pipe or the thread could not be made).
struct Watcher {
    alive: Mutex<Vec<PathBuf>>,
    handlers: Option<Handlers>,
}

/// The pipe's write end the handler writes a signal's number to (-1: none).
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// The signals whose previous disposition ends the process (the default): their handler waits
/// for the end, so that the thread it interrupted (one that raised the signal, say) goes no
/// further, as with the default action.
static ENDS: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    let byte = signal as u8;
    // SAFETY: write(2) and pause(2) are async-signal-safe; a failed write leaves the default
    // clean-up. The clean-up thread blocks these signals, so this never runs on it.
    unsafe {
        if libc::write(fd, (&raw const byte).cast(), 1) == 1
            && ENDS.load(Ordering::Relaxed) & (1 << signal) != 0
        {
            loop {
                libc::pause();
            }
        }
    }
}

/// The watcher, started on first use: the pipe, the thread reading it and the handlers.
fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Watcher {
                alive: Mutex::new(Vec::new()),
                handlers: None,
            };
        }
        PIPE.store(fds[1], Ordering::Relaxed);
        let read = fds[0];
        // The thread starts with the signals blocked (a new thread inherits the mask), so their
        // handler, which waits for the end, never runs on it.
        // SAFETY: plain signal-set calls on a zeroed set; the caller's mask is restored below.
        let mut caller: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in SIGNALS {
                libc::sigaddset(&mut set, signal);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut caller);
        }
        let spawned = std::thread::Builder::new()
            .name("lowlat-scratch".into())
            .spawn(move || clean_up_on_signals(read));
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &caller, std::ptr::null_mut()) };
        // The handler only writes to a pipe. It is not blocked while it waits: the clean-up
        // thread raises the signal again with the default action, which must reach the
        // waiting thread.
        let handlers = spawned
            .is_ok()
            .then(|| Handlers::install(&SIGNALS, on_signal, libc::SA_NODEFER));
        for signal in handlers.iter().flat_map(Handlers::over_default) {
            ENDS.fetch_or(1 << signal, Ordering::Relaxed);
        }
        Watcher {
            alive: Mutex::new(Vec::new()),
            handlers,
        }
    })
}

/// The thread: for each signal read from `read`, removes the scratch directories alive, then
/// ends the process as the signal would have.
fn clean_up_on_signals(read: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: reads one byte into `byte`.
        let n = unsafe { libc::read(read, (&raw mut byte).cast(), 1) };
        if n == 0 {
            return;
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let signal = libc::c_int::from(byte);
        let watcher = watcher();
        for dir in watcher
            .alive
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
        // The disposition saved when the handler was installed, then the signal delivered to
        // the process with it.
        if watcher.handlers.as_ref().is_some_and(|h| h.restore(signal)) {
            // SAFETY: kill(2) on our own process.
            unsafe { libc::kill(libc::getpid(), signal) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_made_and_removed_when_dropped() {
        let scratch = Scratch::new("lowlat-scratch-test-").unwrap();
        let dir = scratch.path().to_path_buf();
        assert!(dir.is_dir());
        assert!(watcher().alive.lock().unwrap().contains(&dir));
        drop(scratch);
        assert!(!dir.exists());
        assert!(!watcher().alive.lock().unwrap().contains(&dir));
    }
}
