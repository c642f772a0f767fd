//! The hwlat phase of `lowlat check`: when a target names `hwlat.max`, the kernel's hwlat
//! tracer (`measure::engines::hwlat`) runs once, after the measured rounds and never beside
//! them (it spins a CPU with interrupts off), and the largest gap it records, machine-wide
//! (the tracer moves across the CPUs itself), is held to the target as measured, as a timer
//! maximum is.
//!
//! The tracer records a burst's largest gap when it is above its threshold, in whole
//! microseconds rounded down: a run that recorded nothing proves every gap below the
//! threshold plus 1 µs, and a recorded S µs is a gap of S µs or more, less than S + 1. The
//! threshold is chosen so that nothing recorded proves the strictest limit: the limit − 1 µs
//! at most, and hwlatdetect's 10 µs where the limit is higher, so that the largest gap is
//! shown even when it meets the target.

use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::targets::{Target, TargetMetric};
use super::{TargetOutcome, TargetVerdict};
use crate::measure::engines::hwlat::{HwlatRequest, HwlatRun};

/// How long the hwlat phase runs unless `--hwlat-duration` says otherwise: half of
/// hwlatdetect's 120 s, 60 bursts of 0.5 s with interrupts off; a firmware interruption that
/// comes every minute or more often is seen, a rarer one needs a longer run.
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// hwlatdetect's threshold, µs: the tracer's threshold where the limits allow it.
const DEFAULT_THRESHOLD_US: u64 = 10;

/// What the hwlat phase measured, as the check document keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HwlatFigures {
    /// How long the tracer ran, s.
    pub seconds: f64,
    /// Gaps above this were recorded, µs (whole microseconds, rounded down).
    pub threshold_us: u64,
    /// How long each burst spun with interrupts off, µs, of every `window_us`.
    pub width_us: u64,
    /// The period of one burst, µs.
    pub window_us: u64,
    /// The gaps recorded (at most one a burst: its largest).
    pub gaps: usize,
    /// The largest gap recorded, µs; absent when none was above the threshold.
    pub max_us: Option<u64>,
    /// The CPU the largest gap was recorded on; absent with `max_us`.
    pub max_cpu: Option<u32>,
}

impl HwlatFigures {
    /// The figures of a tracer run.
    pub(crate) fn of(run: &HwlatRun) -> Self {
        let largest = run.samples.iter().max_by_key(|s| s.latency_us());
        Self {
            seconds: run.elapsed_ns as f64 / 1e9,
            threshold_us: run.config.threshold_us,
            width_us: run.config.width_us,
            window_us: run.config.window_us,
            gaps: run.samples.len(),
            max_us: largest.map(|s| s.latency_us()),
            max_cpu: largest.map(|s| s.cpu),
        }
    }

    /// Every gap the tracer saw was below this, µs: the largest recorded + 1, else the
    /// threshold + 1 (the tracer rounds down to whole microseconds).
    pub(crate) fn every_gap_below_us(&self) -> u64 {
        self.max_us.unwrap_or(self.threshold_us) + 1
    }
}

/// What the hwlat phase gave: its figures, or why it measured nothing.
pub(crate) type HwlatPhase = Result<HwlatFigures, String>;

/// The tracer's threshold for `targets`, µs: at most each `hwlat.max` limit − 1 µs (so that
/// nothing recorded proves it; the parser refuses limits under 2 µs), at most hwlatdetect's
/// 10 µs; `None` when no target names hwlat.
pub(crate) fn threshold_for(targets: &[Target]) -> Option<u64> {
    (targets.iter())
        .filter(|t| t.metric == TargetMetric::HwlatMaxUs)
        .map(|t| (t.below.floor() as u64).saturating_sub(1).max(1))
        .min()
        .map(|least| least.min(DEFAULT_THRESHOLD_US))
}

/// The tracer run `targets` need, `duration` long (hwlatdetect's window and width); `None`
/// when no target names hwlat.
pub(crate) fn request(targets: &[Target], duration: Duration) -> Option<HwlatRequest> {
    let threshold_us = threshold_for(targets)?;
    Some(HwlatRequest {
        duration_ns: u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
        threshold_us,
        ..HwlatRequest::default()
    })
}

