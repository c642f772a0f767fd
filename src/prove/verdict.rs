//! The verdict of a prove run: compare of the before arm against the after arm, like with like.
//! Without loads every run of one arm is compared with every run of the other; with loads
//! (`--load`) the loaded rounds before are compared with the loaded rounds after (the verdict
//! that matters, `compare.json`) and the idle rounds with the idle ones (`compare-idle.json`),
//! never one against the other. Which load a round ran is read from its run's document
//! (`result.loads`, as check writes it), and each load's intensity is set before beside after
//! so that a reader sees the two arms were loaded alike.

use std::path::Path;

use serde::Deserialize;

use super::state::{
    AFTER, BEFORE, COMPARE_FILE, IDLE_COMPARE_FILE, Intensity, RECEIVED, State, Step, VerdictLine,
};
use super::{Prove, ProveError};
use crate::compare::run::{Format, Run};
use crate::compare::{self, Comparison};
use crate::measure::load::RoundLoad;
use crate::report::compare as compare_report;
use crate::report::runs;
use crate::sysroot::{Durability, Perms, write_file_atomically};

/// The rounds compared (`loaded (ipi, high)`, `idle`) as the verdict lines name the idle ones.
const IDLE: &str = "idle";

/// One comparison of the arms: which of their rounds, and what compare made of them.
pub(crate) struct Judged {
    /// With loads, the rounds compared (`loaded (ipi, high)`, `idle`); `None` without loads.
    pub rounds: Option<String>,
    /// compare's comparisons, one per measurement both arms hold.
    pub comparisons: Vec<Comparison>,
}

/// The comparisons as prove prints them: each as `lowlat compare` prints it, with loads under
/// a line naming its rounds (the loaded ones first).
pub(crate) fn text(judged: &[Judged]) -> String {
    let mut out = String::new();
    for set in judged {
        if let Some(rounds) = &set.rounds {
            out.push_str(&format!("The {rounds} rounds, before → after:\n"));
        }
        out.push_str(&compare_report::text(&set.comparisons));
    }
    out
}

/// Whether a primary endpoint of any comparison is worse (not explained by a confounder).
pub(crate) fn worse(judged: &[Judged]) -> bool {
    (judged.iter().flat_map(|set| &set.comparisons)).any(|c| c.fails(false))
}

/// An arm's runs, each with the load its round ran under (`None`: no load recorded, an idle
/// round of a run without loads, or a net run).
struct ArmRuns(Vec<(Run, Option<RoundLoad>)>);

/// The part of a run's document that says its round's load.
#[derive(Deserialize)]
struct Loaded {
    result: LoadsOf,
}

/// `result.loads` of a measure-jitter or measure-timer document.
#[derive(Deserialize)]
struct LoadsOf {
    #[serde(default)]
    loads: Option<RoundLoad>,
}

impl ArmRuns {
    /// The runs of the bundle `dir`, each with its round's load.
    fn read(dir: &Path) -> Result<ArmRuns, ProveError> {
        let failed = |e: &dyn std::fmt::Display| ProveError::Verdict(format!("compare: {e}"));
        let loaded = runs::load(&[dir.to_path_buf()]).map_err(|e| failed(&e))?;
        let mut runs = Vec::new();
        for run in loaded.runs {
            let load = match run.format {
                Format::LowlatJitter | Format::LowlatTimer => {
                    let text = std::fs::read_to_string(&run.source)
                        .map_err(|e| failed(&format!("{}: {e}", run.source)))?;
                    let read: Loaded = serde_json::from_str(&text)
                        .map_err(|e| failed(&format!("{}: {e}", run.source)))?;
                    read.result.loads
                }
                _ => None,
            };
            runs.push((run, load));
        }
        Ok(ArmRuns(runs))
    }

    /// The runs of the loaded rounds (`true`) or of the others.
    fn of(&self, loaded: bool) -> Vec<Run> {
        (self.0.iter())
            .filter(|(_, load)| load.as_ref().is_some_and(|l| l.loaded) == loaded)
            .map(|(run, _)| run.clone())
            .collect()
    }

