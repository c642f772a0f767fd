//! What a NIC says about itself: driver and firmware, link speed, channels, rings,
//! coalescing, latency-relevant offloads, the RSS table, the PTP hardware clock, transmit
//! steering (XPS), the per-device NAPI knobs, and the MSI IRQs of its PCI function.
//!
//! ethtool's part is read through its generic netlink interface (`netlink`, [`ethtool`]);
//! each answer is a captured answer ([`crate::sysroot::SysRoot::answer`]), so a snapshot or
//! a fixture tree shows what the live machine answered. A request the device refuses leaves
//! that part unavailable with the kernel's reason and the rest read; attributes a newer kernel
//! adds are skipped and listed.

pub mod ethtool;
pub mod identity;
pub mod knob;
pub(crate) mod netlink;
pub(crate) mod printed;
#[cfg(test)]
pub(crate) mod recorded;

use serde::{Deserialize, Serialize};

use super::{Avail, CpuSet, Reader};
use ethtool::{Asker, Query};
pub use ethtool::{Channels, Coalesce, CurrentMax, DriverInfo, Feature, Features, Rings, Rss};

/// What ethtool and sysfs say about one interface's device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Nic {
    /// Driver, version, firmware and bus address (`ethtool -i`).
    pub driver: Avail<DriverInfo>,
    /// The PCI address of the device (`0000:3b:00.0`), from the driver's bus information.
    pub pci_address: Option<String>,
    /// Link speed in Mb/s (`/sys/class/net/<if>/speed`); `None` when the link is down or the
    /// device does not say.
    pub speed_mbps: Option<u32>,
    /// Channels (queues with an IRQ each), current and maximum.
    pub channels: Avail<Channels>,
    /// Ring sizes in descriptors, current and maximum.
    pub rings: Avail<Rings>,
    /// Interrupt coalescing.
    pub coalesce: Avail<Coalesce>,
    /// The offloads that matter for latency.
    pub features: Avail<Features>,
    /// The RSS indirection table, summarised; `None` when the device has none.
    pub rss: Avail<Option<Rss>>,
    /// The PTP hardware clock's index (`/dev/ptpN`); `None` when the device has none.
    pub phc_index: Avail<Option<u32>>,
    /// The transmit queues with their XPS CPUs.
    pub tx_queues: Vec<TxQueue>,
    /// NAPI's per-device knobs.
    pub napi: Napi,
    /// The MSI/MSI-X IRQ numbers of the device's PCI function (`msi_irqs/`), ascending.
    pub msi_irqs: Vec<u32>,
    /// Reply attributes a newer kernel sent that this lowlat does not know and skipped, as
    /// `query: type` (`coalesce: 31`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_attributes: Vec<String>,
}

/// One transmit queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxQueue {
    /// Queue number (`tx-3` is 3).
    pub index: u32,
    /// The CPUs whose sends use this queue (`xps_cpus`; empty: XPS off); unavailable where the
    /// kernel or device has no XPS.
    pub xps_cpus: Avail<CpuSet>,
}

/// NAPI's per-device knobs (`/sys/class/net/<if>/`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Napi {
    /// `napi_defer_hard_irqs`: how many times NAPI polls again with the device's interrupt
    /// masked before it unmasks it; `None` when the file is absent (before Linux 5.10).
    pub defer_hard_irqs: Option<u32>,
    /// `gro_flush_timeout`, in nanoseconds: how long GRO holds packets and, with
    /// `napi_defer_hard_irqs`, the timer that replaces the interrupt; `None` when absent.
    pub gro_flush_timeout_ns: Option<u64>,
}

