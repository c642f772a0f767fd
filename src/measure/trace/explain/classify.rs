//! The classification of one gap from the events inside it, in the order of the module's
//! doc ([`super`]); and who sent an IPI, from the sends traced.

use super::{
    Cause, Class, CpuTrace, SOFTIRQ_THREADS, SOFTIRQS, TICK_FUNCTIONS, TraceGap, UnmatchedIpis,
    Waits, Woken,
};
use crate::measure::trace::events::{Event, IpiSend, Sym, Symbols, Vector, What};

/// Who sent an IPI, as far as the sends traced say.
pub(super) enum Sender<'a> {
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
pub(super) fn sender_of<'a>(
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

/// What the classification reads of one CPU: the same for each of its gaps.
#[derive(Clone, Copy)]
pub(super) struct Join<'a> {
    /// The CPU's trace.
    pub trace: &'a CpuTrace<'a>,
    /// Its events that say why the tick was kept (`tick_stop`), in time order.
    pub kept: &'a [&'a Event],
    /// The IPIs sent to it, in time order.
    pub to_me: &'a [&'a IpiSend],
    /// How long before an IPI's arrival its send may be traced (trace clock).
    pub ipi_window: u64,
    /// The names the events refer to.
    pub symbols: &'a Symbols,
}

/// One gap to classify.
#[derive(Clone, Copy)]
pub(super) struct Gap<'a> {
    /// When it starts and ends.
    pub span: &'a TraceGap,
    /// The events inside it, in time order.
    pub inside: &'a [Event],
    /// A sleeping loop's wake-up in it.
    pub woke: Option<&'a Woken>,
}

/// The cause of one gap from the events inside it (see the module's order), with the id
/// behind it (a pid, an IRQ number); an IPI whose sender cannot be named is counted in
/// `unmatched`.
pub(super) fn classify(
    join: &Join<'_>,
    gap: &Gap<'_>,
    unmatched: &mut UnmatchedIpis,
) -> (Cause, Option<u32>) {
    let Join {
        trace,
        kept,
        to_me,
        ipi_window,
        symbols,
    } = *join;
    let Gap {
        span: gap,
        inside,
        woke,
    } = *gap;
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
    // A loop woken in time (or preempted) but kept waiting by the task on the CPU, for more
    // than half of the gap (the timer's: longer than it waited for its wake-up).
    if let Some(&Woken {
        ts,
        running: Some((pid, comm)),
        back,
    }) = woke
    {
        let waited = back
            .unwrap_or(gap.end)
            .min(gap.end)
            .saturating_sub(ts.max(gap.start));
        if waited > gap.end.saturating_sub(gap.start) - waited {
            let note = match trace.waits {
                Waits::Message(_) => " (held the CPU)",
                _ => " (running when woken)",
            };
            return task(pid, symbols.name(comm), None, note);
        }
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