/// `target` (an `hwlat.max`) against what the phase gave (`None`: no phase ran): missed when
/// the largest gap recorded is at or above the limit, met when every gap was below it, not
/// proven otherwise (a limit within the microsecond the tracer rounds to) and when nothing was
/// measured, with why.
pub(crate) fn verdict(target: &Target, phase: Option<&HwlatPhase>) -> TargetVerdict {
    let (outcome, hwlat, not_measured) = match phase {
        None => (
            TargetOutcome::NotProven,
            None,
            Some("check did not run the hwlat tracer".to_string()),
        ),
        Some(Err(why)) => (TargetOutcome::NotProven, None, Some(why.clone())),
        Some(Ok(figures)) => {
            let outcome = if figures.max_us.is_some_and(|max| max as f64 >= target.below) {
                TargetOutcome::Missed
            } else if figures.every_gap_below_us() as f64 <= target.below {
                TargetOutcome::Met
            } else {
                TargetOutcome::NotProven
            };
            (outcome, Some(figures.clone()), None)
        }
    };
    TargetVerdict {
        target: target.clone(),
        outcome,
        seconds_to_prove: None,
        values: Vec::new(),
        hwlat,
        not_measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(below: f64) -> Target {
        Target {
            metric: TargetMetric::HwlatMaxUs,
            below,
            source: format!("--target hwlat.max<{below}us"),
        }
    }

    fn figures(threshold_us: u64, max_us: Option<u64>) -> HwlatPhase {
        Ok(HwlatFigures {
            seconds: 60.0,
            threshold_us,
            width_us: 500_000,
            window_us: 1_000_000,
            gaps: usize::from(max_us.is_some()),
            max_us,
            max_cpu: max_us.map(|_| 3),
        })
    }

    /// The threshold lets nothing recorded prove the strictest limit: the tracer records gaps
    /// above T µs rounded down, so none recorded means every gap below T + 1 µs.
    #[test]
    fn the_threshold_is_below_the_strictest_limit() {
        assert_eq!(threshold_for(&[]), None);
        assert_eq!(threshold_for(&[target(50.0)]), Some(10));
        assert_eq!(threshold_for(&[target(50.0), target(8.0)]), Some(7));
        assert_eq!(threshold_for(&[target(8.5)]), Some(7));
        assert_eq!(threshold_for(&[target(2.0)]), Some(1));
        let timer = Target {
            metric: TargetMetric::TimerMaxUs,
            ..target(5.0)
        };
        assert_eq!(threshold_for(&[timer]), None);
        let asked = request(&[target(8.0)], Duration::from_secs(5)).unwrap();
        assert_eq!(asked.duration_ns, 5_000_000_000);
        assert_eq!((asked.threshold_us, asked.width_us), (7, 500_000));
    }

    /// A maximum as measured: a gap of S µs recorded is at least S µs (missed when S is at or
    /// above the limit), and below S + 1 µs (met when that is at or below the limit); a limit
    /// inside that microsecond is not proven; nothing measured is not proven, with why.
    #[test]
    fn the_largest_gap_is_judged_as_measured() {
        let outcome = |below: f64, phase: &HwlatPhase| verdict(&target(below), Some(phase));
        assert_eq!(
            outcome(20.0, &figures(10, Some(27))).outcome,
            TargetOutcome::Missed
        );
        assert_eq!(
            outcome(27.0, &figures(10, Some(27))).outcome,
            TargetOutcome::Missed
        );
        assert_eq!(
            outcome(28.0, &figures(10, Some(27))).outcome,
            TargetOutcome::Met
        );
        assert_eq!(
            outcome(27.5, &figures(10, Some(27))).outcome,
            TargetOutcome::NotProven
        );
        assert_eq!(
            outcome(11.0, &figures(10, None)).outcome,
            TargetOutcome::Met
        );
        assert_eq!(
            outcome(10.5, &figures(10, None)).outcome,
            TargetOutcome::NotProven
        );
        let judged = outcome(50.0, &figures(10, Some(12)));
        assert_eq!(judged.hwlat.as_ref().unwrap().every_gap_below_us(), 13);
        assert!(judged.values.is_empty() && judged.not_measured.is_none());
        let absent = outcome(50.0, &Err("no tracer".to_string()));
        assert_eq!(absent.outcome, TargetOutcome::NotProven);
        assert_eq!(absent.not_measured.as_deref(), Some("no tracer"));
        let none = verdict(&target(50.0), None);
        assert_eq!(none.outcome, TargetOutcome::NotProven);
        assert!(none.not_measured.is_some());
    }
}
