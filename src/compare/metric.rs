//! The figures compared for each CPU, and how each arm's value of one is estimated and tested.

use fastrand::Rng;
use serde::Serialize;

use super::run::{ExposureUnit, Figures, Series, Values};
use super::stats::binomial::{self, Count};
use super::stats::bootstrap::{self, Cumulative};
use super::stats::mann_whitney::{self, Method};
use super::stats::{median, tost};

/// Runs per arm below which run-level figures are not tested: with 4 and 4, Mann-Whitney's
/// smallest two-sided p-value (2/70 ≈ 0.029) first falls below 0.05.
pub const MIN_RUNS: usize = 4;

/// Windows each stream is cut into for the exceedance rate, so that one run alone can show
/// whether its events come at one rate or in bursts; and the number of blocks of the block
/// bootstrap of a stream. Blocks of an eighth of a run (never shorter than ∛n) make slow drift
/// inside a run count as noise, as it would between runs: with the textbook ∛n blocks, the two
/// halves of a recorded 3 s cyclictest run on a busy guest came out "worse" (37 → 39 µs).
const WINDOWS: usize = 8;

/// A figure compared per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// The median latency, ns.
    Median,
    /// The 99th-percentile latency, ns.
    P99,
    /// The largest latency of a run, ns.
    Max,
    /// Latencies above the `--above` threshold, per hour (or per million samples).
    RateAbove,
    /// A kernel's best rate of a run, MB/s (throughput runs; higher is better).
    BestRate,
    /// The mean latency of a run, ns (compared only where a run is a peer's summary, which
    /// prints it; where the latencies are known, the median and p99 say more).
    Mean,
}

impl Metric {
    /// Every latency metric, in the order of the table.
    pub const ALL: [Metric; 4] = [Metric::Median, Metric::P99, Metric::Max, Metric::RateAbove];

    /// Every metric a peer's summary can give, one value per run, in the order of the table.
    pub const SUMMARY: [Metric; 4] = [Metric::Median, Metric::P99, Metric::Max, Metric::Mean];

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Median => "median",
            Metric::P99 => "p99",
            Metric::Max => "max",
            Metric::RateAbove => "rate above",
            Metric::BestRate => "best rate",
            Metric::Mean => "mean",
        }
    }

    /// Whether a higher value is the better one (throughput); for latencies lower is better.
    pub fn higher_is_better(self) -> bool {
        self == Metric::BestRate
    }
}

/// One arm's value of a metric, with its 95 % interval when there is one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The value, in the row's unit.
    pub value: f64,
    /// Lower bound of the 95 % interval, in the row's unit.
    pub low: Option<f64>,
    /// Upper bound of the 95 % interval, in the row's unit.
    pub high: Option<f64>,
    /// Runs that measured this CPU.
    pub runs: usize,
}

/// What the test of one metric found, before correction.
#[derive(Debug, Clone, PartialEq)]
pub struct Tested {
    /// The baseline's value.
    pub a: Estimate,
    /// The candidate's value.
    pub b: Estimate,
    /// The test behind the verdict, named.
    pub test: String,
    /// Two-sided p-value of "no difference" (`None`: not tested, too few runs).
    pub p: Option<f64>,
    /// Whether the candidate was shown within ±margin of the baseline.
    pub equivalent: bool,
}

/// How the metrics are tested.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The exceedance threshold, ns.
    pub above_ns: f64,
    /// The equivalence margin, as a fraction (0.03).
    pub margin: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
}

/// Tests `metric` on one CPU's series of arm `a` and arm `b` (one per run).
pub fn test(
    metric: Metric,
    a: &[&Series],
    b: &[&Series],
    settings: &Settings,
    rng: &mut Rng,
) -> Tested {
    match metric {
        Metric::Median => quantile(0.5, a, b, settings, rng),
        Metric::P99 => quantile(0.99, a, b, settings, rng),
        Metric::Max => max(a, b, settings, rng),
        Metric::RateAbove => rate(a, b, settings, rng),
        Metric::BestRate | Metric::Mean => {
            unreachable!("best rates and means are one value per run: `throughput`, `figures`")
        }
    }
}

/// `metric` of one run's figures, when they give it (ns).
pub fn figure(metric: Metric, figures: &Figures) -> Option<f64> {
    match metric {
        Metric::Median => figures.median,
        Metric::P99 => figures.p99,
        Metric::Max => Some(figures.max),
        Metric::Mean => Some(figures.mean),
        Metric::RateAbove | Metric::BestRate => None,
    }
}

/// Tests `metric` of the figures of a peer's summary, one value per run of arm `a` and arm
/// `b` (ns): runs are the unit.
pub fn figures(metric: Metric, a: &[f64], b: &[f64], settings: &Settings, rng: &mut Rng) -> Tested {
    one_per_run(
        &format!("a summary's {}", metric.name()),
        a,
        b,
        settings,
        rng,
    )
}

