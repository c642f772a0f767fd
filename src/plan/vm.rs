//! `plan --vm`: a real-time KVM guest laid over the host partition (\[S002\]). From the host plan's
//! isolated and housekeeping CPUs it chooses one isolated core per vCPU on one NUMA node (the
//! SMT siblings of those cores stay idle), the node's housekeeping CPUs for the emulator and an I/O thread,
//! SCHED_FIFO for the real-time vCPUs (never vCPU 0), and huge pages of the host's size on
//! that node; then renders the libvirt domain, the host's huge page reservation for the node,
//! and the guest's own plan (TuneD realtime-virtual-guest variables and kernel arguments)
//! numbered as the guest sees its vCPUs.
//!
//! The domain passes lowlat's own domain rules (`src/audit/rules/domain.rs`) and validates
//! with libvirt's `virt-xml-validate`; the tests check both.

use crate::audit::rules::domain::{node_pool, reserved_sizes};
use crate::machine::{CpuSet, Machine};
use crate::plan::artifacts::Artifact;
use crate::text::Page;
use crate::tuning::partition::Partition;
use crate::units;

/// What `plan --vm` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmRequest {
    /// The domain name (letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// The number of vCPUs.
    pub vcpus: u32,
    /// The real-time vCPUs; `None` for every vCPU but 0.
    pub rt_vcpus: Option<CpuSet>,
    /// Guest memory in KiB.
    pub memory_kib: u64,
    /// The host NUMA node; `None` for the first node with enough free isolated cores.
    pub node: Option<u32>,
}

/// Guest memory when `--memory` is not given, in KiB (4 GiB).
pub const DEFAULT_MEMORY_KIB: u64 = 4 << 20;

/// The planned guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmPlan {
    /// The domain name.
    pub name: String,
    /// The host CPU of each vCPU, by vCPU number.
    pub pins: Vec<u32>,
    /// The real-time vCPUs (SCHED_FIFO priority 1), the guest's isolated CPUs.
    pub rt_vcpus: CpuSet,
    /// The host CPUs of the emulator thread: the node's housekeeping CPUs.
    pub emulator: CpuSet,
    /// The host NUMA node of the vCPUs and the memory.
    pub node: u32,
    /// Guest memory in KiB (rounded up to whole huge pages).
    pub memory_kib: u64,
    /// The huge page size in KiB.
    pub page_kib: u64,
    /// Huge pages the node must hold for this guest and every other domain bound to it.
    pub node_pages: u64,
    /// Huge pages of that size reserved on the node now.
    pub node_pages_now: u64,
}

/// A guest name lowlat cannot write unescaped into XML and file names.
#[derive(Debug, thiserror::Error)]
#[error("'{0}': use letters, digits, '.', '_' and '-' (not first), as in rt-vm")]
pub struct DomainNameError(String);

/// `--vm NAME`: a libvirt domain name lowlat writes unescaped into XML and file names.
pub fn domain_name(text: &str) -> Result<String, DomainNameError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if !text.is_empty() && text.chars().all(allowed) && !text.starts_with(['.', '-']) {
        Ok(text.to_string())
    } else {
        Err(DomainNameError(text.to_string()))
    }
}

/// A refused `--memory SIZE`.
#[derive(Debug, thiserror::Error)]
#[error("'{0}': a size such as 32G, 4096M or 1048576K")]
pub struct MemorySizeError(String);

/// `--memory SIZE`: the guest's memory in KiB, more than none.
pub fn memory_size(text: &str) -> Result<u64, MemorySizeError> {
    super::request::parse_page_size(text)
        .filter(|&kib| kib > 0)
        .ok_or_else(|| MemorySizeError(text.to_string()))
}

