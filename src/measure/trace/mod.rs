//! `--explain`: the cause of every gap, from kernel tracepoints recorded on the measured CPUs
//! while the loop runs.
//!
//! - [`tracefs`]: the session, a private ftrace instance that leaves no trace;
//! - [`events`]: the fixed set of tracepoints and the parser of their lines;
//! - [`explain`]: the join of the gaps with the events, and the classes.
//!
//! An engine opens a [`RunTrace`] before its loops start, lets the runner drain it from the
//! housekeeping CPUs during the run, and ends it after with its gaps in the trace clock
//! ([`RunTrace::explain`], which joins them through [`explanation`]). The jitter loop's gaps
//! are its interruptions; the timer loop's are its late wake-ups, from the deadline to the
//! wake-up, without the loop's own wake-up (its timer interrupt, hrtimer and `sched_wakeup`)
//! among the causes.

pub(crate) mod cause_count;
pub(crate) mod events;
pub(crate) mod explain;
pub(crate) mod tracefs;

pub(crate) use tracefs::{Capture, TraceClock, Tracing};

use std::fmt::Display;
use std::time::Duration;

use crate::machine::CpuSet;
use crate::machine::Machine;
use crate::machine::power::CpuPower;
use crate::measure::runner::attribution::CpuAttribution;
use crate::measure::runner::conditions::CpuConditions;
use crate::measure::runner::segments::Merge;
use crate::measure::runner::tsc::Tsc;
use crate::sysroot::SysRoot;
use explain::{CpuCauses, CpuTrace, CrossCheck, IdleExit, TraceGap, Waits};

/// An IPI is matched with its sender when it arrives at most this long after it was sent,
/// ns: a VM's IPI exits take tens of µs, far below the 1 ms.
const IPI_WINDOW_NS: u64 = 1_000_000;

/// The gaps of every measured CPU, explained, or why they could not be.
#[derive(Debug, Clone, Default)]
pub(crate) struct Explanation {
    /// Whether the trace ran (false: `notes` say why not; `cpus` is empty).
    pub traced: bool,
    /// The trace clock (`x86-tsc`, `mono`).
    pub clock: &'static str,
    /// Each measured CPU's causes.
    pub cpus: Vec<CpuCauses>,
    /// Events the trace buffers lost in all.
    pub lost_events: u64,
    /// What could not be explained, and why, one sentence each.
    pub notes: Vec<String>,
    /// The loop slept between its readings (the timer's): each gap runs from a deadline to
    /// its wake-up, so a gap with no kernel event is the way out of idle too.
    pub slept: bool,
}

impl Explanation {
    /// No trace: every gap unexplained, for `reason`.
    pub(crate) fn unavailable(reason: &dyn Display) -> Self {
        Explanation {
            traced: false,
            clock: "",
            cpus: Vec::new(),
            lost_events: 0,
            notes: vec![format!("gaps not explained: {reason}")],
            slept: false,
        }
    }
}

impl Explanation {
    /// Sets beside each CPU's causes what its `no kernel event` gaps are checked against:
    /// in a VM (`hypervisor`) the steal of the vCPU during the run, on bare metal the SMIs
    /// counted during it and, where the loop slept, the deepest idle state the CPU may enter
    /// (from `power`, the machine's CPUs); `conditions` are the run's, per CPU.
    pub(crate) fn cross_check(
        &mut self,
        hypervisor: Option<&str>,
        conditions: &[(u32, &CpuConditions)],
        power: &[CpuPower],
    ) {
        let slept = self.slept;
        for cpu in &mut self.cpus {
            let Some((_, during)) = conditions.iter().find(|(c, _)| *c == cpu.cpu) else {
                continue;
            };
            cpu.cross_check = Some(match hypervisor {
                Some(vendor) => CrossCheck::Steal {
                    hypervisor: vendor.to_string(),
                    steal_ns: during.steal_ns.clone(),
                },
                None => CrossCheck::Firmware {
                    smis: during.smis.clone(),
                    deepest_idle: power
                        .iter()
                        .find(|p| p.cpu == cpu.cpu && slept)
                        .and_then(CpuPower::deepest_usable_idle)
                        .map(|state| IdleExit {
                            name: state.name.get().map_or("?", String::as_str).to_string(),
                            exit_latency_us: state.latency_us.get().copied().unwrap_or(0),
                        }),
                },
            });
        }
    }
}

