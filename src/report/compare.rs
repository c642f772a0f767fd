//! `lowlat compare`'s printers: the settings diff; the primary endpoints with each arm's value,
//! the ratio B/A with its interval and the verdict; the minimum detectable effect; the
//! environment of both arms with its warnings; the per-CPU detail; the causes of the gaps
//! that appeared, disappeared or changed (`--explain`); and the `compare` JSON
//! document. Also the A/A calibration (`compare --calibrate`) and its document.

use std::borrow::Cow;

use crate::text::Page;

use crate::compare::calibrate::{Calibration, Design};
use crate::compare::causes::Presence;
use crate::compare::environment::Spread;
use crate::compare::estimate::ArmEstimate;
use crate::compare::run::Family;
use crate::compare::settings::KeyValues;
use crate::compare::verdict::Compared;
use crate::compare::{Comparison, Primary};
use crate::document::{Document, Kind};
use crate::report::table::{self, Align, Width, aligned};

/// The `compare` document (`lowlat compare --json`); `host` is the hosts of the runs' documents
/// or `unknown`.
pub fn document(comparisons: &[Comparison], host: String) -> Document<CompareBody<'_>> {
    Document::new(
        Kind::Compare,
        host,
        CompareBody {
            comparisons: Cow::Borrowed(comparisons),
        },
    )
}

/// The body of a `compare` document, as written and as the report reads it back.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct CompareBody<'a> {
    /// One comparison per measurement both arms hold (busy-loop gaps, timer wake-ups), each
    /// with its arms, settings diff, primary endpoints, environment, detail rows and notes.
    pub comparisons: Cow<'a, [Comparison]>,
}

/// The `calibration` document (`lowlat compare --calibrate --json`).
pub fn calibration_document(
    calibrations: &[Calibration],
    host: String,
) -> Document<CalibrationBody<'_>> {
    Document::new(Kind::Calibration, host, CalibrationBody { calibrations })
}

/// The body of a `calibration` document.
#[derive(Debug, serde::Serialize)]
pub struct CalibrationBody<'a> {
    /// One calibration per measurement the runs hold.
    pub calibrations: &'a [Calibration],
}

