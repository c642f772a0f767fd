//! The machine model: a typed, read-only picture of one server, read through a [`SysRoot`].
//!
//! Every part is read by a `read(&mut Reader)` function in its own module. Missing sources
//! become [`Avail::Unavailable`] with a reason; garbled content becomes a [`Warning`] naming the
//! file and line, and the rest of the model is still read. Reading never panics and never
//! writes.

pub(crate) mod avail;
pub mod cpu;
pub(crate) mod cpulist;
pub mod domain;
pub mod fingerprint;
pub mod firmware;
pub(crate) mod iommu;
pub mod irq;
pub mod kernel;
pub(crate) mod net;
pub mod power;
pub mod services;
pub mod tasks;
pub mod topology;
pub mod virt;

pub use avail::{Avail, Warning, Warnings};
pub use cpulist::CpuSet;

use crate::sysroot::{ReadError, SysRoot};
use std::str::FromStr;

/// A SysRoot plus the warnings collected while reading from it; every reader takes one.
pub struct Reader<'a> {
    /// Where the files come from.
    pub root: &'a SysRoot,
    /// Problems met so far.
    pub warnings: Warnings,
}

impl<'a> Reader<'a> {
    /// A reader over `root` with no warnings yet.
    pub fn new(root: &'a SysRoot) -> Self {
        Self {
            root,
            warnings: Warnings::default(),
        }
    }

    /// A whole file, or why it is unavailable.
    pub fn text(&mut self, path: &str) -> Avail<String> {
        self.root.read(path).into()
    }

    /// A one-value file, trimmed, or why it is unavailable.
    pub fn value(&mut self, path: &str) -> Avail<String> {
        self.root.read_value(path).into()
    }

    /// A one-value file parsed as `T`; garbled content is unavailable and warned about.
    pub fn parse<T: FromStr>(&mut self, path: &str) -> Avail<T> {
        match self.root.read_value(path) {
            Ok(text) => match text.parse() {
                Ok(value) => Avail::Available(value),
                Err(_) => {
                    let message = format!("cannot parse '{}'", truncate(&text, 40));
                    self.warnings.file(path, message.clone());
                    Avail::missing(format!("{path}: {message}"))
                }
            },
            Err(e) => Avail::missing(e.to_string()),
        }
    }

    /// A one-value file parsed as `T`, or `None` when absent or garbled (garbled is warned).
    pub fn opt<T: FromStr>(&mut self, path: &str) -> Option<T> {
        match self.parse(path) {
            Avail::Available(value) => Some(value),
            Avail::Unavailable { .. } => None,
        }
    }

    /// A CPU list file (`0-3,8`); garbled content is unavailable and warned about.
    pub fn cpulist(&mut self, path: &str) -> Avail<CpuSet> {
        self.cpus(path, CpuSet::parse_list)
    }

    /// A CPU mask file (`ff,ffffffff`); garbled content is unavailable and warned about.
    pub fn cpumask(&mut self, path: &str) -> Avail<CpuSet> {
        self.cpus(path, CpuSet::parse_mask)
    }

    fn cpus(
        &mut self,
        path: &str,
        parse: fn(&str) -> Result<CpuSet, cpulist::CpuSetError>,
    ) -> Avail<CpuSet> {
        match self.root.read_value(path) {
            Ok(text) => match parse(&text) {
                Ok(set) => Avail::Available(set),
                Err(e) => {
                    self.warnings.file(path, e.to_string());
                    Avail::missing(format!("{path}: {e}"))
                }
            },
            Err(e) => Avail::missing(e.to_string()),
        }
    }

    /// Reads a file and reports a read failure other than "absent" as a warning.
    pub fn text_or_warn(&mut self, path: &str) -> Option<String> {
        match self.root.read(path) {
            Ok(text) => Some(text),
            Err(ReadError::NotFound { .. }) => None,
            Err(e) => {
                self.warnings.file(path, e.to_string());
                None
            }
        }
    }
}

impl<T: Clone> Avail<T> {
    /// The value, cloned, if available.
    pub fn get_owned(&self) -> Option<T> {
        self.get().cloned()
    }
}

/// Shortens text for a message.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(max).collect::<String>())
    }
}