    /// The loads of the loaded rounds, one per run (a round's jitter and timer runs record
    /// the same load).
    fn loads(&self) -> impl Iterator<Item = &RoundLoad> {
        (self.0.iter())
            .filter_map(|(_, load)| load.as_ref())
            .filter(|load| load.loaded)
    }
}

/// compare of DIR/before against DIR/after, like with like, written to DIR/compare.json (and,
/// with loads, DIR/compare-idle.json); the verdict lines and the intensities kept in the state.
/// With loads the loaded rounds' comparison comes first.
pub(crate) fn verdict(prove: &Prove<'_>, state: &mut State) -> Result<Vec<Judged>, ProveError> {
    let failed = |e: &dyn std::fmt::Display| ProveError::Verdict(format!("compare: {e}"));
    let before = ArmRuns::read(&prove.dir.join(BEFORE))?;
    let after = ArmRuns::read(&prove.dir.join(AFTER))?;
    let sets = match &state.rounds.load {
        None => vec![(None, COMPARE_FILE, false)],
        Some(asked) => vec![
            (
                Some(format!(
                    "loaded ({}, {})",
                    asked.names(),
                    asked.level.name()
                )),
                COMPARE_FILE,
                true,
            ),
            (Some(IDLE.to_string()), IDLE_COMPARE_FILE, false),
        ],
    };
    let mut judged = Vec::new();
    state.verdict.clear();
    for (rounds, file, loaded) in sets {
        let (a, b) = (before.of(loaded), after.of(loaded));
        let comparisons = compare::compare_each(&a, &b, &prove.options).map_err(|e| {
            failed(&format!(
                "{}{e}",
                (rounds.as_ref()).map_or(String::new(), |r| format!("the {r} rounds: "))
            ))
        })?;
        let host = compare::hosts(a.iter().chain(&b));
        let json = compare_report::document(&comparisons, host)
            .to_json()
            .map_err(|e| failed(&e))?;
        write_file_atomically(
            &prove.dir.join(file),
            json.as_bytes(),
            Perms::mode(0o644),
            Durability::Synced,
        )
        .map_err(|e| failed(&e))?;
        state.verdict.extend((comparisons.iter()).flat_map(|c| {
            c.primary.iter().map(|p| VerdictLine {
                family: c.family.name().to_string(),
                endpoint: compare_report::endpoint_name(p),
                verdict: compare_report::verdict(p),
                rounds: rounds.clone(),
            })
        }));
        judged.push(Judged {
            rounds,
            comparisons,
        });
    }
    state.intensity = intensities(&before, &after);
    state.step = Step::Compared;
    prove.save(state)?;
    Ok(judged)
}

