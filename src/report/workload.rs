//! `lowlat audit --pid/--comm` renderings: the per-thread placement report and its JSON
//! document (kind `audit-workload`).

use crate::text::Page;
use serde::Serialize;

use crate::audit::AuditPartition;
use crate::audit::workload::{Problem, WorkloadAudit};
use crate::document::{self, Document, Kind};
use crate::machine::Machine;
use crate::text::escape_controls;

/// The body of the workload document.
#[derive(Debug, Serialize)]
pub(crate) struct WorkloadBody<'a> {
    /// The partition the threads were judged against.
    pub partition: &'a AuditPartition,
    /// The threads, processes and gone processes with their problems.
    #[serde(flatten)]
    pub audit: &'a WorkloadAudit,
}

/// The JSON document.
pub(crate) fn document<'a>(
    machine: &Machine,
    partition: &'a AuditPartition,
    audit: &'a WorkloadAudit,
) -> Document<WorkloadBody<'a>> {
    Document::new(
        Kind::AuditWorkload,
        document::host(machine.kernel.hostname.get()),
        WorkloadBody { partition, audit },
    )
}

/// The terminal report: one line per thread, its problems and fixes under it.
pub(crate) fn text(partition: &AuditPartition, audit: &WorkloadAudit) -> String {
    let mut out = Page::from(format!("partition: {}\n", partition.describe()));
    for gone in &audit.gone {
        writeln!(
            out,
            "pid {}: not audited ({})",
            gone.pid,
            escape_controls(&gone.reason)
        );
    }
    for process in &audit.processes {
        let memory: Vec<String> = process
            .memory_kib_per_node
            .iter()
            .map(|(node, kib)| format!("node {node} {kib} KiB"))
            .collect();
        let kib = |v: Option<u64>| v.map_or("?".to_string(), |k| format!("{k} KiB"));
        writeln!(
            out,
            "\nprocess {} {}: locked {}, hugetlb {}, memory {}",
            process.pid,
            escape_controls(&process.comm),
            kib(process.locked_kib),
            kib(process.hugetlb_kib),
            if memory.is_empty() {
                "unknown".to_string()
            } else {
                memory.join(", ")
            }
        );
        if process.threads_gone > 0 {
            writeln!(
                out,
                "  {} thread(s) exited while it was read",
                process.threads_gone
            );
        }
        problems(&mut out, "  ", &process.problems);
        writeln!(
            out,
            "  {:<8} {:<16} {:<10} {:>4} {:>6} {:<8} problems",
            "tid", "name", "allowed", "cpu", "busy", "policy"
        );
        for t in audit.threads.iter().filter(|t| t.pid == process.pid) {
            let share = t
                .cpu_share
                .map_or("?".to_string(), |s| format!("{:.0}%", s * 100.0));
            let verdict = if t.problems.is_empty() {
                "ok".to_string()
            } else {
                t.problems.len().to_string()
            };
            writeln!(
                out,
                "  {:<8} {:<16} {:<10} {:>4} {:>6} {:<8} {verdict}",
                t.tid,
                escape_controls(&t.comm),
                t.cpus_allowed.as_deref().unwrap_or("?"),
                t.cpu,
                share,
                t.scheduling
            );
            problems(&mut out, "           ", &t.problems);
        }
    }
    let count = audit
        .threads
        .iter()
        .filter(|t| !t.problems.is_empty())
        .count();
    writeln!(
        out,
        "\n{count} of {} threads with placement problems",
        audit.threads.len()
    );
    out.into_string()
}

fn problems(out: &mut Page, indent: &str, problems: &[Problem]) {
    for p in problems {
        writeln!(out, "{indent}{}: {}", p.kind, p.what);
        writeln!(out, "{indent}  fix: {}", p.fix);
    }
}
