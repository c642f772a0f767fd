//! Settings: one knob of the machine with its desired value, shared by the audit (as the fix of
//! a finding), the plan (as what to change) and apply/verify (as what to write and check).

use serde::{Deserialize, Serialize};

use super::setting_id::SettingId;
use crate::machine::CpuSet;

/// Where a setting lives, which decides how it is applied and whether a reboot is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// BIOS / UEFI setup (manual).
    Firmware,
    /// Physical hardware: DIMM population, cabling (manual).
    Hardware,
    /// Kernel command line (needs a reboot).
    Boot,
    /// A sysctl under /proc/sys.
    Sysctl,
    /// Other run-time state: IRQ and task affinity, cpufreq, cpuidle, workqueue masks, THP.
    Runtime,
    /// A system service (irqbalance, tuned, ...).
    Service,
    /// A configuration file lowlat installs.
    File,
    /// A libvirt domain definition, changed with `virsh edit` (manual).
    Domain,
}

impl Layer {
    /// Every layer, in the order the audit reports them.
    pub const ALL: [Layer; 8] = [
        Layer::Firmware,
        Layer::Hardware,
        Layer::Boot,
        Layer::Sysctl,
        Layer::Runtime,
        Layer::Service,
        Layer::File,
        Layer::Domain,
    ];

    /// Lower-case name as used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Firmware => "firmware",
            Layer::Hardware => "hardware",
            Layer::Boot => "boot",
            Layer::Sysctl => "sysctl",
            Layer::Runtime => "runtime",
            Layer::Service => "service",
            Layer::File => "file",
            Layer::Domain => "domain",
        }
    }
}

/// A word that names no layer (`--layer`).
#[derive(Debug, thiserror::Error)]
#[error("no layer '{0}'; the layers: {names}", names = Layer::ALL.map(Layer::name).join(", "))]
pub struct UnknownLayer(String);

impl std::str::FromStr for Layer {
    type Err = UnknownLayer;

    /// A layer by its name (`boot`, `sysctl`, ...), or as the report heads it (`services`).
    fn from_str(text: &str) -> Result<Self, UnknownLayer> {
        (Layer::ALL.into_iter())
            .find(|l| l.name() == text || text.strip_suffix('s') == Some(l.name()))
            .ok_or_else(|| UnknownLayer(text.to_string()))
    }
}

/// One knob and the value lowlat wants it to have. `Id` is [`SettingId`] everywhere but in
/// the grouped form of plan.json (`tuning::grouping`), where a group's id holds a placeholder
/// and is text until each member's id is parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting<Id = SettingId> {
    /// Stable identity: `sysctl:kernel.numa_balancing`, `cmdline:nohz_full`,
    /// `irq:45:affinity`, `kthread:rcu_preempt:affinity`, `service:irqbalance`,
    /// `file:/etc/sysctl.d/99-lowlat.conf`, `cpufreq:governor`, `cpuidle:cpu3:state2`; written
    /// and read as that string, an id that does not parse refused when the document loads.
    pub id: Id,
    /// The desired value, as written to the knob (`0`, `1-7,9-15`, `performance`,
    /// `disabled`); for files, their whole content.
    pub value: String,
    /// Where it lives.
    pub layer: Layer,
    /// Whether it takes effect only after a reboot.
    pub reboot: bool,
    /// Why, in one or two sentences.
    pub rationale: String,
    /// Where the recommendation comes from ("AMD EPYC 7002 low-latency guide §4.2.1").
    pub source: String,
    /// What is given up for it, when it is a trade-off. The one rule: a setting is a trade-off
    /// when it turns off, on this machine, a security mechanism (`mitigations=off`,
    /// `selinux=0`, `audit=0`, IOMMU translation, KVM's NX huge pages) or a detector or limit
    /// that keeps failures visible or contained (the soft- and hard-lockup detectors,
    /// corrected machine-check reports, real-time throttling), or removes a function
    /// (`ipv6.disable=1`). `lowlat plan` plans trade-offs only with
    /// `--allow-security-tradeoffs`; audit and check show one the machine lacks as a warning,
    /// `not planned (trade-off)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_tradeoff: Option<String>,
}

impl<Id> Setting<Id> {
    /// The same setting under another id.
    pub fn with_id<Other>(self, id: Other) -> Setting<Other> {
        Setting {
            id,
            value: self.value,
            layer: self.layer,
            reboot: self.reboot,
            rationale: self.rationale,
            source: self.source,
            security_tradeoff: self.security_tradeoff,
        }
    }
}

impl Setting {
    /// The value as people read it: a hex CPU mask is shown as its CPU list, labelled with the
    /// mask the file takes (`CPUs 0 (mask 1)`), so that it cannot be read as a list; every
    /// other value as it is.
    pub fn value_for_people(&self) -> String {
        value_for_people(&self.id, &self.value)
    }
}

/// `value` of the setting `id` as people read it (see [`Setting::value_for_people`]).
pub fn value_for_people(id: &SettingId, value: &str) -> String {
    let is_mask = id.takes_cpu_mask();
    match CpuSet::parse_mask(value) {
        Ok(cpus) if is_mask && cpus.is_empty() => format!("no CPU (mask {value})"),
        Ok(cpus) if is_mask => format!("CPUs {} (mask {value})", cpus.to_list()),
        _ => value.to_string(),
    }
}
