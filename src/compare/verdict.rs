//! Verdicts: what a change of one figure amounts to. With two runs or more per arm the runs'
//! spread decides (Welch on the logs, Holm over the primary endpoints); with one run in an
//! arm the variation between runs is unknown, so a change is called only when it is beyond
//! both the variation inside the runs and the endpoint's stated run-to-run bound, and is
//! otherwise inconclusive, naming the runs needed.

use serde::{Deserialize, Serialize};

use super::endpoint::Endpoint;
use super::estimate::{self, ArmEstimate, Effect};
use super::stats::holm::holm;

/// Significance level of every verdict, after Holm's correction.
pub const ALPHA: f64 = 0.05;

/// The verdict of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Verdict {
    /// The candidate is lower (latency, rate of spikes) or higher (throughput), beyond chance.
    Better,
    /// The candidate is higher (latency) or lower (throughput), beyond chance.
    Worse,
    /// No difference shown, and none ruled out either.
    NoDifference,
    /// The candidate is within ±margin of the baseline (its 90 % interval is).
    Equivalent {
        /// The margin, %.
        margin_percent: f64,
    },
    /// A rate of latencies above `--above` where nearly every latency of every run is above
    /// it: the rate cannot move, so it carries no information either way.
    Saturated,
    /// Too few runs to tell a change from the variation between runs.
    Inconclusive {
        /// Runs per arm that would detect a change of the size seen, with 80 % power, at the
        /// stated run-to-run bound (`null`: more than 64).
        runs_needed: Option<usize>,
    },
}

impl Verdict {
    /// The verdict as the tables show it.
    pub fn label(self) -> String {
        match self {
            Verdict::Better => "better".to_string(),
            Verdict::Worse => "worse".to_string(),
            Verdict::NoDifference => "no difference".to_string(),
            Verdict::Equivalent { margin_percent } => format!("equivalent ±{margin_percent}%"),
            Verdict::Saturated => "no information (saturated)".to_string(),
            Verdict::Inconclusive {
                runs_needed: Some(n),
            } => format!("inconclusive (needs {n} runs per arm)"),
            Verdict::Inconclusive { runs_needed: None } => {
                "inconclusive (needs more than 64 runs per arm)".to_string()
            }
        }
    }

    /// Its key in JSON (`better`, `no-difference`, `inconclusive`, ...), which the HTML
    /// report's rows carry as their class.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifference => "no-difference",
            Verdict::Equivalent { .. } => "equivalent",
            Verdict::Saturated => "saturated",
            Verdict::Inconclusive { .. } => "inconclusive",
        }
    }

    /// Whether it says the candidate differs.
    pub fn differs(self) -> bool {
        matches!(self, Verdict::Better | Verdict::Worse)
    }
}

/// How a ratio was judged before the correction for several tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judged {
    /// Runs on both sides: a p-value to correct, and the effect behind it.
    Tested(Effect),
    /// One run in an arm, decided on the bound: `Some(true)` beyond it (a change), `Some(false)`
    /// within it; the runs a test would need.
    OneRun {
        /// Whether the change is beyond the within-run interval and the run-to-run bound.
        beyond: bool,
        /// Runs per arm that would detect a change of this size.
        runs_needed: Option<usize>,
    },
}

impl Judged {
    /// The judgement of a figure read back from a compare document, which keeps only its
    /// verdict: not beyond anything, no runs named.
    pub(crate) fn read_back() -> Judged {
        Judged::OneRun {
            beyond: false,
            runs_needed: None,
        }
    }
}

/// Judges one figure of runs `a` and `b` (positive values, one per run), with `se` the
/// standard errors of the two arms' log values from inside their runs when known.
pub fn judge(endpoint: Endpoint, a: &[f64], b: &[f64], se: Option<(f64, f64)>) -> Judged {
    if let Some(effect) = estimate::effect(a, b) {
        return Judged::Tested(effect);
    }
    let ratio = estimate::arm(b).value / estimate::arm(a).value;
    let bound = endpoint.run_to_run_bound().ln();
    // The bound read as the 95 % range of the difference of two runs' logs: σ √2 · 1.96.
    let sd = bound / (1.96 * std::f64::consts::SQRT_2);
    let runs_needed = estimate::runs_needed(sd, ratio.max(1.0 / ratio), ALPHA);
    let beyond =
        se.is_some_and(|(sa, sb)| ratio.ln().abs() > 1.96 * (sa * sa + sb * sb).sqrt() + bound);
    Judged::OneRun {
        beyond,
        runs_needed,
    }
}

