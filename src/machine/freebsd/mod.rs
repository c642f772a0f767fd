//! The model of a FreeBSD machine, read from a capture of `packaging/freebsd/lowlat-capture.sh`
//! (opened with `--snapshot FILE`): CPUs, cores and NUMA domains from
//! `kern.sched.topology_spec`, interrupts and the NIC queues they serve from `vmstat -ai`,
//! kernel threads from `procstat -at`, and the CPUs each is bound to from `cpuset -g`.
//!
//! The capture lays the commands' outputs out as files under [`capture`]'s paths, read
//! through the SysRoot like any snapshot.

pub mod capture;
pub mod parse;

use serde::Serialize;
use std::collections::BTreeMap;

use crate::machine::cpulist::CpuSet;
use crate::sysroot::SysRoot;
use parse::{QueueName, TopologyError, TopologyGroup};

/// A FreeBSD machine as its capture shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FreeBsdMachine {
    /// Host name.
    pub host: String,
    /// `uname -a`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uname: Option<String>,
    /// `kern.smp.cpus`: the number of CPUs.
    pub ncpu: u32,
    /// CPUs, cores and NUMA domains.
    pub topology: Topology,
    /// The network interfaces whose queues have interrupts, by name.
    pub nics: Vec<Nic>,
    /// Every interrupt of `vmstat -ai` with an IRQ number.
    pub interrupts: Vec<Interrupt>,
    /// The threads of the kernel's processes.
    pub kernel_threads: Vec<KernelThread>,
    /// The sysctls captured, by name (`net.isr.dispatch`).
    pub sysctls: BTreeMap<String, String>,
    /// /boot/loader.conf, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loader_conf: Option<String>,
    /// Lines that could not be read, each naming its file and line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// CPUs, cores and NUMA domains.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    /// Every CPU.
    pub cpus: CpuSet,
    /// Each core's CPUs (its hardware threads), in CPU order.
    pub cores: Vec<CpuSet>,
    /// Each NUMA domain's CPUs, domain 0 first (one domain holding every CPU when the
    /// topology has no `NODE` group).
    pub domains: Vec<CpuSet>,
    /// The groups as the kernel lists them, outermost first.
    pub groups: Vec<TopologyGroup>,
}

impl Topology {
    /// Whether some core has more than one hardware thread.
    pub fn smt(&self) -> bool {
        self.cores.iter().any(|core| core.len() > 1)
    }

    /// The NUMA domain of `cpu`.
    pub fn domain_of(&self, cpu: u32) -> Option<usize> {
        self.domains.iter().position(|d| d.contains(cpu))
    }
}

/// A network interface with queue interrupts.
#[derive(Debug, Clone, Serialize)]
pub struct Nic {
    /// `igb0`.
    pub name: String,
    /// Its NUMA domain (`dev.igb.0.%domain`), when captured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// Its queue interrupts' IRQ numbers, in queue order.
    pub queue_irqs: Vec<u32>,
    /// Its receive and transmit queues, where its driver is an iflib one (FreeBSD 12.0 and
    /// later: `sysctl -N dev.DRIVER.UNIT.iflib`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iflib_queues: Option<IflibQueues>,
}

/// The queues of an iflib NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IflibQueues {
    /// Receive queues.
    pub rx: u32,
    /// Transmit queues (which share the receive queues' interrupts).
    pub tx: u32,
}

/// One interrupt.
#[derive(Debug, Clone, Serialize)]
pub struct Interrupt {
    /// IRQ number.
    pub irq: u32,
    /// Its name in `vmstat -ai` (`igb0:que 0`).
    pub name: String,
    /// Interrupts since boot.
    pub total: u64,
    /// Interrupts per second, averaged since boot.
    pub rate: u64,
    /// The NIC queue it serves, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueName>,
    /// The CPUs it may run on (`cpuset -g -x IRQ`), when captured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuSet>,
}

/// One thread of a kernel process.
#[derive(Debug, Clone, Serialize)]
pub struct KernelThread {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The process's name (`kernel`, `intr`).
    pub comm: String,
    /// The thread's name (`dummynet`).
    pub tdname: String,
    /// The CPUs it may run on (`cpuset -g -t TID`), when captured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuSet>,
}

