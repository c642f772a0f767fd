//! One measurement run, the same for every engine: one thread per measured CPU that sets
//! itself up, waits for GO, measures until the end or Ctrl-C, then waits until the main
//! thread has read the after-run counters (its `/proc` task entry must still exist); helper
//! threads (injectors, the trace drain) run alongside until the stop.
//!
//! The main thread keeps off the measured CPUs when it can, takes Ctrl-C (the measuring
//! threads block SIGINT) and sleeps through the run without waking to poll (only to say how
//! far a long run is, on a terminal, every 10 s); at the stop it wakes the measuring threads
//! from their sleeps. Every thread is started with [`std::thread::Builder`]: one that cannot
//! start ends the run with [`SpawnError`] before anything is measured.
//!
//! [`run_loops`] is that run as the loop engines (jitter, timer) use it: with the
//! environment, memory as the [`Session`] locked it, known-answer injectors
//! alongside, and the IRQ, softirq and context-switch counters read around it.

use crate::machine::{CpuSet, Warning};
use crate::measure::runner::attribution::{CounterObserver, CpuAttribution, attribute};
use crate::measure::runner::conditions::{self, LoadAverage};
use crate::measure::runner::env::{self, Environment};
use crate::measure::runner::harness::{self, Helper, StopFlag};
use crate::measure::runner::inject::{self, InjectSpec};
use crate::measure::runner::observer::Observer;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::session::Session;
use crate::text::voice;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

/// What a measuring thread gets when GO is given.
pub(crate) struct Go<'a> {
    /// Set when the run must end (end of the duration or Ctrl-C); poll it with a plain load.
    pub stop: &'a std::sync::atomic::AtomicBool,
    /// The planned end of the run, ns of `CLOCK_MONOTONIC`.
    pub end_ns: u64,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct ThreadsOutcome<T> {
    /// Each measuring thread's result, in the order of the CPUs.
    pub results: Vec<T>,
    /// Whether Ctrl-C cut the run short.
    pub interrupted: bool,
    /// The CPUs the main thread was restricted to (empty when it could not avoid the
    /// measured CPUs).
    pub main_cpus: CpuSet,
    /// Wall time from GO to stop, ns.
    pub elapsed_ns: u64,
    /// Each measuring thread's kernel thread id, in the order of the CPUs.
    pub tids: Vec<u32>,
}

/// A thread of the run could not be started.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot start a measurement thread ({0}); nothing was measured; if the limits of this \
     user are low (`ulimit -l` locked memory, `ulimit -u` processes), raise them or run as root"
)]
pub(crate) struct SpawnError(#[source] std::io::Error);

/// Runs one measurement on `cpus`. For each CPU, a thread runs `setup(cpu)` then, after GO,
/// `measure(state, go)`. `helpers` start before GO and end at the stop. Fails, having
/// measured nothing, when a thread cannot be started.
pub(crate) fn run<S, T>(
    cpus: &[u32],
    duration: Duration,
    setup: impl Fn(u32) -> S + Sync,
    measure: impl Fn(S, &Go) -> T + Sync,
    helpers: Vec<Helper<'_>>,
    observer: &mut dyn Observer,
) -> Result<ThreadsOutcome<T>, SpawnError>
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
    std::thread::scope(|scope| {
        let mut failure = None;
        for helper in helpers {
            let stop = stop.clone();
            let started = std::thread::Builder::new().spawn_scoped(scope, move || helper(&stop));
            failure = failure.or(started.err());
        }
        // Each worker waits to be admitted: the barrier counts every CPU, so none may pass it
        // unless all of them were started.
        let mut admissions = Vec::new();
        let mut workers = Vec::new();
        for (slot, &cpu) in cpus.iter().enumerate() {
            if failure.is_some() {
                break;
            }
            let (admit, admitted) = std::sync::mpsc::channel::<()>();
            let (setup, measure, barrier, stop, end_ns, tids) =
                (&setup, &measure, &barrier, &stop, &end_ns, &tids);
            let started = std::thread::Builder::new().spawn_scoped(scope, move || {
                if let Ok(mut tids) = tids.lock() {
                    tids[slot] = harness::gettid();
                }
                admitted.recv().ok()?;
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
                Some(result)
            });
            match started {
                Ok(worker) => {
                    workers.push(worker);
                    admissions.push(admit);
                }
                Err(e) => failure = Some(e),
            }
        }
        harness::block_interrupt(false);
        if let Some(e) = failure {
            // The started workers are never admitted (their channels close) and the helpers
            // see the stop.
            drop(admissions);
            stop.stop();
            return Err(SpawnError(e));
        }
        for admit in &admissions {
            let _ = admit.send(());
        }
        barrier.wait();
        let ids = tids.lock().map(|t| t.clone()).unwrap_or_default();
        observer.before(&ids);
        let start = harness::monotonic_ns();
        let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX / 2);
        end_ns.store(end, Ordering::Release);
        barrier.wait();
        // Progress only on a terminal, and only from a main thread off the measured CPUs.
        let interrupted = if !main_cpus.is_empty() && std::io::stderr().is_terminal() {
            sleep_reporting(start, end, PROGRESS_EVERY_NS, &stop, &mut |done, total| {
                voice::note!(
                    "{} s of {} s measured",
                    done / 1_000_000_000,
                    total / 1_000_000_000
                );
            })
        } else {
            harness::sleep_until(end, &stop)
        };
        stop.stop();
        // A loop asleep until a far deadline (a long timer interval) sees the stop now.
        for &tid in &ids {
            harness::wake_thread(tid);
        }
        barrier.wait();
        let elapsed_ns = harness::monotonic_ns().saturating_sub(start);
        observer.after(&ids);
        barrier.wait();
        let results = workers
            .into_iter()
            .filter_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        Ok(ThreadsOutcome {
            results,
            interrupted,
            main_cpus,
            elapsed_ns,
            tids: ids,
        })
    })
}

