//! The A/A calibration of a machine (`lowlat compare --calibrate RUNS…`): untouched runs split
//! into two arms in every way (consecutive, interleaved, and all splits up to a cap), each
//! split judged as `compare` judges two arms. The share of splits with a verdict is how often
//! the method calls a difference where there is none on this machine; the spread of the runs
//! says how large a change 2, 4 and 8 runs per arm can detect.

use serde::Serialize;

use super::endpoint::{self, Endpoint};
use super::environment::{self, Side};
use super::error::LoadError;
use super::estimate;
use super::run::{Family, Run};
use super::splits::{self, Split};
use super::stats::holm::holm;
use super::stats::mean_var;
use super::verdict::{self, ALPHA, Judged, Verdict};
use super::{Options, by_family};

/// Runs a calibration needs at least: two per arm.
pub const MIN_RUNS: usize = 4;

/// How the runs were split into arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// A: runs i..i+k, B: the next k (drift between them counts).
    Consecutive,
    /// 2k consecutive runs, A the 1st, 3rd, ..., B the 2nd, 4th, ... (drift cancels).
    Interleaved,
    /// Every way of taking k and k of the runs (or [`splits::MAX_SPLITS`] of them drawn with the seed).
    All,
}

/// How often splits of one design and size were called different.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    /// Runs per arm.
    pub runs_per_arm: usize,
    /// How the arms were made.
    pub design: Design,
    /// Splits judged.
    pub splits: usize,
    /// Splits with at least one primary endpoint better or worse.
    pub with_verdict: usize,
    /// Splits with one better or worse that the environment of the arms does not explain
    /// (what would set compare's exit code).
    pub unexplained: usize,
    /// with_verdict / splits.
    pub share: f64,
}

/// The spread of one endpoint over the runs, and what it lets a comparison detect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    /// The figure.
    pub endpoint: Endpoint,
    /// The kernel of a throughput endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Standard deviation of the runs' logarithms (0.1: runs spread by about ±10 %).
    pub sd_log: f64,
    /// The smallest change detected with 80 % power at the corrected level, %, with 2, 4 and
    /// 8 runs per arm.
    pub detectable_percent: Vec<(usize, f64)>,
}

/// The calibration of one measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// What was measured.
    pub family: Family,
    /// Runs given.
    pub runs: usize,
    /// The CPUs every run measured.
    pub cpus: Vec<u32>,
    /// Per primary endpoint.
    pub endpoints: Vec<Spread>,
    /// Per design and size.
    pub shares: Vec<Share>,
}

/// Calibrates on `runs`, every measurement they hold (at least [`MIN_RUNS`] of each).
pub fn calibrate(
    runs: &[Run],
    options: &Options,
    seed: u64,
) -> Result<Vec<Calibration>, LoadError> {
    let families = by_family(runs);
    if families.is_empty() {
        return Err(LoadError::file("--calibrate", "no run given"));
    }
    families
        .iter()
        .map(|(&family, runs)| one(family, runs, options, seed))
        .collect()
}

/// One run's values: per endpoint its value and the standard error of its log from inside.
type RunValues = Vec<(f64, Option<f64>)>;

