//! The NIC block: each network device's driver, link, queues, moderation, offloads, steering,
//! clock and IRQs, as `inventory`, `check` and `report` show it.

use std::borrow::Cow;

use crate::text::Page;

use crate::machine::irq::Irqs;
use crate::machine::net::NetInterface;
use crate::machine::nic::{Coalesce, CurrentMax, Features, Nic};
use crate::machine::{Avail, CpuSet, Machine};

/// The block's lines for every interface shown, or why there are none.
pub fn lines(m: &Machine) -> String {
    match blocks(m) {
        Ok(blocks) => blocks.iter().map(InterfaceBlock::text).collect(),
        Err(reason) => reason.to_string(),
    }
}

/// One interface as the block shows it: a heading, then facts, each a label and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceBlock {
    /// The interface (`ens1f0`).
    pub name: String,
    /// Driver, PCI address, node and speed; or why there is nothing more.
    pub heading: String,
    /// The facts, label and text (a text may span lines: one IRQ a line).
    pub facts: Vec<(&'static str, String)>,
}

impl InterfaceBlock {
    /// The interface's lines: `name: heading`, then each fact indented under it.
    pub fn text(&self) -> String {
        let mut out = Page::from(format!("{}: {}\n", self.name, self.heading));
        for (label, text) in &self.facts {
            writeln!(
                out,
                "  {label:<11}{}",
                text.replace('\n', &format!("\n  {:<11}", ""))
            );
        }
        out.into_string()
    }
}

/// Why the machine has no interface block to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoBlocks {
    /// The network interfaces could not be read: why.
    #[error("{0}")]
    Unavailable(String),
    /// Read, and none is a network device.
    #[error("no network device")]
    NoDevice,
}

/// Every network device's block, or why there are none.
pub fn blocks(m: &Machine) -> Result<Vec<InterfaceBlock>, NoBlocks> {
    if let Some(reason) = m.net.reason() {
        return Err(NoBlocks::Unavailable(reason.to_string()));
    }
    let irqs = m.irqs.get();
    let blocks: Vec<InterfaceBlock> = (m.net.get().into_iter().flatten())
        .filter_map(|interface| match &interface.nic {
            Some(nic) => Some(interface_block(interface, nic, irqs)),
            None if interface.device => Some(InterfaceBlock {
                name: interface.name.clone(),
                heading: "no ethtool answers captured (a snapshot or tree taken before lowlat \
                          asked ethtool)"
                    .to_string(),
                facts: Vec::new(),
            }),
            None => None,
        })
        .collect();
    if blocks.is_empty() {
        return Err(NoBlocks::NoDevice);
    }
    Ok(blocks)
}

/// One interface in a `check` document: its answers and the one line `check` prints.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct NicSummary<'a> {
    /// The interface (`ens1f0`).
    pub interface: Cow<'a, str>,
    /// The NUMA node of its device, when known.
    pub numa_node: Option<u32>,
    /// The line `check` prints for it (driver, node, channels, moderation, offloads, clock).
    pub summary: String,
    /// Everything ethtool and sysfs said, as in the inventory document.
    pub nic: Cow<'a, Nic>,
}

/// Every interface ethtool answered about, summarised for `check`.
pub fn summaries(m: &Machine) -> Vec<NicSummary<'_>> {
    m.net
        .get()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let nic = i.nic.as_ref()?;
            // Software interfaces that answer nothing about queues say nothing useful here.
            if !i.device && nic.channels.get().is_none() {
                return None;
            }
            Some(NicSummary {
                interface: Cow::Borrowed(&i.name),
                numa_node: i.numa_node,
                summary: summary_line(i, nic),
                nic: Cow::Borrowed(nic),
            })
        })
        .collect()
}