/// Reads what ethtool and sysfs say about interface `name`, whose sysfs directory is `dir`
/// (`/sys/class/net/<name>`), putting ethtool's questions with `asker` on the live machine.
pub(crate) fn read(r: &mut Reader, asker: &mut Asker, name: &str, dir: &str) -> Nic {
    let mut unknown = Vec::new();
    let mut asked = Asked {
        asker,
        name,
        unknown: &mut unknown,
    };
    let channels = asked.read(r, Query::Channels, |a| Ok(ethtool::channels(a)));
    let rings = asked.read(r, Query::Rings, |a| Ok(ethtool::rings(a)));
    let coalesce = asked.read(r, Query::Coalesce, |a| Ok(ethtool::coalesce(a)));
    let features = asked.read(r, Query::Features, ethtool::features);
    let phc_index = asked.read(r, Query::Tsinfo, |a| Ok(ethtool::phc_index(a)));
    let rss = asked.read(r, Query::Rss, |a| Ok(ethtool::rss(a)));
    let driver = read_driver(r, name);
    let pci_address = driver
        .get()
        .map(|d| d.bus_info.clone())
        .filter(|bus| is_pci_address(bus));
    let msi_irqs = pci_address
        .as_deref()
        .map(|pci| read_msi_irqs(r, pci))
        .unwrap_or_default();
    let speed_mbps = r
        .root
        .read_value(&format!("{dir}/speed"))
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| u32::try_from(s).ok());
    let tx_queues = r
        .root
        .list_numbered(&format!("{dir}/queues"), "tx-")
        .into_iter()
        .map(|(index, queue)| TxQueue {
            index,
            xps_cpus: r.cpumask(&format!("{dir}/queues/{queue}/xps_cpus")),
        })
        .collect();
    let napi = Napi {
        defer_hard_irqs: r.opt(&format!("{dir}/napi_defer_hard_irqs")),
        gro_flush_timeout_ns: r.opt(&format!("{dir}/gro_flush_timeout")),
    };
    Nic {
        driver,
        pci_address,
        speed_mbps,
        channels,
        rings,
        coalesce,
        features,
        rss,
        phc_index,
        tx_queues,
        napi,
        msi_irqs,
        unknown_attributes: unknown,
    }
}

/// The questions about one interface, and the unknown attributes their answers held.
struct Asked<'a> {
    asker: &'a mut Asker,
    name: &'a str,
    unknown: &'a mut Vec<String>,
}

impl Asked<'_> {
    /// The answer to `query`, decoded by `decode`: unavailable with the kernel's reason when
    /// the device refused it, or with the file when it is garbled (then also warned about).
    fn read<T>(
        &mut self,
        r: &mut Reader,
        query: Query,
        decode: impl FnOnce(&ethtool::Attrs) -> Result<T, netlink::Garbled>,
    ) -> Avail<T> {
        let path = ethtool::answer_path(self.name, query.name());
        let (asker, name) = (&mut *self.asker, self.name);
        let bytes = match r.root.answer(&path, || asker.ask(query, name)) {
            Ok(bytes) => bytes,
            // A support bundle keeps what ethtool printed instead.
            Err(e) if e.is_not_found() => match printed_answer(r, query, name) {
                Some(bytes) => bytes,
                None => return Avail::missing(e.to_string()),
            },
            Err(e) => return Avail::missing(e.to_string()),
        };
        let decoded = ethtool::parse(query, &bytes).and_then(|attrs| {
            self.unknown.extend(
                attrs
                    .unknown
                    .iter()
                    .map(|kind| format!("{}: {kind}", query.name())),
            );
            Ok(decode(&attrs)?)
        });
        match decoded {
            Ok(value) => Avail::Available(value),
            Err(refusal @ ethtool::Refusal::Refused { .. }) => {
                Avail::missing(format!("ethtool {}: {refusal}", query.name()))
            }
            Err(garbled) => {
                r.warnings.file(&path, garbled.to_string());
                Avail::missing(format!("{path}: {garbled}"))
            }
        }
    }
}

/// The answer to `query` encoded from what `ethtool` printed for `name`, where a tree keeps
/// it ([`crate::sysroot::PRINTED_DIR`], by sos's file name: `ethtool_-c_eth0`); `None` on the
/// live machine and where the tree has none.
fn printed_answer(r: &Reader, query: Query, name: &str) -> Option<Vec<u8>> {
    if r.root.is_live() {
        return None;
    }
    let option = printed::option(query);
    let path = format!("{}/ethtool_{option}_{name}", crate::sysroot::PRINTED_DIR);
    let text = r.root.read(&path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    printed::encode(option, &lines, name).map(|(_, bytes)| bytes)
}

/// The driver information, or why it is unavailable.
fn read_driver(r: &mut Reader, name: &str) -> Avail<DriverInfo> {
    let path = ethtool::answer_path(name, ethtool::DRVINFO);
    let printed = || {
        let path = format!("{}/ethtool_-i_{name}", crate::sysroot::PRINTED_DIR);
        (!r.root.is_live()).then(|| r.root.read_bytes(&path).ok())?
    };
    let bytes = match r.root.answer(&path, || ethtool::ask_drvinfo(name)) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => match printed() {
            Some(bytes) => bytes,
            None => return Avail::missing(e.to_string()),
        },
        Err(e) => return Avail::missing(e.to_string()),
    };
    match ethtool::drvinfo(&String::from_utf8_lossy(&bytes)) {
        Ok(info) => Avail::Available(info),
        Err(refusal @ ethtool::Refusal::Refused { .. }) => {
            Avail::missing(format!("ethtool drvinfo: {refusal}"))
        }
        Err(garbled) => {
            r.warnings.file(&path, garbled.to_string());
            Avail::missing(format!("{path}: {garbled}"))
        }
    }
}

