//! The join and the classification on hand-made traces.

use super::join::own_wakeups;
use super::*;
use crate::measure::trace::events::{Event, IpiSend, Sym, Symbols, Vector, What};
use crate::measure::trace::tests::membarrier_sends;

fn ev(ts: u64, what: What) -> Event {
    Event { ts, what }
}

/// At `ts`, `prev` switched out without blocking for `pid` (`comm`).
fn switch(ts: u64, pid: u32, comm: Sym, prev: u32) -> Event {
    ev(
        ts,
        What::Switch {
            pid,
            comm,
            prev,
            prev_blocked: false,
        },
    )
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
        waits: &Waits::Spins,
        wakeups: &[],
    }
}

/// The causes as (class, source, count), sorted.
fn sorted_classes(out: &CpuCauses) -> Vec<(Class, String, u64)> {
    let mut got: Vec<_> = out
        .causes
        .iter()
        .map(|c| (c.cause.class, c.cause.source.clone(), c.count))
        .collect();
    got.sort();
    got
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
        switch(407, 77, cyclic, 100),
        switch(408, 100, loop_comm, 77),
        // 5: vmstat_update in a kworker.
        switch(505, 9, kworker, 100),
        ev(506, What::Work(vmstat)),
        switch(507, 100, loop_comm, 9),
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
    assert_eq!(
        sorted_classes(&out),
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
    let switch = |ts, pid, comm| switch(ts, pid, comm, 100);
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
    assert_eq!(
        sorted_classes(&out),
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
    let send = membarrier_sends(&mut s);
    let events = [
        ev(105, What::Vector(Vector::CallFunction)),
        ev(205, What::Vector(Vector::CallFunctionSingle)),
        ev(206, What::RemoteTlbFlush),
        ev(305, What::Vector(Vector::Reschedule)),
    ];
    let sent = [
        send(101),
        // To another CPU: not this one's sender.
        IpiSend {
            pid: 56,
            targets: vec![2],
            ..send(203)
        },
    ];
    let gaps = [gap(100, 110), gap(200, 210), gap(300, 310)];
    let out = explain_cpu(&trace(&events, vec![]), &gaps, &sent, 50, &s, &|t| t);
    assert_eq!(
        sorted_classes(&out),
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
    assert_eq!(
        sorted_classes(&out),
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
    let send = membarrier_sends(&mut s);
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
    assert_eq!(
        sorted_classes(&out),
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
    let send = membarrier_sends(&mut s);
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
    assert_eq!(
        sorted_classes(&out),
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
    assert_eq!(
        sorted_classes(&out),
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
    assert_eq!(
        sorted_classes(&out),
        vec![
            (Class::Tick, "tick_nohz_handler".into(), 1),
            (Class::Unknown, "events lost".into(), 2),
        ]
    );
}