/// Everything lowlat knows about one machine.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Machine {
    /// Processor identity and flags.
    pub cpu: Avail<cpu::CpuIdentity>,
    /// The hypervisor, when the machine is virtual.
    pub hypervisor: Option<cpu::Hypervisor>,
    /// CPUs, cores, caches, NUMA nodes.
    pub topology: topology::Topology,
    /// Interrupts: /proc/interrupts, per-IRQ affinity, softirqs.
    pub irqs: Avail<irq::Irqs>,
    /// `/proc/irq/default_smp_affinity`: the CPUs IRQs allocated from now on may use.
    pub irq_default_affinity: Avail<CpuSet>,
    /// Whether an IOMMU translates device DMA (units and default domain type).
    pub iommu: iommu::Iommu,
    /// Processes and kernel threads with their affinity and scheduling.
    pub tasks: Avail<tasks::Tasks>,
    /// Workqueue masks, irqbalance, TuneD, services that manage the same knobs, OS release.
    pub services: services::Services,
    /// Kernel release, command line, isolation, sysctls, clocksource, THP, hugepages, memory.
    pub kernel: kernel::Kernel,
    /// cpufreq, boost, cpuidle and resume-latency constraints.
    pub power: power::Power,
    /// DMI identity, SMBIOS processors and DIMMs, memory population.
    pub firmware: firmware::Firmware,
    /// Network interfaces with their NUMA node and RPS masks.
    pub net: Avail<Vec<net::NetInterface>>,
    /// libvirt domains, KVM module parameters and KSM (absent from JSON when none).
    #[serde(default, skip_serializing_if = "virt::Virt::is_empty")]
    pub virt: virt::Virt,
    /// Problems met while reading (garbled lines, unreadable files), with file and line.
    pub warnings: Vec<Warning>,
}

impl Machine {
    /// Reads the machine under `root`. Never fails: what is missing is `Unavailable`, what is
    /// garbled is in `warnings`.
    ///
    /// Independent subsystems are read on separate threads (a 512-CPU server means tens of
    /// thousands of small sysfs and procfs files); the result and the order of the warnings
    /// do not depend on the threads.
    pub fn read(root: &SysRoot) -> Machine {
        Machine::read_parts(root, true)
    }

    /// Reads the machine under `root` as [`Machine::read`] does, but leaves the interrupts out
    /// (`irqs` is unavailable): checking settings against a plan does not need them, and on a
    /// large machine their table is tens of megabytes (`lowlat watch`'s full checks).
    pub fn read_without_interrupts(root: &SysRoot) -> Machine {
        Machine::read_parts(root, false)
    }

    fn read_parts(root: &SysRoot, interrupts: bool) -> Machine {
        std::thread::scope(|scope| {
            let irqs = scope.spawn(move || {
                read_part(root, |r| {
                    let table = if interrupts {
                        irq::read(r)
                    } else {
                        Avail::missing("interrupts were not read")
                    };
                    (table, irq::read_default_affinity(r))
                })
            });
            let tasks = scope.spawn(|| {
                read_part(root, |r| {
                    let tasks = tasks::read(r);
                    let services = services::read(r, &tasks);
                    (tasks, services, virt::read(r))
                })
            });
            let kernel_power =
                scope.spawn(|| read_part(root, |r| (kernel::read(r), power::read(r))));
            let ((cpu, hypervisor, topology, firmware, iommu, net), mut warnings) =
                read_part(root, |r| {
                    let cpu = cpu::read(r);
                    let hypervisor = cpu
                        .get()
                        .and_then(|identity| cpu::read_hypervisor(r, identity));
                    let topology = topology::read(r);
                    let firmware = firmware::read(r);
                    (
                        cpu,
                        hypervisor,
                        topology,
                        firmware,
                        iommu::read(r),
                        net::read(r),
                    )
                });
            let ((irqs, irq_default_affinity), irq_warnings) = join(irqs);
            let ((tasks, services, virt), task_warnings) = join(tasks);
            let ((kernel, power), kernel_warnings) = join(kernel_power);
            warnings.extend(irq_warnings);
            warnings.extend(task_warnings);
            warnings.extend(kernel_warnings);
            Machine {
                cpu,
                hypervisor,
                topology,
                irqs,
                irq_default_affinity,
                iommu,
                tasks,
                services,
                kernel,
                power,
                firmware,
                net,
                virt,
                warnings,
            }
        })
    }
}

impl Machine {
    /// Why `/proc/interrupts` could not be read, when it is there but unreadable (the reader
    /// left a file warning and the interrupts are unavailable); `None` when it was read or is
    /// simply absent. Audit and plan report what depends on it as not computed.
    pub fn interrupts_unread(&self) -> Option<&str> {
        if self.irqs.get().is_some() {
            return None;
        }
        self.warnings
            .iter()
            .find(|w| w.path == irq::INTERRUPTS && w.line.is_none())
            .map(|w| w.message.as_str())
    }
}

/// Runs one reader with its own warnings.
fn read_part<T>(root: &SysRoot, read: impl FnOnce(&mut Reader) -> T) -> (T, Vec<Warning>) {
    let mut reader = Reader::new(root);
    let value = read(&mut reader);
    (value, reader.warnings.into_vec())
}

/// Joins a reader thread; readers do not panic, but if one did, its panic goes on here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
