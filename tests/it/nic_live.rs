//! NICs read on the live machine through ethtool's netlink interface: a veth pair made for the
//! test (`ip link add … type veth`, removed whatever happens) reports its channels, the first
//! device-backed interface (eth0, virtio-net, on the CI VM) its coalescing, and a snapshot
//! taken now shows the same NIC block offline. `#[ignore]`d: it runs only with
//! `LOWLAT_LIVE_TESTS=1` and `--include-ignored`, as root (CI does all three).

use crate::support::{is_root, live_tests_allowed, lowlat, missing_data};
use lowlat::machine::Machine;
use lowlat::sysroot::SysRoot;
use std::process::Command;

/// A veth pair that is removed when dropped.
struct VethPair(&'static str);

impl VethPair {
    fn add(name: &'static str, peer: &str) -> Option<Self> {
        let _ = Command::new("ip").args(["link", "del", name]).output();
        let made = Command::new("ip")
            .args(["link", "add", name, "type", "veth", "peer", "name", peer])
            .status()
            .ok()?;
        made.success().then_some(Self(name))
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", self.0]).status();
    }
}

#[test]
#[ignore = "changes the live machine (a veth pair); run with LOWLAT_LIVE_TESTS=1"]
fn live_nics_answer_through_netlink_and_snapshots_keep_the_answers() {
    if !live_tests_allowed() || !is_root("adds a veth pair") {
        return;
    }
    let Some(_veth) = VethPair::add("llnic0", "llnic1") else {
        missing_data("ip link add … type veth (iproute2 and the veth module)");
        return;
    };
    let machine = Machine::read(&SysRoot::live());
    let net = machine.net.get().expect("interfaces");
    let veth = net.iter().find(|i| i.name == "llnic0").expect("the veth");
    let nic = veth.nic.as_ref().expect("asked");
    assert_eq!(nic.driver.get().unwrap().driver, "veth");
    let channels = nic.channels.get().expect("veth answers channels");
    assert!(channels.rx.max.is_some_and(|m| m >= 1), "{channels:?}");
    assert!(
        nic.coalesce
            .reason()
            .is_some_and(|r| r.contains("EOPNOTSUPP")),
        "veth refuses coalescing, said: {:?}",
        nic.coalesce
    );
    let Some(device) = net.iter().find(|i| i.device && i.nic.is_some()) else {
        missing_data("a device-backed network interface (eth0 on the CI VM)");
        return;
    };
    let nic = device.nic.as_ref().unwrap();
    let coalesce = nic.coalesce.get().expect("the device answers coalescing");
    assert!(coalesce.rx_frames.is_some() || coalesce.rx_usecs.is_some());
    assert!(
        nic.unknown_attributes.is_empty(),
        "{:?}",
        nic.unknown_attributes
    );

    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("s.lowlat");
    lowlat(&["snapshot", "-o", snapshot.to_str().unwrap()])
        .assert()
        .success();
    let live = lowlat(&["inventory"]).output().unwrap();
    let offline = lowlat(&["inventory", "--snapshot", snapshot.to_str().unwrap()])
        .output()
        .unwrap();
    let block = |out: &[u8]| {
        let text = String::from_utf8_lossy(out).into_owned();
        let start = text.find("\nNICs ").expect("a NICs row");
        let end = text[start + 1..]
            .find("\n\n")
            .map_or(text.len(), |e| start + 1 + e);
        text[start..end]
            .lines()
            .filter(|l| !l.contains("IRQs") && !l.contains("effective"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let live_block = block(&live.stdout);
    assert!(live_block.contains("llnic0: veth"), "{live_block}");
    assert_eq!(live_block, block(&offline.stdout));
}