/// Runs as the unit: Mann-Whitney on one value per run, the median of runs with a bootstrap
/// interval, and TOST for equivalence.
fn over_runs(what: &str, a: &[f64], b: &[f64], settings: &Settings, rng: &mut Rng) -> Tested {
    let estimate = |values: &[f64], rng: &mut Rng| {
        let mut draws = bootstrap::iid(values, |v| median(v), settings.resamples, rng);
        let (low, high) = bootstrap::interval(&mut draws, 0.95);
        Estimate {
            value: median(values),
            low: Some(low),
            high: Some(high),
            runs: values.len(),
        }
    };
    let mw = mann_whitney::mann_whitney(a, b);
    let method = match mw.map(|m| m.method) {
        Some(Method::Exact) => "exact",
        _ => "normal approximation",
    };
    Tested {
        a: estimate(a, rng),
        b: estimate(b, rng),
        test: format!("Mann-Whitney U over {what} ({method})"),
        p: mw.map(|m| m.p),
        equivalent: tost::tost(a, b, settings.margin).is_some_and(|p| p < 0.05),
    }
}

fn quantile(q: f64, a: &[&Series], b: &[&Series], settings: &Settings, rng: &mut Rng) -> Tested {
    if a.len() >= MIN_RUNS && b.len() >= MIN_RUNS {
        let per_run =
            |arm: &[&Series]| -> Vec<f64> { arm.iter().map(|s| s.values.quantile(q)).collect() };
        return over_runs("runs", &per_run(a), &per_run(b), settings, rng);
    }
    let (draws_a, name_a) = pooled_draws(q, a, settings.resamples, rng);
    let (draws_b, name_b) = pooled_draws(q, b, settings.resamples, rng);
    let estimate = |arm: &[&Series], mut draws: Vec<f64>| {
        let (low, high) = bootstrap::interval(&mut draws, 0.95);
        Estimate {
            value: pooled(arm).quantile(q),
            low: Some(low),
            high: Some(high),
            runs: arm.len(),
        }
    };
    let mut deltas: Vec<f64> = draws_a
        .iter()
        .zip(&draws_b)
        .map(|(x, y)| (y - x) / x * 100.0)
        .collect();
    let below = deltas.iter().filter(|&&d| d <= 0.0).count();
    let above = deltas.iter().filter(|&&d| d >= 0.0).count();
    let p = ((2 * below.min(above) + 1) as f64 / (deltas.len() + 1) as f64).min(1.0);
    let (low, high) = bootstrap::interval(&mut deltas, 0.90);
    let margin = settings.margin * 100.0;
    let test = if name_a == name_b {
        name_a.to_string()
    } else {
        format!("{name_a} (baseline), {name_b} (candidate)")
    };
    Tested {
        a: estimate(a, draws_a),
        b: estimate(b, draws_b),
        test,
        p: Some(p),
        equivalent: low > -margin && high < margin,
    }
}

/// Every latency of `arm` in one histogram.
fn pooled(arm: &[&Series]) -> Cumulative {
    Cumulative::new(arm.iter().flat_map(|s| match &s.values {
        Values::Stream { ns, .. } => ns.iter().map(|&v| (v, 1)).collect::<Vec<_>>(),
        Values::Histogram(h) => h.buckets().collect(),
    }))
}

/// Bootstrap draws of the pooled `q`-quantile of `arm`, and the name of the method: blocks
/// of each run's stream (an eighth of it, see [`WINDOWS`]) when every run kept its order, else
/// draws from the pooled histogram.
fn pooled_draws(
    q: f64,
    arm: &[&Series],
    resamples: usize,
    rng: &mut Rng,
) -> (Vec<f64>, &'static str) {
    let streams: Option<Vec<&Vec<f64>>> = arm
        .iter()
        .map(|s| match &s.values {
            Values::Stream { ns, .. } => Some(ns),
            Values::Histogram(_) => None,
        })
        .collect();
    match streams {
        Some(streams) => {
            let mut pooled = Vec::new();
            let mut one = Vec::new();
            let draws = (0..resamples)
                .map(|_| {
                    pooled.clear();
                    for stream in &streams {
                        let block = stream
                            .len()
                            .div_ceil(WINDOWS)
                            .max(bootstrap::block_length(stream.len()));
                        bootstrap::resample_blocks(stream, block, rng, &mut one);
                        pooled.extend_from_slice(&one);
                    }
                    bootstrap::quantile(&mut pooled, q)
                })
                .collect();
            (
                draws,
                "moving-block bootstrap within runs (blocks of 1/8 run)",
            )
        }
        None => {
            let histogram = pooled(arm);
            let draws = (0..resamples)
                .map(|_| histogram.draw_quantile(q, rng))
                .collect();
            (draws, "bootstrap of the histogram (order in time unknown)")
        }
    }
}

fn max(a: &[&Series], b: &[&Series], settings: &Settings, rng: &mut Rng) -> Tested {
    let per_run =
        |arm: &[&Series]| -> Vec<f64> { arm.iter().map(|s| s.values.quantile(1.0)).collect() };
    one_per_run("the maximum", &per_run(a), &per_run(b), settings, rng)
}

