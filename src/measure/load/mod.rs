//! Loads beside a measurement (`check --load`, `measure jitter|timer --load`): lowlat's own
//! engines run on the housekeeping CPUs only, as the machine will be loaded in production,
//! each saying how hard it pushed in every round, so that two loaded runs on two machines or
//! two days can be compared.
//!
//! One file per kind: `cpu` (busy loops and hackbench's pattern of tasks passing messages),
//! `mem` (membw's Triad kernel), `cache` (memlat's pointer chase over more than the LLC), `io`
//! (O_DIRECT reads and writes of an unnamed scratch file), `net` (UDP over loopback, or out of
//! a NIC to a peer the user names), `ipi`
//! (mprotect storms for TLB shootdowns, membarrier for cross-CPU calls); `received` reads the
//! IPIs that reached the measured CPUs. Threads are named `ll-load-KIND` (as `top -H` shows
//! them), pinned to one housekeeping CPU each, and stopped when the [`Loads`] is dropped: at
//! the end, on every error, and at Ctrl-C (each thread also watches the interrupt).

mod cache;
mod control;
mod cpu;
mod io;
mod ipi;
mod mem;
mod net;
pub(crate) mod received;

pub(crate) use net::OverNic;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::machine::CpuSet;
use crate::measure::runner::harness;
use crate::measure::runner::session::Session;
use crate::sysroot::SysRoot;
use control::Control;

/// How long a kind may take to start (map and touch its memory, open its file) before it is
/// given up.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// One kind of load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// Busy loops and tasks passing messages (scheduler churn).
    Cpu,
    /// Memory bandwidth: STREAM's Triad.
    Mem,
    /// LLC thrash: a pointer chase over more than the last-level cache.
    Cache,
    /// O_DIRECT reads and writes of a scratch file.
    Io,
    /// UDP datagrams over loopback, or out of a NIC to a named peer.
    Net,
    /// TLB shootdowns and cross-CPU function calls.
    Ipi,
}

impl Kind {
    /// Every kind, in the order `all` runs them.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Cpu,
        Kind::Mem,
        Kind::Cache,
        Kind::Io,
        Kind::Net,
        Kind::Ipi,
    ];

    /// Its name on the command line and in thread names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Mem => "mem",
            Kind::Cache => "cache",
            Kind::Io => "io",
            Kind::Net => "net",
            Kind::Ipi => "ipi",
        }
    }

    /// The unit of its intensity.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Kind::Cpu => "messages/s",
            Kind::Mem => "GB/s",
            Kind::Cache => "accesses/s",
            Kind::Io => "IOPS",
            Kind::Net => "packets/s",
            Kind::Ipi => "IPIs sent/s",
        }
    }

    /// What its counter counts per unit of its intensity (bytes per GB for `mem`).
    fn per_unit(self) -> f64 {
        match self {
            Kind::Mem => 1e9,
            _ => 1.0,
        }
    }

    /// `cpu,mem`, `all`: the kinds named, each once, in [`Kind::ALL`]'s order.
    pub(crate) fn parse_list(text: &str) -> Result<Vec<Kind>, String> {
        let mut kinds = Vec::new();
        for word in text.split(',').map(str::trim) {
            if word == "all" {
                kinds.extend(Kind::ALL);
                continue;
            }
            match Kind::ALL.iter().find(|k| k.name() == word) {
                Some(kind) => kinds.push(*kind),
                None => {
                    return Err(format!(
                        "unknown load {word:?}; give one or more of cpu, mem, cache, io, net, \
                         ipi, separated by commas, or all"
                    ));
                }
            }
        }
        kinds.sort();
        kinds.dedup();
        Ok(kinds)
    }
}

/// How hard each load thread works: the share of its time it spends working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Level {
    /// A tenth of the time.
    Low,
    /// Half of the time.
    Medium,
    /// All of the time.
    #[default]
    High,
}

impl Level {
    /// The share of time each thread works.
    fn duty(self) -> f64 {
        match self {
            Level::Low => 0.1,
            Level::Medium => 0.5,
            Level::High => 1.0,
        }
    }

