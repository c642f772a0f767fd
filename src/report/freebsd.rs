//! The printers of a FreeBSD machine read from its capture: inventory, the `freebsd-router`
//! audit and the plan's summary.

use crate::text::Page;

use crate::audit::Finding;
use crate::audit::rules::freebsd as profile;
use crate::document::{Document, Kind};
use crate::machine::cpulist::CpuSet;
use crate::machine::freebsd::FreeBsdMachine;
use crate::plan::freebsd::{FreeBsdPlan, SCRIPT_PATH};
use crate::report::audit::{View, render_findings};
use crate::tuning::profile_name::ProfileName;

fn row(out: &mut Page, label: &str, text: &str) {
    writeln!(out, "{label:<11}{text}");
}

/// `lowlat inventory` of a FreeBSD capture.
pub fn inventory_text(m: &FreeBsdMachine) -> String {
    let mut out = Page::new();
    row(&mut out, "host", &format!("{} (FreeBSD capture)", m.host));
    if let Some(uname) = &m.uname {
        row(&mut out, "kernel", uname);
    }
    let t = &m.topology;
    let threads = t.cores.iter().map(CpuSet::len).max().unwrap_or(1);
    row(
        &mut out,
        "cpus",
        &format!(
            "{} CPUs ({}), {} cores, {} thread(s) per core, {} NUMA domain(s)",
            m.ncpu,
            t.cpus.to_list(),
            t.cores.len(),
            threads,
            t.domains.len()
        ),
    );
    for (index, domain) in t.domains.iter().enumerate() {
        row(
            &mut out,
            "",
            &format!("domain {index}: CPUs {}", domain.to_list()),
        );
    }
    for nic in &m.nics {
        let queues: Vec<String> = nic
            .queue_irqs
            .iter()
            .filter_map(|irq| m.interrupt(*irq))
            .map(|i| {
                format!(
                    "irq{} {} on {}",
                    i.irq,
                    i.queue
                        .as_ref()
                        .map_or(String::new(), |q| format!("q{}", q.queue)),
                    i.cpus.as_ref().map_or("?".into(), CpuSet::to_list)
                )
            })
            .collect();
        let mut domain = nic
            .domain
            .map_or(String::new(), |d| format!(" (domain {d})"));
        if let Some(q) = nic.iflib_queues {
            domain += &format!(" ({} rx, {} tx queues)", q.rx, q.tx);
        }
        row(
            &mut out,
            "nic",
            &format!("{}{domain}: {}", nic.name, queues.join(", ")),
        );
    }
    let other = m.interrupts.iter().filter(|i| i.queue.is_none()).count();
    row(
        &mut out,
        "irqs",
        &format!(
            "{} interrupts: {} NIC queue(s), {other} other",
            m.interrupts.len(),
            m.interrupts.len() - other
        ),
    );
    let pinned = m
        .kernel_threads
        .iter()
        .filter(|t| t.cpus.as_ref().is_some_and(|c| c.len() == 1))
        .count();
    row(
        &mut out,
        "kthreads",
        &format!(
            "{} kernel threads, {pinned} pinned to one CPU",
            m.kernel_threads.len()
        ),
    );
    for name in [
        "net.isr.dispatch",
        "net.isr.direct",
        "net.isr.maxthreads",
        "net.isr.bindthreads",
    ] {
        if let Some(value) = m.sysctl(name) {
            row(&mut out, "sysctl", &format!("{name}={value}"));
        }
    }
    for warning in &m.warnings {
        row(&mut out, "warning", warning);
    }
    out.into_string()
}

/// `lowlat audit` of a FreeBSD capture: the findings `view` shows.
pub fn audit_text(m: &FreeBsdMachine, findings: &[Finding], view: &View) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat audit, profile {}: {}",
        profile::PROFILE,
        profile::SUMMARY
    );
    writeln!(
        out,
        "machine:   {} (FreeBSD capture, {} CPUs)",
        m.host, m.ncpu
    );
    render_findings(&mut out, findings, view);
    if !m.warnings.is_empty() {
        writeln!(
            out,
            "{} warning(s) while reading the capture (see inventory)",
            m.warnings.len()
        );
    }
    out.into_string()
}

