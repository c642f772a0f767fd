//! A tracing session that leaves no trace: a private ftrace instance
//! (`<tracefs>/instances/lowlat-<pid>`) with its own buffers, events, `tracing_cpumask`,
//! `trace_clock` and `tracing_on`, so the global tracing state and every other session (a
//! second lowlat, someone's `trace-cmd`) are never touched. Removing the directory removes
//! everything it held. The IPIs' senders are recorded in a second instance
//! (`lowlat-<pid>-ipi`) over every CPU, filtered to IPIs sent to the measured CPUs.
//!
//! tracefs is used where it is mounted (`/sys/kernel/tracing`, then
//! `/sys/kernel/debug/tracing`); where it is not, it is mounted at `/sys/kernel/tracing` and
//! left mounted (as systemd mounts it at boot): a second session, or another tracer, may be
//! tracing through it by the end, and an unmount would take its trace away unseen. A drain
//! that cannot read an online CPU's pipe says so. The instances are removed when the session ends, also on an error
//! (drop) and on Ctrl-C or SIGTERM, which its user makes end the run early (a measurement
//! through `harness::catch_terminate`, watch through its signal guard), then the session
//! ends as usual; what a SIGKILL leaves, the next session removes (an instance named after a
//! pid that no longer runs).

use std::sync::Mutex;
use std::time::Duration;

use super::events::{self, Event, IpiSend, Line, Symbols, TRACEPOINTS, Tracepoint};
use crate::machine::CpuSet;
use crate::sysroot::SysRoot;

/// Where tracefs may be mounted, newest first.
const MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Events per second per measured CPU the buffers are sized for: a busy CPU of the real
/// 16-vCPU guest of issue 30 had 1,300 gaps/s with up to 6 events each, so 8,000, times a
/// margin of 2.5.
pub(crate) const EXPECTED_EVENTS_PER_S: u64 = 20_000;

/// Bytes an event takes in the ring buffer, at most, for the set's events (header, fields
/// and a dynamic string).
const EVENT_BYTES: u64 = 64;

/// How often the buffers are drained during the run.
pub(crate) const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// The clock the trace's timestamps are read in: the one the engine's loop reads, so that a
/// gap and the events inside it compare without conversion. (An engine timed by
/// `CLOCK_MONOTONIC`, the timer loop, would take tracefs's `mono` clock.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TraceClock {
    /// `x86-tsc`: the raw TSC, as the jitter loop reads it (`rdtsc`); timestamps in ticks.
    X86Tsc,
    /// `mono`: `CLOCK_MONOTONIC`, on every architecture; timestamps in ns. For a trace whose
    /// events are counted, not joined with a loop's gaps (`watch --explain`).
    Mono,
}

impl TraceClock {
    /// Its name in `trace_clock`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TraceClock::X86Tsc => "x86-tsc",
            TraceClock::Mono => "mono",
        }
    }
}

/// Why gaps cannot be explained on this machine; results are given as without `--explain`.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Unavailable {
    /// No tracefs mounted and none could be mounted.
    #[error("no tracefs: {0}")]
    NoTracefs(String),
    /// tracefs refused this user (not root, a container without CAP_SYS_ADMIN, lockdown).
    #[error(
        "tracefs refused a write ({0}); run as root, outside a container or with tracefs writable"
    )]
    NotPermitted(String),
    /// The clock the engine needs is not offered.
    #[error("the trace clock {0} is not offered by this kernel (trace_clock lists {1})")]
    NoClock(&'static str, String),
    /// Not one event of the set could be enabled.
    #[error("none of the tracepoints could be enabled: {0}")]
    NoEvents(String),
}

/// What a drain of a running session ([`Tracing::drain_into`]) says beside its events.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// The events the buffers lost since the start (the pipes' markers).
    pub lost: u64,
    /// Why a CPU's trace could not be read since the last drain (the tracefs unmounted or the
    /// instance removed under the session): the interval's causes are incomplete.
    pub failed: Vec<String>,
}

/// What a session recorded.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    /// The names the events refer to.
    pub symbols: Symbols,
    /// Each measured CPU's events, in time order.
    pub events: Vec<(u32, Vec<Event>)>,
    /// IPIs sent to the measured CPUs, in time order per sending CPU.
    pub sent: Vec<IpiSend>,
    /// Windows `(cpu, from, to)` of trace time in which a CPU's buffer lost events.
    pub lost: Vec<(u32, u64, u64)>,
    /// Events lost in all (ring-buffer overruns and drops).
    pub lost_events: u64,
    /// Windows `(from, to)` of trace time in which the senders' buffer of some CPU lost
    /// events: a send in them may be missing, so no IPI arriving in or just after them is
    /// given a sender.
    pub sent_lost: Vec<(u64, u64)>,
    /// CPUs seen offline during the run `(cpu, from)`: from the last event traced before
    /// (trace time) to the end of the run, their gaps are not theirs to explain.
    pub offline: Vec<(u32, u64)>,
    /// What could not be traced, and why, one sentence each.
    pub notes: Vec<String>,
}

/// The filter, if any, to write for a tracepoint before enabling it.
type EventFilter = dyn Fn(&Tracepoint) -> Option<String>;

/// Per measured CPU, what the reader carries between drains.
#[derive(Debug, Default)]
struct Stream {
    cpu: u32,
    events: Vec<Event>,
    /// Text after the last newline of the previous read.
    partial: String,
    /// A loss seen, waiting for the next event's time: (cpu, from).
    open_loss: Option<u64>,
    /// Seen offline: since its last event traced before (trace time).
    offline_from: Option<u64>,
    /// The time of the last line read with one (an event or a send).
    last_ts: u64,
}

