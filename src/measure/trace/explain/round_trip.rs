//! A ping-pong's own path on one of its CPUs, set apart from the causes of its slow round
//! trips. On loopback and veth a message's way, as Linux 6.18 traces it on this project's
//! guest, is, on the sender's CPU: the send's `NET_RX` softirq run in the sending thread
//! (no interrupt before it), the wake-up of the other side (`sched_wakeup`, traced here, and
//! a reschedule IPI sent by the sending thread), then the sender's switch out as it waits
//! for the answer; and on the receiver's CPU: that reschedule IPI and the switch to the
//! woken thread. None of it is a cause, nor is a task that ran on the CPU while the run's
//! thread slept and was not yet woken: the CPU was free for it. What is left in a slow
//! round trip is what came in the way: an interrupt, a softirq after a device's interrupt,
//! the tick, a task that preempted the run's thread or that ran after its wake-up.
//!
//! Network receive that is not the round trip's own send (a NIC queue's interrupt, or a
//! NET_RX softirq that ran while the run's thread waited: another CPU's traffic steered
//! here, or the answer's own receive through a NIC) stays a cause, marked `(network
//! receive)` ([`mark_network_receive`]): busy polling and the NIC's interrupt delay are what
//! address it, and the cause's fix says so (the `net_rx` row of the audit's cause table).
//!
//! The task on the CPU when the thread was woken is kept beside the wake-up: the
//! classification names it when the thread waited longer for it than for its wake-up. The
//! threads run at normal priority, so a task preempted by the wake-up may still have held
//! the CPU for its slice (unlike the timer's SCHED_FIFO loop, see [`super::join`]).

use super::classify::{Sender, sender_of};
use super::{Cause, Class, CpuTrace, SOFTIRQS, Woken};
use crate::machine::irq::classify::{IrqClass, NETWORK_RECEIVE, classify};
use crate::measure::trace::events::{Event, IpiSend, Symbols, Vector, What};

/// The softirq vector of network receive.
const NET_RX: u8 = 3;

/// `cause`, of a ping-pong's slow round trip, marked as network receive when it is: the
/// interrupt of a NIC queue (`25 virtio0-input.0`), or a NET_RX softirq alone. The round
/// trip's own send path never gets here ([`own_path`] left it out).
pub(super) fn mark_network_receive(mut cause: Cause) -> Cause {
    let receive = match cause.class {
        Class::DeviceIrq => {
            let name = cause.source.split_once(' ').map_or("", |(_, name)| name);
            matches!(classify(&[name]), IrqClass::NicQueue { .. })
        }
        Class::Softirq => cause.source == SOFTIRQS[usize::from(NET_RX)],
        _ => false,
    };
    if receive {
        cause.source.push_str(NETWORK_RECEIVE);
    }
    cause
}

/// Where the run's thread of this CPU stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thread {
    /// On the CPU, or preempted from it (a task that runs now came in its way).
    Running,
    /// Waiting for its message, not yet woken: the CPU is free for others.
    Asleep,
    /// Woken, not yet back on the CPU: what runs now delays it.
    Woken,
}