/// Tests one kernel's best rates, one per run of arm `a` and arm `b`, MB/s.
pub fn throughput(a: &[f64], b: &[f64], settings: &Settings, rng: &mut Rng) -> Tested {
    one_per_run("the best rate", a, b, settings, rng)
}

/// Tests a figure that is `what` of each run: runs are the unit (Mann-Whitney, TOST for
/// equivalence) with at least [`MIN_RUNS`] per arm, else not tested.
fn one_per_run(what: &str, a: &[f64], b: &[f64], settings: &Settings, rng: &mut Rng) -> Tested {
    if a.len() >= MIN_RUNS && b.len() >= MIN_RUNS {
        return over_runs("runs", a, b, settings, rng);
    }
    let plain = |values: &[f64]| Estimate {
        value: median(values),
        low: None,
        high: None,
        runs: values.len(),
    };
    Tested {
        a: plain(a),
        b: plain(b),
        test: format!("none: {what} is one value per run; {MIN_RUNS} runs per arm needed"),
        p: None,
        equivalent: false,
    }
}

/// The scale of a rate: per hour for seconds, per million samples for samples.
pub fn rate_scale(unit: ExposureUnit) -> f64 {
    match unit {
        ExposureUnit::Seconds => 3600.0,
        ExposureUnit::Samples => 1e6,
    }
}

/// The units of an arm for the rate: each stream cut into equal windows, each histogram whole.
fn units(arm: &[&Series], above_ns: f64) -> (Vec<Count>, &'static str) {
    let mut units = Vec::new();
    let mut windows = true;
    for series in arm {
        match &series.values {
            Values::Stream { ns, at } => {
                let width = series.exposure / WINDOWS as f64;
                let mut counts = [0u64; WINDOWS];
                for (&v, &t) in ns.iter().zip(at) {
                    if v > above_ns {
                        let w = ((t / width) as usize).min(WINDOWS - 1);
                        counts[w] += 1;
                    }
                }
                units.extend(counts.iter().map(|&events| Count {
                    events,
                    seconds: width,
                }));
            }
            Values::Histogram(_) => {
                windows = false;
                units.push(Count {
                    events: series.values.exceeding(above_ns),
                    seconds: series.exposure,
                });
            }
        }
    }
    (units, if windows { "windows of runs" } else { "runs" })
}

fn rate(a: &[&Series], b: &[&Series], settings: &Settings, rng: &mut Rng) -> Tested {
    let scale = a.first().map_or(3600.0, |s| rate_scale(s.unit));
    let (ua, name_a) = units(a, settings.above_ns);
    let (ub, name_b) = units(b, settings.above_ns);
    let total = |u: &[Count]| Count {
        events: u.iter().map(|c| c.events).sum(),
        seconds: u.iter().map(|c| c.seconds).sum(),
    };
    let (ta, tb) = (total(&ua), total(&ub));
    let dispersion = [binomial::dispersion(&ua), binomial::dispersion(&ub)];
    let bursty = dispersion.iter().flatten().any(|&p| p < 0.05);
    let pooled_estimate = |t: Count, runs: usize| {
        let (low, high) = binomial::poisson_interval(t.events, 0.95);
        Estimate {
            value: t.events as f64 / t.seconds * scale,
            low: Some(low / t.seconds * scale),
            high: Some(high / t.seconds * scale),
            runs,
        }
    };
    if !bursty {
        let shown: Vec<String> = dispersion
            .iter()
            .flatten()
            .map(|p| format!("{p:.2}"))
            .collect();
        let checked = if shown.is_empty() {
            "dispersion not testable: fewer than two units or no events".to_string()
        } else {
            format!("dispersion p = {}", shown.join(", "))
        };
        return Tested {
            a: pooled_estimate(ta, a.len()),
            b: pooled_estimate(tb, b.len()),
            test: format!("exact conditional binomial test of pooled Poisson rates ({checked})"),
            p: Some(binomial::rate_test(ta, tb)),
            equivalent: false,
        };
    }
    let rates = |u: &[Count]| -> Vec<f64> {
        u.iter()
            .map(|c| c.events as f64 / c.seconds * scale)
            .collect()
    };
    let what = if name_a == name_b {
        name_a
    } else {
        "runs and windows"
    };
    if ua.len() >= MIN_RUNS && ub.len() >= MIN_RUNS {
        let mut tested = over_runs(what, &rates(&ua), &rates(&ub), settings, rng);
        tested.test = format!(
            "{} (the units of an arm do not agree with one rate, dispersion p < 0.05: \
             the pooled Poisson test does not hold)",
            tested.test
        );
        tested.a.runs = a.len();
        tested.b.runs = b.len();
        tested.equivalent = false;
        return tested;
    }
    Tested {
        a: pooled_estimate(ta, a.len()),
        b: pooled_estimate(tb, b.len()),
        test: format!(
            "none: the units do not agree with one rate (dispersion p < 0.05) and there are \
             too few {what} to compare them; {MIN_RUNS} runs per arm needed"
        ),
        p: None,
        equivalent: false,
    }
}
