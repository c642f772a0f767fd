//! `lowlat compare`'s printers: the settings diff, then one table row per CPU and metric with
//! each arm's value and 95 % interval, the change, the verdict and the test behind it; and the
//! `compare` JSON document.

use std::fmt::Write;

use crate::compare::run::Family;
use crate::compare::settings::KeyValues;
use crate::compare::{Comparison, Row};
use crate::document::{Document, Kind};
use crate::report::measure::jitter::aligned;

/// The `compare` document (`lowlat compare --json`); `host` is the hosts of the runs' documents
/// or `unknown`.
pub fn document(comparisons: &[Comparison], host: String) -> Document<CompareBody<'_>> {
    Document::new(Kind::Compare, host, CompareBody { comparisons })
}

/// The body of a `compare` document.
#[derive(Debug, serde::Serialize)]
pub struct CompareBody<'a> {
    /// One comparison per measurement both arms hold (busy-loop gaps, timer wake-ups), each
    /// with its arms, settings diff, rows and notes.
    pub comparisons: &'a [Comparison],
}

/// Every comparison as the terminal shows it, one after the other.
pub fn render_all(comparisons: &[Comparison]) -> String {
    comparisons
        .iter()
        .map(render)
        .collect::<Vec<_>>()
        .join("\n")
}

fn value(v: f64, unit: &str) -> String {
    match unit {
        "ns" if v >= 1e6 => format!("{:.2} ms", v / 1e6),
        "ns" if v >= 1e3 => format!("{:.2} us", v / 1e3),
        "ns" => format!("{v:.0} ns"),
        _ => format!("{v:.1}"),
    }
}

fn estimate(row: &Row, e: &crate::compare::metric::Estimate) -> String {
    match (e.low, e.high) {
        (Some(low), Some(high)) => format!(
            "{} [{}, {}]",
            value(e.value, row.unit),
            value(low, row.unit),
            value(high, row.unit)
        ),
        _ => value(e.value, row.unit),
    }
}

fn keys(out: &mut String, title: &str, keys: &[KeyValues], between: bool) {
    if keys.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}");
    for k in keys {
        if between {
            let _ = writeln!(
                out,
                "  {}: {} → {}",
                k.key,
                k.a.join(" | "),
                k.b.join(" | ")
            );
        } else {
            let _ = writeln!(out, "  {}: {}", k.key, k.a.join(" | "));
        }
    }
}

/// The comparison for people.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "compare: {}; A (baseline) {} run(s), B (candidate) {} run(s)",
        c.family.name(),
        c.a.runs.len(),
        c.b.runs.len(),
    );
    let _ = match c.family {
        Family::Throughput => writeln!(out, "; higher is better"),
        _ => writeln!(out, "; rate above {} us", c.above_ns / 1e3),
    };
    let _ = writeln!(out);
    let s = &c.settings;
    if s.between.is_empty() && s.within_a.is_empty() && s.within_b.is_empty() {
        let _ = writeln!(
            out,
            "Settings: no difference recorded between or within the arms."
        );
    }
    keys(
        &mut out,
        "Settings that differ between the arms (A → B):",
        &s.between,
        true,
    );
    keys(
        &mut out,
        "WARNING: settings differ WITHIN arm A; its runs are not one configuration:",
        &s.within_a,
        false,
    );
    keys(
        &mut out,
        "WARNING: settings differ WITHIN arm B; its runs are not one configuration:",
        &s.within_b,
        false,
    );
    if !s.unknown.is_empty() {
        let _ = writeln!(
            out,
            "Settings unknown for {} run(s) (peers' outputs without a lowlat document beside them).",
            s.unknown.len()
        );
    }
    let _ = writeln!(out);
    let mut table = vec![
        [
            "cpu",
            "metric",
            "A [95% CI]",
            "B [95% CI]",
            "Δ%",
            "p (Holm)",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut tests: Vec<&str> = Vec::new();
    for row in &c.rows {
        if !tests.contains(&row.test.as_str()) {
            tests.push(&row.test);
        }
        let number = tests.iter().position(|t| *t == row.test).unwrap_or(0) + 1;
        let metric = match (&row.kernel, row.unit) {
            (Some(kernel), unit) => format!("{kernel} {} ({unit})", row.metric.name()),
            (None, "ns") => row.metric.name().to_string(),
            (None, unit) => format!("{} {} us ({unit})", row.metric.name(), c.above_ns / 1e3),
        };
        table.push(vec![
            if row.kernel.is_some() {
                "all".to_string()
            } else {
                row.cpu.to_string()
            },
            metric,
            estimate(row, &row.a),
            estimate(row, &row.b),
            row.delta_percent.map_or("—".into(), |d| format!("{d:+.1}")),
            row.p_holm.map_or("—".into(), |p| {
                if p < 0.001 {
                    "<0.001".into()
                } else {
                    format!("{p:.3}")
                }
            }),
            format!("{} [{number}]", row.verdict.label()),
        ]);
    }
    out.push_str(&aligned(&table));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Tests (verdicts at p < {} after {}):",
        c.alpha, c.correction
    );
    for (i, test) in tests.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {test}", i + 1);
    }
    for note in &c.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    out
}
