//! Parsers of the FreeBSD command outputs a capture holds: `vmstat -ai`, `procstat -at`,
//! `cpuset -g` and `kern.sched.topology_spec`. Pure functions over text; the formats each
//! accepts, by FreeBSD version, are listed in tests/data/freebsd/README.md.

use crate::machine::cpulist::{CpuSet, CpuSetError};
use serde::Serialize;

/// One line of `vmstat -ai`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterruptLine {
    /// The IRQ number (`irq256:`); `None` for per-CPU lines (`cpu0:timer`), which no cpuset
    /// binds.
    pub irq: Option<u32>,
    /// The source's name after the number (`igb0:que 0`).
    pub name: String,
    /// Interrupts since boot.
    pub total: u64,
    /// Interrupts per second, averaged since boot.
    pub rate: u64,
}

/// A line of a command's output that could not be read: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses `vmstat -ai` (or `vmstat -i`): the header, then `NAME TOTAL RATE` lines; the
/// `Total` line at the end is left out. Lines that do not end in two numbers are returned
/// as bad lines.
pub fn vmstat_interrupts(text: &str) -> (Vec<InterruptLine>, Vec<BadLine>) {
    let mut lines = Vec::new();
    let mut bad = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || (index == 0 && trimmed.starts_with("interrupt")) {
            continue;
        }
        let split = trimmed
            .rsplit_once(char::is_whitespace)
            .and_then(|(rest, rate)| {
                let (name, total) = rest.trim_end().rsplit_once(char::is_whitespace)?;
                Some((name, total, rate))
            });
        let Some((name, total, rate)) = split else {
            bad.push(BadLine {
                line: index + 1,
                reason: "not NAME TOTAL RATE".into(),
            });
            continue;
        };
        let (Ok(rate), Ok(total)) = (rate.parse::<u64>(), total.parse::<u64>()) else {
            bad.push(BadLine {
                line: index + 1,
                reason: "does not end in two numbers (total, rate)".into(),
            });
            continue;
        };
        let name = name.trim();
        if name == "Total" {
            continue;
        }
        let (irq, name) = match name
            .strip_prefix("irq")
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(number, rest)| Some((number.parse::<u32>().ok()?, rest.trim())))
        {
            Some((irq, rest)) => (Some(irq), rest),
            None => (None, name),
        };
        lines.push(InterruptLine {
            irq,
            name: name.to_string(),
            total,
            rate,
        });
    }
    (lines, bad)
}

/// Which direction a NIC queue's vector serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// Receive and transmit on one vector (`igb0:que 0`, FreeBSD 8.x–11.x).
    RxTx,
    /// Receive (`igb0:rxq0` of iflib, whose transmit queues share it; `em0:rx 0`).
    Rx,
    /// Transmit only (`em0:tx 0`).
    Tx,
}

/// A NIC queue an interrupt's name says it serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct QueueName {
    /// The interface (`igb0`).
    pub nic: String,
    /// Its driver (`igb`).
    pub driver: String,
    /// Its unit number (`0`).
    pub unit: u32,
    /// The queue number.
    pub queue: u32,
    /// Receive, transmit or both.
    pub kind: QueueKind,
}

/// The NIC queue an interrupt name (`igb0:que 0`, `igb0:rxq0`, `em0:rx 0`) serves, or `None`
/// for any other name (a link or admin vector, a disk, a timer).
pub fn nic_queue(name: &str) -> Option<QueueName> {
    let (nic, tail) = name.split_once(':')?;
    let digits = nic.find(|c: char| c.is_ascii_digit())?;
    let (driver, unit) = nic.split_at(digits);
    if driver.is_empty() || !driver.chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    let unit: u32 = unit.parse().ok()?;
    let number = |rest: &str| rest.trim().parse::<u32>().ok();
    let (kind, queue) = if let Some(rest) = tail.strip_prefix("que") {
        (QueueKind::RxTx, number(rest)?)
    } else if let Some(rest) = tail.strip_prefix("rxq") {
        (QueueKind::Rx, number(rest)?)
    } else if let Some(rest) = tail.strip_prefix("txq") {
        (QueueKind::Tx, number(rest)?)
    } else if let Some(rest) = tail.strip_prefix("rx ") {
        (QueueKind::Rx, number(rest)?)
    } else if let Some(rest) = tail.strip_prefix("tx ") {
        (QueueKind::Tx, number(rest)?)
    } else {
        return None;
    };
    Some(QueueName {
        nic: nic.to_string(),
        driver: driver.to_string(),
        unit,
        queue,
        kind,
    })
}

