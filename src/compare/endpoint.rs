//! The primary endpoints: a few figures of a whole run, pooled over its CPUs, on which the
//! headline verdicts and the exit code are decided (docs/statistics.md). Each is one value per
//! run; the same figure of each slice of the run's time gives the variation inside the run.

use serde::{Deserialize, Serialize};

use super::run::{Family, Figures, Run, Series};
use super::stats::{mean_var, median};
use crate::measure::trace::explain::Class;

/// A figure of a whole run, pooled over the CPUs compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Endpoint {
    /// The median over the CPUs of each CPU's median latency, ns.
    Median,
    /// The largest 99th-percentile latency of any CPU, ns. (The p99.9 of a 4 s round at
    /// 1 kHz is its 4th-largest sample, which moved 30-fold between untouched runs of this
    /// project's VM; the p99 moved ±10 %: docs/statistics.md.)
    WorstP99,
    /// Latencies above `--above` per unit of time, over all CPUs together (the count of a run
    /// plus 0.5, so that a run without any still has a rate; per minute of CPU time, or per
    /// million samples).
    RateAbove,
    /// A peer's summary: the median over the CPUs of each CPU's mean latency, ns.
    Mean,
    /// A peer's summary: the largest maximum of any CPU, ns.
    WorstMax,
    /// A memory-bandwidth kernel's best rate, MB/s (higher is better).
    BestRate,
    /// A ping-pong's messages sent per second (higher is better).
    MessageRate,
    /// A ping-pong's messages lost, per million sent (the count plus 0.5, so that a run
    /// without a loss still has a rate).
    Loss,
    /// Gaps the scheduler tick caused (`--explain`), per minute of busy loop on the CPUs
    /// compared (the count plus 0.5, as every cause rate).
    TickRate,
    /// Gaps other tasks and kernel workers caused, per minute of busy loop.
    TaskRate,
    /// Gaps interrupts caused (device IRQs, softirqs, IPIs, TLB shootdowns, timers, NMIs,
    /// RCU), per minute of busy loop.
    IrqRate,
    /// Gaps with no kernel event on the CPU (the hypervisor in a VM, firmware or SMIs on bare
    /// metal), per minute of busy loop.
    HypervisorRate,
}

impl Endpoint {
    /// The endpoints of latency runs whose latencies are known.
    pub const LATENCIES: [Endpoint; 3] =
        [Endpoint::Median, Endpoint::WorstP99, Endpoint::RateAbove];

    /// The endpoints of network round trips: the round trip's median and p99, the message
    /// rate and the loss.
    pub const ROUND_TRIPS: [Endpoint; 4] = [
        Endpoint::Median,
        Endpoint::WorstP99,
        Endpoint::MessageRate,
        Endpoint::Loss,
    ];

    /// The endpoints of a peer's summary (figures only).
    pub const SUMMARIES: [Endpoint; 2] = [Endpoint::Mean, Endpoint::WorstMax];

    /// The rates of the gaps' causes, where every run was explained (`--explain`): on a VM
    /// whose host's exits dominate the gaps the quantiles may not move while the rate of the
    /// cause the change removed does ("other tasks 12,000/min → 0/min").
    ///
    /// Judged as every endpoint: Welch's t on the logarithms of one rate per run, runs as the
    /// unit, Holm with the others. Not a Poisson test on the arms' pooled counts: the causes
    /// come in bursts (a cron job in one run, none in the next), so the counts vary between
    /// runs far beyond Poisson, and a test that took every gap as independent would call that
    /// variation a change. The runs' own spread carries that over-dispersion, as a negative
    /// binomial's would, without assuming its form; the 0.5 added to each run's count keeps a
    /// run without the cause finite on the log scale, as for the rate above `--above`.
    pub const CAUSES: [Endpoint; 4] = [
        Endpoint::TickRate,
        Endpoint::TaskRate,
        Endpoint::IrqRate,
        Endpoint::HypervisorRate,
    ];

