//! The plan of a FreeBSD router (`lowlat --snapshot CAPTURE plan`): each NIC queue's
//! interrupt on its own CPU and the busy kernel threads pinned, rendered as the rc.d script
//! `/usr/local/etc/rc.d/lowlat_cpuset` (start binds and records what it replaces, stop puts it
//! back, status verifies), with the loader.conf and sysctl.conf lines the profile wants.
//!
//! The spreading rule generalises `[S004]`'s `(nic + queue) % ncpu`: a NIC's queues go to the
//! CPUs of its own NUMA domain, one queue per physical core before any SMT sibling, and
//! queue `q` of the `n`-th NIC of a domain to core `(n + q) % cores`, so that the NICs'
//! queue 0s (which carry the single-flow traffic, PPPoE and GRE in `[S004]`) sit on different
//! cores.

use crate::text::{Page, is_host_name};
use serde::Serialize;
use std::collections::BTreeMap;

use crate::audit::rules::freebsd::PINNED_THREADS;
use crate::machine::cpulist::CpuSet;
use crate::machine::freebsd::FreeBsdMachine;

/// Where the rc.d script is installed.
pub const SCRIPT_PATH: &str = "/usr/local/etc/rc.d/lowlat_cpuset";

/// One NIC queue interrupt and the CPU the plan gives it.
#[derive(Debug, Clone, Serialize)]
pub struct IrqBinding {
    /// The interrupt's name in `vmstat -ai` (`igb0:que 0`), which the script finds it by:
    /// IRQ numbers change from boot to boot.
    pub name: String,
    /// Its IRQ number in the capture.
    pub irq: u32,
    /// The interface (`igb0`).
    pub nic: String,
    /// The queue number.
    pub queue: u32,
    /// The CPU planned.
    pub cpu: u32,
    /// The CPUs it was bound to in the capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<CpuSet>,
}

/// One kernel thread and the CPU the plan pins it to.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadBinding {
    /// The thread's name in `procstat -at` (`dummynet`).
    pub name: String,
    /// Its thread id in the capture.
    pub tid: u32,
    /// The CPU planned.
    pub cpu: u32,
    /// The CPUs it could run on in the capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<CpuSet>,
}

/// One `name="value"` line of loader.conf or `name=value` of sysctl.conf, with its reason.
#[derive(Debug, Clone, Serialize)]
pub struct ConfLine {
    /// The tunable or sysctl.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Why, with the source.
    pub why: String,
}

