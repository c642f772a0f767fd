//! The detail under the verdicts: per CPU, the median, p99, maximum and rate above
//! `--above` of each arm with its interval and the change, estimated as the primary endpoints
//! are (runs are the unit, Welch on the logs). Their verdicts are corrected (Holm) over every
//! detail row and never set the exit code: they say where a change is, not whether there is
//! one.

use serde::{Deserialize, Serialize};

use super::endpoint;
use super::run::{Family, Figures, Run};
use super::verdict::{self, Compared, Verdict};

/// A figure compared per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// The median latency, ns.
    Median,
    /// The 99th-percentile latency, ns.
    P99,
    /// The largest latency of a run, ns.
    Max,
    /// Latencies above `--above` (the count plus 0.5), per minute or per million samples.
    RateAbove,
    /// The mean latency, ns (a peer's summary, which prints it).
    Mean,
}

impl Metric {
    /// The metrics of latencies, in the order of the table.
    pub const LATENCIES: [Metric; 4] =
        [Metric::Median, Metric::P99, Metric::Max, Metric::RateAbove];
    /// The metrics of round trips: a count above `--above` says nothing of a ping-pong whose
    /// messages come one after the other.
    pub const ROUND_TRIPS: [Metric; 3] = [Metric::Median, Metric::P99, Metric::Max];
    /// The metrics a peer's summary can give.
    pub const SUMMARIES: [Metric; 4] = [Metric::Median, Metric::P99, Metric::Max, Metric::Mean];

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Median => "median",
            Metric::P99 => "p99",
            Metric::Max => "max",
            Metric::RateAbove => "rate above",
            Metric::Mean => "mean",
        }
    }

    /// The endpoint whose run-to-run bound it shares.
    fn bound_like(self) -> super::endpoint::Endpoint {
        use super::endpoint::Endpoint;
        match self {
            Metric::Median | Metric::Mean => Endpoint::Median,
            Metric::P99 | Metric::Max => Endpoint::WorstP99,
            Metric::RateAbove => Endpoint::RateAbove,
        }
    }

    /// Its value in one run of one CPU, positive, when the run gives it.
    fn of(self, run: &Run, cpu: u32, above_ns: f64) -> Option<f64> {
        let value = match (run.cpus.get(&cpu), run.summaries.get(&cpu)) {
            (Some(series), _) => {
                let h = &series.values;
                match self {
                    Metric::Median => h.quantile(0.5),
                    Metric::P99 => h.quantile(0.99),
                    Metric::Max => h.quantile(1.0),
                    Metric::RateAbove => {
                        (h.count_above(above_ns) as f64 + 0.5) / series.exposure
                            * series.unit.rate_unit().1
                    }
                    Metric::Mean => h.mean(),
                }
            }
            (None, Some(f)) => summary_figure(self, f)?,
            (None, None) => return None,
        };
        (value.is_finite() && value > 0.0).then_some(value)
    }
}

fn summary_figure(metric: Metric, figures: &Figures) -> Option<f64> {
    match metric {
        Metric::Median => figures.median,
        Metric::P99 => figures.p99,
        Metric::Max => Some(figures.max),
        Metric::Mean => Some(figures.mean),
        Metric::RateAbove => None,
    }
}

/// One metric of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The CPU (for cyclictest: the thread index).
    pub cpu: u32,
    /// The metric.
    pub metric: Metric,
    /// The unit of the values: `ns`, `per-minute` or `per-million-samples`.
    #[serde(deserialize_with = "super::unit")]
    pub unit: super::Unit,
    /// The baseline against the candidate (Holm over every detail row).
    #[serde(flatten)]
    pub compared: Compared,
}

/// The detail rows of `a` against `b` on `cpus`, corrected over themselves.
pub fn rows(a: &[Run], b: &[Run], cpus: &[u32], above_ns: f64, margin: f64) -> Vec<Row> {
    let summarised = a.iter().chain(b).any(|r| !r.summaries.is_empty());
    let round_trips = a
        .iter()
        .chain(b)
        .any(|r| r.format.family() == Family::RoundTrips);
    let metrics: &[Metric] = if summarised {
        &Metric::SUMMARIES
    } else if round_trips {
        &Metric::ROUND_TRIPS
    } else {
        &Metric::LATENCIES
    };
    let rate_unit = a
        .iter()
        .chain(b)
        .find_map(|r| r.cpus.values().next())
        .map_or("per-minute", |s| s.unit.rate_unit().0);
    let mut items = Vec::new();
    for &cpu in cpus {
        for &metric in metrics {
            let values = |runs: &[Run]| -> Option<Vec<f64>> {
                runs.iter().map(|r| metric.of(r, cpu, above_ns)).collect()
            };
            if let (Some(va), Some(vb)) = (values(a), values(b)) {
                items.push(((cpu, metric), metric.bound_like(), va, vb));
            }
        }
    }
    let test = |_, _| "Welch's t on the runs' logarithms".to_string();
    verdict::compare_each(items, test, margin)
        .into_iter()
        .map(|((cpu, metric), mut compared)| {
            if metric == Metric::RateAbove
                && endpoint::saturated(a.iter().chain(b), &[cpu], above_ns)
            {
                compared.verdict = Verdict::Saturated;
            }
            Row {
                cpu,
                metric,
                unit: if metric == Metric::RateAbove {
                    rate_unit
                } else {
                    "ns"
                },
                compared,
            }
        })
        .collect()
}