    /// The classes of the gaps' causes a cause rate counts; `None` for the other endpoints.
    pub(crate) fn classes(self) -> Option<&'static [Class]> {
        Some(match self {
            Endpoint::TickRate => &[Class::Tick],
            Endpoint::TaskRate => &[Class::Task, Class::Kworker],
            Endpoint::IrqRate => &[
                Class::DeviceIrq,
                Class::Softirq,
                Class::Ipi,
                Class::TlbShootdown,
                Class::Timer,
                Class::Nmi,
                Class::Rcu,
            ],
            Endpoint::HypervisorRate => &[Class::NoKernelEvent],
            _ => return None,
        })
    }

    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Median => "median of CPUs' medians",
            Endpoint::WorstP99 => "worst CPU's p99",
            Endpoint::RateAbove => "rate above --above",
            Endpoint::Mean => "median of CPUs' means",
            Endpoint::WorstMax => "worst CPU's max",
            Endpoint::BestRate => "best rate",
            Endpoint::MessageRate => "messages per second",
            Endpoint::Loss => "messages lost",
            Endpoint::TickRate => "gaps by the tick",
            Endpoint::TaskRate => "gaps by other tasks",
            Endpoint::IrqRate => "gaps by interrupts",
            Endpoint::HypervisorRate => "gaps by the hypervisor",
        }
    }

    /// Whether a higher value is the better one (throughput); for latencies lower is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Endpoint::BestRate | Endpoint::MessageRate)
    }

    /// The ratio two untouched runs of one machine can differ by in this figure, by the
    /// stated conservative bound of docs/statistics.md: one run per arm is called different
    /// only beyond it (and beyond the variation inside the runs).
    pub fn run_to_run_bound(self) -> f64 {
        match self {
            // Not calibrated for round trips on their own (docs/statistics.md): the bounds of
            // the figures they are most like, the median's for the message rate (one over the
            // mean round trip), the rate above's for the loss.
            Endpoint::Median | Endpoint::Mean | Endpoint::MessageRate => 10.0,
            Endpoint::BestRate => 1.25,
            Endpoint::WorstP99
            | Endpoint::RateAbove
            | Endpoint::WorstMax
            | Endpoint::Loss
            | Endpoint::TickRate
            | Endpoint::TaskRate
            | Endpoint::IrqRate
            | Endpoint::HypervisorRate => 30.0,
        }
    }
}

/// The value of `endpoint` of `run` over `cpus` (one value of a run), positive; `None` when the
/// run does not give it (a CPU without latencies, a summary without the figure).
pub fn of_run(endpoint: Endpoint, run: &Run, cpus: &[u32], above_ns: f64) -> Option<f64> {
    if let Some(classes) = endpoint.classes() {
        run.causes.as_ref()?;
        return run.causes_on(cpus).rate(classes);
    }
    match (endpoint, run.traffic) {
        (Endpoint::BestRate, _) | (Endpoint::MessageRate | Endpoint::Loss, None) => return None,
        (Endpoint::MessageRate, Some(t)) => {
            return (t.messages_per_s.is_finite() && t.messages_per_s > 0.0)
                .then_some(t.messages_per_s);
        }
        (Endpoint::Loss, Some(t)) => {
            return (t.sent > 0).then(|| (t.lost as f64 + 0.5) / t.sent as f64 * 1e6);
        }
        _ => {}
    }
    if matches!(endpoint, Endpoint::Mean | Endpoint::WorstMax) {
        let figures: Vec<&Figures> = cpus
            .iter()
            .map(|c| run.summaries.get(c))
            .collect::<Option<_>>()?;
        return summary(endpoint, &figures);
    }
    let series: Vec<&Series> = cpus
        .iter()
        .map(|c| run.cpus.get(c))
        .collect::<Option<_>>()?;
    latency(
        endpoint,
        series.iter().map(|s| (&s.values, s.exposure)),
        above_ns,
        scale(run, cpus),
    )
}

/// The share of a run's timer wake-ups above `--above` from which the rate above it is
/// saturated: with 99 % or more of every run's wake-ups above it in both arms, the rate
/// cannot change by more than about 1 %, within any margin, and says nothing about a change.
pub const SATURATED_SHARE: f64 = 0.99;

/// Whether the rate above `above_ns` of `runs` on `cpus` is saturated: timer wake-ups, which
/// come at the timer's interval, with [`SATURATED_SHARE`] or more of every run's above it, so
/// that the rate is the wake-up rate whatever the latencies do (busy-loop gaps come as they
/// come, and are never saturated).
pub fn saturated<'a>(runs: impl IntoIterator<Item = &'a Run>, cpus: &[u32], above_ns: f64) -> bool {
    runs.into_iter().all(|r| {
        r.format.family() == Family::Wakeups
            && share_above(r, cpus, above_ns).is_some_and(|s| s >= SATURATED_SHARE)
    })
}

/// The share of `run`'s latencies on `cpus` above `above_ns` (0 to 1); `None` where it has
/// none of them.
fn share_above(run: &Run, cpus: &[u32], above_ns: f64) -> Option<f64> {
    let series: Vec<&Series> = cpus
        .iter()
        .map(|c| run.cpus.get(c))
        .collect::<Option<_>>()?;
    let count: u64 = series.iter().map(|s| s.values.count()).sum();
    let above: u64 = series.iter().map(|s| s.values.count_above(above_ns)).sum();
    (count > 0).then(|| above as f64 / count as f64)
}

/// The value of `endpoint` in each slice of `run`'s time (the same slice of every CPU taken
/// together), when every CPU has the same number of slices, at least two.
pub fn of_slices(endpoint: Endpoint, run: &Run, cpus: &[u32], above_ns: f64) -> Option<Vec<f64>> {
    if !Endpoint::LATENCIES.contains(&endpoint) {
        return None;
    }
    let series: Vec<&Series> = cpus
        .iter()
        .map(|c| run.cpus.get(c))
        .collect::<Option<_>>()?;
    let n = series.first()?.slices.len();
    if n < 2 || series.iter().any(|s| s.slices.len() != n) {
        return None;
    }
    let scale = scale(run, cpus);
    (0..n)
        .map(|i| {
            latency(
                endpoint,
                series
                    .iter()
                    .map(|s| (&s.slices[i].values, s.slices[i].exposure)),
                above_ns,
                scale,
            )
        })
        .collect()
}

