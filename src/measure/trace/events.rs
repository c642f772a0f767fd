//! The fixed set of kernel tracepoints lowlat enables to explain gaps, the fields its parser
//! reads from each (checked against the event's `format` file before it is enabled: an event
//! whose format lacks one is refused by name, the others still explain), and the parser of
//! the lines `per_cpu/cpuN/trace_pipe` prints for them.
//!
//! Text rather than `trace_pipe_raw`: the text is the events' own `print fmt`, stable across
//! kernels for these tracepoints, needs no binary layout per kernel (field offsets, sub-buffer
//! headers, time-extend records), and the reader runs on the housekeeping CPUs, off the
//! measured ones, so its cost is not in the measurement. Each line is parsed as it is read
//! into a compact [`Event`] (24 bytes; names interned in [`Symbols`]).

use std::collections::HashMap;

/// One enabled tracepoint: its subsystem, name and the fields its line's parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tracepoint {
    /// The subsystem (`events/<system>`).
    pub system: &'static str,
    /// The event (`events/<system>/<name>`).
    pub name: &'static str,
    /// Fields its `format` file must declare for the parser to read its lines.
    pub fields: &'static [&'static str],
    /// Recorded on the measured CPUs (`true`) or on every CPU, filtered by target (the
    /// senders of IPIs, in the second instance).
    pub on_measured: bool,
    /// The architectures whose kernels fire it.
    pub arch: Arch,
}

/// The architectures whose kernels fire a tracepoint: one another architecture's kernel lacks
/// is not worth a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arch {
    /// Every architecture.
    Any,
    /// x86 alone (`irq_vectors`, `nmi`).
    X86,
    /// arm and arm64 alone (`ipi:ipi_entry`, `ipi:ipi_raise`).
    Arm,
}

impl Arch {
    /// Whether the kernel lowlat runs on is of this architecture.
    pub(crate) fn is_native(self) -> bool {
        match self {
            Arch::Any => true,
            Arch::X86 => cfg!(any(target_arch = "x86_64", target_arch = "x86")),
            Arch::Arm => cfg!(any(target_arch = "aarch64", target_arch = "arm")),
        }
    }
}

/// The tracepoints, in the order they are enabled. `ipi_send_cpu`/`ipi_send_cpumask` exist
/// from Linux 6.6; before, arm and arm64 have `ipi_raise` (no callsite; the sender still
/// named) and x86 no tracepoint of the sending side at all. The receiving side is
/// `irq_vectors` on x86 and `ipi_entry` on arm and arm64 (there, from Linux 5.10, after an
/// `irq_handler_entry` named `IPI`).
pub(crate) const TRACEPOINTS: &[Tracepoint] = &[
    tp("irq", "irq_handler_entry", &["irq", "name"]),
    tp("irq", "softirq_entry", &["vec"]),
    x86("irq_vectors", "local_timer_entry", &["vector"]),
    x86("irq_vectors", "call_function_entry", &["vector"]),
    x86("irq_vectors", "call_function_single_entry", &["vector"]),
    x86("irq_vectors", "reschedule_entry", &["vector"]),
    x86("irq_vectors", "irq_work_entry", &["vector"]),
    x86("irq_vectors", "x86_platform_ipi_entry", &["vector"]),
    x86("irq_vectors", "thermal_apic_entry", &["vector"]),
    Tracepoint {
        arch: Arch::Arm,
        ..tp("ipi", "ipi_entry", &["reason"])
    },
    tp("timer", "hrtimer_expire_entry", &["hrtimer", "function"]),
    tp("timer", "tick_stop", &["success", "dependency"]),
    tp(
        "sched",
        "sched_switch",
        &[
            "prev_comm",
            "prev_pid",
            "prev_state",
            "next_comm",
            "next_pid",
        ],
    ),
    tp("sched", "sched_wakeup", &["comm", "pid", "target_cpu"]),
    tp(
        "workqueue",
        "workqueue_execute_start",
        &["work", "function"],
    ),
    tp("tlb", "tlb_flush", &["reason", "pages"]),
    x86("nmi", "nmi_handler", &["handler", "delta_ns"]),
    sender("ipi", "ipi_send_cpu", &["cpu", "callsite", "callback"]),
    sender(
        "ipi",
        "ipi_send_cpumask",
        &["cpumask", "callsite", "callback"],
    ),
];