/// Every comparison as the terminal shows it, one after the other.
pub fn text(comparisons: &[Comparison]) -> String {
    comparisons
        .iter()
        .map(comparison_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A value with its unit (the text and the HTML report say it alike): latencies in µs (ns below 1 µs, ms above 10 ms), rates and rates of
/// memory bandwidth with theirs.
pub(crate) fn value(v: f64, unit: &str) -> String {
    match unit {
        "ns" if v >= 1e7 => format!("{:.2} ms", v / 1e6),
        "ns" if v >= 1e3 => format!("{:.2} µs", v / 1e3),
        "ns" => format!("{v:.0} ns"),
        "per-minute" => format!("{v:.1}/min"),
        "per-million-samples" => format!("{v:.1}/M"),
        "MB/s" => format!("{v:.0} MB/s"),
        "messages/s" => format!("{v:.0}/s"),
        "per-million-messages" => format!("{v:.1}/M msgs"),
        _ => format!("{v:.1}"),
    }
}

pub(crate) fn estimate(unit: &str, e: &ArmEstimate) -> String {
    match (e.low, e.high) {
        (Some(low), Some(high)) => format!(
            "{} [{}, {}]",
            value(e.value, unit),
            value(low, unit),
            value(high, unit)
        ),
        _ => value(e.value, unit),
    }
}

/// One arm's rate of a cause: `none (0 gaps)` where the arm saw none of it, since the rate
/// judged then is only the 0.5 gap per run that keeps a run without any comparable (30/min for
/// runs of 1 s), not a rate seen.
pub(crate) fn cause_rate(unit: &str, gaps: u64, e: &ArmEstimate) -> String {
    if gaps == 0 {
        "none (0 gaps)".to_string()
    } else {
        estimate(unit, e)
    }
}

pub(crate) fn ratio(r: f64, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((lo, hi)) => format!("{r:.2} [{lo:.2}, {hi:.2}]"),
        None => format!("{r:.2}"),
    }
}

pub(crate) fn p_value(p: Option<f64>) -> String {
    p.map_or("—".into(), |p| {
        if p < 0.001 {
            "<0.001".into()
        } else {
            format!("{p:.3}")
        }
    })
}

/// Settings listed per part of the diff; `--json` has them all (a tuning moves hundreds of
/// IRQs on a large machine, each a key).
const SETTINGS_SHOWN: usize = 40;

fn keys(out: &mut Page, title: &str, keys: &[KeyValues], between: bool) {
    if keys.is_empty() {
        return;
    }
    writeln!(out, "{title}");
    if keys.len() > SETTINGS_SHOWN {
        writeln!(
            out,
            "  ({} keys; the first {SETTINGS_SHOWN} by name, --json has every one)",
            keys.len()
        );
    }
    for k in keys.iter().take(SETTINGS_SHOWN) {
        if between {
            writeln!(
                out,
                "  {}: {} → {}",
                k.key,
                k.a.join(" | "),
                k.b.join(" | ")
            );
        } else {
            writeln!(out, "  {}: {}", k.key, k.a.join(" | "));
        }
    }
}

fn settings(out: &mut Page, c: &Comparison) {
    let s = &c.settings;
    if s.between.is_empty() && s.within_a.is_empty() && s.within_b.is_empty() {
        writeln!(
            out,
            "Settings: no difference recorded between or within the arms."
        );
    }
    keys(
        out,
        "Settings that differ between the arms (A → B):",
        &s.between,
        true,
    );
    keys(
        out,
        "WARNING: settings differ WITHIN arm A; its runs are not one configuration:",
        &s.within_a,
        false,
    );
    keys(
        out,
        "WARNING: settings differ WITHIN arm B; its runs are not one configuration:",
        &s.within_b,
        false,
    );
    if !s.unknown.is_empty() {
        writeln!(
            out,
            "Settings unknown for {} run(s) (peers' outputs without a lowlat document beside them).",
            s.unknown.len()
        );
    }
}

/// The name of a primary endpoint (`worst CPU's p99`; a throughput kernel's first).
pub(crate) fn endpoint_name(e: &Primary) -> String {
    match &e.kernel {
        Some(kernel) => format!("{kernel} {}", e.endpoint.name()),
        None => e.endpoint.name().to_string(),
    }
}

/// The verdict of a primary endpoint, with the covariates that could explain it, or the
/// change it came through.
pub(crate) fn verdict(e: &Primary) -> String {
    if !e.confounded_by.is_empty() {
        format!("{} (confounded)", e.verdict.label())
    } else if !e.through.is_empty() {
        format!("{} (through the change)", e.verdict.label())
    } else {
        e.verdict.label()
    }
}

/// Settings named in a line about an effect; the settings diff above lists them all.
const EFFECT_SETTINGS_SHOWN: usize = 8;

/// The settings that moved a covariate, as a line says them: the first few, then how many more.
pub(crate) fn moved_by(settings: &[String]) -> String {
    let mut shown = settings
        .iter()
        .take(EFFECT_SETTINGS_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if settings.len() > EFFECT_SETTINGS_SHOWN {
        shown.push_str(&format!(
            " and {} more",
            settings.len() - EFFECT_SETTINGS_SHOWN
        ));
    }
    shown
}

fn primary(out: &mut Page, c: &Comparison) {
    let what = match c.family {
        Family::Throughput => "each kernel's best rate, one value per run",
        Family::RoundTrips => "one value per run: the round trips, messages and losses",
        _ => "one value per run pooled over the CPUs",
    };
    writeln!(
        out,
        "Verdict (primary endpoints, {what}; {}):",
        c.correction.split(';').next().unwrap_or_default()
    );
    let mut table = vec![
        ["endpoint"]
            .into_iter()
            .chain(COMPARED_HEADER)
            .map(String::from)
            .collect(),
    ];
    for e in &c.primary {
        table.push(vec![
            endpoint_name(e),
            estimate(e.unit, &e.a),
            estimate(e.unit, &e.b),
            ratio(e.ratio, e.ratio_interval),
            p_value(e.p_holm),
            verdict(e),
        ]);
    }
    out.text(aligned(&table));
    let runs = c.primary.first().map_or(0, |e| e.a.runs.min(e.b.runs));
    let detectable: Vec<String> = c
        .primary
        .iter()
        .filter_map(|e| {
            Some(format!(
                "±{} in the {} ({} runs per arm: ±{})",
                percent(e.detectable_percent?),
                endpoint_name(e),
                2 * runs,
                percent(e.detectable_percent_doubled?)
            ))
        })
        .collect();
    if !detectable.is_empty() {
        writeln!(
            out,
            "With {runs} runs per arm and this spread, smaller changes than these cannot be told \
             from noise (80 % power): {}.",
            detectable.join("; ")
        );
    }
    // Each test once, with the endpoints it decided.
    let mut tests: Vec<(&str, Vec<String>)> = Vec::new();
    for e in &c.primary {
        match tests.iter_mut().find(|(test, _)| *test == e.test) {
            Some((_, names)) => names.push(endpoint_name(e)),
            None => tests.push((&e.test, vec![endpoint_name(e)])),
        }
    }
    for (test, names) in tests {
        writeln!(out, "  {}: {test}", names.join(", "));
    }
}

/// A percentage with one decimal under 10 %, whole above.
fn percent(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

pub(crate) fn spread(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.runs > 1 => format!("{:.2} ± {:.2}", s.mean, s.sd),
        Some(s) => format!("{:.2}", s.mean),
        None => "—".to_string(),
    }
}

fn environment(out: &mut Page, c: &Comparison) {
    if c.environment.is_empty() {
        return;
    }
    writeln!(
        out,
        "Environment during the runs (mean ± sd over the runs):"
    );
    let mut table = vec![["quantity", "A", "B", ""].map(String::from).to_vec()];
    for row in &c.environment {
        table.push(vec![
            row.covariate.name().to_string(),
            spread(row.a),
            spread(row.b),
            if row.worse.is_some() { "differs" } else { "" }.to_string(),
        ]);
    }
    out.text(aligned(&table));
    for row in &c.environment {
        if let Some(warning) = &row.warning {
            writeln!(out, "WARNING: {warning}.");
        }
        if let (Some(difference), false) = (row.difference(), row.moved_by.is_empty()) {
            writeln!(
                out,
                "Effect of the change: {difference}, moved by the settings {}.",
                moved_by(&row.moved_by)
            );
        }
    }
    let through: Vec<String> = c
        .primary
        .iter()
        .filter(|e| !e.through.is_empty())
        .map(|e| {
            let ways: Vec<&str> = e.through.iter().map(|t| t.covariate.name()).collect();
            format!(
                "{} {} by way of {}",
                endpoint_name(e),
                e.verdict.label(),
                ways.join(", ")
            )
        })
        .collect();
    if !through.is_empty() {
        writeln!(
            out,
            "Through the change, not confounded (the settings diff moved what differs): {}.",
            through.join("; ")
        );
    }
    let confounded: Vec<String> = c
        .primary
        .iter()
        .filter(|e| !e.confounded_by.is_empty())
        .map(endpoint_name)
        .collect();
    if !confounded.is_empty() {
        writeln!(
            out,
            "Confounded (not counted in the exit code unless --fail-on any): {}.",
            confounded.join(", ")
        );
    }
}

fn detail(out: &mut Page, c: &Comparison) {
    if c.rows.is_empty() {
        return;
    }
    writeln!(
        out,
        "Detail per CPU (Holm over these {} rows; they do not set the exit code):",
        c.rows.len()
    );
    let mut table = vec![
        ["cpu", "metric"]
            .into_iter()
            .chain(COMPARED_HEADER)
            .map(String::from)
            .collect(),
    ];
    for row in &c.rows {
        let metric = match row.unit {
            "ns" => row.metric.name().to_string(),
            _ => format!("{} {} µs", row.metric.name(), c.above_ns / 1e3),
        };
        let mut cells = vec![row.cpu.to_string(), metric];
        cells.extend(compared_cells(row.unit, &row.compared));
        table.push(cells);
    }
    out.text(aligned(&table));
}

/// The header of the cells of a compared figure, as [`compared_cells`] fills them.
const COMPARED_HEADER: [&str; 5] = [
    "A [95% CI]",
    "B [95% CI]",
    "B/A [95% CI]",
    "p (Holm)",
    "verdict",
];

/// The cells of a compared figure in `unit`: A, B, B/A, p (Holm), verdict.
fn compared_cells(unit: &str, c: &Compared) -> [String; 5] {
    [
        estimate(unit, &c.a),
        estimate(unit, &c.b),
        ratio(c.ratio, c.ratio_interval),
        p_value(c.p_holm),
        c.verdict.label(),
    ]
}

/// Causes listed per group (appeared, disappeared, in both); `--json` has them all.
const CAUSES_SHOWN: usize = 10;

/// Said under a causes table where an arm saw none of a cause.
pub(crate) const NO_GAPS_NOTE: &str = "none (0 gaps): the arm saw none of the cause; its ratio \
     and verdict count 0.5 gap per run, so that a run without any still has a rate to compare.";

/// The causes of the gaps compared: those that appeared, those that disappeared and those of
/// both arms, each with both arms' rates, the ratio and the verdict.
fn causes(out: &mut Page, c: &Comparison) {
    let Some(diff) = &c.causes else {
        return;
    };
    let count = |p: Presence| diff.rows.iter().filter(|r| r.presence == p).count();
    let cpus: Vec<String> = diff.cpus.iter().map(u32::to_string).collect();
    writeln!(
        out,
        "\nCauses of the gaps (--explain) on CPU {}, per minute of busy loop: {} appeared, {} \
         disappeared, {} in both (Holm over these {} causes; they do not set the exit code):",
        cpus.join(","),
        count(Presence::Appeared),
        count(Presence::Disappeared),
        count(Presence::Both),
        diff.rows.len()
    );
    let mut table = vec![
        ["", "class", "source", "gaps A", "gaps B"]
            .into_iter()
            .chain(COMPARED_HEADER)
            .map(String::from)
            .collect(),
    ];
    let mut left_out = Vec::new();
    for presence in [Presence::Appeared, Presence::Disappeared, Presence::Both] {
        let rows: Vec<_> = diff
            .rows
            .iter()
            .filter(|r| r.presence == presence)
            .collect();
        for row in rows.iter().take(CAUSES_SHOWN) {
            let mut cells = vec![
                presence.label().to_string(),
                row.class.key().to_string(),
                row.source.clone(),
                row.a_gaps.to_string(),
                row.b_gaps.to_string(),
            ];
            let [_, _, rest @ ..] = compared_cells(diff.unit, &row.compared);
            let a = cause_rate(diff.unit, row.a_gaps, &row.compared.a);
            let b = cause_rate(diff.unit, row.b_gaps, &row.compared.b);
            cells.extend([a, b].into_iter().chain(rest));
            table.push(cells);
        }
        if rows.len() > CAUSES_SHOWN {
            left_out.push(format!(
                "{} {}",
                rows.len() - CAUSES_SHOWN,
                presence.label()
            ));
        }
    }
    // Where, class and source are text; the rest figures.
    out.text(table::columns(&table, Width::Chars, |c| {
        if c < 3 { Align::Left } else { Align::Right }
    }));
    if diff.rows.iter().any(|r| r.a_gaps == 0 || r.b_gaps == 0) {
        writeln!(out, "{NO_GAPS_NOTE}");
    }
    if !left_out.is_empty() {
        writeln!(
            out,
            "Not shown, the least frequent (--json has every cause): {}.",
            left_out.join(", ")
        );
    }
}

/// The comparison for people.
pub fn comparison_text(c: &Comparison) -> String {
    let mut out = Page::new();
    write!(
        out,
        "compare: {}; A (baseline) {} run(s), B (candidate) {} run(s)",
        c.family.name(),
        c.a.runs.len(),
        c.b.runs.len(),
    );
    match c.family {
        Family::Throughput => writeln!(out, "; higher is better"),
        Family::RoundTrips => writeln!(
            out,
            "; round trips lower is better, messages per second higher"
        ),
        _ => writeln!(out, "; rate above {} µs", c.above_ns / 1e3),
    }
    out.blank();
    settings(&mut out, c);
    out.blank();
    primary(&mut out, c);
    out.blank();
    environment(&mut out, c);
    if !c.environment.is_empty() {
        out.blank();
    }
    detail(&mut out, c);
    causes(&mut out, c);
    for note in &c.notes {
        writeln!(out, "Note: {note}");
    }
    format!("{}\n", out.as_str().trim_end())
}

/// The calibration for people.
pub fn calibration_text(calibrations: &[Calibration]) -> String {
    let mut out = Page::new();
    for (i, c) in calibrations.iter().enumerate() {
        if i > 0 {
            out.blank();
        }
        let cpus: Vec<String> = c.cpus.iter().map(u32::to_string).collect();
        writeln!(
            out,
            "calibrate: {}; {} untouched runs, CPUs {}",
            c.family.name(),
            c.runs,
            cpus.join(",")
        );
        writeln!(
            out,
            "\nHow far the runs spread, and the smallest change compare detects with 80 % power:"
        );
        let mut table = vec![
            [
                "endpoint",
                "run-to-run sd",
                "2 runs/arm",
                "4 runs/arm",
                "8 runs/arm",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for e in &c.endpoints {
            let mut row = vec![
                match &e.kernel {
                    Some(k) => format!("{k} {}", e.endpoint.name()),
                    None => e.endpoint.name().to_string(),
                },
                format!("±{:.1} %", (e.sd_log.exp() - 1.0) * 100.0),
            ];
            for n in [2, 4, 8] {
                row.push(
                    e.detectable_percent
                        .iter()
                        .find(|(runs, _)| *runs == n)
                        .map_or("—".into(), |(_, p)| format!("±{p:.0} %")),
                );
            }
            table.push(row);
        }
        out.text(aligned(&table));
        writeln!(
            out,
            "\nHow often compare calls a difference between these untouched runs (an A/A test; \
             the method promises at most 5 % with 2 runs or more per arm), and how many of those \
             the arms' environment does not explain (those would set the exit code):"
        );
        let mut table = vec![
            ["runs/arm", "consecutive", "interleaved", "all splits"]
                .map(String::from)
                .to_vec(),
        ];
        let sizes: Vec<usize> = c.shares.iter().map(|s| s.runs_per_arm).collect();
        let mut seen = Vec::new();
        for k in sizes {
            if seen.contains(&k) {
                continue;
            }
            seen.push(k);
            let mut row = vec![k.to_string()];
            for design in [Design::Consecutive, Design::Interleaved, Design::All] {
                row.push(
                    c.shares
                        .iter()
                        .find(|s| s.runs_per_arm == k && s.design == design)
                        .map_or("—".into(), |s| {
                            format!(
                                "{} of {} ({:.0} %; {} unexplained)",
                                s.with_verdict,
                                s.splits,
                                s.share * 100.0,
                                s.unexplained
                            )
                        }),
                );
            }
            table.push(row);
        }
        out.text(aligned(&table));
    }
    out.into_string()
}
