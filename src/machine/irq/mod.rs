//! Interrupts: `/proc/interrupts`, `/proc/softirqs`, and each numbered IRQ's affinity and node
//! from `/proc/irq/N/`.
//!
//! The reads and the model are here; the text parser of both files is in `parse.rs`.

pub mod classify;
mod parse;

pub use classify::{IrqClass, classify};
pub use parse::{InterruptRows, KeptColumns, fixed_width_counts, parse_interrupts, parse_softirqs};

use super::cpulist::Interner;
use super::{Avail, CpuSet, CpuSetParser, Reader, Warning};
use crate::sysroot::{ReadError, SysRoot};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// Where the kernel lists interrupts.
pub const INTERRUPTS: &str = "/proc/interrupts";
/// Where the kernel lists softirq counts.
pub const SOFTIRQS: &str = "/proc/softirqs";
/// The affinity given to IRQs allocated from now on.
pub const DEFAULT_AFFINITY: &str = "/proc/irq/default_smp_affinity";

/// The machine's interrupts: the counts table and each numbered IRQ's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Irqs {
    /// `/proc/interrupts`, parsed.
    pub table: InterruptTable,
    /// One entry per numbered row of the table, in the same order.
    pub irqs: Vec<Irq>,
    /// `/proc/softirqs`, parsed.
    pub softirqs: Avail<SoftirqTable>,
}

/// One numbered IRQ and its settings from `/proc/irq/N/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Irq {
    /// The Linux IRQ number.
    pub number: u32,
    /// What the IRQ serves, from its actions.
    pub class: IrqClass,
    /// The CPUs the IRQ may be delivered to (`smp_affinity_list`, else `smp_affinity`).
    pub affinity: Avail<CpuSet>,
    /// The CPUs the IRQ is actually delivered to (`effective_affinity_list`, else
    /// `effective_affinity`; kernels before 4.15 and some architectures lack it).
    pub effective_affinity: Avail<CpuSet>,
    /// The NUMA node of the IRQ descriptor (`/proc/irq/N/node`); `None` when absent or -1.
    pub node: Option<u32>,
    /// The NUMA node of the device the IRQ serves (a NIC or NVMe controller), from its sysfs
    /// `numa_node`; `None` when the class names no device, sysfs does not resolve it, or the
    /// platform reports -1.
    pub device_node: Option<u32>,
}

impl Irqs {
    /// The table row of `irq`.
    pub fn row(&self, irq: &Irq) -> Option<&IrqRow> {
        self.table.numbered(irq.number)
    }
}

/// `/proc/irq/default_smp_affinity`: the CPUs IRQs allocated from now on may be delivered to
/// (read on its own: it does not depend on `/proc/interrupts`).
pub fn read_default_affinity(r: &mut Reader) -> Avail<CpuSet> {
    r.cpumask(DEFAULT_AFFINITY)
}

/// Reads `/proc/interrupts` (line by line, keeping the nonzero counts only: the file of an
/// 8,192-CPU machine is gigabytes), `/proc/softirqs` and each numbered IRQ's directory.
/// Unavailable only when `/proc/interrupts` cannot be read; a file that is there but cannot be
/// read (permissions, an I/O error part way) is also a warning naming it, so that the
/// findings that depend on it say they could not read it.
///
/// With more than one thread allowed, the IRQ directories are read on threads of their own
/// while `/proc/interrupts` is still being parsed, in batches as their rows are: the same
/// files, results and warnings, in the same order, as reading them after the file.
pub fn read(r: &mut Reader) -> Avail<Irqs> {
    let read = if r.threads > 1 {
        read_table_and_dirs_together(r)
    } else {
        let mut wanted = Vec::new();
        read_table(r, |batch| wanted.extend(batch))
            .map(|table| (table, vec![r.each(&wanted, read_irq_dir)]))
    };
    let (table, dirs) = match read {
        Ok(read) => read,
        Err(why) => return Avail::missing(why.to_string()),
    };
    if let Err(why) = whole(&table) {
        return Avail::missing(why);
    }
    // The IRQs after a device's first take the node read there.
    let mut device_nodes: HashMap<String, Option<u32>> = HashMap::new();
    let mut sets = Interner::default();
    let numbered = table.rows.iter().filter_map(|row| Some((row.number?, row)));
    let mut irqs = Vec::with_capacity(dirs.iter().map(Vec::len).sum());
    irqs.extend(
        (numbered.zip(dirs.into_iter().flatten())).map(|((number, row), dir)| {
            let class = classify(&row.actions);
            let device_node = class
                .device_node_path()
                .and_then(|path| *device_nodes.entry(path).or_insert(dir.device_node));
            let [affinity, effective_affinity] =
                [dir.affinity, dir.effective_affinity].map(|set| set.map(|cpus| sets.intern(cpus)));
            Irq {
                number,
                affinity,
                effective_affinity,
                node: dir.node,
                device_node,
                class,
            }
        }),
    );
    let softirqs = r
        .text(SOFTIRQS)
        .map(|text| parse_softirqs(&text, SOFTIRQS, &mut r.warnings));
    Avail::Available(Irqs {
        table,
        irqs,
        softirqs,
    })
}

