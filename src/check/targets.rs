//! The measured targets of each profile, kept as data (`targets.table`, with a source per
//! row), the metrics they are stated in, and the evidence a target is judged on: a maximum as
//! measured, a rate on the exact Poisson upper bound of its count, a quantile on the
//! distribution-free upper bound of its order statistics, so that a short run does not pass a
//! target it cannot prove.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, DiscreteCDF};

use crate::audit::site::{Site, SiteError};
use crate::tuning::profile_name::ProfileName;
use crate::units::parse::duration_with_unit;

use super::CpuFigures;

/// The confidence of the upper bound a rate target is judged on.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// The exact (Garwood) one-sided [`CONFIDENCE`] upper bound of a Poisson mean after `events`
/// events: the mean at which seeing `events` or fewer has probability 1 − CONFIDENCE (half the
/// chi-square quantile on 2·events + 2 degrees of freedom; 3.0 for no event). compare's
/// `poisson_interval` is the two-sided interval of the same family.
pub(crate) fn poisson_upper_bound(events: u64) -> f64 {
    ChiSquared::new(2.0 * events as f64 + 2.0)
        .map_or(f64::INFINITY, |d| d.inverse_cdf(CONFIDENCE) / 2.0)
}

/// How long a run must be, in the rate's unit of time, for no event to prove a rate below
/// `limit`: the bound after no event, −ln(1 − CONFIDENCE), over the limit.
pub(crate) fn exposure_to_prove(limit: f64) -> f64 {
    -(1.0 - CONFIDENCE).ln() / limit
}

/// How long a run must be, in the rate's unit of time, for its bound to fall below `limit`
/// when events keep coming at `rate` (below `limit`): the exposure T at which the bound after
/// the expected rate·T events, the chi-square quantile on the continuous 2·rate·T + 2 degrees
/// of freedom, is below `limit`. [`exposure_to_prove`] for a rate of 0; `None` when `rate` is
/// not below `limit` (no run proves it) or the exposure passes a million times the limit's
/// unit.
pub(crate) fn exposure_to_prove_at(rate: f64, limit: f64) -> Option<f64> {
    if !(rate >= 0.0 && rate < limit) {
        return None;
    }
    let bound = |exposure: f64| {
        ChiSquared::new(2.0 * rate * exposure + 2.0)
            .map_or(f64::INFINITY, |d| d.inverse_cdf(CONFIDENCE) / 2.0)
            / exposure
    };
    // The bound falls with the exposure, towards the rate: bisect between the exposure that
    // no event needs (a lower limit: the bound never drops under the one of no event) and
    // the first doubling of it that is enough.
    let mut low = exposure_to_prove(limit);
    let mut high = low;
    while bound(high) >= limit {
        low = high;
        high *= 2.0;
        if high > 1e6 / limit {
            return None;
        }
    }
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if bound(middle) >= limit {
            low = middle;
        } else {
            high = middle;
        }
    }
    Some(high)
}

/// The 1-based rank, among `samples` samples sorted from the least, of the order statistic that
/// is a distribution-free one-sided [`CONFIDENCE`] upper bound of the `quantile` (0–1): the
/// least k for which at most k − 1 samples fall below the quantile with probability
/// [`CONFIDENCE`] or more (the Binomial(samples, quantile) distribution function at k − 1).
/// `None` when even the largest sample is not enough: fewer than ln(1 − CONFIDENCE) /
/// ln(quantile) samples (299 for the 99th percentile, 2,995 for the 99.9th).
pub(crate) fn quantile_upper_rank(samples: u64, quantile: f64) -> Option<u64> {
    let below = Binomial::new(quantile, samples)
        .ok()?
        .inverse_cdf(CONFIDENCE);
    (below < samples).then_some(below + 1)
}