/// The receive and transmit queue counts of an iflib NIC from the names of its nodes
/// (`sysctl -N dev.igb.0.iflib`: `dev.igb.0.iflib.rxq3.rxq_fl0.cidx`, …): the distinct
/// `rxqN` and `txqN`.
pub fn iflib_queue_counts(names: &str) -> (u32, u32) {
    let mut rx = std::collections::BTreeSet::new();
    let mut tx = std::collections::BTreeSet::new();
    for name in names.lines() {
        for part in name.trim().split('.') {
            let (set, rest) = if let Some(rest) = part.strip_prefix("rxq") {
                (&mut rx, rest)
            } else if let Some(rest) = part.strip_prefix("txq") {
                (&mut tx, rest)
            } else {
                continue;
            };
            if let Ok(n) = rest.parse::<u32>() {
                set.insert(n);
            }
        }
    }
    (rx.len() as u32, tx.len() as u32)
}

/// One thread of `procstat -at` (or of `procstat -ka`, whose first four columns are the same).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadLine {
    /// Process id (0: the kernel).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The process's command name (`kernel`, `intr`).
    pub comm: String,
    /// The thread's name (`dummynet`, `swi1: netisr 0`; `-` when it has none).
    pub tdname: String,
    /// The CPU it last ran on, where the output has the CPU column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<i32>,
}

/// Why a `procstat` output has no table to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no header line with PID, TID, COMM and TDNAME (not the output of procstat -at)")]
pub struct NoHeader;

/// Parses `procstat -at`: the columns are cut at the header's offsets, since COMM and TDNAME
/// hold spaces (`swi1: netisr 0`) and are 16 wide in 10.x, 19 in a later format and sized to the longest name in 14.3.
pub fn procstat_threads(text: &str) -> Result<(Vec<ThreadLine>, Vec<BadLine>), NoHeader> {
    let mut lines = text.lines().enumerate();
    let (header_at, header) = lines
        .by_ref()
        .find(|(_, line)| line.contains(" TID ") && line.contains("TDNAME"))
        .ok_or(NoHeader)?;
    let _ = header_at;
    let comm_at = header.find("COMM").ok_or(NoHeader)?;
    let tdname_at = header.find("TDNAME").ok_or(NoHeader)?;
    let after = tdname_at + "TDNAME".len();
    let next_at = header[after..]
        .find(|c: char| !c.is_whitespace())
        .map(|offset| after + offset);
    let has_cpu = next_at.is_some_and(|at| header[at..].starts_with("CPU"));
    let mut threads = Vec::new();
    let mut bad = Vec::new();
    for (index, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let cut = |from: usize, to: Option<usize>| -> Option<&str> {
            match to {
                Some(to) => line.get(from..to.min(line.len())),
                None => line.get(from..),
            }
        };
        let parsed = (|| {
            let mut ids = line.get(..comm_at)?.split_whitespace();
            let pid = ids.next()?.parse().ok()?;
            let tid = ids.next()?.parse().ok()?;
            let comm = cut(comm_at, Some(tdname_at))?.trim().to_string();
            let tdname = cut(tdname_at, next_at)?.trim().to_string();
            let cpu = match (has_cpu, next_at) {
                (true, Some(at)) => cut(at, None)?.split_whitespace().next()?.parse().ok(),
                _ => None,
            };
            Some(ThreadLine {
                pid,
                tid,
                comm,
                tdname,
                cpu,
            })
        })();
        match parsed {
            Some(thread) if !thread.comm.is_empty() => threads.push(thread),
            _ => bad.push(BadLine {
                line: index + 1,
                reason: "not PID TID COMM TDNAME at the header's columns".into(),
            }),
        }
    }
    Ok((threads, bad))
}

