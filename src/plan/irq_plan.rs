//! The IRQ plan: every movable IRQ to housekeeping CPUs, NIC queue IRQs spread over the
//! housekeeping CPUs of the NIC's NUMA node, and what cannot be moved.
//!
//! NIC queues follow the rule of the FreeBSD igb guide (seeds/004): queue `q` of the `i`-th NIC
//! goes to CPU `(i + q) mod n` of the NIC's housekeeping CPUs, so that the queue 0 of every NIC
//! does not land on the same CPU. The housekeeping CPUs of a node are ordered one thread per
//! core first, so consecutive queues use distinct physical cores before SMT siblings.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::setting::Layer;
use super::sources::{GUIDE, QUEUE_GUIDE};
use super::{Draft, Inputs, Plan, setting};
use crate::machine::irq::{Irq, IrqClass, Irqs};
use crate::machine::topology::Topology;
use crate::machine::{Avail, CpuSet};
use crate::sysroot::natural_cmp;

/// The `id` prefix of IRQ settings.
pub const PREFIX: &str = "irq:";

/// The id of the default affinity of new IRQs.
pub const DEFAULT_ID: &str = "irq:default:affinity";

/// The IRQ number of an `irq:<N>:affinity` id.
pub fn number(id: &str) -> Option<u32> {
    id.strip_prefix(PREFIX)?
        .strip_suffix(":affinity")?
        .parse()
        .ok()
}

/// Adds the IRQ settings: the default affinity, then every numbered IRQ.
pub fn plan(inputs: &Inputs, draft: &mut Draft) {
    let hk = &inputs.partition.housekeeping;
    let iso = &inputs.partition.isolated;
    draft.add(setting(
        DEFAULT_ID,
        hk.to_mask(),
        Layer::Runtime,
        "IRQs set up from now on start on the housekeeping CPUs.",
        format!("{GUIDE} §4.3.3 (step 7); TuneD cpu-partitioning profile ([scheduler])"),
    ));
    let irqs = match &inputs.machine.irqs {
        Avail::Available(irqs) => irqs,
        Avail::Unavailable { unavailable } => {
            draft.skip(
                setting(
                    "irq:*:affinity",
                    hk.to_list(),
                    Layer::Runtime,
                    "Every movable IRQ to the housekeeping CPUs.",
                    format!("{GUIDE} §4.3.3 (step 7)"),
                ),
                format!("the IRQs could not be read: {unavailable}"),
            );
            return;
        }
    };
    let topology = &inputs.machine.topology;
    let spread = nic_spread(irqs, topology, hk);
    for irq in &irqs.irqs {
        let name = actions(irqs, irq);
        let reaches_isolated = irq
            .affinity
            .get()
            .into_iter()
            .chain(irq.effective_affinity.get())
            .any(|cpus| cpus.intersects(iso));
        match &irq.class {
            IrqClass::Timer => {
                if reaches_isolated {
                    draft.unmovable(
                        format!("irq {} ({name})", irq.number),
                        "a timer interrupt, fixed to its CPU or per CPU; nohz_full keeps the tick of isolated CPUs quiet",
                    );
                }
            }
            IrqClass::Storage { managed: true, .. } => {
                if reaches_isolated {
                    draft.unmovable(
                        format!("irq {} ({name})", irq.number),
                        "a kernel-managed queue vector, whose affinity cannot be written; isolcpus=managed_irq keeps it off the isolated CPUs from the next boot",
                    );
                }
            }
            _ => {
                if let Some((cpu, why)) = spread.get(&irq.number) {
                    draft.add(setting(
                        format!("{PREFIX}{}:affinity", irq.number),
                        cpu.to_string(),
                        Layer::Runtime,
                        format!("{name}: {why}"),
                        QUEUE_GUIDE,
                    ));
                } else {
                    let (cpus, where_) = local_housekeeping(topology, hk, irq.device_node);
                    draft.add(setting(
                        format!("{PREFIX}{}:affinity", irq.number),
                        cpus.to_list(),
                        Layer::Runtime,
                        format!("{name}: to the housekeeping CPUs{where_}"),
                        format!("{GUIDE} §4.3.3 (step 7)"),
                    ));
                }
            }
        }
    }
}

/// The handler names of an IRQ, comma-separated, or `?`.
fn actions(irqs: &Irqs, irq: &Irq) -> String {
    irqs.row(irq)
        .map(|row| row.actions.join(","))
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "?".into())
}