/// The `rank`-th least value recorded in `histogram` (1-based), at the top of its bucket and no
/// more than `max` (the largest value, kept exactly).
fn value_at_rank(histogram: &Histogram<u64>, rank: u64, max: u64) -> u64 {
    let mut seen = 0;
    for bucket in histogram.iter_recorded() {
        seen += bucket.count_at_value();
        if seen >= rank {
            return histogram
                .highest_equivalent(bucket.value_iterated_to())
                .min(max);
        }
    }
    max
}

/// A quantile of the timer latency that a target can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantile {
    /// The 99th percentile.
    P99,
    /// The 99.9th percentile.
    P999,
}

impl Quantile {
    /// Every quantile a target can name.
    const ALL: [Quantile; 2] = [Quantile::P99, Quantile::P999];

    /// Its fraction of the samples.
    pub(crate) fn fraction(self) -> f64 {
        match self {
            Quantile::P99 => 0.99,
            Quantile::P999 => 0.999,
        }
    }

    /// Its name in targets and documents: `p99`, `p99.9`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Quantile::P99 => "p99",
            Quantile::P999 => "p99.9",
        }
    }

    /// The quantile as measured in `histogram` (`max`: its largest value): the sample of rank
    /// ⌈fraction · samples⌉; `None` without a sample.
    pub(crate) fn value(self, histogram: &Histogram<u64>, max: u64) -> Option<u64> {
        let samples = histogram.len();
        let rank = (self.fraction() * samples as f64).ceil().max(1.0) as u64;
        (samples > 0).then(|| value_at_rank(histogram, rank, max))
    }

    /// The [`CONFIDENCE`] upper bound of the quantile after `histogram`'s samples (the order
    /// statistic of [`quantile_upper_rank`]); infinite when there are too few samples to bound
    /// it.
    pub(crate) fn upper_bound(self, histogram: &Histogram<u64>, max: u64) -> f64 {
        quantile_upper_rank(histogram.len(), self.fraction()).map_or(f64::INFINITY, |rank| {
            value_at_rank(histogram, rank, max) as f64
        })
    }
}

/// A figure `lowlat check` measures on each CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetMetric {
    /// Busy-loop gaps of `at_least_ns` or more per minute of runtime (`measure jitter`);
    /// named `interruptions-ge-10us-per-minute` for 10 µs.
    InterruptionsPerMinute {
        /// The shortest gap counted, ns.
        at_least_ns: u64,
    },
    /// The largest timer wake-up latency, µs (`measure timer`); named `timer-max-us`.
    TimerMaxUs,
    /// A quantile of the timer wake-up latency, µs, judged on its upper bound; named
    /// `timer-p99-us`, `timer-p99.9-us`.
    TimerQuantileUs(Quantile),
    /// The largest gap the kernel's hwlat tracer records, µs, machine-wide (the tracer moves
    /// across the CPUs itself; `measure hwlat`); named `hwlat-max-us`.
    HwlatMaxUs,
}

/// The rate of the profiles' targets: interruptions of 10 µs or more per minute.
pub(crate) const RATE_GE_10US: TargetMetric = TargetMetric::InterruptionsPerMinute {
    at_least_ns: super::LONG_INTERRUPTION_NS,
};

/// A gap length in the names of metrics: `10us`, or `2500ns` when not whole microseconds.
fn length_name(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        format!("{}us", ns / 1000)
    } else {
        format!("{ns}ns")
    }
}

impl TargetMetric {
    /// Its name in the table and in documents.
    pub(crate) fn name(self) -> String {
        match self {
            TargetMetric::InterruptionsPerMinute { at_least_ns } => {
                format!("interruptions-ge-{}-per-minute", length_name(at_least_ns))
            }
            TargetMetric::TimerMaxUs => "timer-max-us".into(),
            TargetMetric::TimerQuantileUs(q) => format!("timer-{}-us", q.name()),
            TargetMetric::HwlatMaxUs => "hwlat-max-us".into(),
        }
    }