/// The running session; [`Tracing::finish`] ends it, dropping it undoes it.
pub(crate) struct Tracing<'r> {
    root: &'r SysRoot,
    /// The tracefs directory.
    tracefs: String,
    /// The instances created, main first.
    instances: Vec<String>,
    state: Mutex<State>,
    notes: Vec<String>,
}

#[derive(Debug, Default)]
struct State {
    symbols: Symbols,
    streams: Vec<Stream>,
    senders: Vec<Stream>,
    sent: Vec<IpiSend>,
    lost: Vec<(u32, u64, u64)>,
    sent_lost: Vec<(u32, u64, u64)>,
    lost_events: u64,
    measured: CpuSet,
    /// Why a drain could not read an online CPU's trace (a tracefs unmounted or an instance
    /// removed under the session), each CPU's first; taken by [`Tracing::drain_into`] or
    /// said in the notes by [`Tracing::finish`].
    failed: Vec<String>,
}

impl<'r> Tracing<'r> {
    /// Starts tracing `cpus` with `clock` for a run of `duration`: tracefs found or mounted,
    /// stale instances of dead lowlat processes removed, the instances made and configured,
    /// the events enabled, tracing on. Fails (having undone what it did) when tracing is not
    /// possible here.
    pub(crate) fn start(
        root: &'r SysRoot,
        cpus: &CpuSet,
        clock: TraceClock,
        duration: Duration,
    ) -> Result<Tracing<'r>, Unavailable> {
        let (tracefs, mounted) = find_or_mount(root)?;
        // Left mounted at the end: a second lowlat (or any tracer) that found it mounted may
        // trace through it still, and would lose its trace, silently, under an unmount.
        let notes = if mounted {
            vec![format!(
                "tracefs was not mounted: lowlat mounted it at {tracefs} and leaves it mounted \
                 (another tracer may use it by then); `umount {tracefs}` when nothing traces"
            )]
        } else {
            Vec::new()
        };
        let mut tracing = Tracing {
            root,
            tracefs,
            instances: Vec::new(),
            state: Mutex::new(State {
                measured: cpus.clone(),
                ..State::default()
            }),
            notes,
        };
        tracing.remove_stale();
        let pid = std::process::id();
        let main = tracing.make_instance(&format!("lowlat-{pid}"))?;
        tracing.configure(&main, clock, Some(cpus), buffer_kb(duration))?;
        let enabled = tracing.enable(&main, TRACEPOINTS.iter().filter(|t| t.on_measured), None);
        if enabled == 0 {
            return Err(Unavailable::NoEvents(tracing.notes.join("; ")));
        }
        tracing.start_senders(clock, cpus);
        for instance in &tracing.instances {
            tracing.write(&format!("{instance}/tracing_on"), "1")?;
        }
        if let Ok(mut state) = tracing.state.lock() {
            state.streams = cpus
                .iter()
                .map(|cpu| Stream {
                    cpu,
                    ..Stream::default()
                })
                .collect();
        }
        Ok(tracing)
    }

    /// Reads what the buffers hold now, parsing it: called every [`DRAIN_EVERY`] during the
    /// run by a thread on the housekeeping CPUs, and once at the end.
    pub(crate) fn drain(&self) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let State {
            symbols,
            streams,
            senders,
            sent,
            lost,
            sent_lost,
            lost_events,
            measured,
            failed,
        } = &mut *state;
        let mut fail = |cpu: u32, e: crate::sysroot::ReadError| {
            let what = format!("the trace of CPU {cpu} could not be read ({e})");
            if !is_offline(self.root, cpu) && !failed.contains(&what) {
                failed.push(what);
            }
        };
        if let Some(main) = self.instances.first() {
            for stream in streams.iter_mut() {
                let read = read_stream(
                    self.root,
                    main,
                    stream,
                    symbols,
                    lost,
                    lost_events,
                    |line| match line {
                        Line::Event(e) => Some(e),
                        _ => None,
                    },
                );
                if let Err(e) = read {
                    fail(stream.cpu, e);
                }
                if stream.offline_from.is_none() && is_offline(self.root, stream.cpu) {
                    stream.offline_from = Some(stream.events.last().map_or(0, |e| e.ts));
                }
            }
        }
        if let Some(ipi) = self.instances.get(1) {
            for stream in senders.iter_mut() {
                let mut batch = Vec::new();
                let read = read_stream(
                    self.root,
                    ipi,
                    stream,
                    symbols,
                    sent_lost,
                    lost_events,
                    |line| {
                        if let Line::Sent(mut s) = line {
                            s.targets.retain(|cpu| measured.contains(*cpu));
                            if !s.targets.is_empty() {
                                batch.push(s);
                            }
                        }
                        None
                    },
                );
                if let Err(e) = read {
                    fail(stream.cpu, e);
                }
                sent.extend(batch);
            }
        }
    }

    /// Drains the buffers and hands each traced CPU's events read since the last call, in
    /// the order read, to `fold`, then forgets them (and the IPIs sent): for a session that
    /// counts its events as they come (`watch --explain`), whose memory stays that of one
    /// drain. Returns the events the buffers lost since the start (the pipes' markers) and why
    /// a trace could not be read since the last call.
    pub(crate) fn drain_into(&self, mut fold: impl FnMut(u32, &[Event], &Symbols)) -> Drained {
        self.drain();
        let Ok(mut state) = self.state.lock() else {
            return Drained::default();
        };
        let State {
            symbols,
            streams,
            sent,
            lost,
            sent_lost,
            lost_events,
            failed,
            ..
        } = &mut *state;
        for stream in streams.iter_mut() {
            fold(stream.cpu, &stream.events, symbols);
            stream.events.clear();
        }
        sent.clear();
        lost.clear();
        sent_lost.clear();
        Drained {
            lost: *lost_events,
            failed: std::mem::take(failed),
        }
    }

    /// Stops tracing, reads what is left and the buffers' loss counters, removes the
    /// instances and returns what was recorded.
    pub(crate) fn finish(self) -> Capture {
        for instance in &self.instances {
            let _ = self
                .root
                .write_knob(&format!("{instance}/tracing_on"), b"0");
        }
        self.drain();
        let mut notes = self.notes.clone();
        let mut state = std::mem::take(&mut *self.state.lock().unwrap_or_else(|p| p.into_inner()));
        for failed in &state.failed {
            notes.push(format!(
                "{failed}: the events of that time are missing, and its gaps may show no cause"
            ));
        }
        // A loss the pipes did not mark (the counters are the truth): every gap of that CPU
        // is unknown rather than explained by what remained.
        if let Some(main) = self.instances.first() {
            for stream in &state.streams {
                let counted = lost_in_stats(self.root, main, stream.cpu);
                let marked: u64 = state
                    .lost
                    .iter()
                    .filter(|(cpu, ..)| *cpu == stream.cpu)
                    .count() as u64;
                if counted > 0 && marked == 0 {
                    notes.push(format!(
                        "CPU {}: the trace buffer lost {counted} events that the pipe did not \
                         place in time; every gap of that CPU is counted as unknown",
                        stream.cpu
                    ));
                    state.lost.push((stream.cpu, 0, u64::MAX));
                    state.lost_events += counted;
                }
            }
        }
        for stream in &mut state.streams {
            if let Some(from) = stream.open_loss.take() {
                state.lost.push((stream.cpu, from, u64::MAX));
            }
        }
        // The senders' losses: a send lost may be the one an IPI came from.
        if let Some(ipi) = self.instances.get(1) {
            for stream in &mut state.senders {
                if let Some(from) = stream.open_loss.take() {
                    state.sent_lost.push((stream.cpu, from, u64::MAX));
                }
                let counted = lost_in_stats(self.root, ipi, stream.cpu);
                let marked = state.sent_lost.iter().any(|(cpu, ..)| *cpu == stream.cpu);
                if counted > 0 && !marked {
                    notes.push(format!(
                        "the IPI senders' trace lost {counted} events of CPU {} that the pipe \
                         did not place in time: no IPI is given a sender",
                        stream.cpu
                    ));
                    state.sent_lost.push((stream.cpu, 0, u64::MAX));
                    state.lost_events += counted;
                }
            }
        }
        let offline: Vec<(u32, u64)> = state
            .streams
            .iter()
            .filter_map(|s| s.offline_from.map(|from| (s.cpu, from)))
            .collect();
        for (cpu, _) in &offline {
            notes.push(format!(
                "CPU {cpu} went offline during the run: its gaps from its last event traced \
                 before are counted as unknown (CPU offline), since the kernel moves the \
                 loop off a CPU going offline and what it measured after is not that CPU's"
            ));
        }
        let mut sent = std::mem::take(&mut state.sent);
        sent.sort_by_key(|s| s.ts);
        Capture {
            symbols: std::mem::take(&mut state.symbols),
            events: state
                .streams
                .iter_mut()
                .map(|s| {
                    let mut events = std::mem::take(&mut s.events);
                    events.sort_by_key(|e| e.ts);
                    (s.cpu, events)
                })
                .collect(),
            sent,
            lost: state.lost,
            lost_events: state.lost_events,
            sent_lost: state
                .sent_lost
                .iter()
                .map(|&(_, from, to)| (from, to))
                .collect(),
            offline,
            notes,
        }
        // Dropping `self` removes the instances.
    }

    fn write(&self, path: &str, value: &str) -> Result<(), Unavailable> {
        self.root
            .write_knob(path, value.as_bytes())
            .map_err(|e| Unavailable::NotPermitted(e.to_string()))
    }

    /// Removes the instances of lowlat processes that no longer run (a run killed with
    /// SIGKILL could not remove its own).
    fn remove_stale(&mut self) {
        let dir = format!("{}/instances", self.tracefs);
        let Ok(names) = self.root.list(&dir) else {
            return;
        };
        for name in names {
            let Some(pid) = name
                .strip_prefix("lowlat-")
                .and_then(|rest| rest.trim_end_matches("-ipi").parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !self.root.exists(&format!("/proc/{pid}")) {
                match self.root.remove_empty_dir(&format!("{dir}/{name}")) {
                    Ok(true) => self.notes.push(format!(
                        "removed the trace instance {name} left by lowlat process {pid}, which \
                         no longer runs"
                    )),
                    _ => self.notes.push(format!(
                        "could not remove the stale trace instance {dir}/{name}; remove it with \
                         `rmdir {dir}/{name}`"
                    )),
                }
            }
        }
    }

    fn make_instance(&mut self, name: &str) -> Result<String, Unavailable> {
        let path = format!("{}/instances/{name}", self.tracefs);
        self.root
            .create_dirs(&path)
            .map_err(|e| Unavailable::NotPermitted(e.to_string()))?;
        // The kernel makes an instance with tracing on: off until configured.
        if let Err(e) = self.write(&format!("{path}/tracing_on"), "0") {
            let _ = self.root.remove_empty_dir(&path);
            return Err(e);
        }
        self.instances.push(path.clone());
        Ok(path)
    }

    fn configure(
        &self,
        instance: &str,
        clock: TraceClock,
        cpus: Option<&CpuSet>,
        buffer_kb: u64,
    ) -> Result<(), Unavailable> {
        let clocks = self
            .root
            .read(&format!("{instance}/trace_clock"))
            .map_err(|e| Unavailable::NotPermitted(e.to_string()))?;
        let offered = clocks
            .split_whitespace()
            .any(|c| c.trim_matches(['[', ']']) == clock.name());
        if !offered {
            return Err(Unavailable::NoClock(
                clock.name(),
                clocks.trim().to_string(),
            ));
        }
        self.write(&format!("{instance}/trace_clock"), clock.name())?;
        self.write(
            &format!("{instance}/buffer_size_kb"),
            &buffer_kb.to_string(),
        )?;
        if let Some(cpus) = cpus {
            self.write(&format!("{instance}/tracing_cpumask"), &cpus.to_mask(0))?;
        }
        Ok(())
    }

    /// Enables `tracepoints` in `instance` (with `filter` on each where given); returns how
    /// many were enabled. Missing and refused ones are noted.
    fn enable<'t>(
        &mut self,
        instance: &str,
        tracepoints: impl Iterator<Item = &'t Tracepoint>,
        filter: Option<&EventFilter>,
    ) -> usize {
        let mut enabled = 0;
        for tp in tracepoints {
            let dir = format!("{instance}/events/{}/{}", tp.system, tp.name);
            let Ok(format) = self.root.read(&format!("{dir}/format")) else {
                // Another architecture's (irq_vectors on arm64, ipi_entry on x86): its
                // events come from this one's own tracepoints.
                if tp.arch.is_native() {
                    self.notes.push(format!(
                        "tracepoint {} is not in this kernel: what it shows is not explained",
                        tp.id()
                    ));
                }
                continue;
            };
            let missing = tp.missing_fields(&format);
            if !missing.is_empty() {
                self.notes.push(format!(
                    "tracepoint {} refused: its format lacks the field(s) {} that lowlat reads",
                    tp.id(),
                    missing.join(", ")
                ));
                continue;
            }
            if let Some(text) = filter.and_then(|f| f(tp))
                && self
                    .root
                    .write_knob(&format!("{dir}/filter"), text.as_bytes())
                    .is_err()
            {
                self.notes.push(format!(
                    "tracepoint {} takes no filter `{text}`: it is read unfiltered",
                    tp.id()
                ));
            }
            match self.root.write_knob(&format!("{dir}/enable"), b"1") {
                Ok(()) => enabled += 1,
                Err(e) => self
                    .notes
                    .push(format!("tracepoint {} could not be enabled: {e}", tp.id())),
            }
        }
        enabled
    }

    /// The second instance, over every CPU, recording the IPIs sent to `cpus`. Without it
    /// the IPIs are still classified, without their sender.
    fn start_senders(&mut self, clock: TraceClock, cpus: &CpuSet) {
        let name = format!("lowlat-{}-ipi", std::process::id());
        let instance = match self.make_instance(&name) {
            Ok(instance) => instance,
            Err(e) => {
                self.notes
                    .push(format!("the IPIs' senders are not traced: {e}"));
                return;
            }
        };
        if let Err(e) = self.configure(&instance, clock, None, 1024) {
            self.notes
                .push(format!("the IPIs' senders are not traced: {e}"));
            return;
        }
        let list: Vec<u32> = cpus.iter().collect();
        let by_cpu = list
            .iter()
            .map(|c| format!("cpu == {c}"))
            .collect::<Vec<_>>()
            .join(" || ");
        let mask = format!("cpumask & CPUS{{{}}}", cpus.to_list());
        let filter = move |tp: &Tracepoint| match tp.name {
            "ipi_send_cpu" => Some(by_cpu.clone()),
            "ipi_send_cpumask" => Some(mask.clone()),
            _ => None,
        };
        let senders: Vec<&Tracepoint> = TRACEPOINTS.iter().filter(|t| !t.on_measured).collect();
        let has = |tp: &Tracepoint| {
            self.root.exists(&format!(
                "{instance}/events/{}/{}/format",
                tp.system, tp.name
            ))
        };
        let enabled = if has(senders[0]) {
            self.enable(&instance, senders.into_iter(), Some(&filter))
        } else if has(&events::IPI_RAISE) {
            self.notes.push(
                "tracepoint ipi/ipi_send_cpu is not in this kernel (Linux 6.6+): the senders \
                 come from ipi/ipi_raise, without the callsite"
                    .into(),
            );
            self.enable(&instance, std::iter::once(&events::IPI_RAISE), None)
        } else {
            self.notes.push(
                "no tracepoint of this kernel records IPIs sent (ipi/ipi_send_cpu is Linux \
                 6.6+, ipi/ipi_raise arm and arm64 only): IPIs are classified without their \
                 sender"
                    .into(),
            );
            self.instances.pop();
            let _ = self.root.remove_empty_dir(&instance);
            return;
        };
        if enabled == 0 {
            self.notes
                .push("the IPIs' senders are not traced: no sender tracepoint".into());
        }
        if let Ok(mut state) = self.state.lock() {
            let possible = self
                .root
                .read("/sys/devices/system/cpu/possible")
                .ok()
                .and_then(|l| CpuSet::parse_list(l.trim()).ok())
                .unwrap_or_else(|| cpus.clone());
            state.senders = possible
                .iter()
                .map(|cpu| Stream {
                    cpu,
                    ..Stream::default()
                })
                .collect();
        }
    }
}

