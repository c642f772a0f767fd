//! The timer result: its JSON form, the plain terminal table and the cyclictest output.

use super::header::{Measured, ResultHeader};
use super::jitter::{aligned, cpu_notes, shared_lines};
use crate::machine::CpuSet;
use crate::measure::engines::timer::TimerRun;
use crate::measure::engines::timer::deadline_loop::TimerRecord;
use crate::measure::runner::attribution::CpuAttribution;
use crate::measure::runner::inject::InjectSpec;
use crate::measure::runner::threads::CpuLoop;
use crate::peer::cyclictest::{ThreadLabel, histogram_block, thread_line};
use crate::peer::hdr::{HdrJson, to_json};
use serde::Serialize;
use std::fmt::Write;

/// How the timer engine measures, in the result header.
pub(crate) const METHOD: &str = "a thread per CPU sleeps to absolute deadlines one interval apart \
     (clock_nanosleep on CLOCK_MONOTONIC with TIMER_ABSTIME, as cyclictest); latency is the \
     clock read on waking minus the deadline";

/// `lowlat measure timer` as JSON, after the result header.
#[derive(Debug, Serialize)]
pub(crate) struct TimerResult {
    /// The period, ns.
    pub interval_ns: u64,
    /// Duration asked for, ns.
    pub duration_ns: u64,
    /// Wall time of the run, ns (of its segments, for a checkpointed run).
    pub elapsed_ns: u64,
    /// Segments the run was measured in: 1, or one per checkpoint interval with `--out` and
    /// `--checkpoint` (nothing is measured for a few ms between two).
    pub segments: u32,
    /// Why SCHED_FIFO was not used, when it was not.
    pub normal_priority_reason: Option<String>,
    /// CPUs loaded with a hog during the run.
    pub load: CpuSet,
    /// The injector run on each measured CPU, if any.
    pub inject: Option<InjectSpec>,
    /// Whether memory was locked (mlockall).
    pub memory_locked: bool,
    /// CPUs the reporting thread ran on (empty: it shared the measured CPUs).
    pub main_cpus: CpuSet,
    /// One entry per measured CPU.
    pub cpus: Vec<TimerCpuResult>,
}

/// One measured CPU in the JSON.
#[derive(Debug, Serialize)]
pub(crate) struct TimerCpuResult {
    /// The CPU.
    pub cpu: u32,
    /// Why it was not measured, when it was not.
    pub setup_error: Option<String>,
    /// Wake-ups recorded.
    pub samples: u64,
    /// Periods skipped because a wake-up came after the next deadline.
    pub skipped_periods: u64,
    /// Smallest latency, ns (0 without samples).
    pub min_ns: u64,
    /// Mean latency, ns.
    pub mean_ns: f64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Latency percentiles from the histogram, ns: p50, p90, p99, p99.9, p99.99.
    pub percentiles_ns: Percentiles,
    /// Histogram of all latencies.
    pub histogram: HdrJson,
    /// cyclictest's 1 µs histogram, when one was asked for.
    pub cyclictest: Option<CyclicJson>,
    /// Spins the injector did on this CPU (absent without `--inject`).
    pub injector_spins: Option<u64>,
    /// What was counted on this CPU during the run.
    pub attribution: Option<CpuAttribution>,
}

/// Percentiles of the latency, ns (highest value of the quantile's bucket, at most the
/// largest latency).
#[derive(Debug, Serialize)]
pub(crate) struct Percentiles {
    /// Median, ns.
    pub p50: u64,
    /// 90th percentile, ns.
    pub p90: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// 99.9th percentile, ns.
    pub p99_9: u64,
    /// 99.99th percentile, ns.
    pub p99_99: u64,
}

/// cyclictest's histogram in the JSON.
#[derive(Debug, Serialize)]
pub(crate) struct CyclicJson {
    /// Samples per 1 µs bucket (bucket `i`: `[i, i+1)` µs).
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle numbers (0-based) of the first overflows.
    pub overflow_cycles: Vec<u64>,
}

