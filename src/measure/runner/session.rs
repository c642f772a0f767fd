//! The one session every engine runs through: this machine read once, the CPUs chosen by
//! the one rule ([`super::cpus`]), memory locked where the engine needs it (decided here and
//! nowhere else), and Ctrl-C caught so that an interrupted run keeps what it measured.

use super::cpus::{self, CpuChoiceError};
use super::harness::{self, MemoryLock, StopFlag};
use super::memory::MemoryBudget;
use super::place::{self, CpuPlace};
use super::progress::Progress;
use crate::machine::{CpuSet, Machine};
use crate::sysroot::SysRoot;

/// The measurement engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    /// Busy-loop gaps.
    Jitter,
    /// Timer wake-up latency.
    Timer,
    /// STREAM bandwidth.
    Membw,
    /// Pointer-chase latency.
    Memlat,
    /// Core-to-core ping-pong.
    C2c,
    /// Cross-CPU futex wake-up.
    Wakeup,
    /// Inter-processor interrupts through membarrier.
    Ipi,
    /// The kernel's hwlat tracer.
    Hwlat,
    /// Effective frequency.
    Freq,
    /// Network round trips.
    Net,
}

impl Engine {
    /// Whether the engine runs with memory locked (mlockall): the engines that time single
    /// events (a gap, a timer wake-up, a round trip, a wake-up) must not take a page fault
    /// mid-sample. The memory engines map buffers up to the machine's size and prefault
    /// them; freq touches no memory in its loop.
    pub(crate) fn locks_memory(self) -> bool {
        matches!(
            self,
            Engine::Jitter
                | Engine::Timer
                | Engine::C2c
                | Engine::Wakeup
                | Engine::Ipi
                | Engine::Net
        )
    }
}

/// This machine, opened for one measurement.
pub(crate) struct Session {
    root: SysRoot,
    /// The machine model.
    pub machine: Machine,
    /// The chosen CPUs.
    pub cpus: CpuSet,
    /// The chosen CPUs with their places, in locality order.
    pub places: Vec<CpuPlace>,
    /// The memory the engines may use.
    pub budget: MemoryBudget,
    /// Stops the engine early (Ctrl-C also does).
    pub stop: StopFlag,
    engine: Engine,
    online: CpuSet,
    allowed: CpuSet,
    memory_lock: MemoryLock,
    notes: Vec<SessionNote>,
}

/// What the session could not set up as the engine wanted; the command says it (the library
/// writes nothing to stderr).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SessionNote {
    /// Only the memory mapped at the start could be locked.
    #[error(
        "locked the memory mapped now, not what is mapped later (RLIMIT_MEMLOCK is {} KiB, too \
         small for the threads' stacks); buffers are written once before measuring instead; run \
         as root or raise `ulimit -l` to lock everything",
        limit_bytes / 1024
    )]
    LockedCurrentOnly {
        /// The locked-memory limit (bytes).
        limit_bytes: u64,
    },
    /// `mlockall` was refused.
    #[error(
        "memory could not be locked (mlockall){}: page faults may add noise",
        in_parentheses(cause.as_deref())
    )]
    NotLocked {
        /// The first cause found (`RLIMIT_MEMLOCK is 64 KiB …`), when one was.
        cause: Option<String>,
    },
}

/// ` (cause)`, or nothing without a cause.
fn in_parentheses(cause: Option<&str>) -> String {
    cause.map_or(String::new(), |cause| format!(" ({cause})"))
}

impl Session {
    /// Reads the machine under `root`, chooses the CPUs (`requested`, or every online CPU this
    /// process may run on), locks memory when `engine` needs it and installs the Ctrl-C
    /// handler. Fails, before anything runs, when the CPUs cannot be chosen.
    pub(crate) fn open(
        root: SysRoot,
        engine: Engine,
        requested: Option<&CpuSet>,
    ) -> Result<Session, CpuChoiceError> {
        let online = cpus::online(&root)?;
        let allowed = harness::current_affinity().map_err(CpuChoiceError::AffinityUnknown)?;
        let chosen = cpus::choose(&online, &allowed, requested)?;
        let machine = Machine::read(&root);
        let budget = MemoryBudget::new(&machine.kernel.meminfo, &machine.kernel.hugepages);
        let places = place::places(&machine.topology)
            .into_iter()
            .filter(|p| chosen.contains(p.cpu))
            .collect();
        let memory_lock = if engine.locks_memory() {
            harness::lock_memory()
        } else {
            MemoryLock::None
        };
        let mut notes = Vec::new();
        if let MemoryLock::Current { limit_bytes } = memory_lock {
            notes.push(SessionNote::LockedCurrentOnly { limit_bytes });
        }
        if engine.locks_memory() && memory_lock == MemoryLock::None {
            let causes = crate::machine::rt_permission::mlock_refusal_causes(
                &mut crate::machine::Reader::new(&root),
                "self",
            );
            notes.push(SessionNote::NotLocked {
                cause: causes.first().map(ToString::to_string),
            });
        }
        harness::catch_interrupt();
        Ok(Session {
            root,
            machine,
            cpus: chosen,
            places,
            budget,
            stop: StopFlag::new(),
            engine,
            online,
            allowed,
            memory_lock,
            notes,
        })
    }

    /// The root the machine was read from.
    pub(crate) fn root(&self) -> &SysRoot {
        &self.root
    }

    /// The chosen CPU numbers in locality order (the order of [`Session::places`]).
    pub(crate) fn cpus_by_locality(&self) -> Vec<u32> {
        self.places.iter().map(|p| p.cpu).collect()
    }

    /// Runs `measure` on the chosen CPUs in locality order with the session's stop flag and a
    /// progress line on stderr labelled `label`: how the engines that measure between and on
    /// CPUs (c2c, wakeup, ipi, freq) run in a session.
    pub(crate) fn on_cpus<T>(
        &self,
        label: &str,
        measure: impl FnOnce(&[u32], &StopFlag, &mut Progress) -> T,
    ) -> T {
        let mut progress = Progress::stderr(label, 0);
        let result = measure(&self.cpus_by_locality(), &self.stop, &mut progress);
        progress.finish();
        result
    }

    /// The CPUs this process may run on.
    pub(crate) fn allowed(&self) -> &CpuSet {
        &self.allowed
    }

    /// Checks more CPUs the engine will use (the echo CPU of `measure net`) by the same rule
    /// as the chosen ones.
    pub(crate) fn check_cpus(&self, requested: &CpuSet) -> Result<CpuSet, CpuChoiceError> {
        cpus::choose(&self.online, &self.allowed, Some(requested))
    }

    /// What could not be set up as the engine wanted (memory locking), for the command to say
    /// before it measures.
    pub(crate) fn notes(&self) -> &[SessionNote] {
        &self.notes
    }

    /// Whether memory is locked (mlockall).
    pub(crate) fn memory_locked(&self) -> bool {
        self.memory_lock != MemoryLock::None
    }

    /// Whether the engine needed memory locked (mlockall) and it could not be.
    pub(crate) fn memory_unlocked(&self) -> bool {
        self.engine.locks_memory() && !self.memory_locked()
    }

    /// Whether the run was cut short (Ctrl-C or the stop flag).
    pub(crate) fn interrupted(&self) -> bool {
        harness::interrupted() || self.stop.is_stopped()
    }
}
