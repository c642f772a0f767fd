//! The jitter result: its JSON form, the plain terminal table, and the bridges to the
//! sysjitter and oslat printers.

use super::explain;
use super::header::Measured;
use super::loops::{LoopCpus, LoopDocument, RunSpan, cpu_notes, header, shared_lines};
use super::micros;
use crate::document::Kind;
use crate::measure::engines::jitter::busy::BusyRecord;
use crate::measure::engines::jitter::stats::{GapStats, gap_stats, sysjitter_sort_may_differ};
use crate::measure::engines::jitter::{self, JitterRequest, JitterRun};
use crate::measure::load::RoundLoad;
use crate::measure::runner::slices::SLICES;
use crate::measure::runner::threads::CpuLoop;
use crate::measure::runner::tsc::{Tsc, ticks_to_ns};
use crate::peer::hdr::{HdrJson, SliceJson, slices_to_json, to_json};
use crate::peer::oslat::{self, OslatThread};
use crate::peer::sysjitter::{SysjitterCore, raw_file, raw_file_name};
use crate::report::table::aligned;
use crate::text::Page;
use crate::units::micros_setting;
use serde::{Deserialize, Serialize};

/// `lowlat measure jitter` as JSON, after the result header.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JitterResult {
    /// Gaps at or above this were counted as interruptions, ns.
    pub threshold_ns: u64,
    /// Duration, wall time and segments of the run.
    #[serde(flatten)]
    pub span: RunSpan,
    /// The counter read by the loop and how its frequency was found.
    pub counter: Tsc,
    /// The conditions, each measured CPU and the causes.
    #[serde(flatten)]
    pub per_cpu: LoopCpus<JitterCpu>,
}

/// One measured CPU's figures in the JSON, after the CPU and its setup error.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JitterCpu {
    /// Time measured, ns.
    pub runtime_ns: u64,
    /// Loop iterations.
    pub loops: u64,
    /// Mean loop iteration (runtime / iterations), ns.
    pub loop_period_ns: f64,
    /// Shortest loop iteration, ns (the detection floor).
    pub min_loop_period_ns: u64,
    /// Interruptions (gaps at or above the threshold).
    pub interruptions: u64,
    /// Interruptions per second of runtime.
    pub per_second: f64,
    /// Interruption statistics as sysjitter defines them, ns.
    pub stats_ns: StatsNs,
    /// Sum of the interruptions over the runtime, percent.
    pub total_percent: f64,
    /// Whether the gap buffer filled (the CPU then stopped early; its statistics cover only
    /// its own runtime).
    pub buffer_full: bool,
    /// Size of the gap buffer, interruptions.
    pub capacity: usize,
    /// Whether the sysjitter tool would sort these gaps differently (gaps 2^31 ticks apart).
    pub sysjitter_sort_may_differ: bool,
    /// Histogram of the interruption lengths.
    pub histogram: HdrJson,
    /// The run cut into 16 equal slices of time, each with the histogram of its
    /// interruptions: drift inside the run, and the within-run variation compare estimates
    /// (absent from documents written before slices).
    #[serde(default)]
    pub slices: Vec<SliceJson>,
    /// Every loop iteration in oslat's 1 µs buckets.
    pub oslat: OslatJson,
}

/// [`GapStats`] converted to ns with the exact counter frequency.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StatsNs {
    /// Shortest interruption, ns.
    pub min: u64,
    /// Upper median, ns.
    pub median: u64,
    /// Integer mean, ns.
    pub mean: u64,
    /// 90th percentile (nearest rank), ns.
    pub p90: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// 99.9th percentile, ns.
    pub p99_9: u64,
    /// 99.99th percentile, ns.
    pub p99_99: u64,
    /// 99.999th percentile, ns.
    pub p99_999: u64,
    /// Longest interruption, ns.
    pub max: u64,
    /// Sum of the interruptions, ns.
    pub total: u64,
}

/// oslat's view of the same loop.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct OslatJson {
    /// Width of a bucket, µs (bucket `i` holds iterations of `[i, i+1)` µs).
    pub bucket_us: u32,
    /// Iterations per bucket; the last bucket also holds the longer ones.
    pub counts: Vec<u64>,
    /// Sum over the longer ones of (whole µs − number of buckets), as oslat keeps it.
    pub overflow_sum_us: u64,
}

fn stats_ns(s: &GapStats, hz: u64) -> StatsNs {
    let ns = |ticks| ticks_to_ns(ticks, hz);
    StatsNs {
        min: ns(s.min),
        median: ns(s.median),
        mean: ns(s.mean),
        p90: ns(s.p90),
        p99: ns(s.p99),
        p99_9: ns(s.p999),
        p99_99: ns(s.p9999),
        p99_999: ns(s.p99999),
        max: ns(s.max),
        total: ns(s.total),
    }
}