impl Drop for Tracing<'_> {
    fn drop(&mut self) {
        for instance in self.instances.iter().rev() {
            let _ = self
                .root
                .write_knob(&format!("{instance}/tracing_on"), b"0");
            match self.root.remove_empty_dir(instance) {
                Ok(true) => {}
                // A directory tree (tests) keeps the files it was given.
                Ok(false) if !self.root.is_live() => {}
                _ => crate::text::voice::warning!(
                    "could not remove the trace instance {instance}; remove it with `rmdir \
                     {instance}`"
                ),
            }
        }
    }
}

/// The tracefs directory, and whether it was mounted now.
fn find_or_mount(root: &SysRoot) -> Result<(String, bool), Unavailable> {
    if let Some(dir) = MOUNTS
        .iter()
        .find(|dir| root.exists(&format!("{dir}/instances")))
    {
        return Ok((dir.to_string(), false));
    }
    let dir = MOUNTS[0];
    if !root.is_live() || !root.is_dir(dir) {
        return Err(Unavailable::NoTracefs(format!(
            "neither {} nor {} holds a tracefs, and this kernel has no {dir} to mount one at",
            MOUNTS[0], MOUNTS[1]
        )));
    }
    root.mount_tracefs(dir).map_err(|e| {
        Unavailable::NoTracefs(format!(
            "none mounted, and mounting one failed ({e}); as root: `mount -t tracefs nodev {dir}`"
        ))
    })?;
    if !root.exists(&format!("{dir}/instances")) {
        let _ = root.unmount(dir);
        return Err(Unavailable::NoTracefs(format!(
            "the tracefs mounted at {dir} has no instances directory (kernel without \
             CONFIG_TRACING instances)"
        )));
    }
    Ok((dir.to_string(), true))
}