/// `/proc/interrupts` alone, without the IRQ directories (what a count taken again and again
/// needs); `None` where it cannot be read.
pub fn read_counts(r: &mut Reader) -> Option<InterruptTable> {
    read_table(r, drop).ok()
}

/// Whether `table` is the whole of a `/proc/interrupts`, as evidence that the IRQs it lists
/// are all there are: it has the CPU header and ends with the named per-CPU rows (`LOC`,
/// `ERR` on x86, `IPI0`, `Err` on arm64) that the kernel lists after every numbered IRQ. An
/// empty, garbled or truncated copy (a tar of procfs, a cut transfer) is no such evidence;
/// why not, when it is not.
fn whole(table: &InterruptTable) -> Result<(), String> {
    if table.cpus.is_empty() {
        return Err(format!(
            "{INTERRUPTS} has no 'CPU0 CPU1 ...' header (empty or garbled)"
        ));
    }
    match table.rows.last() {
        None => Err(format!(
            "{INTERRUPTS} lists no interrupt (empty or garbled)"
        )),
        Some(IrqRow {
            number: Some(last), ..
        }) => Err(format!(
            "{INTERRUPTS} ends at IRQ {last}, without the per-CPU rows (LOC, ERR) the kernel \
             lists after the IRQs: truncated"
        )),
        Some(_) => Ok(()),
    }
}

/// How many numbered rows the parser hands on at a time to the threads that read their
/// directories.
pub(super) const WANTED_PER_BATCH: usize = 64;

/// Parses `/proc/interrupts`, handing on the numbered rows to read the directories of in
/// batches as they are parsed; why the file could not be read, when it could not.
fn read_table(
    r: &mut Reader,
    mut on_wanted: impl FnMut(Vec<Wanted>),
) -> Result<InterruptTable, ReadError> {
    let mut rows = InterruptRows::new(INTERRUPTS);
    let mut table = InterruptTable::default();
    // A device's node is read (and warned about) at its first IRQ only, as reading the IRQs
    // one after the other would.
    let mut devices = HashSet::new();
    let mut batch = Vec::with_capacity(WANTED_PER_BATCH);
    let warnings = &mut r.warnings;
    let read = r.root.read_line_bytes(INTERRUPTS, |lineno, line, cut| {
        if cut {
            warnings.line(
                INTERRUPTS,
                lineno,
                format!(
                    "the line is longer than {} bytes; skipped",
                    crate::sysroot::MAX_LINE_BYTES
                ),
            );
            return;
        }
        rows.line(lineno, line, warnings, |_, row| {
            if let Some(wanted) = Wanted::of(&row, &mut devices) {
                batch.push(wanted);
                if batch.len() == WANTED_PER_BATCH {
                    on_wanted(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(WANTED_PER_BATCH),
                    ));
                }
            }
            table.rows.push(row);
        });
    });
    if let Err(e) = read {
        if !e.is_not_found() {
            r.warnings.file(INTERRUPTS, e.to_string());
        }
        return Err(e);
    }
    on_wanted(batch);
    rows.finish(&mut r.warnings);
    table.cpus = rows.cpus;
    Ok(table)
}