/// Why no guest could be planned. Each message says what to change; the CLI names the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VmError {
    /// Too few free isolated cores on any node (or the node asked for).
    #[error(
        "{vcpus} vCPUs need {vcpus} free isolated cores on one NUMA node; {found}. Isolate more cores (--isolate) or ask for fewer vCPUs"
    )]
    NotEnoughCores {
        /// vCPUs asked for.
        vcpus: u32,
        /// What each node offers, in words.
        found: String,
    },
    /// A node with no housekeeping CPU for the emulator thread.
    #[error(
        "node {node} has no housekeeping CPU for the emulator thread; keep one core of it for housekeeping"
    )]
    NoHousekeeping {
        /// The node.
        node: u32,
    },
    /// A real-time vCPU list naming vCPU 0 or a vCPU beyond the count.
    #[error(
        "{list}: real-time vCPUs are 1 to {last} (vCPU 0 stays SCHED_OTHER: a FIFO housekeeping vCPU can starve the host)"
    )]
    RtVcpus {
        /// The list given.
        list: String,
        /// The last vCPU.
        last: u32,
    },
    /// Fewer than 2 vCPUs: vCPU 0 keeps the guest's housekeeping.
    #[error("a real-time guest needs at least 2 vCPUs: vCPU 0 for its housekeeping, one real-time")]
    TooFewVcpus,
}

/// Plans the guest on `machine` with the host plan's `partition`.
pub fn plan(machine: &Machine, partition: &Partition, req: &VmRequest) -> Result<VmPlan, VmError> {
    if req.vcpus < 2 {
        return Err(VmError::TooFewVcpus);
    }
    let last = req.vcpus - 1;
    let rt_vcpus = match &req.rt_vcpus {
        Some(list)
            if list.contains(0) || list.last().is_some_and(|v| v > last) || list.is_empty() =>
        {
            return Err(VmError::RtVcpus {
                list: list.to_list(),
                last,
            });
        }
        Some(list) => list.clone(),
        None => (1..=last).collect(),
    };
    let topology = &machine.topology;
    // Host CPUs other domains' vCPUs are pinned to (this one's, when replanned, are free).
    let taken = machine
        .virt
        .domains
        .iter()
        .filter(|d| d.name != req.name)
        .flat_map(|d| &d.vcpupin)
        .fold(CpuSet::new(), |all, pin| all.union(&pin.cpuset));
    let nodes: Vec<u32> = match req.node {
        Some(node) => vec![node],
        None => topology.nodes.iter().map(|n| n.id).collect(),
    };
    let mut found = Vec::new();
    for node in nodes {
        // One CPU per core whose SMT siblings are all isolated and untaken.
        let cores: Vec<u32> = partition
            .isolated
            .iter()
            .filter(|&cpu| topology.node_of(cpu) == Some(node))
            .filter(|&cpu| {
                let siblings = topology.siblings_of(cpu);
                siblings.first() == Some(cpu)
                    && siblings.is_subset(&partition.isolated)
                    && !siblings.intersects(&taken)
            })
            .collect();
        if cores.len() < req.vcpus as usize {
            found.push(format!("node {node} has {}", cores.len()));
            continue;
        }
        let emulator: CpuSet = partition
            .housekeeping
            .iter()
            .filter(|&cpu| topology.node_of(cpu) == Some(node))
            .collect();
        if emulator.is_empty() {
            return Err(VmError::NoHousekeeping { node });
        }
        let page_kib = page_size(machine);
        let memory_kib = req.memory_kib.div_ceil(page_kib) * page_kib;
        let others: u64 = machine
            .virt
            .domains
            .iter()
            .filter(|d| d.name != req.name && d.memory_backing.hugepages)
            .filter(|d| {
                d.numatune
                    .as_ref()
                    .and_then(|n| n.nodeset.as_ref())
                    .is_some_and(|s| s.contains(node))
            })
            .map(|d| d.memory_kib.div_ceil(page_kib))
            .sum();
        return Ok(VmPlan {
            name: req.name.clone(),
            pins: cores.into_iter().take(req.vcpus as usize).collect(),
            rt_vcpus,
            emulator,
            node,
            memory_kib,
            page_kib,
            node_pages: memory_kib / page_kib + others,
            node_pages_now: node_pool(machine, node, page_kib),
        });
    }
    Err(VmError::NotEnoughCores {
        vcpus: req.vcpus,
        found: if found.is_empty() {
            "the machine has no NUMA node of that number".to_string()
        } else {
            found.join(", ")
        },
    })
}

