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

use std::collections::BTreeMap;

use super::events::{Event, IpiSend, Sym, Symbols, Vector, What};
use crate::machine::Avail;
use crate::measure::runner::segments::Merge;

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

/// Who sent an IPI, as far as the sends traced say.
enum Sender<'a> {
    /// The last send to the CPU of that kind, at most the window before the arrival.
    Named(&'a IpiSend),
    /// None in the window before; one in the window after (the clocks disagree).
    After,
    /// None in the window on either side; an older one.
    FarBefore,
    /// The senders' trace lost events in the window before it: the send may be lost.
    Lost,
    /// No send to the CPU traced, or a kind the sends do not cover.
    Unknown,
}

/// The sender of an IPI of `vector` that arrived at `ts`, from `to_me` (the sends to its
/// CPU, in time order) within `window` (trace clock); none where the senders' trace lost
/// events (`sends_lost`) in the window before it.
fn sender_of<'a>(
    ts: u64,
    vector: Vector,
    to_me: &[&'a IpiSend],
    window: u64,
    sends_lost: &[(u64, u64)],
) -> Sender<'a> {
    let family = |v: Vector| match v {
        Vector::CallFunctionSingle => Vector::CallFunction,
        other => other,
    };
    if !matches!(
        vector,
        Vector::CallFunction | Vector::CallFunctionSingle | Vector::Reschedule
    ) {
        return Sender::Unknown;
    }
    if sends_lost
        .iter()
        .any(|&(from, to)| from <= ts && ts.saturating_sub(window) <= to)
    {
        return Sender::Lost;
    }
    // ipi_raise says the kind: a send of another kind is not this IPI's.
    let same_kind = |s: &&&IpiSend| s.kind.is_none_or(|k| family(k) == family(vector));
    let at = to_me.partition_point(|s| s.ts <= ts);
    let before = to_me[..at].iter().rev().find(same_kind);
    if let Some(s) = before.filter(|s| ts - s.ts <= window) {
        return Sender::Named(s);
    }
    if to_me[at..]
        .iter()
        .find(same_kind)
        .is_some_and(|s| s.ts - ts <= window)
    {
        return Sender::After;
    }
    match before {
        Some(_) => Sender::FarBefore,
        None => Sender::Unknown,
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
    /// The loop sleeps: its own wake-ups are not causes (see the module's doc).
    pub sleeps: bool,
}

/// A sleeping loop's wake-up: when it was woken, and the task then on the CPU.
#[derive(Debug, Clone, Copy)]
struct Woken {
    ts: u64,
    /// The task on the CPU when the loop was woken that kept it until it blocked (`None`:
    /// idle, preempted by the loop, or not traced).
    running: Option<(u32, Sym)>,
}

/// `events` without the loop `tid`'s own wake-ups, and those wake-ups: each `sched_wakeup`
/// of it, the hrtimer expiry that made it (the last one before it in the same interrupt) and
/// the local timer interrupt that ran that hrtimer, unless that interrupt ran other hrtimers
/// too (the tick, another task's timer: those delayed the wake-up and stay causes).
///
/// The task a wake-up waited for is read from the loop's switch-in that follows it: the task
/// switched out (`prev`), when no other switch came between (it held the CPU from the
/// wake-up on) and it gave the CPU up itself (a preempted one left as soon as it could). Not
/// from the switches before the wake-up: a CPU leaving idle traces none on some kernels, so
/// the task that came out of idle to run is unknown until it switches out.
fn own_wakeups(events: &[Event], tid: u32, symbols: &Symbols) -> (Vec<Event>, Vec<Woken>) {
    let entry = |e: &Event| matches!(e.what, What::Irq { .. } | What::Vector(_) | What::Nmi(_));
    let mut own = vec![false; events.len()];
    let mut woken: Vec<Woken> = Vec::new();
    // The last wake-up's index in `woken`, until a switch follows it.
    let mut waiting: Option<usize> = None;
    for (at, event) in events.iter().enumerate() {
        if let What::Switch {
            pid,
            prev,
            prev_blocked,
            ..
        } = event.what
            && let Some(w) = waiting.take().and_then(|i| woken.get_mut(i))
            && pid == tid
            && prev_blocked
            && prev != 0
            && prev != tid
        {
            w.running = symbols.comm(prev).map(|comm| (prev, comm));
        }
        if event.what != What::Wakeup(tid) {
            continue;
        }
        own[at] = true;
        waiting = Some(woken.len());
        woken.push(Woken {
            ts: event.ts,
            running: None,
        });
        let Some(timer) = events[..at]
            .iter()
            .rposition(|e| entry(e) || matches!(e.what, What::Hrtimer(_)))
            .filter(|&i| matches!(events[i].what, What::Hrtimer(_)))
        else {
            continue;
        };
        own[timer] = true;
        let Some(interrupt) = events[..timer]
            .iter()
            .rposition(entry)
            .filter(|&i| events[i].what == What::Vector(Vector::LocalTimer))
        else {
            continue;
        };
        let end = events[interrupt + 1..]
            .iter()
            .position(|e| entry(e) || matches!(e.what, What::Switch { .. }))
            .map_or(events.len(), |p| interrupt + 1 + p);
        let others =
            (interrupt + 1..end).any(|i| i != timer && matches!(events[i].what, What::Hrtimer(_)));
        if !others {
            own[interrupt] = true;
        }
    }
    let kept = events
        .iter()
        .zip(own)
        .filter(|(_, own)| !own)
        .map(|(e, _)| *e)
        .collect();
    (kept, woken)
}

