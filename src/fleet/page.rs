//! The text page of `lowlat fleet report`: a summary line, each group with its outliers field
//! by field and its measured figures with the hosts outside them, the rules' tallies, and the
//! files left out. Every value from a snapshot is escaped
//! (a host name could carry a newline or a terminal escape).

use std::fmt::Write;

use super::group::{FleetReport, Group};
use crate::audit::FindingStatus;
use crate::text::escape_controls;
use crate::units::plural;

/// The whole page.
pub fn render(report: &FleetReport) -> String {
    let mut page = String::new();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let _ = writeln!(
        page,
        "lowlat fleet report: {}, {} (profile {}), {}, {}, {}",
        plural(report.hosts, "host", "hosts"),
        plural(report.groups.len(), "group", "groups"),
        report.profile,
        plural(report.outliers(), "outlier", "outliers"),
        plural(
            report.outside(),
            "measurement outside",
            "measurements outside"
        ),
        plural(report.skipped.len(), "file skipped", "files skipped"),
    );
    for group in &report.groups {
        render_group(&mut page, group);
    }
    let _ = writeln!(page, "\nRules: hosts per status");
    let statuses = FindingStatus::ALL;
    let width = report.rules.iter().map(|r| r.rule.len()).max().unwrap_or(4);
    let _ = write!(page, "  {:<width$}", "rule");
    for status in statuses {
        let _ = write!(page, " {:>8}", status.name());
    }
    page.push('\n');
    for rule in &report.rules {
        let _ = write!(page, "  {:<width$}", rule.rule);
        for status in statuses {
            let _ = write!(page, " {:>8}", rule.hosts.get(status));
        }
        page.push('\n');
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(page, "\nSkipped ({}):", report.skipped.len());
        for skipped in &report.skipped {
            let _ = writeln!(page, "  {}", escape_controls(&skipped.problem));
        }
    }
    page
}

fn render_group(page: &mut String, group: &Group) {
    let key = |field: &str| group.key.get(field).map_or("?", String::as_str);
    let _ = writeln!(
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
        let _ = writeln!(
            page,
            "  no majority (no outliers judged): {}",
            escape_controls(&group.split.join(", "))
        );
    }
    render_measurements(page, group);
    if group.outliers.is_empty() {
        let _ = writeln!(page, "  no outliers: every host agrees with the group");
        return;
    }
    let _ = writeln!(page, "  outliers ({}):", group.outliers.len());
    for outlier in &group.outliers {
        let host = escape_controls(&outlier.host);
        for (i, difference) in outlier.differences.iter().enumerate() {
            let name = if i == 0 { host.as_ref() } else { "" };
            let _ = writeln!(
                page,
                "    {name:<12} {}: {}; group: {}",
                escape_controls(&difference.field),
                escape_controls(&difference.value),
                escape_controls(&difference.group),
            );
        }
    }
}

fn render_measurements(page: &mut String, group: &Group) {
    for m in &group.measurements {
        let fences = match (m.low_fence, m.high_fence) {
            (Some(low), Some(high)) => format!("fences {low:.0} to {high:.0}"),
            _ => "too few hosts to judge".to_string(),
        };
        let _ = writeln!(
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
            let _ = writeln!(
                page,
                "    outside: {} {:.0} {}",
                escape_controls(&outside.host),
                outside.value,
                m.unit
            );
        }
    }
}