    /// Words for reports.
    pub(crate) fn describe(self) -> String {
        match self {
            TargetMetric::InterruptionsPerMinute { at_least_ns } => {
                format!(
                    "interruptions ≥ {} per minute",
                    crate::units::micros_setting(at_least_ns)
                )
            }
            TargetMetric::TimerMaxUs => "timer latency max, µs".into(),
            TargetMetric::TimerQuantileUs(q) => format!("timer latency {}, µs", q.name()),
            TargetMetric::HwlatMaxUs => "hardware latency max (hwlat tracer), µs".into(),
        }
    }

    /// Whether it is measured on the machine as a whole (by the hwlat phase after the
    /// rounds) rather than on each measured CPU.
    pub(crate) fn is_machine_wide(self) -> bool {
        matches!(self, TargetMetric::HwlatMaxUs)
    }

    /// Whether it is a rate (events per minute), judged on its upper bound.
    pub(crate) fn is_rate(self) -> bool {
        matches!(self, TargetMetric::InterruptionsPerMinute { .. })
    }

    fn named(name: &str) -> Option<TargetMetric> {
        match name {
            "timer-max-us" => return Some(TargetMetric::TimerMaxUs),
            "hwlat-max-us" => return Some(TargetMetric::HwlatMaxUs),
            _ => {}
        }
        let quantile = name
            .strip_prefix("timer-")
            .and_then(|q| q.strip_suffix("-us"));
        if let Some(q) = Quantile::ALL
            .into_iter()
            .find(|q| quantile == Some(q.name()))
        {
            return Some(TargetMetric::TimerQuantileUs(q));
        }
        let length = name
            .strip_prefix("interruptions-ge-")?
            .strip_suffix("-per-minute")?;
        let at_least_ns = match length.strip_suffix("us") {
            Some(us) => us.parse::<u64>().ok()?.checked_mul(1000)?,
            None => length.strip_suffix("ns")?.parse().ok()?,
        };
        Some(TargetMetric::InterruptionsPerMinute { at_least_ns })
    }
}

impl Serialize for TargetMetric {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for TargetMetric {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        TargetMetric::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown metric `{name}` (timer-max-us, timer-p99-us, timer-p99.9-us, hwlat-max-us, interruptions-ge-LENGTH-per-minute)"
            ))
        })
    }
}

/// Why a `--target` cannot be read: the grammar, once (`lowlat check --help` shows it).
pub(crate) const GRAMMAR: &str = "a target is `timer.max<LATENCY`, `timer.p99<LATENCY`, `timer.p99.9<LATENCY` or `hwlat.max<LATENCY` (LATENCY with its unit: 20us, 1ms; hwlat: the largest gap the kernel's hwlat tracer records) or `jitter.rate(LENGTH)<N/UNIT` (interruptions of LENGTH or more, e.g. 10us, fewer than N per s, min or h: 1/min)";

