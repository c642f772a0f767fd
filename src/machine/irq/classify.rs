//! What an IRQ serves, guessed from the handler names drivers register (its actions).
//!
//! Drivers name their vectors by convention, not by any kernel rule, so this is pattern
//! matching over the forms seen on real servers:
//!
//! | action                           | class                                         |
//! |----------------------------------|-----------------------------------------------|
//! | `eth0-TxRx-3`, `ens1f0-rx-2`     | NIC queue 3 of `eth0`, queue 2 of `ens1f0`    |
//! | `i40e-eth0-TxRx-3`, `iavf-ens1-TxRx-0` | the driver prefix is dropped            |
//! | `mlx5_comp3@pci:0000:41:00.0`    | NIC queue 3 of the PCI function 0000:41:00.0  |
//! | `virtio0-input.0`                | NIC queue 0 of virtio device `virtio0`        |
//! | `igb0:que 3`                     | NIC queue 3 of `igb0` (FreeBSD `vmstat -i`)   |
//! | `eth0`, `mlx5_async0@pci:…`, `i40e-0000:41:00.0:misc` | the NIC, not a queue     |
//! | `nvme0q3`, `virtio1-req.0`       | storage queue (kernel-managed affinity)       |
//! | `timer`, `hpet2`, `arch_timer`   | timer                                         |

use serde::{Deserialize, Serialize};

/// The note after a cause's source that marks it as network receive (a NIC queue's interrupt,
/// a NET_RX softirq): `--explain` of a ping-pong writes it (`measure::trace::explain::round_trip`),
/// the audit's cause table sends it to the receive fixes (`audit::rules::causes`).
pub(crate) const NETWORK_RECEIVE: &str = " (network receive)";

/// What an IRQ serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IrqClass {
    /// One queue (vector) of a network interface.
    NicQueue {
        /// The NIC as the action names it: an interface (`eth0`), a driver instance (`igb0`,
        /// `virtio2`), or a PCI address (`0000:41:00.0`) when the name carries only that.
        nic: String,
        /// The queue (channel) number within the NIC.
        queue: u32,
        /// The NIC's PCI address when the action names it (mlx5, hns3).
        pci: Option<String>,
    },
    /// A NIC vector that is not a queue (link state, admin, async events, misc).
    Nic {
        /// The NIC, named as for [`IrqClass::NicQueue`].
        nic: String,
        /// The NIC's PCI address when the action names it.
        pci: Option<String>,
    },
    /// A storage controller vector (NVMe, virtio-blk, SAS, AHCI).
    Storage {
        /// The controller as the action names it (`nvme0`, `virtio1`, `ahci[0000:00:17.0]`).
        device: String,
        /// The hardware queue, when the controller has several.
        queue: Option<u32>,
        /// Hint: the kernel most likely manages this vector's affinity (multi-queue I/O
        /// vectors spread over CPUs); writing its `smp_affinity` fails with EIO unless the
        /// vector is shut down, and only `isolcpus=managed_irq` keeps it off isolated CPUs.
        managed: bool,
    },
    /// A timer interrupt (`timer`, `hpet`, `arch_timer`).
    Timer,
    /// Anything else (ACPI, serial, USB, config vectors ...).
    Other,
}

impl IrqClass {
    /// The sysfs file that gives the NUMA node of the device this IRQ serves, when the
    /// class names a device whose node sysfs exposes.
    pub fn device_node_path(&self) -> Option<String> {
        match self {
            Self::NicQueue { nic, pci, .. } | Self::Nic { nic, pci } => Some(match pci {
                Some(addr) => format!("/sys/bus/pci/devices/{addr}/numa_node"),
                None => format!("/sys/class/net/{nic}/device/numa_node"),
            }),
            Self::Storage { device, .. } if nvme_controller(device) => {
                Some(format!("/sys/class/nvme/{device}/device/numa_node"))
            }
            _ => None,
        }
    }
}

/// Classifies an IRQ by its actions; the first action that says something decides (a shared
/// legacy IRQ such as `ehci_hcd:usb1, eth0` counts as the NIC).
pub fn classify<S: AsRef<str>>(actions: &[S]) -> IrqClass {
    actions
        .iter()
        .map(|action| classify_one(action.as_ref().trim()))
        .find(|class| *class != IrqClass::Other)
        .unwrap_or(IrqClass::Other)
}