/// `events` (one CPU's, in time order) without the path of the run's messages (`threads`
/// are the run's threads; `trace.loop_tid` the one of this CPU, woken at `trace.wakeups`),
/// and the thread's wake-ups with the task each waited for. `to_me` are the IPIs sent to
/// this CPU; one is matched with its send as the classification matches it.
pub(super) fn own_path(
    events: &[Event],
    trace: &CpuTrace<'_>,
    threads: &[u32],
    to_me: &[&IpiSend],
    ipi_window: u64,
    symbols: &Symbols,
) -> (Vec<Event>, Vec<Woken>) {
    let tid = trace.loop_tid;
    let ours = |pid: u32| pid == tid || threads.contains(&pid);
    let mut kept = Vec::with_capacity(events.len());
    let mut woken: Vec<Woken> = Vec::new();
    let mut waiting: Option<usize> = None;
    let mut state = Thread::Running;
    let mut next_wakeup = 0;
    let mut after_entry = false;
    for event in events {
        while let Some(&at) = trace.wakeups.get(next_wakeup)
            && at <= event.ts
        {
            next_wakeup += 1;
            if state == Thread::Asleep {
                state = Thread::Woken;
                waiting = Some(woken.len());
                woken.push(Woken {
                    ts: at,
                    running: None,
                    back: None,
                });
            }
        }
        let own = match event.what {
            What::Wakeup(pid) => ours(pid),
            What::Switch {
                pid,
                prev,
                prev_blocked,
                ..
            } => {
                if ours(pid) {
                    if pid == tid
                        && let Some(w) = waiting.take().and_then(|i| woken.get_mut(i))
                    {
                        w.back = Some(event.ts);
                        if prev != 0 && !ours(prev) {
                            w.running = symbols.comm(prev).map(|comm| (prev, comm));
                        }
                    }
                    waiting = None;
                    state = Thread::Running;
                    true
                } else if ours(prev) && prev_blocked {
                    state = Thread::Asleep;
                    true
                } else if prev == tid {
                    // Preempted: it waits from now until it is back, a wait like a wake-up's
                    // (a round trip that starts meanwhile waits for the task too).
                    waiting = Some(woken.len());
                    woken.push(Woken {
                        ts: event.ts,
                        running: None,
                        back: None,
                    });
                    false
                } else {
                    // Another task while the thread slept is the CPU's own business.
                    state == Thread::Asleep
                }
            }
            What::Softirq(NET_RX) => state == Thread::Running && !after_entry,
            What::Vector(
                vector @ (Vector::Reschedule | Vector::CallFunctionSingle | Vector::CallFunction),
            ) => matches!(
                sender_of(event.ts, vector, to_me, ipi_window, trace.sends_lost),
                Sender::Named(send) if ours(send.pid)
            ),
            _ => false,
        };
        after_entry = matches!(
            event.what,
            What::Irq { .. } | What::Vector(_) | What::Nmi(_)
        );
        if !own {
            kept.push(*event);
        }
    }
    (kept, woken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::trace::events::Sym;
    use crate::measure::trace::explain::{Class, CpuCauses, TraceGap, Waits, explain_cpu};

    const CLIENT: u32 = 200;
    const ECHO: u32 = 201;

    fn ev(ts: u64, what: What) -> Event {
        Event { ts, what }
    }

    /// The trace of CPU `cpu` of a ping-pong whose thread there is `loop_tid`.
    fn ping_pong<'a>(
        cpu: u32,
        loop_tid: u32,
        events: &'a [Event],
        waits: &'a Waits,
        wakeups: &'a [u64],
    ) -> CpuTrace<'a> {
        CpuTrace {
            cpu,
            loop_tid,
            events,
            lost: Vec::new(),
            offline_from: None,
            sends_lost: &[],
            run_start: 0,
            waits,
            wakeups,
        }
    }

    /// Each cause of `out` as (class, source), sorted.
    fn causes_of(out: &CpuCauses) -> Vec<(Class, String)> {
        let mut got: Vec<(Class, String)> = (out.causes.iter())
            .map(|c| (c.cause.class, c.cause.source.clone()))
            .collect();
        got.sort();
        got
    }

    /// A switch at `at` to `pid` (`comm`) from `prev`, which slept (`prev_blocked`) or not.
    fn switch(at: u64, pid: u32, comm: Sym, prev: u32, prev_blocked: bool) -> Event {
        ev(
            at,
            What::Switch {
                pid,
                comm,
                prev,
                prev_blocked,
            },
        )
    }

    /// The echo's CPU (1) over five round trips of the shape this module's doc describes:
    /// the message's own path alone; a NIC queue's IRQ and its NET_RX (network receive); a
    /// spinner that kept the CPU 2 ms after the echo's wake-up; the tick while the echo ran
    /// (just after a spinner that left at once); a spinner that preempted the echo before the round trip began
    /// and held the CPU through most of it. A task that ran while the echo slept is never
    /// named.
    #[test]
    fn the_round_trips_own_path_is_not_a_cause() {
        let mut s = Symbols::default();
        let echo = s.intern_task(ECHO, "lowlat");
        let rustc = s.intern_task(300, "rustc");
        let spin = s.intern_task(400, "kat-spin");
        let virtio = s.intern("virtio0-input.0");
        let tick = s.intern("tick_nohz_handler");
        // The client's sends to CPU 1 (its reschedule IPIs), traced on CPU 0.
        let client_comm = s.intern_task(CLIENT, "lowlat");
        let send = |ts| IpiSend {
            ts,
            cpu: 0,
            pid: CLIENT,
            comm: client_comm,
            callsite: 0,
            targets: vec![1],
            kind: None,
        };
        let mut events = Vec::new();
        let mut sent = Vec::new();
        let mut wakeups = Vec::new();
        // The echo's own part of a round trip starting at `at`, woken at `at + 3`, back on
        // the CPU at `back`, done at `back + 4`.
        let mut trip = |events: &mut Vec<Event>, at: u64, back: u64, before: u32, comm| {
            sent.push(send(at + 3));
            wakeups.push(at + 3);
            events.push(ev(at + 4, What::Vector(Vector::Reschedule)));
            events.push(switch(back, ECHO, echo, before, false));
            events.push(ev(back + 1, What::Softirq(NET_RX)));
            events.push(ev(back + 2, What::Wakeup(CLIENT)));
            events.push(switch(back + 3, before, comm, ECHO, true));
        };
        // Rustc ran while the echo slept, from the start.
        events.push(switch(10, 300, rustc, ECHO, true));
        // 1: [100, 120]: only its own path.
        trip(&mut events, 100, 106, 300, rustc);
        // 2: [200, 220]: a device IRQ and its NET_RX while the echo ran.
        trip(&mut events, 200, 206, 300, rustc);
        events.insert(
            events.len() - 3,
            ev(
                207,
                What::Irq {
                    irq: 25,
                    name: virtio,
                },
            ),
        );
        events.insert(events.len() - 3, ev(208, What::Softirq(NET_RX)));
        // 3: [300, 2400]: the spinner ran from before the wake-up until 2,306.
        events.push(switch(250, 400, spin, 300, false));
        trip(&mut events, 300, 2_306, 400, spin);
        // 4: [2500, 2520]: the tick while the echo ran.
        trip(&mut events, 2_500, 2_506, 400, spin);
        events.insert(
            events.len() - 3,
            ev(2_507, What::Vector(Vector::LocalTimer)),
        );
        events.insert(events.len() - 3, ev(2_507, What::Hrtimer(tick)));
        // 5: [2610, 4700]: the spinner preempted the echo before the round trip began (the
        // answer sent, the echo not yet waiting again) and held the CPU until 4,650.
        events.push(switch(2_600, 400, spin, ECHO, false));
        events.push(switch(4_650, ECHO, echo, 400, true));
        events.push(ev(4_651, What::Softirq(NET_RX)));
        events.push(ev(4_652, What::Wakeup(CLIENT)));
        events.push(switch(4_653, 400, spin, ECHO, true));
        events.sort_by_key(|e| e.ts);
        let waits = Waits::Message(vec![CLIENT, ECHO]);
        let trace = ping_pong(1, ECHO, &events, &waits, &wakeups);
        let gaps = [
            (100, 120),
            (200, 220),
            (300, 2_400),
            (2_500, 2_520),
            (2_610, 4_700),
        ]
        .map(|(start, end)| TraceGap { start, end });
        let out = explain_cpu(&trace, &gaps, &sent, 1_000, &s, &|t| t);
        let got = causes_of(&out);
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_nohz_handler".into()),
                (
                    Class::DeviceIrq,
                    "25 virtio0-input.0 (network receive)".into()
                ),
                (Class::Task, "kat-spin (held the CPU)".into()),
                (Class::NoKernelEvent, "no kernel event".into()),
            ]
        );
        let held = out.causes.iter().find(|c| c.cause.class == Class::Task);
        assert_eq!(held.unwrap().count, 2);
        assert_eq!(out.gaps, 5);
    }

    /// Issue 49: on the client's CPU (0; the echo on CPU 1), the round trip's own NET_RX (its
    /// send's, run in the client) is never a cause; a NET_RX that ran while the client
    /// waited (another flow's, steered here) and a NIC queue's interrupt are, marked as
    /// network receive (the audit's cause table sends them to busy polling); a storage
    /// queue's interrupt is not marked.
    #[test]
    fn network_receive_not_of_the_round_trip_is_a_marked_cause() {
        let mut s = Symbols::default();
        let client = s.intern_task(CLIENT, "lowlat");
        let idle = s.intern_task(0, "swapper/0");
        let virtio_net = s.intern("virtio0-input.0");
        let virtio_blk = s.intern("virtio1-req.0");
        let echo_comm = s.intern_task(ECHO, "lowlat");
        let mut events = Vec::new();
        let mut sent = Vec::new();
        let mut wakeups = Vec::new();
        // A round trip from `at`: the client's send (its own NET_RX, the echo's wake-up),
        // its sleep, `inside` while it sleeps, the echo's answer waking it at `at + 15`
        // (traced on CPU 1, with the reschedule IPI to CPU 0), the client back at `at + 17`.
        let mut trip = |events: &mut Vec<Event>, at: u64, inside: &[What]| {
            events.push(ev(at + 1, What::Softirq(NET_RX)));
            events.push(ev(at + 2, What::Wakeup(ECHO)));
            events.push(switch(at + 3, 0, idle, CLIENT, true));
            for (i, what) in inside.iter().enumerate() {
                events.push(ev(at + 5 + i as u64, *what));
            }
            wakeups.push(at + 15);
            sent.push(IpiSend {
                ts: at + 15,
                cpu: 1,
                pid: ECHO,
                comm: echo_comm,
                callsite: 0,
                targets: vec![0],
                kind: None,
            });
            events.push(ev(at + 16, What::Vector(Vector::Reschedule)));
            events.push(switch(at + 17, CLIENT, client, 0, false));
        };
        trip(&mut events, 100, &[]);
        trip(&mut events, 200, &[What::Softirq(NET_RX)]);
        let nic = What::Irq {
            irq: 25,
            name: virtio_net,
        };
        trip(&mut events, 300, &[nic, What::Softirq(NET_RX)]);
        let disk = What::Irq {
            irq: 36,
            name: virtio_blk,
        };
        trip(&mut events, 400, &[disk, What::Softirq(4)]);
        let waits = Waits::Message(vec![CLIENT, ECHO]);
        let trace = ping_pong(0, CLIENT, &events, &waits, &wakeups);
        let gaps = [100, 200, 300, 400].map(|at| TraceGap {
            start: at,
            end: at + 20,
        });
        let out = explain_cpu(&trace, &gaps, &sent, 1_000, &s, &|t| t);
        let got = causes_of(&out);
        assert_eq!(
            got,
            vec![
                (
                    Class::DeviceIrq,
                    "25 virtio0-input.0 (network receive)".into()
                ),
                (Class::DeviceIrq, "36 virtio1-req.0".into()),
                (Class::Softirq, "NET_RX (network receive)".into()),
                (Class::NoKernelEvent, "no kernel event".into()),
            ]
        );
    }

    /// The same IPI sent by a task that is not the run's is a cause, with its sender.
    #[test]
    fn an_ipi_from_another_task_stays_a_cause() {
        let mut s = Symbols::default();
        let other = s.intern_task(55, "membarrier");
        let send = IpiSend {
            ts: 101,
            cpu: 0,
            pid: 55,
            comm: other,
            callsite: 0,
            targets: vec![1],
            kind: None,
        };
        let events = [ev(105, What::Vector(Vector::CallFunctionSingle))];
        let waits = Waits::Message(vec![CLIENT, ECHO]);
        let trace = ping_pong(1, ECHO, &events, &waits, &[]);
        let sent = [&send];
        let (kept, woken) = own_path(&events, &trace, &[CLIENT, ECHO], &sent, 1_000, &s);
        assert_eq!(kept, events);
        assert!(woken.is_empty());
    }
}
