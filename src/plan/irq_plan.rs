//! The IRQ plan: every movable IRQ to housekeeping CPUs, NIC queue IRQs spread over the
//! housekeeping CPUs of the NIC's NUMA node, and what cannot be moved.
//!
//! NIC queues follow the rule of the FreeBSD igb guide (\[S004\]): queue `q` of the `i`-th NIC
//! goes to CPU `(i + q) mod n` of the NIC's housekeeping CPUs, so that the queue 0 of every NIC
//! does not land on the same CPU. The housekeeping CPUs of a node are ordered one thread per
//! core first, so consecutive queues use distinct physical cores before SMT siblings.

use crate::text::{Page, escape_controls};
use std::collections::BTreeMap;

use super::sources::{GUIDE, QUEUE_GUIDE};
use super::{Draft, Inputs, Plan, setting, write_unmovable};
use crate::machine::irq::{Irq, IrqClass, Irqs};
use crate::machine::topology::Topology;
use crate::machine::{Avail, CpuSet};
use crate::sysroot::natural_cmp;
use crate::tuning::nearby::{Near, NearHousekeeping};
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::SettingId;

/// The IRQ number of an `irq:<N>:affinity` id.
pub(crate) fn number(id: &SettingId) -> Option<u32> {
    match id {
        SettingId::Irq(irq) => Some(*irq),
        _ => None,
    }
}