/// Explains every gap of one CPU. `sent` are the IPIs sent to the measured CPUs in time
/// order; an IPI is matched with the last one sent to its CPU at most `ipi_window` (trace
/// clock) before it arrived.
pub(crate) fn explain_cpu(
    trace: &CpuTrace<'_>,
    gaps: &[TraceGap],
    sent: &[IpiSend],
    ipi_window: u64,
    symbols: &Symbols,
    to_ns: &dyn Fn(u64) -> u64,
) -> CpuCauses {
    let mut by_cause: BTreeMap<Cause, CauseStats> = BTreeMap::new();
    let mut spikes: Vec<(u64, usize, Cause)> = Vec::new();
    let mut unmatched = UnmatchedIpis::default();
    // The join needs the events in time order; a CPU's buffer gives them so, but a counter
    // that stepped back (a CPU brought back online, a skewed clock) must not make it panic or
    // misplace them.
    let sorted;
    let ordered = if trace.events.is_sorted_by_key(|e| e.ts) {
        trace.events
    } else {
        let mut copy = trace.events.to_vec();
        copy.sort_by_key(|e| e.ts);
        sorted = copy;
        &sorted[..]
    };
    let (filtered, woken) = if trace.sleeps {
        own_wakeups(ordered, trace.loop_tid, symbols)
    } else {
        (Vec::new(), Vec::new())
    };
    let events = if trace.sleeps { &filtered[..] } else { ordered };
    let kept: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.what, What::TickKept(_)))
        .collect();
    let to_me: Vec<&IpiSend> = sent
        .iter()
        .filter(|s| s.targets.contains(&trace.cpu))
        .collect();
    for (index, gap) in gaps.iter().enumerate() {
        let from = events.partition_point(|e| e.ts < gap.start);
        // A gap whose end comes before its start (a garbled reading) holds no event.
        let to = events.partition_point(|e| e.ts <= gap.end).max(from);
        let inside = &events[from..to];
        let woke = woken
            .get(woken.partition_point(|w| w.ts < gap.start))
            .filter(|w| w.ts <= gap.end);
        let (cause, id) = if gap.end < gap.start {
            (
                Cause {
                    class: Class::Unknown,
                    source: "end before start".into(),
                },
                None,
            )
        } else if trace
            .lost
            .iter()
            .any(|&(a, b)| a <= gap.end && gap.start <= b)
        {
            (
                Cause {
                    class: Class::Unknown,
                    source: "events lost".into(),
                },
                None,
            )
        } else if trace.offline_from.is_some_and(|from| gap.end >= from) {
            // It spans the CPU's offlining or comes after it: the loop may not have been on
            // this CPU, whose events then say nothing of it.
            (
                Cause {
                    class: Class::Unknown,
                    source: "CPU offline".into(),
                },
                None,
            )
        } else {
            classify(
                trace,
                gap,
                inside,
                woke,
                &kept,
                &to_me,
                ipi_window,
                symbols,
                &mut unmatched,
            )
        };
        let length = to_ns(gap.end.saturating_sub(gap.start));
        if !by_cause.contains_key(&cause) {
            let stats = CauseStats {
                cause: cause.clone(),
                count: 0,
                total_ns: 0,
                max_ns: 0,
                lengths_ns: Vec::new(),
                ids: Vec::new(),
            };
            by_cause.insert(cause.clone(), stats);
        }
        let Some(stats) = by_cause.get_mut(&cause) else {
            continue;
        };
        stats.count += 1;
        stats.total_ns = stats.total_ns.saturating_add(length);
        stats.max_ns = stats.max_ns.max(length);
        stats.lengths_ns.push(length);
        stats.add_id(id);
        if spikes.len() < SPIKES || length > spikes[spikes.len() - 1].0 {
            spikes.push((length, index, cause));
            spikes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            spikes.truncate(SPIKES);
        }
    }
    let mut causes: Vec<CauseStats> = by_cause.into_values().collect();
    causes.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.cause.cmp(&b.cause)));
    CpuCauses {
        cpu: trace.cpu,
        gaps: gaps.len() as u64,
        causes,
        spikes: spikes
            .into_iter()
            .map(|(length_ns, index, cause)| Spike {
                at_ns: to_ns(gaps[index].end.saturating_sub(trace.run_start)),
                length_ns,
                cause,
            })
            .collect(),
        cross_check: None,
        unmatched_ipis: unmatched,
    }
}