/// The plan of one FreeBSD machine.
#[derive(Debug, Clone, Serialize)]
pub struct FreeBsdPlan {
    /// The captured host.
    pub host: String,
    /// Its CPU count, which the script checks before binding anything.
    pub ncpu: u32,
    /// NIC queue interrupts, NIC by NIC, queue by queue.
    pub irqs: Vec<IrqBinding>,
    /// Pinned kernel threads.
    pub threads: Vec<ThreadBinding>,
    /// Lines for /boot/loader.conf (read at the next boot).
    pub loader_conf: Vec<ConfLine>,
    /// Lines for /etc/sysctl.conf (also set now with `sysctl NAME=VALUE`).
    pub sysctl_conf: Vec<ConfLine>,
    /// Interrupts and threads left out, with the reason (a name the script could not
    /// carry safely).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// Plans `machine`.
pub fn plan(machine: &FreeBsdMachine) -> FreeBsdPlan {
    let mut left_out = Vec::new();
    let mut irqs = spread_queues(machine);
    irqs.retain(|b| {
        let ok = safe_name(&b.name);
        if !ok {
            left_out.push(format!(
                "irq {} ({:?}): a name the script cannot carry",
                b.irq, b.name
            ));
        }
        ok
    });
    let first_cpu = machine
        .topology
        .domains
        .first()
        .and_then(CpuSet::first)
        .unwrap_or(0);
    let threads = machine
        .kernel_threads
        .iter()
        .filter(|t| PINNED_THREADS.contains(&t.name()) && safe_name(t.name()))
        .map(|t| ThreadBinding {
            name: t.name().to_string(),
            tid: t.tid,
            cpu: first_cpu,
            captured: t.cpus.clone(),
        })
        .collect();
    let eight =
        machine.sysctl("net.isr.dispatch").is_none() && machine.sysctl("net.isr.direct").is_some();
    let sysctl_conf = vec![if eight {
        ConfLine {
            name: "net.isr.direct".into(),
            value: "1".into(),
            why: "packets processed in the interrupt thread of their queue, on the CPU the queue \
                  is bound to, not queued to netisr threads [S004]"
                .into(),
        }
    } else {
        ConfLine {
            name: "net.isr.dispatch".into(),
            value: "direct".into(),
            why: "packets processed in the interrupt thread of their queue, on the CPU the queue \
                  is bound to, not queued to netisr threads [S004]; netisr(9)"
                .into(),
        }
    }];
    let loader_conf = vec![ConfLine {
        name: "net.isr.bindthreads".into(),
        value: "1".into(),
        why: "the netisr threads that remain (deferred protocols) stay on their CPU instead of \
              migrating, the cost [S004] saw with dummynet; netisr(9) (a boot-time tunable)"
            .into(),
    }];
    FreeBsdPlan {
        host: machine.host.clone(),
        ncpu: machine.ncpu,
        irqs,
        threads,
        loader_conf,
        sysctl_conf,
        left_out,
    }
}

/// The CPU of each NIC queue interrupt: NUMA-local first, physical cores before SMT siblings,
/// queue `q` of the `n`-th NIC of a domain on core `(n + q) % cores`.
pub fn spread_queues(machine: &FreeBsdMachine) -> Vec<IrqBinding> {
    let topology = &machine.topology;
    let mut nics_in_domain: BTreeMap<Option<usize>, usize> = BTreeMap::new();
    let mut bindings = Vec::new();
    for nic in &machine.nics {
        let domain = nic
            .domain
            .map(|d| d as usize)
            .filter(|d| *d < topology.domains.len());
        let cpus = domain.map_or(&topology.cpus, |d| &topology.domains[d]);
        // The cores with CPUs here, each as its threads in order.
        let cores: Vec<Vec<u32>> = topology
            .cores
            .iter()
            .map(|core| core.intersection(cpus).iter().collect::<Vec<u32>>())
            .filter(|threads| !threads.is_empty())
            .collect();
        if cores.is_empty() {
            continue;
        }
        let depth = cores.iter().map(Vec::len).max().unwrap_or(1);
        let slot = nics_in_domain.entry(domain).or_default();
        let n = *slot;
        *slot += 1;
        for irq in &nic.queue_irqs {
            let Some(interrupt) = machine.interrupt(*irq) else {
                continue;
            };
            let Some(queue) = &interrupt.queue else {
                continue;
            };
            let q = queue.queue as usize;
            let core = &cores[(n + q) % cores.len()];
            let thread = (q / cores.len()) % depth;
            let cpu = core.get(thread).copied().unwrap_or(core[0]);
            bindings.push(IrqBinding {
                name: interrupt.name.clone(),
                irq: interrupt.irq,
                nic: queue.nic.clone(),
                queue: queue.queue,
                cpu,
                captured: interrupt.cpus.clone(),
            });
        }
    }
    bindings
}

/// Whether a name can go into the script's plan as it is: printable ASCII without quotes,
/// backslashes, tabs or `$`.
fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| {
            c.is_ascii_graphic() && !matches!(c, '\'' | '"' | '\\' | '$' | '`') || c == ' '
        })
}

/// The loader.conf lines.
pub fn render_loader_conf(plan: &FreeBsdPlan) -> String {
    render_conf(&plan.loader_conf, true)
}

/// The sysctl.conf lines.
pub fn render_sysctl_conf(plan: &FreeBsdPlan) -> String {
    render_conf(&plan.sysctl_conf, false)
}

fn render_conf(lines: &[ConfLine], quoted: bool) -> String {
    let mut out = Page::from("# Written by lowlat for a FreeBSD router: append to the file.\n");
    for line in lines {
        writeln!(out, "# {}", line.why);
        if quoted {
            writeln!(out, "{}=\"{}\"", line.name, line.value);
        } else {
            writeln!(out, "{}={}", line.name, line.value);
        }
    }
    out.into_string()
}

