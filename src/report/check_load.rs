//! A check under load (`check --load`), as its document, its text and the HTML read it: the
//! loads asked and where they ran, each round's intensity, each CPU's figures in the idle
//! rounds beside the loaded ones, and what the load changed, judged by `lowlat compare`'s
//! method with the idle rounds as arm A and the loaded rounds as arm B (primary endpoints,
//! then the causes of the gaps that grew).

use serde::{Deserialize, Serialize};

use crate::check::{CpuFigures, LoadedCheck};
use crate::compare::{self, Comparison, Options};
use crate::document::Kind as DocumentKind;
use crate::measure::load::{Kind, Level, RoundLoad, Skipped};
use crate::report::measure::load::{line, rate};
use crate::report::runs;
use crate::text::Page;

/// The margin compare judges the load's effect with, as `lowlat compare`'s default (3 %).
const MARGIN: f64 = 0.03;

/// The load of a check, in its document (`load`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadBody {
    /// The kinds asked.
    pub kinds: Vec<Kind>,
    /// How hard each load thread worked: `low` (a tenth of the time), `medium`, `high`.
    pub level: Level,
    /// The housekeeping CPUs the loads ran on (list form).
    pub cpus: String,
    /// The kinds that could not start, with why: their rounds were not loaded as asked.
    pub skipped: Vec<Skipped>,
    /// Whether every loaded round was loaded as asked (every kind ran the whole round); a
    /// check loaded otherwise is NOT PROVEN.
    pub loaded_as_asked: bool,
    /// Each round's load, in the order measured (idle, loaded, idle, ...), as the round's
    /// runs in the bundle also record it.
    pub rounds: Vec<RoundLoad>,
    /// Each measured CPU's figures over the idle rounds (`figures` are the loaded rounds').
    pub idle_figures: Vec<CpuFigures>,
    /// What the load changed, compare's primary endpoints with the idle rounds as A.
    pub effects: Vec<LoadEffect>,
    /// The causes of the busy loop's gaps whose rate the load raised beyond chance.
    pub causes_added: Vec<CauseAdded>,
    /// What the reader must know (why the effect could not be judged).
    pub notes: Vec<String>,
}

/// One of compare's primary endpoints, idle rounds against loaded rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadEffect {
    /// The measurement: `busy-loop interruptions`, `timer wake-up latencies`.
    pub measurement: String,
    /// The figure: `worst CPU's p99`, `rate above --above` (10 µs), ...
    pub endpoint: String,
    /// The unit of `idle` and `loaded`: `ns`, `per-minute`, `per-million-samples`.
    pub unit: String,
    /// The idle rounds' value (geometric mean of the rounds).
    pub idle: f64,
    /// The loaded rounds' value.
    pub loaded: f64,
    /// Loaded / idle.
    pub ratio: f64,
    /// compare's verdict: `worse` (the load raised it beyond chance and the margin), `no
    /// difference`, `equivalent (±3 %)`, `better`, `inconclusive ...`.
    pub verdict: String,
}

/// A cause of the busy loop's gaps the load raised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CauseAdded {
    /// Its class and source (`ipi: TLB shootdown`, `task: kworker/1:1`).
    pub cause: String,
    /// Its gaps per minute of busy loop in the idle rounds.
    pub idle_per_minute: f64,
    /// In the loaded rounds.
    pub loaded_per_minute: f64,
    /// compare's verdict (`worse`: more of it under load, beyond chance).
    pub verdict: String,
}

