//! `lowlat fleet` as text and as its JSON document: `report`'s summary line, each group with its
//! outliers field by field and its measured figures with the hosts outside them, the rules'
//! tallies, and the files left out; `plan`'s files written per group. Every value from a
//! snapshot is escaped (a host name could carry a newline or a terminal escape). The report is
//! read here ([`read`]), where the result bundles' documents can be read as runs.

use std::path::{Path, PathBuf};

use crate::text::Page;

use super::html::{Budget, Source, SourceError};
use super::runs;
use crate::audit::{FindingStatus, Profile};
use crate::document::{Document, Kind};
use crate::fleet::group::{FleetReport, Group, Skipped};
use crate::fleet::plan::{GroupOutcome, GroupPlan};
use crate::fleet::{self, FleetError};
use crate::text::escape_controls;
use crate::units::plural;

/// The `host` of a `fleet` document: it is about many hosts.
const FLEET_HOST: &str = "fleet";

/// The fleet's report over `inputs`, judged by `profile`, the documents of its result bundles
/// read as `lowlat report` reads runs.
pub(crate) fn read(inputs: &[PathBuf], profile: &Profile) -> Result<FleetReport, FleetError> {
    let runs = |file: &Path| runs::load(&[file.to_path_buf()]).map(|loaded| loaded.runs);
    fleet::report(inputs, profile, &runs)
}

/// Why the fleet's page could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FleetHtmlError {
    /// The document could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The page could not be drawn from it.
    #[error(transparent)]
    Page(#[from] SourceError),
}

/// The HTML page of `report` (`fleet report --html`), drawn from its document as `lowlat
/// report fleet.json` draws it.
pub(crate) fn html(report: &FleetReport) -> Result<String, FleetHtmlError> {
    let json = document(report).to_json()?;
    let sources = Source::parse_all("fleet.json", json, &mut Budget::default())?;
    Ok(super::html::render(&sources, &[])?)
}

/// The `fleet` document of `report`.
pub(crate) fn document(report: &FleetReport) -> Document<&FleetReport> {
    Document::new(Kind::Fleet, FLEET_HOST, report)
}

/// The page of `fleet plan`: per group the files written to its directory (and the hosts
/// left out of its `hosts.txt`), or why it has no plan; then the files skipped.
pub(crate) fn plans_text(plans: &[(GroupPlan, PathBuf)], skipped: &[Skipped]) -> String {
    let mut page = Page::new();
    for (group, dir) in plans {
        match &group.outcome {
            GroupOutcome::Planned { files, left_out } => {
                writeln!(
                    page,
                    "group {}: wrote {} files to {}",
                    group.group,
                    files.len(),
                    dir.display()
                );
                for reason in left_out {
                    writeln!(page, "  {}", escape_controls(reason));
                }
            }
            GroupOutcome::Refused(reasons) => {
                writeln!(
                    page,
                    "group {}: no plan: its hosts differ in what the plan depends on:",
                    group.group
                );
                for reason in reasons {
                    writeln!(page, "  {}", escape_controls(reason));
                }
            }
        }
    }
    for skipped in skipped {
        writeln!(page, "skipped: {}", skipped.problem);
    }
    page.into_string()
}