fn one(
    family: Family,
    runs: &[Run],
    options: &Options,
    seed: u64,
) -> Result<Calibration, LoadError> {
    if runs.len() < MIN_RUNS {
        return Err(LoadError::file(
            &runs[0].source,
            format!(
                "--calibrate needs at least {MIN_RUNS} untouched runs of {} (2 per arm), got {}; \
                 record more (check --repeat {MIN_RUNS}, or measure … --repeat {MIN_RUNS} --out DIR)",
                family.name(),
                runs.len()
            ),
        ));
    }
    let cpus: Vec<u32> = runs[0]
        .cpus
        .keys()
        .chain(runs[0].summaries.keys())
        .filter(|c| {
            runs.iter()
                .all(|r| r.cpus.contains_key(c) || r.summaries.contains_key(c))
        })
        .copied()
        .collect();
    if cpus.is_empty() && family != Family::Throughput {
        return Err(nothing_in_common(family, runs));
    }
    let endpoints: Vec<(Endpoint, Option<String>)> = match family {
        Family::Throughput => runs[0]
            .rates
            .keys()
            .filter(|k| runs.iter().all(|r| r.rates.contains_key(*k)))
            .map(|k| (Endpoint::BestRate, Some(k.clone())))
            .collect(),
        _ if runs.iter().any(|r| !r.summaries.is_empty()) => {
            Endpoint::SUMMARIES.iter().map(|&e| (e, None)).collect()
        }
        _ => Endpoint::LATENCIES.iter().map(|&e| (e, None)).collect(),
    };
    let value =
        |run: &Run, (e, kernel): &(Endpoint, Option<String>)| -> Option<(f64, Option<f64>)> {
            let v = match kernel {
                Some(k) => run.rates.get(k).copied().filter(|v| *v > 0.0)?,
                None => endpoint::of_run(*e, run, &cpus, options.above_ns)?,
            };
            Some((v, endpoint::within_run_se(*e, run, &cpus, options.above_ns)))
        };
    // Endpoints every run gives.
    let endpoints: Vec<_> = endpoints
        .into_iter()
        .filter(|e| runs.iter().all(|r| value(r, e).is_some()))
        .collect();
    if endpoints.is_empty() && family == Family::Throughput {
        return Err(nothing_in_common(family, runs));
    }
    let table: Vec<RunValues> = runs
        .iter()
        .map(|r| {
            endpoints
                .iter()
                .map(|e| value(r, e).unwrap_or((1.0, None)))
                .collect()
        })
        .collect();
    let alpha = ALPHA / endpoints.len().max(1) as f64;
    let spreads = endpoints
        .iter()
        .enumerate()
        .map(|(i, (e, kernel))| {
            let logs: Vec<f64> = table.iter().map(|r| r[i].0.ln()).collect();
            let sd_log = mean_var(&logs).1.sqrt();
            Spread {
                endpoint: *e,
                kernel: kernel.clone(),
                sd_log,
                detectable_percent: [2, 4, 8]
                    .iter()
                    .filter_map(|&n| Some((n, (estimate::mde(sd_log, n, alpha)? - 1.0) * 100.0)))
                    .collect(),
            }
        })
        .collect();
    let kinds: Vec<Endpoint> = endpoints.iter().map(|e| e.0).collect();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut shares = Vec::new();
    for k in 1..=runs.len() / 2 {
        for design in [Design::Consecutive, Design::Interleaved, Design::All] {
            let splits = splits(runs.len(), k, design, &mut rng);
            let (mut with_verdict, mut unexplained) = (0, 0);
            for (a, b) in &splits {
                let called = called(&kinds, &table, a, b, options.margin);
                if called.is_empty() {
                    continue;
                }
                with_verdict += 1;
                let arm = |idx: &[usize]| idx.iter().map(|&i| &runs[i]).collect::<Vec<_>>();
                let environment = environment::rows(&arm(a), &arm(b), &cpus, |_| Vec::new());
                let explained = |worse_in_b: bool| {
                    let side = if worse_in_b { Side::B } else { Side::A };
                    environment.iter().any(|row| row.worse == Some(side))
                };
                if called.iter().any(|&worse_in_b| !explained(worse_in_b)) {
                    unexplained += 1;
                }
            }
            shares.push(Share {
                runs_per_arm: k,
                design,
                splits: splits.len(),
                with_verdict,
                unexplained,
                share: with_verdict as f64 / splits.len().max(1) as f64,
            });
        }
    }
    Ok(Calibration {
        family,
        runs: runs.len(),
        cpus,
        endpoints: spreads,
        shares,
    })
}

