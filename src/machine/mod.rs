//! The machine model: a typed, read-only picture of one server, read through a [`SysRoot`].
//!
//! Every part is read by a `read(&mut Reader)` function in its own module. Missing sources
//! become [`Avail::Unavailable`] with a reason; garbled content becomes a [`Warning`] naming the
//! file and line, and the rest of the model is still read. Reading never panics and never
//! writes.

pub(crate) mod avail;
pub mod capabilities;
pub mod cgroup_cpuset;
pub mod container;
pub mod core_types;
pub mod cpu;
pub(crate) mod cpulist;
pub mod domain;
pub mod fingerprint;
pub mod firmware;
pub mod freebsd;
pub(crate) mod iommu;
pub mod irq;
pub mod kernel;
pub mod kubelet;
pub mod net;
pub mod nic;
pub mod origins;
pub mod power;
pub mod rt_permission;
pub mod services;
pub mod tasks;
pub(crate) mod time_daemons;
pub mod timesync;
pub mod topology;
pub mod vcpu_sharing;
pub mod virt;
pub mod workload;

pub use avail::{Avail, Warning, Warnings};
pub use cpulist::{CpuSet, CpuSetError};

use crate::sysroot::{ReadError, SysRoot};
use cpulist::Interner;
use std::str::FromStr;

/// A SysRoot plus the warnings collected while reading from it; every reader takes one.
pub struct Reader<'a> {
    /// Where the files come from.
    pub root: &'a SysRoot,
    /// Problems met so far.
    pub warnings: Warnings,
    /// The most threads [`Reader::each`] may read on at once (1: the caller's thread only).
    threads: usize,
    /// The CPU sets read so far, each read set shared with an equal one read before. Done as
    /// each set is read, not once all are: on 8,192 CPUs a set that holds the last CPUs is
    /// 1 KiB, and 100,000 tasks and 50,000 IRQs each holding their own until the end of the
    /// read added 67 MB to the peak RSS of `inventory --json`.
    sets: Interner,
}

/// Parses a CPU set's text into the reader's shared sets: [`Interner::parse_list`] or
/// [`Interner::parse_mask`].
pub(crate) type CpuSetParser = fn(&mut Interner, &str) -> Result<CpuSet, cpulist::CpuSetError>;

/// The fewest items [`Reader::each`] gives a thread of its own: a process or an IRQ is two or
/// three small files, tens of microseconds, and a thread costs about as much to start as a
/// few of them.
const MIN_ITEMS_PER_THREAD: usize = 64;

impl<'a> Reader<'a> {
    /// A reader over `root` with no warnings yet, reading on the caller's thread only.
    pub fn new(root: &'a SysRoot) -> Self {
        Self::with_threads(root, 1)
    }

    /// A reader over `root` whose [`Reader::each`] may use up to `threads` threads.
    pub fn with_threads(root: &'a SysRoot, threads: usize) -> Self {
        Self {
            root,
            warnings: Warnings::default(),
            threads: threads.max(1),
            sets: Interner::default(),
        }
    }

    /// Reads each of `items` with `read`, the results in the order of `items`. With more than
    /// one thread allowed and enough items, contiguous runs of them are read on threads of their
    /// own (each with its own reader), and their warnings appended run by run, so the results and
    /// the order of the warnings are those of reading the items one after the other.
    pub fn each<I: Sync, T: Send>(
        &mut self,
        items: &[I],
        read: impl Fn(&mut Reader, &I) -> T + Sync,
    ) -> Vec<T> {
        let threads = self.threads.min(items.len() / MIN_ITEMS_PER_THREAD).max(1);
        let root = self.root;
        let read_run = &|run: &[I]| {
            let mut reader = Reader::new(root);
            let values: Vec<T> = run.iter().map(|item| read(&mut reader, item)).collect();
            (values, reader.warnings.into_vec())
        };
        let runs: Vec<(Vec<T>, Vec<Warning>)> = if threads == 1 {
            vec![read_run(items)]
        } else {
            let per_thread = items.len().div_ceil(threads);
            std::thread::scope(|scope| {
                let mut runs = items.chunks(per_thread);
                let first = runs.next().unwrap_or_default();
                let others: Vec<_> = runs.map(|run| scope.spawn(move || read_run(run))).collect();
                let mut done = vec![read_run(first)];
                done.extend(others.into_iter().map(join));
                done
            })
        };
        let mut values = Vec::with_capacity(items.len());
        for (run, warnings) in runs {
            values.extend(run);
            self.warnings.extend(warnings);
        }
        values
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
        self.cpus(path, Interner::parse_list)
    }

