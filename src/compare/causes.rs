//! The causes of the gaps (`measure jitter --explain`, a check's jitter runs) compared between
//! the arms: the causes that appeared (in some run of B, in no run of A) and disappeared (the
//! reverse), and every cause's rate judged as the detail rows are. A cause is its class and
//! source (`tick` `tick_nohz_handler`, `task` `cron`); its rate in one run is its gaps on the
//! CPUs compared, plus 0.5 (so that a run without any still has a rate, as the rate above
//! `--above`), per minute of those CPUs' busy-loop time. Runs are the unit: Welch on the
//! logarithms of one rate per run, Holm over the causes compared; with one run in an arm the
//! variation between runs is unknown and a change is not called (inconclusive, naming the
//! runs needed). Counts are never compared as a plain ratio of totals: a cause seen once in
//! one arm "appears" and is judged like any other, so chance is not read as a change.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::endpoint::Endpoint;
use super::run::{CausesOn, Run};
use super::verdict::{self, Compared};
use crate::measure::trace::explain::Class;

/// Where a cause was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Presence {
    /// In some run of B and in no run of A.
    Appeared,
    /// In some run of A and in no run of B.
    Disappeared,
    /// In both arms.
    Both,
}

impl Presence {
    /// How the table says it.
    pub fn label(self) -> &'static str {
        match self {
            Presence::Appeared => "appeared",
            Presence::Disappeared => "disappeared",
            Presence::Both => "in both",
        }
    }
}

/// One cause compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseRow {
    /// The class (`tick`, `device_irq`, `task`, ...; see `explain` of `measure-jitter`).
    pub(crate) class: Class,
    /// What in the class (`tick_nohz_handler`, `42 virtio3-tx`, `cron`).
    pub source: String,
    /// Where it was seen.
    pub presence: Presence,
    /// Its gaps in all of A's runs, on the CPUs compared.
    pub a_gaps: u64,
    /// Its gaps in all of B's runs.
    pub b_gaps: u64,
    /// A's rate against B's, per minute of busy-loop time (each arm the geometric mean of
    /// its runs' rates, each `(gaps + 0.5) / minutes`); Holm over every cause compared; `worse`
    /// is more of this cause in B.
    #[serde(flatten)]
    pub compared: Compared,
}

/// The causes of both arms compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausesDiff {
    /// The unit of the rates: `per-minute` (of busy-loop time on the CPUs compared).
    #[serde(deserialize_with = "super::unit")]
    pub unit: super::Unit,
    /// The CPUs whose causes were compared.
    pub cpus: Vec<u32>,
    /// Appeared first, then disappeared, then the causes of both arms; in each, the highest
    /// rate first.
    pub rows: Vec<CauseRow>,
}

/// The rate unit of the rows.
pub(crate) const UNIT: &str = "per-minute";

/// A cause: its class and source.
type Key = (Class, String);

/// Each run's causes on `cpus`.
fn counts(runs: &[Run], cpus: &[u32]) -> Vec<CausesOn> {
    runs.iter().map(|run| run.causes_on(cpus)).collect()
}