/// The summary `lowlat plan` prints for a FreeBSD capture.
pub fn plan_text(plan: &FreeBsdPlan) -> String {
    let mut out = Page::new();
    writeln!(
        out,
        "lowlat plan for {} (FreeBSD, {} CPUs)",
        plan.host, plan.ncpu
    );
    writeln!(out, "\nNIC queue interrupts ({}):", plan.irqs.len());
    for b in &plan.irqs {
        let was = b.captured.as_ref().map_or("?".into(), CpuSet::to_list);
        writeln!(
            out,
            "  {:<14} irq {:<5} CPU {:<3} (was {was})",
            b.name, b.irq, b.cpu
        );
    }
    if !plan.threads.is_empty() {
        writeln!(out, "\nkernel threads ({}):", plan.threads.len());
        for t in &plan.threads {
            let was = t.captured.as_ref().map_or("?".into(), CpuSet::to_list);
            writeln!(
                out,
                "  {:<14} tid {:<7} CPU {:<3} (was {was})",
                t.name, t.tid, t.cpu
            );
        }
    }
    out.line("\n/etc/sysctl.conf:");
    for line in &plan.sysctl_conf {
        writeln!(out, "  {}={}", line.name, line.value);
    }
    out.line("/boot/loader.conf:");
    for line in &plan.loader_conf {
        writeln!(out, "  {}=\"{}\"", line.name, line.value);
    }
    for item in &plan.left_out {
        writeln!(out, "left out: {item}");
    }
    writeln!(
        out,
        "\n--out DIR writes the rc.d script ({SCRIPT_PATH}) and the conf lines; on the router:\n  \
         install -m 555 DIR/lowlat_cpuset {SCRIPT_PATH}\n  sysrc lowlat_cpuset_enable=YES\n  \
         service lowlat_cpuset start   # status: verify; stop: put every binding back"
    );
    out.into_string()
}

/// The body of `inventory --json` for a FreeBSD capture: `system` says which model
/// `machine` is.
#[derive(serde::Serialize)]
pub struct InventoryBody<'a> {
    /// Always `freebsd`.
    pub system: &'static str,
    /// The machine.
    pub machine: &'a FreeBsdMachine,
}

/// `lowlat inventory --json` of a FreeBSD capture.
pub fn inventory_document(m: &FreeBsdMachine) -> Document<InventoryBody<'_>> {
    Document::new(
        Kind::Inventory,
        m.host.clone(),
        InventoryBody {
            system: "freebsd",
            machine: m,
        },
    )
}

/// The body of `audit --json` for a FreeBSD capture.
#[derive(serde::Serialize)]
pub struct AuditBody<'a> {
    /// Always `freebsd`.
    pub system: &'static str,
    /// The profile: `freebsd-router`.
    pub profile: ProfileName,
    /// One finding per rule.
    pub findings: &'a [Finding],
}

/// `lowlat audit --json` of a FreeBSD capture.
pub fn audit_document<'a>(m: &FreeBsdMachine, findings: &'a [Finding]) -> Document<AuditBody<'a>> {
    Document::new(
        Kind::Audit,
        m.host.clone(),
        AuditBody {
            system: "freebsd",
            profile: profile::PROFILE,
            findings,
        },
    )
}

/// `audit --explain RULE` of a FreeBSD capture: the rule's finding with every detail.
pub fn explain_text(f: &Finding) -> String {
    let mut out = Page::new();
    writeln!(out, "{}: {}", f.rule, f.title);
    writeln!(
        out,
        "profile:   {} ({} severity, {})",
        profile::PROFILE,
        f.severity.name(),
        f.layer.name()
    );
    writeln!(out, "sources:   {}", f.sources.join("; "));
    writeln!(out, "here:      {} — {}", f.status.name(), f.observed);
    writeln!(out, "expected:  {}", f.expected);
    writeln!(out, "evidence:  {}", f.evidence.join(", "));
    for line in &f.details {
        writeln!(out, "           {line}");
    }
    if let Some(fix) = &f.remediation.manual {
        writeln!(out, "fix:       {fix}");
    }
    out.into_string()
}
