//! Per measured figure, its distribution over the hosts of a group and the hosts outside it.
//!
//! Outside means beyond Tukey's far-out fences: below Q1 − 3·IQR or above Q3 + 3·IQR (quartiles
//! by nearest rank). The fences stand on the middle half of the hosts, so a few hosts far off do
//! not move them, as they would move a mean and a standard deviation. Where the hosts agree
//! closely (an IQR under [`MIN_SPREAD`] of the median) the IQR is taken as that much, so that
//! noise of a few percent judges no one. With fewer than [`MIN_HOSTS`] hosts no one is judged.

use std::collections::BTreeMap;

use serde::Serialize;

use super::documents::Figure;
use crate::compare::stats::histogram::quantile;

/// The fences' distance from the quartiles, in IQRs (Tukey's "far out").
pub(crate) const FENCE_IQRS: f64 = 3.0;

/// The smallest IQR the fences use, as a fraction of the median.
pub(crate) const MIN_SPREAD: f64 = 0.05;

/// The fewest hosts whose quartiles judge a host.
pub(crate) const MIN_HOSTS: usize = 4;

/// One figure over the hosts of a group that measured it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Spread {
    /// The figure (`measure-jitter p99`: the host's worst CPU's 99th percentile; for a host
    /// with several documents of a kind, its worst run: the highest latency, the lowest rate).
    pub metric: String,
    /// The unit of every value below (`ns`, `MB/s`).
    pub unit: String,
    /// How many hosts of the group measured it.
    pub hosts: usize,
    /// The smallest host value, in `unit`.
    pub min: f64,
    /// The first quartile (nearest rank), in `unit`.
    pub q1: f64,
    /// The median (nearest rank), in `unit`.
    pub median: f64,
    /// The third quartile (nearest rank), in `unit`.
    pub q3: f64,
    /// The largest host value, in `unit`.
    pub max: f64,
    /// Below this a host is outside, in `unit` (absent with fewer than 4 hosts).
    pub low_fence: Option<f64>,
    /// Above this a host is outside, in `unit` (absent with fewer than 4 hosts).
    pub high_fence: Option<f64>,
    /// The hosts outside the fences, sorted by name.
    pub outside: Vec<Outside>,
}

/// A host whose figure is outside its group's distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Outside {
    /// The host name.
    pub host: String,
    /// Its value, in the spread's unit.
    pub value: f64,
}

/// The spread of every figure the `hosts` (name, figures) measured, by metric name.
pub(crate) fn spreads<'a>(hosts: impl IntoIterator<Item = (&'a str, &'a [Figure])>) -> Vec<Spread> {
    let mut by_metric: BTreeMap<&str, (&str, BTreeMap<&str, f64>)> = BTreeMap::new();
    for (host, figures) in hosts {
        for figure in figures {
            let (_, values) = by_metric
                .entry(&figure.metric)
                .or_insert((figure.unit, BTreeMap::new()));
            let worse = |old: f64| {
                if figure.higher_is_better {
                    old.min(figure.value)
                } else {
                    old.max(figure.value)
                }
            };
            values
                .entry(host)
                .and_modify(|v| *v = worse(*v))
                .or_insert(figure.value);
        }
    }
    by_metric
        .into_iter()
        .map(|(metric, (unit, values))| spread(metric, unit, &values))
        .collect()
}

fn spread(metric: &str, unit: &str, values: &BTreeMap<&str, f64>) -> Spread {
    let mut sorted: Vec<f64> = values.values().copied().collect();
    let at = |q: f64| quantile(&mut sorted.clone(), q);
    let (q1, median, q3) = (at(0.25), at(0.5), at(0.75));
    let fences = (values.len() >= MIN_HOSTS).then(|| {
        let iqr = (q3 - q1).max(MIN_SPREAD * median.abs());
        (q1 - FENCE_IQRS * iqr, q3 + FENCE_IQRS * iqr)
    });
    let outside = fences.map_or_else(Vec::new, |(low, high)| {
        values
            .iter()
            .filter(|&(_, &v)| v < low || v > high)
            .map(|(&host, &value)| Outside {
                host: host.to_string(),
                value,
            })
            .collect()
    });
    sorted.sort_by(f64::total_cmp);
    Spread {
        metric: metric.to_string(),
        unit: unit.to_string(),
        hosts: values.len(),
        min: sorted[0],
        q1,
        median,
        q3,
        max: sorted[sorted.len() - 1],
        low_fence: fences.map(|f| f.0),
        high_fence: fences.map(|f| f.1),
        outside,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(value: f64) -> Vec<Figure> {
        vec![Figure {
            metric: "measure-jitter p99".into(),
            unit: "ns",
            higher_is_better: false,
            value,
        }]
    }

    #[test]
    fn a_host_far_above_the_rest_is_outside_and_small_noise_is_not() {
        let names: Vec<String> = (0..10).map(|i| format!("h{i}")).collect();
        let mut figures: Vec<Vec<Figure>> = (0..10)
            .map(|i| figure(1000.0 + 10.0 * f64::from(i)))
            .collect();
        figures[3] = figure(10_000.0);
        figures[7] = figure(50.0);
        let spread = &spreads(
            names
                .iter()
                .map(String::as_str)
                .zip(figures.iter().map(Vec::as_slice)),
        )[0];
        assert_eq!(spread.hosts, 10);
        let outside: Vec<&str> = spread.outside.iter().map(|o| o.host.as_str()).collect();
        assert_eq!(outside, ["h3", "h7"], "{spread:#?}");
        assert_eq!((spread.min, spread.max), (50.0, 10_000.0));
    }

    #[test]
    fn few_hosts_judge_no_one_and_a_host_keeps_its_worst_run() {
        let mut two_runs = figure(100.0);
        two_runs.extend(figure(900.0));
        let hosts = [("a", figure(100.0)), ("b", two_runs), ("c", figure(100.0))];
        let spread = &spreads(hosts.iter().map(|(h, f)| (*h, f.as_slice())))[0];
        assert_eq!(spread.hosts, 3);
        assert_eq!(spread.max, 900.0, "b's worse run");
        assert!(spread.outside.is_empty() && spread.high_fence.is_none());
    }
}