/// [`read_table`] on this thread and the IRQ directories on as many others as the reader may
/// use, fed batches as rows are parsed (on 512 CPUs the parse is short and the 12,000
/// directory files are most of the work, on 8,192 CPUs it is the other way round); the
/// directories' warnings come after the file's, batch by batch in file order.
///
/// The directories come back in the batches they were asked in: one vector grown to 50,000
/// entries by doubling would leave the freed halves behind.
fn read_table_and_dirs_together(
    r: &mut Reader,
) -> Result<(InterruptTable, Vec<Vec<IrqDir>>), ReadError> {
    let root = r.root;
    let (send, receive) = std::sync::mpsc::channel::<(usize, Vec<Wanted>)>();
    let receive = std::sync::Mutex::new(receive);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..r.threads)
            .map(|_| scope.spawn(|| read_dir_batches(root, &receive)))
            .collect();
        // A send fails only when the reading threads are gone, which `join` reports.
        let mut sequence = 0;
        let table = read_table(r, |batch| {
            drop(send.send((sequence, batch)));
            sequence += 1;
        });
        drop(send);
        let mut batches: Vec<DirBatch> = readers.into_iter().flat_map(super::join).collect();
        batches.sort_unstable_by_key(|batch| batch.sequence);
        let table = table?;
        let mut dirs = Vec::with_capacity(batches.len());
        for batch in batches {
            r.warnings.extend(batch.warnings);
            dirs.push(batch.dirs);
        }
        Ok((table, dirs))
    })
}

/// The directories of one batch of IRQs, with the warnings met reading them.
struct DirBatch {
    /// The batch's place in the order the parser handed them on.
    sequence: usize,
    /// One per IRQ of the batch, in its order.
    dirs: Vec<IrqDir>,
    /// The warnings met reading them, in the order met.
    warnings: Vec<Warning>,
}

/// Reads batches from `receive` until the parser is done and every batch is taken, with a
/// reader of its own (the CPU sets it reads are shared within the thread).
fn read_dir_batches(
    root: &SysRoot,
    receive: &std::sync::Mutex<std::sync::mpsc::Receiver<(usize, Vec<Wanted>)>>,
) -> Vec<DirBatch> {
    let mut reader = Reader::new(root);
    let mut done = Vec::new();
    // Another reader that panicked poisons the lock: stop, its `join` reports the panic.
    while let Ok(Ok((sequence, batch))) = receive.lock().map(|next| next.recv()) {
        let dirs = batch.iter().map(|w| read_irq_dir(&mut reader, w)).collect();
        let warnings = std::mem::take(&mut reader.warnings).into_vec();
        done.push(DirBatch {
            sequence,
            dirs,
            warnings,
        });
    }
    done
}

/// A numbered IRQ of `/proc/interrupts` to read `/proc/irq/N/` of. Only what the directory
/// reader needs: on 50,000 IRQs, each holding its class and device path as well, made while
/// the table's rows were allocated, left 8 MB of holes in the heap once freed.
struct Wanted {
    /// The IRQ number.
    number: u32,
    /// The sysfs `numa_node` file of the device it serves, when this is the device's first
    /// IRQ (the one that reads the file).
    first_of_device: Option<String>,
}

impl Wanted {
    /// The directory to read for `row`, when it is numbered; `devices` holds the devices of
    /// the rows before it.
    fn of(row: &IrqRow, devices: &mut HashSet<String>) -> Option<Wanted> {
        let number = row.number?;
        let first_of_device =
            (classify(&row.actions).device_node_path()).filter(|path| devices.insert(path.clone()));
        Some(Wanted {
            number,
            first_of_device,
        })
    }
}

/// What one IRQ's directory (and its device, at the device's first IRQ) says.
struct IrqDir {
    /// `smp_affinity_list` (or the mask).
    affinity: Avail<CpuSet>,
    /// `effective_affinity_list` (or the mask).
    effective_affinity: Avail<CpuSet>,
    /// `node`.
    node: Option<u32>,
    /// The device's `numa_node`, read at its first IRQ only.
    device_node: Option<u32>,
}