/// The rc.d script.
pub fn render_rc_script(plan: &FreeBsdPlan) -> String {
    let mut entries = Page::new();
    for b in &plan.irqs {
        writeln!(entries, "irq\t{}\t{}", b.name, b.cpu);
    }
    for t in &plan.threads {
        writeln!(entries, "thread\t{}\t{}", t.name, t.cpu);
    }
    // The captured host name goes into a comment of a script run as root: only a host name
    // (which holds no `@`, quote or newline) is written.
    let host = if is_host_name(&plan.host) {
        plan.host.as_str()
    } else {
        "a host whose captured name is not a host name"
    };
    fill(
        RC_SCRIPT,
        &[
            ("VERSION", env!("CARGO_PKG_VERSION")),
            ("HOST", host),
            ("NCPU", &plan.ncpu.to_string()),
            ("PLAN", entries.as_str().trim_end()),
        ],
    )
}

/// `template` with each `@NAME@` replaced by the value of `NAME` in `values`, in one pass: a
/// value is never searched for further names (a host name holding `@PLAN@` stays text).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let filled = values.iter().find_map(|(name, value)| {
            let tail = after.strip_prefix(name)?.strip_prefix('@')?;
            Some((*value, tail))
        });
        match filled {
            Some((value, tail)) => {
                out.push_str(value);
                rest = tail;
            }
            None => {
                out.push('@');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The script, with @VERSION@, @HOST@, @NCPU@ and @PLAN@ (lines `KIND<TAB>NAME<TAB>CPUS`) to
/// fill in.
const RC_SCRIPT: &str = include_str!("freebsd_rc.sh");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_filled_in_one_pass() {
        // R2-2 (issue 44): @HOST@ was replaced before @PLAN@, so a host name holding @PLAN@
        // took the plan's lines into the comment and out of it.
        let values = [("HOST", "@PLAN@;x"), ("PLAN", "irq\ta\t1")];
        assert_eq!(
            fill("# @HOST@ @ @NCPU@\nPLAN='@PLAN@'@", &values),
            "# @PLAN@;x @ @NCPU@\nPLAN='irq\ta\t1'@"
        );
    }

    #[test]
    fn names_the_script_cannot_carry_are_refused() {
        assert!(safe_name("igb0:que 0"));
        assert!(safe_name("swi1: netisr 0"));
        for bad in ["a'b", "a\tb", "$(reboot)", "a\nb", "", "`x`"] {
            assert!(!safe_name(bad), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod spread_tests {
    use super::*;
    use crate::machine::freebsd::test_capture::machine;

    fn cpus_of(plan: &[IrqBinding], nic: &str) -> Vec<u32> {
        plan.iter()
            .filter(|b| b.nic == nic)
            .map(|b| b.cpu)
            .collect()
    }

    #[test]
    fn queues_stay_on_their_domain_and_fill_physical_cores_before_siblings() {
        // 2 domains × 4 cores × 2 threads: domain 0 is CPUs 0-7 (cores 0-1, 2-3, 4-5, 6-7).
        let (_dir, m) = machine(2, 4, 2, &[("ix0", 0, 4), ("ix1", 1, 4), ("ix2", 0, 6)]);
        let plan = spread_queues(&m);
        assert_eq!(
            cpus_of(&plan, "ix0"),
            [0, 2, 4, 6],
            "first threads of domain 0's cores"
        );
        assert_eq!(cpus_of(&plan, "ix1"), [8, 10, 12, 14], "domain 1's cores");
        // The second NIC of domain 0 starts one core on; its queues 4 and 5, past the four
        // cores, go to SMT siblings.
        assert_eq!(cpus_of(&plan, "ix2"), [2, 4, 6, 0, 3, 5]);
    }

    #[test]
    fn a_nic_of_unknown_domain_uses_every_cpu_and_queue_0s_differ() {
        let (_dir, m) = machine(
            1,
            4,
            1,
            &[
                ("igb0", 9, 4),
                ("igb1", 9, 4),
                ("igb2", 9, 4),
                ("igb3", 9, 4),
            ],
        );
        let plan = spread_queues(&m);
        let queue0: Vec<u32> = plan
            .iter()
            .filter(|b| b.queue == 0)
            .map(|b| b.cpu)
            .collect();
        assert_eq!(queue0, [0, 1, 2, 3], "(nic + queue) % ncpu, as [S004]");
    }
}