/// Why a `--target` was refused; each message starts with the target as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ParseTargetError {
    /// No `<` between the metric and the limit.
    #[error("'{text}' has no <; {GRAMMAR}")]
    NoLimit {
        /// The target as given.
        text: String,
    },
    /// A latency or length that the length reader refused (why).
    #[error("'{text}': {why}")]
    Length {
        /// The target as given.
        text: String,
        /// What the length reader said.
        why: String,
    },
    /// A gap length below the shortest gap check records, ns.
    #[error(
        "'{text}': check records interruptions of {} µs or more; count {} µs or longer",
        *.shortest_gap_ns as f64 / 1e3,
        *.shortest_gap_ns as f64 / 1e3
    )]
    TooShort {
        /// The target as given.
        text: String,
        /// The shortest gap check records, ns.
        shortest_gap_ns: u64,
    },
    /// An hwlat limit below what the tracer can prove, µs.
    #[error(
        "'{text}': the hwlat tracer records gaps in whole microseconds above a threshold of 1 µs \
         or more, so it proves maxima of {} µs or more; give hwlat.max<{}us or above",
        HWLAT_LEAST_LIMIT_US,
        HWLAT_LEAST_LIMIT_US
    )]
    HwlatTooLow {
        /// The target as given.
        text: String,
    },
    /// A rate limit that is not `N/UNIT`.
    #[error("'{text}': the limit '{limit}' is not N/UNIT; {GRAMMAR}")]
    NotRate {
        /// The target as given.
        text: String,
        /// The limit as given.
        limit: String,
    },
    /// A count that is not a number above 0.
    #[error("'{text}': '{count}' is not a number above 0; {GRAMMAR}")]
    Count {
        /// The target as given.
        text: String,
        /// The count as given.
        count: String,
    },
    /// A rate unit other than `s`, `min` and `h`.
    #[error("'{text}': unknown unit '/{unit}' (use /s, /min or /h)")]
    Unit {
        /// The target as given.
        text: String,
        /// The unit as given.
        unit: String,
    },
    /// A metric other than `timer.max`, `timer.p99`, `timer.p99.9`, `hwlat.max` and
    /// `jitter.rate(LENGTH)`.
    #[error("'{text}': unknown metric '{metric}'; {GRAMMAR}")]
    UnknownMetric {
        /// The target as given.
        text: String,
        /// The metric as given.
        metric: String,
    },
}

/// Reads a target as `--target` and a site profile's `[check]` give it, latencies with their
/// unit (`timer.max<20us`), gaps from the length a check records.
pub(crate) fn read(text: &str) -> Result<Target, ParseTargetError> {
    let length =
        |t: &str| duration_with_unit(t).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    parse(text, length, super::JITTER_THRESHOLD_NS)
}

/// A site profile's `[check]` targets, each read as [`read`] reads `--target`; a bad one is
/// refused at its file, line and column.
pub(crate) fn site_targets(site: &Site) -> Result<Vec<Target>, SiteError> {
    (site.check.targets.iter())
        .map(|located| {
            let mut parsed = read(&located.value).map_err(|e| SiteError::at(located, e))?;
            parsed.source = located.place.to_string();
            Ok(parsed)
        })
        .collect()
}

/// A site profile's `[check]` duration, read as `--duration`.
pub(crate) fn site_duration(site: &Site) -> Result<Option<std::time::Duration>, SiteError> {
    (site.check.duration.as_ref())
        .map(|located| {
            crate::units::parse::duration(&located.value).map_err(|e| SiteError::at(located, e))
        })
        .transpose()
}

/// The least `hwlat.max` limit the tracer can prove, µs: its threshold is whole microseconds,
/// 1 or more (0 makes the kernel take its default of 10), and no gap above T µs proves every
/// gap below T + 1 µs (`check::hwlat::threshold_for`).
pub(crate) const HWLAT_LEAST_LIMIT_US: u64 = 2;

