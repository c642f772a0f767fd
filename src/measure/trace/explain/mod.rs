//! Every gap gets a cause: the join of a CPU's gaps with the events traced on that CPU
//! inside each gap, and the classification of what it finds. Pure: it takes the gaps, the
//! events and the IPIs sent, and returns the causes; the clock is the trace's (the engine's),
//! `to_ns` converts a length for the tables.
//!
//! One gap, one cause, chosen in this order (the first that applies):
//! 1. the gap overlaps a window in which the CPU's buffer lost events: **unknown (events
//!    lost)**: what remained cannot be trusted to be all (also **unknown** a garbled gap whose
//!    end is before its start, and a gap that ends after the CPU was seen offline: the kernel
//!    moved the loop off it);
//! 2. another task ran (a `sched_switch` to a pid other than the loop's; of several, the one
//!    that ran longest): a **kworker** (named by the work function it ran, e.g.
//!    `vmstat_update`) or **another task** (comm, with the hrtimer that woke it where one
//!    expired in the gap, or for a softirq thread the softirq it ran: `ksoftirqd/1 (TIMER
//!    softirq)`; pids kept beside): whatever woke it, the task (or for a kernel thread, what
//!    made it run) is what a setting removes;
//! 3. the first hardware entry in the gap: the **tick** (the local timer running the tick's
//!    hrtimer; with the reason the tick was kept where `tick_stop` said it), another
//!    **timer** (the hrtimer's callback, e.g. `timerfd_tmrproc`, `hrtimer_wakeup`), a
//!    **device IRQ** (number and name), an **IPI** (function call or reschedule, with the
//!    sender where the senders' instance saw it, at most the window before it arrived: a
//!    send traced after it or older is never named; a **TLB shootdown** when a remote TLB
//!    flush ran in it), an **NMI**; on arm and arm64 the generic timer's interrupt is the
//!    local timer and the `IPI` interrupt takes the kind of the `ipi_entry` after it;
//! 4. a softirq alone (run on the way out of an interrupt not traced, or by ksoftirqd in
//!    place): **RCU** for the RCU vector, else the **softirq** by name;
//! 5. nothing on this CPU: **no kernel event** (in a VM the hypervisor took the CPU; on bare
//!    metal firmware or an SMI).
//!
//! Each gap is counted in exactly one class, so the classes' counts add up to the gaps.
//!
//! A loop that sleeps (the timer loop) has gaps from a deadline to its wake-up, and each ends
//! with its own wake-up: the local timer interrupt, the hrtimer that woke it and its
//! `sched_wakeup` are not causes and are left out. One more cause
//! comes after rule 2: the task that was running when the loop was woken and kept the CPU
//! until it gave it up itself (a higher priority: its `sched_switch` to the loop says it
//! slept, not that it was preempted) is the cause when the loop waited longer for it than
//! for its wake-up (`comm (running when woken)`). A task preempted by the loop's wake-up
//! left as soon as the kernel could switch: the wait was the kernel's, not the task's.
//!
//! A ping-pong (net) has gaps that are its slow round trips, explained on the client's CPU
//! and on the echo's: the message's own path on each ([`round_trip`]: the NET_RX softirq
//! of its own send, the wake-up of the other side and its reschedule IPI, the switches of
//! the run's threads, the tasks that ran while its thread slept) is left out, and the task
//! that held the CPU while its thread was woken or preempted (`comm (held the CPU)`) is the
//! cause when that wait is more than half of the round trip, whether it gave the CPU up or
//! was preempted (the threads run at normal priority: a task may keep the CPU for its slice
//! after the wake-up).

mod classify;
mod join;
pub(crate) mod round_trip;

use super::events::{Event, Sym};
use crate::machine::Avail;
use crate::measure::runner::segments::Merge;

pub(crate) use classify::{ipi_kind, task};
pub(crate) use join::explain_cpu;

/// The softirq vectors' names, by number.
pub(crate) const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The per-CPU threads that run softirqs (`ksoftirqd/1`; `ktimers/1` on PREEMPT_RT): a gap
/// one of them took is named with the softirq it ran (`ksoftirqd/1 (TIMER softirq)`).
const SOFTIRQ_THREADS: [&str; 2] = ["ksoftirqd/", "ktimers/"];

