//! The timer result: its JSON form, the plain terminal table and the cyclictest output.

use super::explain;
use super::header::Measured;
use super::loops::{LoopCpus, LoopDocument, RunSpan, cpu_notes, header, shared_lines};
use super::micros;
use crate::document::Kind;
use crate::measure::engines::timer::deadline_loop::TimerRecord;
use crate::measure::engines::timer::{self, TimerRequest, TimerRun};
use crate::measure::load::RoundLoad;
use crate::measure::runner::slices::SLICES;
use crate::measure::runner::threads::CpuLoop;
use crate::peer::cyclictest::{ThreadLabel, histogram_block, thread_line};
use crate::peer::hdr::{HdrJson, SliceJson, slices_to_json, to_json};
use crate::report::table::aligned;
use crate::text::Page;
use crate::units::micros_setting;
use serde::{Deserialize, Serialize};

/// `lowlat measure timer` as JSON, after the result header.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TimerResult {
    /// The period, ns.
    pub interval_ns: u64,
    /// Duration, wall time and segments of the run.
    #[serde(flatten)]
    pub span: RunSpan,
    /// Why SCHED_FIFO was not used, when it was not.
    pub normal_priority_reason: Option<String>,
    /// The conditions, each measured CPU and the causes.
    #[serde(flatten)]
    pub per_cpu: LoopCpus<TimerCpuResult>,
    /// The lateness from which a wake-up was explained, ns (`--explain` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain_above_ns: Option<u64>,
}

/// One measured CPU's figures in the JSON, after the CPU and its setup error.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TimerCpuResult {
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
    /// The run cut into 16 equal slices of time, each with the histogram of its latencies:
    /// drift inside the run, and the within-run variation compare estimates (absent from
    /// documents written before slices).
    #[serde(default)]
    pub slices: Vec<SliceJson>,
    /// cyclictest's 1 µs histogram, when one was asked for.
    pub cyclictest: Option<CyclicJson>,
}

/// Percentiles of the latency, ns (highest value of the quantile's bucket, at most the
/// largest latency).
#[derive(Debug, Serialize, Deserialize)]
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
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CyclicJson {
    /// Samples per 1 µs bucket (bucket `i`: `[i, i+1)` µs).
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle numbers (0-based) of the first overflows.
    pub overflow_cycles: Vec<u64>,
}

/// The figures of one CPU's loop.
fn cpu_result(cpu: &CpuLoop<TimerRecord>) -> TimerCpuResult {
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
        slices: slices_to_json(&rec.slices.regrouped(SLICES), |ns| ns),
        cyclictest: (!rec.cyclic.buckets.is_empty()).then(|| CyclicJson {
            buckets: rec.cyclic.buckets.clone(),
            overflows: rec.cyclic.overflows,
            overflow_cycles: rec.cyclic.overflow_cycles.clone(),
        }),
    }
}

impl LoopDocument for TimerRequest {
    const KIND: Kind = Kind::MeasureTimer;
    type Figures = TimerResult;
    fn result(run: &TimerRun, loads: Option<RoundLoad>) -> Measured<TimerResult> {
        result(run, loads)
    }
}