/// The per-CPU buffer for a run of `duration`, KiB: the events of up to 2 s at the expected
/// rate (the buffers are drained every [`DRAIN_EVERY`], 20 times more often), at least 1 MiB,
/// at most 32 MiB.
pub(crate) fn buffer_kb(duration: Duration) -> u64 {
    let seconds = duration.as_secs_f64().clamp(0.1, 2.0);
    let bytes = (seconds * (EXPECTED_EVENTS_PER_S * EVENT_BYTES) as f64) as u64;
    (bytes / 1024).clamp(1024, 32 * 1024)
}

/// Drains one CPU's pipe of `instance` into `stream`, parsing each whole line; `keep` turns
/// a line into the event to keep (or consumes it itself). A `[LOST N EVENTS]` marker opens a
/// lost window (in `lost`) from the last event or send read to the next one. Fails when the
/// pipe cannot be read (then nothing of it was).
fn read_stream(
    root: &SysRoot,
    instance: &str,
    stream: &mut Stream,
    symbols: &mut Symbols,
    lost: &mut Vec<(u32, u64, u64)>,
    lost_events: &mut u64,
    mut keep: impl FnMut(Line) -> Option<Event>,
) -> Result<(), crate::sysroot::ReadError> {
    let path = format!("{instance}/per_cpu/cpu{}/trace_pipe", stream.cpu);
    loop {
        let bytes = root.read_available(&path)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let more = bytes.len() as u64 >= crate::sysroot::MAX_FILE_BYTES;
        stream.partial.push_str(&String::from_utf8_lossy(&bytes));
        let text = std::mem::take(&mut stream.partial);
        let (whole, rest) = match text.rfind('\n') {
            Some(at) => text.split_at(at + 1),
            None => ("", text.as_str()),
        };
        for line in whole.lines() {
            match events::parse(line, symbols) {
                Line::Lost(n) => {
                    *lost_events += n;
                    stream.open_loss = Some(stream.open_loss.unwrap_or(stream.last_ts));
                }
                other => {
                    let ts = match &other {
                        Line::Event(e) => Some(e.ts),
                        Line::Sent(sent) => Some(sent.ts),
                        _ => None,
                    };
                    if let Some(ts) = ts {
                        if let Some(from) = stream.open_loss.take() {
                            lost.push((stream.cpu, from, ts));
                        }
                        stream.last_ts = ts;
                    }
                    if let Some(event) = keep(other) {
                        stream.events.push(event);
                    }
                }
            }
        }
        stream.partial = rest.to_string();
        if !more {
            return Ok(());
        }
    }
}