/// Adds the IRQ settings: the default affinity, then every numbered IRQ.
pub(crate) fn plan(inputs: &Inputs, draft: &mut Draft) {
    let hk = &inputs.partition.housekeeping;
    let iso = &inputs.partition.isolated;
    draft.add(setting(
        SettingId::IrqDefault,
        hk.to_mask(inputs.partition.nr_cpus),
        Layer::Runtime,
        "IRQs set up from now on start on the housekeeping CPUs.",
        format!("{GUIDE} §4.3.3 (step 7); TuneD cpu-partitioning profile ([scheduler])"),
    ));
    let irqs = match &inputs.machine.irqs {
        Avail::Available(irqs) => irqs,
        Avail::Unavailable { unavailable } => {
            draft.skip(
                setting(
                    SettingId::EveryIrq,
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
    let mut near = NearHousekeeping::new(topology, hk);
    let spread = nic_spread(irqs, topology, &mut near);
    let mut managed: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
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
            IrqClass::Storage {
                managed: true,
                device,
                ..
            } => {
                if reaches_isolated {
                    managed.entry(device.as_str()).or_default().push(irq.number);
                }
            }
            _ => {
                if let Some((cpu, why)) = spread.get(&irq.number) {
                    draft.add(setting(
                        SettingId::Irq(irq.number),
                        cpu.to_string(),
                        Layer::Runtime,
                        format!("{name}: {why}"),
                        QUEUE_GUIDE,
                    ));
                } else {
                    let (cpus, where_) = local_housekeeping(&mut near, irq_node(irq));
                    draft.add(setting(
                        SettingId::Irq(irq.number),
                        cpus.list.clone(),
                        Layer::Runtime,
                        format!("{name}: to the housekeeping CPUs{where_}"),
                        format!("{GUIDE} §4.3.3 (step 7)"),
                    ));
                }
            }
        }
    }
    for (device, numbers) in managed {
        draft.unmovable(
            format!(
                "{} {} ({device} queues)",
                if numbers.len() == 1 { "irq" } else { "irqs" },
                ranges(&numbers)
            ),
            "kernel-managed queue vectors, whose affinity cannot be written; isolcpus=managed_irq keeps them off the isolated CPUs from the next boot",
        );
    }
}

/// Numbers as ranges: `41-47,49-55`.
fn ranges(numbers: &[u32]) -> String {
    let mut sorted = numbers.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut iter = sorted.into_iter().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if end == start {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// Adds the RPS mask of every interface with receive queues (loopback aside): where RPS is on,
/// it steers only to the housekeeping CPUs of the interface's node; where it is off, it stays
/// off (the NIC's own queues, spread by the IRQ plan, already share the load, and RPS would add
/// an inter-processor interrupt per packet batch).
pub(crate) fn plan_rps(inputs: &Inputs, draft: &mut Draft) {
    let hk = &inputs.partition.housekeeping;
    let source = "TuneD/OpenShift performance profiles (RPS masks); Linux networking/scaling.rst";
    let interfaces = match &inputs.machine.net {
        Avail::Available(interfaces) => interfaces,
        Avail::Unavailable { unavailable } => {
            draft.skip(
                setting(
                    SettingId::Rps("*".to_string()),
                    hk.to_mask(inputs.partition.nr_cpus),
                    Layer::Runtime,
                    "RPS steers only to housekeeping CPUs.",
                    source,
                ),
                format!("the network interfaces could not be read: {unavailable}"),
            );
            return;
        }
    };
    for iface in interfaces
        .iter()
        .filter(|i| i.name != "lo" && !i.rx_queues.is_empty())
    {
        let current = iface.rps_union();
        let (value, why) = if current.is_empty() {
            (
                CpuSet::new().to_mask(inputs.partition.nr_cpus),
                "RPS stays off: the receive queues' own IRQs carry the packets to housekeeping CPUs".to_string(),
            )
        } else {
            let mut near = NearHousekeeping::new(&inputs.machine.topology, hk);
            let (cpus, where_) = local_housekeeping(
                &mut near,
                iface.numa_node.map(|n| (n, "where its device is")),
            );
            (
                cpus.cpus.to_mask(inputs.partition.nr_cpus),
                format!(
                    "RPS steers received packets only to the housekeeping CPUs{where_}, never to isolated ones"
                ),
            )
        };
        draft.add(setting(
            SettingId::Rps(iface.name.clone()),
            value,
            Layer::Runtime,
            format!(
                "{} ({} receive queues): {why}.",
                iface.name,
                iface.rx_queues.len()
            ),
            source,
        ));
    }
}

/// The handler names of an IRQ, comma-separated, or `?`.
fn actions(irqs: &Irqs, irq: &Irq) -> String {
    irqs.row(irq)
        .map(|row| row.actions.join(","))
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| "?".into())
}

/// The NUMA node an IRQ belongs to: its device's (from sysfs), else its descriptor's
/// (`/proc/irq/N/node`, where the kernel allocates MSI vectors of a device), with the words
/// saying which.
fn irq_node(irq: &Irq) -> Option<(u32, &'static str)> {
    irq.device_node
        .map(|n| (n, "where its device is"))
        .or_else(|| irq.node.map(|n| (n, "the node of its IRQ descriptor")))
}

/// The housekeeping CPUs of `node` when it has some, else all of them; with the words saying
/// which.
fn local_housekeeping<'n>(
    near: &'n mut NearHousekeeping,
    node: Option<(u32, &str)>,
) -> (&'n Near, String) {
    let cpus = near.of(node.map(|(n, _)| n));
    let where_ = match node {
        Some((node, basis)) if cpus.local => format!(" of node {node}, {basis}"),
        _ => String::new(),
    };
    (cpus, where_)
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
fn nic_spread(
    irqs: &Irqs,
    topology: &Topology,
    near: &mut NearHousekeeping,
) -> BTreeMap<u32, (u32, String)> {
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
        let node = queues.iter().find_map(|(irq, _)| irq_node(irq));
        let (cpus, where_) = local_housekeeping(near, node);
        let order = cores_first(topology, &cpus.cpus);
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

/// The IRQs the plan pins one by one by the NIC queue spread (their source is the queue
/// rule), in ascending order.
pub(crate) fn pinned_irqs(plan: &Plan) -> Vec<u32> {
    let mut irqs: Vec<u32> = plan
        .settings
        .iter()
        .filter(|s| s.source == QUEUE_GUIDE)
        .filter_map(|s| number(&s.id))
        .collect();
    irqs.sort_unstable();
    irqs
}

/// irq-plan.txt: the planned affinity of every IRQ with its reason, then what stays.
pub(crate) fn render(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    out.text("#\n# Applied by `lowlat apply` (and at every boot by lowlat-runtime.service).\n\n");
    if let Some(default) = plan.setting(&SettingId::IrqDefault) {
        writeln!(
            out,
            "default_smp_affinity  {}    {}",
            escape_controls(&default.value),
            escape_controls(&default.rationale)
        );
    }
    let mut irqs: Vec<(u32, &str, &str)> = plan
        .settings
        .iter()
        .filter_map(|s| Some((number(&s.id)?, s.value.as_str(), s.rationale.as_str())))
        .collect();
    irqs.sort_unstable_by_key(|(n, _, _)| *n);
    if irqs.is_empty() {
        out.text("\nNo numbered IRQ to move.\n");
    } else {
        writeln!(out, "\n{:>5}  {:<12}  why", "irq", "cpus");
        for (n, cpus, why) in irqs {
            writeln!(
                out,
                "{n:>5}  {:<12}  {}",
                escape_controls(cpus),
                escape_controls(why)
            );
        }
    }
    let rps: Vec<_> = plan
        .settings
        .iter()
        .filter(|s| matches!(s.id, SettingId::Rps(_)))
        .collect();
    if !rps.is_empty() {
        out.text("\nReceive packet steering (every rx queue of the interface):\n");
        for s in rps {
            writeln!(
                out,
                "  {} = {}    {}",
                escape_controls(&s.id.to_string()),
                escape_controls(&s.value),
                escape_controls(&s.rationale)
            );
        }
    }
    write_unmovable(&mut out, plan, "irq", "Not moved");
    out.into_string()
}

#[cfg(test)]
mod tests {
    use crate::machine::Machine;
    use crate::machine::nic::recorded;
    use crate::plan::{self, PlanRequest, findings};
    use crate::tuning::setting_id::SettingId;

    /// The recorded E810 on node 1 of the two-node machine, CPUs 2-3,6-7 isolated: the plan
    /// gives each queue IRQ one housekeeping CPU of node 1 (4 and 5) in turn, as
    /// LL-NIC-IRQ-NUMA wants them on the NIC's node, and the misc IRQ both of them.
    #[test]
    fn the_queue_irqs_of_a_recorded_nic_spread_over_its_nodes_housekeeping_cpus() {
        let tree = recorded::two_node_machine();
        let machine = Machine::read(&tree.root());
        let mut request = PlanRequest::default();
        request.partition.isolate = Some("2-3,6-7".parse().unwrap());
        let profile = findings::audit_profile(request.profile).unwrap();
        let plan = plan::build(&machine, &request, |partition| {
            findings::profile_settings(&machine, &profile, partition)
        })
        .unwrap();
        assert_eq!(plan.partition.housekeeping.to_list(), "0-1,4-5");
        let affinity = |irq: u32| {
            plan.setting(&SettingId::Irq(irq))
                .map(|s| s.value.as_str())
                .unwrap_or("none")
        };
        let planned: Vec<(u32, &str)> = (139..=143).map(|irq| (irq, affinity(irq))).collect();
        assert_eq!(
            planned,
            [(139, "4-5"), (140, "4"), (141, "5"), (142, "4"), (143, "5")]
        );
        // Within what the rule asks for each queue IRQ: the housekeeping CPUs of node 1.
        let mut p =
            crate::audit::profile::load(crate::tuning::profile_name::ProfileName::LowLatency)
                .unwrap();
        p.entries.retain(|e| e.rule.id == "LL-NIC-IRQ-NUMA");
        let part =
            crate::audit::partition::choose(&machine, request.partition.isolate.as_ref()).unwrap();
        let audit = crate::audit::run(&machine, &p, &part);
        let asked: Vec<(String, &str)> = audit.findings[0]
            .remediation
            .settings
            .iter()
            .map(|s| (s.id.to_string(), s.value.as_str()))
            .collect();
        let expected: Vec<(String, &str)> = (140..=143)
            .map(|irq| (format!("irq:{irq}:affinity"), "4-5"))
            .collect();
        assert_eq!(asked, expected);
    }
}