/// Reads `/proc/irq/N/`, and the node of the IRQ's device when `wanted` is its first IRQ.
fn read_irq_dir(r: &mut Reader, wanted: &Wanted) -> IrqDir {
    let dir = format!("/proc/irq/{}", wanted.number);
    let device_node = (wanted.first_of_device.as_deref()).and_then(|path| node_value(r, path));
    IrqDir {
        affinity: list_or_mask(r, &format!("{dir}/smp_affinity")),
        effective_affinity: list_or_mask(r, &format!("{dir}/effective_affinity")),
        node: node_value(r, &format!("{dir}/node")),
        device_node,
    }
}

/// A CPU set from `<base>_list`, or from the mask file `<base>` where the list is absent
/// (kernels before 2.6.36 and hwloc-era trees write only masks). Garbled content is warned;
/// an empty set is unavailable.
fn list_or_mask(r: &mut Reader, base: &str) -> Avail<CpuSet> {
    let list = format!("{base}_list");
    // Read first and fall back on "absent": a stat per file would double the syscalls.
    let (path, text, parse): (&str, _, CpuSetParser) = match r.root.read_value(&list) {
        Ok(text) => (&list, text, Interner::parse_list),
        Err(ReadError::NotFound { .. }) => match r.root.read_value(base) {
            Ok(text) => (base, text, Interner::parse_mask),
            Err(e) => return Avail::missing(e.to_string()),
        },
        Err(e) => return Avail::missing(e.to_string()),
    };
    match parse(&mut r.sets, &text) {
        // An IRQ that is listed is sent somewhere: no CPUs is an empty copy, not a value.
        Ok(set) if set.is_empty() => Avail::missing(format!("{path} is empty")),
        Ok(set) => Avail::Available(set),
        Err(e) => {
            r.warnings.file(path, e.to_string());
            Avail::missing(format!("{path}: {e}"))
        }
    }
}

/// A NUMA node file: a node number, or -1 for none.
fn node_value(r: &mut Reader, path: &str) -> Option<u32> {
    r.opt::<i64>(path).and_then(|node| u32::try_from(node).ok())
}

/// `/proc/interrupts`, parsed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InterruptTable {
    /// The CPU of each count column, from the header (online CPUs at the time of reading),
    /// ascending.
    pub cpus: Vec<u32>,
    /// The rows, in file order (not changed once read: [`InterruptTable::numbered`] indexes
    /// them on first use).
    pub rows: Vec<IrqRow>,
    /// The position in `rows` of each numbered row, built on first lookup.
    #[serde(skip)]
    by_number: OnceLock<HashMap<u32, usize>>,
}

impl PartialEq for InterruptTable {
    fn eq(&self, other: &Self) -> bool {
        self.cpus == other.cpus && self.rows == other.rows
    }
}

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqRow {
    /// The row label without the colon: `"45"`, `"LOC"`, `"NMI"`.
    pub id: String,
    /// The Linux IRQ number for numbered rows; `None` for named (architecture) rows.
    pub number: Option<u32>,
    /// Interrupt counts (events since boot), a column per [`InterruptTable::cpus`], kept
    /// sparse; a single machine-wide total for rows that have no per-CPU counts (`ERR`, `MIS`).
    pub counts: Counts,
    /// The interrupt controller (irq chip) name, e.g. `IR-PCI-MSI`, `IO-APIC`, `GICv3`.
    pub chip: Option<String>,
    /// The hardware IRQ number within the chip's domain, e.g. `524288`.
    pub hwirq: Option<String>,
    /// The trigger or flow handler, e.g. `edge`, `fasteoi`, `Level`.
    pub trigger: Option<String>,
    /// The handlers registered on the IRQ (driver-chosen names such as `nvme0q1`,
    /// `eth0-TxRx-3`, `PCIe PME`), in the order printed.
    pub actions: Vec<String>,
    /// The description of a named row, e.g. `Local timer interrupts`.
    pub description: Option<String>,
}

impl IrqRow {
    /// The count on `cpu`, given the table's CPU columns; 0 when the CPU has no column
    /// (offline) and for rows that only have a machine-wide total (`ERR`, `MIS`) on machines
    /// with more than one CPU column.
    pub fn count_on(&self, cpus: &[u32], cpu: u32) -> u64 {
        if self.counts.len() != cpus.len() {
            return 0;
        }
        cpus.binary_search(&cpu)
            .ok()
            .and_then(|i| self.counts.get(i))
            .unwrap_or(0)
    }