/// The IPI senders' event of arm and arm64 kernels before 6.6, used when `ipi_send_cpu` is
/// missing.
pub(crate) const IPI_RAISE: Tracepoint = Tracepoint {
    arch: Arch::Arm,
    ..sender("ipi", "ipi_raise", &["target_cpus", "reason"])
};

const fn tp(
    system: &'static str,
    name: &'static str,
    fields: &'static [&'static str],
) -> Tracepoint {
    Tracepoint {
        system,
        name,
        fields,
        on_measured: true,
        arch: Arch::Any,
    }
}

const fn x86(
    system: &'static str,
    name: &'static str,
    fields: &'static [&'static str],
) -> Tracepoint {
    Tracepoint {
        arch: Arch::X86,
        ..tp(system, name, fields)
    }
}

const fn sender(
    system: &'static str,
    name: &'static str,
    fields: &'static [&'static str],
) -> Tracepoint {
    Tracepoint {
        on_measured: false,
        ..tp(system, name, fields)
    }
}

impl Tracepoint {
    /// `system/name`, as the user reads it.
    pub(crate) fn id(&self) -> String {
        format!("{}/{}", self.system, self.name)
    }

    /// The fields of `fields` that the `format` text lacks (empty: the parser can read it).
    pub(crate) fn missing_fields(&self, format: &str) -> Vec<&'static str> {
        self.fields
            .iter()
            .copied()
            .filter(|field| {
                !format.lines().any(|line| {
                    line.trim_start()
                        .strip_prefix("field:")
                        .and_then(|decl| decl.split(';').next())
                        .is_some_and(|decl| {
                            let name = decl.rsplit([' ', '*']).next().unwrap_or("");
                            name.split('[').next() == Some(field)
                        })
                })
            })
            .collect()
    }
}

/// An interned name (a task's comm, an IRQ's name, a kernel function).
pub(crate) type Sym = u32;

/// Names seen in a trace, each stored once, and the comm each task was last seen with.
#[derive(Debug, Default, Clone)]
pub(crate) struct Symbols {
    names: Vec<String>,
    index: HashMap<String, Sym>,
    comms: HashMap<u32, Sym>,
}

impl Symbols {
    /// The symbol of `name`, added when new.
    pub(crate) fn intern(&mut self, name: &str) -> Sym {
        if let Some(&sym) = self.index.get(name) {
            return sym;
        }
        let sym = Sym::try_from(self.names.len()).unwrap_or(Sym::MAX);
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), sym);
        sym
    }

    /// The name of `sym` (empty for one never interned).
    pub(crate) fn name(&self, sym: Sym) -> &str {
        self.names.get(sym as usize).map_or("", String::as_str)
    }

    /// Interns `comm` as task `pid`'s, the comm [`Self::comm`] gives for it from now on.
    pub(crate) fn intern_task(&mut self, pid: u32, comm: &str) -> Sym {
        let sym = self.intern(comm);
        self.comms.insert(pid, sym);
        sym
    }

    /// The comm task `pid` was last seen with in a `sched_switch`.
    pub(crate) fn comm(&self, pid: u32) -> Option<Sym> {
        self.comms.get(&pid).copied()
    }
}