fn cpu_stats(cpu: &CpuLoop<BusyRecord>) -> GapStats {
    let mut ticks: Vec<u64> = cpu.record.gaps.iter().map(|g| g.ticks).collect();
    gap_stats(&mut ticks)
}

impl LoopDocument for JitterRequest {
    const KIND: Kind = Kind::MeasureJitter;
    type Figures = JitterResult;
    fn result(run: &JitterRun, loads: Option<RoundLoad>) -> Measured<JitterResult> {
        result(run, loads)
    }
    fn why_short(cpu: &CpuLoop<BusyRecord>) -> Option<String> {
        cpu.record.full.then(|| {
            format!(
                "CPU {}: the gap buffer filled ({} gaps); its results cover only the time \
                 until then; raise --threshold or --max-gaps",
                cpu.cpu, cpu.record.config.capacity
            )
        })
    }
}

/// Builds the JSON result: the shared header, then the jitter figures, with `loads`, what
/// the loads beside the run achieved.
pub(crate) fn result(run: &JitterRun, loads: Option<RoundLoad>) -> Measured<JitterResult> {
    let spec = &run.request.spec;
    let figures = JitterResult {
        threshold_ns: run.request.threshold_ns,
        span: RunSpan::of(spec, &run.session),
        counter: run.setup,
        per_cpu: LoopCpus::of(run, spec, loads, |cpu| cpu_figures(cpu, run.setup.hz)),
    };
    let header = header(jitter::METHOD, &run.session, run.request.priority);
    Measured { header, figures }
}

/// The figures of one CPU's loop, its counter at `hz`.
fn cpu_figures(cpu: &CpuLoop<BusyRecord>, hz: u64) -> JitterCpu {
    let rec = &cpu.record;
    let stats = cpu_stats(cpu);
    let runtime_ns = ticks_to_ns(rec.runtime_ticks(), hz);
    let seconds = runtime_ns as f64 / 1e9;
    let loops = rec.loops();
    JitterCpu {
        runtime_ns,
        loops,
        loop_period_ns: if loops == 0 {
            0.0
        } else {
            runtime_ns as f64 / loops as f64
        },
        min_loop_period_ns: if rec.min_period == u64::MAX {
            0
        } else {
            ticks_to_ns(rec.min_period, hz)
        },
        interruptions: stats.n,
        per_second: if seconds > 0.0 {
            stats.n as f64 / seconds
        } else {
            0.0
        },
        total_percent: if rec.runtime_ticks() == 0 {
            0.0
        } else {
            stats.total as f64 * 100.0 / rec.runtime_ticks() as f64
        },
        stats_ns: stats_ns(&stats, hz),
        buffer_full: rec.full,
        capacity: rec.config.capacity,
        sysjitter_sort_may_differ: sysjitter_sort_may_differ(&stats),
        histogram: to_json(&rec.hist, |t| ticks_to_ns(t, hz)),
        slices: slices_to_json(&rec.slices().regrouped(SLICES), |t| ticks_to_ns(t, hz)),
        oslat: OslatJson {
            bucket_us: 1,
            counts: rec.buckets.to_vec(),
            overflow_sum_us: rec.overflow_sum,
        },
    }
}

/// The sysjitter summary columns of a run.
pub(crate) fn sysjitter_cores(run: &JitterRun) -> Vec<SysjitterCore> {
    run.session
        .cpus
        .iter()
        .map(|cpu| SysjitterCore {
            cpu: cpu.cpu,
            threshold_ns: run.request.threshold_ns,
            cpu_mhz: run.setup.mhz(),
            runtime_ticks: cpu.record.runtime_ticks(),
            stats: cpu_stats(cpu),
        })
        .collect()
}

/// The sysjitter `--raw` files of a run: (file name, contents) per CPU.
pub(crate) fn raw_files(run: &JitterRun, prefix: &str) -> Vec<(String, String)> {
    let largest = run.session.cpus.iter().map(|c| c.cpu).max().unwrap_or(0);
    run.session
        .cpus
        .iter()
        .zip(sysjitter_cores(run))
        .map(|(cpu, core)| {
            let start = cpu.record.start;
            let gaps: Vec<(u64, u64)> = cpu
                .record
                .gaps
                .iter()
                .map(|g| (g.end.wrapping_sub(start), g.ticks))
                .collect();
            (
                raw_file_name(prefix, cpu.cpu, largest),
                raw_file(&core, &gaps),
            )
        })
        .collect()
}