    /// Its name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }

    /// `low`, `medium`, `high`.
    pub(crate) fn parse(text: &str) -> Result<Level, String> {
        match text {
            "low" => Ok(Level::Low),
            "medium" => Ok(Level::Medium),
            "high" => Ok(Level::High),
            _ => Err(format!(
                "unknown load level {text:?}; give low, medium or high"
            )),
        }
    }
}

/// What loads the user asked for, before the CPUs are known (also as a prove run's state
/// records them, so that its after arm runs the loads its before arm ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadAsked {
    /// The kinds, each once.
    pub kinds: Vec<Kind>,
    /// How hard.
    pub level: Level,
    /// Where `io` opens its scratch file; `None`: `/var/tmp`.
    pub scratch_dir: Option<PathBuf>,
    /// The interface and peer `net` sends to (`--load-if`, `--load-peer`); `None` (and absent
    /// in a prove state written before them): loopback.
    #[serde(default)]
    pub net_over: Option<OverNic>,
}

impl LoadAsked {
    /// The loads beside `measured`, on the CPUs of `allowed` not measured, sized to a machine
    /// whose last-level caches hold `llc_bytes`. Refuses, naming `--load`, when no CPU is left
    /// for them, and an interface for `net` that `root` does not have or that is down.
    pub(crate) fn beside(
        &self,
        root: &SysRoot,
        allowed: &CpuSet,
        measured: &CpuSet,
        llc_bytes: u64,
    ) -> Result<LoadRequest, LoadRefused> {
        let refused = |why| LoadRefused {
            asked: self.names(),
            why,
        };
        if let Some(over) = &self.net_over {
            if !self.kinds.contains(&Kind::Net) {
                return Err(refused(LoadError::Nic(format!(
                    "--load-if {}: only the net load sends through an interface; add net to \
                     --load",
                    crate::text::escape_controls(&over.interface)
                ))));
            }
            over.check(root).map_err(|e| refused(LoadError::Nic(e)))?;
        }
        Ok(LoadRequest {
            kinds: self.kinds.clone(),
            level: self.level,
            cpus: housekeeping(allowed, measured).map_err(refused)?,
            scratch_dir: self.scratch_dir.clone(),
            llc_bytes,
            net_over: self.net_over.clone(),
        })
    }

    /// The loads beside `session`'s CPUs ([`LoadAsked::beside`]), started ([`Loads::start`]).
    pub(crate) fn start_beside(&self, session: &Session) -> Result<Loads, LoadRefused> {
        let llc_bytes = session.machine.topology.llc_bytes_total();
        let request = self.beside(session.root(), session.allowed(), &session.cpus, llc_bytes)?;
        Ok(Loads::start(&request))
    }

    /// `cpu,mem`.
    pub(crate) fn names(&self) -> String {
        let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        names.join(",")
    }
}

/// What loads to run, and where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoadRequest {
    /// The kinds, each once.
    pub kinds: Vec<Kind>,
    /// How hard.
    pub level: Level,
    /// The housekeeping CPUs, one thread of each kind (two for `cpu`'s messages) per CPU
    /// ([`housekeeping`]).
    pub cpus: CpuSet,
    /// Where `io` opens its scratch file; `None`: `/var/tmp`.
    pub scratch_dir: Option<PathBuf>,
    /// The machine's last-level caches together, bytes (sizes `mem` and `cache`).
    pub llc_bytes: u64,
    /// The interface and peer `net` sends to; `None`: loopback.
    pub net_over: Option<OverNic>,
}

/// Why no load can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LoadError {
    /// Every CPU this process may run on is measured.
    #[error(
        "no housekeeping CPU is left for the load: every CPU this process may run on is measured \
         (CPU {measured}); measure fewer CPUs (--cpus), or run without --load"
    )]
    NoHousekeeping {
        /// The measured CPUs.
        measured: String,
    },
    /// `--load-if` names no interface that `net` can send through (said with the flag).
    #[error("{0}")]
    Nic(String),
}

