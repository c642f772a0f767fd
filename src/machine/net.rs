//! Network interfaces from `/sys/class/net`: whether a device backs them, its NUMA node, and
//! the receive-packet-steering (RPS) mask of each receive queue.

use serde::{Deserialize, Serialize};

use super::nic::{self, Nic, ethtool::Asker};
use super::{Avail, CpuSet, Reader};

/// Where the kernel lists network interfaces.
pub(crate) const NET_DIR: &str = "/sys/class/net";

/// One network interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetInterface {
    /// Interface name (`ens1f0np0`, `lo`, `veth1a2b`).
    pub name: String,
    /// Whether a device backs it (`/sys/class/net/<name>/device` exists, or its driver
    /// information names a PCI address): a NIC or a virtio device, as opposed to loopback,
    /// bridges, veth and other software interfaces.
    pub device: bool,
    /// NUMA node of the device (`device/numa_node`); `None` when absent or -1.
    pub numa_node: Option<u32>,
    /// The receive queues, by number.
    pub rx_queues: Vec<RxQueue>,
    /// What ethtool and sysfs say about the device (absent for loopback, and in a tree or
    /// snapshot that holds no ethtool answers for the interface: one captured before lowlat
    /// asked ethtool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<Nic>,
}

/// One receive queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RxQueue {
    /// Queue number (`rx-3` is 3).
    pub index: u32,
    /// The CPUs RPS steers this queue's packets to (`rps_cpus`; empty: RPS off); unavailable
    /// on kernels built without RPS.
    pub rps_cpus: Avail<CpuSet>,
}

impl NetInterface {
    /// Every CPU any receive queue steers to.
    pub fn rps_union(&self) -> CpuSet {
        self.rx_queues
            .iter()
            .filter_map(|q| q.rps_cpus.get())
            .fold(CpuSet::new(), |all, cpus| all.union(cpus))
    }
}

/// Reads every interface. Unavailable when `/sys/class/net` cannot be listed.
pub(crate) fn read(r: &mut Reader) -> Avail<Vec<NetInterface>> {
    let names = match r.root.list(NET_DIR) {
        Ok(names) => names,
        Err(e) => return Avail::missing(e.to_string()),
    };
    if names.is_empty() && !r.root.is_dir(NET_DIR) {
        return Avail::missing(format!("{NET_DIR} does not exist"));
    }
    let mut asker = Asker::default();
    let interfaces = names
        .into_iter()
        .map(|name| {
            let dir = format!("{NET_DIR}/{name}");
            let device = r.root.exists(&format!("{dir}/device"));
            let numa_node = if device {
                r.opt::<i64>(&format!("{dir}/device/numa_node"))
                    .and_then(|n| u32::try_from(n).ok())
            } else {
                None
            };
            let rx_queues = r
                .root
                .list_numbered(&format!("{dir}/queues"), "rx-")
                .into_iter()
                .map(|(index, queue)| RxQueue {
                    index,
                    rps_cpus: r.cpumask(&format!("{dir}/queues/{queue}/rps_cpus")),
                })
                .collect();
            let answers = nic::ethtool::answer_path(&name, "");
            // Offline, only what a live read captured, or what a bundle kept of ethtool's
            // output, is there to read.
            let printed = format!("{}/ethtool_-i_{name}", crate::sysroot::PRINTED_DIR);
            let asks = name != "lo"
                && (r.root.is_live()
                    || r.root.is_dir(answers.trim_end_matches('/'))
                    || r.root.exists(&printed));
            let nic = asks.then(|| nic::read(r, &mut asker, &name, &dir));
            // A PCI function is a device, also where its sysfs link was not captured (a
            // bundle's ethtool -i names it).
            let device = device || nic.as_ref().is_some_and(|nic| nic.pci_address.is_some());
            NetInterface {
                name,
                device,
                numa_node,
                rx_queues,
                nic,
            }
        })
        .collect();
    Avail::Available(interfaces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_devices_nodes_and_rps_masks() {
        let net = "/sys/class/net";
        let dir = TestTree::with(&[
            (&format!("{net}/eth0/device/numa_node"), "1\n"),
            (
                &format!("{net}/eth0/queues/rx-0/rps_cpus"),
                "00000000,00000101\n",
            ),
            (&format!("{net}/eth0/queues/rx-10/rps_cpus"), "0\n"),
            (&format!("{net}/eth0/queues/rx-2/rps_cpus"), "zz\n"),
            (&format!("{net}/eth0/queues/tx-0/xps_cpus"), "0\n"),
            (&format!("{net}/lo/queues/rx-0/rps_cpus"), "0\n"),
            (&format!("{net}/virbr0/device/numa_node"), "-1\n"),
        ]);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let interfaces = read(&mut r).get_owned().unwrap();
        let names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "lo", "virbr0"]);
        let eth0 = &interfaces[0];
        assert!(eth0.device);
        assert_eq!(eth0.numa_node, Some(1));
        let indexes: Vec<u32> = eth0.rx_queues.iter().map(|q| q.index).collect();
        assert_eq!(indexes, [0, 2, 10]);
        assert_eq!(eth0.rps_union().to_list(), "0,8");
        assert!(eth0.rx_queues[1].rps_cpus.get().is_none());
        assert_eq!(
            r.warnings.into_vec().len(),
            1,
            "the garbled mask is warned about"
        );
        assert!(!interfaces[1].device);
        assert_eq!(interfaces[2].numa_node, None);
    }

    #[test]
    fn offline_only_interfaces_with_captured_answers_are_asked_about() {
        let dir = TestTree::with(&[
            ("/sys/class/net/veth0/queues/rx-0/rps_cpus", "0\n"),
            ("/sys/class/net/eth0/device/numa_node", "0\n"),
            ("/lowlat-answers/ethtool/veth1/drvinfo", "driver: veth\n"),
            ("/sys/class/net/veth1/queues/rx-0/rps_cpus", "0\n"),
        ]);
        let root = dir.root();
        let mut r = Reader::new(&root);
        let all = read(&mut r).get_owned().unwrap();
        let asked: Vec<(&str, bool)> = all
            .iter()
            .map(|i| (i.name.as_str(), i.nic.is_some()))
            .collect();
        assert_eq!(asked, [("eth0", false), ("veth0", false), ("veth1", true)]);
    }

    #[test]
    fn a_missing_class_dir_is_unavailable() {
        let root = TestTree::empty().root();
        let mut r = Reader::new(&root);
        assert!(read(&mut r).reason().is_some());
    }
}
