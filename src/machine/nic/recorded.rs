//! Recorded `ethtool` outputs of real NICs (`tests/data/nic/*.txt`) turned into the captured
//! answers a live read of that NIC would have left: the netlink replies and refusals encoded
//! as the kernel sends them, the driver information as text, and the sysfs files around them.
//!
//! A recording is a list of commands (`$ ethtool -c ens1f0`) each followed by what it
//! printed; `error: EOPNOTSUPP` in place of the output records a refusal. Lines starting with
//! `#` are comments (the sources). Only the fields lowlat reads are encoded.

use super::ethtool;
use super::printed;
use crate::machine::topology;
use crate::test_tree::TestTree;

/// One recorded command and its output lines.
struct Section<'a> {
    option: &'a str,
    lines: Vec<&'a str>,
}

/// The sections of a recording.
fn sections(text: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ethtool ") {
            let option = command.split_whitespace().next().unwrap_or("");
            out.push(Section {
                option,
                lines: Vec::new(),
            });
        } else if let Some(section) = out.last_mut() {
            section.lines.push(line);
        }
    }
    out
}

/// Writes the captured answers of the recording `text` for interface `name` into `tree`,
/// and the interface's sysfs directory (a device on NUMA node `node`).
pub(crate) fn write(tree: &TestTree, name: &str, text: &str, node: u32) {
    for section in sections(text) {
        if let Some((file, bytes)) = printed::encode(section.option, &section.lines, name) {
            tree.write(&ethtool::answer_path(name, &file), bytes);
        }
    }
    let dir = format!("/sys/class/net/{name}");
    tree.write(&format!("{dir}/device/numa_node"), format!("{node}\n"));
    tree.write(&format!("{dir}/speed"), "25000\n");
    tree.write(&format!("{dir}/napi_defer_hard_irqs"), "0\n");
    tree.write(&format!("{dir}/gro_flush_timeout"), "0\n");
    tree.write(&format!("{dir}/queues/rx-0/rps_cpus"), "0\n");
    tree.write(&format!("{dir}/queues/tx-0/xps_cpus"), "0\n");
}

/// The recording of `driver` (`mlx5`, `ice`, `ixgbe`, `igb`, `sfc`) under tests/data/nic/.
pub(crate) fn recording(driver: &str) -> String {
    let path = format!("{}/tests/data/nic/{driver}.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The worked example of docs/guide/nic.md: the recorded E810 (ice) as `ens5f0` on node 1 of
/// a two-node, eight-CPU machine (CPUs 0-3 on node 0, 4-7 on node 1), its misc IRQ 139 and
/// queue IRQs 140-143 (MSI-X vectors of PCI device 0000:e1:00.0) allowed everywhere, irqbalance running and `net.core.busy_read` at
/// 50 µs.
pub(crate) fn two_node_machine() -> TestTree {
    let d = TestTree::empty();
    d.write("/proc/cpuinfo", "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\nmodel : 106\nflags : fpu tsc constant_tsc nonstop_tsc\n\n");
    d.write("/proc/sys/kernel/osrelease", "6.8.0\n");
    d.write("/proc/cmdline", "ro\n");
    topology::write_two_nodes(&d);
    write(&d, "ens5f0", &recording("ice"), 1);
    let mut interrupts = String::from(
        "            CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7\n",
    );
    let names = [(139, "ice-0000:e1:00.0:misc".to_string())]
        .into_iter()
        .chain((0..4).map(|q| (140 + q, format!("ice-ens5f0-TxRx-{q}"))));
    for (irq, name) in names {
        interrupts.push_str(&format!(
            " {irq}:          0          0          0          0          0          0          0          0  IR-PCI-MSIX-0000:e1:00.0 0-edge      {name}\n"
        ));
        d.write(&format!("/proc/irq/{irq}/smp_affinity_list"), "0-7\n");
        d.write(
            &format!("/proc/irq/{irq}/effective_affinity_list"),
            format!("{}\n", irq % 8),
        );
        d.write(
            &format!("/sys/bus/pci/devices/0000:e1:00.0/msi_irqs/{irq}"),
            "msix\n",
        );
    }
    d.write("/sys/bus/pci/devices/0000:e1:00.0/numa_node", "1\n");
    // The per-CPU rows the kernel lists after the IRQs: a table without them is cut short.
    interrupts.push_str(" ERR:          0\n");
    d.write("/proc/interrupts", interrupts);
    d.write(
        "/proc/1/stat",
        format!("1 (systemd) S {}\n", vec!["0"; 49].join(" ")),
    );
    d.write("/proc/1/status", "Cpus_allowed_list:\t0-7\n");
    d.write(
        "/proc/900/stat",
        format!("900 (irqbalance) S {}\n", vec!["0"; 49].join(" ")),
    );
    d.write("/proc/900/status", "Cpus_allowed_list:\t0-7\n");
    d.write("/etc/sysconfig/irqbalance", "IRQBALANCE_ARGS=\n");
    d.write("/proc/sys/net/core/busy_read", "50\n");
    d.write("/proc/sys/net/core/busy_poll", "0\n");
    d
}