/// The housekeeping CPUs of `node` when it has some, else all of them; with the words saying
/// which.
fn local_housekeeping(topology: &Topology, hk: &CpuSet, node: Option<u32>) -> (CpuSet, String) {
    if let Some(node) = node
        && let Some(n) = topology.nodes.iter().find(|n| n.id == node)
    {
        let local = n.cpus.intersection(hk);
        if !local.is_empty() {
            return (local, format!(" of node {node}, where its device is"));
        }
    }
    (hk.clone(), String::new())
}

/// `cpus` ordered one thread per core first: the first thread of every core, then the second
/// ones, so consecutive picks land on distinct physical cores while there are any.
fn cores_first(topology: &Topology, cpus: &CpuSet) -> Vec<u32> {
    let mut order: Vec<(usize, u32)> = cpus
        .iter()
        .map(|cpu| {
            let thread = topology
                .siblings_of(cpu)
                .iter()
                .position(|c| c == cpu)
                .unwrap_or(0);
            (thread, cpu)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, cpu)| cpu).collect()
}

/// The CPU of every NIC queue IRQ, with the reason: queue `q` of the `i`-th NIC (NICs in
/// natural name order) on CPU `(i + q) mod n` of the NIC's node-local housekeeping CPUs.
fn nic_spread(irqs: &Irqs, topology: &Topology, hk: &CpuSet) -> BTreeMap<u32, (u32, String)> {
    let mut nics: BTreeMap<&str, Vec<(&Irq, u32)>> = BTreeMap::new();
    for irq in &irqs.irqs {
        if let IrqClass::NicQueue { nic, queue, .. } = &irq.class {
            nics.entry(nic).or_default().push((irq, *queue));
        }
    }
    let mut names: Vec<&str> = nics.keys().copied().collect();
    names.sort_by(|a, b| natural_cmp(a, b));
    let mut out = BTreeMap::new();
    for (index, name) in names.iter().enumerate() {
        let Some(queues) = nics.get(name) else {
            continue;
        };
        let node = queues.iter().find_map(|(irq, _)| irq.device_node);
        let (cpus, where_) = local_housekeeping(topology, hk, node);
        let order = cores_first(topology, &cpus);
        let n = order.len();
        for (irq, queue) in queues {
            let slot = (index + *queue as usize) % n.max(1);
            let Some(&cpu) = order.get(slot) else {
                continue;
            };
            out.insert(
                irq.number,
                (
                    cpu,
                    format!(
                        "queue {queue} of NIC {name} (NIC #{index}): (NIC {index} + queue {queue}) mod {n} housekeeping CPUs{where_} = CPU {cpu}"
                    ),
                ),
            );
        }
    }
    out
}

/// The IRQs the plan pins to a single CPU (the NIC queue spread), in ascending order.
pub fn pinned_irqs(plan: &Plan) -> Vec<u32> {
    let mut irqs: Vec<u32> = plan
        .settings
        .iter()
        .filter_map(|s| {
            let n = number(&s.id)?;
            let cpus: CpuSet = s.value.parse().ok()?;
            (cpus.len() == 1).then_some(n)
        })
        .collect();
    irqs.sort_unstable();
    irqs
}

/// irq-plan.txt: the planned affinity of every IRQ with its reason, then what stays.
pub fn render(plan: &Plan, header: &str) -> String {
    let mut out = String::from(header);
    out.push_str(
        "#\n# Applied by `lowlat apply` (and at every boot by lowlat-runtime.service).\n\n",
    );
    if let Some(default) = plan.setting(DEFAULT_ID) {
        let _ = writeln!(
            out,
            "default_smp_affinity  {}    {}",
            default.value, default.rationale
        );
    }
    let mut irqs: Vec<(u32, &str, &str)> = plan
        .settings
        .iter()
        .filter_map(|s| Some((number(&s.id)?, s.value.as_str(), s.rationale.as_str())))
        .collect();
    irqs.sort_unstable_by_key(|(n, _, _)| *n);
    if irqs.is_empty() {
        out.push_str("\nNo numbered IRQ to move.\n");
    } else {
        let _ = writeln!(out, "\n{:>5}  {:<12}  why", "irq", "cpus");
        for (n, cpus, why) in irqs {
            let _ = writeln!(out, "{n:>5}  {cpus:<12}  {why}");
        }
    }
    let stays: Vec<_> = plan
        .unmovable
        .iter()
        .filter(|u| u.what.starts_with("irq"))
        .collect();
    if !stays.is_empty() {
        out.push_str("\nNot moved:\n");
        for u in stays {
            let _ = writeln!(out, "  {}: {}", u.what, u.reason);
        }
    }
    out
}