/// The CPU list of a `cpuset -g` output (`irq 256 mask: 0`, `tid 100083 mask: 0, 1, 2, 3`),
/// or why there is none. The `domain policy:` line that follows from 12.x is not the CPU list,
/// though 12.0-CURRENT wrote its domains after a `mask:` too (`pid 77295 domain policy:
/// first-touch mask: 0`).
pub fn cpuset_mask(text: &str) -> Result<CpuSet, MaskError> {
    let line = text
        .lines()
        .filter(|line| !line.contains(" domain policy: "))
        .find(|line| line.contains(" mask: ") || line.trim_end().ends_with(" mask:"))
        .ok_or(MaskError::NoMaskLine)?;
    let (_, list) = line.split_once("mask:").expect("found above");
    let set = CpuSet::parse_list(list.trim())?;
    if set.is_empty() {
        return Err(MaskError::Empty);
    }
    Ok(set)
}

/// Why a `cpuset -g` output holds no CPU list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaskError {
    /// No `mask:` line.
    #[error("no 'mask:' line (not the output of cpuset -g)")]
    NoMaskLine,
    /// The list after `mask:` is not a CPU list.
    #[error(transparent)]
    List(#[from] CpuSetError),
    /// The list is empty.
    #[error("an empty CPU list")]
    Empty,
}

/// One `<group>` of `kern.sched.topology_spec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopologyGroup {
    /// Its nesting level (1: the whole machine).
    pub level: u32,
    /// The cache level its CPUs share (0: none).
    pub cache_level: u32,
    /// Its CPUs (from the element's list, not the mask, whose layout changed in 12.x).
    pub cpus: CpuSet,
    /// Its flags: `THREAD`, `SMT`, `HTT` (hardware threads of one core), `NODE` (a NUMA
    /// domain).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// Why a `kern.sched.topology_spec` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Not well-formed XML (cut off, or another command's output).
    #[error("not XML: {0}")]
    NotXml(String),
    /// XML, but not `<groups>`.
    #[error("the root element is <{0}>, not <groups>: not a topology_spec")]
    NotGroups(String),
    /// A group without a usable CPU list.
    #[error("a <group> at level {level} has no CPU list: {reason}")]
    BadGroup {
        /// Its level.
        level: u32,
        /// What is wrong.
        reason: String,
    },
}