/// How often a long run says on stderr how far it is, ns.
const PROGRESS_EVERY_NS: u64 = 10_000_000_000;

/// Sleeps from `start_ns` until `end_ns` as [`harness::sleep_until`] does, calling
/// `report(ns done, ns in all)` every `every_ns` on the way; returns whether Ctrl-C cut it
/// short.
fn sleep_reporting(
    start_ns: u64,
    end_ns: u64,
    every_ns: u64,
    stop: &StopFlag,
    report: &mut dyn FnMut(u64, u64),
) -> bool {
    let total = end_ns.saturating_sub(start_ns);
    let mut next = start_ns.saturating_add(every_ns);
    while next < end_ns {
        if harness::sleep_until(next, stop) {
            return true;
        }
        if stop.is_stopped() {
            return false;
        }
        report(next - start_ns, total);
        next = next.saturating_add(every_ns);
    }
    harness::sleep_until(end_ns, stop)
}

/// What every loop engine (jitter, timer) is asked, whatever it measures. The CPUs are not
/// here: the session holds them ([`Session::cpus`]), one measuring thread each.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    /// How long to measure (above 0).
    pub duration: Duration,
    /// The known-answer injector to run on each measured CPU.
    pub inject: Option<InjectSpec>,
}

impl LoopSpec {
    /// One round's spec of a run of `duration` in all, split over `rounds`, with `inject` on
    /// each measured CPU. Refuses an injector period longer than the run.
    pub(crate) fn round_of(
        duration: Duration,
        rounds: u32,
        inject: Option<InjectSpec>,
    ) -> Result<Self, SpecError> {
        if let Some(inject) = inject {
            let duration_ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
            if inject.period_ns > duration_ns {
                let period_ns = inject.period_ns;
                return Err(SpecError::InjectorNeverSpins {
                    period_ns,
                    duration,
                });
            }
        }
        Ok(Self {
            duration: duration / rounds.max(1),
            inject,
        })
    }
}

/// Why a loop engine's spec is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpecError {
    /// The injector's period is longer than the run: it would never spin.
    #[error(
        "--inject: a period of {} ms is longer than --duration {duration:?}; the injector \
         would never spin; use a shorter period or a longer duration",
        *period_ns as f64 / 1e6
    )]
    InjectorNeverSpins {
        /// The injector's period, ns.
        period_ns: u64,
        /// The run's duration.
        duration: Duration,
    },
}

