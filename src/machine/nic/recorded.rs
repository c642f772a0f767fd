//! Recorded `ethtool` outputs of real NICs (`tests/data/nic/*.txt`) turned into the captured
//! answers a live read of that NIC would have left: the netlink replies and refusals encoded
//! as the kernel sends them, the driver information as text, and the sysfs files around them.
//!
//! A recording is a list of commands (`$ ethtool -c ens1f0`) each followed by what it
//! printed; `error: EOPNOTSUPP` in place of the output records a refusal. Lines starting with
//! `#` are comments (the sources). Only the fields lowlat reads are encoded.

use super::ethtool::{self, Query, coalesce_attr};
use super::netlink::{self, Request};
use crate::test_tree::TestTree;

/// The family id the encoded replies carry (any: replies are not checked against it).
const FAMILY: u16 = 0x1c;

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

/// `key: value` of a line, both trimmed.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// A number of ethtool's text (`n/a` and garbage are none).
fn number(value: &str) -> Option<u32> {
    value.split_whitespace().next()?.parse().ok()
}

/// The errno a `error: NAME` line names.
fn errno(name: &str) -> i32 {
    match name {
        "EOPNOTSUPP" => libc::EOPNOTSUPP,
        "ENODEV" => libc::ENODEV,
        "EINVAL" => libc::EINVAL,
        other => panic!("unknown errno name {other}"),
    }
}

/// Attributes after the generic netlink header of a reply under construction.
fn reply(query: Query, name: &str, fill: impl FnOnce(&mut Request)) -> Vec<u8> {
    let mut body = Request::new(0, 0, 0, 0);
    body.begin_nest(ethtool::A_HEADER)
        .put_str(ethtool::A_HEADER_DEV_NAME, name)
        .end_nest();
    fill(&mut body);
    let bytes = body.finish(0);
    netlink::reply_message(FAMILY, query.command() + 1, &bytes[20..])
}

/// `Pre-set maximums:` / `Current hardware settings:` blocks of `-l` and `-g`: (block, key,
/// value) for each line.
fn blocks<'a>(lines: &[&'a str]) -> Vec<(bool, &'a str, Option<u32>)> {
    let mut current = false;
    let mut out = Vec::new();
    for line in lines {
        if line.starts_with("Pre-set maximums") {
            current = false;
        } else if line.starts_with("Current hardware settings") {
            current = true;
        } else if let Some((k, v)) = key_value(line) {
            out.push((current, k, number(v)));
        }
    }
    out
}

