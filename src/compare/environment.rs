//! The environment of the runs beside the verdicts: what can change a result without any
//! setting changing (steal, other tasks on the measured CPUs, frequency, throttling, SMIs,
//! load), summarised per arm from the conditions lowlat's documents record. When the arms
//! differ in one beyond its spread inside an arm, and beyond a floor that noise of that
//! size cannot matter under, it is said in a warning, and the verdicts it could explain are
//! marked confounded (docs/statistics.md, "The environment"), unless a setting of the diff
//! between the arms moves it (`effects`): then it is how the change worked, said as such.

use serde::{Deserialize, Serialize};

use super::run::Run;
use super::stats::mean_var;

/// A quantity of the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Covariate {
    /// Time the hypervisor gave to others, % of the measured CPUs' time.
    Steal,
    /// Time other tasks ran on the measured CPUs while the measurement waited, % of their time.
    OtherTasks,
    /// Effective frequency as a share of nominal (APERF/MPERF), mean of the CPUs.
    AperfMperf,
    /// The governor's frequency, MHz, mean of the CPUs.
    CurFreq,
    /// Thermal throttle events on the measured CPUs.
    Throttling,
    /// System management interrupts on the measured CPUs.
    Smis,
    /// The 1-minute load average.
    LoadAverage,
}

impl Covariate {
    /// Every covariate, in the order of the table.
    pub const ALL: [Covariate; 7] = [
        Covariate::Steal,
        Covariate::OtherTasks,
        Covariate::AperfMperf,
        Covariate::CurFreq,
        Covariate::Throttling,
        Covariate::Smis,
        Covariate::LoadAverage,
    ];

    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Covariate::Steal => "steal (% of CPU time)",
            Covariate::OtherTasks => "other tasks (% of CPU time)",
            Covariate::AperfMperf => "APERF/MPERF",
            Covariate::CurFreq => "scaling_cur_freq (MHz)",
            Covariate::Throttling => "thermal throttle events",
            Covariate::Smis => "SMIs",
            Covariate::LoadAverage => "load average (1 min)",
        }
    }

    /// Whether more of it makes results worse (less, for the frequency).
    fn higher_is_worse(self) -> bool {
        !matches!(self, Covariate::AperfMperf | Covariate::CurFreq)
    }

    /// Below this difference between the arms the quantity cannot explain a verdict: 0.1 %
    /// of the CPU time to steal or to other tasks (a few preemptions of a millisecond move a
    /// tail), 3 % of the frequency, one throttle event or SMI per run, 0.5 of load.
    fn floor(self, mean: f64) -> f64 {
        match self {
            Covariate::Steal | Covariate::OtherTasks => 0.1,
            Covariate::AperfMperf | Covariate::CurFreq => 0.03 * mean.abs(),
            Covariate::Throttling | Covariate::Smis => 1.0,
            Covariate::LoadAverage => 0.5,
        }
    }

    /// Its value for one run over `cpus`, when the run recorded it for every one of them.
    fn of_run(self, run: &Run, cpus: &[u32]) -> Option<f64> {
        if cpus.is_empty() || run.conditions.is_empty() {
            return None;
        }
        let conditions: Vec<_> = cpus
            .iter()
            .map(|c| run.conditions.get(c))
            .collect::<Option<_>>()?;
        let exposure_ns: f64 = cpus
            .iter()
            .map(|c| run.cpus.get(c).map_or(0.0, |s| s.exposure * 1e9))
            .sum();
        let sum = |get: fn(&super::run::CpuConditions) -> Option<f64>| -> Option<f64> {
            conditions.iter().map(|c| get(c)).sum()
        };
        let share = |total: f64| (exposure_ns > 0.0).then(|| total / exposure_ns * 100.0);
        let mean = |total: f64| total / cpus.len() as f64;
        let value = match self {
            Covariate::Steal => share(sum(|c| c.steal_ns)?),
            Covariate::OtherTasks => share(sum(|c| c.others_ns)?),
            Covariate::AperfMperf => Some(mean(sum(|c| c.aperf_mperf)?)),
            Covariate::CurFreq => Some(mean(sum(|c| c.cur_freq_mhz)?)),
            Covariate::Throttling => sum(|c| c.throttle_events),
            Covariate::Smis => sum(|c| c.smis),
            Covariate::LoadAverage => run.load_average,
        };
        value.filter(|v| v.is_finite())
    }
}

/// One arm's values of a covariate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Mean over the runs that recorded it.
    pub mean: f64,
    /// Standard deviation over those runs (0 with one).
    pub sd: f64,
    /// Runs that recorded it.
    pub runs: usize,
}

/// Which arm ran in the worse environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// The baseline.
    A,
    /// The candidate.
    B,
}

/// One covariate of both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The quantity.
    pub covariate: Covariate,
    /// Arm A's values (`null`: no run of A recorded it).
    pub a: Option<Spread>,
    /// Arm B's values.
    pub b: Option<Spread>,
    /// The arm whose environment was worse, when the arms differ beyond their spread and the
    /// floor (`null`: no difference that matters, or not recorded on both sides).
    pub worse: Option<Side>,
    /// The settings of the diff between the arms that move this quantity, when the arms
    /// differ in it (empty: none, or no difference): the difference is then the change's own
    /// effect, and explains no verdict as a confounder. Absent from documents written before
    /// compare knew the change's effects.
    #[serde(default)]
    pub moved_by: Vec<String>,
    /// The warning, when the arms differ and no setting of the diff moves the quantity.
    pub warning: Option<String>,
}

impl Row {
    /// Whether it could explain a verdict whose worse arm is `side`: it differs that way and
    /// no setting of the diff moves it.
    pub fn confounds(&self, side: Side) -> bool {
        self.worse == Some(side) && self.moved_by.is_empty()
    }