impl KernelThread {
    /// The name a plan finds it by: the thread's name, or the process's when the thread has
    /// none (`-`).
    pub fn name(&self) -> &str {
        if self.tdname.is_empty() || self.tdname == "-" {
            &self.comm
        } else {
            &self.tdname
        }
    }
}

/// Why a capture could not be read as a FreeBSD machine.
#[derive(Debug, thiserror::Error)]
pub enum FreeBsdError {
    /// A file every capture holds is missing or unreadable.
    #[error("{path}: {reason} (the capture is incomplete: run lowlat-capture.sh again)")]
    Missing {
        /// The file (with the command it holds).
        path: String,
        /// The read error.
        reason: String,
    },
    /// The topology could not be read.
    #[error("{path} (sysctl kern.sched.topology_spec): {source}")]
    Topology {
        /// The file.
        path: String,
        /// What is wrong.
        source: TopologyError,
    },
    /// A value that must be a number is not.
    #[error("{path}: '{value}' is not a number")]
    NotANumber {
        /// The file.
        path: String,
        /// Its text.
        value: String,
    },
    /// The CPU count cannot be this machine's: none, more than lowlat handles, or more than
    /// its topology holds.
    #[error(
        "{path}: kern.smp.cpus {count} {why} (the capture contradicts itself: run lowlat-capture.sh again)"
    )]
    CpuCount {
        /// The file.
        path: String,
        /// The count it holds.
        count: u32,
        /// Why it cannot be.
        why: String,
    },
}

