//! `lowlat compare`: two arms of runs (A, the baseline; B, the candidate), read from lowlat's
//! documents and the peers' outputs, compared per CPU and metric with a test that suits the
//! data, corrected for the number of tests (Holm), each with a verdict that names its test:
//! better, worse, no difference, equivalent within ±margin, or inconclusive (too few runs).
//!
//! - `load`: files and bundle directories to runs (format told by content);
//! - `run`: what a run is, whatever wrote it;
//! - `settings`: the settings diff between and within the arms;
//! - `metric`: the figures compared and the test behind each;
//! - `stats`: the statistical tests, checked against scipy.

pub mod load;
pub mod metric;
pub mod run;
pub mod settings;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use load::LoadError;
use metric::{Estimate, MIN_RUNS, Metric, Settings};
use run::{ExposureUnit, Family, Figures, Run, Series};
use settings::SettingsDiff;

/// Significance level of every verdict, after Holm's correction.
pub const ALPHA: f64 = 0.05;

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Latencies above this count as exceedances, ns.
    pub above_ns: f64,
    /// Equivalence margin, as a fraction (0.03 for ±3 %).
    pub margin: f64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// Seed of the bootstrap's random numbers (the same inputs and seed give the same output).
    pub seed: u64,
}

/// The verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Verdict {
    /// The candidate is lower (latency, rate of spikes) or higher (throughput), beyond chance.
    Better,
    /// The candidate is higher (latency) or lower (throughput), beyond chance.
    Worse,
    /// No difference shown, and none ruled out either.
    NoDifference,
    /// The candidate is within ±margin of the baseline.
    Equivalent {
        /// The margin, %.
        margin_percent: f64,
    },
    /// Not tested: too few runs.
    Inconclusive {
        /// Runs per arm the test needs.
        runs_needed: usize,
    },
}

impl Verdict {
    /// The verdict as the table shows it.
    pub fn label(self) -> String {
        match self {
            Verdict::Better => "better".to_string(),
            Verdict::Worse => "worse".to_string(),
            Verdict::NoDifference => "no difference".to_string(),
            Verdict::Equivalent { margin_percent } => format!("equivalent ±{margin_percent}%"),
            Verdict::Inconclusive { runs_needed } => {
                format!("inconclusive (needs {runs_needed} runs per arm)")
            }
        }
    }
}

/// One metric of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The CPU (for cyclictest: the thread index; 0 for throughput, measured on all CPUs).
    pub cpu: u32,
    /// The metric.
    pub metric: Metric,
    /// The kernel of a throughput row (`copy`, `triad`, ...); absent for latency rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The unit of the values: `ns`, `per-hour`, `per-million-samples` or `MB/s`.
    pub unit: &'static str,
    /// The baseline's value.
    pub a: Estimate,
    /// The candidate's value.
    pub b: Estimate,
    /// (b − a) / a, %; `null` when a is 0.
    pub delta_percent: Option<f64>,
    /// The test behind the verdict.
    pub test: String,
    /// Two-sided p-value before correction (`null`: not tested).
    pub p: Option<f64>,
    /// The p-value after Holm's correction over every tested row.
    pub p_holm: Option<f64>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// One arm as read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    /// The files (or prefixes) of its runs.
    pub runs: Vec<String>,
    /// The CPUs its runs measured.
    pub cpus: Vec<u32>,
    /// The threshold below which nothing was recorded, ns (busy-loop gaps only).
    pub threshold_ns: Option<u64>,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// What was measured.
    pub family: Family,
    /// The exceedance threshold, ns.
    pub above_ns: f64,
    /// The equivalence margin, %.
    pub margin_percent: f64,
    /// Significance level after correction.
    pub alpha: f64,
    /// How the p-values were corrected.
    pub correction: String,
    /// The baseline.
    pub a: Arm,
    /// The candidate.
    pub b: Arm,
    /// What differs in the settings.
    pub settings: SettingsDiff,
    /// One row per CPU and metric.
    pub rows: Vec<Row>,
    /// What the reader must know (CPUs compared only on one side, files skipped).
    pub notes: Vec<String>,
}