/// The x86 vectors the `irq_vectors` events name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Vector {
    /// The local APIC timer (the tick and every hrtimer).
    LocalTimer,
    /// A function-call IPI to several CPUs (`smp_call_function`).
    CallFunction,
    /// A function-call IPI to this CPU alone.
    CallFunctionSingle,
    /// The scheduler's reschedule IPI.
    Reschedule,
    /// An irq_work self-IPI.
    IrqWork,
    /// The platform IPI (hypervisor callbacks, posted interrupts).
    PlatformIpi,
    /// The thermal interrupt.
    Thermal,
    /// An IPI of a kind lowlat does not name: arm64's `IPI` interrupt before the
    /// `ipi_entry` that names its kind, or an `ipi_entry` of another kind (CPU stop,
    /// backtrace, wake-up).
    Ipi,
}

impl Vector {
    /// The kind of IPI an `ipi_entry` or `ipi_raise` reason names (arm, arm64): the kernel's
    /// `ipi_types` strings.
    pub(crate) fn of_ipi_reason(reason: &str) -> Vector {
        match reason {
            "Rescheduling interrupts" => Vector::Reschedule,
            "Function call interrupts" => Vector::CallFunction,
            "Single function call interrupts" => Vector::CallFunctionSingle,
            "IRQ work interrupts" => Vector::IrqWork,
            // The tick broadcast: the timer event of a CPU whose own timer stops in idle.
            "Timer broadcast interrupts" => Vector::LocalTimer,
            _ => Vector::Ipi,
        }
    }
}

/// What one traced event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// A device IRQ's handler ran.
    Irq {
        /// The IRQ number.
        irq: u32,
        /// Its action's name.
        name: Sym,
    },
    /// A softirq ran (vector number 0-9: HI, TIMER, NET_TX, NET_RX, BLOCK, IRQ_POLL,
    /// TASKLET, SCHED, HRTIMER, RCU).
    Softirq(u8),
    /// An APIC vector's handler ran.
    Vector(Vector),
    /// An hrtimer expired; its callback.
    Hrtimer(Sym),
    /// The tick could not stop (`success=0`): why.
    TickKept(Sym),
    /// The scheduler switched from task `prev` to task `pid` (`comm`). A CPU leaving idle
    /// may trace no switch (Linux 6.18 does not): that the idle task ran is known from the
    /// switch into it, that it stopped only from what ran next.
    Switch {
        /// The next task's pid (0: idle).
        pid: u32,
        /// Its comm.
        comm: Sym,
        /// The pid of the task switched out (0: idle); its comm is [`Symbols::comm`]'s.
        prev: u32,
        /// The task switched out gave the CPU up itself (slept, waited, exited: its
        /// `prev_state` is not `R`), rather than being preempted.
        prev_blocked: bool,
    },
    /// Task `pid` was woken (made runnable) by what ran on this CPU.
    Wakeup(u32),
    /// A kworker started a work item: its function.
    Work(Sym),
    /// A TLB flush asked by another CPU (a shootdown).
    RemoteTlbFlush,
    /// An NMI handler ran.
    Nmi(Sym),
}

/// One event on a measured CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    /// Its timestamp, in the trace clock's unit (TSC ticks for x86-tsc, ns for mono).
    pub ts: u64,
    /// What happened.
    pub what: What,
}

/// An IPI sent to measured CPUs, seen on the sending CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IpiSend {
    /// Its timestamp (trace clock).
    pub ts: u64,
    /// The CPU that sent it.
    pub cpu: u32,
    /// The sending task's pid.
    pub pid: u32,
    /// The sending task's comm.
    pub comm: Sym,
    /// Where in the kernel it was sent from (`callsite`; empty for `ipi_raise`, which does
    /// not say).
    pub callsite: Sym,
    /// The CPUs it was sent to.
    pub targets: Vec<u32>,
    /// The kind of IPI, where the event says it (`ipi_raise`'s reason; `None` for
    /// `ipi_send_*`).
    pub kind: Option<Vector>,
}

/// One line of a `trace_pipe`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// An event of the set.
    Event(Event),
    /// An IPI sent (from the senders' instance).
    Sent(IpiSend),
    /// `CPU:N [LOST M EVENTS]`: the ring buffer dropped events before the next line.
    Lost(u64),
    /// A line of an event outside the set, or nothing lowlat reads.
    Other,
}