/// Whether `cpu` is offline now (`/sys/devices/system/cpu/cpuN/online` reads 0; a CPU
/// without the file cannot be taken offline).
fn is_offline(root: &SysRoot, cpu: u32) -> bool {
    root.read(&format!("/sys/devices/system/cpu/cpu{cpu}/online"))
        .is_ok_and(|state| state.trim() == "0")
}

/// Events a CPU's buffer lost (`overrun` + `dropped events` of `per_cpu/cpuN/stats`).
fn lost_in_stats(root: &SysRoot, instance: &str, cpu: u32) -> u64 {
    let Ok(stats) = root.read(&format!("{instance}/per_cpu/cpu{cpu}/stats")) else {
        return 0;
    };
    stats
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(key.trim(), "overrun" | "dropped events")
                .then(|| value.trim().parse::<u64>().ok())
                .flatten()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    const T: &str = "/sys/kernel/tracing";

    /// A tracefs whose instance for this process the "kernel" already populated (a tree cannot
    /// make files appear on mkdir), with the set's events but `format` files as given.
    fn tracefs(formats: &[(&str, &str)]) -> (TestTree, String) {
        let tree = TestTree::empty();
        tree.write(&format!("{T}/tracing_on"), "1\n");
        tree.write(&format!("{T}/tracing_cpumask"), "3\n");
        let instance = format!("{T}/instances/lowlat-{}", std::process::id());
        for file in ["tracing_on", "buffer_size_kb", "tracing_cpumask"] {
            tree.write(&format!("{instance}/{file}"), "\n");
        }
        tree.write(
            &format!("{instance}/trace_clock"),
            "[local] global mono x86-tsc\n",
        );
        for (event, format) in formats {
            tree.write(&format!("{instance}/events/{event}/format"), format);
            tree.write(&format!("{instance}/events/{event}/enable"), "0\n");
        }
        (tree, instance)
    }

    #[test]
    fn without_tracefs_it_says_why_and_touches_nothing() {
        let tree = TestTree::empty();
        let root = tree.root();
        let err = Tracing::start(
            &root,
            &CpuSet::parse_list("1").unwrap(),
            TraceClock::X86Tsc,
            Duration::from_secs(1),
        )
        .err()
        .unwrap();
        assert!(matches!(err, Unavailable::NoTracefs(_)), "{err}");
        assert!(err.to_string().contains("no tracefs"), "{err}");
    }

    #[test]
    fn a_format_the_parser_cannot_read_is_refused_by_name_and_the_rest_explain() {
        let (tree, instance) = tracefs(&[
            (
                "irq/irq_handler_entry",
                "\tfield:int irq_number;\toffset:8;\n\tfield:__data_loc char[] name;\n",
            ),
            (
                "irq_vectors/local_timer_entry",
                "\tfield:int vector;\toffset:8;\n",
            ),
        ]);
        // A stale instance of a pid that does not run here.
        tree.make_dir(&format!("{T}/instances/lowlat-999999999"));
        let root = tree.root();
        let tracing = Tracing::start(
            &root,
            &CpuSet::parse_list("1").unwrap(),
            TraceClock::X86Tsc,
            Duration::from_secs(1),
        )
        .unwrap();
        let read = |file: &str| root.read(&format!("{instance}/{file}")).unwrap();
        assert_eq!(read("trace_clock"), "x86-tsc");
        assert_eq!(read("tracing_cpumask"), "2");
        assert_eq!(read("tracing_on"), "1");
        assert_eq!(read("buffer_size_kb"), "1250");
        assert_eq!(read("events/irq_vectors/local_timer_entry/enable"), "1");
        assert_eq!(read("events/irq/irq_handler_entry/enable"), "0\n");
        tree.write(
            &format!("{instance}/per_cpu/cpu1/trace_pipe"),
            "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
        );
        let capture = tracing.finish();
        // The rest still explains: the local timer's gap is the tick's.
        let gaps = super::super::CpuGaps {
            cpu: 1,
            loop_tid: 100,
            start: 0,
            gaps: vec![super::super::explain::TraceGap {
                start: 100,
                end: 110,
            }],
            sleeps: false,
        };
        let out = super::super::explanation(&capture, TraceClock::X86Tsc, &[gaps], 10, &|t| t);
        let cause = &out.cpus[0].causes[0].cause;
        assert_eq!(
            (cause.class, cause.source.as_str()),
            (super::super::explain::Class::Tick, "local timer")
        );
        assert!(
            out.notes
                .iter()
                .any(|n| n.contains("irq/irq_handler_entry refused"))
        );
        let notes = capture.notes.join("\n");
        assert!(
            notes.contains(
                "tracepoint irq/irq_handler_entry refused: its format lacks the field(s) irq"
            ),
            "{notes}"
        );
        assert!(
            notes.contains("tracepoint sched/sched_switch is not in this kernel"),
            "{notes}"
        );
        assert!(
            notes.contains("removed the trace instance lowlat-999999999"),
            "{notes}"
        );
        assert!(!root.exists(&format!("{T}/instances/lowlat-999999999")));
        // The global files were never written.
        assert_eq!(root.read(&format!("{T}/tracing_on")).unwrap(), "1\n");
        assert_eq!(root.read(&format!("{T}/tracing_cpumask")).unwrap(), "3\n");
        // Tracing is off in the instance at the end.
        assert_eq!(read("tracing_on"), "0");
    }

    /// The senders' instance, as the "kernel" made it, with the `format` files given.
    fn senders(tree: &TestTree, formats: &[&str]) {
        let instance = format!("{T}/instances/lowlat-{}-ipi", std::process::id());
        for file in ["tracing_on", "buffer_size_kb"] {
            tree.write(&format!("{instance}/{file}"), "\n");
        }
        tree.write(&format!("{instance}/trace_clock"), "[local] x86-tsc\n");
        for event in formats {
            let format = match *event {
                "ipi/ipi_raise" => {
                    "\tfield:__data_loc cpumask_t target_cpus;\n\tfield:const char * reason;\n"
                }
                _ => {
                    "\tfield:unsigned int cpu;\n\tfield:void * callsite;\n\tfield:void * callback;\n"
                }
            };
            tree.write(&format!("{instance}/events/{event}/format"), format);
            tree.write(&format!("{instance}/events/{event}/enable"), "0\n");
        }
    }

    fn start(root: &SysRoot) -> Tracing<'_> {
        Tracing::start(
            root,
            &CpuSet::parse_list("1").unwrap(),
            TraceClock::X86Tsc,
            Duration::from_secs(1),
        )
        .unwrap()
    }

    /// A kernel before 6.6: on arm and arm64 the senders come from ipi_raise, said once; on
    /// x86, which has no sending tracepoint before 6.6, one note says the IPIs are classified
    /// without their sender (not that ipi_raise is missing too).
    #[test]
    fn without_ipi_send_cpu_the_senders_come_from_ipi_raise_or_are_said_missing() {
        let timer = [("irq_vectors/local_timer_entry", "\tfield:int vector;\n")];
        let (tree, _) = tracefs(&timer);
        senders(&tree, &["ipi/ipi_raise"]);
        let root = tree.root();
        let capture = start(&root).finish();
        let raise = format!(
            "{T}/instances/lowlat-{}-ipi/events/ipi/ipi_raise/enable",
            std::process::id()
        );
        assert_eq!(root.read(&raise).unwrap(), "1");
        let notes = capture.notes.join("\n");
        assert!(
            notes.contains("the senders come from ipi/ipi_raise, without the callsite"),
            "{notes}"
        );
        assert!(!notes.contains("tracepoint ipi/ipi_raise"), "{notes}");
        // ipi_entry is arm's: its absence is said on arm only.
        assert_eq!(
            notes.contains("tracepoint ipi/ipi_entry is not in this kernel"),
            super::super::events::Arch::Arm.is_native(),
            "{notes}"
        );

        let (tree, _) = tracefs(&timer);
        senders(&tree, &[]);
        let root = tree.root();
        let notes = start(&root).finish().notes;
        let about_senders: Vec<&String> = notes.iter().filter(|n| n.contains("ipi/")).collect();
        assert_eq!(
            about_senders,
            vec![
                "no tracepoint of this kernel records IPIs sent (ipi/ipi_send_cpu is Linux 6.6+, \
                 ipi/ipi_raise arm and arm64 only): IPIs are classified without their sender"
            ],
            "{notes:?}"
        );
    }

    /// A buffer overrun: the pipe's `[LOST N EVENTS]` opens a window from the last event
    /// before it to the next one after (counted), and a loss the counters report but the
    /// pipe did not place makes every gap of that CPU unknown; the gaps outside the windows
    /// are still explained.
    #[test]
    fn an_overrun_is_said_and_the_rest_still_explained() {
        use super::super::explain::{Class, TraceGap};
        use super::super::{CpuGaps, explanation};
        let (tree, instance) = tracefs(&[
            ("irq_vectors/local_timer_entry", "\tfield:int vector;\n"),
            (
                "timer/hrtimer_expire_entry",
                "\tfield:void * hrtimer;\n\tfield:void * function;\n",
            ),
        ]);
        let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
        let line = |ts: u64, rest: &str| format!("  lowlat-100 [001] d.h1. {ts}: {rest}\n");
        let tick = |ts| {
            line(ts, "local_timer_entry: vector=236")
                + &line(
                    ts + 1,
                    "hrtimer_expire_entry: hrtimer=1 function=tick_nohz_handler now=1",
                )
        };
        tree.write(
            &pipe,
            tick(105) + "CPU:1 [LOST 7 EVENTS]\n" + &tick(305) + &tick(505),
        );
        tree.write(&format!("{instance}/per_cpu/cpu1/stats"), "overrun: 7\n");
        let root = tree.root();
        let tracing = start(&root);
        tracing.drain();
        tree.write(&pipe, "");
        let capture = tracing.finish();
        assert_eq!(capture.lost_events, 7);
        assert_eq!(capture.lost, vec![(1, 106, 305)]);
        let gaps = CpuGaps {
            cpu: 1,
            loop_tid: 100,
            start: 0,
            gaps: [100, 200, 300, 400, 500]
                .map(|at| TraceGap {
                    start: at,
                    end: at + 10,
                })
                .to_vec(),
            sleeps: false,
        };
        let out = explanation(&capture, TraceClock::X86Tsc, &[gaps], 10, &|t| t);
        let mut got: Vec<(Class, String, u64)> = out.cpus[0]
            .causes
            .iter()
            .map(|c| (c.cause.class, c.cause.source.clone(), c.count))
            .collect();
        got.sort();
        // The window runs from the last event before the loss (106, in the first gap) to
        // the first after (305, in the third).
        assert_eq!(
            got,
            vec![
                (Class::Tick, "tick_nohz_handler".into(), 1),
                (Class::NoKernelEvent, "no kernel event".into(), 1),
                (Class::Unknown, "events lost".into(), 3),
            ]
        );

        // The counters say 3 lost and the pipe placed none: every gap of the CPU unknown.
        let (tree, instance) =
            tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        tree.write(&format!("{instance}/per_cpu/cpu1/trace_pipe"), tick(105));
        tree.write(
            &format!("{instance}/per_cpu/cpu1/stats"),
            "entries: 2\noverrun: 1\ndropped events: 2\n",
        );
        let root = tree.root();
        let capture = start(&root).finish();
        assert_eq!(capture.lost, vec![(1, 0, u64::MAX)]);
        assert_eq!(capture.lost_events, 3);
        assert!(
            capture.notes.iter().any(|n| n.starts_with(
                "CPU 1: the trace buffer lost 3 events that the pipe did not place in time"
            )),
            "{:?}",
            capture.notes
        );
    }

    /// The senders' trace lost events: the pipe's marker opens a window from the last send
    /// read to the next; a loss only the counters report makes every send suspect, said.
    #[test]
    fn a_loss_of_the_senders_trace_is_a_window_or_said() {
        let (tree, _) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        senders(&tree, &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask"]);
        tree.write("/sys/devices/system/cpu/possible", "0-1\n");
        let ipi = format!("{T}/instances/lowlat-{}-ipi", std::process::id());
        let send = |ts: u64| {
            format!(
                "  bash-7 [000] ...1. {ts}: ipi_send_cpu: cpu=1 callsite=f+0x1/0x2 callback=g+0x0/0x1\n"
            )
        };
        tree.write(
            &format!("{ipi}/per_cpu/cpu0/trace_pipe"),
            send(100) + "CPU:0 [LOST 4 EVENTS]\n" + &send(300),
        );
        let root = tree.root();
        let capture = start(&root).finish();
        assert_eq!(capture.sent.len(), 2);
        assert_eq!(capture.sent_lost, vec![(100, 300)]);
        assert_eq!(capture.lost_events, 4);
        assert!(capture.lost.is_empty(), "{:?}", capture.lost);

        let (tree, _) = tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        senders(&tree, &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask"]);
        tree.write("/sys/devices/system/cpu/possible", "0-1\n");
        tree.write(&format!("{ipi}/per_cpu/cpu0/trace_pipe"), send(100));
        tree.write(&format!("{ipi}/per_cpu/cpu0/stats"), "overrun: 2\n");
        let root = tree.root();
        let capture = start(&root).finish();
        assert_eq!(capture.sent_lost, vec![(0, u64::MAX)]);
        assert!(
            capture.notes.iter().any(|n| n.starts_with(
                "the IPI senders' trace lost 2 events of CPU 0 that the pipe did not place"
            )),
            "{:?}",
            capture.notes
        );
    }

    /// The tracefs unmounted (or the instance removed) under a running session, as a second
    /// lowlat did (R2-7): each drain that cannot read an online CPU's pipe says so, once per
    /// CPU and cause, and the capture's notes say it too.
    #[test]
    fn a_trace_that_cannot_be_read_is_said_not_read_as_no_causes() {
        let (tree, instance) =
            tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
        tree.write(
            &pipe,
            "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
        );
        let root = tree.root();
        let tracing = start(&root);
        let mut seen = 0;
        let drained = tracing.drain_into(|_, events, _| seen += events.len());
        assert_eq!((seen, drained.failed.len()), (1, 0));
        tree.remove(&format!("{instance}/per_cpu"));
        let drained = tracing.drain_into(|_, _, _| {});
        assert_eq!(drained.failed.len(), 1, "{:?}", drained.failed);
        assert!(
            drained.failed[0].starts_with("the trace of CPU 1 could not be read ("),
            "{:?}",
            drained.failed
        );
        tracing.drain();
        let capture = tracing.finish();
        assert!(
            capture
                .notes
                .iter()
                .any(|n| n.starts_with("the trace of CPU 1 could not be read")
                    && n.ends_with("its gaps may show no cause")),
            "{:?}",
            capture.notes
        );
    }

    /// A measured CPU seen offline at a drain: the capture says from when (its last event
    /// traced before), a note says it, and the tracing goes on without a panic.
    #[test]
    fn a_cpu_going_offline_mid_run_is_said() {
        let (tree, instance) =
            tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        let pipe = format!("{instance}/per_cpu/cpu1/trace_pipe");
        let online = "/sys/devices/system/cpu/cpu1/online";
        tree.write(online, "1\n");
        tree.write(
            &pipe,
            "  lowlat-100 [001] d.h1. 105: local_timer_entry: vector=236\n",
        );
        let root = tree.root();
        let tracing = start(&root);
        tracing.drain();
        tree.write(
            &pipe,
            "  lowlat-100 [001] d.h1. 205: local_timer_entry: vector=236\n",
        );
        tree.write(online, "0\n");
        tracing.drain();
        // Its pipe gone while it is offline: read as nothing, not a panic.
        tree.remove(&pipe);
        tracing.drain();
        // Back online: the window still runs to the end.
        tree.write(
            &pipe,
            "  lowlat-100 [001] d.h1. 305: local_timer_entry: vector=236\n",
        );
        tree.write(online, "1\n");
        let capture = tracing.finish();
        assert_eq!(capture.offline, vec![(1, 205)]);
        assert!(
            capture
                .notes
                .iter()
                .any(|n| n.starts_with("CPU 1 went offline during the run")),
            "{:?}",
            capture.notes
        );
        assert_eq!(capture.events[0].1.len(), 3);
    }

    #[test]
    fn a_kernel_without_the_clock_is_refused_with_what_it_offers() {
        let (tree, instance) =
            tracefs(&[("irq_vectors/local_timer_entry", "\tfield:int vector;\n")]);
        tree.write(&format!("{instance}/trace_clock"), "[local] global\n");
        let root = tree.root();
        let err = Tracing::start(
            &root,
            &CpuSet::parse_list("1").unwrap(),
            TraceClock::X86Tsc,
            Duration::from_secs(1),
        )
        .err()
        .unwrap();
        assert_eq!(
            err.to_string(),
            "the trace clock x86-tsc is not offered by this kernel (trace_clock lists [local] global)"
        );
    }

    #[test]
    fn buffers_hold_two_seconds_at_the_expected_rate_within_bounds() {
        assert_eq!(buffer_kb(Duration::from_millis(50)), 1024);
        assert_eq!(buffer_kb(Duration::from_secs(1)), 1250);
        assert_eq!(buffer_kb(Duration::from_secs(60)), 2500);
    }
}