/// Runs without a CPU (latencies) or kernel (throughput) that every one measured: each set
/// named with the runs that measured it.
fn nothing_in_common(family: Family, runs: &[Run]) -> LoadError {
    let what = |run: &Run| -> Vec<String> {
        match family {
            Family::Throughput => run.rates.keys().cloned().collect(),
            _ => run
                .cpus
                .keys()
                .chain(run.summaries.keys())
                .map(u32::to_string)
                .collect(),
        }
    };
    let mut sets: Vec<(Vec<String>, Vec<&str>)> = Vec::new();
    for run in runs {
        let measured = what(run);
        match sets.iter_mut().find(|(set, _)| *set == measured) {
            Some((_, sources)) => sources.push(&run.source),
            None => sets.push((measured, vec![&run.source])),
        }
    }
    let (noun, nouns) = match family {
        Family::Throughput => ("kernel", "kernels"),
        _ => ("CPU", "CPUs"),
    };
    let sets: Vec<String> = sets
        .iter()
        .map(|(set, sources)| format!("{nouns} {} in {}", set.join(","), sources.join(", ")))
        .collect();
    LoadError::file(
        "--calibrate",
        format!(
            "the runs of {} measured no {noun} in common, so no figure of theirs can be compared: \
             {}; calibrate on runs that measured the same {nouns}",
            family.name(),
            sets.join("; ")
        ),
    )
}

/// The primary endpoints of the split `a`/`b` (indices into `table`) called better or worse:
/// for each, whether B is the worse (the environment that could explain it is then B's).
fn called(
    kinds: &[Endpoint],
    table: &[RunValues],
    a: &[usize],
    b: &[usize],
    margin: f64,
) -> Vec<bool> {
    let judged: Vec<(Judged, f64, bool)> = kinds
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let values =
                |idx: &[usize]| -> Vec<f64> { idx.iter().map(|&r| table[r][i].0).collect() };
            let se = |idx: &[usize]| -> Option<f64> {
                let se: Vec<f64> = idx.iter().map(|&r| table[r][i].1).collect::<Option<_>>()?;
                let n = se.len() as f64;
                Some((se.iter().map(|s| s * s).sum::<f64>() / n / n).sqrt())
            };
            let (va, vb) = (values(a), values(b));
            let ratio = estimate::arm(&vb).value / estimate::arm(&va).value;
            (
                verdict::judge(e, &va, &vb, se(a).zip(se(b))),
                ratio,
                e.higher_is_better(),
            )
        })
        .collect();
    let p: Vec<f64> = judged
        .iter()
        .filter_map(|(j, ..)| match j {
            Judged::Tested(e) => Some(e.p),
            Judged::OneRun { .. } => None,
        })
        .collect();
    let mut adjusted = holm(&p).into_iter();
    judged
        .iter()
        .filter_map(|(j, ratio, higher)| {
            let p_holm = matches!(j, Judged::Tested(_))
                .then(|| adjusted.next())
                .flatten();
            match verdict::decide(j, p_holm, *higher, margin, *ratio) {
                Verdict::Worse => Some(true),
                Verdict::Better => Some(false),
                _ => None,
            }
        })
        .collect()
}

/// The splits of `n` runs into arms of `k` by `design`, as index lists.
fn splits(n: usize, k: usize, design: Design, rng: &mut fastrand::Rng) -> Vec<Split> {
    match design {
        Design::Consecutive => (0..=n - 2 * k)
            .map(|i| ((i..i + k).collect(), (i + k..i + 2 * k).collect()))
            .collect(),
        Design::Interleaved => (0..=n - 2 * k)
            .map(|i| {
                let window: Vec<usize> = (i..i + 2 * k).collect();
                (
                    window.iter().step_by(2).copied().collect(),
                    window.iter().skip(1).step_by(2).copied().collect(),
                )
            })
            .collect(),
        Design::All => splits::all(n, k, rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_counted_as_designed() {
        let mut rng = fastrand::Rng::with_seed(1);
        assert_eq!(splits(8, 4, Design::Consecutive, &mut rng).len(), 1);
        let inter = splits(8, 2, Design::Interleaved, &mut rng);
        assert_eq!(inter[0], (vec![0, 2], vec![1, 3]));
        // C(6,4) subsets × C(4,2)/2 halves = 15 × 3.
        assert_eq!(splits(6, 2, Design::All, &mut rng).len(), 45);
        // C(10,5)/2 = 126.
        let all = splits(10, 5, Design::All, &mut rng);
        assert_eq!(all.len(), 126);
        assert!(
            all.iter()
                .all(|(a, b)| a.len() == 5 && b.len() == 5 && a[0] < b[0])
        );
    }
}