/// Why the loads asked for cannot run, said with the flag: `--load cpu,mem: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--load {asked}: {why}")]
pub(crate) struct LoadRefused {
    /// The kinds asked (`cpu,mem`).
    pub asked: String,
    /// Why not.
    pub why: LoadError,
}

/// The CPUs loads run on: those this process may run on (`allowed`) but does not measure.
pub(crate) fn housekeeping(allowed: &CpuSet, measured: &CpuSet) -> Result<CpuSet, LoadError> {
    let cpus = allowed.difference(measured);
    if cpus.is_empty() {
        return Err(LoadError::NoHousekeeping {
            measured: measured.to_list(),
        });
    }
    Ok(cpus)
}

/// A kind that did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Skipped {
    /// The kind.
    pub kind: Kind,
    /// Why it could not start.
    pub why: String,
}

impl std::fmt::Display for Skipped {
    /// What check, prove and measure say of it: `--load KIND: WHY; its rounds were not loaded
    /// as asked`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, why) = (self.kind.name(), &self.why);
        write!(
            f,
            "--load {kind}: {why}; its rounds were not loaded as asked"
        )
    }
}

/// What one kind achieved during one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KindIntensity {
    /// The kind.
    pub kind: Kind,
    /// Its threads.
    pub threads: u32,
    /// What it achieved, in `unit` (0 in an idle round).
    pub rate: f64,
    /// The unit of `rate`: `messages/s` (cpu), `GB/s` (mem, 10^9 bytes, STREAM counting),
    /// `accesses/s` (cache), `IOPS` (io), `packets/s` (net: datagrams received over loopback;
    /// through an interface, datagrams sent plus answers received), `IPIs sent/s` (ipi: calls
    /// that interrupt the other CPUs running this process).
    pub unit: String,
    /// Where `net`'s datagrams went when not over loopback: `eth0 to 10.0.0.2:11111`
    /// (`--load-if`, `--load-peer`); absent for loopback and the other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// Why it did not run the whole round (a thread ended); `null` when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// The load during one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoundLoad {
    /// Whether the load ran in this round (`false`: an idle round).
    pub loaded: bool,
    /// Whether the round was as asked: idle, or loaded by every kind asked for the whole
    /// round (`false`: a kind did not start or a thread of it ended; see `failed`).
    pub as_asked: bool,
    /// Each kind's intensity in the round.
    pub kinds: Vec<KindIntensity>,
    /// IPIs the measured CPUs received, per second of the round: the function-call (CAL)
    /// and TLB-shootdown (TLB) rows of /proc/interrupts summed over those CPUs; `null` where
    /// unreadable.
    pub ipis_received_per_s: Option<f64>,
}

/// The loads of a run: started paused, run during the loaded rounds, stopped on drop.
pub(crate) struct Loads {
    kinds: Vec<Running>,
    /// The kinds asked that could not start.
    pub skipped: Vec<Skipped>,
    /// The level they run at.
    pub level: Level,
    /// The CPUs they run on.
    pub cpus: CpuSet,
}

/// One kind's threads.
struct Running {
    kind: Kind,
    /// Where its traffic goes, when not over loopback (`net` only).
    over: Option<String>,
    control: Arc<Control>,
    threads: Vec<JoinHandle<()>>,
    /// What its threads did, in the kind's counting.
    done: Arc<AtomicU64>,
    /// Its threads still working.
    alive: Arc<AtomicUsize>,
    /// Why a thread ended before the stop.
    failed: Arc<Mutex<Option<String>>>,
}

/// One load thread's work: runs until [`Control`] says stop, adding what it did to `done`,
/// calling `ready` once it is set up (memory touched, file open).
struct Worker {
    /// The housekeeping CPU it is pinned to.
    cpu: u32,
    /// The work.
    work: Work,
}

/// What a load thread does: set up, say ready, work until the stop; why it could not.
type Work = Box<dyn FnOnce(&Context<'_>) -> Result<(), String> + Send>;

/// What a worker is handed.
struct Context<'a> {
    /// Stop, pause and pace.
    control: &'a Control,
    /// The kind's counter.
    done: &'a AtomicU64,
    ready: &'a mpsc::Sender<Result<(), String>>,
    said_ready: std::cell::Cell<bool>,
}