/// Builds the JSON result: the shared header, then the timer figures, with `loads`, what the
/// loads beside the run achieved.
pub(crate) fn result(run: &TimerRun, loads: Option<RoundLoad>) -> Measured<TimerResult> {
    let spec = &run.request.spec;
    let header = header(timer::METHOD, &run.session, run.setup.fifo_priority);
    let figures = TimerResult {
        interval_ns: run.request.interval_ns,
        span: RunSpan::of(spec, &run.session),
        normal_priority_reason: run.setup.normal_priority_reason.clone(),
        per_cpu: LoopCpus::of(run, spec, loads, cpu_result),
        explain_above_ns: run.explanation.as_ref().and(run.request.explain_above_ns),
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
    let mut out = Page::new();
    for (index, cpu) in run.session.cpus.iter().enumerate() {
        let label = ThreadLabel {
            index: index as u32,
            tid: cpu.tid,
            priority: run.setup.fifo_priority.unwrap_or(0),
            interval_us: run.request.interval_ns / 1000,
        };
        out.line(thread_line(&label, &cpu.record.cyclic));
    }
    out.into_string()
}

/// The plain terminal table: one row per CPU, latencies in µs with ns precision.
pub(crate) fn text(run: &TimerRun) -> String {
    let Measured {
        header,
        figures: result,
    } = result(run, None);
    let mut out = Page::new();
    writeln!(
        out,
        "timer: every {} for {}, {}",
        micros_setting(result.interval_ns),
        result.span.ran_for(header.interrupted),
        match header.priority {
            Some(p) => format!("SCHED_FIFO {p}"),
            None => "normal priority".to_string(),
        }
    );
    let us = |ns: u64| micros(ns as f64);
    let mut rows = vec![
        [
            "cpu", "samples", "skipped", "min", "avg", "p50", "p90", "p99", "p99.9", "p99.99",
            "max",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for entry in &result.per_cpu.cpus {
        let (cpu, p) = (&entry.figures, &entry.figures.percentiles_ns);
        rows.push(vec![
            entry.cpu.to_string(),
            cpu.samples.to_string(),
            cpu.skipped_periods.to_string(),
            us(cpu.min_ns),
            micros(cpu.mean_ns),
            us(p.p50),
            us(p.p90),
            us(p.p99),
            us(p.p99_9),
            us(p.p99_99),
            us(cpu.max_ns),
        ]);
    }
    out.text(aligned(&rows));
    out.line(
        "(latencies in µs: wake-up time minus deadline; percentiles within 0.1 %; skipped: \
         periods left out because a wake-up came after the next deadline)",
    );
    if let Some(reason) = &result.normal_priority_reason {
        writeln!(out, "note: {reason}");
    }
    for entry in &result.per_cpu.cpus {
        out.text(cpu_notes(entry, None));
    }
    out.text(shared_lines(&run.session.shared));
    if let Some(explanation) = &result.per_cpu.explain {
        if explanation.traced {
            writeln!(
                out,
                "\nlate wake-ups: {} µs or more after their deadline, each joined with the trace \
                 from its deadline to its wake-up",
                micros(result.explain_above_ns.unwrap_or(0) as f64)
            );
        }
        out.text(explain::text(explanation, "late wake-ups"));
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::measure::loops::{Alongside, CpuEntry, RunConditions};

    #[test]
    fn the_shared_fields_keep_their_places_in_the_json() {
        let result = TimerResult {
            interval_ns: 1000,
            span: RunSpan {
                duration_ns: 2_000_000,
                elapsed_ns: 2_000_100,
                segments: 1,
            },
            normal_priority_reason: None,
            per_cpu: LoopCpus {
                conditions: RunConditions {
                    loads: None,
                    inject: None,
                    memory_locked: true,
                    main_cpus: [0].into_iter().collect(),
                    load_average: None,
                },
                cpus: vec![CpuEntry {
                    cpu: 2,
                    setup_error: None,
                    figures: TimerCpuResult {
                        samples: 10,
                        skipped_periods: 0,
                        min_ns: 1,
                        mean_ns: 2.5,
                        max_ns: 4,
                        percentiles_ns: Percentiles {
                            p50: 2,
                            p90: 3,
                            p99: 4,
                            p99_9: 4,
                            p99_99: 4,
                        },
                        histogram: HdrJson {
                            unit: crate::peer::hdr::TimeUnit::Ns,
                            significant_digits: 3,
                            buckets: Vec::new(),
                        },
                        slices: Vec::new(),
                        cyclictest: None,
                    },
                    alongside: Alongside {
                        injector_spins: Some(4),
                        attribution: None,
                    },
                }],
                explain: None,
            },
            explain_above_ns: None,
        };
        let json = serde_json::to_string(&result).unwrap();
        let (run, cpu) = json.split_once("\"cpus\":").unwrap();
        assert_eq!(
            run,
            "{\"interval_ns\":1000,\"duration_ns\":2000000,\"elapsed_ns\":2000100,\
             \"segments\":1,\"normal_priority_reason\":null,\"loads\":null,\"inject\":null,\
             \"memory_locked\":true,\"main_cpus\":\"0\",\"load_average\":null,"
        );
        assert_eq!(
            cpu,
            "[{\"cpu\":2,\"setup_error\":null,\"samples\":10,\"skipped_periods\":0,\
             \"min_ns\":1,\"mean_ns\":2.5,\"max_ns\":4,\"percentiles_ns\":{\"p50\":2,\
             \"p90\":3,\"p99\":4,\"p99_9\":4,\"p99_99\":4},\"histogram\":{\"unit\":\"ns\",\
             \"significant_digits\":3,\"buckets\":[]},\"slices\":[],\"cyclictest\":null,\
             \"injector_spins\":4,\"attribution\":null}]}"
        );
    }
}