/// Adds the explanation of a later segment of the same run (a checkpointed run): each CPU's
/// causes summed cause by cause, the spikes the longest of both (a later segment's spike
/// times count from that segment's start).
impl Merge for Explanation {
    fn merge(&mut self, later: Explanation) {
        self.traced &= later.traced;
        self.slept |= later.slept;
        self.lost_events += later.lost_events;
        for note in later.notes {
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
        for more in later.cpus {
            match self.cpus.iter_mut().find(|c| c.cpu == more.cpu) {
                Some(cpu) => cpu.merge(more),
                None => self.cpus.push(more),
            }
        }
    }
}

/// One CPU's gaps for [`explanation`]: its CPU, the loop thread's pid, when the run started
/// and its gaps, all in the trace clock.
pub(crate) struct CpuGaps {
    /// The CPU.
    pub cpu: u32,
    /// The measuring thread's id.
    pub loop_tid: u32,
    /// When its loop started (trace clock).
    pub start: u64,
    /// Its gaps.
    pub gaps: Vec<TraceGap>,
    /// How the loop waits between its readings: which events in its gaps are its own (see
    /// [`explain`]).
    pub waits: Waits,
}

/// An engine's tracing for one run, when asked (`--explain`): started before its loops,
/// drained by the runner during them (from [`RunTrace::running`]), joined with the gaps after.
pub(crate) enum RunTrace<'r> {
    /// Not asked.
    Off,
    /// Asked, but not possible here: why.
    Unavailable(String),
    /// Recording; the counter the loops read, for the lengths.
    On(Box<Tracing<'r>>, Timebase),
}

/// The counter a loop's gaps are read in, and so the trace's clock: the gaps and the events
/// then compare without conversion.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Timebase {
    /// The TSC (`rdtsc`; the jitter and timer loops), traced in `x86-tsc`.
    Tsc(Tsc),
    /// `CLOCK_MONOTONIC` in ns (net's round trips), traced in `mono`.
    Mono,
}

impl Timebase {
    /// The trace clock of this counter.
    pub(crate) fn clock(self) -> TraceClock {
        match self {
            Timebase::Tsc(_) => TraceClock::X86Tsc,
            Timebase::Mono => TraceClock::Mono,
        }
    }

    /// `ns` in the counter's unit (rounded up).
    pub(crate) fn ticks(self, ns: u64) -> u64 {
        match self {
            Timebase::Tsc(tsc) => tsc.ticks(ns),
            Timebase::Mono => ns,
        }
    }

    /// `ticks` of the counter in ns.
    pub(crate) fn ns(self, ticks: u64) -> u64 {
        match self {
            Timebase::Tsc(tsc) => tsc.ns(ticks),
            Timebase::Mono => ticks,
        }
    }
}

impl<'r> RunTrace<'r> {
    /// Starts tracing `cpus` in the clock of `timebase`, the counter the loops read, for a
    /// run of `duration` when wanted (`None`: not wanted).
    pub(crate) fn start(
        root: &'r SysRoot,
        cpus: &CpuSet,
        duration: Duration,
        timebase: Option<Timebase>,
    ) -> Self {
        let Some(timebase) = timebase else {
            return RunTrace::Off;
        };
        // SIGTERM ends the run as Ctrl-C does, so that the session ends and is undone.
        crate::measure::runner::harness::catch_terminate();
        match Tracing::start(root, cpus, timebase.clock(), duration) {
            Ok(tracing) => RunTrace::On(Box::new(tracing), timebase),
            Err(reason) => RunTrace::Unavailable(reason.to_string()),
        }
    }

