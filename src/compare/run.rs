//! One run as compare sees it, whatever wrote it: per CPU, the latencies measured (as a
//! histogram, with the same latencies in slices of the run's time where the order in time is
//! known) and how long they were watched, and the conditions of the run (steal, other tasks,
//! frequency, ...) where the document recorded them.

use std::collections::BTreeMap;

use super::stats::histogram::Cumulative;
use crate::measure::trace::cause_count::CauseCount;
use crate::measure::trace::explain::Class;

/// Slices of time a run read from a stream (sysjitter `--raw`, cyclictest `-v`) is cut into,
/// as many as lowlat's own documents record (`measure::runner::slices`).
pub const SLICES: usize = 16;

/// What a run's latencies are, which decides what can be compared with what.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Interruptions of a busy loop above a threshold (lowlat measure jitter, sysjitter).
    Gaps,
    /// Timer wake-up latencies (lowlat measure timer, cyclictest).
    Wakeups,
    /// Memory bandwidth: the best rate of each kernel per run (lowlat measure membw, STREAM,
    /// likwid-bench), higher is better.
    Throughput,
    /// Network round trips of a ping-pong, with the messages sent per second and the share
    /// lost (lowlat measure net).
    RoundTrips,
}

impl Family {
    /// How the family is named in messages.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gaps => "busy-loop interruptions",
            Family::Wakeups => "timer wake-up latencies",
            Family::Throughput => "memory bandwidth (best rate per kernel)",
            Family::RoundTrips => "network round trips",
        }
    }
}

/// The format a run was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A `measure-jitter` document.
    LowlatJitter,
    /// A `measure-timer` document.
    LowlatTimer,
    /// sysjitter's `--raw` files, one per CPU.
    SysjitterRaw,
    /// `cyclictest -v`: one `thread:cycle:latency` line per sample.
    CyclictestVerbose,
    /// `cyclictest -h N`: the histogram block.
    CyclictestHistogram,
    /// A `measure-membw` document.
    LowlatMembw,
    /// STREAM's stdout: the `Function    Best Rate MB/s ...` table.
    Stream,
    /// likwid-bench's output: one test (`Test: stream`) and its `MByte/s:` line.
    LikwidBench,
    /// sysjitter's summary table (printed without `--raw`): per core, figures only.
    SysjitterSummary,
    /// cyclictest's `T:` summary lines (with or without `-q`): per thread, figures only.
    CyclictestSummary,
    /// oslat's table: per CPU, every loop iteration in 1 µs buckets. Its last bucket holds
    /// every longer iteration: beyond its edge only the longest is known.
    Oslat,
    /// A `measure-net` document: the round trips, under the client's CPU.
    LowlatNet,
}

impl Format {
    /// How people name it (`sysjitter --raw`, `cyclictest -v`, `STREAM`).
    pub fn name(self) -> &'static str {
        match self {
            Format::LowlatJitter => "lowlat measure-jitter",
            Format::LowlatTimer => "lowlat measure-timer",
            Format::SysjitterRaw => "sysjitter --raw",
            Format::CyclictestVerbose => "cyclictest -v",
            Format::CyclictestHistogram => "cyclictest -h",
            Format::LowlatMembw => "lowlat measure-membw",
            Format::Stream => "STREAM",
            Format::LikwidBench => "likwid-bench",
            Format::SysjitterSummary => "sysjitter summary",
            Format::CyclictestSummary => "cyclictest summary",
            Format::Oslat => "oslat",
            Format::LowlatNet => "lowlat measure-net",
        }
    }

    /// The family of the latencies this format holds.
    pub fn family(self) -> Family {
        match self {
            Format::LowlatJitter
            | Format::SysjitterRaw
            | Format::SysjitterSummary
            | Format::Oslat => Family::Gaps,
            Format::LowlatTimer
            | Format::CyclictestVerbose
            | Format::CyclictestHistogram
            | Format::CyclictestSummary => Family::Wakeups,
            Format::LowlatMembw | Format::Stream | Format::LikwidBench => Family::Throughput,
            Format::LowlatNet => Family::RoundTrips,
        }
    }
}

/// What the time a run watched is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExposureUnit {
    /// Seconds (rates are then given per minute).
    Seconds,
    /// Samples taken (cyclictest does not print its interval; rates per million samples).
    Samples,
}