    /// A CPU mask file (`ff,ffffffff`); garbled content is unavailable and warned about.
    pub fn cpumask(&mut self, path: &str) -> Avail<CpuSet> {
        self.cpus(path, Interner::parse_mask)
    }

    fn cpus(&mut self, path: &str, parse: CpuSetParser) -> Avail<CpuSet> {
        match self.root.read_value(path) {
            Ok(text) => match parse(&mut self.sets, &text) {
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
    /// Time daemons (ptp4l, phc2sys, chronyd, ntpd, systemd-timesyncd): their CPUs, the clock
    /// they steer, their configured sources.
    pub time_sync: timesync::TimeSync,
    /// libvirt domains, KVM module parameters and KSM (absent from JSON when none).
    #[serde(default, skip_serializing_if = "virt::Virt::is_empty")]
    pub virt: virt::Virt,
    /// The kubelet's configuration (/var/lib/kubelet/config.yaml, or the file `audit
    /// --kubelet-config` names); absent where there is none, unavailable where it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<Avail<kubelet::KubeletConfig>>,
    /// The cpuset hierarchy, read only where runtime isolation needs it
    /// ([`Machine::read_cpusets`]); absent from JSON when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpusets: Option<Avail<cgroup_cpuset::CpusetTree>>,
    /// Where the tree's files came from when it was made from a support bundle (a
    /// sosreport's command outputs), by system path; absent from JSON when none.
    #[serde(default, skip_serializing_if = "origins::Origins::is_empty")]
    pub origins: origins::Origins,
    /// Problems met while reading (garbled lines, unreadable files), with file and line.
    pub warnings: Vec<Warning>,
}

/// What a machine read covers and how many threads it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Whether `/proc/interrupts` and `/proc/irq/N/` are read: checking settings against a
    /// plan does not need them, and on a large machine their table is tens of megabytes.
    pub interrupts: bool,
    /// The most threads the read may use at once, the caller's included; 1 reads everything on
    /// the caller's thread (for a caller that already reads many machines at once on every
    /// CPU, as `lowlat fleet` does).
    pub threads: usize,
}

impl Default for ReadOptions {
    /// Everything, on as many threads as the machine running lowlat has CPUs.
    fn default() -> Self {
        Self {
            interrupts: true,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl ReadOptions {
    /// Everything, on the caller's thread only: for a caller that already reads many machines
    /// at once on every CPU (`lowlat fleet`), where more threads per machine would only
    /// oversubscribe the CPUs.
    pub fn one_thread() -> Self {
        Self {
            threads: 1,
            ..Self::default()
        }
    }
}

impl Machine {
    /// Reads the machine under `root`. Never fails: what is missing is `Unavailable`, what is
    /// garbled is in `warnings`.
    ///
    /// Independent subsystems are read on separate threads, and the processes and the IRQ
    /// directories in runs on as many threads as there are CPUs (a 512-CPU server means tens
    /// of thousands of small sysfs and procfs files); the result and the order of the warnings
    /// do not depend on the threads.
    pub fn read(root: &SysRoot) -> Machine {
        Machine::read_with(root, ReadOptions::default())
    }

    /// Reads the machine under `root` as `options` say: the same model and warnings, in the
    /// same order, on any number of threads.
    pub fn read_with(root: &SysRoot, options: ReadOptions) -> Machine {
        let threads = options.threads.max(1);
        let parallel = threads > 1;
        let irqs = || {
            read_part(root, threads, |r| {
                let table = if options.interrupts {
                    irq::read(r)
                } else {
                    Avail::missing("interrupts were not read")
                };
                (table, irq::read_default_affinity(r))
            })
        };
        let tasks = || {
            read_part(root, threads, |r| {
                let tasks = tasks::read(r);
                let services = services::read(r, &tasks);
                let time_sync = timesync::read(r, &tasks);
                (tasks, services, time_sync, virt::read(r), kubelet::read(r))
            })
        };
        let kernel_power = || read_part(root, 1, |r| (kernel::read(r), power::read(r)));
        let rest = || {
            read_part(root, 1, |r| {
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
                    origins::read(r),
                )
            })
        };
        let (irqs, (tasks, (kernel_power, rest))) = both(parallel, irqs, || {
            both(parallel, tasks, || both(parallel, kernel_power, rest))
        });
        let ((cpu, hypervisor, topology, firmware, iommu, net, origins), mut warnings) = rest;
        let ((irqs, irq_default_affinity), irq_warnings) = irqs;
        let ((tasks, services, time_sync, virt, kubelet), task_warnings) = tasks;
        let ((kernel, power), kernel_warnings) = kernel_power;
        warnings.extend(irq_warnings);
        warnings.extend(task_warnings);
        warnings.extend(kernel_warnings);
        add_refused(root, &mut warnings);
        if parallel {
            release_freed_memory();
        }
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
            time_sync,
            virt,
            kubelet,
            cpusets: None,
            origins,
            warnings,
        }
    }

    /// Reads the cpuset hierarchy under `root` into [`Machine::cpusets`], its warnings added
    /// to the machine's.
    pub fn read_cpusets(&mut self, root: &SysRoot) {
        let mut reader = Reader::new(root);
        self.cpusets = Some(cgroup_cpuset::read(&mut reader));
        self.warnings.extend(reader.warnings.into_vec());
        add_refused(root, &mut self.warnings);
    }
}

impl Machine {
    /// Why `/proc/interrupts` could not be read, when it is there but unreadable (the reader
    /// left a file warning and the interrupts are unavailable); `None` when it was read or is
    /// simply absent. Audit and plan report what depends on it as not computed.
    /// A file that was read but is empty, garbled or truncated is not "unread": it is
    /// unavailable as evidence (unknown), not a failure to read.
    pub fn interrupts_unread(&self) -> Option<&str> {
        let reason = self.irqs.reason()?;
        self.warnings
            .iter()
            .find(|w| w.path == irq::INTERRUPTS && w.line.is_none() && w.message == reason)
            .map(|w| w.message.as_str())
    }
}

/// Adds to `warnings` one for each path of `root` refused since the last machine read because
/// a symbolic link (or `..`) on the way leads outside the root (what was read there counts as
/// unreadable), unless a reader warned about that path already.
fn add_refused(root: &SysRoot, warnings: &mut Vec<Warning>) {
    let warned: std::collections::HashSet<String> =
        warnings.iter().map(|w| w.path.clone()).collect();
    let refused = root.take_refused().into_iter();
    warnings.extend(
        refused
            .filter(|path| !warned.contains(path))
            .map(|path| Warning {
                path,
                line: None,
                message: crate::sysroot::LEAVES_ROOT.to_string(),
            }),
    );
}

/// Hands the free memory of the reader threads back to the system. Each thread that read
/// allocated from an allocator arena of its own (glibc makes one per thread, up to 8 per CPU),
/// and what it freed there (file contents, paths, the sets shared away) stays in that arena,
/// where the caller's thread, which goes on to audit, plan and print, never allocates: on
/// 8,192 CPUs, 40 to 80 MB of resident memory that nothing uses.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel; it takes the arenas' locks
    // and touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs one reader, allowed `threads` threads, with its own warnings.
fn read_part<T>(
    root: &SysRoot,
    threads: usize,
    read: impl FnOnce(&mut Reader) -> T,
) -> (T, Vec<Warning>) {
    let mut reader = Reader::with_threads(root, threads);
    let value = read(&mut reader);
    (value, reader.warnings.into_vec())
}

/// Runs `a` on a thread of its own and `b` on this one when `parallel`, else `a` then `b`.
fn both<A: Send, B>(parallel: bool, a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if !parallel {
        return (a(), b());
    }
    std::thread::scope(|scope| {
        let a = scope.spawn(a);
        let b = b();
        (join(a), b)
    })
}

/// Joins a reader thread; readers do not panic, but if one did, its panic goes on here.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// The machine read on one thread and on four, as JSON (the whole model) and warnings.
    fn read_on_one_and_four(tree: &TestTree) -> [(String, Vec<String>); 2] {
        let four = ReadOptions {
            threads: 4,
            ..ReadOptions::default()
        };
        [ReadOptions::one_thread(), four].map(|options| {
            let machine = Machine::read_with(&tree.root(), options);
            let warnings = machine.warnings.iter().map(ToString::to_string).collect();
            (serde_json::to_string(&machine).unwrap(), warnings)
        })
    }

    /// The numbered entries of a `/proc` directory, ascending.
    fn numbered(tree: &TestTree, dir: &str) -> Vec<u32> {
        let mut numbers: Vec<u32> = std::fs::read_dir(tree.join(dir))
            .unwrap()
            .filter_map(|entry| entry.unwrap().file_name().to_str()?.parse().ok())
            .collect();
        numbers.sort_unstable();
        numbers
    }

    #[test]
    fn reading_on_threads_gives_the_model_and_warnings_of_one_thread() {
        // 694 processes and 202 IRQs (128 of one NIC): the processes are split into runs on
        // threads, the IRQ directories read in batches on threads while /proc/interrupts is
        // still being parsed.
        let tree = TestTree::fixture("milan64-nps4-smt");
        let pids = numbered(&tree, "/proc");
        let irqs = numbered(&tree, "/proc/irq");
        assert!(pids.len() > 4 * MIN_ITEMS_PER_THREAD && irqs.len() > 3 * irq::WANTED_PER_BATCH);
        // Problems planted in different runs: a process gone, a garbled stat, a garbled
        // affinity, and the NIC's node, which only its first IRQ reads.
        let (gone, garbled) = (pids[100], pids[600]);
        tree.remove(&format!("/proc/{gone}/status"));
        tree.write(&format!("/proc/{garbled}/stat"), "garbage\n");
        let late_irq = irqs[irqs.len() - 5];
        tree.write(&format!("/proc/irq/{late_irq}/smp_affinity_list"), "0-x\n");
        let nic_node = "/sys/bus/pci/devices/0000:41:00.0/numa_node";
        tree.write(nic_node, "2\n");

        let [one, four] = read_on_one_and_four(&tree);
        assert_eq!(one.1, four.1);
        assert_eq!(one.0, four.0);
        let warned = |prefix: String| one.1.iter().filter(|w| w.starts_with(&prefix)).count();
        assert_eq!(
            warned(format!("/proc/{gone}/status: the process exited")),
            1
        );
        assert_eq!(warned(format!("/proc/{garbled}/stat: ")), 1);
        assert_eq!(
            warned(format!("/proc/irq/{late_irq}/smp_affinity_list: ")),
            1
        );
        let machine: Machine = serde_json::from_str(&four.0).unwrap();
        let on_nic = machine.irqs.get().unwrap().irqs.iter().filter(|irq| {
            matches!(&irq.class, irq::IrqClass::NicQueue { pci: Some(pci), .. } if pci == "0000:41:00.0")
        });
        let nodes: Vec<Option<u32>> = on_nic.map(|irq| irq.device_node).collect();
        assert_eq!(nodes.len(), 128, "the NIC's queues, over several runs");
        assert!(nodes.iter().all(|node| *node == Some(2)), "{nodes:?}");

        // A garbled node is warned about once, at the NIC's first IRQ, on any number of threads.
        tree.write(nic_node, "two\n");
        let [one, four] = read_on_one_and_four(&tree);
        assert_eq!(one, four);
        assert_eq!(
            warned(format!("{nic_node}: ")),
            0,
            "the first read had a good node"
        );
        let nic_warnings = four.1.iter().filter(|w| w.starts_with(nic_node)).count();
        assert_eq!(nic_warnings, 1, "{:?}", four.1);
    }
}