fn cpu_result(run: &TimerRun, slot: usize, cpu: &CpuLoop<TimerRecord>) -> TimerCpuResult {
    let rec = &cpu.record;
    let q = |quantile| {
        if rec.hist.is_empty() {
            0
        } else {
            let value = rec.hist.value_at_quantile(quantile);
            rec.hist.highest_equivalent(value).min(rec.max_ns)
        }
    };
    TimerCpuResult {
        cpu: cpu.cpu,
        setup_error: cpu.setup_error.clone(),
        samples: rec.samples(),
        skipped_periods: rec.skipped,
        min_ns: if rec.samples() == 0 { 0 } else { rec.min_ns },
        mean_ns: rec.mean_ns(),
        max_ns: rec.max_ns,
        percentiles_ns: Percentiles {
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        },
        histogram: to_json(&rec.hist, |ns| ns),
        cyclictest: (!rec.cyclic.buckets.is_empty()).then(|| CyclicJson {
            buckets: rec.cyclic.buckets.clone(),
            overflows: rec.cyclic.overflows,
            overflow_cycles: rec.cyclic.overflow_cycles.clone(),
        }),
        injector_spins: run.session.injector_spins.get(slot).copied(),
        attribution: run.session.attribution.get(slot).cloned(),
    }
}

/// Builds the JSON result: the shared header, then the timer figures.
pub(crate) fn result(run: &TimerRun) -> Measured<TimerResult> {
    let header = ResultHeader {
        method: METHOD,
        interrupted: run.session.interrupted,
        warnings: run.session.warning_lines(),
        priority: run.fifo_priority,
        measured_cpus: run.session.cpus.iter().map(|c| c.cpu).collect(),
    };
    let figures = TimerResult {
        interval_ns: run.request.interval_ns,
        duration_ns: u64::try_from(run.request.plan.duration.as_nanos()).unwrap_or(u64::MAX),
        elapsed_ns: run.session.elapsed_ns,
        segments: run.session.segments,
        normal_priority_reason: run.normal_priority_reason.clone(),
        load: run.request.plan.load.clone(),
        inject: run.request.plan.inject,
        memory_locked: run.session.memory_locked,
        main_cpus: run.session.main_cpus.clone(),
        cpus: run
            .session
            .cpus
            .iter()
            .enumerate()
            .map(|(slot, cpu)| cpu_result(run, slot, cpu))
            .collect(),
    };
    Measured { header, figures }
}

/// cyclictest's output for the run: the histogram block when a histogram was asked for
/// (cyclictest `-q -h`), else one `T:` line per thread (cyclictest `-q`).
pub(crate) fn cyclictest(run: &TimerRun) -> String {
    if run.request.histogram_buckets > 0 {
        let stats: Vec<_> = run
            .session
            .cpus
            .iter()
            .map(|c| c.record.cyclic.clone())
            .collect();
        return histogram_block(&stats);
    }
    let mut out = String::new();
    for (index, cpu) in run.session.cpus.iter().enumerate() {
        let label = ThreadLabel {
            index: index as u32,
            tid: cpu.tid,
            priority: run.fifo_priority.unwrap_or(0),
            interval_us: run.request.interval_ns / 1000,
        };
        out.push_str(&thread_line(&label, &cpu.record.cyclic));
        out.push('\n');
    }
    out
}

/// The plain terminal table: one row per CPU, latencies in µs with ns precision.
pub(crate) fn table(run: &TimerRun) -> String {
    let Measured {
        header,
        figures: result,
    } = result(run);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timer: every {} us for {:.3} s{}, {}",
        result.interval_ns / 1000,
        result.elapsed_ns as f64 / 1e9,
        if header.interrupted {
            " (interrupted by Ctrl-C)"
        } else {
            ""
        },
        match header.priority {
            Some(p) => format!("SCHED_FIFO {p}"),
            None => "normal priority".to_string(),
        }
    );
    let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
    let mut rows = vec![
        [
            "cpu", "samples", "skipped", "min", "avg", "p50", "p90", "p99", "p99.9", "p99.99",
            "max",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for cpu in &result.cpus {
        let p = &cpu.percentiles_ns;
        rows.push(vec![
            cpu.cpu.to_string(),
            cpu.samples.to_string(),
            cpu.skipped_periods.to_string(),
            us(cpu.min_ns),
            format!("{:.3}", cpu.mean_ns / 1000.0),
            us(p.p50),
            us(p.p90),
            us(p.p99),
            us(p.p99_9),
            us(p.p99_99),
            us(cpu.max_ns),
        ]);
    }
    out.push_str(&aligned(&rows));
    out.push_str("(latencies in us: wake-up time minus deadline; percentiles within 0.1 %)\n");
    if let Some(reason) = &result.normal_priority_reason {
        let _ = writeln!(out, "note: {reason}");
    }
    for cpu in &result.cpus {
        out.push_str(&cpu_notes(
            cpu.cpu,
            cpu.setup_error.as_deref(),
            None,
            cpu.injector_spins,
            cpu.attribution.as_ref(),
        ));
    }
    out.push_str(&shared_lines(&run.session.shared));
    out
}