/// The common prefix `<comm>-<pid> [<cpu>] <flags> <ts>: <event>: <fields>`, split.
struct Prefix<'a> {
    comm: &'a str,
    pid: u32,
    cpu: u32,
    ts: u64,
    event: &'a str,
    fields: &'a str,
}

fn prefix(line: &str) -> Option<Prefix<'_>> {
    let open = line.find(" [")?;
    let close = open + line[open..].find("] ")?;
    let task = line[..open].trim();
    let (comm, pid) = task.rsplit_once('-')?;
    let cpu = line[open + 2..close].trim().parse().ok()?;
    let rest = &line[close + 2..];
    let (head, tail) = rest.split_once(": ")?;
    let ts_text = head.split_whitespace().last()?;
    // A counter clock prints whole ticks; a ns clock prints seconds with 6 or 9 decimals.
    let ts = match ts_text.split_once('.') {
        None => ts_text.parse().ok()?,
        Some((secs, frac)) => {
            let secs: u64 = secs.parse().ok()?;
            let digits = frac.len().min(9) as u32;
            let frac: u64 = frac[..digits as usize].parse().ok()?;
            secs * 1_000_000_000 + frac * 10u64.pow(9 - digits)
        }
    };
    let (event, fields) = tail.split_once(": ").unwrap_or((tail, ""));
    Some(Prefix {
        comm,
        pid: pid.parse().ok()?,
        cpu,
        ts,
        event,
        fields,
    })
}

/// The value of `key=` in `fields`, up to the next space.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    let at = fields
        .match_indices(key)
        .find(|(i, _)| *i == 0 || fields.as_bytes()[i - 1] == b' ')?
        .0;
    let value = &fields[at + key.len()..];
    Some(value.split(' ').next().unwrap_or(value))
}

/// The value of `key=` up to ` <next>` (for values that may hold spaces: comms).
fn field_until<'a>(fields: &'a str, key: &str, next: &str) -> Option<&'a str> {
    let start = fields.find(key)? + key.len();
    let rest = &fields[start..];
    Some(&rest[..rest.find(next)?])
}