/// The huge page size for guests: the largest size the host reserves pages of, else 1 GiB
/// when the host supports it, else 2 MiB.
fn page_size(machine: &Machine) -> u64 {
    let supported = &machine.kernel.hugepages.global;
    reserved_sizes(machine)
        .into_iter()
        .max()
        .or_else(|| supported.iter().map(|p| p.size_kib).find(|&s| s == 1 << 20))
        .unwrap_or(2048)
}

/// The headroom above guest memory for `<hard_limit>` (KiB), as the audit checks it.
const LOCK_HEADROOM_KIB: u64 = crate::audit::rules::domain::LOCK_HEADROOM_KIB;

impl VmPlan {
    /// The libvirt domain: the elements to merge with `virsh edit NAME` into an existing
    /// domain (or `virsh define` as is, after adding a disk and a network interface). One I/O
    /// thread, pinned beside the emulator, takes disk I/O off the vCPUs once a disk names it
    /// (`<driver iothread='1'/>`).
    pub fn domain_xml(&self) -> String {
        let pins: String = self
            .pins
            .iter()
            .enumerate()
            .map(|(vcpu, cpu)| format!("    <vcpupin vcpu='{vcpu}' cpuset='{cpu}'/>\n"))
            .collect();
        format!(
            "<domain type='kvm'>
  <name>{name}</name>
  <memory unit='KiB'>{memory}</memory>
  <memtune>
    <hard_limit unit='KiB'>{limit}</hard_limit>
  </memtune>
  <memoryBacking>
    <hugepages>
      <page size='{page}' unit='KiB'/>
    </hugepages>
    <nosharepages/>
    <locked/>
  </memoryBacking>
  <vcpu placement='static'>{vcpus}</vcpu>
  <iothreads>1</iothreads>
  <cputune>
{pins}    <emulatorpin cpuset='{emulator}'/>
    <iothreadpin iothread='1' cpuset='{emulator}'/>
    <vcpusched vcpus='{rt}' scheduler='fifo' priority='1'/>
  </cputune>
  <numatune>
    <memory mode='strict' nodeset='{node}'/>
  </numatune>
  <os>
    <type arch='x86_64'>hvm</type>
  </os>
  <features>
    <acpi/>
    <apic/>
    <pmu state='off'/>
  </features>
  <cpu mode='host-passthrough'>
    <topology sockets='1' dies='1' cores='{vcpus}' threads='1'/>
    <feature policy='require' name='tsc-deadline'/>
  </cpu>
  <clock offset='utc'>
    <timer name='kvmclock' present='no'/>
    <timer name='hpet' present='no'/>
  </clock>
  <devices>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
</domain>
",
            name = self.name,
            memory = self.memory_kib,
            limit = self.memory_kib + LOCK_HEADROOM_KIB,
            page = self.page_kib,
            vcpus = self.pins.len(),
            emulator = self.emulator.to_list(),
            rt = self.rt_vcpus.to_list(),
            node = self.node,
        )
    }

    /// The host's huge page reservation for the node: what it needs, what it has, and the
    /// sysfs write that reserves it.
    pub fn host_hugepages(&self) -> String {
        let path = format!(
            "/sys/devices/system/node/node{}/hugepages/hugepages-{}kB/nr_hugepages",
            self.node, self.page_kib
        );
        let mut out = Page::new();
        writeln!(
            out,
            "node {node} needs {need} pages of {size} ({now} reserved now){verdict}\necho {need} > {path}",
            node = self.node,
            need = self.node_pages,
            size = units::kib(self.page_kib),
            now = self.node_pages_now,
            verdict = if self.node_pages_now >= self.node_pages {
                ": enough"
            } else {
                ": reserve them before starting the guest (1 GiB pages: at boot, while memory is not yet fragmented)"
            },
        );
        writeln!(
            out,
            "guest memory {} = {} pages; the domain's <numatune> keeps it on node {}",
            units::kib(self.memory_kib),
            self.memory_kib / self.page_kib,
            self.node
        );
        out.into_string()
    }