/// Reads a target from the command line, with `length` reading a latency with its unit into
/// ns: `timer.max<20us`, `timer.p99.9<15us`, `hwlat.max<20us`, `jitter.rate(10us)<1/min`.
/// Gaps shorter than `shortest_gap_ns` (what check records) and hwlat limits below
/// [`HWLAT_LEAST_LIMIT_US`] are refused.
pub(crate) fn parse<E: std::fmt::Display>(
    text: &str,
    length: impl Fn(&str) -> Result<u64, E>,
    shortest_gap_ns: u64,
) -> Result<Target, ParseTargetError> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let given = || text.to_string();
    let length = |value: &str| {
        length(value).map_err(|e| ParseTargetError::Length {
            text: given(),
            why: e.to_string(),
        })
    };
    let Some((metric, limit)) = compact.split_once('<') else {
        return Err(ParseTargetError::NoLimit { text: given() });
    };
    let timer = metric.strip_prefix("timer.").and_then(|name| {
        (name == "max")
            .then_some(TargetMetric::TimerMaxUs)
            .or_else(|| {
                let q = Quantile::ALL.into_iter().find(|q| q.name() == name)?;
                Some(TargetMetric::TimerQuantileUs(q))
            })
    });
    let (metric, below) = if let Some(timer) = timer {
        let ns = length(limit)?;
        (timer, ns as f64 / 1e3)
    } else if metric == "hwlat.max" {
        let ns = length(limit)?;
        if ns < HWLAT_LEAST_LIMIT_US * 1000 {
            return Err(ParseTargetError::HwlatTooLow { text: given() });
        }
        (TargetMetric::HwlatMaxUs, ns as f64 / 1e3)
    } else if let Some(gap) = metric
        .strip_prefix("jitter.rate(")
        .and_then(|m| m.strip_suffix(')'))
    {
        let at_least_ns = length(gap)?;
        if at_least_ns < shortest_gap_ns {
            return Err(ParseTargetError::TooShort {
                text: given(),
                shortest_gap_ns,
            });
        }
        let (count, unit) = limit
            .split_once('/')
            .ok_or_else(|| ParseTargetError::NotRate {
                text: given(),
                limit: limit.to_string(),
            })?;
        let count: f64 = count
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n > 0.0)
            .ok_or_else(|| ParseTargetError::Count {
                text: given(),
                count: count.to_string(),
            })?;
        let per_minute = match unit {
            "s" => count * 60.0,
            "min" => count,
            "h" => count / 60.0,
            _ => {
                return Err(ParseTargetError::Unit {
                    text: given(),
                    unit: unit.to_string(),
                });
            }
        };
        (
            TargetMetric::InterruptionsPerMinute { at_least_ns },
            per_minute,
        )
    } else {
        return Err(ParseTargetError::UnknownMetric {
            text: given(),
            metric: metric.to_string(),
        });
    };
    Ok(Target {
        metric,
        below,
        source: format!("--target {text}"),
    })
}

/// One row of the table: what a profile's tuned machine must measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Target {
    /// What is measured.
    pub metric: TargetMetric,
    /// Every measured CPU must stay below this (in the metric's unit).
    pub below: f64,
    /// Where the figure comes from (`--target TEXT` for a target given on the command line).
    pub source: String,
}

impl Target {
    /// For a rate or a quantile: the [`CONFIDENCE`] upper bound of the figure on `figures`'
    /// CPU, in the metric's unit, which the target is judged on (infinite for a quantile with
    /// too few samples to bound it); `None` for a maximum, or when the CPU did not measure the
    /// metric.
    pub(crate) fn upper_bound(&self, figures: &CpuFigures) -> Option<f64> {
        match self.metric {
            TargetMetric::InterruptionsPerMinute { at_least_ns } => (figures.jitter_seconds > 0.0)
                .then(|| {
                    poisson_upper_bound(figures.interruptions_at_least(at_least_ns)) * 60.0
                        / figures.jitter_seconds
                }),
            TargetMetric::TimerMaxUs | TargetMetric::HwlatMaxUs => None,
            TargetMetric::TimerQuantileUs(q) => (figures.timer_latency.as_ref())
                .filter(|histogram| !histogram.is_empty())
                .map(|histogram| q.upper_bound(histogram, figures.timer_max_ns) / 1e3),
        }
    }

    /// For a rate target: how long each CPU's busy loop must run, s, for a run without events
    /// to prove it; `None` for a maximum.
    pub(crate) fn seconds_to_prove(&self) -> Option<f64> {
        self.metric
            .is_rate()
            .then(|| exposure_to_prove(self.below) * 60.0)
    }
}

const TABLE: &str = include_str!("targets.table");

/// The targets of `profile` (none for a profile without rows).
pub(crate) fn of_profile(profile: ProfileName) -> Vec<Target> {
    rows()
        .filter(|(name, _)| *name == profile)
        .map(|(_, target)| target)
        .collect()
}