impl Comparison {
    /// Whether any row is worse (with `any`, any row better or worse).
    pub fn fails(&self, any: bool) -> bool {
        self.rows.iter().any(|r| match r.verdict {
            Verdict::Worse => true,
            Verdict::Better => any,
            _ => false,
        })
    }
}

/// A threshold in messages.
fn threshold(ns: Option<u64>) -> String {
    ns.map_or("none".to_string(), |t| format!("{t} ns"))
}

/// The family, threshold and exposure unit every run of `runs` (arm `name`) shares.
fn arm_of(name: &str, runs: &[Run]) -> Result<(Family, Arm, ExposureUnit), LoadError> {
    let first = runs.first().ok_or_else(|| {
        LoadError::file(
            name,
            "the arm is empty: give at least one file or bundle on each side of `--`",
        )
    })?;
    let unit_of = |run: &Run| run.cpus.values().next().map(|s| s.unit);
    for run in runs {
        let mismatch = |what: String| {
            LoadError::file(
                &run.source,
                format!("{what} in arm {name}; compare like with like"),
            )
        };
        if run.format.family() != first.format.family() {
            return Err(mismatch(format!(
                "holds {}, other",
                run.format.family().name()
            )));
        }
        if run.threshold_ns != first.threshold_ns {
            return Err(mismatch(format!(
                "has threshold {}, where {} has {}",
                threshold(run.threshold_ns),
                first.source,
                threshold(first.threshold_ns)
            )));
        }
        if unit_of(run).is_some() && unit_of(first).is_some() && unit_of(run) != unit_of(first) {
            return Err(mismatch(
                "counts its run length in samples, not seconds (or the reverse), other".to_string(),
            ));
        }
    }
    let cpus: BTreeSet<u32> = runs
        .iter()
        .flat_map(|r| r.cpus.keys().chain(r.summaries.keys()).copied())
        .collect();
    let unit = runs
        .iter()
        .find_map(unit_of)
        .unwrap_or(ExposureUnit::Seconds);
    let arm = Arm {
        runs: runs.iter().map(|r| r.source.clone()).collect(),
        cpus: cpus.into_iter().collect(),
        threshold_ns: first.threshold_ns,
    };
    Ok((first.format.family(), arm, unit))
}

/// The series of `runs`, per CPU.
fn by_cpu(runs: &[Run]) -> BTreeMap<u32, Vec<&Series>> {
    let mut map: BTreeMap<u32, Vec<&Series>> = BTreeMap::new();
    for run in runs {
        for (&cpu, series) in &run.cpus {
            map.entry(cpu).or_default().push(series);
        }
    }
    map
}

/// The figures of `runs`, per CPU: a summary's as printed, those of latencies computed.
fn figures_by_cpu(runs: &[Run]) -> BTreeMap<u32, Vec<Figures>> {
    let mut map: BTreeMap<u32, Vec<Figures>> = BTreeMap::new();
    for run in runs {
        let computed = run
            .cpus
            .iter()
            .map(|(&cpu, s)| (cpu, Figures::of(&s.values)));
        for (cpu, figures) in computed.chain(run.summaries.iter().map(|(&c, &f)| (c, f))) {
            map.entry(cpu).or_default().push(figures);
        }
    }
    map
}

/// The best rates of `runs`, per kernel, MB/s (one per run that measured the kernel).
fn by_kernel(runs: &[Run]) -> BTreeMap<String, Vec<f64>> {
    let mut map: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (kernel, &rate) in &run.rates {
            map.entry(kernel.clone()).or_default().push(rate);
        }
    }
    map
}