    /// The session to drain during the run, when one records.
    pub(crate) fn running(&self) -> Option<&Tracing<'r>> {
        match self {
            RunTrace::On(tracing, _) => Some(tracing),
            _ => None,
        }
    }

    /// What a loop engine's run calls while this trace records (the `drain` of
    /// [`run_loops`](crate::measure::runner::threads::run_loops)): read the buffers every
    /// [`tracefs::DRAIN_EVERY`].
    pub(crate) fn drain(&self) -> Option<(Duration, impl Fn() + Send + '_)> {
        self.running()
            .map(|tracing| (tracefs::DRAIN_EVERY, move || tracing.drain()))
    }

    /// Ends the trace and joins it with each CPU's gaps (`gaps`, in ticks of the counter it
    /// is given), with the cross-check of the `no kernel event` gaps from the run's
    /// `attribution` on `machine`; `None` when no explanation was asked.
    pub(crate) fn explain(
        self,
        machine: &Machine,
        attribution: &[CpuAttribution],
        gaps: impl FnOnce(Timebase) -> Vec<CpuGaps>,
    ) -> Option<Explanation> {
        match self {
            RunTrace::Off => None,
            RunTrace::Unavailable(reason) => Some(Explanation::unavailable(&reason)),
            RunTrace::On(tracing, timebase) => {
                let mut explained = explanation(
                    &tracing.finish(),
                    timebase.clock(),
                    &gaps(timebase),
                    timebase.ticks(IPI_WINDOW_NS),
                    &|ticks| timebase.ns(ticks),
                );
                let conditions: Vec<(u32, &CpuConditions)> =
                    attribution.iter().map(|a| (a.cpu, &a.conditions)).collect();
                explained.cross_check(
                    machine.hypervisor.as_ref().map(|h| h.vendor.as_str()),
                    &conditions,
                    &machine.power.cpus,
                );
                Some(explained)
            }
        }
    }
}
/// Joins each CPU's gaps with what `capture` recorded. `ipi_window` and `to_ns` are in the
/// trace clock (see [`explain::explain_cpu`]).
pub(crate) fn explanation(
    capture: &Capture,
    clock: TraceClock,
    cpus: &[CpuGaps],
    ipi_window: u64,
    to_ns: &dyn Fn(u64) -> u64,
) -> Explanation {
    let none = Vec::new();
    let explained: Vec<CpuCauses> = cpus
        .iter()
        .map(|c| {
            // A thread woken by a message is woken where the message arrived: any CPU's.
            let wakeups = match c.waits {
                Waits::Message(_) => wakeups_of(capture, c.loop_tid),
                _ => Vec::new(),
            };
            let events = capture
                .events
                .iter()
                .find(|(cpu, _)| *cpu == c.cpu)
                .map_or(&none, |(_, e)| e);
            let trace = CpuTrace {
                cpu: c.cpu,
                loop_tid: c.loop_tid,
                events,
                lost: capture
                    .lost
                    .iter()
                    .filter(|(cpu, ..)| *cpu == c.cpu)
                    .map(|&(_, from, to)| (from, to))
                    .collect(),
                offline_from: capture
                    .offline
                    .iter()
                    .find(|(cpu, _)| *cpu == c.cpu)
                    .map(|&(_, from)| from),
                sends_lost: &capture.sent_lost,
                run_start: c.start,
                waits: &c.waits,
                wakeups: &wakeups,
            };
            explain::explain_cpu(
                &trace,
                &c.gaps,
                &capture.sent,
                ipi_window,
                &capture.symbols,
                to_ns,
            )
        })
        .collect();
    let mut notes = capture.notes.clone();
    notes.extend(explained.iter().flat_map(unmatched_notes));
    Explanation {
        traced: true,
        clock: clock.name(),
        cpus: explained,
        lost_events: capture.lost_events,
        notes,
        slept: cpus.iter().any(|c| c.waits != Waits::Spins),
    }
}

/// When task `tid` was woken, on any CPU of `capture`, in time order.
fn wakeups_of(capture: &Capture, tid: u32) -> Vec<u64> {
    let mut at: Vec<u64> = (capture.events.iter())
        .flat_map(|(_, events)| events)
        .filter(|e| e.what == events::What::Wakeup(tid))
        .map(|e| e.ts)
        .collect();
    at.sort_unstable();
    at
}

