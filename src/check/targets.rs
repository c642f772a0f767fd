//! The measured targets of each profile, kept as data (`targets.table`, with a source per
//! row), the metrics they are stated in, and the evidence a target is judged on: a maximum as
//! measured, a rate on the exact Poisson upper bound of its count, so that a short run without
//! events does not pass a target it cannot prove.

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

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

/// A figure `lowlat check` measures on each CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Metric {
    /// Busy-loop gaps of 10 µs or more per minute of runtime (`measure jitter`).
    #[serde(rename = "interruptions-ge-10us-per-minute")]
    InterruptionsGe10usPerMinute,
    /// The largest timer wake-up latency, µs (`measure timer`).
    TimerMaxUs,
}

impl Metric {
    /// Its name in the table and in documents.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::InterruptionsGe10usPerMinute => "interruptions-ge-10us-per-minute",
            Metric::TimerMaxUs => "timer-max-us",
        }
    }

    /// Words for reports.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Metric::InterruptionsGe10usPerMinute => "interruptions ≥ 10 µs per minute",
            Metric::TimerMaxUs => "timer latency max, µs",
        }
    }

    const ALL: [Metric; 2] = [Metric::InterruptionsGe10usPerMinute, Metric::TimerMaxUs];

    /// Whether it is a rate (events per minute), judged on its upper bound.
    pub(crate) fn is_rate(self) -> bool {
        matches!(self, Metric::InterruptionsGe10usPerMinute)
    }

    fn named(name: &str) -> Option<Metric> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// One row of the table: what a profile's tuned machine must measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Target {
    /// What is measured.
    pub metric: Metric,
    /// Every measured CPU must stay below this (in the metric's unit).
    pub below: f64,
    /// Where the figure comes from.
    pub source: &'static str,
}

impl Target {
    /// For a rate target: the [`CONFIDENCE`] upper bound of the rate on `figures`' CPU, in the
    /// metric's unit, which the target is judged on; `None` for a maximum, or when the CPU did
    /// not measure the metric.
    pub(crate) fn upper_bound(&self, figures: &CpuFigures) -> Option<f64> {
        match self.metric {
            Metric::InterruptionsGe10usPerMinute => (figures.jitter_seconds > 0.0).then(|| {
                poisson_upper_bound(figures.long_interruptions) * 60.0 / figures.jitter_seconds
            }),
            Metric::TimerMaxUs => None,
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
pub(crate) fn of_profile(profile: &str) -> Vec<Target> {
    rows()
        .filter(|(name, _)| *name == profile)
        .map(|(_, target)| target)
        .collect()
}

/// Every row of the table; a malformed row is a bug the tests catch, so it panics.
fn rows() -> impl Iterator<Item = (&'static str, Target)> {
    TABLE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .skip(1) // the column names
        .map(|line| {
            let (profile, rest) = first_word(line);
            let (metric, rest) = first_word(rest);
            let (below, source) = first_word(rest);
            let target = Target {
                metric: Metric::named(metric)
                    .unwrap_or_else(|| panic!("targets.table: unknown metric {metric}")),
                below: below
                    .parse()
                    .unwrap_or_else(|_| panic!("targets.table: `{below}` is not a number")),
                source,
            };
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
            assert!(crate::audit::profile::load(profile).is_ok(), "{profile}");
            assert!(target.below > 0.0);
            assert!(target.source.starts_with("[S0"), "{}", target.source);
        }
        let low = of_profile("low-latency");
        assert_eq!(low.len(), 1);
        assert_eq!(low[0].metric, Metric::InterruptionsGe10usPerMinute);
        assert_eq!(low[0].below, 1.0);
        assert_eq!(of_profile("realtime-host")[0].metric, Metric::TimerMaxUs);
        assert!(of_profile("throughput").is_empty());
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
    }

    #[test]
    fn documents_name_metrics_as_the_table_does() {
        for metric in Metric::ALL {
            assert_eq!(serde_json::to_value(metric).unwrap(), metric.name());
        }
    }
}
