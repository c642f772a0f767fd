//! `lowlat check`: the main job in one command. The audit says what is set; a jitter run and a
//! timer run on the CPUs that matter say what that buys; the profile's measured targets
//! (`targets.table`, with sources) turn the figures into a verdict. The pipeline, from request
//! to verdicts, is `pipeline.rs`'s; this module holds the figures and the verdicts.

pub(crate) mod hwlat;
mod pipeline;
mod request;
pub(crate) mod targets;

pub(crate) use pipeline::{
    CheckRequest, CheckRun, JITTER_THRESHOLD_NS, LoadedCheck, MIN_ROUND, Prepared, Step,
    TIMER_INTERVAL_NS, measured_cpus, prepare, run,
};
pub(crate) use request::Asked;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::machine::kernel::stat::CpuStat;
use crate::measure::engines::jitter::JitterRun;
use crate::measure::engines::timer::TimerRun;
use crate::measure::runner::tsc::ticks_to_ns;
use targets::{Target, TargetMetric};

/// Interruptions this long or longer count against the jitter target, ns.
pub(crate) const LONG_INTERRUPTION_NS: u64 = 10_000;

/// What one CPU measured, in the metrics' units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuFigures {
    /// The CPU.
    pub cpu: u32,
    /// Busy-loop runtime, s (0 when the jitter run did not measure it).
    pub jitter_seconds: f64,
    /// Interruptions at or above the jitter threshold.
    pub interruptions: u64,
    /// Interruptions of [`LONG_INTERRUPTION_NS`] or more.
    pub long_interruptions: u64,
    /// The longest interruption, ns.
    pub max_interruption_ns: u64,
    /// Timer wake-ups recorded.
    pub timer_samples: u64,
    /// The largest timer wake-up latency, ns.
    pub timer_max_ns: u64,
    /// The 99th percentile of the timer latency, ns.
    pub timer_p99_ns: u64,
    /// In a virtual machine: time the host ran something else while this vCPU wanted to run,
    /// over both runs (ms, from the `steal` ticks of `/proc/stat`; absent on bare metal or
    /// when unreadable). Only the host can remove it (see LL-STEAL).
    pub steal_ms: Option<f64>,
    /// Each interruption's length, ns (for targets on other lengths than 10 µs; not in the
    /// document).
    #[serde(skip)]
    pub gaps_ns: Vec<u64>,
    /// The timer wake-up latencies, ns (for quantile targets; not in the document).
    #[serde(skip)]
    pub timer_latency: Option<Histogram<u64>>,
}

impl CpuFigures {
    /// How many interruptions lasted `at_least_ns` or more.
    pub(crate) fn interruptions_at_least(&self, at_least_ns: u64) -> u64 {
        if at_least_ns == LONG_INTERRUPTION_NS {
            return self.long_interruptions;
        }
        self.gaps_ns.iter().filter(|g| **g >= at_least_ns).count() as u64
    }
}

impl CpuFigures {
    /// The value of `metric` here; `None` when it was not measured on this CPU.
    pub(crate) fn value(&self, metric: TargetMetric) -> Option<f64> {
        match metric {
            TargetMetric::InterruptionsPerMinute { at_least_ns } => (self.jitter_seconds > 0.0)
                .then(|| {
                    self.interruptions_at_least(at_least_ns) as f64 * 60.0 / self.jitter_seconds
                }),
            TargetMetric::TimerMaxUs => {
                (self.timer_samples > 0).then(|| self.timer_max_ns as f64 / 1e3)
            }
            TargetMetric::TimerQuantileUs(q) => (self.timer_latency.as_ref())
                .and_then(|histogram| q.value(histogram, self.timer_max_ns))
                .map(|ns| ns as f64 / 1e3),
            TargetMetric::HwlatMaxUs => None,
        }
    }
}

