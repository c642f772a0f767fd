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
mod tests;
