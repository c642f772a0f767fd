//! `lowlat compare`: two arms of runs (A, the baseline; B, the candidate), read from lowlat's
//! documents and the peers' outputs (`report::runs`, beside the types that write lowlat's
//! documents), compared with runs as the unit (docs/statistics.md). The module reads as the
//! method does, one file per step:
//!
//! - `error`: why an input cannot be compared, naming the file and the line;
//! - `run`: what a run is: per CPU its latencies, in slices of its time, and its conditions;
//! - `endpoint`: the primary endpoints, one value per run pooled over the CPUs;
//! - `estimate`: the ratio B/A and its interval from the runs' values (Welch on the logs),
//!   and the minimum detectable effect;
//! - `verdict`: better, worse, no difference, equivalent or inconclusive (one run per arm);
//! - `environment`: steal, other tasks, frequency, throttling, SMIs and load per arm, and the
//!   verdicts they could explain (confounded);
//! - `detail`: the per-CPU rows under the verdicts;
//! - `causes`: the causes of the gaps (`--explain`) that appeared and disappeared, and each
//!   cause's rate judged as the detail rows are;
//! - `settings`: the settings diff between and within the arms;
//! - `effects`: which covariates the settings diff moves (the change's own effect, not a
//!   confounder);
//! - `calibrate`: the A/A calibration of a machine from untouched runs;
//! - `splits`: the splits of the runs a calibration judges, drawn without listing them all;
//! - `stats`: Welch, histograms and Holm, checked against scipy.

pub mod calibrate;
pub mod causes;
pub mod detail;
pub mod effects;
pub mod endpoint;
pub mod environment;
pub mod error;
pub mod estimate;
pub mod run;
pub mod settings;
pub mod splits;
pub mod stats;
pub mod verdict;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use effects::Effect;
use endpoint::Endpoint;
use environment::{Covariate, Side};
use error::LoadError;
use estimate::ArmEstimate;
use run::{ExposureUnit, Family, Run};
use settings::SettingsDiff;
use verdict::{ALPHA, Judged, Verdict};

/// Every unit a compared value is written in (`unit` of primary endpoints, detail rows and
/// causes): latencies, rates per minute or per million samples, bandwidth, messages.
const UNITS: [&str; 7] = [
    "ns",
    "per-minute",
    "per-million-samples",
    "MB/s",
    "messages/s",
    "per-million-messages",
    "",
];

/// A unit of compared values, one of the units compare writes (`ns`, `per-minute`...): a
/// name of its own, so that reading a document back borrows nothing from its text.
pub type Unit = &'static str;

/// Reads a `unit` of a compare document back: one of [`UNITS`]; another is refused, naming it.
fn unit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Unit, D::Error> {
    let text = String::deserialize(d)?;
    UNITS.into_iter().find(|u| *u == text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown unit {text:?}; this lowlat writes {}",
            UNITS.join(", ")
        ))
    })
}

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Latencies above this count as exceedances, ns.
    pub above_ns: f64,
    /// Equivalence margin, as a fraction (0.03 for ±3 %).
    pub margin: f64,
}

/// One arm as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    /// The files (or prefixes) of its runs.
    pub runs: Vec<String>,
    /// The CPUs its runs measured.
    pub cpus: Vec<u32>,
    /// The threshold below which nothing was recorded, ns (busy-loop gaps only).
    pub threshold_ns: Option<u64>,
}