/// One interface on one line: driver, node, channels, moderation, GRO/LRO, PTP clock.
fn summary_line(interface: &NetInterface, nic: &Nic) -> String {
    let mut parts = vec![
        nic.driver
            .get()
            .map_or("driver unknown".to_string(), |d| d.driver.clone()),
    ];
    parts.push(
        interface
            .numa_node
            .map_or("no NUMA node".into(), |n| format!("node {n}")),
    );
    if let Some(c) = nic.channels.get() {
        let queues = c.rx_queues();
        if queues > 0 {
            parts.push(crate::units::plural(
                queues as usize,
                "rx queue",
                "rx queues",
            ));
        }
    }
    if let Some(text) = nic.coalesce.get().and_then(coalesce_text) {
        parts.push(text);
    }
    if let Some(f) = nic.features.get() {
        let on: Vec<&str> = [("GRO", f.gro), ("LRO", f.lro)]
            .into_iter()
            .filter(|(_, s)| s.is_some_and(|s| s.on))
            .map(|(name, _)| name)
            .collect();
        if !on.is_empty() {
            parts.push(format!("{} on", on.join(", ")));
        }
    }
    if let Some(Some(index)) = nic.phc_index.get() {
        parts.push(format!("PTP clock /dev/ptp{index}"));
    }
    format!("{}: {}", interface.name, parts.join(", "))
}

/// The block of one interface ethtool answered about.
fn interface_block(interface: &NetInterface, nic: &Nic, irqs: Option<&Irqs>) -> InterfaceBlock {
    let mut heading = vec![match nic.driver.get() {
        Some(d) if d.firmware.is_empty() => format!("{} {}", d.driver, d.version),
        Some(d) => format!("{} {}, firmware {}", d.driver, d.version, d.firmware),
        None => "driver unknown".to_string(),
    }];
    if let Some(pci) = &nic.pci_address {
        heading.push(format!("PCI {pci}"));
    }
    heading.push(match interface.numa_node {
        Some(node) => format!("node {node}"),
        None => "no NUMA node".to_string(),
    });
    heading.push(match nic.speed_mbps {
        Some(speed) => format!("{speed} Mb/s"),
        None => "speed unknown".to_string(),
    });
    let mut facts = Vec::new();
    let mut refused = Vec::new();
    let mut fact = |label: &'static str, text: Option<String>| {
        if let Some(text) = text {
            facts.push((label, text));
        }
    };
    fact(
        "channels",
        known(&nic.channels, &mut refused, |c| {
            current_maxes(&[
                ("combined", &c.combined),
                ("rx", &c.rx),
                ("tx", &c.tx),
                ("other", &c.other),
            ])
        }),
    );
    fact(
        "rings",
        known(&nic.rings, &mut refused, |r| {
            current_maxes(&[("rx", &r.rx), ("tx", &r.tx)])
        }),
    );
    fact(
        "coalescing",
        known(&nic.coalesce, &mut refused, coalesce_text),
    );
    fact(
        "offloads",
        known(&nic.features, &mut refused, features_text),
    );
    fact(
        "RSS",
        known(&nic.rss, &mut refused, |rss| {
            Some(match rss {
                Some(rss) => format!(
                    "{} entries over {} of {} queues{}",
                    rss.table_size,
                    rss.queues_used(),
                    rss.entries_per_queue.len(),
                    if spread_evenly(&rss.entries_per_queue) {
                        " (even)"
                    } else {
                        " (uneven)"
                    }
                ),
                None => "no indirection table".to_string(),
            })
        }),
    );
    fact("steering", Some(steering_text(interface, nic)));
    fact(
        "PTP clock",
        known(&nic.phc_index, &mut refused, |phc| {
            Some(match phc {
                Some(index) => format!("/dev/ptp{index}"),
                None => "none".to_string(),
            })
        }),
    );
    fact(
        "NAPI",
        match (nic.napi.defer_hard_irqs, nic.napi.gro_flush_timeout_ns) {
            (None, None) => None,
            (defer, flush) => Some(format!(
                "napi_defer_hard_irqs {}, gro_flush_timeout {}",
                defer.map_or("absent".into(), |d| d.to_string()),
                flush.map_or("absent".into(), |f| format!("{f} ns"))
            )),
        },
    );
    if let Some(irqs) = irqs {
        fact("IRQs", irq_text(interface, nic, irqs));
    }
    if let Some(d) = nic.driver.reason() {
        refused.push(d.to_string());
    }
    for (reason, queries) in grouped(&refused) {
        fact(
            "not read",
            Some(if queries.is_empty() {
                reason
            } else {
                format!("{} ({reason})", queries.join(", "))
            }),
        );
    }
    if !nic.unknown_attributes.is_empty() {
        fact(
            "skipped",
            Some(format!(
                "attributes this lowlat does not know (a newer kernel's): {}",
                nic.unknown_attributes.join(", ")
            )),
        );
    }
    InterfaceBlock {
        name: interface.name.clone(),
        heading: heading.join(", "),
        facts,
    }
}