/// Whether `bus` is a PCI address (`0000:3b:00.0`).
fn is_pci_address(bus: &str) -> bool {
    let b = bus.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// The MSI/MSI-X IRQ numbers of PCI function `pci` (`/sys/bus/pci/devices/<pci>/msi_irqs/`).
fn read_msi_irqs(r: &mut Reader, pci: &str) -> Vec<u32> {
    let mut irqs: Vec<u32> = r
        .root
        .list(&format!("/sys/bus/pci/devices/{pci}/msi_irqs"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    irqs.sort_unstable();
    irqs
}

impl Nic {
    /// The IRQs of this device among `irqs`: its PCI function's MSI vectors, or, where those
    /// were not read, the vectors whose names name the interface `name` or its PCI address.
    pub fn irqs<'a>(&self, name: &str, irqs: &'a super::irq::Irqs) -> Vec<&'a super::irq::Irq> {
        use super::irq::IrqClass;
        irqs.irqs
            .iter()
            .filter(|irq| {
                if !self.msi_irqs.is_empty() {
                    return self.msi_irqs.binary_search(&irq.number).is_ok();
                }
                match &irq.class {
                    IrqClass::NicQueue { nic, pci, .. } | IrqClass::Nic { nic, pci } => {
                        nic == name
                            || pci.is_some() && pci.as_deref() == self.pci_address.as_deref()
                    }
                    _ => false,
                }
            })
            .collect()
    }

    /// The queue number of `irq` when it serves one of this device's queues.
    pub fn queue_of(irq: &super::irq::Irq) -> Option<u32> {
        match irq.class {
            super::irq::IrqClass::NicQueue { queue, .. } => Some(queue),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// What `tree` says about interface `name`, and the warnings of reading it.
    fn read_tree(tree: &TestTree, name: &str) -> (Nic, Vec<super::super::Warning>) {
        let root = tree.root();
        let mut r = Reader::new(&root);
        let dir = format!("/sys/class/net/{name}");
        let nic = read(&mut r, &mut Asker::default(), name, &dir);
        (nic, r.warnings.into_vec())
    }

    /// What a tree holding the recording of `driver` as `name` says about it.
    fn read_recorded(driver: &str, name: &str) -> (Nic, Vec<super::super::Warning>) {
        let tree = TestTree::empty();
        recorded::write(&tree, name, &recorded::recording(driver), 1);
        read_tree(&tree, name)
    }

    #[test]
    fn recorded_nics_read_as_ethtool_printed_them() {
        let (nic, warnings) = read_recorded("mlx5", "ens1f0");
        assert!(warnings.is_empty(), "{warnings:?}");
        let driver = nic.driver.get().unwrap();
        assert_eq!(driver.driver, "mlx5_core");
        assert_eq!(driver.firmware, "14.23.1020 (MT_2420110034)");
        assert_eq!(nic.pci_address.as_deref(), Some("0000:af:00.0"));
        let c = nic.coalesce.get().unwrap();
        assert_eq!(
            (c.adaptive_rx, c.rx_usecs, c.rx_frames),
            (Some(true), Some(8), Some(128))
        );
        assert_eq!(
            (c.tx_usecs, c.tx_frames, c.adaptive_tx),
            (Some(16), Some(32), Some(true))
        );
        let ch = nic.channels.get().unwrap();
        assert_eq!((ch.combined.current, ch.combined.max), (Some(16), Some(16)));
        assert_eq!(ch.rx, CurrentMax::default());
        let rings = nic.rings.get().unwrap();
        assert_eq!((rings.rx.current, rings.rx.max), (Some(1024), Some(8192)));
        let f = nic.features.get().unwrap();
        assert_eq!(
            f.gro,
            Some(Feature {
                on: true,
                changeable: true
            })
        );
        assert_eq!(
            f.lro,
            Some(Feature {
                on: false,
                changeable: true
            })
        );
        assert_eq!(nic.phc_index.get(), Some(&Some(0)));
        assert_eq!(nic.speed_mbps, Some(25000));

        let (nic, _) = read_recorded("ice", "eth0");
        let c = nic.coalesce.get().unwrap();
        assert_eq!((c.rx_usecs, c.rx_frames), (Some(50), None), "n/a is absent");
        let f = nic.features.get().unwrap();
        assert_eq!(
            f.lro,
            Some(Feature {
                on: false,
                changeable: false
            }),
            "[fixed]"
        );
        let ch = nic.channels.get().unwrap();
        assert_eq!((ch.other.current, ch.combined.current), (Some(1), Some(32)));

        let (igb, _) = read_recorded("igb", "enp2s0");
        let ch = igb.channels.get().cloned().unwrap();
        assert_eq!(
            (ch.rx.current, ch.tx.current, ch.rx_queues()),
            (Some(4), Some(1), 4)
        );

        let (sfc, _) = read_recorded("sfc", "eth2");
        let rss = sfc.rss.get().cloned().unwrap().unwrap();
        assert_eq!(rss.table_size, 32);
        assert_eq!(rss.entries_per_queue, vec![4; 8]);
    }

    #[test]
    fn a_refused_request_is_said_and_the_rest_is_read() {
        let (nic, warnings) = read_recorded("ixgbe", "eth4");
        assert!(warnings.is_empty(), "a refusal is no warning: {warnings:?}");
        assert_eq!(
            nic.rss.reason(),
            Some("ethtool rss: refused: EOPNOTSUPP: Operation not supported")
        );
        assert_eq!(nic.coalesce.get().unwrap().rx_usecs, Some(1));
        assert_eq!(nic.coalesce.get().unwrap().adaptive_rx, None);
        assert!(nic.features.get().unwrap().lro.unwrap().on);
    }

    #[test]
    fn attributes_of_a_newer_kernel_are_skipped_and_listed() {
        let tree = TestTree::empty();
        recorded::write(&tree, "eth0", &recorded::recording("igb"), 0);
        let path = ethtool::answer_path("eth0", "coalesce");
        let mut body = netlink::Request::new(0, 0, 0, 0);
        body.put_u32(ethtool::coalesce_attr::RX_USECS, 7)
            .put_u32(31, 1)
            .put_u32(40, 2);
        let bytes = body.finish(0);
        tree.write(&path, netlink::reply_message(0x1c, 20, &bytes[20..]));
        let (nic, warnings) = read_tree(&tree, "eth0");
        assert_eq!(nic.coalesce.get().unwrap().rx_usecs, Some(7));
        assert_eq!(nic.unknown_attributes, ["coalesce: 31", "coalesce: 40"]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_garbled_answer_is_warned_about_with_its_file() {
        let tree = TestTree::empty();
        recorded::write(&tree, "eth0", &recorded::recording("igb"), 0);
        tree.write(&ethtool::answer_path("eth0", "rings"), b"\x01\x02");
        tree.write(&ethtool::answer_path("eth0", "drvinfo"), "nonsense\n");
        let (nic, warnings) = read_tree(&tree, "eth0");
        assert!(
            nic.rings
                .reason()
                .unwrap()
                .contains("garbled netlink answer")
        );
        assert!(nic.driver.reason().unwrap().contains("no driver line"));
        assert!(nic.coalesce.get().is_some());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0]
                .to_string()
                .contains("/lowlat-answers/ethtool/eth0/rings")
        );
    }

    #[test]
    fn the_queue_irqs_are_the_pci_functions_msi_vectors() {
        let tree = TestTree::empty();
        recorded::write(&tree, "ens1f0", &recorded::recording("mlx5"), 1);
        for irq in [120, 121, 122] {
            tree.write(
                &format!("/sys/bus/pci/devices/0000:af:00.0/msi_irqs/{irq}"),
                "msix\n",
            );
        }
        assert_eq!(read_tree(&tree, "ens1f0").0.msi_irqs, [120, 121, 122]);
    }
}