/// The causes of `a` against `b` on `cpus`, corrected over themselves; `None` when a run of
/// either arm was not explained (no `explain`, or not traced): then nothing is compared, since
/// a cause missing from an unexplained run is not a cause gone.
pub fn diff(a: &[Run], b: &[Run], cpus: &[u32], margin: f64) -> Option<CausesDiff> {
    if a.iter().chain(b).any(|r| r.causes.is_none()) {
        return None;
    }
    let (ca, cb) = (counts(a, cpus), counts(b, cpus));
    let seen = |c: &[CausesOn]| -> BTreeSet<Key> {
        c.iter().flat_map(|r| r.gaps.keys().cloned()).collect()
    };
    let (in_a, in_b) = (seen(&ca), seen(&cb));
    let rates = |c: &[CausesOn], key: &Key| {
        let values: Vec<f64> = c
            .iter()
            .map(|r| (r.gaps.get(key).copied().unwrap_or(0) as f64 + 0.5) / r.minutes)
            .collect();
        let gaps = c.iter().filter_map(|r| r.gaps.get(key)).sum::<u64>();
        (values, gaps)
    };
    if ca.iter().chain(&cb).any(|r| r.minutes <= 0.0) {
        return None;
    }
    let mut items = Vec::new();
    for key in in_a.union(&in_b) {
        let ((va, a_gaps), (vb, b_gaps)) = (rates(&ca, key), rates(&cb, key));
        let presence = match (in_a.contains(key), in_b.contains(key)) {
            (false, _) => Presence::Appeared,
            (_, false) => Presence::Disappeared,
            _ => Presence::Both,
        };
        items.push(((key, presence, a_gaps, b_gaps), Endpoint::RateAbove, va, vb));
    }
    let test = |a, b| format!("Welch's t on the logarithms of the runs' rates ({a} and {b} runs)");
    let mut rows: Vec<CauseRow> = verdict::compare_each(items, test, margin)
        .into_iter()
        .map(
            |(((class, source), presence, a_gaps, b_gaps), compared)| CauseRow {
                class: *class,
                source: source.clone(),
                presence,
                a_gaps,
                b_gaps,
                compared,
            },
        )
        .collect();
    rows.sort_by(|x, y| {
        x.presence
            .cmp(&y.presence)
            .then(
                y.compared
                    .a
                    .value
                    .max(y.compared.b.value)
                    .total_cmp(&x.compared.a.value.max(x.compared.b.value)),
            )
            .then_with(|| (x.class.key(), &x.source).cmp(&(y.class.key(), &y.source)))
    });
    Some(CausesDiff {
        unit: UNIT,
        cpus: cpus.to_vec(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::run::{ExposureUnit, Format, Series};
    use crate::compare::verdict::Verdict;
    use crate::measure::trace::cause_count::CauseCount;

    /// A deterministic stream of uniform numbers in [0, 1) (a linear congruential generator).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        /// A Poisson count of mean `mean` (Knuth's method; the means here are small per
        /// second, so it is drawn second by second).
        fn poisson(&mut self, mean: f64) -> u64 {
            let limit = (-mean).exp();
            let (mut k, mut p) = (0, 1.0);
            loop {
                p *= self.next();
                if p <= limit {
                    return k;
                }
                k += 1;
            }
        }
    }

    /// A run of one CPU, 10 s long, whose causes happen at `rates` per second (drawn).
    fn run(rng: &mut Lcg, rates: &[(Class, &str, f64)]) -> Run {
        let mut run = Run::empty("r", Format::LowlatJitter);
        let series = Series::from_stream([(0.0, 2000.0)], 10.0, ExposureUnit::Seconds).unwrap();
        run.cpus.insert(3, series);
        let causes = rates
            .iter()
            .map(|&(class, source, per_second)| CauseCount {
                cpu: 3,
                class,
                source: source.into(),
                irq: None,
                count: (0..10).map(|_| rng.poisson(per_second)).sum(),
            })
            .filter(|c| c.count > 0)
            .collect();
        run.causes = Some(causes);
        run
    }

    const USUAL: [(Class, &str, f64); 3] = [
        (Class::Tick, "tick_nohz_handler", 250.0),
        (Class::NoKernelEvent, "no kernel event", 40.0),
        (Class::Kworker, "vmstat_update", 1.0),
    ];

    #[test]
    fn the_same_causes_in_both_arms_neither_appear_nor_change() {
        let mut rng = Lcg(7);
        let a: Vec<Run> = (0..5).map(|_| run(&mut rng, &USUAL)).collect();
        let b: Vec<Run> = (0..5).map(|_| run(&mut rng, &USUAL)).collect();
        let d = diff(&a, &b, &[3], 0.03).unwrap();
        assert_eq!(d.rows.len(), 3);
        for row in &d.rows {
            assert_eq!(row.presence, Presence::Both, "{row:?}");
            assert!(!row.compared.verdict.differs(), "{row:?}");
        }
        // The tick's rate is its planted 250 per second, per minute.
        let tick = d.rows.iter().find(|r| r.class == Class::Tick).unwrap();
        assert!(
            (tick.compared.a.value / 15_000.0 - 1.0).abs() < 0.02,
            "{tick:?}"
        );
    }

    #[test]
    fn a_planted_cause_appears_at_its_rate_and_is_worse() {
        let mut rng = Lcg(11);
        let a: Vec<Run> = (0..5).map(|_| run(&mut rng, &USUAL)).collect();
        let mut planted = USUAL.to_vec();
        planted.push((Class::Task, "app-poller (woken by hrtimer_wakeup)", 100.0));
        let b: Vec<Run> = (0..5).map(|_| run(&mut rng, &planted)).collect();
        let d = diff(&a, &b, &[3], 0.03).unwrap();
        let first = &d.rows[0];
        assert_eq!(first.presence, Presence::Appeared);
        assert_eq!(first.source, "app-poller (woken by hrtimer_wakeup)");
        assert_eq!(first.a_gaps, 0);
        // 100 per second planted: 6,000 per minute, within a few % over 50 s of runs.
        assert!(
            (first.compared.b.value / 6_000.0 - 1.0).abs() < 0.05,
            "{first:?}"
        );
        assert_eq!(first.compared.verdict, Verdict::Worse, "{first:?}");
        assert!(first.compared.p_holm.unwrap() < 0.05);
        // The others stayed.
        for row in &d.rows[1..] {
            assert_eq!(row.presence, Presence::Both, "{row:?}");
            assert!(!row.compared.verdict.differs(), "{row:?}");
        }
        // Taken away again, it disappeared, and B is better for it.
        let back = diff(&b, &a, &[3], 0.03).unwrap();
        assert_eq!(back.rows[0].presence, Presence::Disappeared);
        assert_eq!(back.rows[0].compared.verdict, Verdict::Better);
    }

    #[test]
    fn one_run_per_arm_names_what_appeared_but_calls_no_change() {
        let mut rng = Lcg(3);
        let a = [run(&mut rng, &USUAL)];
        let mut planted = USUAL.to_vec();
        planted.push((Class::DeviceIrq, "42 virtio3-tx", 50.0));
        let b = [run(&mut rng, &planted)];
        let d = diff(&a, &b, &[3], 0.03).unwrap();
        assert_eq!(d.rows[0].presence, Presence::Appeared);
        assert!(matches!(
            d.rows[0].compared.verdict,
            Verdict::Inconclusive { .. }
        ));
        assert!(d.rows.iter().all(|r| r.compared.p.is_none()));
    }

    #[test]
    fn a_run_not_explained_compares_no_causes() {
        let mut rng = Lcg(5);
        let a = [run(&mut rng, &USUAL), run(&mut rng, &USUAL)];
        let mut b = [run(&mut rng, &USUAL), run(&mut rng, &USUAL)];
        b[1].causes = None;
        assert!(diff(&a, &b, &[3], 0.03).is_none());
    }
}