/// Parses `kern.sched.topology_spec` (with roxmltree) into its groups, outermost first.
pub fn topology_groups(text: &str) -> Result<Vec<TopologyGroup>, TopologyError> {
    let document =
        roxmltree::Document::parse(text).map_err(|e| TopologyError::NotXml(e.to_string()))?;
    let root = document.root_element();
    if root.tag_name().name() != "groups" {
        return Err(TopologyError::NotGroups(root.tag_name().name().to_string()));
    }
    let mut groups = Vec::new();
    for node in root.descendants().filter(|n| n.has_tag_name("group")) {
        let number = |name: &str| node.attribute(name).and_then(|v| v.parse().ok());
        let level = number("level").unwrap_or(0);
        let cpu = node
            .children()
            .find(|n| n.has_tag_name("cpu"))
            .ok_or_else(|| TopologyError::BadGroup {
                level,
                reason: "no <cpu> element".into(),
            })?;
        let cpus =
            CpuSet::parse_list(cpu.text().unwrap_or("")).map_err(|e| TopologyError::BadGroup {
                level,
                reason: e.to_string(),
            })?;
        let flags = node
            .children()
            .filter(|n| n.has_tag_name("flags"))
            .flat_map(|flags| flags.children().filter(|n| n.has_tag_name("flag")))
            .filter_map(|flag| flag.attribute("name").map(str::to_string))
            .collect();
        groups.push(TopologyGroup {
            level,
            cache_level: number("cache-level").unwrap_or(0),
            cpus,
            flags,
        });
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/data/freebsd/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn vmstat_of_freebsd_13_names_iflib_queues_and_leaves_other_sources() {
        let (lines, bad) = vmstat_interrupts(&data("vmstat-ai.13-iflib.txt"));
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(lines.len(), 25);
        let rxq1 = lines.iter().find(|l| l.irq == Some(135)).unwrap();
        assert_eq!(
            (rxq1.name.as_str(), rxq1.total, rxq1.rate),
            ("igb0:rxq1", 6, 0)
        );
        let queues: Vec<_> = lines.iter().filter_map(|l| nic_queue(&l.name)).collect();
        assert_eq!(
            queues.len(),
            4,
            "igb0:aq, nvme0:io0 and xhci0 are not NIC queues"
        );
        assert!(
            queues
                .iter()
                .all(|q| q.nic == "igb0" && q.kind == QueueKind::Rx)
        );
        assert_eq!(
            lines.iter().find(|l| l.name == "cpu3:timer").unwrap().irq,
            None
        );
    }

    #[test]
    fn queue_names_of_each_generation() {
        let q = nic_queue("igb3:que 2").unwrap();
        assert_eq!(
            (q.driver.as_str(), q.unit, q.queue, q.kind),
            ("igb", 3, 2, QueueKind::RxTx)
        );
        assert_eq!(nic_queue("ix1:rxq7").unwrap().queue, 7);
        assert_eq!(nic_queue("em0:tx 0").unwrap().kind, QueueKind::Tx);
        for other in [
            "igb0:link",
            "igb0:aq",
            "nvme0:io3",
            "cpu0:timer",
            "hdac0",
            "atkbd0",
        ] {
            assert_eq!(nic_queue(other), None, "{other}");
        }
    }

    #[test]
    fn vmstat_lines_without_counts_are_named() {
        let (lines, bad) =
            vmstat_interrupts("interrupt total rate\nirq256: igb0:que 0  10  1\ngarbage here\n");
        assert_eq!(lines.len(), 1);
        assert_eq!(bad[0].line, 3);
    }

    #[test]
    fn procstat_columns_are_cut_at_the_header_so_names_keep_their_spaces() {
        let (threads, bad) = procstat_threads(&data("procstat-ka.10x.txt")).unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(threads.len(), 11);
        let taskq = threads.iter().find(|t| t.tid == 100023).unwrap();
        assert_eq!((taskq.pid, taskq.comm.as_str()), (0, "kernel"));
        assert_eq!(taskq.tdname, "firmware taskq");
        assert_eq!(taskq.cpu, None, "procstat -ka has KSTACK, not CPU");
    }

    #[test]
    fn procstat_of_10x_and_of_14_3_whose_columns_are_sized_to_the_names() {
        let (threads, bad) = procstat_threads(&data("procstat-t.10x.txt")).unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(
            (threads[0].tid, threads[0].comm.as_str(), threads[0].cpu),
            (100065, "syslogd", Some(0))
        );
        let (threads, bad) = procstat_threads(&data("procstat-t.14.3.txt")).unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(threads.len(), 7);
        assert_eq!(
            (threads[1].tdname.as_str(), threads[1].cpu),
            ("logger", Some(-1))
        );
        assert_eq!(threads[0].tdname, "-");
    }

    #[test]
    fn procstat_at_of_12x_widths_reads_the_cpu() {
        let text = "  PID    TID COMM                TDNAME              CPU  PRI STATE   WCHAN    \n   \
                    0 100044 kernel              dummynet              1    8 sleep   -        \n   \
                   12 100012 intr                swi1: netisr 0        0   28 wait    -        \n";
        let (threads, bad) = procstat_threads(text).unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(threads[1].tdname, "swi1: netisr 0");
        assert_eq!(threads[0].cpu, Some(1));
        assert_eq!(procstat_threads("PID COMM\n1 init\n"), Err(NoHeader));
    }

    #[test]
    fn iflib_queues_are_counted_from_the_node_names() {
        let names = "dev.igb.0.iflib.override_nrxqs\ndev.igb.0.iflib.txq0.cpu\n\
                     dev.igb.0.iflib.txq1.cpu\ndev.igb.0.iflib.rxq0.cpu\ndev.igb.0.iflib.rxq0.rxq_fl0.cidx\n\
                     dev.igb.0.iflib.rxq1.cpu\ndev.igb.0.iflib.rxq2.cpu\n";
        assert_eq!(iflib_queue_counts(names), (3, 2));
        assert_eq!(iflib_queue_counts(""), (0, 0));
    }

    #[test]
    fn cpuset_outputs() {
        assert_eq!(
            cpuset_mask(&data("cpuset-g-s0.12x.txt")).unwrap().to_list(),
            "0-3"
        );
        assert_eq!(cpuset_mask("irq 256 mask: 0\n").unwrap().to_list(), "0");
        // The recorded outputs of tests/data/freebsd (sources in its README).
        for (file, cpus) in [
            ("cpuset-g-s0.15.txt", "0-15"),
            ("cpuset-gp.oshi.txt", "0-1"),
            ("cpuset-g-p.12-current-2018.txt", "0-1"),
        ] {
            assert_eq!(cpuset_mask(&data(file)).unwrap().to_list(), cpus, "{file}");
        }
        // The domain line alone is not a CPU list; a thread gone before cpuset ran is said.
        let domains = data("cpuset-g-p.12-current-2018.txt")
            .lines()
            .nth(1)
            .unwrap()
            .to_string();
        assert!(cpuset_mask(&domains).is_err(), "{domains}");
        let gone = cpuset_mask(&data("cpuset-gp-gone.oshi.txt"))
            .unwrap_err()
            .to_string();
        assert!(gone.contains("no 'mask:' line"), "{gone}");
    }

    #[test]
    fn topology_of_the_smp4_example() {
        let groups = topology_groups(&data("topology_spec.smp4-example.xml")).unwrap();
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0].cpus.to_list(), "0-7");
        assert_eq!(groups[2].cpus.to_list(), "4-7");
        assert!(groups.iter().all(|g| g.flags.is_empty()));
    }

    #[test]
    fn topology_of_15x_with_smt_flags_and_word_masks() {
        // The real output of a Ryzen 9 3900X, cut off after its first L3 group where it was
        // published; closed here (the elements left open) to read what it holds.
        let text =
            data("topology_spec.ryzen-3900x.cut.xml") + "  </children>\n </group>\n</groups>\n";
        let groups = topology_groups(&text).unwrap();
        assert_eq!(groups[0].cpus.len(), 24);
        assert_eq!((groups[1].level, groups[1].cache_level), (2, 3));
        assert_eq!(groups[1].cpus.to_list(), "0-5");
        let smt: Vec<_> = groups
            .iter()
            .filter(|g| g.flags.iter().any(|f| f == "SMT"))
            .collect();
        assert_eq!(smt.len(), 3);
        assert_eq!(smt[2].cpus.to_list(), "4-5");
        assert_eq!(smt[0].flags, ["THREAD", "SMT"]);
    }

    proptest::proptest! {
        /// Every parser takes any text, and real outputs cut anywhere, without panicking.
        #[test]
        fn any_text_and_any_cut_of_a_real_output_parse_without_panicking(
            text in ".{0,400}",
            cut in 0usize..2000,
        ) {
            let real = data("procstat-ka.10x.txt") + &data("vmstat-ai.13-iflib.txt");
            let real: String = real.chars().take(cut).collect();
            for input in [text.as_str(), real.as_str()] {
                let (lines, _) = vmstat_interrupts(input);
                for line in lines {
                    let _ = nic_queue(&line.name);
                }
                let _ = procstat_threads(input);
                let _ = cpuset_mask(input);
                let _ = topology_groups(input);
                let _ = iflib_queue_counts(input);
            }
        }
    }

    #[test]
    fn a_topology_cut_off_or_not_xml_is_refused_by_name() {
        let cut = topology_groups(&data("topology_spec.ryzen-3900x.cut.xml")).unwrap_err();
        assert!(matches!(cut, TopologyError::NotXml(_)), "{cut}");
        assert!(
            topology_groups("0, 1, 2, 3")
                .unwrap_err()
                .to_string()
                .starts_with("not XML")
        );
        assert_eq!(
            topology_groups("<html/>").unwrap_err(),
            TopologyError::NotGroups("html".into())
        );
    }
}