    /// All events of this row, summed over CPUs.
    pub fn total(&self) -> u64 {
        self.counts.total()
    }
}

/// The counts of one row, sparse: how many columns it has and the nonzero ones. A large
/// machine's table is 50,000 rows of 8,192 columns, nearly all zero; dense it would take
/// 3 GiB.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// How many count columns the row has.
    pub columns: usize,
    /// The nonzero counts (events since boot) as `[column, count]` pairs, columns ascending
    /// (0-based positions in the row, not CPU numbers).
    pub nonzero: Vec<(u32, u64)>,
}

impl Counts {
    /// The sparse form of counts given one per column.
    pub fn from_dense(counts: &[u64]) -> Self {
        Self {
            columns: counts.len(),
            nonzero: (0u32..)
                .zip(counts)
                .filter(|(_, count)| **count != 0)
                .map(|(column, count)| (column, *count))
                .collect(),
        }
    }

    /// How many columns the row has.
    pub fn len(&self) -> usize {
        self.columns
    }

    /// Whether the row has no column at all.
    pub fn is_empty(&self) -> bool {
        self.columns == 0
    }

    /// The count in `column`; `None` past the last column.
    pub fn get(&self, column: usize) -> Option<u64> {
        if column >= self.columns {
            return None;
        }
        let column = u32::try_from(column).ok()?;
        Some(
            self.nonzero
                .binary_search_by_key(&column, |(c, _)| *c)
                .map_or(0, |i| self.nonzero[i].1),
        )
    }

    /// The counts of every column, zeros included.
    pub fn dense(&self) -> Vec<u64> {
        let mut out = vec![0; self.columns];
        for &(column, count) in &self.nonzero {
            out[column as usize] = count;
        }
        out
    }

    /// All events of the row, summed over its columns.
    pub fn total(&self) -> u64 {
        self.nonzero
            .iter()
            .fold(0u64, |sum, (_, c)| sum.saturating_add(*c))
    }
}

impl InterruptTable {
    /// The count of `row` on `cpu`; 0 when the CPU has no column (offline) and for rows that
    /// only have a machine-wide total (`ERR`, `MIS`) on machines with more than one CPU column.
    pub fn count(&self, row: &IrqRow, cpu: u32) -> u64 {
        row.count_on(&self.cpus, cpu)
    }

    /// The numbered row of Linux IRQ `number` (a hash lookup: plan and audit ask once per IRQ).
    pub fn numbered(&self, number: u32) -> Option<&IrqRow> {
        let index = self.by_number.get_or_init(|| {
            let mut index = HashMap::with_capacity(self.rows.len());
            for (at, row) in self.rows.iter().enumerate() {
                if let Some(n) = row.number {
                    index.entry(n).or_insert(at);
                }
            }
            index
        });
        index.get(&number).and_then(|&at| self.rows.get(at))
    }

    /// The row labelled `id` (`"LOC"`, `"45"`).
    pub fn row(&self, id: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|row| row.id == id)
    }
}

/// `/proc/softirqs`, parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqTable {
    /// The CPU of each count column, from the header.
    pub cpus: Vec<u32>,
    /// One row per softirq vector, in file order.
    pub rows: Vec<SoftirqRow>,
}