/// The figures of each CPU measured by `jitter` and `timer` (either may be absent), in CPU
/// order.
pub(crate) fn figures(jitter: Option<&JitterRun>, timer: Option<&TimerRun>) -> Vec<CpuFigures> {
    let mut by_cpu = BTreeMap::<u32, CpuFigures>::new();
    if let Some(run) = jitter {
        let tsc = &run.setup;
        let hz = tsc.hz;
        let long = tsc.ticks(LONG_INTERRUPTION_NS);
        for cpu in run.session.cpus.iter().filter(|c| c.setup_error.is_none()) {
            let record = &cpu.record;
            let figures = figures_of(&mut by_cpu, cpu.cpu);
            figures.jitter_seconds = ticks_to_ns(record.runtime_ticks(), hz) as f64 / 1e9;
            figures.interruptions = record.gaps.len() as u64;
            figures.long_interruptions =
                record.gaps.iter().filter(|g| g.ticks >= long).count() as u64;
            figures.max_interruption_ns =
                ticks_to_ns(record.gaps.iter().map(|g| g.ticks).max().unwrap_or(0), hz);
            figures.gaps_ns = record
                .gaps
                .iter()
                .map(|g| ticks_to_ns(g.ticks, hz))
                .collect();
        }
    }
    if let Some(run) = timer {
        for cpu in run.session.cpus.iter().filter(|c| c.setup_error.is_none()) {
            let record = &cpu.record;
            let figures = figures_of(&mut by_cpu, cpu.cpu);
            figures.timer_samples = record.hist.len();
            figures.timer_max_ns = record.max_ns;
            figures.timer_p99_ns = (targets::Quantile::P99)
                .value(&record.hist, record.max_ns)
                .unwrap_or(0);
            figures.timer_latency = Some(record.hist.clone());
        }
    }
    by_cpu.into_values().collect()
}

/// The figures of `cpu` in `by_cpu`, added empty when missing.
fn figures_of(by_cpu: &mut BTreeMap<u32, CpuFigures>, cpu: u32) -> &mut CpuFigures {
    by_cpu.entry(cpu).or_insert_with(|| CpuFigures {
        cpu,
        jitter_seconds: 0.0,
        interruptions: 0,
        long_interruptions: 0,
        max_interruption_ns: 0,
        timer_samples: 0,
        timer_max_ns: 0,
        timer_p99_ns: 0,
        steal_ms: None,
        gaps_ns: Vec::new(),
        timer_latency: None,
    })
}

/// USER_HZ: the unit of `/proc/stat`'s tick counters (1/100 s on every mainstream
/// architecture).
const USER_HZ: f64 = 100.0;

/// Records on each CPU of `figures` the steal time between the two readings of `/proc/stat`.
pub(crate) fn add_steal(figures: &mut [CpuFigures], before: &CpuStat, after: &CpuStat) {
    for figure in figures {
        let steal = |stat: &CpuStat| {
            stat.per_cpu
                .iter()
                .find(|(cpu, _)| *cpu == figure.cpu)
                .map(|(_, times)| times.steal)
        };
        if let (Some(start), Some(end)) = (steal(before), steal(after)) {
            figure.steal_ms = Some(end.saturating_sub(start) as f64 * 1000.0 / USER_HZ);
        }
    }
}

/// Whether a target was met, missed, or not proven by a run too short to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TargetOutcome {
    /// Every measured CPU stayed below the limit: a maximum as measured, a rate with its
    /// upper bound.
    Met,
    /// At least one CPU did not: its maximum, or the rate it saw, is at or above the limit.
    Missed,
    /// No CPU missed it, but at least one CPU's run was too short to prove it: the rate it saw
    /// is below the limit, its upper bound is not. Neither a pass nor a failure of the machine.
    NotProven,
    /// No CPU measured the metric (its run failed or was interrupted before any sample).
    NotMeasured,
}

impl TargetOutcome {
    /// A CPU's outcome in a check made before NOT PROVEN, which wrote only `met`.
    fn before_not_proven() -> Self {
        TargetOutcome::Met
    }
}

/// One target against the figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TargetVerdict {
    /// The target.
    pub target: Target,
    /// Met, missed, not proven or not measured.
    pub outcome: TargetOutcome,
    /// For a rate target: how long each CPU's busy loop must run, s, for a run without an
    /// event to prove it (the 95 % upper bound after no event falls below the target);
    /// `null` for a maximum.
    pub seconds_to_prove: Option<f64>,
    /// Each measured CPU's value (in the metric's unit), in CPU order; empty for a
    /// machine-wide target (`hwlat`).
    pub values: Vec<CpuValue>,
    /// For `hwlat.max`: what the hwlat tracer recorded, machine-wide; absent for the other
    /// targets and when it measured nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hwlat: Option<hwlat::HwlatFigures>,
    /// Why the target could not be measured (for `hwlat.max`: no hwlat tracer in this kernel,
    /// tracefs not writable): it is then not proven, neither met nor missed; absent when
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
}