/// The kind of IPI an APIC vector is, as a cause's source names it (`function call`).
pub(crate) fn ipi_kind(vector: Vector) -> &'static str {
    match vector {
        Vector::CallFunction | Vector::CallFunctionSingle => "function call",
        Vector::Reschedule => "reschedule",
        Vector::IrqWork => "irq_work",
        Vector::PlatformIpi => "platform IPI",
        Vector::Thermal => "thermal",
        Vector::Ipi => "IPI",
        Vector::LocalTimer => "local timer",
    }
}

/// The cause that names a task `pid` (`comm`), a kworker by the work function it ran;
/// `note` follows a task's name.
pub(crate) fn task(pid: u32, comm: &str, work: Option<&str>, note: &str) -> (Cause, Option<u32>) {
    let (class, source) = match work {
        Some(function) => (Class::Kworker, function.to_string()),
        None if comm.starts_with("kworker/") => (Class::Kworker, comm.to_string()),
        // A comm the trace did not know (`<...>`): the pid names it.
        None if comm == "<...>" => (Class::Task, format!("pid {pid}{note}")),
        None => (Class::Task, format!("{comm}{note}")),
    };
    (Cause { class, source }, Some(pid))
}

/// A task other than the loop that ran in a gap.
struct OtherTask {
    /// How long it ran, in the trace's clock.
    ran: u64,
    /// Its pid.
    pid: u32,
    /// Its comm.
    comm: Sym,
    /// The first work function it ran (a kworker).
    work: Option<Sym>,
    /// The first softirq vector it ran (ksoftirqd).
    softirq: Option<u8>,
}

