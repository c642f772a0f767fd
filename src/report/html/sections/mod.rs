//! The sections of the report, one module per subject. Each takes the documents of its kinds
//! and returns nothing when there are none, so the report shows what its inputs allow.

mod causes;
mod check_load;
mod compare;
mod cross;
#[cfg(test)]
mod documents_tests;
mod fleet;
mod hardware;
mod latency;
mod machine;
mod network;
mod peers;
mod prove;
mod setup;
mod verdict;

use maud::{Markup, html};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::source::{Source, SourceError};
use crate::compare::run::Run;
use crate::document::Kind;
use crate::report::measure::Measurement;

/// One titled part of the page, linked from the table of contents.
#[derive(Debug)]
pub(crate) struct Section {
    /// The fragment id (`machine`, `measure-jitter`).
    pub id: &'static str,
    /// The heading.
    pub title: &'static str,
    /// What it shows.
    pub body: Markup,
}

/// Every section the documents and the peers' runs allow, in the report's fixed order.
pub(crate) fn all(sources: &[Source], runs: &[Run]) -> Result<Vec<Section>, SourceError> {
    let of =
        |kind: Kind| -> Vec<&Source> { sources.iter().filter(|s| s.header.kind == kind).collect() };
    let parts = [
        (
            "prove",
            "Verdict of the prove run",
            prove::section(&of(Kind::Prove))?,
        ),
        ("verdict", "Verdict", verdict::section(&of(Kind::Check))?),
        (
            "machine",
            "Machine",
            machine::section(&of(Kind::Inventory))?,
        ),
        ("fleet", "Fleet", fleet::section(&of(Kind::Fleet))?),
        ("audit", "Audit findings", setup::audit(&of(Kind::Audit))?),
        (
            "plan",
            "Plan and what changed",
            setup::plan(&of(Kind::Plan), &of(Kind::Verify))?,
        ),
        (
            "compare",
            "Comparison of the arms",
            compare::section(&of(Kind::Compare))?,
        ),
        (
            "jitter",
            "Jitter",
            latency::jitter(&of(Kind::MeasureJitter))?,
        ),
        (
            "timer",
            "Timer latency",
            latency::timer(&of(Kind::MeasureTimer))?,
        ),
        (
            "watch",
            "Interruptions over time",
            latency::watch(&of(Kind::WatchSample))?,
        ),
        (
            "c2c",
            "Core-to-core latency",
            hardware::c2c(&of(Kind::MeasureC2c))?,
        ),
        (
            "membw",
            "Memory bandwidth",
            hardware::membw(&of(Kind::MeasureMembw))?,
        ),
        (
            "memlat",
            "Memory latency",
            hardware::memlat(&of(Kind::MeasureMemlat))?,
        ),
        (
            "freq",
            "Effective frequency",
            hardware::freq(&of(Kind::MeasureFreq))?,
        ),
        (
            "wakeup",
            "Cross-CPU wake-up latency",
            cross::wakeup(&of(Kind::MeasureWakeup))?,
        ),
        ("ipi", "IPI round trip", cross::ipi(&of(Kind::MeasureIpi))?),
        (
            "ipi-mesh",
            "IPI throughput",
            cross::ipi_mesh(&of(Kind::MeasureIpiMesh))?,
        ),
        (
            "net",
            "Network round trips",
            network::net(&of(Kind::MeasureNet))?,
        ),
        ("peers", "Peer tools' runs", peers::section(runs)),
    ];
    let mut sections: Vec<Section> = parts
        .into_iter()
        .filter_map(|(id, title, body)| body.map(|body| Section { id, title, body }))
        .collect();
    sections.extend(not_drawn(sources));
    Ok(sections)
}

/// The kinds some section draws.
const DRAWN: [Kind; 19] = [
    Kind::Prove,
    Kind::Check,
    Kind::Inventory,
    Kind::Fleet,
    Kind::Audit,
    Kind::Plan,
    Kind::Verify,
    Kind::Compare,
    Kind::MeasureJitter,
    Kind::MeasureTimer,
    Kind::WatchSample,
    Kind::MeasureC2c,
    Kind::MeasureMembw,
    Kind::MeasureMemlat,
    Kind::MeasureFreq,
    Kind::MeasureWakeup,
    Kind::MeasureIpi,
    Kind::MeasureIpiMesh,
    Kind::MeasureNet,
];

/// Documents no section draws (an apply record, hwlat, BIOS), said by kind and file rather
/// than dropped without a word; they are embedded and listed under Documents all the same.
fn not_drawn(sources: &[Source]) -> Option<Section> {
    let left: Vec<&Source> = sources
        .iter()
        .filter(|s| !DRAWN.contains(&s.header.kind))
        .collect();
    if left.is_empty() {
        return None;
    }
    Some(Section {
        id: "not-drawn",
        title: "Documents without a chart",
        body: html! {
            p { "This report draws no section for these documents; they are embedded whole and listed under Documents,                  and the command that wrote each prints it as text." }
            table {
                thead { tr { th { "file" } th { "kind" } th { "host" } } }
                tbody { @for s in &left { tr { td { code { (s.name) } } td { (s.header.kind.to_string()) } td { (s.header.host) } } } }
            }
        },
    })
}

/// A chart with its caption and, folded below it, the same data as a table.
fn figure(caption: &str, chart: Markup, table: Markup) -> Markup {
    html! {
        figure {
            (chart)
            figcaption { (caption) }
            details {
                summary { "Table: " (caption) }
                (table)
            }
        }
    }
}

/// A heading naming the document a part of a section comes from, with the warnings the
/// command printed beside its figures (a measurement's `environment` and `result` warnings:
/// a CPU shared with other tasks, a frequency that moved).
fn from(source: &Source) -> Markup {
    let warnings: WarningsView = source.view().unwrap_or_default();
    let warnings = [warnings.environment, warnings.result]
        .into_iter()
        .flatten()
        .flat_map(|part| part.warnings);
    html! {
        p.from { "From " code { (source.name) } ", host " strong { (source.header.host) } }
        @let warnings: Vec<String> = warnings.collect();
        @if !warnings.is_empty() {
            ul.warnings { @for w in &warnings { li { strong { "warning: " } (w) } } }
        }
    }
}

/// The parts of a document that carry warnings; any other document reads as none.
#[derive(Default, Deserialize)]
struct WarningsView {
    #[serde(default)]
    environment: Option<Warned>,
    #[serde(default)]
    result: Option<Warned>,
}

#[derive(Deserialize)]
struct Warned {
    #[serde(default)]
    warnings: Vec<String>,
}

/// The figures of each measurement document of `sources` (one kind, figures `T`), with its
/// source.
fn figures<'s, T: DeserializeOwned>(
    sources: &[&'s Source],
) -> Result<Vec<(&'s Source, T)>, SourceError> {
    sources
        .iter()
        .map(|source| Ok((*source, source.view::<Measurement<T>>()?.result.figures)))
        .collect()
}

/// The name a document gives `value` (an enum's variant: `smt_siblings`, `triad`).
fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