impl ExposureUnit {
    /// The unit in words.
    pub fn name(self) -> &'static str {
        match self {
            ExposureUnit::Seconds => "seconds",
            ExposureUnit::Samples => "samples",
        }
    }

    /// The unit of a rate of events in this exposure, and the factor from events per
    /// exposure unit to it.
    pub fn rate_unit(self) -> (&'static str, f64) {
        match self {
            ExposureUnit::Seconds => ("per-minute", 60.0),
            ExposureUnit::Samples => ("per-million-samples", 1e6),
        }
    }
}

/// The latencies of one CPU (or one cyclictest thread) in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Every latency, ns.
    pub values: Cumulative,
    /// How much was watched, in `unit`.
    pub exposure: f64,
    /// The unit of `exposure`.
    pub unit: ExposureUnit,
    /// The same latencies in consecutive slices of the run's time (empty where the order in
    /// time is unknown: a histogram, or a document older than slices).
    pub slices: Vec<Slice>,
}

/// The latencies of one slice of a run's time.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Its latencies, ns.
    pub values: Cumulative,
    /// How much of the run it watched, in the series' unit.
    pub exposure: f64,
}

impl Series {
    /// A series from latencies in time order: `(when it ended, latency ns)`, the time in
    /// `unit` from the start of the run, which lasted `exposure`. The latencies are binned
    /// (the order kept as [`SLICES`] slices), so that a million samples take a few
    /// kilobytes. `None` when the counts overflow.
    pub fn from_stream(
        stream: impl IntoIterator<Item = (f64, f64)>,
        exposure: f64,
        unit: ExposureUnit,
    ) -> Option<Self> {
        let width = exposure / SLICES as f64;
        let mut slices: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); SLICES];
        for (at, ns) in stream {
            let index = if width > 0.0 {
                ((at / width) as usize).min(SLICES - 1)
            } else {
                0
            };
            let count = slices[index].entry(ns.to_bits()).or_insert(0);
            *count = count.checked_add(1)?;
        }
        let slices: Vec<Slice> = slices
            .into_iter()
            .map(|bins| {
                Some(Slice {
                    values: Cumulative::new(bins.into_iter().map(|(v, c)| (f64::from_bits(v), c)))?,
                    exposure: width,
                })
            })
            .collect::<Option<_>>()?;
        let values = Cumulative::new(slices.iter().flat_map(|s| s.values.buckets()))?;
        Some(Self {
            values,
            exposure,
            unit,
            slices,
        })
    }
}

/// The figures of one CPU (or cyclictest thread) of a run that compare can test one value per
/// run: what a peer's summary prints without the latencies behind it, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// The median latency, ns, when printed.
    pub median: Option<f64>,
    /// The 99th-percentile latency, ns, when printed.
    pub p99: Option<f64>,
    /// The largest latency, ns.
    pub max: f64,
    /// The mean latency, ns.
    pub mean: f64,
}

/// What could change one CPU's result during a run without any setting changing, as its
/// document recorded it (`attribution` of lowlat's jitter and timer documents).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuConditions {
    /// Time the hypervisor gave to others, ns.
    pub steal_ns: Option<f64>,
    /// Time other tasks ran on the CPU while the measuring thread waited, ns.
    pub others_ns: Option<f64>,
    /// Effective frequency as a share of nominal (APERF/MPERF).
    pub aperf_mperf: Option<f64>,
    /// The governor's frequency, MHz.
    pub cur_freq_mhz: Option<f64>,
    /// Thermal throttle events.
    pub throttle_events: Option<f64>,
    /// System management interrupts.
    pub smis: Option<f64>,
}

/// What a network ping-pong sent and lost (`measure net`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Messages the client sent per second, answered or not.
    pub messages_per_s: f64,
    /// Messages sent (round trips kept plus timeouts).
    pub sent: u64,
    /// Messages whose answer never came.
    pub lost: u64,
}