/// The hrtimer callbacks that are the tick.
pub(crate) const TICK_FUNCTIONS: [&str; 3] = [
    "tick_sched_timer",
    "tick_nohz_handler",
    "tick_handle_periodic",
];

/// What interrupted the loop.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Class {
    /// The scheduler tick.
    Tick,
    /// An hrtimer other than the tick.
    Timer,
    /// A device's interrupt.
    DeviceIrq,
    /// A softirq, alone.
    Softirq,
    /// An inter-processor interrupt (function call, reschedule, irq_work).
    Ipi,
    /// An IPI that flushed this CPU's TLB for another CPU.
    TlbShootdown,
    /// A kernel worker thread.
    Kworker,
    /// Another task.
    Task,
    /// A non-maskable interrupt.
    Nmi,
    /// RCU callbacks (the RCU softirq).
    Rcu,
    /// No kernel event on this CPU in the gap: the hypervisor (in a VM) or firmware / SMI.
    NoKernelEvent,
    /// Not to be told: the trace lost events in the gap's window, the CPU went offline, or
    /// the gap is garbled. A class this lowlat does not know (a newer one's) reads as it.
    #[serde(other)]
    Unknown,
}

impl Class {
    /// Every class.
    #[cfg(test)]
    const ALL: [Class; 12] = [
        Class::Tick,
        Class::Timer,
        Class::DeviceIrq,
        Class::Softirq,
        Class::Ipi,
        Class::TlbShootdown,
        Class::Kworker,
        Class::Task,
        Class::Nmi,
        Class::Rcu,
        Class::NoKernelEvent,
        Class::Unknown,
    ];

    /// Its name in JSON and in the cause → fix table (`device_irq`).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Class::Tick => "tick",
            Class::Timer => "timer",
            Class::DeviceIrq => "device_irq",
            Class::Softirq => "softirq",
            Class::Ipi => "ipi",
            Class::TlbShootdown => "tlb_shootdown",
            Class::Kworker => "kworker",
            Class::Task => "task",
            Class::Nmi => "nmi",
            Class::Rcu => "rcu",
            Class::NoKernelEvent => "no_kernel_event",
            Class::Unknown => "unknown",
        }
    }

    /// How a person reads it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Class::Tick => "tick",
            Class::Timer => "timer",
            Class::DeviceIrq => "device IRQ",
            Class::Softirq => "softirq",
            Class::Ipi => "IPI",
            Class::TlbShootdown => "TLB shootdown",
            Class::Kworker => "kworker",
            Class::Task => "another task",
            Class::Nmi => "NMI",
            Class::Rcu => "RCU",
            Class::NoKernelEvent => "no kernel event",
            // The source says why: events lost, the CPU offline, a garbled gap.
            Class::Unknown => "unknown",
        }
    }
}

/// One cause: a class and its source (the IRQ, the task, the function...).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Cause {
    /// The class.
    pub class: Class,
    /// What in the class: `42 virtio3-tx` for an IRQ, the comm for a task, `vmstat_update`
    /// for a kworker, the hrtimer callback for a timer, the kind and sender for an IPI.
    pub source: String,
}

/// The gaps of one cause on one CPU.
#[derive(Debug, Clone)]
pub(crate) struct CauseStats {
    /// The cause.
    pub cause: Cause,
    /// Gaps it caused.
    pub count: u64,
    /// Their summed length, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Their lengths, ns (for the percentiles).
    pub lengths_ns: Vec<u64>,
    /// The ids behind the source, at most [`IDS`]: the tasks' pids (of the task, the kworker,
    /// the IPI's sender), the IRQ's number.
    pub ids: Vec<u32>,
}

/// Ids kept per cause.
pub(crate) const IDS: usize = 8;