/// One primary endpoint of a comparison: both arms, the ratio and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Primary {
    /// The figure.
    pub endpoint: Endpoint,
    /// The kernel of a throughput endpoint (`copy`, `triad`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The unit of the values: `ns`, `per-minute`, `per-million-samples`, `MB/s`,
    /// `messages/s` or `per-million-messages`.
    #[serde(deserialize_with = "unit")]
    pub unit: Unit,
    /// The baseline's value (geometric mean of its runs) with its 95 % interval.
    pub a: ArmEstimate,
    /// The candidate's value.
    pub b: ArmEstimate,
    /// B / A.
    pub ratio: f64,
    /// The 95 % interval of the ratio from the runs (`null` with one run in an arm).
    pub ratio_interval: Option<(f64, f64)>,
    /// Standard error of each arm's log value from the variation inside its runs (the
    /// slices), A then B (`null` where the runs have no slices).
    pub within_run_se: Option<(f64, f64)>,
    /// The test behind the verdict.
    pub test: String,
    /// Two-sided p-value before correction (`null`: not tested).
    pub p: Option<f64>,
    /// After Holm's correction over every primary endpoint compared.
    pub p_holm: Option<f64>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The covariates that could explain the verdict and that no setting of the diff moves
    /// (empty: none); a confounded verdict does not set the exit code unless `--fail-on any`.
    pub confounded_by: Vec<Covariate>,
    /// The covariates that differ the verdict's way and that settings of the diff move: the
    /// way the change worked ("better, through" those settings), not a confounder. Absent
    /// from documents written before compare knew the change's effects.
    #[serde(default)]
    pub through: Vec<Effect>,
    /// The smallest change these runs detect with 80 % power at the corrected level, %
    /// (`null` with one run in an arm).
    pub detectable_percent: Option<f64>,
    /// The same with twice as many runs per arm, %.
    pub detectable_percent_doubled: Option<f64>,
    /// How it was judged; a document read back keeps only the verdict.
    #[serde(skip, default = "Judged::read_back")]
    judged: Judged,
    /// Whether it is a rate above `--above` saturated in every run ([`endpoint::saturated`]).
    #[serde(skip)]
    saturated: bool,
}

/// A whole comparison of one measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The primary endpoints: the headline verdicts and the exit code.
    pub primary: Vec<Primary>,
    /// The environment of both arms, and the differences that could explain a verdict.
    pub environment: Vec<environment::Row>,
    /// Per CPU and metric, the detail (verdicts corrected over these rows; no exit code).
    pub rows: Vec<detail::Row>,
    /// The causes of the gaps compared, when every run of both arms was explained
    /// (`measure jitter --explain`, a check's jitter runs); verdicts corrected over the causes,
    /// no exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causes: Option<causes::CausesDiff>,
    /// What the reader must know (CPUs compared only on one side, files skipped).
    pub notes: Vec<String>,
}