/// Each load kind's mean intensity over the loaded rounds of each arm, in the order the kinds
/// ran, then the IPIs the measured CPUs received; empty without loaded rounds.
fn intensities(before: &ArmRuns, after: &ArmRuns) -> Vec<Intensity> {
    let mut kinds: Vec<(String, String)> = Vec::new();
    for load in before.loads().chain(after.loads()) {
        for kind in &load.kinds {
            let key = (kind.kind.name().to_string(), kind.unit.clone());
            if !kinds.contains(&key) {
                kinds.push(key);
            }
        }
    }
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let rate = |arm: &ArmRuns, name: &str| {
        mean(
            arm.loads()
                .flat_map(|l| l.kinds.iter())
                .filter(|k| k.kind.name() == name)
                .map(|k| k.rate)
                .collect(),
        )
    };
    let received =
        |arm: &ArmRuns| mean(arm.loads().filter_map(|l| l.ipis_received_per_s).collect());
    let mut out: Vec<Intensity> = (kinds.into_iter())
        .map(|(kind, unit)| Intensity {
            before: rate(before, &kind),
            after: rate(after, &kind),
            kind,
            unit,
        })
        .collect();
    if !out.is_empty() {
        out.push(Intensity {
            kind: RECEIVED.to_string(),
            unit: "IPIs received/s by the measured CPUs".to_string(),
            before: received(before),
            after: received(after),
        });
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The recorded arm `arm` (`before`, `after`) of the runtime-isolation guide copied into
    /// `dir`; with `rate`, its rounds 2 and 4 marked loaded by `ipi` at `rate` IPIs sent/s (as
    /// check writes a loaded round's runs) and the others idle, without it as recorded (no
    /// `loads` field, as written before loads or without them).
    pub(in crate::prove) fn recorded_arm(dir: &Path, arm: &str, rate: Option<f64>) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/runtime-isolation")
            .join(arm);
        std::fs::create_dir_all(dir).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let Some(rate) = rate else {
                std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap();
            let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
            // measure-timer-4.json is round 4's; measure-timer.json round 1's.
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let round: u32 = (stem.rsplit_once('-')).map_or(1, |(_, n)| n.parse().unwrap_or(1));
            if json["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("measure-"))
            {
                let loaded = round.is_multiple_of(2);
                json["result"]["loads"] = serde_json::json!({
                    "loaded": loaded,
                    "as_asked": true,
                    "kinds": [{"kind": "ipi", "threads": 1, "rate": if loaded { rate } else { 0.0 }, "unit": "IPIs sent/s"}],
                    "ipis_received_per_s": if loaded { 900.0 } else { 10.0 },
                });
            }
            std::fs::write(
                dir.join(path.file_name().unwrap()),
                serde_json::to_string(&json).unwrap(),
            )
            .unwrap();
        }
    }

    fn sources(runs: &[Run]) -> Vec<String> {
        let mut names: Vec<String> = (runs.iter())
            .map(|r| {
                Path::new(&r.source)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    /// Issue 48: the loaded rounds of one arm are paired with the loaded rounds of the other,
    /// the idle with the idle, never mixed; the intensities are each arm's loaded rounds'.
    #[test]
    fn loaded_rounds_are_compared_with_loaded_rounds_and_idle_with_idle() {
        let dir = tempfile::tempdir().unwrap();
        recorded_arm(&dir.path().join(BEFORE), "before", Some(50_000.0));
        recorded_arm(&dir.path().join(AFTER), "after", Some(70_000.0));
        let before = ArmRuns::read(&dir.path().join(BEFORE)).unwrap();
        let after = ArmRuns::read(&dir.path().join(AFTER)).unwrap();
        let (loaded, idle) = (before.of(true), before.of(false));
        assert!(!loaded.is_empty() && !idle.is_empty());
        // Rounds 2 and 4 (measure-*-2.json, -4.json) are the loaded ones, in both arms.
        for names in [sources(&loaded), sources(&after.of(true))] {
            assert!(
                names
                    .iter()
                    .all(|n| n.ends_with("-2.json") || n.ends_with("-4.json")),
                "{names:?}"
            );
        }
        assert!(
            (sources(&idle).iter()).all(|n| !n.ends_with("-2.json") && !n.ends_with("-4.json")),
            "{:?}",
            sources(&idle)
        );
        assert_eq!(loaded.len() + idle.len(), before.0.len());
        let intensity = intensities(&before, &after);
        assert_eq!(intensity[0].kind, "ipi");
        assert_eq!(intensity[0].before, Some(50_000.0));
        assert_eq!(intensity[0].after, Some(70_000.0));
        assert_eq!(intensity[1].kind, "received");
        assert_eq!(intensity[1].before, Some(900.0));
    }

    /// Runs written without a `loads` field (before loads, or a run without them) are all
    /// idle, and there is no intensity to show.
    #[test]
    fn runs_without_loads_are_idle_rounds() {
        let dir = tempfile::tempdir().unwrap();
        recorded_arm(&dir.path().join(BEFORE), "before", None);
        let before = ArmRuns::read(&dir.path().join(BEFORE)).unwrap();
        assert!(before.of(true).is_empty());
        assert_eq!(before.of(false).len(), before.0.len());
        assert!(intensities(&before, &before).is_empty());
    }
}