impl FreeBsdMachine {
    /// Reads the capture under `root`.
    pub fn read(root: &SysRoot) -> Result<FreeBsdMachine, FreeBsdError> {
        let required = |path: &str| {
            root.read(path).map_err(|e| FreeBsdError::Missing {
                path: path.to_string(),
                reason: e.to_string(),
            })
        };
        let optional = |path: &str| root.read(path).ok();
        let mut warnings = Vec::new();

        let ncpu_path = capture::sysctl("kern.smp.cpus");
        let ncpu_text = required(&ncpu_path)?;
        let ncpu: u32 = ncpu_text
            .trim()
            .parse()
            .map_err(|_| FreeBsdError::NotANumber {
                path: ncpu_path.clone(),
                value: ncpu_text.trim().to_string(),
            })?;
        let topology_path = capture::sysctl("kern.sched.topology_spec");
        let groups = parse::topology_groups(&required(&topology_path)?).map_err(|source| {
            FreeBsdError::Topology {
                path: topology_path.clone(),
                source,
            }
        })?;
        let listed = listed_cpus(&groups).len();
        let why = if ncpu == 0 {
            Some("is no CPU at all".to_string())
        } else if ncpu > crate::machine::cpulist::MAX_CPU + 1 {
            Some(format!(
                "is more than the {} CPUs lowlat handles",
                crate::machine::cpulist::MAX_CPU + 1
            ))
        } else if listed > 0 && ncpu as usize > listed {
            Some(format!("is more than the {listed} CPUs of {topology_path}"))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(FreeBsdError::CpuCount {
                path: ncpu_path,
                count: ncpu,
                why,
            });
        }
        // Fewer started than listed (CPUs disabled by a loader hint): said, and read.
        let topology = topology(groups, ncpu);
        if topology.cpus.len() != ncpu as usize {
            warnings.push(format!(
                "{topology_path}: {} CPUs, but kern.smp.cpus says {ncpu}",
                topology.cpus.len()
            ));
        }

        let (lines, bad) = parse::vmstat_interrupts(&required(capture::VMSTAT)?);
        for line in bad {
            warnings.push(format!(
                "{}:{}: {}",
                capture::VMSTAT,
                line.line,
                line.reason
            ));
        }
        let interfaces: Option<Vec<String>> = optional(capture::INTERFACES)
            .map(|text| text.split_whitespace().map(str::to_string).collect());
        let mut interrupts = Vec::new();
        for line in lines {
            let Some(irq) = line.irq else { continue };
            // A queue's interface must be one of the machine's, where the capture lists them.
            let queue = parse::nic_queue(&line.name).filter(|q| {
                interfaces
                    .as_ref()
                    .is_none_or(|names| names.contains(&q.nic))
            });
            let cpus = match root.read(&capture::irq_cpuset(irq)) {
                Ok(text) => match parse::cpuset_mask(&text) {
                    Ok(set) => Some(set),
                    Err(reason) => {
                        warnings.push(format!("{}: {reason}", capture::irq_cpuset(irq)));
                        None
                    }
                },
                Err(_) => None,
            };
            interrupts.push(Interrupt {
                irq,
                name: line.name,
                total: line.total,
                rate: line.rate,
                queue,
                cpus,
            });
        }
        let mut nics: BTreeMap<(String, u32), Nic> = BTreeMap::new();
        let mut queued: Vec<&Interrupt> = interrupts.iter().filter(|i| i.queue.is_some()).collect();
        queued.sort_by_key(|i| i.queue.clone());
        for interrupt in queued {
            let q = interrupt.queue.as_ref().expect("filtered");
            let nic = nics
                .entry((q.driver.clone(), q.unit))
                .or_insert_with(|| Nic {
                    name: q.nic.clone(),
                    domain: root
                        .read_value(&capture::sysctl(&format!(
                            "dev.{}.{}.%domain",
                            q.driver, q.unit
                        )))
                        .ok()
                        .and_then(|v| v.parse().ok()),
                    queue_irqs: Vec::new(),
                    iflib_queues: optional(&capture::iflib_names(&q.nic))
                        .map(|names| parse::iflib_queue_counts(&names))
                        .filter(|&(rx, tx)| rx + tx > 0)
                        .map(|(rx, tx)| IflibQueues { rx, tx }),
                });
            nic.queue_irqs.push(interrupt.irq);
        }

        let kernel_pids: Option<Vec<u32>> = optional(capture::KERNEL_PIDS).map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        });
        let mut kernel_threads = Vec::new();
        if let Some(text) = optional(capture::PROCSTAT) {
            match parse::procstat_threads(&text) {
                Ok((threads, bad)) => {
                    for line in bad {
                        warnings.push(format!(
                            "{}:{}: {}",
                            capture::PROCSTAT,
                            line.line,
                            line.reason
                        ));
                    }
                    for t in threads {
                        let kernel = match &kernel_pids {
                            Some(pids) => pids.contains(&t.pid),
                            None => t.pid == 0,
                        };
                        if !kernel {
                            continue;
                        }
                        let cpus = root
                            .read(&capture::tid_cpuset(t.tid))
                            .ok()
                            .and_then(|text| parse::cpuset_mask(&text).ok());
                        kernel_threads.push(KernelThread {
                            pid: t.pid,
                            tid: t.tid,
                            comm: t.comm,
                            tdname: t.tdname,
                            cpus,
                        });
                    }
                }
                Err(e) => warnings.push(format!("{}: {e}", capture::PROCSTAT)),
            }
        } else {
            warnings.push(format!(
                "{}: not captured; no kernel threads",
                capture::PROCSTAT
            ));
        }

        let mut sysctls = BTreeMap::new();
        for name in root.list(capture::SYSCTL_DIR).unwrap_or_default() {
            if name == "kern.sched.topology_spec" {
                continue;
            }
            if let Ok(value) = root.read_value(&capture::sysctl(&name)) {
                sysctls.insert(name, value);
            }
        }
        Ok(FreeBsdMachine {
            host: optional(capture::HOSTNAME)
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "unknown".into()),
            uname: optional(capture::UNAME).map(|u| u.trim().to_string()),
            ncpu,
            topology,
            nics: nics.into_values().collect(),
            interrupts,
            kernel_threads,
            sysctls,
            loader_conf: optional("/boot/loader.conf"),
            warnings,
        })
    }

    /// The interrupt of IRQ `irq`.
    pub fn interrupt(&self, irq: u32) -> Option<&Interrupt> {
        self.interrupts.iter().find(|i| i.irq == irq)
    }

    /// The value of a captured sysctl.
    pub fn sysctl(&self, name: &str) -> Option<&str> {
        self.sysctls.get(name).map(String::as_str)
    }
}

