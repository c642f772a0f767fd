//! The measured targets of each profile, kept as data (`targets.table`, with a source per
//! row), and the metrics they are stated in.

use serde::Serialize;

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
    fn documents_name_metrics_as_the_table_does() {
        for metric in Metric::ALL {
            assert_eq!(serde_json::to_value(metric).unwrap(), metric.name());
        }
    }
}