/// One measured CPU of a loop engine.
#[derive(Debug, Clone)]
pub(crate) struct CpuLoop<R> {
    /// The CPU.
    pub cpu: u32,
    /// Kernel thread id of its measuring thread.
    pub tid: u32,
    /// What its loop recorded.
    pub record: R,
    /// Why its thread could not measure (pinning, priority or the engine's own check
    /// failed), if it could not.
    pub setup_error: Option<String>,
}

/// A finished loop-engine run: each CPU's record and the conditions it was taken under.
#[derive(Debug, Clone)]
pub(crate) struct Finished<R> {
    /// Each measured CPU, in ascending order.
    pub cpus: Vec<CpuLoop<R>>,
    /// Whether Ctrl-C cut the run short.
    pub interrupted: bool,
    /// Wall time of the run, ns.
    pub elapsed_ns: u64,
    /// The CPUs the main thread ran on (empty: it shared the measured ones).
    pub main_cpus: CpuSet,
    /// Whether memory was locked (mlockall).
    pub memory_locked: bool,
    /// Spins done by each CPU's injector (empty without an injector).
    pub injector_spins: Vec<u64>,
    /// What was counted on each CPU during the run.
    pub attribution: Vec<CpuAttribution>,
    /// The 1-minute load average before and after the run, when readable.
    pub load_average: Option<LoadAverage>,
    /// The measured CPUs other tasks shared during the run, one sentence each.
    pub shared: Vec<String>,
    /// The machine when it ran.
    pub environment: Environment,
    /// Problems met reading the counters.
    pub warnings: Vec<Warning>,
    /// Segments the run was measured in (1, or more for a checkpointed run: see
    /// [`super::segments`]).
    pub segments: u32,
}

impl<R> Finished<R> {
    /// Whether every CPU measured to its end: the run not interrupted, no CPU left unmeasured
    /// (its setup failed) and none `cut_short` (a buffer full). Says nothing: the caller says
    /// why, where it has a voice.
    pub(crate) fn complete(&self, cut_short: impl Fn(&CpuLoop<R>) -> bool) -> bool {
        !self.interrupted
            && (self.cpus.iter()).all(|cpu| cpu.setup_error.is_none() && !cut_short(cpu))
    }
}