impl Comparison {
    /// Whether a primary endpoint is worse and not confounded (with `any`, whether any is
    /// better or worse, confounded or not).
    pub fn fails(&self, any: bool) -> bool {
        self.primary.iter().any(|p| match p.verdict {
            Verdict::Worse => any || p.confounded_by.is_empty(),
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
            return Err(LoadError::file(
                &run.source,
                format!(
                    "holds {}, while {} (also in arm {name}) holds {}, and the two arms \
                     share no measurement to compare: give runs of the same measurement on \
                     both sides of `--` (the files of one kind, or bundles of `lowlat check \
                     --out` on both sides)",
                    run.format.family().name(),
                    first.source,
                    first.format.family().name()
                ),
            ));
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
            return Err(mismatch(format!(
                "counts its run length in {}, where {} counts it in {}",
                unit_of(run).map_or("?", ExposureUnit::name),
                first.source,
                unit_of(first).map_or("?", ExposureUnit::name)
            )));
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

/// Compares `a` with `b` once per measurement (busy-loop gaps, timer wake-ups) that both
/// arms hold, as bundles of `lowlat check` do; a measurement only one arm holds is said in
/// the first comparison's notes. The primary endpoints of all comparisons are corrected
/// together (Holm), since together they make the exit code.
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
    let mut comparisons =
        if shared.len() <= 1 && in_a.len() <= 1 && in_b.len() <= 1 || shared.is_empty() {
            // One measurement, or nothing in common: the one comparison says why, naming files.
            vec![compare(a, b, options)?]
        } else {
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
            comparisons
        };
    decide(&mut comparisons, options.margin);
    Ok(comparisons)
}

/// Corrects the primary endpoints' p-values over every comparison (Holm), then gives each
/// its verdict and the covariates that could explain it.
fn decide(comparisons: &mut [Comparison], margin: f64) {
    let p: Vec<f64> = comparisons
        .iter()
        .flat_map(|c| c.primary.iter().filter_map(|e| e.p))
        .collect();
    let mut adjusted = stats::holm::holm(&p).into_iter();
    let tested = p.len();
    for comparison in comparisons.iter_mut() {
        comparison.correction = match tested {
            0 => "no primary endpoint tested (one run in an arm); the detail rows do not set \
                  the exit code"
                .to_string(),
            1 => "one primary endpoint tested, nothing to correct; the detail rows are \
                  corrected over themselves and do not set the exit code"
                .to_string(),
            n => format!(
                "Holm over the {n} primary endpoints tested; the detail rows are corrected \
                 over themselves and do not set the exit code"
            ),
        };
        for e in &mut comparison.primary {
            e.p_holm = e.p.and_then(|_| adjusted.next());
            e.verdict = verdict::decide(
                &e.judged,
                e.p_holm,
                e.endpoint.higher_is_better(),
                margin,
                e.ratio,
            );
            if e.saturated {
                e.verdict = Verdict::Saturated;
            }
            let explains = match e.verdict {
                Verdict::Worse => Some(Side::B),
                Verdict::Better => Some(Side::A),
                _ => None,
            };
            if let Some(side) = explains {
                let environment = &comparison.environment;
                e.confounded_by = environment
                    .iter()
                    .filter(|row| row.confounds(side))
                    .map(|row| row.covariate)
                    .collect();
                e.through = environment
                    .iter()
                    .filter(|row| row.worse == Some(side) && !row.moved_by.is_empty())
                    .map(|row| Effect {
                        covariate: row.covariate,
                        settings: row.moved_by.clone(),
                    })
                    .collect();
            }
            // The level the first step of Holm's correction tests at.
            let alpha = ALPHA / tested.max(1) as f64;
            let runs = e.a.runs.min(e.b.runs);
            if let Judged::Tested(effect) = e.judged {
                let percent = |m: Option<f64>| m.map(|m| (m - 1.0) * 100.0);
                e.detectable_percent = percent(estimate::mde(effect.sd, runs, alpha));
                e.detectable_percent_doubled = percent(estimate::mde(effect.sd, 2 * runs, alpha));
            }
        }
    }
}

/// The values of `endpoint` (of `kernel`, for throughput), one per run of `runs`, when every
/// run gives one.
fn values(
    endpoint: Endpoint,
    kernel: Option<&str>,
    runs: &[Run],
    cpus: &[u32],
    above_ns: f64,
) -> Option<Vec<f64>> {
    runs.iter()
        .map(|r| match kernel {
            Some(k) => r.rates.get(k).copied().filter(|v| *v > 0.0),
            None => endpoint::of_run(endpoint, r, cpus, above_ns),
        })
        .collect()
}

/// The standard error of an arm's mean log value from the variation inside its runs.
fn within_arm_se(endpoint: Endpoint, runs: &[Run], cpus: &[u32], above_ns: f64) -> Option<f64> {
    let se: Vec<f64> = runs
        .iter()
        .map(|r| endpoint::within_run_se(endpoint, r, cpus, above_ns))
        .collect::<Option<_>>()?;
    let n = se.len() as f64;
    Some((se.iter().map(|s| s * s).sum::<f64>() / n / n).sqrt())
}

/// One primary endpoint of `a` against `b`, judged but not yet decided (see [`decide`]).
fn primary(
    endpoint: Endpoint,
    kernel: Option<String>,
    unit: &'static str,
    (a, b): (&[Run], &[Run]),
    cpus: &[u32],
    above_ns: f64,
) -> Option<Primary> {
    let va = values(endpoint, kernel.as_deref(), a, cpus, above_ns)?;
    let vb = values(endpoint, kernel.as_deref(), b, cpus, above_ns)?;
    let within =
        within_arm_se(endpoint, a, cpus, above_ns).zip(within_arm_se(endpoint, b, cpus, above_ns));
    let judged = verdict::judge(endpoint, &va, &vb, within);
    let (ea, eb) = (estimate::arm(&va), estimate::arm(&vb));
    let (test, p, interval) = match &judged {
        Judged::Tested(effect) => (
            format!(
                "Welch's t on the logarithms of the runs' values ({} and {} runs)",
                va.len(),
                vb.len()
            ),
            Some(effect.p),
            Some(effect.interval),
        ),
        Judged::OneRun { .. } => (
            format!(
                "one run in an arm: a change only beyond the variation inside the runs (their \
                 slices) and the run-to-run bound ×{}",
                endpoint.run_to_run_bound()
            ),
            None,
            None,
        ),
    };
    let saturated =
        endpoint == Endpoint::RateAbove && endpoint::saturated(a.iter().chain(b), cpus, above_ns);
    Some(Primary {
        endpoint,
        kernel,
        unit,
        a: ea,
        b: eb,
        ratio: eb.value / ea.value,
        ratio_interval: interval,
        within_run_se: within,
        test,
        p,
        p_holm: None,
        verdict: Verdict::NoDifference,
        confounded_by: Vec::new(),
        through: Vec::new(),
        detectable_percent: None,
        detectable_percent_doubled: None,
        judged,
        saturated,
    })
}

/// Compares arm `a` (baseline) with arm `b` (candidate), one measurement; the verdicts are
/// given by [`compare_each`], which corrects over every comparison.
fn compare(a: &[Run], b: &[Run], options: &Options) -> Result<Comparison, LoadError> {
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
    let cpus: Vec<u32> = arm_a
        .cpus
        .iter()
        .filter(|c| arm_b.cpus.contains(c))
        .copied()
        .collect();
    for (name, x, y) in [("A", &arm_a, &arm_b), ("B", &arm_b, &arm_a)] {
        let only: Vec<u32> = x
            .cpus
            .iter()
            .filter(|c| !y.cpus.contains(c))
            .copied()
            .collect();
        if !only.is_empty() {
            notes.push(format!(
                "CPUs {only:?} measured only in arm {name}: not compared"
            ));
        }
    }
    let above_ns = options.above_ns;
    let mut primary_rows = Vec::new();
    let mut rows = Vec::new();
    let mut causes = None;
    if family_a == Family::Throughput {
        let kernels = |runs: &[Run]| -> BTreeSet<String> {
            runs.iter().flat_map(|r| r.rates.keys().cloned()).collect()
        };
        let (ka, kb) = (kernels(a), kernels(b));
        for kernel in ka.intersection(&kb) {
            primary_rows.extend(primary(
                Endpoint::BestRate,
                Some(kernel.clone()),
                "MB/s",
                (a, b),
                &cpus,
                above_ns,
            ));
        }
        for (name, x, y) in [("A", &ka, &kb), ("B", &kb, &ka)] {
            for kernel in x.difference(y) {
                notes.push(format!(
                    "kernel {kernel} measured only in arm {name}: not compared"
                ));
            }
        }
    } else {
        let (endpoints, rate_unit): (&[Endpoint], &str) = if summarised {
            (&Endpoint::SUMMARIES, "")
        } else if family_a == Family::RoundTrips {
            (&Endpoint::ROUND_TRIPS, "")
        } else {
            (&Endpoint::LATENCIES, unit_a.rate_unit().0)
        };
        let explained = |r: &Run| r.causes.is_some();
        let causes_too = family_a == Family::Gaps && a.iter().chain(b).all(explained);
        let endpoints = endpoints.iter().chain(if causes_too {
            &Endpoint::CAUSES[..]
        } else {
            &[]
        });
        for &e in endpoints {
            let lossless = |r: &Run| r.traffic.is_some_and(|t| t.lost == 0);
            if e == Endpoint::Loss && a.iter().chain(b).all(lossless) {
                // Its rate would be the 0.5 message per run that keeps a lossless run
                // comparable, not a loss seen.
                notes.push(format!(
                    "{}: none in any run of either arm; not compared",
                    e.name()
                ));
                continue;
            }
            let unit = match e {
                Endpoint::RateAbove => rate_unit,
                e if e.classes().is_some() => causes::UNIT,
                Endpoint::MessageRate => "messages/s",
                Endpoint::Loss => "per-million-messages",
                _ => "ns",
            };
            match primary(e, None, unit, (a, b), &cpus, above_ns) {
                Some(row) => primary_rows.push(row),
                None => notes.push(format!(
                    "{}: not every run gives it on every CPU compared; not compared",
                    e.name()
                )),
            }
        }
        if let Some(rate) = primary_rows.iter().find(|e| e.saturated) {
            let micros = |ns: f64| format!("{} µs", ns / 1e3);
            let median = primary_rows.iter().find(|e| e.endpoint == Endpoint::Median);
            let medians = median.map_or(String::new(), |m| {
                format!(
                    " (the median of the runs' medians: A {}, B {})",
                    micros((m.a.value / 100.0).round() * 100.0),
                    micros((m.b.value / 100.0).round() * 100.0)
                )
            });
            notes.push(format!(
                "{}: {} % or more of every run's wake-ups were above --above {}, in both arms: \
                 the rate is the timer's wake-up rate and carries no information either way \
                 (verdict: no information); compare with an --above above most wake-ups{medians}",
                rate.endpoint.name(),
                endpoint::SATURATED_SHARE * 100.0,
                micros(above_ns),
            ));
        }
        rows = detail::rows(a, b, &cpus, above_ns, options.margin);
        causes = causes::diff(a, b, &cpus, options.margin);
        let explained: Vec<&str> = a
            .iter()
            .chain(b)
            .filter(|r| r.causes.is_some())
            .map(|r| r.source.as_str())
            .collect();
        if causes.is_none() && !explained.is_empty() {
            let unexplained = a
                .iter()
                .chain(b)
                .find(|r| r.causes.is_none())
                .map_or("", |r| r.source.as_str());
            notes.push(format!(
                "the causes of the gaps are not compared: {} run(s) were explained, but not \
                 e.g. {unexplained} (explain every run of both arms: measure jitter --explain)",
                explained.len()
            ));
        }
        if summarised {
            notes.push(
                "runs of peers' summaries hold figures, not latencies: compared one value per \
                 run on what every run gives; the rate above --above and the variation inside a \
                 run need the latencies (sysjitter --raw, cyclictest -v or -h)"
                    .to_string(),
            );
        }
        let unsliced: Vec<&str> = a
            .iter()
            .chain(b)
            .filter(|r| r.cpus.values().any(|s| s.slices.is_empty()))
            .map(|r| r.source.as_str())
            .collect();
        for run in a.iter().chain(b) {
            let counts: BTreeSet<usize> = run
                .cpus
                .values()
                .map(|s| s.slices.len())
                .filter(|&n| n > 0)
                .collect();
            if counts.len() > 1 {
                notes.push(format!(
                    "{}: its CPUs have different numbers of slices ({}): the variation inside \
                     this run is not used",
                    run.source,
                    counts
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        if !unsliced.is_empty() {
            notes.push(format!(
                "{} run(s) keep no order in time (histograms, or lowlat documents written before \
                 slices): the variation inside them is unknown, so one run per arm cannot be \
                 judged; e.g. {}",
                unsliced.len(),
                unsliced[0]
            ));
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
    let settings = settings::diff(a, b);
    let environment = environment::rows(
        &a.iter().collect::<Vec<_>>(),
        &b.iter().collect::<Vec<_>>(),
        &cpus,
        |covariate| effects::moved_by(&settings.between, covariate),
    );
    let recorded = |runs: &[Run]| runs.iter().any(|r| !r.conditions.is_empty());
    match (recorded(a), recorded(b)) {
        (true, false) | (false, true) => notes.push(format!(
            "the conditions of the runs (steal, other tasks, frequency...) are recorded in arm {} \
             only: no claim either way about the environment",
            if recorded(a) { "A" } else { "B" }
        )),
        _ => {}
    }
    Ok(Comparison {
        family: family_a,
        above_ns,
        margin_percent: options.margin * 100.0,
        alpha: ALPHA,
        correction: String::new(),
        settings,
        a: arm_a,
        b: arm_b,
        primary: primary_rows,
        environment,
        rows,
        causes,
        notes,
    })
}

/// The `host` of a document about `runs`: the hosts their documents name, each once in the
/// order met (`db1`, or `db1, db2` for runs of two machines), or `unknown` where none names
/// one (peers' outputs).
pub fn hosts<'a>(runs: impl IntoIterator<Item = &'a Run>) -> String {
    let mut hosts: Vec<&str> = Vec::new();
    for host in runs.into_iter().filter_map(|r| r.host.as_deref()) {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    crate::document::host((!hosts.is_empty()).then(|| hosts.join(", ")))
}

/// The runs of `runs` per family, in the order met.
pub fn by_family(runs: &[Run]) -> BTreeMap<Family, Vec<Run>> {
    let mut map: BTreeMap<Family, Vec<Run>> = BTreeMap::new();
    for run in runs {
        map.entry(run.format.family())
            .or_default()
            .push(run.clone());
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use run::{CpuConditions, ExposureUnit, Format, Series};

    /// A run of CPU 1, 10 s long, whose gaps are `scale` times a fixed spread (the `k`th run
    /// a little off the others), that shared CPU 1 with other tasks for `others_s` seconds,
    /// under `settings`.
    fn run(k: usize, scale: f64, others_s: f64, settings: &[(&str, &str)]) -> Run {
        let mut r = Run::empty(format!("r{k}"), Format::LowlatJitter);
        let jitter = 1.0 + 0.02 * k as f64;
        let stream = (0..2000).map(|i| {
            let gap = (1000.0 + (i % 100) as f64 * 30.0) * scale * jitter;
            (i as f64 * 0.005, gap)
        });
        r.cpus.insert(
            1,
            Series::from_stream(stream, 10.0, ExposureUnit::Seconds).unwrap(),
        );
        r.conditions.insert(
            1,
            CpuConditions {
                steal_ns: Some(0.0),
                others_ns: Some(others_s * 1e9 * jitter),
                ..CpuConditions::default()
            },
        );
        r.settings = Some(
            settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        r
    }

    const OPTIONS: Options = Options {
        above_ns: 5_000.0,
        margin: 0.03,
    };

    /// The worst p99 of A (slow, shared with other tasks) against B (fast, not shared).
    fn worst_p99(b_settings: &[(&str, &str)]) -> Primary {
        let untouched = [("sysctl:vm.swappiness", "60")];
        let a: Vec<Run> = (0..4).map(|k| run(k, 10.0, 6.0, &untouched)).collect();
        let b: Vec<Run> = (0..4).map(|k| run(k, 1.0, 0.0, b_settings)).collect();
        let comparisons = compare_each(&a, &b, &OPTIONS).unwrap();
        comparisons[0]
            .primary
            .iter()
            .find(|p| p.endpoint == Endpoint::WorstP99)
            .unwrap()
            .clone()
    }

    /// Issue 47: isolating the CPUs is the change; the other tasks it moved away are how it
    /// worked, not a confounder.
    #[test]
    fn other_tasks_moved_away_by_a_cpuset_are_the_change_not_a_confounder() {
        let p = worst_p99(&[
            ("sysctl:vm.swappiness", "60"),
            ("cpuset:/lowlat-isolated:cpus", "1"),
            ("workqueue:cpumask", "0"),
        ]);
        assert_eq!(p.verdict, Verdict::Better, "{p:?}");
        assert!(p.confounded_by.is_empty(), "{p:?}");
        assert_eq!(
            p.through,
            [Effect {
                covariate: Covariate::OtherTasks,
                settings: vec![
                    "cpuset:/lowlat-isolated:cpus".to_string(),
                    "workqueue:cpumask".to_string()
                ],
            }]
        );
    }

    /// Another task that appeared (here: went away) with no setting changed is the host's
    /// doing: confounded.
    #[test]
    fn other_tasks_without_a_settings_change_still_confound() {
        let p = worst_p99(&[("sysctl:vm.swappiness", "60")]);
        assert_eq!(p.verdict, Verdict::Better, "{p:?}");
        assert_eq!(p.confounded_by, [Covariate::OtherTasks]);
        assert!(p.through.is_empty());
    }

    /// A setting that does not move other tasks (the swappiness) cannot explain them away.
    #[test]
    fn a_setting_that_does_not_move_other_tasks_still_confounds() {
        let p = worst_p99(&[("sysctl:vm.swappiness", "0")]);
        assert_eq!(p.verdict, Verdict::Better, "{p:?}");
        assert_eq!(p.confounded_by, [Covariate::OtherTasks]);
        assert!(p.through.is_empty());
        // A worse candidate is then not counted in the exit code; through the change it is.
        let kswapd = ("kthread:kswapd0:affinity", "0-1");
        let a: Vec<Run> = (0..4).map(|k| run(k, 1.0, 0.0, &[kswapd])).collect();
        let b: Vec<Run> = (0..4)
            .map(|k| run(k, 10.0, 6.0, &[kswapd, ("sysctl:vm.swappiness", "0")]))
            .collect();
        assert!(!compare_each(&a, &b, &OPTIONS).unwrap()[0].fails(false));
        let b: Vec<Run> = (0..4)
            .map(|k| run(k, 10.0, 6.0, &[("kthread:kswapd0:affinity", "1")]))
            .collect();
        assert!(compare_each(&a, &b, &OPTIONS).unwrap()[0].fails(false));
    }

    /// Runs explained (`--explain`) with the tick at 250/s in every run and another task at
    /// `task` per second, a little off from run to run.
    fn explained(k: usize, scale: f64, task: u64) -> Run {
        use crate::measure::trace::cause_count::CauseCount;
        use crate::measure::trace::explain::Class;
        let mut r = run(k, scale, 0.0, &[]);
        let cause = |class, source: &str, count| CauseCount {
            cpu: 1,
            class,
            source: source.into(),
            irq: None,
            count,
        };
        let wobble = |n: u64| n + (k as u64 * 37) % 11 * n / 100;
        let mut causes = vec![
            cause(Class::Tick, "tick_nohz_handler", wobble(2500)),
            cause(Class::NoKernelEvent, "no kernel event", wobble(400)),
        ];
        if task > 0 {
            causes.push(cause(Class::Task, "spinner", wobble(task * 10)));
        }
        r.causes = Some(causes);
        r
    }

    /// Issue 47 item 3: the cause rates are endpoints beside the quantiles, judged as they are,
    /// with what the runs can detect.
    #[test]
    fn the_rates_of_the_causes_are_endpoints_with_what_the_runs_detect() {
        let a: Vec<Run> = (0..4).map(|k| explained(k, 1.0, 100)).collect();
        let b: Vec<Run> = (0..4).map(|k| explained(k + 4, 1.0, 0)).collect();
        let c = &compare_each(&a, &b, &OPTIONS).unwrap()[0];
        let of = |e: Endpoint| c.primary.iter().find(|p| p.endpoint == e).unwrap();
        let task = of(Endpoint::TaskRate);
        assert_eq!(task.unit, "per-minute");
        assert_eq!(task.verdict, Verdict::Better, "{task:?}");
        // 100 per second: 6,000 per minute, within the planted wobble of ≤ 10 %.
        assert!((task.a.value / 6_000.0 - 1.0).abs() < 0.1, "{task:?}");
        // 0.5 per 10 s run: 3 per minute.
        assert!((task.b.value - 3.0).abs() < 1e-9, "{task:?}");
        let tick = of(Endpoint::TickRate);
        assert!(!tick.verdict.differs(), "{tick:?}");
        assert!((tick.a.value / 15_000.0 - 1.0).abs() < 0.1, "{tick:?}");
        for e in Endpoint::CAUSES {
            assert!(of(e).detectable_percent.is_some(), "{e:?}");
        }
        // Corrected with the quantiles: 3 + 4 endpoints.
        assert!(
            c.correction.contains("the 7 primary endpoints"),
            "{}",
            c.correction
        );
        // A run not explained: no cause rate (a cause missing from it is not a cause gone).
        let mut b = b;
        b[0].causes = None;
        let c = &compare_each(&a, &b, &OPTIONS).unwrap()[0];
        assert!(c.primary.iter().all(|p| p.endpoint.classes().is_none()));
    }

    /// A/A: the same causes at the same rates in both arms call no cause rate different.
    #[test]
    fn the_same_causes_in_both_arms_call_no_rate_different() {
        let a: Vec<Run> = (0..4).map(|k| explained(k, 1.0, 100)).collect();
        let b: Vec<Run> = (0..4).map(|k| explained(k + 4, 1.0, 100)).collect();
        let c = &compare_each(&a, &b, &OPTIONS).unwrap()[0];
        for p in c.primary.iter().filter(|p| p.endpoint.classes().is_some()) {
            assert!(!p.verdict.differs(), "{p:?}");
        }
    }

    /// Issue 50 item 1: the report reads a compare document back through these types. Every
    /// field written reads back the same; a document written before `through` and `moved_by`
    /// reads with them empty.
    #[test]
    fn a_comparison_reads_back_as_written() {
        let settings = |pairs: &[(&str, &str)]| run(0, 1.0, 0.0, pairs).settings;
        let mut a: Vec<Run> = (0..4).map(|k| explained(k, 10.0, 100)).collect();
        for (k, r) in a.iter_mut().enumerate() {
            r.conditions = run(k, 1.0, 6.0, &[]).conditions;
            r.settings = settings(&[("sysctl:vm.swappiness", "60")]);
        }
        let mut b: Vec<Run> = (0..4).map(|k| explained(k + 4, 1.0, 0)).collect();
        for r in &mut b {
            r.settings = settings(&[
                ("sysctl:vm.swappiness", "60"),
                ("cpuset:/lowlat-isolated:cpus", "1"),
            ]);
        }
        let written = serde_json::to_value(compare_each(&a, &b, &OPTIONS).unwrap()).unwrap();
        let text = written.to_string();
        assert!(text.contains("\"through\":[{"), "{text}");
        assert!(text.contains("\"moved_by\":[\"cpuset:"), "{text}");
        assert!(text.contains("\"task-rate\""), "{text}");
        assert!(text.contains("\"causes\":{"), "{text}");
        let read: Vec<Comparison> = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
        let older = text
            .replace("\"through\":", "\"through_\":")
            .replace("\"moved_by\":", "\"moved_by_\":");
        let read: Vec<Comparison> = serde_json::from_str(&older).unwrap();
        assert!(read[0].primary.iter().all(|p| p.through.is_empty()));
        assert!(read[0].environment.iter().all(|r| r.moved_by.is_empty()));
    }
}