/// Compares `a` with `b` once per measurement (busy-loop gaps, timer wake-ups) that both
/// arms hold, as a bundle of `lowlat check` holds both; a measurement only one arm holds is
/// said in the first comparison's notes. Each comparison is corrected (Holm) on its own.
pub fn compare_each(a: &[Run], b: &[Run], options: &Options) -> Result<Vec<Comparison>, LoadError> {
    let families = |runs: &[Run]| -> Vec<Family> {
        let mut seen = Vec::new();
        for run in runs {
            let family = run.format.family();
            if !seen.contains(&family) {
                seen.push(family);
            }
        }
        seen
    };
    let (in_a, in_b) = (families(a), families(b));
    let shared: Vec<Family> = in_a.iter().copied().filter(|f| in_b.contains(f)).collect();
    if shared.len() <= 1 && in_a.len() <= 1 && in_b.len() <= 1 {
        return Ok(vec![compare(a, b, options)?]);
    }
    if shared.is_empty() {
        // Nothing in common: the one comparison says why, naming the files.
        return Ok(vec![compare(a, b, options)?]);
    }
    let of = |runs: &[Run], family: Family| -> Vec<Run> {
        runs.iter()
            .filter(|r| r.format.family() == family)
            .cloned()
            .collect()
    };
    let mut comparisons = shared
        .iter()
        .map(|&family| compare(&of(a, family), &of(b, family), options))
        .collect::<Result<Vec<_>, _>>()?;
    for (arm, only, other) in [("A", &in_a, &in_b), ("B", &in_b, &in_a)] {
        for family in only.iter().filter(|f| !other.contains(f)) {
            comparisons[0]
                .notes
                .push(format!("{} only in arm {arm}: not compared", family.name()));
        }
    }
    Ok(comparisons)
}

/// A tested row before correction: CPU, metric, kernel (throughput) and what the test found.
type TestedRow = (u32, Metric, Option<String>, metric::Tested);

/// The rows of arms where a run is a peer's summary: per CPU, each figure that every run of
/// both arms gives, one value per run; the note says what the summaries cannot give.
fn summary_rows(
    a: &[Run],
    b: &[Run],
    settings: &Settings,
    rng: &mut fastrand::Rng,
    notes: &mut Vec<String>,
) -> Vec<TestedRow> {
    let (figures_a, figures_b) = (figures_by_cpu(a), figures_by_cpu(b));
    let mut rows = Vec::new();
    let mut compared = Vec::new();
    for (cpu, fa) in &figures_a {
        let Some(fb) = figures_b.get(cpu) else {
            continue;
        };
        for metric in Metric::SUMMARY {
            let values = |arm: &[Figures]| -> Option<Vec<f64>> {
                arm.iter().map(|f| metric::figure(metric, f)).collect()
            };
            if let (Some(va), Some(vb)) = (values(fa), values(fb)) {
                if !compared.contains(&metric.name()) {
                    compared.push(metric.name());
                }
                let t = metric::figures(metric, &va, &vb, settings, rng);
                rows.push((*cpu, metric, None, t));
            }
        }
    }
    let formats: BTreeSet<&str> = a
        .iter()
        .chain(b)
        .filter(|r| !r.summaries.is_empty())
        .map(|r| match r.format {
            run::Format::CyclictestSummary => "cyclictest's T: lines",
            _ => "sysjitter's summary table",
        })
        .collect();
    notes.push(format!(
        "runs of {} hold figures, not latencies: compared one value per run ({MIN_RUNS} runs per arm \
         needed) on what every run gives: {}; the rate above --above and the block bootstrap \
         of the latencies need the latencies (sysjitter --raw, cyclictest -v or -h)",
        formats.into_iter().collect::<Vec<_>>().join(" and "),
        compared.join(", ")
    ));
    rows
}