/// The oslat columns of a run.
pub(crate) fn oslat_threads(run: &JitterRun) -> Vec<OslatThread> {
    let mhz = run.setup.mhz().max(1);
    run.session
        .cpus
        .iter()
        .map(|cpu| {
            let rec = &cpu.record;
            OslatThread {
                cpu: cpu.cpu,
                mhz,
                buckets: rec.buckets,
                overflow_sum: rec.overflow_sum,
                min_us: if rec.min_period == u64::MAX {
                    0
                } else {
                    oslat::oslat_us(rec.min_period, mhz)
                },
                max_us: oslat::oslat_us(rec.max_period, mhz),
                seconds: rec.runtime_ticks() as f64 / run.setup.hz.max(1) as f64,
            }
        })
        .collect()
}

/// The plain terminal table: one row per CPU, latencies in µs, rates per minute, then what each CPU
/// counted during the run and the notes that qualify the numbers.
pub(crate) fn text(run: &JitterRun) -> String {
    let result = result(run, None).figures;
    let mut out = Page::new();
    let tsc = &run.setup;
    writeln!(
        out,
        "jitter: threshold {}, {}; counter {:.3} MHz ({}){}",
        micros_setting(result.threshold_ns),
        result.span.ran_for(run.session.interrupted),
        tsc.hz as f64 / 1e6,
        freq_method(tsc),
        if tsc.invariant { "" } else { ", NOT invariant" },
    );
    let header = [
        "cpu", "gaps", "gaps/min", "min", "median", "mean", "p90", "p99", "p99.9", "max", "total%",
        "loop ns",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for entry in &result.per_cpu.cpus {
        let (cpu, s) = (&entry.figures, &entry.figures.stats_ns);
        rows.push(vec![
            entry.cpu.to_string(),
            cpu.interruptions.to_string(),
            format!("{:.1}", cpu.per_second * 60.0),
            micros(s.min as f64),
            micros(s.median as f64),
            micros(s.mean as f64),
            micros(s.p90 as f64),
            micros(s.p99 as f64),
            micros(s.p99_9 as f64),
            micros(s.max as f64),
            format!("{:.3}", cpu.total_percent),
            format!("{:.1}", cpu.loop_period_ns),
        ]);
    }
    out.text(aligned(&rows));
    out.text(
        "(latencies in µs; loop = mean loop iteration in ns, the detection floor is its minimum)\n",
    );
    for entry in &result.per_cpu.cpus {
        let cpu = &entry.figures;
        let full = cpu.buffer_full.then(|| {
            format!(
                "CPU {}: the gap buffer filled ({} gaps) after {:.3} s; its figures cover only \
                 that time (raise --threshold or --max-gaps)\n",
                entry.cpu,
                cpu.capacity,
                cpu.runtime_ns as f64 / 1e9
            )
        });
        out.text(cpu_notes(entry, full));
    }
    out.text(shared_lines(&run.session.shared));
    out.text(notes(run));
    if let Some(explanation) = &result.per_cpu.explain {
        out.text(explain::text(explanation, "gaps"));
    }
    out.into_string()
}

fn freq_method(tsc: &Tsc) -> String {
    use crate::measure::runner::tsc::FreqMethod;
    match tsc.freq {
        FreqMethod::Cpuid15 => "CPUID leaf 0x15".into(),
        FreqMethod::HypervisorLeaf => "hypervisor CPUID leaf 0x40000010".into(),
        FreqMethod::Calibrated { rounds, spread_ppm } => format!(
            "calibrated against CLOCK_MONOTONIC_RAW, {rounds} rounds, last two {spread_ppm} ppm apart"
        ),
        FreqMethod::MonotonicRaw => "CLOCK_MONOTONIC_RAW".into(),
    }
}

/// Notes that qualify the numbers of a run (virtual machine, SMT siblings measured
/// together, main thread on a measured CPU, memory not locked).
fn notes(run: &JitterRun) -> String {
    let mut out = Page::new();
    if let Some(h) = &run.session.environment.hypervisor {
        writeln!(
            out,
            "note: virtual machine ({}): time the host takes the CPU away counts as interruptions",
            h.vendor
        );
    }
    for cpu in &run.session.environment.cpus {
        if !cpu.measured_siblings.is_empty() {
            writeln!(
                out,
                "note: CPU {} shares its core with measured CPU {}",
                cpu.cpu,
                cpu.measured_siblings.to_list()
            );
        }
    }
    if run.session.main_cpus.is_empty() {
        out.line("note: every usable CPU was measured; the main thread shared them");
    }
    if !run.session.memory_locked {
        out.line("note: memory could not be locked (mlockall); page faults may show up");
    }
    out.into_string()
}