    /// What differs, in words (`A shared its CPUs 808.9× more with other tasks (…)`), when
    /// the arms differ.
    pub fn difference(&self) -> Option<String> {
        Some(describe(self.covariate, self.a?, self.b?, self.worse?))
    }
}

/// The environment of both arms, over the CPUs compared; `moved_by` gives the settings of the
/// diff between the arms that move a covariate (`effects::moved_by`), which make a difference
/// in it the change's own effect.
pub fn rows(
    a: &[&Run],
    b: &[&Run],
    cpus: &[u32],
    moved_by: impl Fn(Covariate) -> Vec<String>,
) -> Vec<Row> {
    Covariate::ALL
        .iter()
        .filter_map(|&covariate| {
            let spread = |runs: &[&Run]| -> Option<Spread> {
                let values: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| covariate.of_run(r, cpus))
                    .collect();
                (!values.is_empty()).then(|| {
                    let (mean, var) = mean_var(&values);
                    Spread {
                        mean,
                        sd: var.sqrt(),
                        runs: values.len(),
                    }
                })
            };
            let (sa, sb) = (spread(a), spread(b));
            if sa.is_none() && sb.is_none() {
                return None;
            }
            let worse = match (sa, sb) {
                (Some(x), Some(y)) => differs(covariate, x, y),
                _ => None,
            };
            let moved_by = match worse {
                Some(_) => moved_by(covariate),
                None => Vec::new(),
            };
            let warning = worse
                .filter(|_| moved_by.is_empty())
                .and_then(|side| Some(describe(covariate, sa?, sb?, side)))
                .map(|what| format!("{what}: the host, not the change, may explain a difference"));
            Some(Row {
                covariate,
                a: sa,
                b: sb,
                worse,
                moved_by,
                warning,
            })
        })
        .collect()
}

/// The worse side when `b` differs from `a` by more than twice the standard error the spread
/// inside the arms gives their difference, and by more than the covariate's floor.
fn differs(covariate: Covariate, a: Spread, b: Spread) -> Option<Side> {
    let difference = b.mean - a.mean;
    let spread = 2.0 * (a.sd.powi(2) / a.runs as f64 + b.sd.powi(2) / b.runs as f64).sqrt();
    if difference.abs() <= spread || difference.abs() <= covariate.floor(a.mean.max(b.mean)) {
        return None;
    }
    Some(if (difference > 0.0) == covariate.higher_is_worse() {
        Side::B
    } else {
        Side::A
    })
}

/// The difference of `covariate` between the arms in words, `worse` the arm it was worse in.
fn describe(covariate: Covariate, a: Spread, b: Spread, worse: Side) -> String {
    let (name, other) = match worse {
        Side::A => ("A", "B"),
        Side::B => ("B", "A"),
    };
    let times = |x: f64, y: f64| {
        if y > 0.0 {
            format!("{:.1}× ", x / y)
        } else {
            String::new()
        }
    };
    let (hi, lo) = if b.mean > a.mean {
        (b.mean, a.mean)
    } else {
        (a.mean, b.mean)
    };
    match covariate {
        Covariate::Steal => format!(
            "{name} lost {}more time to steal ({:.2} % vs {:.2} % of the CPU time, A vs B)",
            times(hi, lo),
            a.mean,
            b.mean
        ),
        Covariate::OtherTasks => format!(
            "{name} shared its CPUs {}more with other tasks ({:.2} % vs {:.2} % of the CPU time, A vs B)",
            times(hi, lo),
            a.mean,
            b.mean
        ),
        Covariate::AperfMperf | Covariate::CurFreq => format!(
            "{name} ran at a lower frequency than {other} ({}: {:.3} vs {:.3}, A vs B)",
            covariate.name(),
            a.mean,
            b.mean
        ),
        Covariate::Throttling | Covariate::Smis | Covariate::LoadAverage => format!(
            "{name} had more {} than {other} ({:.1} vs {:.1} per run, A vs B)",
            covariate.name(),
            a.mean,
            b.mean
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::run::{CpuConditions, ExposureUnit, Format, Series};

    fn run(steal_ns: f64, load: f64) -> Run {
        let mut r = Run::empty("r", Format::LowlatJitter);
        let series = Series::from_stream([(0.0, 1.0)], 10.0, ExposureUnit::Seconds).unwrap();
        r.cpus.insert(1, series);
        r.conditions.insert(
            1,
            CpuConditions {
                steal_ns: Some(steal_ns),
                ..CpuConditions::default()
            },
        );
        r.load_average = Some(load);
        r
    }

    #[test]
    fn steal_that_rose_beyond_its_spread_is_named() {
        let a = [run(1.6e7, 1.0), run(1.5e7, 1.1), run(1.7e7, 0.9)];
        let b = [run(9.8e7, 1.0), run(9.9e7, 1.0), run(9.7e7, 1.1)];
        let (a, b): (Vec<&Run>, Vec<&Run>) = (a.iter().collect(), b.iter().collect());
        let table = rows(&a, &b, &[1], |_| Vec::new());
        let steal = &table[0];
        assert_eq!(steal.covariate, Covariate::Steal);
        assert_eq!(steal.worse, Some(Side::B));
        let warning = steal.warning.as_deref().unwrap();
        assert!(
            warning.starts_with("B lost 6.1× more time to steal"),
            "{warning}"
        );
        let load = table
            .iter()
            .find(|r| r.covariate == Covariate::LoadAverage)
            .unwrap();
        assert_eq!(load.worse, None);
        // Recorded on one side only: no claim either way.
        let bare = Run::empty("p", Format::SysjitterRaw);
        assert!(
            rows(&a, &[&bare], &[1], |_| Vec::new())
                .iter()
                .all(|r| r.worse.is_none())
        );
    }
}