/// The cause of one gap from the events inside it (see the module's order), with the id
/// behind it (a pid, an IRQ number). `woke`: a sleeping loop's wake-up in the gap.
#[allow(clippy::too_many_arguments)]
fn classify(
    trace: &CpuTrace<'_>,
    gap: &TraceGap,
    inside: &[Event],
    woke: Option<&Woken>,
    kept: &[&Event],
    to_me: &[&IpiSend],
    ipi_window: u64,
    symbols: &Symbols,
    unmatched: &mut UnmatchedIpis,
) -> (Cause, Option<u32>) {
    let cause = |class, source: String, id| (Cause { class, source }, id);
    // The other task that ran longest in the gap (until the next switch, or the gap's end),
    // with the first work function a kworker ran meanwhile, and the first softirq.
    let mut other_task: Option<OtherTask> = None;
    for (at, event) in inside.iter().enumerate() {
        let What::Switch { pid, comm, .. } = event.what else {
            continue;
        };
        if pid == trace.loop_tid || pid == 0 {
            continue;
        }
        let rest = &inside[at + 1..];
        let until = rest
            .iter()
            .position(|e| matches!(e.what, What::Switch { .. }))
            .unwrap_or(rest.len());
        let ran = rest.get(until).map_or(gap.end, |e| e.ts) - event.ts;
        let work = rest[..until].iter().find_map(|e| match e.what {
            What::Work(function) => Some(function),
            _ => None,
        });
        let softirq = rest[..until].iter().find_map(|e| match e.what {
            What::Softirq(vector) => Some(vector),
            _ => None,
        });
        if other_task.as_ref().is_none_or(|longest| ran > longest.ran) {
            other_task = Some(OtherTask {
                ran,
                pid,
                comm,
                work,
                softirq,
            });
        }
    }
    if let Some(OtherTask {
        pid,
        comm,
        work,
        softirq,
        ..
    }) = other_task
    {
        let comm = symbols.name(comm);
        // A softirq thread is named with the softirq it ran: what raised that is the fix.
        if let Some(name) = softirq
            .filter(|_| SOFTIRQ_THREADS.iter().any(|t| comm.starts_with(t)))
            .and_then(|vector| SOFTIRQS.get(usize::from(vector)))
        {
            return task(pid, comm, None, &format!(" ({name} softirq)"));
        }
        // What woke the task: the hrtimer that expired in the gap right before its wake-up
        // (`hrtimer_wakeup` for a sleep, `timerfd_tmrproc` for a timerfd), where one did.
        let mut timer = None;
        let mut woken_by = String::new();
        for e in inside {
            match e.what {
                What::Hrtimer(f) => timer = Some(symbols.name(f)),
                What::Wakeup(woken) if woken == pid => {
                    if let Some(f) = timer.filter(|f| !TICK_FUNCTIONS.contains(f)) {
                        woken_by = format!(" (woken by {f})");
                    }
                    break;
                }
                What::Wakeup(_) => timer = None,
                _ => {}
            }
        }
        return task(pid, comm, work.map(|f| symbols.name(f)), &woken_by);
    }
    // A sleeping loop woken in time but kept waiting by the task on the CPU.
    if let Some(&Woken {
        ts,
        running: Some((pid, comm)),
    }) = woke
        && gap.end.saturating_sub(ts) > ts.saturating_sub(gap.start)
    {
        return task(pid, symbols.name(comm), None, " (running when woken)");
    }
    let entry_at = inside
        .iter()
        .position(|e| matches!(e.what, What::Irq { .. } | What::Vector(_) | What::Nmi(_)));
    if let Some(at) = entry_at {
        let entry = &inside[at];
        // arm64: the `IPI` interrupt, then the ipi_entry that names its kind.
        let what = match (entry.what, inside.get(at + 1).map(|e| e.what)) {
            (What::Vector(Vector::Ipi), Some(What::Vector(kind))) => What::Vector(kind),
            (what, _) => what,
        };
        return match what {
            What::Irq { irq, name } => cause(
                Class::DeviceIrq,
                format!("{irq} {}", symbols.name(name)),
                Some(irq),
            ),
            What::Nmi(handler) => cause(Class::Nmi, symbols.name(handler).to_string(), None),
            What::Vector(Vector::LocalTimer) => {
                let function = inside.iter().find_map(|e| match e.what {
                    What::Hrtimer(f) => Some(symbols.name(f)),
                    _ => None,
                });
                match function {
                    Some(f) if !TICK_FUNCTIONS.contains(&f) => {
                        cause(Class::Timer, f.to_string(), None)
                    }
                    _ => {
                        let before = kept.partition_point(|e| e.ts <= gap.end);
                        let reason = before.checked_sub(1).and_then(|i| match kept[i].what {
                            What::TickKept(why) => Some(symbols.name(why)),
                            _ => None,
                        });
                        let source = match reason {
                            Some(why) => format!("tick kept: {why}"),
                            None => function.unwrap_or("local timer").to_string(),
                        };
                        cause(Class::Tick, source, None)
                    }
                }
            }
            What::Vector(vector) => {
                let kind = ipi_kind(vector);
                let class = if inside.iter().any(|e| e.what == What::RemoteTlbFlush) {
                    Class::TlbShootdown
                } else {
                    Class::Ipi
                };
                let from = match sender_of(entry.ts, vector, to_me, ipi_window, trace.sends_lost) {
                    Sender::Named(s) => {
                        // The callsite without its offset (`on_each_cpu_cond_mask+0x20/0x60`);
                        // none for ipi_raise.
                        let site = symbols.name(s.callsite);
                        let site = site.split('+').next().unwrap_or(site);
                        let site = if site.is_empty() {
                            String::new()
                        } else {
                            format!(" ({site})")
                        };
                        let text = format!(" from {} on CPU {}{site}", symbols.name(s.comm), s.cpu);
                        return cause(class, format!("{kind}{text}"), Some(s.pid));
                    }
                    Sender::After => {
                        unmatched.sent_after += 1;
                        " (sender not named: clock skew)"
                    }
                    Sender::FarBefore => {
                        unmatched.far_before += 1;
                        ""
                    }
                    Sender::Lost => {
                        unmatched.sends_lost += 1;
                        " (sender not named: sends lost)"
                    }
                    Sender::Unknown => "",
                };
                cause(class, format!("{kind}{from}"), None)
            }
            _ => unreachable!("only entries are selected"),
        };
    }
    if let Some(vec) = inside.iter().find_map(|e| match e.what {
        What::Softirq(v) => Some(v),
        _ => None,
    }) {
        let name = SOFTIRQS.get(usize::from(vec)).copied().unwrap_or("?");
        return if vec == 9 {
            cause(Class::Rcu, "RCU softirq".into(), None)
        } else {
            cause(Class::Softirq, name.to_string(), Some(u32::from(vec)))
        };
    }
    cause(Class::NoKernelEvent, "no kernel event".into(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, what: What) -> Event {
        Event { ts, what }
    }

    fn gap(start: u64, end: u64) -> TraceGap {
        TraceGap { start, end }
    }

    fn trace<'a>(events: &'a [Event], lost: Vec<(u64, u64)>) -> CpuTrace<'a> {
        CpuTrace {
            cpu: 1,
            loop_tid: 100,
            events,
            lost,
            offline_from: None,
            sends_lost: &[],
            run_start: 0,
            sleeps: false,
        }
    }

    fn classes(out: &CpuCauses) -> Vec<(Class, String, u64)> {
        out.causes
            .iter()
            .map(|c| (c.cause.class, c.cause.source.clone(), c.count))
            .collect()
    }

    #[test]
    fn a_class_is_named_alike_in_json_and_in_the_fix_table() {
        for class in Class::ALL {
            assert_eq!(
                serde_json::to_value(class).unwrap(),
                serde_json::Value::from(class.key())
            );
        }
    }

    #[test]
    fn each_gap_gets_one_cause_and_the_counts_add_up() {
        let mut s = Symbols::default();
        let tick = s.intern("tick_nohz_handler");
        let tfd = s.intern("timerfd_tmrproc");
        let nvme = s.intern("nvme0q1");
        let cyclic = s.intern("cyclic");
        let loop_comm = s.intern("lowlat");
        let kworker = s.intern("kworker/1:1");
        let vmstat = s.intern("vmstat_update");
        let sched = s.intern("SCHED");
        let events = [
            // 1: the tick, with its softirqs.
            ev(105, What::Vector(Vector::LocalTimer)),
            ev(106, What::Hrtimer(tick)),
            ev(107, What::Softirq(1)),
            // 2: a timerfd.
            ev(205, What::Vector(Vector::LocalTimer)),
            ev(206, What::Hrtimer(tfd)),
            // 3: a device IRQ.
            ev(
                305,
                What::Irq {
                    irq: 42,
                    name: nvme,
                },
            ),
            // 4: a task woken by a timer ran.
            ev(405, What::Vector(Vector::LocalTimer)),
            ev(406, What::Hrtimer(s.intern("hrtimer_wakeup"))),
            ev(406, What::Wakeup(77)),
            ev(
                407,
                What::Switch {
                    pid: 77,
                    comm: cyclic,
                    prev: 100,
                    prev_blocked: false,
                },
            ),
            ev(
                408,
                What::Switch {
                    pid: 100,
                    comm: loop_comm,
                    prev: 77,
                    prev_blocked: false,
                },
            ),
            // 5: vmstat_update in a kworker.
            ev(
                505,
                What::Switch {
                    pid: 9,
                    comm: kworker,
                    prev: 100,
                    prev_blocked: false,
                },
            ),
            ev(506, What::Work(vmstat)),
            ev(
                507,
                What::Switch {
                    pid: 100,
                    comm: loop_comm,
                    prev: 9,
                    prev_blocked: false,
                },
            ),
            // 6: the RCU softirq alone.
            ev(605, What::Softirq(9)),
            // 7: nothing (the gap 700-710).
            // 8: a tick kept by the scheduler (reason before it).
            ev(790, What::TickKept(sched)),
            ev(805, What::Vector(Vector::LocalTimer)),
            ev(806, What::Hrtimer(tick)),
            // Outside every gap.
            ev(950, What::Irq { irq: 7, name: nvme }),
        ];
        let gaps = [
            gap(100, 110),
            gap(200, 210),
            gap(300, 310),
            gap(400, 420),
            gap(500, 510),
            gap(600, 610),
            gap(700, 710),
            gap(800, 850),
        ];
        let out = explain_cpu(&trace(&events, vec![]), &gaps, &[], 10, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick kept: SCHED".into(), 1),
                (Class::Tick, "tick_nohz_handler".into(), 1),
                (Class::Timer, "timerfd_tmrproc".into(), 1),
                (Class::DeviceIrq, "42 nvme0q1".into(), 1),
                (Class::Kworker, "vmstat_update".into(), 1),
                (Class::Task, "cyclic (woken by hrtimer_wakeup)".into(), 1),
                (Class::Rcu, "RCU softirq".into(), 1),
                (Class::NoKernelEvent, "no kernel event".into(), 1),
            ]
        );
        assert_eq!(out.causes.iter().map(|c| c.count).sum::<u64>(), out.gaps);
        assert_eq!(out.gaps, 8);
        // The longest gap (50) is the first spike, at its end.
        assert_eq!(out.spikes[0].length_ns, 50);
        assert_eq!(out.spikes[0].at_ns, 850);
        assert_eq!(out.spikes.len(), SPIKES);
        // Most time first.
        assert_eq!(out.causes[0].total_ns, 50);
    }

    /// Issue 43 item 6: a gap ksoftirqd took is named with the softirq it ran, which is what
    /// a setting removes (ksoftirqd cannot move); without one seen it stays `ksoftirqd/1`, and
    /// another task that ran a softirq in its time is not renamed.
    #[test]
    fn a_softirq_thread_is_named_with_the_softirq_it_ran() {
        let mut s = Symbols::default();
        let ksoftirqd = s.intern("ksoftirqd/1");
        let other = s.intern("app");
        let loop_comm = s.intern("lowlat");
        let switch = |ts, pid, comm| {
            ev(
                ts,
                What::Switch {
                    pid,
                    comm,
                    prev: 100,
                    prev_blocked: false,
                },
            )
        };
        let events = [
            switch(10, 22, ksoftirqd),
            ev(11, What::Softirq(1)),
            switch(15, 100, loop_comm),
            switch(20, 22, ksoftirqd),
            ev(21, What::Softirq(9)),
            switch(25, 100, loop_comm),
            switch(30, 22, ksoftirqd),
            switch(35, 100, loop_comm),
            switch(40, 7, other),
            ev(41, What::Softirq(1)),
            switch(45, 100, loop_comm),
        ];
        let gaps = [gap(9, 16), gap(19, 26), gap(29, 36), gap(39, 46)];
        let out = explain_cpu(&trace(&events, vec![]), &gaps, &[], 10, &s, &|t| t);
        let mut sources: Vec<String> = out.causes.iter().map(|c| c.cause.source.clone()).collect();
        sources.sort();
        assert_eq!(
            sources,
            [
                "app",
                "ksoftirqd/1",
                "ksoftirqd/1 (RCU softirq)",
                "ksoftirqd/1 (TIMER softirq)"
            ]
        );
        assert!(out.causes.iter().all(|c| c.cause.class == Class::Task));
    }

    #[test]
    fn a_sleeping_loops_own_wake_up_is_left_out_but_not_what_shared_its_interrupt() {
        let mut s = Symbols::default();
        let wake = s.intern("hrtimer_wakeup");
        let tick = s.intern("tick_nohz_handler");
        let events = [
            // Its own wake-up alone: all three go.
            ev(10, What::Vector(Vector::LocalTimer)),
            ev(11, What::Hrtimer(wake)),
            ev(12, What::Wakeup(100)),
            // The tick in the same interrupt: the interrupt and the tick stay.
            ev(20, What::Vector(Vector::LocalTimer)),
            ev(21, What::Hrtimer(tick)),
            ev(22, What::Hrtimer(wake)),
            ev(23, What::Wakeup(100)),
            // Another task's wake-up: stays.
            ev(30, What::Vector(Vector::LocalTimer)),
            ev(31, What::Hrtimer(wake)),
            ev(32, What::Wakeup(55)),
        ];
        let (kept, woken) = own_wakeups(&events, 100, &s);
        let at: Vec<u64> = kept.iter().map(|e| e.ts).collect();
        assert_eq!(at, vec![20, 21, 30, 31, 32]);
        assert_eq!(woken.iter().map(|w| w.ts).collect::<Vec<_>>(), vec![12, 23]);
    }

    /// Bad input: events out of time order (a counter that stepped back), a gap whose end is
    /// before its start, a gap before the run started: every gap is still counted once,
    /// nothing panics, and the garbled gap is `unknown`, not given a cause it did not show.
    #[test]
    fn out_of_order_events_and_garbled_gaps_neither_panic_nor_mislead() {
        let mut s = Symbols::default();
        let nvme = s.intern("nvme0q1");
        let tick = s.intern("tick_nohz_handler");
        let events = [
            ev(306, What::Hrtimer(tick)),
            ev(
                105,
                What::Irq {
                    irq: 42,
                    name: nvme,
                },
            ),
            ev(305, What::Vector(Vector::LocalTimer)),
        ];
        let mut t = trace(&events, vec![]);
        t.run_start = 1_000;
        let gaps = [gap(100, 110), gap(210, 200), gap(300, 310)];
        let out = explain_cpu(&t, &gaps, &[], 10, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_nohz_handler".into(), 1),
                (Class::DeviceIrq, "42 nvme0q1".into(), 1),
                (Class::Unknown, "end before start".into(), 1),
            ]
        );
        // Before the run's start: at 0, not a wrapped time.
        assert!(out.spikes.iter().all(|s| s.at_ns == 0));
    }

    #[test]
    fn ipis_name_their_sender_and_shootdowns_are_told_apart() {
        let mut s = Symbols::default();
        let comm = s.intern("membarrier");
        let site = s.intern("smp_call_function_many_cond+0x1/0x2");
        let events = [
            ev(105, What::Vector(Vector::CallFunction)),
            ev(205, What::Vector(Vector::CallFunctionSingle)),
            ev(206, What::RemoteTlbFlush),
            ev(305, What::Vector(Vector::Reschedule)),
        ];
        let sent = [
            IpiSend {
                ts: 101,
                cpu: 0,
                pid: 55,
                comm,
                callsite: site,
                targets: vec![1],
                kind: None,
            },
            // To another CPU: not this one's sender.
            IpiSend {
                ts: 203,
                cpu: 0,
                pid: 56,
                comm,
                callsite: site,
                targets: vec![2],
                kind: None,
            },
        ];
        let gaps = [gap(100, 110), gap(200, 210), gap(300, 310)];
        let out = explain_cpu(&trace(&events, vec![]), &gaps, &sent, 50, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (
                    Class::Ipi,
                    "function call from membarrier on CPU 0 (smp_call_function_many_cond)".into(),
                    1
                ),
                (Class::Ipi, "reschedule".into(), 1),
                (Class::TlbShootdown, "function call".into(), 1),
            ]
        );
    }

    /// arm64: the generic timer's interrupt carrying the tick's hrtimer is the tick (as x86's
    /// local timer is), with another hrtimer a timer; the `IPI` interrupt takes the kind of
    /// the `ipi_entry` after it, and its sender from `ipi_raise` (Linux before 6.6) only when
    /// the raise was of that kind; an IPI whose kind no event names is an IPI, never a
    /// device IRQ to move.
    #[test]
    fn arm64_timer_and_ipi_interrupts_are_classed_by_what_they_ran() {
        let mut s = Symbols::default();
        let tick = s.intern("tick_sched_timer");
        let wake = s.intern("hrtimer_wakeup");
        let sugov = s.intern("sugov:4");
        let empty = s.intern("");
        let ipi = What::Vector(Vector::Ipi);
        let events = [
            ev(105, What::Vector(Vector::LocalTimer)),
            ev(106, What::Hrtimer(tick)),
            ev(205, What::Vector(Vector::LocalTimer)),
            ev(206, What::Hrtimer(wake)),
            ev(305, ipi),
            ev(305, What::Vector(Vector::CallFunction)),
            ev(405, ipi),
            ev(405, What::Vector(Vector::Reschedule)),
            ev(505, ipi),
            ev(605, What::Vector(Vector::Ipi)),
        ];
        let raise = |ts, kind| IpiSend {
            ts,
            cpu: 0,
            pid: 491,
            comm: sugov,
            callsite: empty,
            targets: vec![1],
            kind: Some(kind),
        };
        // A function call raised 10 before the first IPI; another 10 before the second,
        // which is a reschedule: not its sender.
        let sent = [
            raise(295, Vector::CallFunction),
            raise(395, Vector::CallFunction),
        ];
        let gaps: Vec<TraceGap> = (1..=6).map(|i| gap(i * 100, i * 100 + 10)).collect();
        let out = explain_cpu(&trace(&events, vec![]), &gaps, &sent, 50, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_sched_timer".into(), 1),
                (Class::Timer, "hrtimer_wakeup".into(), 1),
                (Class::Ipi, "IPI".into(), 2),
                (Class::Ipi, "function call from sugov:4 on CPU 0".into(), 1),
                (Class::Ipi, "reschedule".into(), 1),
            ]
        );
        assert_eq!(out.unmatched_ipis, UnmatchedIpis::default());
    }

    /// Clock skew between CPUs: a send traced after the arrival it caused (the sender's clock
    /// ahead) is not named, nor is the last send when it is older than the window; each is
    /// counted. A send in the window before is still named.
    #[test]
    fn clock_skew_never_names_a_sender_and_is_counted() {
        let mut s = Symbols::default();
        let comm = s.intern("membarrier");
        let site = s.intern("smp_call_function_many_cond+0x1/0x2");
        let send = |ts| IpiSend {
            ts,
            cpu: 0,
            pid: 55,
            comm,
            callsite: site,
            targets: vec![1],
            kind: None,
        };
        let events = [
            // Sent 30 after it arrived (the window is 50).
            ev(105, What::Vector(Vector::CallFunction)),
            // The last send is 100 before it: older than the window.
            ev(1_005, What::Vector(Vector::CallFunctionSingle)),
            // Sent 5 before: named.
            ev(2_005, What::Vector(Vector::Reschedule)),
        ];
        let sent = [send(135), send(905), send(2_000)];
        let gaps = [gap(100, 110), gap(1_000, 1_010), gap(2_000, 2_010)];
        let out = explain_cpu(&trace(&events, vec![]), &gaps, &sent, 50, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Ipi, "function call".into(), 1),
                (
                    Class::Ipi,
                    "function call (sender not named: clock skew)".into(),
                    1
                ),
                (
                    Class::Ipi,
                    "reschedule from membarrier on CPU 0 (smp_call_function_many_cond)".into(),
                    1
                ),
            ]
        );
        assert_eq!(
            out.unmatched_ipis,
            UnmatchedIpis {
                sent_after: 1,
                far_before: 1,
                sends_lost: 0,
            }
        );
        // A later segment adds up.
        let mut both = out.clone();
        both.merge(out);
        assert_eq!(both.unmatched_ipis.sent_after, 2);
        assert_eq!(both.unmatched_ipis.far_before, 2);
    }

    /// A loss in the senders' trace: an IPI arriving in it or within the window after it
    /// is not given the send before the loss (its own may be the one lost), and is counted.
    #[test]
    fn a_loss_of_the_senders_trace_names_no_sender_near_it() {
        let mut s = Symbols::default();
        let comm = s.intern("membarrier");
        let site = s.intern("smp_call_function_many_cond+0x1/0x2");
        let send = |ts| IpiSend {
            ts,
            cpu: 0,
            pid: 55,
            comm,
            callsite: site,
            targets: vec![1],
            kind: None,
        };
        let events = [
            ev(105, What::Vector(Vector::CallFunction)),
            ev(505, What::Vector(Vector::CallFunction)),
        ];
        let sent = [send(100), send(500)];
        // The senders lost events between 80 and 90: within 50 before the first IPI.
        let lost = [(80, 90)];
        let mut t = trace(&events, vec![]);
        t.sends_lost = &lost;
        let gaps = [gap(100, 110), gap(500, 510)];
        let out = explain_cpu(&t, &gaps, &sent, 50, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (
                    Class::Ipi,
                    "function call (sender not named: sends lost)".into(),
                    1
                ),
                (
                    Class::Ipi,
                    "function call from membarrier on CPU 0 (smp_call_function_many_cond)".into(),
                    1
                ),
            ]
        );
        assert_eq!(out.unmatched_ipis.sends_lost, 1);
    }

    /// A CPU seen offline during the run: the gap that spans the offlining and every later
    /// one are unknown (the kernel moved the loop off it), the earlier ones explained, all
    /// counted once.
    #[test]
    fn gaps_from_a_cpus_offlining_on_are_unknown() {
        let mut s = Symbols::default();
        let tick = s.intern("tick_nohz_handler");
        let events = [
            ev(105, What::Vector(Vector::LocalTimer)),
            ev(106, What::Hrtimer(tick)),
            ev(250, What::Vector(Vector::LocalTimer)),
            ev(251, What::Hrtimer(tick)),
            // Events after it came back: not the loop's.
            ev(405, What::Vector(Vector::LocalTimer)),
        ];
        let mut t = trace(&events, vec![]);
        t.offline_from = Some(251);
        let gaps = [gap(100, 110), gap(240, 260), gap(400, 410)];
        let out = explain_cpu(&t, &gaps, &[], 10, &s, &|t| t);
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_nohz_handler".into(), 1),
                (Class::Unknown, "CPU offline".into(), 2),
            ]
        );
        assert_eq!(out.gaps, 3);
    }

    #[test]
    fn a_gap_in_a_lost_window_is_unknown_never_a_guess() {
        let mut s = Symbols::default();
        let tick = s.intern("tick_nohz_handler");
        let events = [
            ev(105, What::Vector(Vector::LocalTimer)),
            ev(106, What::Hrtimer(tick)),
            ev(305, What::Vector(Vector::LocalTimer)),
        ];
        let gaps = [gap(100, 110), gap(200, 210), gap(300, 310)];
        let out = explain_cpu(
            &trace(&events, vec![(150, 305)]),
            &gaps,
            &[],
            10,
            &s,
            &|t| t,
        );
        let mut got = classes(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_nohz_handler".into(), 1),
                (Class::Unknown, "events lost".into(), 2),
            ]
        );
    }
}

