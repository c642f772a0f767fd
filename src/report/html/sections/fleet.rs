//! A fleet (`lowlat fleet report`): each group with its hosts folded away and its outliers
//! field by field and its measured figures' distributions with the hosts outside them, then per
//! rule how many hosts got each status, then the files left out.

use maud::{Markup, html};

use super::from;
use crate::audit::FindingStatus;
use crate::fleet::FleetReport;
use crate::report::html::source::{Source, SourceError};
use crate::report::html::svg::{self, Part};

/// The colour of a status in charts (colour-blind safe: green, orange, vermilion, blues,
/// greys).
fn status_colour(status: FindingStatus) -> &'static str {
    match status {
        FindingStatus::Pass => "#009e73",
        FindingStatus::Warn => "#e69f00",
        FindingStatus::Fail => "#d55e00",
        FindingStatus::Waived => "#cc79a7",
        FindingStatus::Inferred => "#56b4e9",
        FindingStatus::Unknown => "#999999",
        FindingStatus::Skipped => "#dddddd",
    }
}

/// A fence, or a dash where there is none.
fn fence(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), |v| format!("{v:.0}"))
}

/// Every fleet document: groups, outliers, rule tallies, skipped files.
pub(super) fn section(sources: &[&Source]) -> Result<Option<Markup>, SourceError> {
    if sources.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for source in sources {
        let fleet: FleetReport = source.view()?;
        // The statuses in the audit's order (pass, warn, fail, ...), not by name; `waived`
        // only where a site profile waived something.
        let any_waived = (fleet.rules.iter()).any(|r| r.hosts.waived > 0);
        let shown: Vec<FindingStatus> = (FindingStatus::ALL.into_iter())
            .filter(|s| *s != FindingStatus::Waived || any_waived)
            .collect();
        let statuses: Vec<&str> = shown.iter().map(|s| s.name()).collect();
        let rows: Vec<(String, Vec<f64>)> = fleet
            .rules
            .iter()
            .map(|r| {
                let counts = shown.iter().map(|s| r.hosts.get(*s) as f64);
                (r.rule.clone(), counts.collect())
            })
            .collect();
        let legend: Vec<Part> = shown
            .iter()
            .map(|s| Part {
                name: s.name(),
                colour: status_colour(*s),
            })
            .collect();
        let chart = svg::stacked_bars("Hosts per status, rule by rule", &legend, &rows, "hosts");
        parts.push(html! {
            (from(source))
            p { (fleet.hosts) " hosts judged by the profile " strong { (fleet.profile) }
                @for file in &fleet.profile_files { " + " code { (file) } }
                " in " (fleet.groups.len()) " groups." }
            @if !fleet.waivers.is_empty() {
                table {
                    caption { "Waivers of the site profile (" (fleet.waivers.len()) ")" }
                    thead { tr { th { "rule" } th { "hosts waived" } th { "until" } th { "owner" } th { "where" } th { "reason" } } }
                    tbody {
                        @for w in &fleet.waivers {
                            tr { td { code { (w.rule) } } td { (w.hosts) } td { (w.until.as_deref().unwrap_or("-")) }
                                 td { (w.owner.as_deref().unwrap_or("-")) } td { code { (w.place) } } td { (w.reason) } }
                        }
                    }
                }
            }
            @for group in &fleet.groups {
                h3 { "Group " (group.id) ": " (group.hosts.len()) " hosts" }
                table.facts {
                    @for (field, value) in &group.key { tr { th { (field) } td { (value) } } }
                }
                details {
                    summary { "Hosts (" (group.hosts.len()) ")" }
                    p { @for (i, host) in group.hosts.iter().enumerate() { @if i > 0 { ", " } (host) } }
                }
                @if !group.split.is_empty() {
                    p { "No majority (no outliers judged): " (group.split.join(", ")) }
                }
                @if group.outliers.is_empty() {
                    p { "No outliers: every host agrees with the group." }
                } @else {
                    table {
                        caption { "Outliers (" (group.outliers.len()) ")" }
                        thead { tr { th { "host" } th { "field" } th { "host's value" } th { "group's value" } } }
                        tbody {
                            @for outlier in &group.outliers {
                                @for d in &outlier.differences {
                                    tr.status-fail { td { (outlier.host) } td { code { (d.field) } } td { (d.value) } td { (d.group) } }
                                }
                            }
                        }
                    }
                }
                @if !group.measurements.is_empty() {
                    table {
                        caption { "Measurements: distribution over the group's hosts, and the hosts outside the fences" }
                        thead { tr { th { "figure" } th { "unit" } th { "hosts" } th { "min" } th { "median" } th { "max" }
                                     th { "fences" } th { "outside" } } }
                        tbody {
                            @for m in &group.measurements {
                                tr.status-fail[!m.outside.is_empty()] {
                                    td { code { (m.metric) } } td { (m.unit) } td { (m.hosts) }
                                    td { (format!("{:.0}", m.min)) } td { (format!("{:.0}", m.median)) } td { (format!("{:.0}", m.max)) }
                                    td { (fence(m.low_fence)) " – " (fence(m.high_fence)) }
                                    td { @for (i, o) in m.outside.iter().enumerate() { @if i > 0 { ", " } (o.host) " (" (format!("{:.0}", o.value)) ")" } }
                                }
                            }
                        }
                    }
                }
            }
            h3 { "Rules: hosts per status" }
            figure { (chart) figcaption { "Each rule's hosts by status, in the audit's order of the rules." } }
            table.matrix {
                thead { tr { th { "rule" } @for s in &statuses { th { (s) } } } }
                tbody {
                    @for (rule, counts) in &rows {
                        tr { td { code { (rule) } } @for n in counts { td { (n) } } }
                    }
                }
            }
            @if !fleet.skipped.is_empty() {
                h3 { "Skipped (" (fleet.skipped.len()) ")" }
                ul { @for s in &fleet.skipped { li { (s.problem) } } }
            }
        });
    }
    Ok(Some(html! { @for part in parts { (part) } }))
}