/// Parses one `trace_pipe` line; names go into `symbols`.
pub(crate) fn parse(line: &str, symbols: &mut Symbols) -> Line {
    if let Some(rest) = line.trim().strip_prefix("CPU:") {
        let lost = rest
            .split_once("[LOST ")
            .and_then(|(_, n)| n.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        return lost.map_or(Line::Other, Line::Lost);
    }
    let Some(p) = prefix(line) else {
        return Line::Other;
    };
    let event = |what| Line::Event(Event { ts: p.ts, what });
    let vector = |v| event(What::Vector(v));
    match p.event {
        "irq_handler_entry" => {
            let (Some(irq), Some(name)) = (field(p.fields, "irq="), field(p.fields, "name="))
            else {
                return Line::Other;
            };
            match (irq.parse(), name) {
                // The arm and arm64 generic timer, per CPU: the local timer, as x86's
                // local_timer_entry (the hrtimers it runs follow).
                (Ok(_), "arch_timer") => vector(Vector::LocalTimer),
                // arm64's IPIs are interrupts from Linux 5.10: the ipi_entry that follows
                // names the kind.
                (Ok(_), "IPI") => vector(Vector::Ipi),
                (Ok(irq), _) => event(What::Irq {
                    irq,
                    name: symbols.intern(name),
                }),
                (Err(_), _) => Line::Other,
            }
        }
        "softirq_entry" => field(p.fields, "vec=")
            .and_then(|v| v.parse().ok())
            .map_or(Line::Other, |v| event(What::Softirq(v))),
        "local_timer_entry" => vector(Vector::LocalTimer),
        "call_function_entry" => vector(Vector::CallFunction),
        "call_function_single_entry" => vector(Vector::CallFunctionSingle),
        "reschedule_entry" => vector(Vector::Reschedule),
        "irq_work_entry" => vector(Vector::IrqWork),
        "x86_platform_ipi_entry" => vector(Vector::PlatformIpi),
        "thermal_apic_entry" => vector(Vector::Thermal),
        // arm, arm64: `ipi_entry: (Rescheduling interrupts)`.
        "ipi_entry" => match p.fields.trim().strip_prefix('(') {
            Some(reason) => vector(Vector::of_ipi_reason(reason.trim_end_matches(')'))),
            None => Line::Other,
        },
        "hrtimer_expire_entry" => field(p.fields, "function=")
            .map_or(Line::Other, |f| event(What::Hrtimer(symbols.intern(f)))),
        "tick_stop" => match (field(p.fields, "success="), field(p.fields, "dependency=")) {
            (Some("0"), Some(why)) => event(What::TickKept(symbols.intern(why))),
            _ => Line::Other,
        },
        "sched_switch" => {
            let field_pid = |key| field(p.fields, key).and_then(|v| v.parse().ok());
            let prev_comm = field_until(p.fields, "prev_comm=", " prev_pid=");
            let comm = field_until(p.fields, "next_comm=", " next_pid=");
            let state = field(p.fields, "prev_state=");
            match (
                prev_comm,
                field_pid("prev_pid="),
                comm,
                field_pid("next_pid="),
                state,
            ) {
                (Some(prev_comm), Some(prev), Some(comm), Some(pid), Some(state)) => {
                    symbols.intern_task(prev, prev_comm);
                    event(What::Switch {
                        pid,
                        comm: symbols.intern_task(pid, comm),
                        prev,
                        prev_blocked: !state.starts_with('R'),
                    })
                }
                _ => Line::Other,
            }
        }
        "sched_wakeup" => field(p.fields, "pid=")
            .and_then(|v| v.parse().ok())
            .map_or(Line::Other, |pid| event(What::Wakeup(pid))),
        "workqueue_execute_start" => p
            .fields
            .rsplit_once("function ")
            .map_or(Line::Other, |(_, f)| {
                event(What::Work(symbols.intern(f.trim())))
            }),
        "tlb_flush" => {
            if p.fields.contains("reason:remote shootdown") {
                event(What::RemoteTlbFlush)
            } else {
                Line::Other
            }
        }
        "nmi_handler" => {
            let handler = p.fields.split("()").next().unwrap_or("").trim();
            event(What::Nmi(symbols.intern(handler)))
        }
        "ipi_send_cpu" | "ipi_send_cpumask" | "ipi_raise" => {
            let targets = match p.event {
                "ipi_send_cpu" => field(p.fields, "cpu=")
                    .and_then(|c| c.parse().ok())
                    .map(|c| vec![c]),
                "ipi_send_cpumask" => field(p.fields, "cpumask=").and_then(cpu_list),
                // ipi_raise: target_mask=00000000,00000002 (reason: ...)
                _ => field(p.fields, "target_mask=").and_then(hex_mask),
            };
            let reason = (p.event == "ipi_raise")
                .then(|| {
                    p.fields
                        .split_once(" (")
                        .map(|(_, r)| r.trim_end_matches(')'))
                })
                .flatten();
            let callsite = match p.event {
                "ipi_raise" => Some(""),
                _ => field(p.fields, "callsite="),
            };
            match targets {
                Some(targets) => Line::Sent(IpiSend {
                    ts: p.ts,
                    cpu: p.cpu,
                    pid: p.pid,
                    comm: symbols.intern(p.comm),
                    callsite: symbols.intern(callsite.unwrap_or("?")),
                    targets,
                    kind: reason.map(Vector::of_ipi_reason),
                }),
                None => Line::Other,
            }
        }
        _ => Line::Other,
    }
}

/// A CPU list as `ipi_send_cpumask` prints it (`0-1,3`).
fn cpu_list(text: &str) -> Option<Vec<u32>> {
    crate::machine::CpuSet::parse_list(text)
        .ok()
        .map(|set| set.iter().collect())
}

/// A hexadecimal CPU mask in 32-bit words, highest first (`00000000,00000002`).
fn hex_mask(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for (word_index, word) in text.split(',').rev().enumerate() {
        let bits = u32::from_str_radix(word, 16).ok()?;
        for bit in 0..32 {
            if bits & (1 << bit) != 0 {
                cpus.push(word_index as u32 * 32 + bit);
            }
        }
    }
    cpus.sort_unstable();
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An hour of events on many CPUs is held in memory: the switch's previous pid fits
    /// in the padding, the event stays 24 bytes.
    #[test]
    fn an_event_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Event>(), 24);
    }

    fn one(line: &str) -> (Line, Symbols) {
        let mut symbols = Symbols::default();
        (parse(line, &mut symbols), symbols)
    }

    fn event(line: &str) -> (What, u64, Symbols) {
        match one(line) {
            (Line::Event(e), s) => (e.what, e.ts, s),
            other => panic!("not an event: {line}: {:?}", other.0),
        }
    }

    // Lines as this VM's kernel (6.18, x86-tsc clock) printed them.
    #[test]
    fn parses_the_lines_of_the_set() {
        let (what, ts, s) = event(
            "           rustc-4355    [001] d.h.. 29441545301308: irq_handler_entry: irq=42 name=virtio3-tx",
        );
        assert_eq!(ts, 29_441_545_301_308);
        let What::Irq { irq: 42, name } = what else {
            panic!("{what:?}")
        };
        assert_eq!(s.name(name), "virtio3-tx");
        let (what, ..) = event(
            "            bash-4610    [001] .Ns1. 29441540783028: softirq_entry: vec=9 [action=RCU]",
        );
        assert_eq!(what, What::Softirq(9));
        let (what, ..) = event(
            "            bash-4610    [001] d.h1. 29441540756898: local_timer_entry: vector=236",
        );
        assert_eq!(what, What::Vector(Vector::LocalTimer));
        let (what, _, s) = event(
            "            bash-4610    [001] d.h1. 29441540759082: hrtimer_expire_entry: hrtimer=00000000cc510279 function=tick_nohz_handler now=11340500009892",
        );
        let What::Hrtimer(f) = what else { panic!() };
        assert_eq!(s.name(f), "tick_nohz_handler");
        let (what, _, s) = event(
            "            bash-4610    [001] d..2. 29441541245048: sched_switch: prev_comm=bash prev_pid=4610 prev_prio=120 prev_state=R+ ==> next_comm=Web Content next_pid=4355 next_prio=120",
        );
        let What::Switch {
            pid: 4355,
            comm,
            prev: 4610,
            prev_blocked: false,
        } = what
        else {
            panic!("{what:?}")
        };
        assert_eq!(s.name(comm), "Web Content");
        assert_eq!(s.comm(4610).map(|c| s.name(c)), Some("bash"));
        assert_eq!(s.comm(4355), Some(comm));
        let (what, ..) = event(
            "        kat-spin-77      [001] d..2. 29441541245050: sched_switch: prev_comm=kat-spin prev_pid=77 prev_prio=3 prev_state=S ==> next_comm=lowlat next_pid=100 next_prio=4",
        );
        assert!(matches!(
            what,
            What::Switch {
                pid: 100,
                prev_blocked: true,
                ..
            }
        ));
        let (what, ..) = event(
            "           rustc-4355    [001] dNh4. 29441545352060: sched_wakeup: comm=kworker/1:1 pid=15116 prio=120 target_cpu=001",
        );
        assert_eq!(what, What::Wakeup(15116));
        let (what, _, s) = event(
            "    kworker/u8:2-29565   [001] ..... 29441667229296: workqueue_execute_start: work struct 00000000fbadb5fb: function vmstat_update",
        );
        let What::Work(f) = what else { panic!() };
        assert_eq!(s.name(f), "vmstat_update");
        let (what, ..) = event(
            "            bash-4610    [001] d..1. 29441552290446: tlb_flush: pages:-1 reason:remote shootdown (1)",
        );
        assert_eq!(what, What::RemoteTlbFlush);
        assert_eq!(
            one("            bash-4610    [001] d..1. 29441552290446: tlb_flush: pages:-1 reason:flush on task switch (0)").0,
            Line::Other
        );
        let (what, _, s) = event(
            "          <idle>-0       [001] d.... 5.000000100: tick_stop: success=0 dependency=SCHED",
        );
        let What::TickKept(why) = what else { panic!() };
        assert_eq!(s.name(why), "SCHED");
        let (what, ts, s) = event(
            "          <idle>-0       [001] d.Z.. 5.000000200: nmi_handler: perf_event_nmi_handler() delta_ns: 2345 handled: 1",
        );
        assert_eq!(ts, 5_000_000_200);
        let What::Nmi(h) = what else { panic!() };
        assert_eq!(s.name(h), "perf_event_nmi_handler");
    }

    #[test]
    fn parses_the_senders_and_the_lost_marker() {
        let (line, s) = one(
            "            bash-4610    [001] ...1. 29441539098306: ipi_send_cpu: cpu=0 callsite=on_each_cpu_cond_mask+0x20/0x60 callback=generic_smp_call_function_single_interrupt+0x0/0x10",
        );
        let Line::Sent(sent) = line else { panic!() };
        assert_eq!(
            (sent.cpu, sent.pid, sent.targets.clone()),
            (1, 4610, vec![0])
        );
        assert_eq!(s.name(sent.comm), "bash");
        assert_eq!(s.name(sent.callsite), "on_each_cpu_cond_mask+0x20/0x60");
        let (line, _) = one(
            "       membarrier-77     [000] ...1. 100: ipi_send_cpumask: cpumask=1-3 callsite=smp_call_function_many_cond+0x1/0x2 callback=ipi_mb+0x0/0x10",
        );
        let Line::Sent(sent) = line else { panic!() };
        assert_eq!(sent.targets, vec![1, 2, 3]);
        let (line, s) = one(
            "            prog-9       [000] d.h1. 100: ipi_raise: target_mask=00000000,00000002 (Function call interrupts)",
        );
        let Line::Sent(sent) = line else { panic!() };
        assert_eq!(sent.targets, vec![1]);
        assert_eq!(s.name(sent.callsite), "");
        assert_eq!(sent.kind, Some(Vector::CallFunction));
        assert_eq!(one("CPU:1 [LOST 153 EVENTS]").0, Line::Lost(153));
        assert_eq!(one("garbage").0, Line::Other);
    }

    /// arm and arm64 lines (shapes of the traces of tests/data/explain/README.md): the
    /// generic timer's interrupt is the local timer, arm64's `IPI` interrupt an IPI whose
    /// `ipi_entry` names the kind, and a reason lowlat does not know is an IPI of no named
    /// kind, never another class.
    #[test]
    fn arm_timer_and_ipi_lines_are_the_local_timer_and_ipis() {
        let (what, ts, _) = event(
            "          <idle>-0       [003] d.h1.  1694.661258: irq_handler_entry: irq=11 name=arch_timer",
        );
        assert_eq!(what, What::Vector(Vector::LocalTimer));
        assert_eq!(ts, 1_694_661_258_000);
        // Linux 4.19, 32-bit arm: four flag characters, another IRQ number.
        let (what, ..) = event(
            "          <idle>-0     [000] d.h.   662.344100: irq_handler_entry: irq=162 name=arch_timer",
        );
        assert_eq!(what, What::Vector(Vector::LocalTimer));
        let (what, ..) = event(
            "          <idle>-0       [002] d.h1.  1694.658857: irq_handler_entry: irq=2 name=IPI",
        );
        assert_eq!(what, What::Vector(Vector::Ipi));
        for (reason, vector) in [
            ("Rescheduling interrupts", Vector::Reschedule),
            ("Function call interrupts", Vector::CallFunction),
            (
                "Single function call interrupts",
                Vector::CallFunctionSingle,
            ),
            ("IRQ work interrupts", Vector::IrqWork),
            ("Timer broadcast interrupts", Vector::LocalTimer),
            ("CPU stop interrupts", Vector::Ipi),
            ("CPU backtrace interrupts", Vector::Ipi),
        ] {
            let (what, ..) = event(&format!(
                "          <idle>-0       [007] d.h1.   154.892211: ipi_entry: ({reason})"
            ));
            assert_eq!(what, What::Vector(vector), "{reason}");
        }
        // A device on the same controller stays a device.
        let (what, _, s) = event(
            "    kworker/u9:2-809     [000] d.h..  1694.659284: irq_handler_entry: irq=37 name=mmc1",
        );
        let What::Irq { irq: 37, name } = what else {
            panic!("{what:?}")
        };
        assert_eq!(s.name(name), "mmc1");
        // The send of a reschedule: its kind kept, so it is never named as a function call's.
        let (line, _) = one(
            "            bash-77      [000] d..3.   154.892148: ipi_raise: target_mask=00000000,00000081 (Rescheduling interrupts)",
        );
        let Line::Sent(sent) = line else { panic!() };
        assert_eq!(sent.targets, vec![0, 7]);
        assert_eq!(sent.kind, Some(Vector::Reschedule));
        // Lines of a function tracer and its stack traces, in the same buffer: not events.
        for other in [
            "            sshd-1218  [000] ....   662.343501: mod_timer <-sk_reset_timer",
            "            sshd-1218  [000] ....   662.343543: <stack trace>",
            " => tcp_rearm_rto.part.0",
            "          <idle>-0       [007] d.h1.   154.892214: ipi_exit: (Function call interrupts)",
        ] {
            assert_eq!(one(other).0, Line::Other, "{other}");
        }
    }

    /// A tracepoint of another architecture is marked so that its absence is not worth a
    /// note: irq_vectors and nmi are x86's, ipi_entry and ipi_raise arm's.
    #[test]
    fn the_set_marks_the_architecture_specific_tracepoints() {
        let arch = |name: &str| {
            TRACEPOINTS
                .iter()
                .chain([&IPI_RAISE])
                .find(|t| t.name == name)
                .unwrap()
                .arch
        };
        assert_eq!(arch("local_timer_entry"), Arch::X86);
        assert_eq!(arch("nmi_handler"), Arch::X86);
        assert_eq!(arch("ipi_entry"), Arch::Arm);
        assert_eq!(arch("ipi_raise"), Arch::Arm);
        assert_eq!(arch("irq_handler_entry"), Arch::Any);
        assert_eq!(arch("ipi_send_cpu"), Arch::Any);
        assert!(Arch::Any.is_native());
        assert_ne!(Arch::X86.is_native(), Arch::Arm.is_native());
    }

    #[test]
    fn a_format_without_a_read_field_is_found() {
        let format = "name: irq_handler_entry\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n";
        assert!(TRACEPOINTS[0].missing_fields(format).is_empty());
        let renamed = format.replace("int irq;", "int irq_number;");
        assert_eq!(TRACEPOINTS[0].missing_fields(&renamed), vec!["irq"]);
        let switch = "\tfield:char prev_comm[16];\toffset:8;\n\tfield:pid_t prev_pid;\n\tfield:long prev_state;\n\tfield:char next_comm[16];\n\tfield:pid_t next_pid;\n";
        let tp = TRACEPOINTS
            .iter()
            .find(|t| t.name == "sched_switch")
            .unwrap();
        assert!(tp.missing_fields(switch).is_empty());
    }
}