/// Compares arm `a` (baseline) with arm `b` (candidate).
pub fn compare(a: &[Run], b: &[Run], options: &Options) -> Result<Comparison, LoadError> {
    let (family_a, arm_a, unit_a) = arm_of("A", a)?;
    let (family_b, arm_b, unit_b) = arm_of("B", b)?;
    // A summary is compared on its figures only, where the unit of a run's length plays no part.
    let summarised = a.iter().chain(b).any(|r| !r.summaries.is_empty());
    if family_a != family_b
        || arm_a.threshold_ns != arm_b.threshold_ns
        || (unit_a != unit_b && !summarised)
    {
        return Err(LoadError::file(
            &b[0].source,
            format!(
                "arm B ({}, threshold {}) cannot be compared with arm A ({}, threshold {}): \
                 give runs of the same measurement with the same threshold",
                family_b.name(),
                threshold(arm_b.threshold_ns),
                family_a.name(),
                threshold(arm_a.threshold_ns)
            ),
        ));
    }
    let mut notes = Vec::new();
    let only = |x: &Arm, y: &Arm| -> Vec<u32> {
        x.cpus
            .iter()
            .filter(|c| !y.cpus.contains(c))
            .copied()
            .collect()
    };
    for (name, cpus) in [("A", only(&arm_a, &arm_b)), ("B", only(&arm_b, &arm_a))] {
        if !cpus.is_empty() {
            notes.push(format!(
                "CPUs {cpus:?} measured only in arm {name}: not compared"
            ));
        }
    }
    let settings = Settings {
        above_ns: options.above_ns,
        margin: options.margin,
        resamples: options.resamples,
    };
    let mut rng = fastrand::Rng::with_seed(options.seed);
    let mut tested = Vec::new();
    if summarised {
        tested = summary_rows(a, b, &settings, &mut rng, &mut notes);
    } else {
        let (series_a, series_b) = (by_cpu(a), by_cpu(b));
        for (cpu, sa) in &series_a {
            let Some(sb) = series_b.get(cpu) else {
                continue;
            };
            for metric in Metric::ALL {
                tested.push((
                    *cpu,
                    metric,
                    None,
                    metric::test(metric, sa, sb, &settings, &mut rng),
                ));
            }
        }
    }
    if a.iter().chain(b).any(|r| r.format == run::Format::Oslat) {
        notes.push(
            "oslat's last bucket holds every longer loop iteration, counted at its edge \
             (32 µs by default) but for the longest, counted at oslat's Maximum: above that \
             edge, rates and quantiles are lower bounds"
                .to_string(),
        );
    }
    let (rates_a, rates_b) = (by_kernel(a), by_kernel(b));
    for (kernel, ra) in &rates_a {
        match rates_b.get(kernel) {
            Some(rb) => tested.push((
                0,
                Metric::BestRate,
                Some(kernel.clone()),
                metric::throughput(ra, rb, &settings, &mut rng),
            )),
            None => notes.push(format!(
                "kernel {kernel} measured only in arm A: not compared"
            )),
        }
    }
    for kernel in rates_b.keys().filter(|k| !rates_a.contains_key(*k)) {
        notes.push(format!(
            "kernel {kernel} measured only in arm B: not compared"
        ));
    }
    let p: Vec<f64> = tested.iter().filter_map(|t| t.3.p).collect();
    let mut holm = stats::holm::holm(&p).into_iter();
    let rate_unit = match unit_a {
        ExposureUnit::Seconds => "per-hour",
        ExposureUnit::Samples => "per-million-samples",
    };
    let rows = tested
        .into_iter()
        .map(|(cpu, metric, kernel, t)| {
            let p_holm = t.p.and_then(|_| holm.next());
            let delta = (t.b.value - t.a.value) / t.a.value * 100.0;
            // The candidate's change in the metric's good direction.
            let gain = if metric.higher_is_better() {
                t.b.value - t.a.value
            } else {
                t.a.value - t.b.value
            };
            let verdict = match p_holm {
                None => Verdict::Inconclusive {
                    runs_needed: MIN_RUNS,
                },
                Some(p) if p < ALPHA && gain > 0.0 => Verdict::Better,
                Some(p) if p < ALPHA && gain < 0.0 => Verdict::Worse,
                _ if t.equivalent => Verdict::Equivalent {
                    margin_percent: options.margin * 100.0,
                },
                _ => Verdict::NoDifference,
            };
            Row {
                cpu,
                metric,
                kernel,
                unit: match metric {
                    Metric::RateAbove => rate_unit,
                    Metric::BestRate => "MB/s",
                    _ => "ns",
                },
                a: t.a,
                b: t.b,
                delta_percent: delta.is_finite().then_some(delta),
                test: t.test,
                p: t.p,
                p_holm,
                verdict,
            }
        })
        .collect();
    Ok(Comparison {
        family: family_a,
        above_ns: options.above_ns,
        margin_percent: options.margin * 100.0,
        alpha: ALPHA,
        correction: format!(
            "Holm over the {} tested rows ({})",
            p.len(),
            if family_a == Family::Throughput {
                "kernels"
            } else {
                "CPUs × metrics"
            }
        ),
        settings: settings::diff(a, b),
        a: arm_a,
        b: arm_b,
        rows,
        notes,
    })
}