impl<R: Merge> Merge for Finished<R> {
    fn merge(&mut self, later: Self) {
        for (cpu, more) in self.cpus.iter_mut().zip(later.cpus) {
            cpu.record.merge(more.record);
            cpu.setup_error = cpu.setup_error.take().or(more.setup_error);
        }
        self.interrupted |= later.interrupted;
        self.elapsed_ns += later.elapsed_ns;
        self.memory_locked &= later.memory_locked;
        for (spins, more) in self.injector_spins.iter_mut().zip(later.injector_spins) {
            *spins += more;
        }
        for (attribution, more) in self.attribution.iter_mut().zip(later.attribution) {
            attribution.merge(more);
        }
        if let (Some(load), Some(more)) = (&mut self.load_average, later.load_average) {
            load.after = more.after;
        }
        self.shared = self
            .attribution
            .iter()
            .filter_map(|a| a.shared_warning(self.elapsed_ns))
            .collect();
        for warning in later.warnings {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
        self.segments += later.segments;
    }
}

impl<R> Finished<R> {
    /// Every warning of the run, as sentences: the counters' file problems, then the shared
    /// CPUs.
    pub(crate) fn warning_lines(&self) -> Vec<String> {
        self.warnings
            .iter()
            .map(ToString::to_string)
            .chain(self.shared.iter().cloned())
            .collect()
    }
}

/// Runs a loop engine for `spec` on the session's CPUs (one thread each, in ascending
/// order): captures the environment, runs the hogs and
/// injectors alongside and reads the counters before GO and after the stop, saying
/// `progress` on stderr at GO. On each CPU a thread runs `setup(cpu)`, which returns the
/// empty record and why the thread cannot measure (see [`prepare_thread`]); after GO,
/// `measure` fills the record of every thread that can. With `drain` (a period and a call: a
/// trace's buffers), a helper thread (on the main thread's CPUs, off the measured ones) makes
/// the call every period until the stop. Fails when a thread cannot be started.
pub(crate) fn run_loops<R: Send>(
    session: &Session,
    spec: &LoopSpec,
    progress: String,
    drain: Option<(Duration, impl Fn() + Send)>,
    setup: impl Fn(u32) -> (R, Option<String>) + Sync,
    measure: impl Fn(&mut R, &Go) + Sync,
) -> Result<Finished<R>, SpawnError> {
    let root = session.root();
    let measured: Vec<u32> = session.cpus.iter().collect();
    let environment = env::capture(root, &session.machine, &measured);
    let mut helpers: Vec<Helper> = Vec::new();
    let spins = spec.inject.map(|inject| {
        let (injectors, counts) = inject::injectors(&measured, inject);
        helpers.extend(injectors);
        counts
    });
    if let Some((every, drain)) = drain {
        helpers.push(Box::new(move |stop: &StopFlag| {
            let every = u64::try_from(every.as_nanos()).unwrap_or(u64::MAX);
            while !stop.sleep_until(harness::monotonic_ns().saturating_add(every)) {
                drain();
            }
        }));
    }
    let mut observer = CounterObserver::new(root, &measured, progress);
    let outcome = run(
        &measured,
        spec.duration,
        setup,
        |(mut record, error): (R, Option<String>), go| {
            if error.is_none() {
                measure(&mut record, go);
            }
            (record, error)
        },
        helpers,
        &mut observer,
    )?;
    let cpus = measured
        .iter()
        .zip(outcome.results)
        .enumerate()
        .map(|(slot, (&cpu, (record, setup_error)))| CpuLoop {
            cpu,
            tid: outcome.tids.get(slot).copied().unwrap_or(0),
            record,
            setup_error,
        })
        .collect();
    let attribution = attribute(&measured, &observer.before, &observer.after);
    let load_average =
        conditions::load_average(&observer.before.conditions, &observer.after.conditions);
    let shared = attribution
        .iter()
        .filter_map(|a| a.shared_warning(outcome.elapsed_ns))
        .collect();
    Ok(Finished {
        cpus,
        interrupted: outcome.interrupted,
        elapsed_ns: outcome.elapsed_ns,
        main_cpus: outcome.main_cpus,
        memory_locked: session.memory_locked(),
        injector_spins: spins.map(|s| s.get()).unwrap_or_default(),
        attribution,
        load_average,
        shared,
        environment,
        warnings: observer.warnings.into_vec(),
        segments: 1,
    })
}

/// A SCHED_FIFO priority that was asked for but is not permitted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FifoError {
    /// The measuring threads' priority.
    #[error(
        "SCHED_FIFO {priority} is not permitted ({source}); run as root, with CAP_SYS_NICE or \
         an RLIMIT_RTPRIO of at least {priority}, or measure at normal priority"
    )]
    Measuring {
        /// The priority asked for.
        priority: u8,
        /// Why it was refused.
        source: std::io::Error,
    },
    /// The known-answer injector's priority.
    #[error(
        "the injector needs SCHED_FIFO {} and that is not permitted ({source}); run as root or \
         with CAP_SYS_NICE",
        inject::PRIORITY
    )]
    Injector {
        /// Why it was refused.
        source: std::io::Error,
    },
}

/// Refuses to start when a SCHED_FIFO `priority` is asked for, or an injector (`inject`,
/// which runs at [`inject::PRIORITY`]) is, but not permitted.
pub(crate) fn check_fifo(priority: Option<u8>, inject: bool) -> Result<(), FifoError> {
    if let Some(priority) = priority {
        harness::fifo_permitted(priority)
            .map_err(|source| FifoError::Measuring { priority, source })?;
    }
    if inject {
        harness::fifo_permitted(inject::PRIORITY)
            .map_err(|source| FifoError::Injector { source })?;
    }
    Ok(())
}

/// Run on a measuring thread before anything is allocated: pins it to `cpu` and, with a
/// `priority`, runs it at SCHED_FIFO; returns why the thread cannot measure, if it cannot.
pub(crate) fn prepare_thread(cpu: u32, priority: Option<u8>) -> Option<String> {
    if let Err(e) = harness::pin_current_thread(cpu) {
        return Some(format!("cannot pin to CPU {cpu}: {e}"));
    }
    let priority = priority?;
    harness::set_fifo_priority(priority)
        .err()
        .map(|e| format!("cannot run at SCHED_FIFO {priority}: {e}"))
}