impl Context<'_> {
    /// Says the worker is set up and about to wait for the first loaded round.
    fn ready(&self) {
        if !self.said_ready.replace(true) {
            let _ = self.ready.send(Ok(()));
        }
    }

    /// The loop of every worker that works in chunks: says it is set up, then does `chunk`
    /// over and over while the load runs, parked while it is paused (an idle round), resting
    /// after each chunk what the level leaves idle; returns at the stop, or when `chunk` says
    /// the work is over (`Ok(false)`: the other end of its socket went away).
    fn chunks(&self, mut chunk: impl FnMut() -> Result<bool, String>) -> Result<(), String> {
        self.ready();
        while self.control.gate() {
            let began = Instant::now();
            if !chunk()? {
                break;
            }
            self.control.pace(began);
        }
        Ok(())
    }
}

/// Whether a blocking socket call that failed with `e` only waited out its timeout or was
/// interrupted: the caller looks at the stop and calls again.
fn only_waited(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// A reading of the counters at the start of a round.
pub(crate) struct Mark {
    at: Instant,
    done: Vec<u64>,
    ipis: Option<u64>,
}

impl Loads {
    /// Starts `request`'s kinds, paused: each kind's threads are set up (memory touched,
    /// sockets and file open) before this returns; a kind that cannot start is listed in
    /// [`Loads::skipped`] with why, its threads ended.
    ///
    /// The threads are started from a thread kept to the housekeeping CPUs: a new thread
    /// inherits its creator's CPUs and runs before it pins itself, so one started from the
    /// caller (which may run on the measured CPUs) could run there for that moment.
    pub(crate) fn start(request: &LoadRequest) -> Loads {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // A set this process may not use (the refusal comes from each thread's
                    // own pin, with the CPU named) leaves the creator where it was.
                    let _ = harness::pin_current_thread_to(&request.cpus);
                    Self::start_here(request)
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// [`Loads::start`] from the calling thread.
    fn start_here(request: &LoadRequest) -> Loads {
        let mut loads = Loads {
            kinds: Vec::new(),
            skipped: Vec::new(),
            level: request.level,
            cpus: request.cpus.clone(),
        };
        for &kind in &request.kinds {
            match workers(kind, request).and_then(|w| spawn(kind, request.level, w)) {
                Ok(mut running) => {
                    if kind == Kind::Net {
                        running.over = request.net_over.as_ref().map(OverNic::describe);
                    }
                    loads.kinds.push(running);
                }
                Err(why) => loads.skipped.push(Skipped { kind, why }),
            }
        }
        loads
    }

    /// Whether any kind runs.
    pub(crate) fn any(&self) -> bool {
        !self.kinds.is_empty()
    }

    /// Lets the loads work (a loaded round) or parks them (an idle round).
    pub(crate) fn set_running(&self, running: bool) {
        for kind in &self.kinds {
            kind.control.set_running(running);
        }
    }

    /// The counters now, and the IPIs the `measured` CPUs received so far.
    pub(crate) fn mark(&self, root: &SysRoot, measured: &CpuSet) -> Mark {
        Mark {
            at: Instant::now(),
            done: (self.kinds.iter())
                .map(|k| k.done.load(Ordering::Relaxed))
                .collect(),
            ipis: received::ipis(root, measured),
        }
    }

    /// Runs `measure` as a round on the `measured` CPUs of `root`, the loads working in it
    /// when `loaded` (parked when not, and left as they are after it); with what they
    /// achieved in it.
    pub(crate) fn in_round<T>(
        &self,
        (root, measured): (&SysRoot, &CpuSet),
        loaded: bool,
        measure: impl FnOnce() -> T,
    ) -> (T, RoundLoad) {
        self.set_running(loaded);
        let mark = self.mark(root, measured);
        let measured_round = measure();
        (measured_round, self.round(&mark, root, measured, loaded))
    }

    /// What each kind achieved since `since`, in a round `loaded` or idle.
    pub(crate) fn round(
        &self,
        since: &Mark,
        root: &SysRoot,
        measured: &CpuSet,
        loaded: bool,
    ) -> RoundLoad {
        let seconds = since.at.elapsed().as_secs_f64().max(1e-9);
        let kinds: Vec<KindIntensity> = (self.kinds.iter().zip(&since.done))
            .map(|(running, before)| {
                let done = running.done.load(Ordering::Relaxed).saturating_sub(*before);
                let failed = (running.failed.lock())
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                    .or_else(|| {
                        let alive = running.alive.load(Ordering::Relaxed);
                        (alive < running.threads.len()).then(|| {
                            format!(
                                "{} of its {} threads ended",
                                running.threads.len() - alive,
                                running.threads.len()
                            )
                        })
                    });
                KindIntensity {
                    kind: running.kind,
                    threads: running.threads.len() as u32,
                    rate: done as f64 / running.kind.per_unit() / seconds,
                    unit: running.kind.unit().to_string(),
                    over: running.over.clone(),
                    failed,
                }
            })
            .collect();
        let as_asked = !loaded
            || (self.skipped.is_empty()
                && kinds.iter().all(|k| k.failed.is_none() && k.rate > 0.0));
        let ipis_received_per_s = match (since.ipis, received::ipis(root, measured)) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before) as f64 / seconds),
            _ => None,
        };
        RoundLoad {
            loaded,
            as_asked,
            kinds,
            ipis_received_per_s,
        }
    }
}

