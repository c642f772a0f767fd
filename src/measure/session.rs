//! One measurement run, the same for every engine: one thread per measured CPU that sets
//! itself up, waits for GO, measures until the end or Ctrl-C, then waits until the main
//! thread has read the after-run counters (its `/proc` task entry must still exist); helper
//! threads (load, injectors) run alongside until the stop.
//!
//! The main thread keeps off the measured CPUs when it can, takes Ctrl-C (the measuring
//! threads block SIGINT) and sleeps through the run without waking to poll.

use super::harness::{self, StopFlag};
use crate::machine::CpuSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

/// What a measuring thread gets when GO is given.
pub struct Go<'a> {
    /// Set when the run must end (end of the duration or Ctrl-C); poll it with a plain load.
    pub stop: &'a std::sync::atomic::AtomicBool,
    /// The planned end of the run, ns of `CLOCK_MONOTONIC`.
    pub end_ns: u64,
}

/// Callbacks of the main thread around the run.
pub trait Observer {
    /// Called when every thread is set up, before GO, with the measuring threads' ids in
    /// the order of the CPUs.
    fn before(&mut self, tids: &[u32]);
    /// Called when every measuring thread has stopped, before they exit.
    fn after(&mut self, tids: &[u32]);
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome<T> {
    /// Each measuring thread's result, in the order of the CPUs.
    pub results: Vec<T>,
    /// Whether Ctrl-C cut the run short.
    pub interrupted: bool,
    /// The CPUs the main thread was restricted to (empty when it could not avoid the
    /// measured CPUs).
    pub main_cpus: CpuSet,
    /// Wall time from GO to stop, ns.
    pub elapsed_ns: u64,
}

/// A helper thread: runs on its CPU until the stop flag is set.
pub type Helper<'a> = Box<dyn FnOnce(&StopFlag) + Send + 'a>;

/// Runs one measurement on `cpus`. For each CPU, a thread runs `setup(cpu)` then, after GO,
/// `measure(state, go)`. `helpers` start before GO and end at the stop.
pub fn run<S, T>(
    cpus: &[u32],
    duration: Duration,
    setup: impl Fn(u32) -> S + Sync,
    measure: impl Fn(S, &Go) -> T + Sync,
    helpers: Vec<Helper<'_>>,
    observer: &mut dyn Observer,
) -> Outcome<T>
where
    T: Send,
{
    let main_cpus = keep_main_thread_off(cpus);
    harness::catch_interrupt();
    let stop = StopFlag::new();
    let barrier = Barrier::new(cpus.len() + 1);
    let end_ns = AtomicU64::new(0);
    let tids = Mutex::new(vec![0u32; cpus.len()]);
    harness::block_interrupt(true);
    let (results, interrupted, elapsed_ns) = std::thread::scope(|scope| {
        for helper in helpers {
            let stop = stop.clone();
            scope.spawn(move || helper(&stop));
        }
        let workers: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(slot, &cpu)| {
                let (setup, measure, barrier, stop, end_ns, tids) =
                    (&setup, &measure, &barrier, &stop, &end_ns, &tids);
                scope.spawn(move || {
                    if let Ok(mut tids) = tids.lock() {
                        tids[slot] = harness::gettid();
                    }
                    let state = setup(cpu);
                    barrier.wait(); // ready
                    barrier.wait(); // go
                    let go = Go {
                        stop: stop.flag(),
                        end_ns: end_ns.load(Ordering::Acquire),
                    };
                    let result = measure(state, &go);
                    barrier.wait(); // finished
                    barrier.wait(); // released
                    result
                })
            })
            .collect();
        harness::block_interrupt(false);
        barrier.wait();
        let ids = tids.lock().map(|t| t.clone()).unwrap_or_default();
        observer.before(&ids);
        let start = harness::monotonic_ns();
        let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX / 2);
        end_ns.store(end, Ordering::Release);
        barrier.wait();
        let interrupted = harness::sleep_until(end, &stop);
        stop.stop();
        barrier.wait();
        let elapsed = harness::monotonic_ns().saturating_sub(start);
        observer.after(&ids);
        barrier.wait();
        let results: Vec<T> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (results, interrupted, elapsed)
    });
    Outcome {
        results,
        interrupted,
        main_cpus,
        elapsed_ns,
    }
}

/// Checks that every CPU of `cpus` (given with `flag`) exists and is online, from
/// `/sys/devices/system/cpu/online` under `root`; returns them in order.
pub fn check_cpus(
    root: &crate::sysroot::SysRoot,
    flag: &str,
    cpus: &CpuSet,
) -> Result<Vec<u32>, String> {
    const ONLINE: &str = "/sys/devices/system/cpu/online";
    if cpus.is_empty() {
        return Err(format!(
            "{flag}: no CPU given (e.g. {flag} 1 or {flag} 2-3)"
        ));
    }
    let online = root
        .read_value(ONLINE)
        .map_err(|e| format!("{flag}: cannot tell which CPUs are online: {e}"))?;
    let online = CpuSet::parse_list(&online).map_err(|e| format!("{flag}: {ONLINE}: {e}"))?;
    let missing = cpus.difference(&online);
    if !missing.is_empty() {
        return Err(format!(
            "{flag} {}: CPU {} does not exist or is offline (online CPUs: {})",
            cpus.to_list(),
            missing.to_list(),
            online.to_list()
        ));
    }
    Ok(cpus.iter().collect())
}

/// Restricts the main thread to the CPUs it may use that are not measured; returns them
/// (empty when every CPU it may use is measured, and it then stays where it was).
fn keep_main_thread_off(cpus: &[u32]) -> CpuSet {
    let measured: CpuSet = cpus.iter().copied().collect();
    let Ok(allowed) = harness::current_affinity() else {
        return CpuSet::new();
    };
    let free = allowed.difference(&measured);
    if free.is_empty() || harness::pin_current_thread_to(&free).is_err() {
        return CpuSet::new();
    }
    free
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Record(Vec<String>);

    impl Observer for Record {
        fn before(&mut self, tids: &[u32]) {
            self.0
                .push(format!("before {}", tids.iter().all(|&t| t > 0)));
        }
        fn after(&mut self, tids: &[u32]) {
            self.0.push(format!("after {}", tids.len()));
        }
    }

    #[test]
    fn cpus_must_be_online() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(dir.path().join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
        let root = crate::sysroot::SysRoot::dir(dir.path());
        let set = |list| CpuSet::parse_list(list).unwrap();
        assert_eq!(check_cpus(&root, "--cpus", &set("1")), Ok(vec![1]));
        let err = check_cpus(&root, "--cpus", &set("1-3")).unwrap_err();
        assert!(
            err.contains("--cpus 1-3: CPU 2-3 does not exist or is offline"),
            "{err}"
        );
        assert!(
            check_cpus(&root, "--load", &CpuSet::new())
                .unwrap_err()
                .starts_with("--load")
        );
    }

    #[test]
    fn runs_setup_measure_and_observer_in_order() {
        let mut observer = Record(Vec::new());
        let outcome = run(
            &[0, 0],
            Duration::from_millis(30),
            |cpu| cpu + 10,
            |state, go| {
                while !go.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                state
            },
            vec![Box::new(|stop: &StopFlag| {
                while !stop.is_stopped() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })],
            &mut observer,
        );
        assert_eq!(outcome.results, vec![10, 10]);
        assert!(!outcome.interrupted);
        assert!(outcome.elapsed_ns >= 30_000_000);
        assert_eq!(observer.0, vec!["before true", "after 2"]);
    }
}