/// Cores and domains from the topology's groups: a group flagged `THREAD`, `SMT` or `HTT` is
/// one core; a CPU in none is a core of its own. A group flagged `NODE` is a NUMA domain.
/// The CPUs the top groups of the topology list.
fn listed_cpus(groups: &[TopologyGroup]) -> CpuSet {
    let mut cpus = CpuSet::new();
    for group in groups.iter().filter(|g| g.level <= 1) {
        cpus.union_with(&group.cpus);
    }
    cpus
}

fn topology(groups: Vec<TopologyGroup>, ncpu: u32) -> Topology {
    let mut cpus = listed_cpus(&groups);
    if cpus.is_empty() && ncpu > 0 {
        cpus.insert_range(0, ncpu - 1);
    }
    let is_core = |g: &&TopologyGroup| {
        g.flags
            .iter()
            .any(|f| matches!(f.as_str(), "THREAD" | "SMT" | "HTT"))
    };
    let mut cores: Vec<CpuSet> = groups
        .iter()
        .filter(is_core)
        .map(|g| g.cpus.clone())
        .collect();
    let mut covered = CpuSet::new();
    for core in &cores {
        covered.union_with(core);
    }
    for cpu in cpus.difference(&covered).iter() {
        let mut single = CpuSet::new();
        single.insert(cpu);
        cores.push(single);
    }
    cores.sort_by_key(|c| c.first());
    let mut domains: Vec<CpuSet> = groups
        .iter()
        .filter(|g| g.flags.iter().any(|f| f == "NODE"))
        .map(|g| g.cpus.clone())
        .collect();
    if domains.is_empty() {
        domains.push(cpus.clone());
    }
    Topology {
        cpus,
        cores,
        domains,
        groups,
    }
}

/// Test captures: a capture tree written from parts, read back.
#[cfg(test)]
pub(crate) mod test_capture {
    use super::{FreeBsdMachine, capture};
    use crate::sysroot::SysRoot;

    /// A capture of `cores` cores of `threads` threads in `domains` NUMA domains (CPUs
    /// numbered core by core, a core's threads adjacent), with NICs given as
    /// `(name, domain, queues)` whose queue interrupts are all bound to CPU 0.
    pub(crate) fn machine(
        domains: u32,
        cores_per_domain: u32,
        threads: u32,
        nics: &[(&str, u32, u32)],
    ) -> (tempfile::TempDir, FreeBsdMachine) {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let file = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        let ncpu = domains * cores_per_domain * threads;
        let list =
            |cpus: std::ops::Range<u32>| cpus.map(|c| c.to_string()).collect::<Vec<_>>().join(", ");
        let mut xml = format!(
            "<groups>\n<group level=\"1\" cache-level=\"0\">\n<cpu count=\"{ncpu}\" mask=\"0\">{}</cpu>\n<children>\n",
            list(0..ncpu)
        );
        for d in 0..domains {
            let per = cores_per_domain * threads;
            xml += &format!(
                "<group level=\"2\" cache-level=\"3\"><cpu count=\"{per}\" mask=\"0\">{}</cpu>\
                 <flags><flag name=\"NODE\">NUMA node</flag></flags><children>\n",
                list(d * per..(d + 1) * per)
            );
            for c in 0..cores_per_domain {
                let first = d * per + c * threads;
                let flags = if threads > 1 {
                    "<flags><flag name=\"THREAD\">THREAD group</flag><flag name=\"SMT\">SMT group</flag></flags>"
                } else {
                    ""
                };
                xml += &format!(
                    "<group level=\"3\" cache-level=\"2\"><cpu count=\"{threads}\" mask=\"0\">{}</cpu>{flags}</group>\n",
                    list(first..first + threads)
                );
            }
            xml += "</children></group>\n";
        }
        xml += "</children>\n</group>\n</groups>\n";
        write(&capture::sysctl("kern.smp.cpus"), &format!("{ncpu}\n"));
        write(&capture::sysctl("kern.sched.topology_spec"), &xml);
        write(&capture::sysctl("net.isr.dispatch"), "deferred\n");
        let mut vmstat = String::from("interrupt                          total       rate\n");
        let mut irq = 256;
        let mut names = Vec::new();
        for (nic, domain, queues) in nics {
            names.push(nic.to_string());
            let driver = nic.trim_end_matches(|c: char| c.is_ascii_digit());
            let unit = &nic[driver.len()..];
            write(
                &capture::sysctl(&format!("dev.{driver}.{unit}.%domain")),
                &format!("{domain}\n"),
            );
            let iflib: String = (0..*queues)
                .flat_map(|q| {
                    [
                        format!("dev.{driver}.{unit}.iflib.rxq{q}.cpu\n"),
                        format!("dev.{driver}.{unit}.iflib.txq{q}.cpu\n"),
                    ]
                })
                .collect();
            write(&capture::iflib_names(nic), &iflib);
            for q in 0..*queues {
                vmstat += &format!("irq{irq}: {nic}:rxq{q}   100   10\n");
                write(&capture::irq_cpuset(irq), &format!("irq {irq} mask: 0\n"));
                irq += 1;
            }
        }
        write(capture::VMSTAT, &vmstat);
        write(capture::INTERFACES, &(names.join(" ") + " lo0\n"));
        let machine = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap();
        (dir, machine)
    }
}

