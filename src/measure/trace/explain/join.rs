//! The join: each gap of a CPU with the events traced on that CPU inside it, a sleeping
//! loop's own wake-ups set apart, each gap classified ([`super::classify`]) and counted by
//! cause.

use std::collections::BTreeMap;

use super::classify::{Gap, Join, classify};
use super::{
    Cause, CauseStats, Class, CpuCauses, CpuTrace, SPIKES, Spike, TraceGap, UnmatchedIpis, Waits,
    Woken, round_trip,
};
use crate::measure::trace::events::{Event, IpiSend, Symbols, Vector, What};

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
pub(super) fn own_wakeups(
    events: &[Event],
    tid: u32,
    symbols: &Symbols,
) -> (Vec<Event>, Vec<Woken>) {
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
            back: None,
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
    let to_me: Vec<&IpiSend> = sent
        .iter()
        .filter(|s| s.targets.contains(&trace.cpu))
        .collect();
    let (filtered, woken) = match trace.waits {
        Waits::Spins => (Vec::new(), Vec::new()),
        Waits::Timer => own_wakeups(ordered, trace.loop_tid, symbols),
        Waits::Message(threads) => {
            round_trip::own_path(ordered, trace, threads, &to_me, ipi_window, symbols)
        }
    };
    let events = match trace.waits {
        Waits::Spins => ordered,
        _ => &filtered[..],
    };
    let kept: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.what, What::TickKept(_)))
        .collect();
    let join = Join {
        trace,
        kept: &kept,
        to_me: &to_me,
        ipi_window,
        symbols,
    };
    for (index, gap) in gaps.iter().enumerate() {
        let from = events.partition_point(|e| e.ts < gap.start);
        // A gap whose end comes before its start (a garbled reading) holds no event.
        let to = events.partition_point(|e| e.ts <= gap.end).max(from);
        let inside = &events[from..to];
        // The first wait that reaches into the gap (a wait known to end before it does not).
        let woke = woken
            .get(woken.partition_point(|w| w.back.unwrap_or(w.ts) < gap.start))
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
            let gap = Gap {
                span: gap,
                inside,
                woke,
            };
            let (cause, id) = classify(&join, &gap, &mut unmatched);
            match trace.waits {
                Waits::Message(_) => (round_trip::mark_network_receive(cause), id),
                _ => (cause, id),
            }
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