/// What a CPU's IPIs without a named sender say, one sentence each.
fn unmatched_notes(cpu: &CpuCauses) -> Vec<String> {
    let window_ms = IPI_WINDOW_NS as f64 / 1e6;
    let mut notes = Vec::new();
    let unmatched = cpu.unmatched_ipis;
    if unmatched.sent_after > 0 {
        notes.push(format!(
            "CPU {}: {} IPI(s) arrived before the only send to them traced within {window_ms} ms \
             (the CPUs' trace clocks disagree): their senders are not named",
            cpu.cpu, unmatched.sent_after
        ));
    }
    if unmatched.far_before > 0 {
        notes.push(format!(
            "CPU {}: {} IPI(s) arrived more than {window_ms} ms after the last send to them \
             traced (a send not traced, a late delivery or clocks that far apart): their \
             senders are not named",
            cpu.cpu, unmatched.far_before
        ));
    }
    if unmatched.sends_lost > 0 {
        notes.push(format!(
            "CPU {}: {} IPI(s) arrived within {window_ms} ms after the IPI senders' trace lost \
             events (their send may be the one lost): their senders are not named",
            cpu.cpu, unmatched.sends_lost
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::events::{self, Event, IpiSend, Line, Symbols, Vector, What};
    use super::explain::{Class, CpuTrace, TraceGap, Waits, explain_cpu};
    use super::{Capture, CpuGaps, Explanation, TraceClock, explanation};
    use crate::measure::runner::segments::Merge;

    fn ev(ts: u64, what: What) -> Event {
        Event { ts, what }
    }

    /// The explanation of the gaps (start, end) of CPU `cpu`'s loop (thread 100, its run
    /// started at `start`) in `capture`, senders looked for within `window`; an x86 TSC clock
    /// whose ticks are read as ns.
    pub(super) fn explain_loop(
        capture: &Capture,
        cpu: u32,
        start: u64,
        gaps: &[(u64, u64)],
        waits: Waits,
        window: u64,
    ) -> Explanation {
        let gaps = CpuGaps {
            cpu,
            loop_tid: 100,
            start,
            gaps: gaps
                .iter()
                .map(|&(start, end)| TraceGap { start, end })
                .collect(),
            waits,
        };
        explanation(capture, TraceClock::X86Tsc, &[gaps], window, &|t| t)
    }

    /// Sends of an IPI to CPU 1 by membarrier (pid 55) on CPU 0 from
    /// `smp_call_function_many_cond`, its names interned in `s`: the send at a time.
    pub(super) fn membarrier_sends(s: &mut Symbols) -> impl Fn(u64) -> IpiSend + use<> {
        let comm = s.intern("membarrier");
        let callsite = s.intern("smp_call_function_many_cond+0x1/0x2");
        move |ts| IpiSend {
            ts,
            cpu: 0,
            pid: 55,
            comm,
            callsite,
            targets: vec![1],
            kind: None,
        }
    }

    /// The first CPU's causes as (class, source), sorted.
    fn sorted_sources(out: &Explanation) -> Vec<(Class, String)> {
        let mut got: Vec<(Class, String)> = out.cpus[0]
            .causes
            .iter()
            .map(|c| (c.cause.class, c.cause.source.clone()))
            .collect();
        got.sort();
        got
    }

    /// The figures beside `no kernel event`, read from a fixture tree as a run reads them:
    /// the vCPU's steal in a VM, the SMI count of MSR 0x34 on bare metal (through the
    /// SysRoot), or why it could not be read; a later segment's figure adds up.
    #[test]
    fn no_kernel_event_is_set_beside_steal_in_a_vm_and_smis_on_bare_metal() {
        use super::explain::{CpuCauses, CrossCheck, IdleExit};
        use crate::machine::power::{CpuPower, IdleState, ResumeLatency};
        use crate::machine::{Avail, Warnings};
        use crate::measure::runner::conditions;
        use crate::test_tree::TestTree;
        let tree = TestTree::empty();
        let stat = |steal: u64| {
            format!("cpu  1 0 1 9 0 0 0 {steal} 0 0\ncpu1 1 0 1 9 0 0 0 {steal} 0 0\n")
        };
        let msr = |smis: u64| {
            let mut bytes = vec![0u8; 0x100];
            bytes[0x34..0x3c].copy_from_slice(&smis.to_le_bytes());
            bytes
        };
        tree.write("proc/stat", stat(10));
        tree.write("dev/cpu/1/msr", msr(5));
        let root = tree.root();
        let mut warnings = Warnings::default();
        let before = conditions::read(&root, &[1], &mut warnings);
        tree.write("proc/stat", stat(13));
        tree.write("dev/cpu/1/msr", msr(8));
        let after = conditions::read(&root, &[1], &mut warnings);
        let during = conditions::between(&[1], &before, &after);
        let one = || Explanation {
            traced: true,
            clock: "x86-tsc",
            cpus: vec![CpuCauses {
                cpu: 1,
                gaps: 0,
                causes: Vec::new(),
                spikes: Vec::new(),
                cross_check: None,
                unmatched_ipis: Default::default(),
            }],
            lost_events: 0,
            notes: Vec::new(),
            slept: false,
        };
        let mut vm = one();
        vm.cross_check(Some("KVM"), &[(1, &during[0])], &[]);
        assert_eq!(
            vm.cpus[0].cross_check,
            Some(CrossCheck::Steal {
                hypervisor: "KVM".into(),
                steal_ns: Avail::Available(30_000_000),
            })
        );
        let firmware = |smis: u64, deepest_idle| {
            Some(CrossCheck::Firmware {
                smis: Avail::Available(smis),
                deepest_idle,
            })
        };
        // CPU 1's idle states: C6 (133 µs) disabled, C1E (10 µs) the deepest it may enter.
        let state = |index, name: &str, latency_us, disabled| IdleState {
            index,
            name: Avail::Available(name.into()),
            desc: Avail::missing("not read"),
            latency_us: Avail::Available(latency_us),
            residency_us: Avail::missing("not read"),
            disabled: Avail::Available(disabled),
        };
        let power = [CpuPower {
            cpu: 1,
            policy: None,
            idle_states: Avail::Available(vec![
                state(0, "POLL", 0, false),
                state(1, "C1", 2, false),
                state(2, "C1E", 10, false),
                state(3, "C6", 133, true),
            ]),
            resume_latency: Avail::Available(ResumeLatency::NoConstraint),
        }];
        let mut metal = one();
        metal.cross_check(None, &[(1, &during[0])], &power);
        // The busy loop never idles: no idle state beside its gaps.
        assert_eq!(metal.cpus[0].cross_check, firmware(3, None));
        let mut later = one();
        later.cross_check(None, &[(1, &during[0])], &power);
        metal.merge(later);
        assert_eq!(metal.cpus[0].cross_check, firmware(6, None));
        // The timer's loop slept: its wake-ups may wait for C1E's exit, not C6's.
        let mut timer = one();
        timer.slept = true;
        timer.cross_check(None, &[(1, &during[0])], &power);
        let c1e = IdleExit {
            name: "C1E".into(),
            exit_latency_us: 10,
        };
        assert_eq!(timer.cpus[0].cross_check, firmware(3, Some(c1e)));
        // Without the msr device: unreadable, with what to do.
        tree.remove("dev/cpu/1/msr");
        let gone = conditions::read(&root, &[1], &mut warnings);
        let during = conditions::between(&[1], &gone, &gone);
        let mut unreadable = one();
        unreadable.cross_check(None, &[(1, &during[0])], &power);
        let Some(CrossCheck::Firmware { smis, .. }) = &unreadable.cpus[0].cross_check else {
            panic!("{:?}", unreadable.cpus[0].cross_check)
        };
        assert!(smis.reason().unwrap().contains("modprobe msr"), "{smis:?}");
    }

    /// The timer loop (pid 100) is late six times: by its own wake-up only (the hypervisor
    /// delayed the interrupt), by the tick's hrtimer in the same interrupt, by another task
    /// that ran first, by a device IRQ before its timer, by the RCU softirq on the way out
    /// of its interrupt, by a task already running at its deadline that kept the CPU after
    /// waking it until it slept, and (not that task's doing) by the kernel's switch from a
    /// task it preempted. Its own wake-up is never the cause.
    #[test]
    fn a_late_wake_up_is_not_its_own_cause() {
        let mut s = Symbols::default();
        let wake = s.intern("hrtimer_wakeup");
        let tick = s.intern("tick_nohz_handler");
        let spin = s.intern_task(55, "kat-spin");
        s.intern_task(56, "kat-spin");
        let me = s.intern_task(100, "lowlat");
        let nvme = s.intern("nvme0q1");
        let own = |at: u64| {
            vec![
                ev(at, What::Vector(Vector::LocalTimer)),
                ev(at + 1, What::Hrtimer(wake)),
                ev(at + 2, What::Wakeup(100)),
            ]
        };
        let switch = |at: u64, pid, comm, prev, prev_blocked| {
            ev(
                at,
                What::Switch {
                    pid,
                    comm,
                    prev,
                    prev_blocked,
                },
            )
        };
        // The loop switched in from idle, as from a task preempted by it.
        let switch_in = |at: u64| switch(at, 100, me, 0, false);
        let mut events = Vec::new();
        // 1: [100, 140]: only its own wake-up, late.
        events.extend(own(130));
        events.push(switch_in(135));
        // 2: [200, 240]: the tick expired in the same interrupt, first.
        events.push(ev(205, What::Vector(Vector::LocalTimer)));
        events.push(ev(206, What::Hrtimer(tick)));
        events.push(ev(207, What::Hrtimer(wake)));
        events.push(ev(208, What::Wakeup(100)));
        events.push(switch_in(230));
        // 3: [300, 340]: woken on time, but kat-spin (higher priority) ran first.
        events.extend(own(301));
        events.push(switch(304, 55, spin, 0, false));
        events.push(switch(336, 100, me, 55, true));
        // 4: [400, 440]: a device IRQ ran at the deadline, then the timer.
        events.push(ev(
            401,
            What::Irq {
                irq: 42,
                name: nvme,
            },
        ));
        events.extend(own(420));
        events.push(switch_in(430));
        // 5: [500, 540]: the RCU softirq after its interrupt.
        events.extend(own(501));
        events.push(ev(504, What::Softirq(9)));
        events.push(switch_in(530));
        // 6: [600, 640]: kat-spin ran from before the deadline until it slept, well after
        // the wake-up; it came out of idle, which traced no switch (as on Linux 6.18).
        events.extend(own(605));
        events.push(switch(636, 100, me, 55, true));
        // 7: [700, 740]: a task preempted at once by the wake-up: the wait was the kernel's.
        events.push(switch(650, 56, spin, 0, false));
        events.extend(own(705));
        events.push(switch(736, 100, me, 56, false));
        let capture = Capture {
            symbols: s,
            events: vec![(1, events)],
            ..Capture::default()
        };
        let gaps: Vec<_> = (1..=7).map(|i| (i * 100, i * 100 + 40)).collect();
        let out = explain_loop(&capture, 1, 0, &gaps, Waits::Timer, 10);
        assert_eq!(
            sorted_sources(&out),
            vec![
                (Class::Tick, "tick_nohz_handler".into()),
                (Class::DeviceIrq, "42 nvme0q1".into()),
                (Class::Task, "kat-spin".into()),
                (Class::Task, "kat-spin (running when woken)".into()),
                (Class::Rcu, "RCU softirq".into()),
                (Class::NoKernelEvent, "no kernel event".into()),
            ]
        );
        let hypervisor = out.cpus[0]
            .causes
            .iter()
            .find(|c| c.cause.class == Class::NoKernelEvent);
        assert_eq!(hypervisor.unwrap().count, 2);
        // Its no-kernel-event gaps are read as a sleeping loop's.
        assert!(out.slept);
        assert_eq!(out.cpus[0].gaps, 7);
    }

    /// The loop thread of the recorded run (tests/data/explain/README.md).
    const LOOP_TID: u32 = 11947;

    /// The recorded trace of CPU 1 on this project's guest: every line of the set parses, and
    /// the gaps taken from the trace itself (the loop switched out; an interrupt while it ran)
    /// are each given one cause, naming the planted sleeper and the tick.
    #[test]
    fn a_recorded_trace_parses_and_explains() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/explain/cpu1-trace_pipe.txt"
        ))
        .unwrap();
        let mut symbols = Symbols::default();
        let mut events = Vec::new();
        for line in text.lines() {
            match events::parse(line, &mut symbols) {
                Line::Event(e) => events.push(e),
                Line::Other => assert!(
                    line.contains(" tlb_flush: ") && !line.contains("remote shootdown"),
                    "not parsed: {line}"
                ),
                other => panic!("{other:?} from {line}"),
            }
        }
        // 220 TLB flushes, 11 of them remote shootdowns (the only ones kept).
        assert_eq!(events.len(), 1200 - 220 + 11);
        // Gaps: the loop switched out until it was switched back in; an interrupt entry while
        // it ran opens a gap of 19 µs (50,000 ticks) from 100 ticks before it, as long as the
        // loop's own gap would be.
        let mut gaps = Vec::new();
        let mut out_since = None;
        for e in &events {
            match e.what {
                What::Switch { pid, .. } if pid == LOOP_TID => {
                    if let Some(start) = out_since.take() {
                        gaps.push(TraceGap { start, end: e.ts });
                    }
                }
                // An interrupt that ends in a switch away is one gap with it.
                What::Switch { .. } if out_since.is_none() => {
                    out_since = match gaps.last() {
                        Some(g) if g.end >= e.ts => gaps.pop().map(|g| g.start),
                        _ => Some(e.ts - 1),
                    }
                }
                What::Vector(_) | What::Irq { .. }
                    if out_since.is_none()
                        && gaps.last().is_none_or(|g: &TraceGap| g.end < e.ts - 100) =>
                {
                    gaps.push(TraceGap {
                        start: e.ts - 100,
                        end: e.ts + 50_000,
                    });
                }
                _ => {}
            }
        }
        gaps.sort_by_key(|g| g.start);
        let trace = CpuTrace {
            cpu: 1,
            loop_tid: LOOP_TID,
            events: &events,
            lost: Vec::new(),
            offline_from: None,
            sends_lost: &[],
            run_start: events[0].ts,
            waits: &Waits::Spins,
            wakeups: &[],
        };
        let out = explain_cpu(&trace, &gaps, &[], 2_596_122, &symbols, &|t| {
            t * 1000 / 2596
        });
        assert_eq!(
            out.causes.iter().map(|c| c.count).sum::<u64>(),
            gaps.len() as u64
        );
        let count = |class: Class, word: &str| -> u64 {
            out.causes
                .iter()
                .filter(|c| c.cause.class == class && c.cause.source.contains(word))
                .map(|c| c.count)
                .sum()
        };
        // The sleeper woke 40-odd times in these 1,200 lines (its switches in, minus the ones
        // that were not from the loop).
        assert!(
            count(Class::Task, "app-poller (woken by hrtimer_wakeup)") >= 30,
            "{:#?}",
            out.causes
        );
        assert!(
            count(Class::Tick, "tick_nohz_handler") >= 50,
            "{:#?}",
            out.causes
        );
        assert_eq!(count(Class::Unknown, ""), 0);
    }

    /// IPIs whose senders the join did not name for a clock skew, or for a send older than
    /// the window, are said in the notes with their count, per CPU.
    #[test]
    fn unnamed_senders_are_counted_in_the_notes() {
        let mut s = Symbols::default();
        let send = membarrier_sends(&mut s);
        let capture = Capture {
            symbols: s,
            events: vec![(
                1,
                vec![
                    ev(105, What::Vector(Vector::CallFunction)),
                    ev(205, What::Vector(Vector::CallFunction)),
                ],
            )],
            sent: vec![send(110), send(150)],
            ..Capture::default()
        };
        // A window of 40: the first IPI's only send is 5 after it, the second's 55 before.
        let out = explain_loop(&capture, 1, 0, &[(100, 120), (200, 220)], Waits::Spins, 40);
        assert_eq!(
            out.notes,
            vec![
                "CPU 1: 1 IPI(s) arrived before the only send to them traced within 1 ms (the \
                 CPUs' trace clocks disagree): their senders are not named",
                "CPU 1: 1 IPI(s) arrived more than 1 ms after the last send to them traced (a \
                 send not traced, a late delivery or clocks that far apart): their senders are \
                 not named"
            ]
        );
    }

    /// A recorded trace of another architecture and kernel: 401 consecutive lines of a 32-bit
    /// arm Raspberry Pi's `trace` (four flag characters, a function tracer's lines and stack
    /// traces between the events; tests/data/explain/README.md). Every line of an event of the
    /// set parses and nothing else does; on each CPU, the gaps taken around each interrupt
    /// are given one cause each: the generic timer (`irq=162 name=arch_timer`) the local
    /// timer, never a device IRQ to move; the USB and MMC controllers device IRQs.
    #[test]
    fn a_recorded_arm_trace_of_an_older_kernel_parses_and_explains() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/explain/rpi-arm32-trace.txt"
        ))
        .unwrap();
        let set = [
            ": irq_handler_entry: ",
            ": softirq_entry: ",
            ": sched_switch: ",
            ": sched_wakeup: ",
        ];
        let mut symbols = Symbols::default();
        let mut by_cpu: Vec<(u32, Vec<Event>)> = Vec::new();
        for line in text.lines() {
            let parsed = events::parse(line, &mut symbols);
            let in_set = set.iter().any(|event| line.contains(event));
            match parsed {
                Line::Event(e) => {
                    assert!(in_set, "parsed, not of the set: {line}");
                    let cpu: u32 = line[line.find('[').unwrap() + 1..line.find(']').unwrap()]
                        .parse()
                        .unwrap();
                    match by_cpu.iter_mut().find(|(c, _)| *c == cpu) {
                        Some((_, events)) => events.push(e),
                        None => by_cpu.push((cpu, vec![e])),
                    }
                }
                Line::Other => assert!(!in_set, "not parsed: {line}"),
                other => panic!("{other:?} from {line}"),
            }
        }
        let all: Vec<&Event> = by_cpu.iter().flat_map(|(_, e)| e).collect();
        // 29 IRQ handlers (9 of them the generic timer), 18 softirqs, 7 switches, 5 wake-ups.
        assert_eq!(all.len(), 29 + 18 + 7 + 5);
        let timers = all
            .iter()
            .filter(|e| e.what == What::Vector(Vector::LocalTimer))
            .count();
        assert_eq!(timers, 9);
        let mut sources = Vec::new();
        for (cpu, events) in &by_cpu {
            // A gap from 1 µs before each interrupt to 5 µs after (timestamps in µs).
            let mut gaps: Vec<TraceGap> = Vec::new();
            for e in events {
                if matches!(e.what, What::Vector(_) | What::Irq { .. })
                    && gaps.last().is_none_or(|g| g.end < e.ts - 1_000)
                {
                    gaps.push(TraceGap {
                        start: e.ts - 1_000,
                        end: e.ts + 5_000,
                    });
                }
            }
            let trace = CpuTrace {
                cpu: *cpu,
                loop_tid: 1,
                events,
                lost: Vec::new(),
                offline_from: None,
                sends_lost: &[],
                run_start: events[0].ts,
                waits: &Waits::Spins,
                wakeups: &[],
            };
            let out = explain_cpu(&trace, &gaps, &[], 1_000_000, &symbols, &|t| t);
            assert_eq!(
                out.causes.iter().map(|c| c.count).sum::<u64>(),
                gaps.len() as u64
            );
            for c in out.causes {
                sources.push((c.cause.class, c.cause.source, c.count));
            }
        }
        let count = |class: Class, source: &str| -> u64 {
            sources
                .iter()
                .filter(|(c, s, _)| *c == class && s == source)
                .map(|(.., n)| n)
                .sum()
        };
        // No hrtimer event in this trace: the timer's gaps are the local timer's.
        assert_eq!(count(Class::Tick, "local timer"), 9);
        assert!(count(Class::DeviceIrq, "56 dwc_otg") >= 5, "{sources:#?}");
        assert!(count(Class::DeviceIrq, "86 mmc1") >= 1, "{sources:#?}");
        assert!(
            sources.iter().all(|(_, s, _)| !s.contains("arch_timer")),
            "{sources:#?}"
        );
    }

    /// A kernel without `ipi_send_cpu` (arm64 before 6.6), from its lines to the cause: the
    /// sender's `ipi_raise` on CPU 0, then on CPU 7 the `IPI` interrupt and its `ipi_entry`.
    /// The lines have the shape such a kernel prints (the events and fields of a public
    /// report of one, the comm-pid column added); no recorded trace of one could be cited
    /// (tests/data/explain/README.md).
    #[test]
    fn without_ipi_send_cpu_the_sender_comes_from_ipi_raise_lines() {
        let lines = [
            "       sugov:4-491     [000] d..4.   154.892148: ipi_raise: target_mask=00000000,00000080 (Function call interrupts)",
            "          <idle>-0     [007] d.h1.   154.892211: irq_handler_entry: irq=2 name=IPI",
            "          <idle>-0     [007] d.h1.   154.892211: ipi_entry: (Function call interrupts)",
            "          <idle>-0     [007] d.h2.   154.892213: sched_wakeup: comm=sugov:4 pid=491 prio=-1 target_cpu=007",
            "          <idle>-0     [000] d..4.   154.900000: ipi_raise: target_mask=00000000,00000080 (Rescheduling interrupts)",
            "          <idle>-0     [007] d.h1.   154.900040: irq_handler_entry: irq=2 name=IPI",
            "          <idle>-0     [007] d.h1.   154.900040: ipi_entry: (Rescheduling interrupts)",
        ];
        let mut capture = Capture::default();
        let mut events = Vec::new();
        for line in lines {
            match events::parse(line, &mut capture.symbols) {
                Line::Event(e) => events.push(e),
                Line::Sent(sent) => capture.sent.push(sent),
                other => panic!("{other:?} from {line}"),
            }
        }
        capture.events = vec![(7, events)];
        let gaps = [
            (154_892_200_000, 154_892_220_000),
            (154_900_030_000, 154_900_050_000),
        ];
        // A ns clock: the window is 1 ms.
        let out = explain_loop(&capture, 7, 154_000_000_000, &gaps, Waits::Spins, 1_000_000);
        assert_eq!(
            sorted_sources(&out),
            vec![
                (Class::Ipi, "function call from sugov:4 on CPU 0".into()),
                (Class::Ipi, "reschedule from <idle> on CPU 0".into()),
            ]
        );
        assert!(out.notes.is_empty(), "{:?}", out.notes);
    }
}