#[cfg(test)]
mod tests {
    use super::test_capture::machine;
    use super::*;

    #[test]
    fn a_queue_name_of_a_device_that_is_no_interface_is_not_a_nic_queue() {
        let (dir, _) = machine(1, 2, 1, &[("ix0", 0, 2)]);
        let vmstat = dir.path().join("freebsd/vmstat-ai");
        let mut text = std::fs::read_to_string(&vmstat).unwrap();
        // A storage controller's vector named like a queue, a link vector, a timer.
        text += "irq300: mpr0:que 0   5   1\nirq301: ix0:link   1   0\ncpu0:timer   9   1\n";
        std::fs::write(&vmstat, text).unwrap();
        let m = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap();
        assert_eq!(m.interrupts.len(), 4, "cpu0:timer has no IRQ number");
        let queues: Vec<&str> = m
            .interrupts
            .iter()
            .filter(|i| i.queue.is_some())
            .map(|i| i.name.as_str())
            .collect();
        assert_eq!(queues, ["ix0:rxq0", "ix0:rxq1"]);
        assert_eq!(m.nics.len(), 1);
    }

    #[test]
    fn a_capture_without_its_topology_or_cpu_count_is_refused_naming_the_file() {
        let (dir, _) = machine(1, 2, 1, &[]);
        std::fs::remove_file(dir.path().join("freebsd/sysctl/kern.smp.cpus")).unwrap();
        let err = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/freebsd/sysctl/kern.smp.cpus: "),
            "{err}"
        );
        std::fs::write(dir.path().join("freebsd/sysctl/kern.smp.cpus"), "four\n").unwrap();
        let err = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap_err();
        assert!(err.to_string().contains("'four' is not a number"), "{err}");
        // R2-14: counts that contradict the two CPUs of the topology were accepted.
        for (count, why) in [
            ("0", "kern.smp.cpus 0 is no CPU at all"),
            (
                "4294967295",
                "kern.smp.cpus 4294967295 is more than the 8192 CPUs",
            ),
            ("3", "kern.smp.cpus 3 is more than the 2 CPUs of"),
        ] {
            std::fs::write(dir.path().join("freebsd/sysctl/kern.smp.cpus"), count).unwrap();
            let err = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap_err();
            assert!(err.to_string().contains(why), "{count}: {err}");
        }
        std::fs::write(dir.path().join("freebsd/sysctl/kern.smp.cpus"), "1").unwrap();
        let m = FreeBsdMachine::read(&SysRoot::dir(dir.path())).unwrap();
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("kern.smp.cpus says 1")),
            "{:?}",
            m.warnings
        );
    }
}