impl LoadBody {
    /// The load of `check`, its effect judged on the documents of its runs (`documents`, in
    /// the order measured, as the bundle holds them: jitter then timer, each round).
    pub(crate) fn of(check: &LoadedCheck, documents: &[(DocumentKind, String)]) -> LoadBody {
        let (mut idle, mut loaded) = (Vec::new(), Vec::new());
        let mut notes = Vec::new();
        let runs = documents.iter().filter(|(kind, _)| {
            matches!(
                kind,
                DocumentKind::MeasureJitter | DocumentKind::MeasureTimer
            )
        });
        let mut jitter_seen = 0;
        for (kind, text) in runs {
            if *kind == DocumentKind::MeasureJitter {
                jitter_seen += 1;
            }
            let shown = format!("{kind} of round {jitter_seen}");
            let round = check.rounds.get(jitter_seen.max(1) - 1);
            match runs::of_document(text, &shown) {
                Ok(Some(run)) if round.is_some_and(|r| r.loaded) => loaded.push(run),
                Ok(Some(run)) => idle.push(run),
                Ok(None) => {}
                Err(e) => notes.push(e.to_string()),
            }
        }
        let (effects, causes_added) = if idle.is_empty() || loaded.is_empty() {
            notes.push(
                "the load's effect is not judged: the check has no idle round or no loaded \
                 round"
                    .to_string(),
            );
            (Vec::new(), Vec::new())
        } else {
            let options = Options {
                above_ns: crate::check::LONG_INTERRUPTION_NS as f64,
                margin: MARGIN,
            };
            match compare::compare_each(&idle, &loaded, &options) {
                Ok(comparisons) => effects_of(&comparisons),
                Err(e) => {
                    notes.push(format!("the load's effect is not judged: {e}"));
                    (Vec::new(), Vec::new())
                }
            }
        };
        LoadBody {
            kinds: check.asked.kinds.clone(),
            level: check.asked.level,
            cpus: check.cpus.to_list(),
            skipped: check.skipped.clone(),
            loaded_as_asked: check.loaded_as_asked(),
            rounds: check.rounds.clone(),
            idle_figures: check.idle_figures.clone(),
            effects,
            causes_added,
            notes,
        }
    }

