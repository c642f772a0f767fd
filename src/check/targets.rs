//! The measured targets of each profile, kept as data (`targets.table`, with a source per
//! row), the metrics they are stated in, and the evidence a target is judged on: a maximum as
//! measured, a rate on the exact Poisson upper bound of its count, so that a short run without
//! events does not pass a target it cannot prove.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

use crate::tuning::profile_name::ProfileName;

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
        }
    }

    /// Whether it is a rate (events per minute), judged on its upper bound.
    pub(crate) fn is_rate(self) -> bool {
        matches!(self, TargetMetric::InterruptionsPerMinute { .. })
    }

    fn named(name: &str) -> Option<TargetMetric> {
        if name == "timer-max-us" {
            return Some(TargetMetric::TimerMaxUs);
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
                "unknown metric `{name}` (timer-max-us, interruptions-ge-LENGTH-per-minute)"
            ))
        })
    }
}

/// Why a `--target` cannot be read: the grammar, once (`lowlat check --help` shows it).
pub(crate) const GRAMMAR: &str = "a target is `timer.max<LATENCY` (LATENCY with its unit: 20us, 1ms) or `jitter.rate(LENGTH)<N/UNIT` (interruptions of LENGTH or more, e.g. 10us, fewer than N per s, min or h: 1/min)";

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
    /// A metric other than `timer.max` and `jitter.rate(LENGTH)`.
    #[error("'{text}': unknown metric '{metric}'; {GRAMMAR}")]
    UnknownMetric {
        /// The target as given.
        text: String,
        /// The metric as given.
        metric: String,
    },
}

/// Reads a target from the command line, with `length` reading a latency with its unit into
/// ns: `timer.max<20us`, `jitter.rate(10us)<1/min`. Gaps shorter than `shortest_gap_ns`
/// (what check records) are refused.
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
    let (metric, below) = if metric == "timer.max" {
        let ns = length(limit)?;
        (TargetMetric::TimerMaxUs, ns as f64 / 1e3)
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
    /// For a rate target: the [`CONFIDENCE`] upper bound of the rate on `figures`' CPU, in the
    /// metric's unit, which the target is judged on; `None` for a maximum, or when the CPU did
    /// not measure the metric.
    pub(crate) fn upper_bound(&self, figures: &CpuFigures) -> Option<f64> {
        match self.metric {
            TargetMetric::InterruptionsPerMinute { at_least_ns } => (figures.jitter_seconds > 0.0)
                .then(|| {
                    poisson_upper_bound(figures.interruptions_at_least(at_least_ns)) * 60.0
                        / figures.jitter_seconds
                }),
            TargetMetric::TimerMaxUs => None,
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
    fn documents_name_metrics_as_the_table_does() {
        for metric in [
            RATE_GE_10US,
            TargetMetric::InterruptionsPerMinute { at_least_ns: 2500 },
            TargetMetric::TimerMaxUs,
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
        for (bad, says) in [
            ("timer.max>20us", "has no <;"),
            ("timer.max<20", "has no unit"),
            ("timer.p99<20us", "unknown metric 'timer.p99'"),
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