/// The performance target of issue 30: 60 s on 16 CPUs at 1,300 gaps per second, each gap
/// the tick's three events (local timer, the tick's hrtimer, the TIMER softirq), joined in
/// under 2 s and 100 MB. `#[ignore]`d (it allocates some 110 MB of input); run it alone, as
/// `bench/explain-join.sh` does, since it reads this process's peak memory.
#[cfg(test)]
mod scale {
    use super::*;

    /// A field of `/proc/self/status`, kB.
    fn status_kb(field: &str) -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    #[ignore = "a measurement: bench/explain-join.sh runs it alone and judges its targets"]
    fn joining_60_s_of_16_cpus_at_1300_gaps_per_second() {
        const CPUS: u32 = 16;
        const GAPS: u64 = 60 * 1300;
        // A 2.6 GHz counter: a gap every 2 million ticks, 20,000 ticks (7.7 µs) long.
        const EVERY: u64 = 2_000_000;
        let before_kb = status_kb("VmRSS:");
        let mut symbols = Symbols::default();
        let tick = symbols.intern("tick_nohz_handler");
        let inputs: Vec<(Vec<Event>, Vec<TraceGap>)> = (0..CPUS)
            .map(|_| {
                let mut events = Vec::with_capacity(3 * GAPS as usize);
                let mut gaps = Vec::with_capacity(GAPS as usize);
                for i in 0..GAPS {
                    let start = 1_000_000 + i * EVERY;
                    events.push(Event {
                        ts: start + 1_000,
                        what: What::Vector(Vector::LocalTimer),
                    });
                    events.push(Event {
                        ts: start + 2_000,
                        what: What::Hrtimer(tick),
                    });
                    events.push(Event {
                        ts: start + 3_000,
                        what: What::Softirq(1),
                    });
                    gaps.push(TraceGap {
                        start,
                        end: start + 20_000,
                    });
                }
                (events, gaps)
            })
            .collect();
        let inputs_kb = status_kb("VmRSS:").saturating_sub(before_kb);
        let started = std::time::Instant::now();
        let explained: Vec<CpuCauses> = inputs
            .iter()
            .enumerate()
            .map(|(cpu, (events, gaps))| {
                let trace = CpuTrace {
                    cpu: cpu as u32,
                    loop_tid: 1,
                    events,
                    lost: Vec::new(),
                    offline_from: None,
                    sends_lost: &[],
                    run_start: 0,
                    sleeps: false,
                };
                explain_cpu(&trace, gaps, &[], 2_600_000, &symbols, &|t| t * 10 / 26)
            })
            .collect();
        let seconds = started.elapsed().as_secs_f64();
        let peak_kb = status_kb("VmHWM:").saturating_sub(before_kb);
        let join_kb = peak_kb.saturating_sub(inputs_kb);
        eprintln!(
            "explain join: {CPUS} CPUs x {GAPS} gaps, 3 events each: {seconds:.3} s; inputs \
             {} MB, the join's own peak {} MB",
            inputs_kb / 1024,
            join_kb / 1024
        );
        for cpu in &explained {
            assert_eq!(cpu.gaps, GAPS);
            assert_eq!(cpu.causes.len(), 1);
            assert_eq!(cpu.causes[0].cause.class, Class::Tick);
        }
        // The targets (2 s, 100 MB) are judged by bench/explain-join.sh, which runs this
        // alone: beside other tests (CI's --include-ignored) the process's peak is theirs too.
    }
}