/// The reasons `ethtool <query>: <reason>` grouped by reason, in first-seen order, with the
/// queries each applies to; any other reason stands alone, with no query.
fn grouped(reasons: &[String]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for text in reasons {
        let (query, reason) = match text
            .strip_prefix("ethtool ")
            .and_then(|rest| rest.split_once(": "))
        {
            Some((query, reason)) => (Some(query.to_string()), reason.to_string()),
            None => (None, text.clone()),
        };
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, queries)) => queries.extend(query),
            None => groups.push((reason, query.into_iter().collect())),
        }
    }
    groups
}

/// `Some(text)` unless it is empty.
fn none_if_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// The value's text, or `None` with its reason pushed to `refused` (a refusal of a software
/// device is a line of its own, not a gap in the block).
fn known<T>(
    value: &Avail<T>,
    refused: &mut Vec<String>,
    show: impl FnOnce(&T) -> Option<String>,
) -> Option<String> {
    match value {
        Avail::Available(v) => show(v),
        Avail::Unavailable { unavailable } => {
            refused.push(unavailable.clone());
            None
        }
    }
}

/// `4/63` (current of maximum), or the one that is known.
/// The known ones of `named` (channels, rings) as `name current/max`, joined by commas;
/// `None` when none is known.
fn current_maxes(named: &[(&str, &CurrentMax)]) -> Option<String> {
    let parts: Vec<String> = (named.iter())
        .filter(|(_, v)| v.is_known())
        .map(|(name, v)| format!("{name} {}", current_max(v)))
        .collect();
    none_if_empty(parts.join(", "))
}

fn current_max(v: &CurrentMax) -> String {
    match (v.current, v.max) {
        (Some(c), Some(m)) => format!("{c}/{m}"),
        (Some(c), None) => c.to_string(),
        (None, Some(m)) => format!("?/{m}"),
        (None, None) => "?".to_string(),
    }
}