/// Restricts the main thread to the CPUs it may use that are not measured; returns them
/// (empty when every CPU it may use is measured, and it then stays where it was).
pub(crate) fn keep_main_thread_off(cpus: &[u32]) -> CpuSet {
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
    use crate::measure::runner::session::Engine;

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
        )
        .unwrap();
        assert_eq!(outcome.results, vec![10, 10]);
        assert!(!outcome.interrupted);
        assert!(outcome.elapsed_ns >= 30_000_000);
        assert_eq!(outcome.tids.len(), 2);
        assert!(
            outcome.tids.iter().all(|&tid| tid > 0),
            "{:?}",
            outcome.tids
        );
        assert_ne!(outcome.tids[0], outcome.tids[1]);
        assert_eq!(observer.0, vec!["before true", "after 2"]);
    }

    #[test]
    fn loops_measure_only_where_setup_succeeded() {
        // A root with CPUs online and nothing else: the environment and the counters are
        // unavailable, the run goes on.
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::write(cpu.join("online"), "0-1023\n").unwrap();
        let root = crate::sysroot::SysRoot::dir(dir.path());
        // Every CPU this process may run on: at least one.
        let session = Session::open(root, Engine::Freq, None).unwrap();
        let spec = LoopSpec {
            duration: Duration::from_millis(10),
            inject: None,
        };
        let refused = std::sync::atomic::AtomicBool::new(false);
        let finished = run_loops(
            &session,
            &spec,
            "test run".to_string(),
            None::<(Duration, fn())>,
            |_| {
                // The first thread to set up is refused, the other measures.
                let first = !refused.swap(true, Ordering::Relaxed);
                (0u32, first.then(|| "refused".to_string()))
            },
            |count, _| *count += 1,
        )
        .unwrap();
        let chosen: Vec<u32> = session.cpus.iter().collect();
        assert_eq!(
            finished.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
            chosen
        );
        for cpu in &finished.cpus {
            assert!(cpu.tid > 0);
            let expected = if cpu.setup_error.is_some() { 0 } else { 1 };
            assert_eq!(cpu.record, expected, "{:?}", cpu.setup_error);
        }
        let refused = finished.cpus.iter().filter(|c| c.setup_error.is_some());
        assert_eq!(refused.count(), 1);
        assert_eq!(
            finished.cpus.iter().map(|c| c.record).sum::<u32>() as usize,
            chosen.len() - 1
        );
        assert!(finished.injector_spins.is_empty());
        assert_eq!(finished.attribution.len(), chosen.len());
        assert!(finished.environment.kernel_release.reason().is_some());
    }

    #[test]
    fn a_long_run_reports_its_progress() {
        // Regression: a 10-minute run was silent for 10 minutes.
        let start = harness::monotonic_ns();
        let mut reports = Vec::new();
        let interrupted = sleep_reporting(
            start,
            start + 35_000_000,
            10_000_000,
            &StopFlag::new(),
            &mut |done, total| reports.push((done, total)),
        );
        assert!(!interrupted);
        let ms = 1_000_000;
        assert_eq!(
            reports,
            vec![(10 * ms, 35 * ms), (20 * ms, 35 * ms), (30 * ms, 35 * ms)]
        );
        assert!(harness::monotonic_ns() >= start + 35 * ms);
    }

    #[test]
    fn unpinnable_threads_say_why() {
        let error = prepare_thread(8000, Some(1)).unwrap();
        assert!(error.starts_with("cannot pin to CPU 8000"), "{error}");
    }

    #[test]
    fn a_round_is_the_duration_split_and_an_injector_longer_than_the_run_is_refused() {
        let inject = InjectSpec {
            period_ns: 10_000_000,
            spin_ns: 500_000,
        };
        let spec = LoopSpec::round_of(Duration::from_secs(2), 4, Some(inject)).unwrap();
        assert_eq!(spec.duration, Duration::from_millis(500));
        assert_eq!(spec.inject.map(|i| i.spin_ns), Some(500_000));
        let err = LoopSpec::round_of(Duration::from_millis(5), 1, Some(inject)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--inject: a period of 10 ms is longer than --duration 5ms; the injector would \
             never spin; use a shorter period or a longer duration"
        );
    }
}