impl TargetVerdict {
    /// For a target not proven: the busy loop per CPU, s, that its CPUs not proven need (the
    /// most of them; `None` when a rate that close to its limit cannot be proven) and the
    /// busy loop they had (the least of them).
    pub(crate) fn proof_needed(&self) -> Option<(Option<f64>, f64)> {
        let short: Vec<&CpuValue> = (self.values.iter())
            .filter(|v| v.outcome == TargetOutcome::NotProven)
            .collect();
        let had = (short.iter())
            .map(|v| v.busy_loop_seconds.unwrap_or(0.0))
            .reduce(f64::min)?;
        let needed = short
            .iter()
            .map(|v| v.seconds_to_prove)
            .try_fold(0.0, |most: f64, s| s.map(|s| most.max(s)));
        Some((needed, had))
    }
}

/// One CPU's value of a metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpuValue {
    /// The CPU.
    pub cpu: u32,
    /// The value, in the metric's unit.
    pub value: f64,
    /// For a rate: the exact Poisson 95 % upper bound of the rate, in the metric's unit, which
    /// the target is judged on; `null` for a maximum.
    pub upper_95: Option<f64>,
    /// Whether it is below the target (a rate: its upper bound).
    pub met: bool,
    /// Met, missed (the value itself at or above the limit) or not proven (a rate seen below
    /// the limit whose upper bound is not); absent from checks made before NOT PROVEN, read
    /// as met (`met` says whether it was).
    #[serde(default = "TargetOutcome::before_not_proven")]
    pub outcome: TargetOutcome,
    /// For a rate: this CPU's busy loop, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_loop_seconds: Option<f64>,
    /// For a rate not proven: the busy loop this CPU needs, s, for its bound to fall below the
    /// target if interruptions keep coming at the rate seen (the target's `seconds_to_prove`
    /// when it saw none); absent otherwise, or when a rate that close to the limit cannot be
    /// proven.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_to_prove: Option<f64>,
}

/// Checks each target against the figures: a CPU misses a target when its value (a maximum, or
/// the rate it saw) is at or above the limit, meets it when its value (a rate: its upper bound)
/// is below, and leaves it not proven otherwise. A machine-wide target (`hwlat.max`) is held
/// to what the hwlat phase gave (`None`: none ran), as [`hwlat::verdict`] judges it.
pub(crate) fn evaluate(
    targets: &[Target],
    figures: &[CpuFigures],
    hwlat: Option<&hwlat::HwlatPhase>,
) -> Vec<TargetVerdict> {
    targets
        .iter()
        .map(|target| {
            if target.metric.is_machine_wide() {
                return hwlat::verdict(target, hwlat);
            }
            let values: Vec<CpuValue> = figures
                .iter()
                .filter_map(|f| {
                    f.value(target.metric)
                        .map(|value| cpu_value(target, f, value))
                })
                .collect();
            let outcome = if values.is_empty() {
                TargetOutcome::NotMeasured
            } else if values.iter().any(|v| v.outcome == TargetOutcome::Missed) {
                TargetOutcome::Missed
            } else if values.iter().any(|v| v.outcome == TargetOutcome::NotProven) {
                TargetOutcome::NotProven
            } else {
                TargetOutcome::Met
            };
            TargetVerdict {
                target: target.clone(),
                outcome,
                seconds_to_prove: target.seconds_to_prove(),
                values,
                hwlat: None,
                not_measured: None,
            }
        })
        .collect()
}

/// One CPU's `value` of `target`'s metric, judged.
fn cpu_value(target: &Target, figures: &CpuFigures, value: f64) -> CpuValue {
    let upper_95 = target.upper_bound(figures);
    let outcome = if value >= target.below {
        TargetOutcome::Missed
    } else if upper_95.is_some_and(|bound| bound >= target.below) {
        TargetOutcome::NotProven
    } else {
        TargetOutcome::Met
    };
    let rate = target.metric.is_rate();
    CpuValue {
        cpu: figures.cpu,
        value,
        upper_95,
        met: outcome == TargetOutcome::Met,
        outcome,
        busy_loop_seconds: rate.then_some(figures.jitter_seconds),
        seconds_to_prove: (outcome == TargetOutcome::NotProven)
            .then(|| targets::exposure_to_prove_at(value, target.below).map(|m| m * 60.0))
            .flatten(),
    }
}