/// Encodes one section's answer; `None` for a section lowlat does not read.
fn encode(section: &Section, name: &str) -> Option<(String, Vec<u8>)> {
    let refusal = section
        .lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("error: "));
    let query = match section.option {
        "-i" => {
            let text: String = section.lines.iter().map(|l| format!("{l}\n")).collect();
            return Some((ethtool::DRVINFO.to_string(), text.into_bytes()));
        }
        "-l" => Query::Channels,
        "-g" => Query::Rings,
        "-c" => Query::Coalesce,
        "-k" => Query::Features,
        "-T" => Query::Tsinfo,
        "-x" => Query::Rss,
        _ => return None,
    };
    if let Some(name) = refusal {
        return Some((
            query.name().to_string(),
            netlink::error_message(errno(name), None),
        ));
    }
    let lines = &section.lines;
    let bytes = reply(query, name, |r| match query {
        Query::Channels => {
            for (current, key, value) in blocks(lines) {
                let base = match key {
                    "RX" => 2,
                    "TX" => 3,
                    "Other" => 4,
                    "Combined" => 5,
                    _ => continue,
                };
                if let Some(v) = value {
                    r.put_u32(if current { base + 4 } else { base }, v);
                }
            }
        }
        Query::Rings => {
            for (current, key, value) in blocks(lines) {
                let kind = match (key, current) {
                    ("RX", false) => 2,
                    ("TX", false) => 5,
                    ("RX", true) => 6,
                    ("TX", true) => 9,
                    _ => continue,
                };
                if let Some(v) = value {
                    r.put_u32(kind, v);
                }
            }
        }
        Query::Coalesce => {
            for line in lines {
                if let Some(rest) = line.strip_prefix("Adaptive RX:") {
                    let mut words = rest.split_whitespace();
                    let rx = words.next().unwrap_or("n/a");
                    let tx = words.nth(1).unwrap_or("n/a");
                    for (kind, v) in [
                        (coalesce_attr::ADAPTIVE_RX, rx),
                        (coalesce_attr::ADAPTIVE_TX, tx),
                    ] {
                        if v != "n/a" {
                            r.put_u8(kind, u8::from(v == "on"));
                        }
                    }
                    continue;
                }
                let Some((key, value)) = key_value(line) else {
                    continue;
                };
                let kind = match key {
                    "rx-usecs" => coalesce_attr::RX_USECS,
                    "rx-frames" => coalesce_attr::RX_FRAMES,
                    "tx-usecs" => coalesce_attr::TX_USECS,
                    "tx-frames" => coalesce_attr::TX_FRAMES,
                    _ => continue,
                };
                if let Some(v) = number(value) {
                    r.put_u32(kind, v);
                }
            }
        }
        Query::Features => {
            let mut hw = Vec::new();
            let mut active = Vec::new();
            for line in lines {
                let Some((key, value)) = key_value(line) else {
                    continue;
                };
                let kernel = match key {
                    "generic-receive-offload" => "rx-gro",
                    "large-receive-offload" => "large-receive-offload",
                    "tx-tcp-segmentation" => "tx-tcp-segmentation",
                    "tx-tcp-ecn-segmentation" => "tx-tcp-ecn-segmentation",
                    "tx-tcp-mangleid-segmentation" => "tx-tcp-mangleid-segmentation",
                    "tx-tcp6-segmentation" => "tx-tcp6-segmentation",
                    "generic-segmentation-offload" => "tx-generic-segmentation",
                    "ntuple-filters" => "rx-ntuple-filter",
                    _ => continue,
                };
                if value.starts_with("on") {
                    active.push(kernel);
                }
                if !value.contains("[fixed]") {
                    hw.push(kernel);
                }
            }
            for (kind, names) in [(2, &hw), (4, &active)] {
                bitset(r, kind, names);
            }
        }
        Query::Tsinfo => {
            for line in lines {
                if let Some(("PTP Hardware Clock", v)) = key_value(line)
                    && let Some(index) = number(v)
                {
                    r.put_u32(5, index);
                }
            }
        }
        Query::Rss => {
            let mut table = Vec::new();
            for line in lines {
                if let Some((index, queues)) = line.trim().split_once(':')
                    && index.trim().parse::<u32>().is_ok()
                {
                    for q in queues
                        .split_whitespace()
                        .filter_map(|q| q.parse::<u32>().ok())
                    {
                        table.extend_from_slice(&q.to_ne_bytes());
                    }
                }
            }
            if !table.is_empty() {
                r.put(4, &table);
            }
        }
    });
    Some((query.name().to_string(), bytes))
}

/// A verbose bitset in list form (`ETHTOOL_A_BITSET_NOMASK`) of the named bits, each with
/// one index in every bitset (as the kernel's feature bits have): its place in
/// [`ethtool::FEATURE_NAMES`], then in [`ethtool::TSO_GROUP`].
fn bitset(r: &mut Request, kind: u16, names: &[&str]) {
    r.begin_nest(kind).put(1, &[]).begin_nest(3);
    for name in names {
        let index = ethtool::FEATURE_NAMES
            .iter()
            .chain(&ethtool::TSO_GROUP[1..])
            .position(|n| n == name)
            .expect("a feature lowlat reads");
        r.begin_nest(1)
            .put_u32(1, u32::try_from(index).expect("few bits"))
            .put_str(2, name)
            .end_nest();
    }
    r.end_nest().end_nest();
}

/// Writes the captured answers of the recording `text` for interface `name` into `tree`,
/// and the interface's sysfs directory (a device on NUMA node `node`).
pub(crate) fn write(tree: &TestTree, name: &str, text: &str, node: u32) {
    for section in sections(text) {
        if let Some((file, bytes)) = encode(&section, name) {
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
    d.write("/sys/devices/system/cpu/possible", "0-7\n");
    d.write("/sys/devices/system/cpu/online", "0-7\n");
    for cpu in 0..8 {
        let t = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        d.write(
            &format!("{t}/physical_package_id"),
            format!("{}\n", cpu / 4),
        );
        d.write(&format!("{t}/core_id"), format!("{}\n", cpu % 4));
        d.write(&format!("{t}/thread_siblings_list"), format!("{cpu}\n"));
    }
    d.write("/sys/devices/system/node/node0/cpulist", "0-3\n");
    d.write("/sys/devices/system/node/node1/cpulist", "4-7\n");
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