/// The standard error of the logarithm of a run's value of `endpoint`, from the variation
/// between its slices (batch means: the slices are consecutive batches of the run, so their
/// spread holds the autocorrelation inside the run), by the delta method.
pub fn within_run_se(endpoint: Endpoint, run: &Run, cpus: &[u32], above_ns: f64) -> Option<f64> {
    let slices = of_slices(endpoint, run, cpus, above_ns)?;
    let value = of_run(endpoint, run, cpus, above_ns)?;
    let (_, var) = mean_var(&slices);
    Some((var / slices.len() as f64).sqrt() / value)
}

/// The factor from events per exposure unit to the rate's unit.
fn scale(run: &Run, cpus: &[u32]) -> f64 {
    cpus.iter()
        .find_map(|c| run.cpus.get(c))
        .map_or(60.0, |s| s.unit.rate_unit().1)
}

fn latency<'a>(
    endpoint: Endpoint,
    series: impl Iterator<Item = (&'a super::stats::histogram::Cumulative, f64)>,
    above_ns: f64,
    scale: f64,
) -> Option<f64> {
    let series: Vec<_> = series.collect();
    if series.is_empty() {
        return None;
    }
    let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
    match endpoint {
        Endpoint::Median => {
            let medians: Vec<f64> = series
                .iter()
                .filter(|(h, _)| h.count() > 0)
                .map(|(h, _)| h.quantile(0.5))
                .collect();
            positive(median(&medians))
        }
        Endpoint::WorstP99 => positive(
            series
                .iter()
                .filter(|(h, _)| h.count() > 0)
                .map(|(h, _)| h.quantile(0.99))
                .fold(f64::NAN, f64::max),
        ),
        Endpoint::RateAbove => {
            let events: u64 = series.iter().map(|(h, _)| h.count_above(above_ns)).sum();
            let exposure: f64 = series.iter().map(|(_, e)| e).sum();
            positive((events as f64 + 0.5) / exposure * scale)
        }
        _ => None,
    }
}

fn summary(endpoint: Endpoint, figures: &[&Figures]) -> Option<f64> {
    let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
    match endpoint {
        Endpoint::Mean => positive(median(&figures.iter().map(|f| f.mean).collect::<Vec<_>>())),
        Endpoint::WorstMax => positive(figures.iter().map(|f| f.max).fold(f64::NAN, f64::max)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::run::{ExposureUnit, Format};

    fn run(latencies: &[&[f64]]) -> Run {
        let mut run = Run::empty("r", Format::LowlatTimer);
        for (cpu, values) in latencies.iter().enumerate() {
            let stream = values.iter().enumerate().map(|(i, &v)| (i as f64, v));
            let series =
                Series::from_stream(stream, values.len() as f64, ExposureUnit::Seconds).unwrap();
            run.cpus.insert(cpu as u32, series);
        }
        run
    }

    #[test]
    fn endpoints_pool_the_cpus() {
        let r = run(&[&[10.0, 20.0, 30.0], &[100.0, 200.0, 300.0, 400.0]]);
        // Medians 20 and 200: their median is 110.
        assert_eq!(of_run(Endpoint::Median, &r, &[0, 1], 50.0), Some(110.0));
        assert_eq!(of_run(Endpoint::WorstP99, &r, &[0, 1], 50.0), Some(400.0));
        // 4 above 50 ns in 7 s of CPU time: (4 + 0.5) / 7 per second, per minute.
        let rate = of_run(Endpoint::RateAbove, &r, &[0, 1], 50.0).unwrap();
        assert!((rate - 4.5 / 7.0 * 60.0).abs() < 1e-9);
        assert_eq!(of_run(Endpoint::Median, &r, &[0, 2], 50.0), None);
    }

    #[test]
    fn slices_give_the_variation_inside_the_run() {
        let steady: Vec<f64> = (0..1600).map(|i| 1000.0 + (i % 7) as f64).collect();
        let r = run(&[&steady]);
        let slices = of_slices(Endpoint::Median, &r, &[0], 0.0).unwrap();
        assert_eq!(slices.len(), 16);
        let se = within_run_se(Endpoint::Median, &r, &[0], 0.0).unwrap();
        assert!(se < 0.002, "{se}");
        let mut drifting = steady.clone();
        for (i, v) in drifting.iter_mut().enumerate() {
            *v *= 1.0 + i as f64 / 1600.0;
        }
        let drift = within_run_se(Endpoint::Median, &run(&[&drifting]), &[0], 0.0).unwrap();
        assert!(drift > 10.0 * se, "{drift} vs {se}");
    }
}
