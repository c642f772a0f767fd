//! One run as compare sees it, whatever wrote it: per CPU, the latencies measured (a stream in
//! time order, or a histogram) and how long they were watched.

use std::collections::BTreeMap;

use super::stats::bootstrap::Cumulative;

/// What a run's latencies are, which decides what can be compared with what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Interruptions of a busy loop above a threshold (lowlat measure jitter, sysjitter).
    Gaps,
    /// Timer wake-up latencies (lowlat measure timer, cyclictest).
    Wakeups,
    /// Memory bandwidth: the best rate of each kernel per run (lowlat measure membw, STREAM,
    /// likwid-bench), higher is better.
    Throughput,
}

impl Family {
    /// How the family is named in messages.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gaps => "busy-loop interruptions",
            Family::Wakeups => "timer wake-up latencies",
            Family::Throughput => "memory bandwidth (best rate per kernel)",
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
}

impl Format {
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
        }
    }
}

/// What the time a run watched is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExposureUnit {
    /// Seconds (rates are then given per hour).
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
}

/// The latencies of one CPU (or one cyclictest thread) in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The latencies.
    pub values: Values,
    /// How much was watched, in `unit`.
    pub exposure: f64,
    /// The unit of `exposure`.
    pub unit: ExposureUnit,
}

/// Latencies, ns.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Every latency in time order, with the moment it ended (in the series' exposure unit,
    /// from the start of the run).
    Stream {
        /// Latencies, ns.
        ns: Vec<f64>,
        /// When each ended, in the exposure unit.
        at: Vec<f64>,
    },
    /// Counts per latency bucket: the order in time is gone.
    Histogram(Cumulative),
}

impl Values {
    /// The mean latency, ns (0 when there is none).
    pub fn mean(&self) -> f64 {
        let (sum, n) = match self {
            Values::Stream { ns, .. } => (ns.iter().sum::<f64>(), ns.len() as f64),
            Values::Histogram(h) => (
                h.buckets().map(|(v, c)| v * c as f64).sum(),
                h.count() as f64,
            ),
        };
        if n > 0.0 { sum / n } else { 0.0 }
    }

    /// The nearest-rank `q`-quantile, ns.
    pub fn quantile(&self, q: f64) -> f64 {
        match self {
            Values::Stream { ns, .. } => super::stats::bootstrap::quantile(&mut ns.clone(), q),
            Values::Histogram(h) => h.quantile(q),
        }
    }

    /// How many latencies exceed `above_ns`.
    pub fn exceeding(&self, above_ns: f64) -> u64 {
        match self {
            Values::Stream { ns, .. } => ns.iter().filter(|&&v| v > above_ns).count() as u64,
            Values::Histogram(h) => h.count_above(above_ns),
        }
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

impl Figures {
    /// The same figures of latencies, to compare them with a summary's.
    pub fn of(values: &Values) -> Self {
        Self {
            median: Some(values.quantile(0.5)),
            p99: Some(values.quantile(0.99)),
            max: values.quantile(1.0),
            mean: values.mean(),
        }
    }
}

/// One run: where it came from and its latencies per CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file (or, for sysjitter's per-CPU files, their common prefix) it was read from.
    pub source: String,
    /// Its format.
    pub format: Format,
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
}