impl CauseStats {
    /// The 99th percentile of the lengths (nearest rank), ns.
    pub(crate) fn p99_ns(&self) -> u64 {
        if self.lengths_ns.is_empty() {
            return 0;
        }
        let mut lengths = self.lengths_ns.clone();
        let rank = ((lengths.len() as f64 * 0.99).ceil() as usize).clamp(1, lengths.len());
        *lengths.select_nth_unstable(rank - 1).1
    }

    fn add_id(&mut self, id: Option<u32>) {
        if let Some(id) = id
            && self.ids.len() < IDS
            && !self.ids.contains(&id)
        {
            self.ids.push(id);
        }
    }
}

/// One of the longest gaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spike {
    /// When it ended, ns after the start of the run.
    pub at_ns: u64,
    /// Its length, ns.
    pub length_ns: u64,
    /// What caused it.
    pub cause: Cause,
}

/// One CPU's gaps, explained.
#[derive(Debug, Clone)]
pub(crate) struct CpuCauses {
    /// The CPU.
    pub cpu: u32,
    /// Gaps explained (all of the CPU's).
    pub gaps: u64,
    /// Per cause, most time first.
    pub causes: Vec<CauseStats>,
    /// The longest gaps, longest first.
    pub spikes: Vec<Spike>,
    /// What its `no kernel event` gaps are checked against (filled after the join by
    /// [`super::Explanation::cross_check`]).
    pub cross_check: Option<CrossCheck>,
    /// Its IPIs whose sender is not named although sends to it were traced.
    pub unmatched_ipis: UnmatchedIpis,
}

/// IPIs (function call, reschedule) whose sender the join does not name although sends to
/// their CPU were traced: the sending CPU's trace clock and this one's disagree (a send
/// traced after the arrival), the last send before the arrival is older than the window (a
/// delivery that late, a send not traced, or clocks that far apart), or the senders' trace
/// lost events just before it. Naming a sender then would be a guess.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnmatchedIpis {
    /// Arrivals with no send to the CPU in the window before them but one in the window after
    /// (the clocks disagree).
    pub sent_after: u64,
    /// Arrivals whose last send to the CPU is older than the window, with none after.
    pub far_before: u64,
    /// Arrivals in or within the window after a loss of the senders' trace (the send may be
    /// the one lost).
    pub sends_lost: u64,
}

/// Adds a later segment's counts.
impl Merge for UnmatchedIpis {
    fn merge(&mut self, later: UnmatchedIpis) {
        self.sent_after += later.sent_after;
        self.far_before += later.far_before;
        self.sends_lost += later.sends_lost;
    }
}

/// What a CPU's `no kernel event` gaps, which no tracepoint names, are checked against.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CrossCheck {
    /// A VM: the time the host ran something else while this vCPU was runnable during the
    /// run (`/proc/stat` steal), ns.
    Steal {
        /// The hypervisor's vendor (`KVM`).
        hypervisor: String,
        /// Steal of the vCPU during the run, ns.
        steal_ns: Avail<u64>,
    },
    /// Bare metal: firmware, and for a loop that slept the way out of idle.
    Firmware {
        /// The system management interrupts counted during the run (MSR_SMI_COUNT, 0x34,
        /// read through `/dev/cpu/N/msr`).
        smis: Avail<u64>,
        /// For a loop that slept, the deepest idle state the CPU may enter, whose exit its
        /// wake-ups may wait for.
        deepest_idle: Option<IdleExit>,
    },
}

/// An idle state and what leaving it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdleExit {
    /// Its name (`C6`).
    pub name: String,
    /// Its worst-case exit latency, µs (cpuidle's `latency`).
    pub exit_latency_us: u64,
}

/// Adds a later segment's figure.
impl Merge for CrossCheck {
    fn merge(&mut self, later: CrossCheck) {
        fn add(sum: &mut Avail<u64>, more: Avail<u64>) {
            if let (Avail::Available(x), Avail::Available(y)) = (&*sum, &more) {
                *sum = Avail::Available(x + y);
            } else if sum.get().is_some() {
                *sum = more;
            }
        }
        match (self, later) {
            (CrossCheck::Steal { steal_ns, .. }, CrossCheck::Steal { steal_ns: more, .. }) => {
                add(steal_ns, more);
            }
            (CrossCheck::Firmware { smis, .. }, CrossCheck::Firmware { smis: more, .. }) => {
                add(smis, more);
            }
            _ => {}
        }
    }
}