/// Stops every thread and waits for them: nothing of the load outlives it.
impl Drop for Loads {
    fn drop(&mut self) {
        for kind in &self.kinds {
            kind.control.stop();
        }
        for kind in &mut self.kinds {
            for thread in kind.threads.drain(..) {
                let _ = thread.join();
            }
        }
    }
}

/// The threads of `kind` for `request`, one or more per housekeeping CPU.
fn workers(kind: Kind, request: &LoadRequest) -> Result<Vec<Worker>, String> {
    match kind {
        Kind::Cpu => Ok(cpu::workers(&request.cpus)),
        Kind::Mem => Ok(mem::workers(&request.cpus, request.llc_bytes)),
        Kind::Cache => Ok(cache::workers(&request.cpus, request.llc_bytes)),
        Kind::Io => io::workers(&request.cpus, request.scratch_dir.as_deref()),
        Kind::Net => net::workers(&request.cpus, request.net_over.as_ref()),
        Kind::Ipi => ipi::workers(&request.cpus),
    }
}

/// Starts `workers` as `kind`'s threads and waits until each is set up; ends them all and
/// says why when one could not be.
fn spawn(kind: Kind, level: Level, workers: Vec<Worker>) -> Result<Running, String> {
    let control = Arc::new(Control::new(level.duty()));
    let done = Arc::new(AtomicU64::new(0));
    let alive = Arc::new(AtomicUsize::new(workers.len()));
    let failed = Arc::new(Mutex::new(None));
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut running = Running {
        kind,
        over: None,
        control: control.clone(),
        threads: Vec::new(),
        done: done.clone(),
        alive: alive.clone(),
        failed: failed.clone(),
    };
    let count = workers.len();
    for Worker { cpu, work } in workers {
        let (control, done, alive, failed, ready) = (
            control.clone(),
            done.clone(),
            alive.clone(),
            failed.clone(),
            ready_tx.clone(),
        );
        let body = move || {
            let ctx = Context {
                control: &control,
                done: &done,
                ready: &ready,
                said_ready: std::cell::Cell::new(false),
            };
            let outcome = harness::pin_current_thread(cpu)
                .map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))
                .and_then(|()| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (work)(&ctx)))
                        .unwrap_or_else(|_| Err("a thread panicked".to_string()))
                });
            alive.fetch_sub(1, Ordering::Relaxed);
            if let Err(why) = outcome {
                if ctx.said_ready.get() {
                    let mut failed = failed.lock().unwrap_or_else(PoisonError::into_inner);
                    failed.get_or_insert(why);
                } else {
                    let _ = ready.send(Err(why));
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name(format!("ll-load-{}", kind.name()))
            .spawn(body)
            .map_err(|e| format!("cannot start a thread: {e}"));
        match thread {
            Ok(thread) => running.threads.push(thread),
            // Dropping `running` stops and joins the threads already started.
            Err(why) => return Err(stop_with(running, why)),
        }
    }
    drop(ready_tx);
    let deadline = Instant::now() + START_PATIENCE;
    for _ in 0..count {
        let left = deadline.saturating_duration_since(Instant::now());
        match ready_rx.recv_timeout(left) {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(stop_with(running, why)),
            Err(_) => {
                let why = format!("not set up within {} s", START_PATIENCE.as_secs());
                return Err(stop_with(running, why));
            }
        }
    }
    Ok(running)
}