/// One run: where it came from and its latencies per CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file (or, for sysjitter's per-CPU files, their common prefix) it was read from.
    pub source: String,
    /// Its format.
    pub format: Format,
    /// The host its document names (lowlat documents; `None` for peers' outputs).
    pub host: Option<String>,
    /// The threshold below which the tool recorded nothing, ns (busy-loop gaps only).
    pub threshold_ns: Option<u64>,
    /// The settings that matter of the machine it ran on (`environment.settings`), when known.
    pub settings: Option<BTreeMap<String, String>>,
    /// Latencies per CPU (cyclictest: per thread index); empty for throughput runs and
    /// summaries.
    pub cpus: BTreeMap<u32, Series>,
    /// Figures per CPU (cyclictest: per thread index) of a peer's summary, which prints no
    /// latencies; empty for other runs.
    pub summaries: BTreeMap<u32, Figures>,
    /// Best rate per kernel (`copy`, `triad`, ...), MB/s (10^6 bytes per second); empty for
    /// latency runs.
    pub rates: BTreeMap<String, f64>,
    /// The conditions of each CPU during the run (empty where the document has none: peers'
    /// outputs, lowlat documents older than them).
    pub conditions: BTreeMap<u32, CpuConditions>,
    /// The 1-minute load average, mean of the readings before and after the run.
    pub load_average: Option<f64>,
    /// The gaps by cause of each CPU (`measure jitter --explain`); `None` where the run was
    /// not explained (not asked, not traced, another format).
    pub(crate) causes: Option<Vec<CauseCount>>,
    /// What a network ping-pong sent and lost; `None` for other runs.
    pub traffic: Option<Traffic>,
}

/// One run's gaps per cause on some CPUs, and the minutes of busy loop behind them.
pub(crate) struct CausesOn {
    /// Gaps per cause (class and source) on those CPUs.
    pub(crate) gaps: BTreeMap<(Class, String), u64>,
    /// Minutes of busy loop on those CPUs (the exposure of their series).
    pub(crate) minutes: f64,
}

impl CausesOn {
    /// The rate of the gaps of `classes`: their count plus 0.5 per minute of busy loop (a
    /// cause rate endpoint's value); `None` without busy-loop time.
    pub(crate) fn rate(&self, classes: &[Class]) -> Option<f64> {
        let gaps: u64 = self
            .gaps
            .iter()
            .filter(|((class, _), _)| classes.contains(class))
            .map(|(_, n)| n)
            .sum();
        (self.minutes > 0.0).then(|| (gaps as f64 + 0.5) / self.minutes)
    }
}

impl Run {
    /// Its gaps per cause on `cpus` (none where it was not explained) and the minutes of busy
    /// loop behind them.
    pub(crate) fn causes_on(&self, cpus: &[u32]) -> CausesOn {
        let mut gaps = BTreeMap::new();
        let mut minutes = 0.0;
        for cpu in cpus {
            if let Some(series) = self.cpus.get(cpu) {
                minutes += series.exposure / 60.0;
            }
            for c in self.causes.iter().flatten().filter(|c| c.cpu == *cpu) {
                *gaps.entry((c.class, c.source.clone())).or_insert(0) += c.count;
            }
        }
        CausesOn { gaps, minutes }
    }

    /// A copy of the run with every latency multiplied by `factor` (its histograms and its
    /// slices alike): a change of known size planted in real runs, which is how compare's
    /// power is measured (bench/compare-power.sh) and tested. `None` when a count overflows.
    pub fn scaled(&self, factor: f64) -> Option<Run> {
        let scale = |h: &Cumulative| Cumulative::new(h.buckets().map(|(v, c)| (v * factor, c)));
        let mut run = self.clone();
        for series in run.cpus.values_mut() {
            series.values = scale(&series.values)?;
            for slice in &mut series.slices {
                slice.values = scale(&slice.values)?;
            }
        }
        Some(run)
    }

    /// A run of `format` from `source` with nothing in it yet.
    pub fn empty(source: impl Into<String>, format: Format) -> Self {
        Self {
            source: source.into(),
            format,
            host: None,
            threshold_ns: None,
            settings: None,
            cpus: BTreeMap::new(),
            summaries: BTreeMap::new(),
            rates: BTreeMap::new(),
            conditions: BTreeMap::new(),
            load_average: None,
            causes: None,
            traffic: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_binned_into_sixteen_slices_of_its_time() {
        let stream = (0..32).map(|i| (i as f64 / 2.0, 1000.0 + i as f64));
        let s = Series::from_stream(stream, 16.0, ExposureUnit::Seconds).unwrap();
        assert_eq!(s.values.count(), 32);
        assert_eq!(s.slices.len(), SLICES);
        assert!(
            s.slices
                .iter()
                .all(|x| x.values.count() == 2 && x.exposure == 1.0)
        );
        assert_eq!(s.slices[15].values.quantile(1.0), 1031.0);
        assert_eq!(s.values.quantile(0.5), 1015.0);
    }
}