/// Adds a later segment's causes of the same CPU.
impl Merge for CpuCauses {
    fn merge(&mut self, later: CpuCauses) {
        self.gaps += later.gaps;
        self.cross_check.merge(later.cross_check);
        self.unmatched_ipis.merge(later.unmatched_ipis);
        for more in later.causes {
            match self.causes.iter_mut().find(|c| c.cause == more.cause) {
                Some(stats) => {
                    stats.count += more.count;
                    stats.total_ns = stats.total_ns.saturating_add(more.total_ns);
                    stats.max_ns = stats.max_ns.max(more.max_ns);
                    stats.lengths_ns.extend(more.lengths_ns);
                    for id in more.ids {
                        stats.add_id(Some(id));
                    }
                }
                None => self.causes.push(more),
            }
        }
        self.causes
            .sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.cause.cmp(&b.cause)));
        self.spikes.extend(later.spikes);
        self.spikes.sort_by_key(|s| std::cmp::Reverse(s.length_ns));
        self.spikes.truncate(SPIKES);
    }
}

/// Spikes kept per CPU.
pub(crate) const SPIKES: usize = 5;

/// A gap in the trace clock: from `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TraceGap {
    /// When the loop last ran before it.
    pub start: u64,
    /// When the loop ran again.
    pub end: u64,
}

/// What the join needs of one CPU besides its gaps.
pub(crate) struct CpuTrace<'a> {
    /// The CPU.
    pub cpu: u32,
    /// The loop thread's pid (a switch to it is the loop resuming).
    pub loop_tid: u32,
    /// Its events, in time order.
    pub events: &'a [Event],
    /// Windows `(from, to)` in which its buffer lost events.
    pub lost: Vec<(u64, u64)>,
    /// Seen offline during the run: from this time (its last event before) to the end.
    pub offline_from: Option<u64>,
    /// Windows `(from, to)` in which the senders' trace lost events (of any CPU).
    pub sends_lost: &'a [(u64, u64)],
    /// When the run started (trace clock), for the spikes' times.
    pub run_start: u64,
    /// How the loop waits: which events in its gaps are its own (see the module's doc).
    pub waits: &'a Waits,
    /// When the loop thread was woken, on any traced CPU, in time order (for
    /// [`Waits::Message`]: the waker's CPU traces the wake-up; empty otherwise).
    pub wakeups: &'a [u64],
}

/// How a measured loop waits between its readings, which says which events in its gaps are
/// its own and not causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waits {
    /// It never waits (the jitter loop spins): every event in a gap is a cause.
    Spins,
    /// It sleeps to a deadline (the timer loop): its own wake-up is not a cause.
    Timer,
    /// It waits for a message from its partner (net's ping-pong, each gap a slow round
    /// trip): the path of the message is its own ([`round_trip`]). The run's threads (the
    /// client and the echo), by thread id.
    Message(Vec<u32>),
}

/// A sleeping loop's wake-up: when it was woken, and the task then on the CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Woken {
    /// When the loop was woken (trace clock).
    pub ts: u64,
    /// The task on the CPU when the loop was woken that kept it until it blocked (`None`:
    /// idle, preempted by the loop, or not traced).
    pub running: Option<(u32, Sym)>,
    /// When the loop was back on the CPU, where it is known apart from the gap's end (a
    /// round trip's thread: its gap goes on after it); `None`: at the gap's end.
    pub back: Option<u64>,
}

#[cfg(test)]
mod tests;

/// The performance target of issue 30: 60 s on 16 CPUs at 1,300 gaps per second, each gap
/// the tick's three events (local timer, the tick's hrtimer, the TIMER softirq), joined in
/// under 2 s and 100 MB. `#[ignore]`d (it allocates some 110 MB of input); run it alone, as
/// `bench/explain-join.sh` does, since it reads this process's peak memory.
#[cfg(test)]
mod scale;