fn classify_one(action: &str) -> IrqClass {
    if let Some(class) = timer(action)
        .or_else(|| nvme(action))
        .or_else(|| virtio(action))
        .or_else(|| mlx5(action))
        .or_else(|| freebsd_queue(action))
        .or_else(|| misc_vector(action))
        .or_else(|| storage(action))
        .or_else(|| named_queue(action))
        .or_else(|| numbered_queue(action))
    {
        return class;
    }
    if netdev_like(action) {
        return IrqClass::Nic {
            nic: action.to_string(),
            pci: None,
        };
    }
    IrqClass::Other
}

fn timer(action: &str) -> Option<IrqClass> {
    let hpet = action
        .strip_prefix("hpet")
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()));
    (hpet || matches!(action, "timer" | "arch_timer" | "arch_mem_timer")).then_some(IrqClass::Timer)
}

/// `nvme0q3` (I/O queue, managed) and `nvme0q0` (admin queue).
fn nvme(action: &str) -> Option<IrqClass> {
    let (device, queue) = action.split_once('q')?;
    if !nvme_controller(device) {
        return None;
    }
    let queue: u32 = queue.parse().ok()?;
    Some(IrqClass::Storage {
        device: device.to_string(),
        queue: Some(queue),
        managed: queue > 0,
    })
}