/// The verdict of a judged figure whose p-value, when tested, became `p_holm`.
pub fn decide(
    judged: &Judged,
    p_holm: Option<f64>,
    higher_is_better: bool,
    margin: f64,
    ratio: f64,
) -> Verdict {
    let gain = if higher_is_better {
        ratio > 1.0
    } else {
        ratio < 1.0
    };
    let changed = if gain {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    match judged {
        Judged::OneRun { beyond: true, .. } => changed,
        Judged::OneRun {
            beyond: false,
            runs_needed,
        } => Verdict::Inconclusive {
            runs_needed: *runs_needed,
        },
        Judged::Tested(effect) => {
            let (lo, hi) = effect.interval_90;
            // A change is called only when it is also beyond the margin: its whole 95 %
            // interval lies outside ±margin (criterion's noise threshold), so that a drift
            // of a few % between untouched runs is not a verdict.
            let (low, high) = effect.interval;
            let beyond_margin = low > 1.0 + margin || high < 1.0 / (1.0 + margin);
            match p_holm {
                Some(p) if p < ALPHA && beyond_margin => changed,
                _ if lo > 1.0 / (1.0 + margin) && hi < 1.0 + margin => Verdict::Equivalent {
                    margin_percent: margin * 100.0,
                },
                _ => Verdict::NoDifference,
            }
        }
    }
}

/// One figure of both arms compared, as a detail row and a cause are: each arm's estimate,
/// the change, the test and the verdict (flattened into the row's JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    /// A's value (geometric mean of its runs) with its 95 % interval, in the row's unit.
    pub a: ArmEstimate,
    /// B's value.
    pub b: ArmEstimate,
    /// B / A.
    pub ratio: f64,
    /// The 95 % interval of the ratio (`null` with one run in an arm).
    pub ratio_interval: Option<(f64, f64)>,
    /// The test behind the verdict.
    pub test: String,
    /// Two-sided p-value before correction (`null`: not tested).
    pub p: Option<f64>,
    /// After Holm's correction over every row compared with it.
    pub p_holm: Option<f64>,
    /// The verdict (a row's never sets the exit code).
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Compares every `(key, endpoint, A's values, B's values)` of `items` (one value per run;
/// `endpoint` gives the run-to-run bound used with one run in an arm): Welch on the logs,
/// Holm over the tested ones, each decided beyond `margin`. `test` words the test for the
/// numbers of runs in A and B.
pub fn compare_each<K>(
    items: Vec<(K, Endpoint, Vec<f64>, Vec<f64>)>,
    test: impl Fn(usize, usize) -> String,
    margin: f64,
) -> Vec<(K, Compared)> {
    let judged: Vec<_> = items
        .into_iter()
        .map(|(key, endpoint, va, vb)| {
            let j = judge(endpoint, &va, &vb, None);
            (key, va, vb, j)
        })
        .collect();
    let p: Vec<f64> = judged
        .iter()
        .filter_map(|(.., j)| match j {
            Judged::Tested(e) => Some(e.p),
            Judged::OneRun { .. } => None,
        })
        .collect();
    let mut adjusted = holm(&p).into_iter();
    judged
        .into_iter()
        .map(|(key, va, vb, j)| {
            let (a, b) = (estimate::arm(&va), estimate::arm(&vb));
            let ratio = b.value / a.value;
            let (p, p_holm, ratio_interval, test) = match &j {
                Judged::Tested(e) => (
                    Some(e.p),
                    adjusted.next(),
                    Some(e.interval),
                    test(va.len(), vb.len()),
                ),
                Judged::OneRun { .. } => (
                    None,
                    None,
                    None,
                    "none: one run in an arm (2 per arm needed)".to_string(),
                ),
            };
            let compared = Compared {
                a,
                b,
                ratio,
                ratio_interval,
                test,
                p,
                p_holm,
                verdict: decide(&j, p_holm, false, margin, ratio),
            };
            (key, compared)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_each_is_inconclusive_unless_far_beyond_the_bound() {
        // Three times the median is within the ×10 bound: inconclusive, naming the runs a
        // test would need.
        let judged = judge(Endpoint::Median, &[1000.0], &[3000.0], Some((0.01, 0.01)));
        assert!(matches!(judged, Judged::OneRun { beyond: false, runs_needed: Some(n) } if n > 2));
        let v = decide(&judged, None, false, 0.03, 3.0);
        assert!(matches!(v, Verdict::Inconclusive { .. }), "{v:?}");
        // Thirty times, with steady slices: beyond the bound and the slices' interval.
        let judged = judge(Endpoint::Median, &[1000.0], &[30000.0], Some((0.01, 0.01)));
        assert_eq!(decide(&judged, None, false, 0.03, 30.0), Verdict::Worse);
        // Without slices nothing is known of the variation inside the runs.
        let judged = judge(Endpoint::Median, &[1000.0], &[30000.0], None);
        assert!(matches!(
            decide(&judged, None, false, 0.03, 30.0),
            Verdict::Inconclusive { .. }
        ));
    }

    #[test]
    fn the_key_is_the_json_tag() {
        for v in [
            Verdict::Better,
            Verdict::Worse,
            Verdict::NoDifference,
            Verdict::Equivalent {
                margin_percent: 3.0,
            },
            Verdict::Saturated,
            Verdict::Inconclusive { runs_needed: None },
        ] {
            assert_eq!(serde_json::to_value(v).unwrap()["verdict"], v.key());
        }
    }

    #[test]
    fn tested_figures_are_decided_on_the_corrected_p() {
        let a = [100.0, 101.0, 99.0, 100.5];
        let b = [150.0, 151.0, 149.0, 150.5];
        let judged = judge(Endpoint::WorstP99, &a, &b, None);
        let Judged::Tested(effect) = judged else {
            panic!()
        };
        assert_eq!(
            decide(&judged, Some(effect.p), false, 0.03, effect.ratio),
            Verdict::Worse
        );
        assert_eq!(
            decide(&judged, Some(effect.p), true, 0.03, effect.ratio),
            Verdict::Better
        );
        let same = judge(Endpoint::WorstP99, &a, &a, None);
        assert!(matches!(
            decide(&same, Some(1.0), false, 0.03, 1.0),
            Verdict::Equivalent { .. }
        ));
    }
}