/// The coalescing values the driver has, as `ethtool -c` names them.
fn coalesce_text(c: &Coalesce) -> Option<String> {
    let on_off = |b: bool| if b { "on" } else { "off" };
    let parts: Vec<String> = [
        c.adaptive_rx.map(|v| format!("adaptive-rx {}", on_off(v))),
        c.adaptive_tx.map(|v| format!("adaptive-tx {}", on_off(v))),
        c.rx_usecs.map(|v| format!("rx-usecs {v}")),
        c.rx_frames.map(|v| format!("rx-frames {v}")),
        c.tx_usecs.map(|v| format!("tx-usecs {v}")),
        c.tx_frames.map(|v| format!("tx-frames {v}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    none_if_empty(parts.join(", "))
}

/// GRO, LRO, TSO, GSO and n-tuple filters, on or off (`fixed` when they cannot change).
fn features_text(f: &Features) -> Option<String> {
    let parts: Vec<String> = [
        ("GRO", f.gro),
        ("LRO", f.lro),
        ("TSO", f.tso),
        ("GSO", f.gso),
        ("ntuple", f.ntuple),
    ]
    .into_iter()
    .filter_map(|(name, state)| {
        let state = state?;
        let fixed = if state.changeable { "" } else { " (fixed)" };
        Some(format!(
            "{name} {}{fixed}",
            if state.on { "on" } else { "off" }
        ))
    })
    .collect();
    none_if_empty(parts.join(", "))
}

/// Whether the table's entries are spread over the queues it uses within one entry.
fn spread_evenly(per_queue: &[u32]) -> bool {
    let used: Vec<u32> = per_queue.iter().copied().filter(|&n| n > 0).collect();
    match (used.iter().min(), used.iter().max()) {
        (Some(min), Some(max)) => max - min <= 1,
        _ => true,
    }
}

/// RPS and XPS: off, or the CPUs they steer to.
fn steering_text(interface: &NetInterface, nic: &Nic) -> String {
    let rps = interface.rps_union();
    let xps = nic
        .tx_queues
        .iter()
        .filter_map(|q| q.xps_cpus.get())
        .fold(CpuSet::new(), |all, cpus| all.union(cpus));
    let xps_read = nic.tx_queues.iter().any(|q| q.xps_cpus.get().is_some());
    format!(
        "RPS {}; XPS {}",
        if rps.is_empty() {
            "off".to_string()
        } else {
            format!("to CPUs {}", rps.to_list())
        },
        if !xps_read {
            "not available".to_string()
        } else if xps.is_empty() {
            "off".to_string()
        } else {
            format!("from CPUs {}", xps.to_list())
        }
    )
}

/// Each IRQ of the device: number, queue, and the CPUs it may and does run on.
fn irq_text(interface: &NetInterface, nic: &Nic, irqs: &Irqs) -> Option<String> {
    let found = nic.irqs(&interface.name, irqs);
    if found.is_empty() {
        return None;
    }
    let lines: Vec<String> = found
        .iter()
        .map(|irq| {
            let name = irqs
                .row(irq)
                .and_then(|row| row.actions.first().cloned())
                .unwrap_or_default();
            let cpus = |set: &Avail<CpuSet>| set.get().map_or("?".to_string(), |c| c.to_list());
            let queue = Nic::queue_of(irq).map_or(String::new(), |q| format!(" queue {q}"));
            format!(
                "{}{queue} {name}: CPUs {} (effective {})",
                irq.number,
                cpus(&irq.affinity),
                cpus(&irq.effective_affinity)
            )
        })
        .collect();
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::nic::recorded;
    use crate::test_tree::TestTree;

    #[test]
    fn the_block_shows_what_a_recorded_nic_answered() {
        let tree = TestTree::empty();
        recorded::write(&tree, "eth4", &recorded::recording("ixgbe"), 1);
        tree.write("/sys/class/net/enp9s0/device/numa_node", "0\n");
        let m = Machine::read(&tree.root());
        let text = lines(&m);
        let expected = "\
enp9s0: no ethtool answers captured (a snapshot or tree taken before lowlat asked ethtool)
eth4: ixgbe 4.1.5, PCI 0000:06:00.1, node 1, 25000 Mb/s
  channels   combined 14/63, other 1/1
  rings      rx 512/4096, tx 512/4096
  coalescing rx-usecs 1, tx-usecs 0
  offloads   GRO on, LRO on, TSO on, GSO on, ntuple off
  steering   RPS off; XPS off
  PTP clock  /dev/ptp1
  NAPI       napi_defer_hard_irqs 0, gro_flush_timeout 0 ns
  not read   rss (refused: EOPNOTSUPP: Operation not supported)
";
        assert_eq!(text, expected);
    }

    /// A NIC that answers some requests and refuses others: each refusal said (grouped by
    /// reason), an answer missing from the capture said with its file, the rest read; the
    /// attributes of a newer kernel skipped and named.
    #[test]
    fn the_block_says_each_refusal_and_the_attributes_it_skipped() {
        use crate::machine::nic::{ethtool, netlink};
        let tree = TestTree::empty();
        recorded::write(&tree, "eth0", &recorded::recording("igb"), 0);
        for query in ["rings", "rss"] {
            tree.write(
                &ethtool::answer_path("eth0", query),
                netlink::error_message(95, None),
            );
        }
        tree.write(
            &ethtool::answer_path("eth0", "tsinfo"),
            netlink::error_message(1, Some("no timestamping here")),
        );
        tree.remove(&ethtool::answer_path("eth0", "features"));
        let mut body = netlink::Request::new(0, 0, 0, 0);
        body.put_u32(ethtool::coalesce_attr::RX_USECS, 3)
            .put_u32(41, 1);
        let bytes = body.finish(0);
        tree.write(
            &ethtool::answer_path("eth0", "coalesce"),
            netlink::reply_message(0x1c, 20, &bytes[20..]),
        );
        let m = Machine::read(&tree.root());
        let text = lines(&m);
        for expected in [
            "  coalescing rx-usecs 3\n",
            "  not read   rings, rss (refused: EOPNOTSUPP: Operation not supported)\n",
            "  not read   tsinfo (refused: EPERM: Operation not permitted (no timestamping here))\n",
            "  not read   /lowlat-answers/ethtool/eth0/features does not exist\n",
            "  skipped    attributes this lowlat does not know (a newer kernel's): coalesce: 41\n",
        ] {
            assert!(text.contains(expected), "lacks {expected:?}:\n{text}");
        }
        assert!(text.contains("  channels   "), "the rest is read:\n{text}");
    }

    #[test]
    fn check_summarises_each_nic_on_one_line() {
        let tree = TestTree::empty();
        recorded::write(&tree, "ens1f0", &recorded::recording("mlx5"), 1);
        tree.write("/lowlat-answers/ethtool/veth0/drvinfo", "driver: veth\n");
        let m = Machine::read(&tree.root());
        let nics = summaries(&m);
        assert_eq!(
            nics.len(),
            1,
            "a software interface without channels is left out"
        );
        assert_eq!(
            nics[0].summary,
            "ens1f0: mlx5_core, node 1, 16 rx queues, adaptive-rx on, adaptive-tx on, rx-usecs 8, rx-frames 128, tx-usecs 16, tx-frames 32, GRO on, PTP clock /dev/ptp0"
        );
    }
}

/// The worked example of docs/guide/nic.md: the recorded E810 (ice) as `ens5f0` on node 1 of
/// a two-node, eight-CPU machine, its queue IRQs allowed everywhere, irqbalance running and
/// `net.core.busy_read` at 50 µs; audited with the low-latency profile isolating 2-3,6-7.
#[cfg(test)]
mod guide {
    use crate::audit::partition;
    use crate::audit::profile;
    use crate::machine::Machine;
    use crate::machine::nic::recorded;

    const GUIDE: &str = include_str!("../../docs/guide/nic.md");

    /// The NIC block and the NIC findings of the example, as lowlat prints them.
    fn outputs() -> (String, String) {
        let tree = recorded::two_node_machine();
        let m = Machine::read(&tree.root());
        let block = super::lines(&m);
        let mut p = profile::load(crate::tuning::profile_name::ProfileName::LowLatency).unwrap();
        p.entries.retain(|e| e.rule.id.starts_with("LL-NIC-"));
        let part = partition::choose(&m, Some(&"2-3,6-7".parse().unwrap())).unwrap();
        let audit = crate::audit::run(&m, &p, &part);
        let text =
            crate::report::audit::text(&m, &audit, p.info, &crate::report::audit::View::default());
        (block, text)
    }

    #[test]
    fn the_guides_outputs_are_what_lowlat_prints() {
        let (block, audit) = outputs();
        if std::env::var("LOWLAT_PRINT_GUIDE").is_ok() {
            println!("{block}\n----\n{audit}");
        }
        for (what, text) in [("NIC block", &block), ("audit", &audit)] {
            assert!(
                GUIDE.contains(text.trim_end()),
                "docs/guide/nic.md lacks the {what}:\n{text}"
            );
        }
    }
}