    /// TuneD `realtime-virtual-guest-variables.conf` for the guest.
    pub fn guest_variables(&self) -> String {
        format!(
            "# TuneD realtime-virtual-guest variables for {}: the guest isolates its real-time vCPUs.\n\
             # Install in the guest as: /etc/tuned/realtime-virtual-guest-variables.conf\n\
             isolated_cores={}\n",
            self.name,
            self.rt_vcpus.to_list()
        )
    }

    /// The guest's kernel arguments for its partition (its CPU N is vCPU N).
    pub fn guest_cmdline(&self) -> String {
        let guest = Partition {
            housekeeping: (0..self.pins.len() as u32)
                .filter(|v| !self.rt_vcpus.contains(*v))
                .collect(),
            isolated: self.rt_vcpus.clone(),
            no_balance: self.rt_vcpus.clone(),
            nr_cpus: self.pins.len() as u32,
        };
        // The guest's kernel is not known here: the range form, which every kernel reads.
        let iso = guest.isolated.to_list();
        format!(
            "{} nohz=on nohz_full={iso} rcu_nocbs={iso} irqaffinity={} skew_tick=1 tsc=reliable",
            crate::plan::kernel_cmdline::isolcpus_args(
                &guest,
                crate::machine::cpulist::ListSyntax::Ranges,
            ),
            guest.housekeeping.to_list()
        )
    }

    /// The files `plan --vm --out DIR` adds: the domain and the guest's plan.
    pub fn artifacts(&self) -> Vec<Artifact<'static>> {
        vec![
            Artifact::text(
                format!("libvirt/{}.xml", self.name),
                None,
                self.domain_xml(),
            ),
            Artifact::text(
                "guest/realtime-virtual-guest-variables.conf",
                None,
                self.guest_variables(),
            ),
            Artifact::text(
                "guest/kernel-cmdline.txt",
                None,
                format!("{}\n", self.guest_cmdline()),
            ),
        ]
    }

    /// The three parts people read: host reservation, domain, guest plan.
    pub fn render(&self) -> String {
        let pins: Vec<String> = self
            .pins
            .iter()
            .enumerate()
            .map(|(v, c)| format!("{v}->{c}"))
            .collect();
        format!(
            "Real-time guest {name} on node {node}: vCPU->host CPU {pins}; emulator on {emu}; \
             FIFO vCPUs {rt}\n\n\
             1. Host huge pages\n  {pages}\n\
             2. Domain (virsh edit {name}: merge these elements; the audit checks them with \
             `lowlat audit --profile realtime-host --domain FILE`)\n\n{xml}\n\
             3. Guest plan (in the guest, CPU N is vCPU N)\n  \
             /etc/tuned/realtime-virtual-guest-variables.conf: isolated_cores={rt}\n  \
             kernel arguments: {cmdline}\n  \
             then in the guest: lowlat plan --profile realtime-guest --isolate {rt}\n",
            name = self.name,
            node = self.node,
            pins = pins.join(" "),
            emu = self.emulator.to_list(),
            rt = self.rt_vcpus.to_list(),
            pages = self.host_hugepages().trim_end().replace('\n', "\n  "),
            xml = self.domain_xml(),
            cmdline = self.guest_cmdline(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_memory_is_a_size_of_more_than_none() {
        assert_eq!(memory_size("32G").unwrap(), 32 << 20);
        assert_eq!(memory_size("4096M").unwrap(), 4 << 20);
        for refused in ["0", "0G", "lots", ""] {
            let err = memory_size(refused).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("'{refused}': a size such as 32G, 4096M or 1048576K")
            );
        }
    }
}