fn nvme_controller(device: &str) -> bool {
    device
        .strip_prefix("nvme")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `virtio2-input.0` / `virtio2-output.0` (virtio-net) and `virtio1-req.0` (virtio-blk).
fn virtio(action: &str) -> Option<IrqClass> {
    let (device, vq) = action.split_once('-')?;
    let n = device.strip_prefix("virtio")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (name, queue) = vq.split_once('.')?;
    let queue: u32 = queue.parse().ok()?;
    match name {
        "input" | "output" => Some(IrqClass::NicQueue {
            nic: device.to_string(),
            queue,
            pci: None,
        }),
        "req" => Some(IrqClass::Storage {
            device: device.to_string(),
            queue: Some(queue),
            managed: true,
        }),
        _ => None,
    }
}

/// `mlx5_comp3@pci:0000:41:00.0` (completion queue 3) and the other `mlx5_*@pci:` vectors.
fn mlx5(action: &str) -> Option<IrqClass> {
    let (name, addr) = action.split_once("@pci:")?;
    let kind = name.strip_prefix("mlx5_")?;
    let pci = Some(addr.to_string());
    let nic = addr.to_string();
    Some(
        match kind.strip_prefix("comp").and_then(|q| q.parse().ok()) {
            Some(queue) => IrqClass::NicQueue { nic, queue, pci },
            None => IrqClass::Nic { nic, pci },
        },
    )
}

/// FreeBSD `igb0:que 3` (as `vmstat -i` lists it) and `igb0:link`.
fn freebsd_queue(action: &str) -> Option<IrqClass> {
    let (nic, what) = action.split_once(':')?;
    let unit = nic.trim_start_matches(|c: char| c.is_ascii_lowercase());
    if unit.is_empty() || unit.len() == nic.len() || !unit.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nic = nic.to_string();
    if let Some(queue) = what.strip_prefix("que").and_then(|q| q.trim().parse().ok()) {
        return Some(IrqClass::NicQueue {
            nic,
            queue,
            pci: None,
        });
    }
    (what == "link").then_some(IrqClass::Nic { nic, pci: None })
}

/// `i40e-0000:41:00.0:misc`, `ice-0000:41:00.0:misc`, `eth0-misc`: a NIC's misc vector.
fn misc_vector(action: &str) -> Option<IrqClass> {
    let name = action
        .strip_suffix(":misc")
        .or_else(|| action.strip_suffix("-misc"))?;
    let nic = strip_driver_prefix(name);
    if !(pci_address(nic) || netdev_like(nic)) {
        return None;
    }
    Some(IrqClass::Nic {
        nic: nic.to_string(),
        pci: pci_address(nic).then(|| nic.to_string()),
    })
}

/// Other storage controllers: `ahci[0000:00:17.0]`, `ahci`, `mpt3sas0-msix3`.
fn storage(action: &str) -> Option<IrqClass> {
    if action == "ahci" || action.starts_with("ahci[") {
        return Some(IrqClass::Storage {
            device: action.to_string(),
            queue: None,
            managed: false,
        });
    }
    let (device, vector) = action.split_once("-msix")?;
    let driver = device.trim_end_matches(|c: char| c.is_ascii_digit());
    if !matches!(driver, "mpt3sas" | "mpt2sas" | "megasas") {
        return None;
    }
    let queue: u32 = vector.parse().ok()?;
    Some(IrqClass::Storage {
        device: device.to_string(),
        queue: Some(queue),
        managed: true,
    })
}

/// Queue kinds drivers put between the NIC and the queue number (`eth0-TxRx-3`).
const QUEUE_KINDS: &[&str] = &["txrx", "rx", "tx", "rxtx", "fp", "combined"];

/// `eth0-TxRx-3`, `i40e-eth0-TxRx-3`, `ens1f0-rx-2`, `hns3-0000:7d:00.0-TxRx-0`.
fn named_queue(action: &str) -> Option<IrqClass> {
    let (rest, queue) = action.rsplit_once('-')?;
    let queue: u32 = queue.parse().ok()?;
    let (prefix, kind) = rest.rsplit_once('-')?;
    if prefix.is_empty() || !QUEUE_KINDS.contains(&kind.to_ascii_lowercase().as_str()) {
        return None;
    }
    let nic = strip_driver_prefix(prefix);
    Some(IrqClass::NicQueue {
        nic: nic.to_string(),
        queue,
        pci: pci_address(nic).then(|| nic.to_string()),
    })
}

/// `eth0-3`, `enp65s0f0-3` (sfc, tg3): a queue number straight after an interface name.
fn numbered_queue(action: &str) -> Option<IrqClass> {
    let (nic, queue) = action.rsplit_once('-')?;
    let queue: u32 = queue.parse().ok()?;
    netdev_like(nic).then(|| IrqClass::NicQueue {
        nic: nic.to_string(),
        queue,
        pci: None,
    })
}

/// Drivers that prefix their vector names with their own name (`i40e-eth0-TxRx-3`).
const PREFIXING_DRIVERS: &[&str] = &["i40e", "iavf", "ice", "idpf", "hns3", "fm10k"];

/// Drops a leading `driver-` from `i40e-eth0` or `hns3-0000:7d:00.0`.
fn strip_driver_prefix(name: &str) -> &str {
    match name.split_once('-') {
        Some((driver, rest))
            if PREFIXING_DRIVERS.contains(&driver) || netdev_like(rest) || pci_address(rest) =>
        {
            rest
        }
        _ => name,
    }
}

/// Whether `name` looks like a PCI address `0000:41:00.0`.
fn pci_address(name: &str) -> bool {
    let mut parts = name.split([':', '.']);
    let widths = [4, 2, 2, 1];
    widths.iter().all(|&w| {
        parts
            .next()
            .is_some_and(|p| p.len() == w && p.bytes().all(|b| b.is_ascii_hexdigit()))
    }) && parts.next().is_none()
}

/// Whether `name` looks like a Linux network interface name given by the kernel, udev or
/// biosdevname: `eth0`, `eno1`, `ens1f0`, `enp65s0f0`, `enx001122334455`, `ib0`, `em1`,
/// `p1p1`, `bond0`, `wlan0`.
fn netdev_like(name: &str) -> bool {
    const PREFIXES: &[&str] = &["eth", "en", "ib", "em", "bond", "wlan", "wl", "p"];
    if name.is_empty() || name.len() > 15 || !name.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return false;
    }
    PREFIXES.iter().any(|prefix| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            rest.bytes().next().is_some_and(|b| b.is_ascii_digit())
                || (*prefix == "en" && rest.starts_with(['o', 's', 'p', 'x']))
                || (*prefix == "wl" && rest.starts_with(['p', 'o', 's']))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(nic: &str, queue: u32, pci: Option<&str>) -> IrqClass {
        IrqClass::NicQueue {
            nic: nic.to_string(),
            queue,
            pci: pci.map(str::to_string),
        }
    }

    #[test]
    fn recognises_nic_queues() {
        let cases = [
            ("eth0-TxRx-3", queue("eth0", 3, None)),
            ("i40e-eth0-TxRx-3", queue("eth0", 3, None)),
            ("iavf-ens1-TxRx-0", queue("ens1", 0, None)),
            ("ice-ens1f0-TxRx-12", queue("ens1f0", 12, None)),
            ("ens1f0-rx-2", queue("ens1f0", 2, None)),
            ("enp65s0f0-tx-1", queue("enp65s0f0", 1, None)),
            ("eth2-fp-5", queue("eth2", 5, None)),
            ("eth0-7", queue("eth0", 7, None)),
            ("igb0:que 3", queue("igb0", 3, None)),
            ("virtio0-input.0", queue("virtio0", 0, None)),
            ("virtio2-output.1", queue("virtio2", 1, None)),
            (
                "mlx5_comp3@pci:0000:41:00.0",
                queue("0000:41:00.0", 3, Some("0000:41:00.0")),
            ),
            (
                "hns3-0000:7d:00.0-TxRx-0",
                queue("0000:7d:00.0", 0, Some("0000:7d:00.0")),
            ),
        ];
        for (action, expected) in cases {
            assert_eq!(classify(&[action]), expected, "{action}");
        }
    }

    #[test]
    fn recognises_other_nic_vectors() {
        let nic = |nic: &str, pci: Option<&str>| IrqClass::Nic {
            nic: nic.to_string(),
            pci: pci.map(str::to_string),
        };
        assert_eq!(classify(&["eth0"]), nic("eth0", None));
        assert_eq!(classify(&["enp65s0f0"]), nic("enp65s0f0", None));
        assert_eq!(
            classify(&["mlx5_async0@pci:0000:41:00.0"]),
            nic("0000:41:00.0", Some("0000:41:00.0"))
        );
        assert_eq!(
            classify(&["i40e-0000:41:00.0:misc"]),
            nic("0000:41:00.0", Some("0000:41:00.0"))
        );
        assert_eq!(classify(&["igb0:link"]), nic("igb0", None));
        // A shared legacy IRQ counts as the NIC.
        assert_eq!(classify(&["ehci_hcd:usb1", "eth1"]), nic("eth1", None));
    }

    #[test]
    fn recognises_storage_with_managed_hints() {
        let storage = |device: &str, queue: Option<u32>, managed: bool| IrqClass::Storage {
            device: device.to_string(),
            queue,
            managed,
        };
        assert_eq!(classify(&["nvme0q0"]), storage("nvme0", Some(0), false));
        assert_eq!(classify(&["nvme12q7"]), storage("nvme12", Some(7), true));
        assert_eq!(
            classify(&["virtio1-req.0"]),
            storage("virtio1", Some(0), true)
        );
        assert_eq!(
            classify(&["mpt3sas0-msix3"]),
            storage("mpt3sas0", Some(3), true)
        );
        assert_eq!(
            classify(&["ahci[0000:00:17.0]"]),
            storage("ahci[0000:00:17.0]", None, false)
        );
    }

    #[test]
    fn recognises_timers_and_leaves_the_rest() {
        for action in ["timer", "hpet2", "arch_timer"] {
            assert_eq!(classify(&[action]), IrqClass::Timer, "{action}");
        }
        for action in [
            "ACPI:Ged",
            "ttyS0",
            "virtio0-config",
            "xhci_hcd",
            "PCIe PME",
            "i8042",
            "rtc0",
            "dmar0",
            "nvmeq1",
            "eth-TxRx-x",
            "-TxRx-1",
            "",
        ] {
            assert_eq!(classify(&[action]), IrqClass::Other, "{action}");
        }
        assert_eq!(classify::<&str>(&[]), IrqClass::Other);
    }

    #[test]
    fn device_nodes_come_from_sysfs_paths() {
        assert_eq!(
            queue("eth0", 1, None).device_node_path().as_deref(),
            Some("/sys/class/net/eth0/device/numa_node")
        );
        assert_eq!(
            classify(&["mlx5_comp0@pci:0000:41:00.0"])
                .device_node_path()
                .as_deref(),
            Some("/sys/bus/pci/devices/0000:41:00.0/numa_node")
        );
        assert_eq!(
            classify(&["nvme1q2"]).device_node_path().as_deref(),
            Some("/sys/class/nvme/nvme1/device/numa_node")
        );
        assert_eq!(IrqClass::Timer.device_node_path(), None);
    }

    #[test]
    fn serializes_with_a_kind_tag() {
        let json = serde_json::to_string(&queue("eth0", 3, None)).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"nic_queue","nic":"eth0","queue":3,"pci":null}"#
        );
        let back: IrqClass = serde_json::from_str(&json).unwrap();
        assert_eq!(back, queue("eth0", 3, None));
        assert_eq!(
            serde_json::to_string(&IrqClass::Timer).unwrap(),
            r#"{"kind":"timer"}"#
        );
    }
}