/// Stops and joins `running`'s threads; returns `why`.
fn stop_with(mut running: Running, why: String) -> String {
    running.control.stop();
    for thread in running.threads.drain(..) {
        let _ = thread.join();
    }
    why
}

/// The threads of this process named `ll-load-*` (from /proc/self/task; tests only) once the
/// ones that have ended are gone: a thread's join returns when it has left its code, and the
/// kernel removes its task entry a moment later (longer on a busy machine), so a count of 0 is
/// waited for up to a second before the count is returned.
#[cfg(test)]
pub(crate) fn load_threads_left() -> usize {
    let count = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|comm| comm.starts_with("ll-load-"))
            })
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let now = count();
        if now == 0 || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A request for `kinds` on the first CPU this process may run on, with a 1 MiB LLC.
    pub(crate) fn small(kinds: &[Kind], scratch: Option<PathBuf>) -> LoadRequest {
        let cpu = harness::first_allowed_cpus(1)[0];
        LoadRequest {
            kinds: kinds.to_vec(),
            level: Level::High,
            cpus: CpuSet::parse_list(&cpu.to_string()).unwrap(),
            scratch_dir: scratch,
            llc_bytes: 1 << 20,
            net_over: None,
        }
    }

    /// The turn of a test that starts loads: the tests of this binary run at once, and each
    /// counts the load threads as its own.
    fn turn() -> std::sync::MutexGuard<'static, ()> {
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `kind` paused for 30 ms, then for 100 ms: returns its intensity in the second; the
    /// threads are gone after.
    pub(crate) fn run_briefly(request: &LoadRequest) -> RoundLoad {
        let _turn = turn();
        let root = SysRoot::live();
        let measured = CpuSet::new();
        let round = {
            let loads = Loads::start(request);
            assert!(loads.skipped.is_empty(), "{:?}", loads.skipped);
            assert!(load_threads_left() > 0);
            let idle = loads.mark(&root, &measured);
            std::thread::sleep(Duration::from_millis(30));
            let paused = loads.round(&idle, &root, &measured, false);
            assert!(
                paused.kinds.iter().all(|k| k.rate == 0.0),
                "a paused load worked: {paused:?}"
            );
            loads.set_running(true);
            let mark = loads.mark(&root, &measured);
            std::thread::sleep(Duration::from_millis(100));
            loads.round(&mark, &root, &measured, true)
        };
        assert_eq!(load_threads_left(), 0, "load threads outlived their Loads");
        round
    }

    #[test]
    fn kinds_are_read_from_a_list_or_all() {
        assert_eq!(
            Kind::parse_list("mem,cpu,mem").unwrap(),
            [Kind::Cpu, Kind::Mem]
        );
        assert_eq!(Kind::parse_list("all").unwrap(), Kind::ALL);
        let err = Kind::parse_list("cpu,disk").unwrap_err();
        assert!(err.contains("unknown load \"disk\""), "{err}");
        assert_eq!(Level::parse("medium"), Ok(Level::Medium));
        assert!(Level::parse("max").is_err());
    }

    #[test]
    fn no_housekeeping_cpu_is_refused() {
        let all = CpuSet::parse_list("0-1").unwrap();
        let err = housekeeping(&all, &all).unwrap_err();
        assert!(err.to_string().contains("no housekeeping CPU"), "{err}");
        let hk = housekeeping(&all, &CpuSet::parse_list("1").unwrap()).unwrap();
        assert_eq!(hk.to_list(), "0");
    }

    /// `kinds` at level low, sending `net` through `over` (interface, peer) when given.
    fn asked(kinds: &[Kind], over: Option<&str>) -> LoadAsked {
        LoadAsked {
            kinds: kinds.to_vec(),
            level: Level::Low,
            scratch_dir: None,
            net_over: over.map(|interface| OverNic {
                interface: interface.to_string(),
                peer: "10.0.0.2:11111".parse().unwrap(),
            }),
        }
    }

    /// Issue 48: `--load KINDS` runs on the CPUs not measured, and is refused, naming the
    /// flag, where none is left.
    #[test]
    fn loads_go_to_the_cpus_not_measured_and_are_refused_without_one() {
        let tree = crate::test_tree::TestTree::fixture("epyc7f32-2s-tuned");
        let root = tree.root();
        let llc = crate::machine::Machine::read(&root)
            .topology
            .llc_bytes_total();
        let all = CpuSet::parse_list("0-3").unwrap();
        let asked = asked(&[Kind::Mem, Kind::Ipi], None);
        let request =
            (asked.beside(&root, &all, &CpuSet::parse_list("1-2").unwrap(), llc)).unwrap();
        assert_eq!(request.cpus.to_list(), "0,3");
        assert_eq!(request.kinds, [Kind::Mem, Kind::Ipi]);
        assert_eq!(request.level, Level::Low);
        assert_eq!(request.llc_bytes, llc);
        let err = asked
            .beside(&root, &all, &all, llc)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--load mem,ipi: no housekeeping CPU"),
            "{err}"
        );
    }

    /// Issue 48: `--load-if IF --load-peer ADDR:PORT` send the net load through an interface;
    /// one the machine lacks or that is down, or one without net among the loads, is refused
    /// naming the flag.
    #[test]
    fn load_if_sends_net_through_an_interface_that_is_there_and_up() {
        let tree = crate::test_tree::TestTree::fixture("epyc7f32-2s-tuned");
        tree.write("/sys/class/net/ens1/flags", "0x1003\n")
            .write("/sys/class/net/ens1/operstate", "up\n")
            .write("/sys/class/net/ens2/flags", "0x1002\n");
        let root = tree.root();
        let (all, measured) = (
            CpuSet::parse_list("0-3").unwrap(),
            CpuSet::parse_list("1").unwrap(),
        );
        let with = |kinds: &[Kind], interface: &str| {
            asked(kinds, Some(interface)).beside(&root, &all, &measured, 1 << 20)
        };
        let request = with(&[Kind::Net, Kind::Cpu], "ens1").unwrap();
        let over = request.net_over.unwrap();
        assert_eq!(over.describe(), "ens1 to 10.0.0.2:11111");
        let refused =
            |kinds: &[Kind], interface: &str| with(kinds, interface).unwrap_err().to_string();
        let down = refused(&[Kind::Net], "ens2");
        assert!(
            down.contains("--load-if ens2: the interface is down"),
            "{down}"
        );
        let missing = refused(&Kind::ALL, "ens9");
        assert!(
            missing.contains("--load-if ens9: this machine has no such interface"),
            "{missing}"
        );
        let no_net = refused(&[Kind::Cpu], "ens1");
        assert!(
            no_net.ends_with(
                "--load-if ens1: only the net load sends through an interface; add net to --load"
            ),
            "{no_net}"
        );
    }

    #[test]
    fn a_kind_that_cannot_start_is_skipped_with_why_and_leaves_no_thread() {
        let request = LoadRequest {
            cpus: CpuSet::parse_list("4095").unwrap(),
            ..small(&[Kind::Cpu], None)
        };
        let _turn = turn();
        let loads = Loads::start(&request);
        assert!(!loads.any());
        assert_eq!(loads.skipped.len(), 1);
        assert!(
            loads.skipped[0].why.contains("CPU 4095"),
            "{:?}",
            loads.skipped
        );
        assert_eq!(load_threads_left(), 0);
    }
}