/// Every row of the table; a malformed row is a bug the tests catch, so it panics.
fn rows() -> impl Iterator<Item = (ProfileName, Target)> {
    TABLE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .skip(1) // the column names
        .map(|line| {
            let (profile, rest) = first_word(line);
            let (metric, rest) = first_word(rest);
            let (below, source) = first_word(rest);
            let target = Target {
                metric: TargetMetric::named(metric)
                    .unwrap_or_else(|| panic!("targets.table: unknown metric {metric}")),
                below: below
                    .parse()
                    .unwrap_or_else(|_| panic!("targets.table: `{below}` is not a number")),
                source: source.to_string(),
            };
            let profile = profile
                .parse()
                .unwrap_or_else(|e| panic!("targets.table: {e}"));
            (profile, target)
        })
}

/// The first word of `text` and the rest, trimmed.
fn first_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    text.split_once(char::is_whitespace)
        .map_or((text, ""), |(word, rest)| (word, rest.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_known_profile_and_metric_and_cites_a_source() {
        let all: Vec<_> = rows().collect();
        assert_eq!(all.len(), 3);
        for (profile, target) in &all {
            assert!(crate::audit::profile::load(*profile).is_ok(), "{profile}");
            assert!(target.below > 0.0);
            assert!(target.source.starts_with("[S0"), "{}", target.source);
        }
        let low = of_profile(ProfileName::LowLatency);
        assert_eq!(low.len(), 1);
        assert_eq!(low[0].metric, RATE_GE_10US);
        assert_eq!(RATE_GE_10US.name(), "interruptions-ge-10us-per-minute");
        assert_eq!(low[0].below, 1.0);
        assert_eq!(
            of_profile(ProfileName::RealtimeHost)[0].metric,
            TargetMetric::TimerMaxUs
        );
        assert!(of_profile(ProfileName::Throughput).is_empty());
    }

    #[test]
    fn the_upper_bound_is_the_exact_poisson_one() {
        // Known values of the one-sided 95 % Garwood bound: 0 -> 2.996, 1 -> 4.744,
        // 10 -> 17.0 (e.g. Gehrels 1986, table 1; chi2.ppf(0.95, 2k+2)/2).
        assert!((poisson_upper_bound(0) - 2.995_732).abs() < 1e-5);
        assert!((poisson_upper_bound(1) - 4.743_865).abs() < 1e-5);
        assert!((poisson_upper_bound(10) - 16.962_219).abs() < 1e-4);
        // A run proves < 1 a minute with no event only after 3 minutes.
        assert!((exposure_to_prove(1.0) - 2.995_732).abs() < 1e-5);
        assert!((exposure_to_prove_at(0.0, 1.0).unwrap() - 2.995_732).abs() < 1e-5);
        // At a rate seen of 0.3 a minute, the bound on 0.3·T events falls below 1 a minute
        // only after some 6 minutes (twice the 3 of no event); never at the limit or above.
        let at = exposure_to_prove_at(0.3, 1.0).unwrap();
        let events = 0.3 * at;
        let bound = ChiSquared::new(2.0 * events + 2.0)
            .unwrap()
            .inverse_cdf(CONFIDENCE)
            / 2.0;
        assert!((bound / at - 1.0).abs() < 1e-6, "{at}");
        assert!((5.0..7.0).contains(&at), "{at}");
        assert_eq!(exposure_to_prove_at(1.0, 1.0), None);
        assert_eq!(exposure_to_prove_at(3.0, 1.0), None);
    }

    #[test]
    fn the_quantile_bound_is_the_binomial_order_statistic() {
        // The least rank k with P(Binomial(n, q) <= k - 1) >= 0.95 (summed exactly): 299
        // samples are the fewest that bound a 99th percentile (1 - 0.99^299 = 0.9505), 2,995
        // a 99.9th.
        assert_eq!(quantile_upper_rank(299, 0.99), Some(299));
        assert_eq!(quantile_upper_rank(298, 0.99), None);
        assert_eq!(quantile_upper_rank(1000, 0.99), Some(996));
        assert_eq!(quantile_upper_rank(2995, 0.999), Some(2995));
        assert_eq!(quantile_upper_rank(2994, 0.999), None);
        assert_eq!(quantile_upper_rank(20_000, 0.999), Some(19_988));
        assert_eq!(quantile_upper_rank(0, 0.99), None);
    }

    /// A CPU whose timer run recorded `counts` (latency ns, how many).
    fn timer_cpu(counts: &[(u64, u64)]) -> CpuFigures {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        for (ns, n) in counts {
            histogram.record_n(*ns, *n).unwrap();
        }
        CpuFigures {
            cpu: 1,
            jitter_seconds: 0.0,
            interruptions: 0,
            long_interruptions: 0,
            max_interruption_ns: 0,
            timer_samples: histogram.len(),
            timer_max_ns: counts.iter().map(|(ns, _)| *ns).max().unwrap_or(0),
            timer_p99_ns: 0,
            steal_ms: None,
            gaps_ns: Vec::new(),
            timer_latency: Some(histogram),
        }
    }

    /// Issue 45 item 5: a quantile target is met only when its 95 % upper bound is below the
    /// limit, missed when the quantile measured is at or above it, else not proven.
    #[test]
    fn a_quantile_target_is_judged_on_its_upper_bound() {
        use crate::check::{TargetOutcome, evaluate};
        let target = |text: &str| parse(text, length, 1000).unwrap();
        let p99 = target("timer.p99<50us");
        let p999 = target("timer.p99.9<50us");
        assert_eq!(p99.metric, TargetMetric::TimerQuantileUs(Quantile::P99));
        assert_eq!(p99.metric.name(), "timer-p99-us");
        assert_eq!(p999.metric.name(), "timer-p99.9-us");
        assert_eq!(p999.metric.describe(), "timer latency p99.9, µs");
        // 10,000 wake-ups, 50 of them at 100 µs: the 99th percentile (rank 9,900) and its
        // bound (rank 9,917) are 10 µs; the 99.9th (rank 9,990) is 100 µs.
        let tail = [timer_cpu(&[(10_000, 9_950), (100_000, 50)])];
        let judged = evaluate(&[p99.clone(), p999.clone()], &tail, None);
        assert_eq!(judged[0].outcome, TargetOutcome::Met);
        let value = &judged[0].values[0];
        assert!((value.value - 10.0).abs() < 0.01, "{value:?}");
        assert!((value.upper_95.unwrap() - 10.0).abs() < 0.01, "{value:?}");
        assert_eq!(judged[1].outcome, TargetOutcome::Missed);
        assert!((judged[1].values[0].value - 100.0).abs() < 0.1);
        // 95 at 100 µs: the quantile (rank 9,900) is 10 µs but its bound (rank 9,917) is
        // 100 µs: not proven, neither a pass nor a failure.
        let close = [timer_cpu(&[(10_000, 9_905), (100_000, 95)])];
        let judged = evaluate(std::slice::from_ref(&p99), &close, None);
        assert_eq!(judged[0].outcome, TargetOutcome::NotProven);
        assert!((judged[0].values[0].value - 10.0).abs() < 0.01);
        assert!((judged[0].values[0].upper_95.unwrap() - 100.0).abs() < 0.1);
        // 100 quiet wake-ups cannot bound a 99th percentile.
        let few = [timer_cpu(&[(1_000, 100)])];
        let judged = evaluate(std::slice::from_ref(&p99), &few, None);
        assert_eq!(judged[0].outcome, TargetOutcome::NotProven);
        assert_eq!(judged[0].values[0].upper_95, Some(f64::INFINITY));
        // No timer run: not measured.
        let mut none = timer_cpu(&[]);
        none.timer_latency = None;
        let judged = evaluate(&[p99], &[none], None);
        assert_eq!(judged[0].outcome, TargetOutcome::NotMeasured);
    }

    #[test]
    fn documents_name_metrics_as_the_table_does() {
        for metric in [
            RATE_GE_10US,
            TargetMetric::InterruptionsPerMinute { at_least_ns: 2500 },
            TargetMetric::TimerMaxUs,
            TargetMetric::TimerQuantileUs(Quantile::P99),
            TargetMetric::TimerQuantileUs(Quantile::P999),
            TargetMetric::HwlatMaxUs,
        ] {
            assert_eq!(serde_json::to_value(metric).unwrap(), metric.name());
            assert_eq!(TargetMetric::named(&metric.name()), Some(metric));
        }
    }

    /// The test's latency reader: whole numbers with us or ms.
    fn length(text: &str) -> Result<u64, Box<dyn std::error::Error>> {
        let (n, scale) = match text.strip_suffix("us") {
            Some(n) => (n, 1000),
            None => (
                text.strip_suffix("ms")
                    .ok_or_else(|| format!("'{text}' has no unit"))?,
                1_000_000,
            ),
        };
        Ok(n.parse::<u64>()? * scale)
    }

    #[test]
    fn targets_are_read_by_their_grammar_and_refused_naming_what_is_wrong() {
        let t = parse("timer.max<20us", length, 1000).unwrap();
        assert_eq!((t.metric, t.below), (TargetMetric::TimerMaxUs, 20.0));
        assert_eq!(t.source, "--target timer.max<20us");
        let t = parse("jitter.rate(10us) < 1/min", length, 1000).unwrap();
        assert_eq!((t.metric, t.below), (RATE_GE_10US, 1.0));
        let t = parse("jitter.rate(20us)<2/h", length, 1000).unwrap();
        assert_eq!(
            t.metric,
            TargetMetric::InterruptionsPerMinute {
                at_least_ns: 20_000
            }
        );
        assert!((t.below - 2.0 / 60.0).abs() < 1e-12);
        // Issue 45 item 5: the hwlat tracer's largest gap, machine-wide.
        let t = parse("hwlat.max < 50us", length, 1000).unwrap();
        assert_eq!((t.metric, t.below), (TargetMetric::HwlatMaxUs, 50.0));
        assert_eq!(t.source, "--target hwlat.max < 50us");
        assert!(t.metric.is_machine_wide() && !TargetMetric::TimerMaxUs.is_machine_wide());
        assert_eq!(t.metric.name(), "hwlat-max-us");
        assert_eq!(t.upper_bound(&timer_cpu(&[(1_000, 10)])), None);
        assert_eq!(t.seconds_to_prove(), None);
        assert_eq!(parse("hwlat.max<2us", length, 1000).unwrap().below, 2.0);
        for (bad, says) in [
            ("hwlat.max<20", "has no unit"),
            ("hwlat.avg<20us", "unknown metric 'hwlat.avg'"),
            ("hwlat.max>20us", "has no <;"),
            ("hwlat.max<1us", "proves maxima of 2 µs or more"),
            ("hwlat.max<0us", "give hwlat.max<2us or above"),
        ] {
            let err = parse(bad, length, 1000).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let err = parse("hwlat.avg<20us", length, 1000).unwrap_err();
        assert!(err.to_string().contains("`hwlat.max<LATENCY`"), "{err}");
        for (bad, says) in [
            ("timer.max>20us", "has no <;"),
            ("timer.max<20", "has no unit"),
            ("timer.p50<20us", "unknown metric 'timer.p50'"),
            ("timer.p99<20", "has no unit"),
            ("jitter.rate(10us)<1", "is not N/UNIT"),
            ("jitter.rate(10us)<1/day", "unknown unit '/day'"),
            ("jitter.rate(10us)<0/min", "'0' is not a number above 0"),
        ] {
            let err = parse(bad, length, 1000).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let err = parse("jitter.rate(0us)<1/min", length, 1000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("records interruptions of 1 µs or more"),
            "{err}"
        );
    }
}