    /// The rounds loaded not as asked, by number; why the check is NOT PROVEN when any.
    pub(crate) fn rounds_not_as_asked(&self) -> Vec<usize> {
        (self.rounds.iter().enumerate())
            .filter(|(_, r)| !r.as_asked)
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// `cpu,mem`.
    fn names(&self) -> String {
        let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        names.join(",")
    }

    /// The line that sums up the load's effect: `under cpu,mem: timer wake-up latencies
    /// worst CPU's p99 2.3 → 4.1 µs (×1.78, worse); ipi: TLB shootdowns +40/min`.
    pub(crate) fn summary(&self) -> String {
        let mut parts: Vec<String> = (self.effects.iter())
            .filter(|e| e.verdict == "worse")
            .map(|e| {
                format!(
                    "{} {} {} → {} (×{:.2})",
                    e.measurement,
                    e.endpoint,
                    value(e.idle, &e.unit),
                    value(e.loaded, &e.unit),
                    e.ratio
                )
            })
            .collect();
        parts.extend(self.causes_added.iter().map(|c| {
            format!(
                "{} +{}/min",
                c.cause,
                rate(c.loaded_per_minute - c.idle_per_minute)
            )
        }));
        if parts.is_empty() {
            parts.push("nothing worse beyond chance".to_string());
        }
        format!("under {}: {}", self.names(), parts.join("; "))
    }
}

/// compare's primary endpoints and the causes that grew, from its comparisons.
fn effects_of(comparisons: &[Comparison]) -> (Vec<LoadEffect>, Vec<CauseAdded>) {
    let mut effects = Vec::new();
    let mut causes = Vec::new();
    for comparison in comparisons {
        for primary in &comparison.primary {
            effects.push(LoadEffect {
                measurement: comparison.family.name().to_string(),
                endpoint: primary.endpoint.name().to_string(),
                unit: primary.unit.to_string(),
                idle: primary.a.value,
                loaded: primary.b.value,
                ratio: primary.ratio,
                verdict: primary.verdict.label(),
            });
        }
        let rows = comparison.causes.iter().flat_map(|diff| &diff.rows);
        for row in rows.filter(|row| row.compared.verdict.label() == "worse") {
            causes.push(CauseAdded {
                cause: format!("{}: {}", row.class.label(), row.source),
                idle_per_minute: row.compared.a.value,
                loaded_per_minute: row.compared.b.value,
                verdict: row.compared.verdict.label(),
            });
        }
    }
    (effects, causes)
}

/// A value in its unit: ns as µs, rates per minute.
fn value(value: f64, unit: &str) -> String {
    match unit {
        "ns" => format!("{:.1} µs", value / 1e3),
        "per-minute" => format!("{}/min", rate(value)),
        other => format!("{} {other}", rate(value)),
    }
}

/// The text block of a check under load, under the figures.
pub(crate) fn text(body: &LoadBody, loaded_figures: &[CpuFigures]) -> String {
    let mut out = Page::new();
    let idle = body.rounds.iter().filter(|r| !r.loaded).count();
    out.line(format!(
        "under load: {} at level {} on CPU {}; {idle} idle and {} loaded rounds in turn, the \
         targets judged on the loaded ones",
        body.names(),
        body.level.name(),
        body.cpus,
        body.rounds.len() - idle
    ));
    for skipped in &body.skipped {
        out.line(format!(
            "  {} did not start: {}",
            skipped.kind.name(),
            crate::text::escape_controls(&skipped.why)
        ));
    }
    for (i, round) in body.rounds.iter().enumerate() {
        let what = if round.loaded { "loaded" } else { "idle" };
        out.line(format!("  round {} {what}: {}", i + 1, line(round)));
    }
    let mut rows = vec![
        [
            "CPU",
            "≥10 µs/min idle",
            "loaded",
            "timer p99 µs idle",
            "loaded",
            "timer max µs idle",
            "loaded",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for loaded in loaded_figures {
        let idle = body.idle_figures.iter().find(|f| f.cpu == loaded.cpu);
        let per_minute = |f: Option<&CpuFigures>| {
            f.and_then(|f| f.value(crate::check::targets::RATE_GE_10US))
                .map_or("-".to_string(), |v| format!("{v:.1}"))
        };
        let timer = |f: Option<&CpuFigures>, ns: fn(&CpuFigures) -> u64| {
            f.filter(|f| f.timer_samples > 0)
                .map_or("-".to_string(), |f| format!("{:.1}", ns(f) as f64 / 1e3))
        };
        rows.push(vec![
            loaded.cpu.to_string(),
            per_minute(idle),
            per_minute(Some(loaded)),
            timer(idle, |f| f.timer_p99_ns),
            timer(Some(loaded), |f| f.timer_p99_ns),
            timer(idle, |f| f.timer_max_ns),
            timer(Some(loaded), |f| f.timer_max_ns),
        ]);
    }
    let table = super::table::aligned(&rows);
    for row in table.lines() {
        out.line(format!("  {row}"));
    }
    if !body.effects.is_empty() {
        out.line("  the load's effect (lowlat compare's method, idle rounds → loaded rounds):");
        for e in &body.effects {
            out.line(format!(
                "    {}, {}: {} → {} (×{:.2}): {}",
                e.measurement,
                e.endpoint,
                value(e.idle, &e.unit),
                value(e.loaded, &e.unit),
                e.ratio,
                e.verdict
            ));
        }
    }
    for cause in &body.causes_added {
        out.line(format!(
            "    cause added: {} {} → {}/min ({})",
            crate::text::escape_controls(&cause.cause),
            rate(cause.idle_per_minute),
            rate(cause.loaded_per_minute),
            cause.verdict
        ));
    }
    for note in &body.notes {
        out.line(format!("  note: {}", crate::text::escape_controls(note)));
    }
    out.line(format!("  {}", body.summary()));
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::CpuSet;
    use crate::measure::load::{KindIntensity, LoadAsked};

    /// A round's load: loaded ones with an ipi load of 1,000 IPIs/s.
    fn round(loaded: bool) -> RoundLoad {
        RoundLoad {
            loaded,
            as_asked: true,
            kinds: vec![KindIntensity {
                kind: Kind::Ipi,
                threads: 1,
                rate: if loaded { 1000.0 } else { 0.0 },
                unit: Kind::Ipi.unit().into(),
                over: None,
                failed: None,
            }],
            ipis_received_per_s: Some(if loaded { 900.0 } else { 10.0 }),
        }
    }

    /// Issue 48: the idle rounds are compare's arm A and the loaded rounds its arm B. Recorded
    /// rounds stand in: five quiet rounds of this VM as the idle ones, five rounds of it under
    /// six Rust builds as the loaded ones (tests/data/compare/aa-*-2vcpu.md).
    #[test]
    fn the_load_is_judged_by_compare_with_the_idle_rounds_as_a() {
        let dir = |set: &str| format!("{}/tests/data/compare/{set}", env!("CARGO_MANIFEST_DIR"));
        let file = |set: &str, what: &str, n: usize| {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            std::fs::read_to_string(format!("{}/measure-{what}{suffix}.json", dir(set))).unwrap()
        };
        let mut documents = Vec::new();
        let mut rounds = Vec::new();
        for n in 1..=5 {
            for (set, loaded) in [("aa-quiet-2vcpu", false), ("aa-busy-2vcpu", true)] {
                documents.push((DocumentKind::MeasureJitter, file(set, "jitter", n)));
                documents.push((DocumentKind::MeasureTimer, file(set, "timer", n)));
                rounds.push(round(loaded));
            }
        }
        let check = LoadedCheck {
            asked: LoadAsked {
                kinds: vec![Kind::Ipi],
                level: Level::High,
                scratch_dir: None,
                net_over: None,
            },
            cpus: CpuSet::parse_list("0").unwrap(),
            skipped: Vec::new(),
            rounds,
            idle_figures: Vec::new(),
        };
        let body = LoadBody::of(&check, &documents);
        assert!(body.notes.is_empty(), "{:?}", body.notes);
        let measurements: Vec<&str> = body
            .effects
            .iter()
            .map(|e| e.measurement.as_str())
            .collect();
        assert!(
            measurements.contains(&"busy-loop interruptions"),
            "{measurements:?}"
        );
        assert!(
            measurements.contains(&"timer wake-up latencies"),
            "{measurements:?}"
        );
        let effect = |measurement: &str, endpoint: &str| {
            (body.effects.iter())
                .find(|e| e.measurement == measurement && e.endpoint == endpoint)
                .unwrap()
                .clone()
        };
        // Under six Rust builds the timer's median wake-up took twice as long, and the busy
        // loop's worst p99 was hundreds of times the quiet rounds'.
        let median = effect("timer wake-up latencies", "median of CPUs' medians");
        assert!(median.ratio > 1.5, "{median:?}");
        assert_eq!(median.verdict, "worse", "{median:?}");
        let p99 = effect("busy-loop interruptions", "worst CPU's p99");
        assert_eq!(p99.verdict, "worse", "{p99:?}");
        assert!(
            body.summary()
                .starts_with("under ipi: busy-loop interruptions"),
            "{}",
            body.summary()
        );
        assert!(body.loaded_as_asked && body.rounds_not_as_asked().is_empty());
    }

    #[test]
    fn without_an_idle_round_the_effect_is_not_judged_and_said() {
        let check = LoadedCheck {
            asked: LoadAsked {
                kinds: vec![Kind::Cpu],
                level: Level::Low,
                scratch_dir: None,
                net_over: None,
            },
            cpus: CpuSet::parse_list("0").unwrap(),
            skipped: vec![Skipped {
                kind: Kind::Io,
                why: "no scratch file in /ro: Read-only file system; io skipped".into(),
            }],
            rounds: vec![RoundLoad {
                as_asked: false,
                ..round(true)
            }],
            idle_figures: Vec::new(),
        };
        let body = LoadBody::of(&check, &[]);
        assert!(body.effects.is_empty());
        assert!(body.notes[0].contains("no idle round"), "{:?}", body.notes);
        assert_eq!(body.rounds_not_as_asked(), [1]);
        let text = text(&body, &[]);
        assert!(
            text.contains("io did not start: no scratch file in /ro"),
            "{text}"
        );
        assert!(
            text.contains("round 1 loaded: ipi 1.00k IPIs sent/s"),
            "{text}"
        );
        assert!(text.contains("NOT loaded as asked"), "{text}");
    }
}