/// One softirq vector and its per-CPU counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoftirqRow {
    /// The vector name: `HI`, `TIMER`, `NET_TX`, `NET_RX`, `BLOCK`, `IRQ_POLL`, `TASKLET`,
    /// `SCHED`, `HRTIMER`, `RCU`.
    pub name: String,
    /// Times the vector was raised (events since boot), parallel to [`SoftirqTable::cpus`].
    pub counts: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_irq_directories_nic_nodes_and_softirqs() {
        let interrupts = "           CPU0       CPU1       CPU2       CPU3\n\
             40:  1  0  0  0  IR-PCI-MSIX-0000:17:00.0   0-edge      eth0-TxRx-0\n\
             41:  0  5  0  0  IR-PCI-MSIX-0000:17:00.0   1-edge      eth0-TxRx-1\n\
             50:  0  0  9  0  IR-PCI-MSIX-0000:41:00.0   3-edge      mlx5_comp3@pci:0000:41:00.0\n\
             60:  0  0  0  2  IR-PCI-MSIX-0000:01:00.0   1-edge      nvme0q1\n\
             61:  0  0  0  0  IR-PCI-MSIX-0000:01:00.0   2-edge      nvme0q2\n\
            LOC:  10  20  30  40   Local timer interrupts\n";
        let dir = TestTree::with(&[
            ("/proc/interrupts", interrupts),
            ("/proc/irq/default_smp_affinity", "3\n"),
            ("/proc/irq/40/smp_affinity_list", "0-1\n"),
            ("/proc/irq/40/effective_affinity_list", "0\n"),
            ("/proc/irq/40/node", "1\n"),
            ("/proc/irq/41/smp_affinity", "0c\n"),
            ("/proc/irq/41/node", "-1\n"),
            ("/proc/irq/50/smp_affinity_list", "2\n"),
            ("/proc/irq/60/smp_affinity_list", "3\n"),
            ("/proc/irq/61/smp_affinity_list", "3-x\n"),
            ("/sys/class/net/eth0/device/numa_node", "1\n"),
            ("/sys/bus/pci/devices/0000:41:00.0/numa_node", "0\n"),
            ("/sys/class/nvme/nvme0/device/numa_node", "-1\n"),
        ]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let irqs = read(&mut r).get_owned().expect("/proc/interrupts is there");
        let default = read_default_affinity(&mut r);
        let warnings = r.warnings.into_vec();

        assert_eq!(default.get().map(CpuSet::to_list).as_deref(), Some("0-1"));
        let numbers: Vec<u32> = irqs.irqs.iter().map(|irq| irq.number).collect();
        assert_eq!(numbers, vec![40, 41, 50, 60, 61]);
        let irq = |n: u32| irqs.irqs.iter().find(|irq| irq.number == n).unwrap();
        let list = |set: &Avail<CpuSet>| set.get().map(CpuSet::to_list);

        assert_eq!(list(&irq(40).affinity).as_deref(), Some("0-1"));
        assert_eq!(list(&irq(40).effective_affinity).as_deref(), Some("0"));
        assert_eq!(irq(40).node, Some(1));
        assert_eq!(irq(40).device_node, Some(1));
        assert!(matches!(irq(40).class, IrqClass::NicQueue { queue: 0, .. }));
        // The mask file stands in for an absent list file.
        assert_eq!(list(&irq(41).affinity).as_deref(), Some("2-3"));
        assert_eq!(irq(41).node, None);
        // A missing file is a reason, not a warning.
        assert!(
            irq(41)
                .effective_affinity
                .reason()
                .is_some_and(|why| why.contains("does not exist"))
        );
        assert_eq!(irq(50).device_node, Some(0));
        assert_eq!(irq(60).device_node, None);
        assert!(matches!(
            irq(60).class,
            IrqClass::Storage { managed: true, .. }
        ));
        assert_eq!(irqs.row(irq(50)).map(|row| row.total()), Some(9));
        // A garbled file is one warning naming it, and unavailable.
        assert!(irq(61).affinity.get().is_none());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].path, "/proc/irq/61/smp_affinity_list");
        assert!(irqs.softirqs.reason().is_some());
    }

    #[test]
    fn a_file_without_newlines_is_warned_not_held() {
        // A sparse 64 MiB file of zeros: one line over the limit, skipped; no header.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let file = std::fs::File::create(dir.path().join("proc/interrupts")).unwrap();
        file.set_len(64 << 20).unwrap();
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        // No header: no evidence of any IRQ, so no table.
        let why = read(&mut r).reason().map(str::to_string);
        assert!(why.is_some_and(|why| why.contains("no 'CPU0 CPU1 ...' header")));
        let warnings = r.warnings.into_vec();
        assert!(
            warnings.iter().all(|w| w.path == INTERRUPTS),
            "{warnings:?}"
        );
        assert!(warnings[0].message.contains("longer than"), "{warnings:?}");
        assert!(warnings[1].message.contains("empty"), "{warnings:?}");
    }

    #[test]
    fn no_proc_interrupts_is_unavailable_without_warnings() {
        let dir = TestTree::with(&[]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let irqs = read(&mut r);
        assert!(
            irqs.reason()
                .is_some_and(|why| why.contains("/proc/interrupts"))
        );
        assert!(r.warnings.into_vec().is_empty());
    }
}