/// The page of `fleet report`.
pub(crate) fn text(report: &FleetReport) -> String {
    let mut page = Page::new();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    writeln!(
        page,
        "lowlat fleet report: {}, {} (profile {}), {}, {}, {}",
        plural(report.hosts, "host", "hosts"),
        plural(report.groups.len(), "group", "groups"),
        std::iter::once(report.profile.to_string())
            .chain(
                report
                    .profile_files
                    .iter()
                    .map(|f| escape_controls(f).into_owned())
            )
            .collect::<Vec<_>>()
            .join(" + "),
        plural(report.outliers(), "outlier", "outliers"),
        plural(
            report.outside(),
            "measurement outside",
            "measurements outside"
        ),
        plural(report.skipped.len(), "file skipped", "files skipped"),
    );
    for group in &report.groups {
        group_text(&mut page, group);
    }
    if !report.waivers.is_empty() {
        writeln!(
            page,
            "\nWaivers of {}:",
            escape_controls(&report.profile_files.join(" + "))
        );
        for w in &report.waivers {
            let mut when = String::new();
            if let Some(until) = &w.until {
                when.push_str(&format!(" until {until}"));
            }
            if let Some(owner) = &w.owner {
                when.push_str(&format!(" by {}", escape_controls(owner)));
            }
            writeln!(
                page,
                "  {}  waived on {}{when} ({}): {}",
                w.rule,
                plural(w.hosts, "host", "hosts"),
                escape_controls(&w.place),
                escape_controls(&w.reason)
            );
        }
    }
    page.line("\nRules: hosts per status");
    // The waived column only where a site profile waived something.
    let statuses = FindingStatus::ALL
        .into_iter()
        .filter(|s| *s != FindingStatus::Waived || report.rules.iter().any(|r| r.hosts.waived > 0));
    let statuses: Vec<FindingStatus> = statuses.collect();
    let width = report.rules.iter().map(|r| r.rule.len()).max().unwrap_or(4);
    write!(page, "  {:<width$}", "rule");
    for &status in &statuses {
        write!(page, " {:>8}", status.name());
    }
    page.blank();
    for rule in &report.rules {
        write!(page, "  {:<width$}", rule.rule);
        for &status in &statuses {
            write!(page, " {:>8}", rule.hosts.get(status));
        }
        page.blank();
    }
    if !report.skipped.is_empty() {
        writeln!(page, "\nSkipped ({}):", report.skipped.len());
        for skipped in &report.skipped {
            writeln!(page, "  {}", escape_controls(&skipped.problem));
        }
    }
    page.into_string()
}

fn group_text(page: &mut Page, group: &Group) {
    let key = |field: &str| group.key.get(field).map_or("?", String::as_str);
    writeln!(
        page,
        "\nGroup {}: {}: {} × {}, {}",
        group.id,
        plural(group.hosts.len(), "host", "hosts"),
        escape_controls(key("cpu.model")),
        match key("topology.sockets") {
            "1" => "1 socket".to_string(),
            n => format!("{} sockets", escape_controls(n)),
        },
        escape_controls(key("firmware.system")),
    );
    if !group.split.is_empty() {
        writeln!(
            page,
            "  no majority (no outliers judged): {}",
            escape_controls(&group.split.join(", "))
        );
    }
    measurements_text(page, group);
    if group.outliers.is_empty() {
        page.line("  no outliers: every host agrees with the group");
        return;
    }
    writeln!(page, "  outliers ({}):", group.outliers.len());
    for outlier in &group.outliers {
        let host = escape_controls(&outlier.host);
        for (i, difference) in outlier.differences.iter().enumerate() {
            let name = if i == 0 { host.as_ref() } else { "" };
            writeln!(
                page,
                "    {name:<12} {}: {}; group: {}",
                escape_controls(&difference.field),
                escape_controls(&difference.value),
                escape_controls(&difference.group),
            );
        }
    }
}

fn measurements_text(page: &mut Page, group: &Group) {
    for m in &group.measurements {
        let fences = match (m.low_fence, m.high_fence) {
            (Some(low), Some(high)) => format!("fences {low:.0} to {high:.0}"),
            _ => "too few hosts to judge".to_string(),
        };
        writeln!(
            page,
            "  {} ({}, {}): min {:.0}, median {:.0}, max {:.0}; {fences}",
            escape_controls(&m.metric),
            m.unit,
            plural(m.hosts, "host", "hosts"),
            m.min,
            m.median,
            m.max,
        );
        for outside in &m.outside {
            writeln!(
                page,
                "    outside: {} {:.0} {}",
                escape_controls(&outside.host),
                outside.value,
                m.unit
            );
        }
    }
}