/// What a check concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// The audit has no failure, every target is met and the measurement is complete.
    Pass,
    /// The machine failed: an audit failure, a target missed or not measured, or an incomplete
    /// measurement.
    Fail,
    /// Nothing failed, but the run could not decide: a target it was too short to prove, or a
    /// `--quick` smoke run (which cannot pass).
    NotProven,
}

impl Verdict {
    /// Its word in the terminal report and the HTML: `PASS`, `FAIL`, `NOT PROVEN`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotProven => "NOT PROVEN",
        }
    }
}

/// Rounds of a check unless asked otherwise (`--repeat`): 5 rounds of 4 s rather than one of
/// 20 s, so that two checks can be compared run by run (docs/statistics.md).
pub(crate) const DEFAULT_ROUNDS: u32 = 5;

/// The shortest check, `--quick`'s length (each of the two runs): a smoke run.
pub(crate) const QUICK: Duration = Duration::from_secs(20);

/// The length of each of a check's two runs that proves `targets` on a quiet machine: the
/// busy loop that proves the most demanding rate target with no interruption seen, a tenth
/// more for the loop's start and end on each round, up to whole 10 s; [`QUICK`] when no
/// target is a rate (a maximum is judged as measured).
pub(crate) fn duration_to_prove(targets: &[Target]) -> Duration {
    let most = targets
        .iter()
        .filter_map(Target::seconds_to_prove)
        .fold(0.0, f64::max);
    let seconds = ((most * 1.1 / 10.0).ceil() * 10.0) as u64;
    QUICK.max(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: u32, seconds: f64, long: u64, timer_max_ns: u64) -> CpuFigures {
        CpuFigures {
            cpu,
            jitter_seconds: seconds,
            interruptions: long * 3,
            long_interruptions: long,
            max_interruption_ns: 0,
            timer_samples: u64::from(timer_max_ns > 0),
            timer_max_ns,
            timer_p99_ns: 0,
            steal_ms: None,
            gaps_ns: Vec::new(),
            timer_latency: None,
        }
    }

    #[test]
    fn steal_is_the_growth_of_each_cpus_steal_ticks() {
        let stat = |text: &str| {
            crate::machine::kernel::stat::parse_stat(text, "/proc/stat", &mut Default::default())
        };
        let before = stat("cpu1 0 0 0 0 0 0 0 100 0 0\ncpu2 0 0 0 0 0 0 0 5 0 0\n");
        let after = stat("cpu1 0 0 0 0 0 0 0 103 0 0\ncpu2 0 0 0 0 0 0 0 5 0 0\n");
        let mut figures = [cpu(1, 1.0, 0, 0), cpu(2, 1.0, 0, 0), cpu(3, 1.0, 0, 0)];
        add_steal(&mut figures, &before, &after);
        let steal: Vec<Option<f64>> = figures.iter().map(|f| f.steal_ms).collect();
        assert_eq!(steal, [Some(30.0), Some(0.0), None]);
    }

    /// Issue 43 item 5: with nothing seen in 4 s, the target was MISSED and the check failed a
    /// perfect machine. A rate seen below the limit whose bound is not is NOT PROVEN, with the
    /// busy loop it needs; a rate seen at or above it is MISSED, however short the run.
    #[test]
    fn a_run_too_short_to_prove_a_rate_is_not_proven_and_says_how_long_it_needs() {
        let rate = Target {
            metric: targets::RATE_GE_10US,
            below: 1.0,
            source: "--target jitter.rate(10us)<1/min".into(),
        };
        let nothing = evaluate(std::slice::from_ref(&rate), &[cpu(1, 4.0, 0, 0)], None);
        assert_eq!(nothing[0].outcome, TargetOutcome::NotProven);
        let value = &nothing[0].values[0];
        assert_eq!(value.outcome, TargetOutcome::NotProven);
        assert!((value.upper_95.unwrap() - 44.9).abs() < 0.05);
        assert_eq!(value.busy_loop_seconds, Some(4.0));
        let (needed, had) = nothing[0].proof_needed().unwrap();
        assert!((needed.unwrap() - 179.74).abs() < 1e-2, "{needed:?}");
        assert_eq!(had, 4.0);
        // 1 in 200 s (0.3 a minute): below the limit, the bound (1.4) not; a longer run at
        // that rate proves it.
        let little = evaluate(std::slice::from_ref(&rate), &[cpu(1, 200.0, 1, 0)], None);
        assert_eq!(little[0].outcome, TargetOutcome::NotProven);
        let needed = little[0].proof_needed().unwrap().0.unwrap();
        assert!(needed > 200.0 && needed < 600.0, "{needed}");
        // 2 in 60 s is 2 a minute: missed, not merely not proven.
        let seen = evaluate(std::slice::from_ref(&rate), &[cpu(1, 60.0, 2, 0)], None);
        assert_eq!(seen[0].outcome, TargetOutcome::Missed);
        assert_eq!(seen[0].proof_needed(), None);
        // One CPU missing it makes the target missed, whatever the others could not prove.
        let both = evaluate(&[rate], &[cpu(1, 4.0, 0, 0), cpu(2, 60.0, 2, 0)], None);
        assert_eq!(both[0].outcome, TargetOutcome::Missed);
    }

    /// The default length proves the profile's targets with no interruption seen, with a
    /// margin: 200 s for low-latency's < 1 a minute (180 s needed); a profile of maxima only
    /// keeps the quick 20 s.
    #[test]
    fn the_default_duration_proves_the_profiles_targets() {
        use crate::tuning::profile_name::ProfileName;
        let low = targets::of_profile(ProfileName::LowLatency);
        let duration = duration_to_prove(&low);
        assert_eq!(duration, Duration::from_secs(200));
        let needed = low[0].seconds_to_prove().unwrap();
        // Five rounds of 40 s lose a little of each to the loop's start: still enough.
        assert!(duration.as_secs_f64() * 0.95 > needed);
        assert_eq!(
            duration_to_prove(&targets::of_profile(ProfileName::RealtimeHost)),
            QUICK
        );
        assert_eq!(duration_to_prove(&[]), QUICK);
        // A perfect low-latency CPU over the default passes.
        let quiet = evaluate(&low, &[cpu(1, duration.as_secs_f64() * 0.95, 0, 0)], None);
        assert_eq!(quiet[0].outcome, TargetOutcome::Met);
    }

    #[test]
    fn a_target_is_met_only_when_every_cpu_is_below_it() {
        let rate = Target {
            metric: targets::RATE_GE_10US,
            below: 1.0,
            source: "[S000]".into(),
        };
        let timer = Target {
            metric: TargetMetric::TimerMaxUs,
            below: 50.0,
            source: "[S002]".into(),
        };
        // 0 in 20 s (proves nothing: the 95 % bound is 9 a minute), and 1 in 30 s (2 a minute).
        let figures = [cpu(1, 20.0, 0, 12_000), cpu(2, 30.0, 1, 49_999)];
        let verdicts = evaluate(&[rate.clone(), timer.clone()], &figures, None);
        assert_eq!(verdicts[0].outcome, TargetOutcome::Missed);
        assert_eq!(verdicts[0].values[1].value, 2.0);
        assert!(!verdicts[0].values[0].met && !verdicts[0].values[1].met);
        assert_eq!(verdicts[0].values[0].outcome, TargetOutcome::NotProven);
        assert_eq!(verdicts[0].values[1].outcome, TargetOutcome::Missed);
        assert!((verdicts[0].values[0].upper_95.unwrap() - 8.987).abs() < 1e-3);
        assert!((verdicts[0].seconds_to_prove.unwrap() - 179.74).abs() < 1e-2);
        // 0 in 200 s proves it.
        let long = evaluate(std::slice::from_ref(&rate), &[cpu(1, 200.0, 0, 0)], None);
        assert_eq!(long[0].outcome, TargetOutcome::Met);
        // A target on another length counts the gaps of that length or more.
        let at_20us = Target {
            metric: TargetMetric::InterruptionsPerMinute {
                at_least_ns: 20_000,
            },
            below: 1.0,
            source: "--target jitter.rate(20us)<1/min".into(),
        };
        let mut some = cpu(1, 600.0, 2, 0);
        some.gaps_ns = vec![1_500, 12_000, 25_000];
        let judged = evaluate(&[at_20us], &[some], None);
        assert_eq!(judged[0].values[0].value, 0.1);
        assert_eq!(judged[0].outcome, TargetOutcome::Met);
        assert_eq!(verdicts[1].outcome, TargetOutcome::Met);
        assert_eq!(verdicts[1].values[1].value, 49.999);
        let unmeasured = evaluate(&[timer], &[cpu(1, 20.0, 0, 0)], None);
        assert_eq!(unmeasured[0].outcome, TargetOutcome::NotMeasured);
        assert!(unmeasured[0].values.is_empty());
    }
}
