//! CPU identity from /proc/cpuinfo: vendor, family/model/stepping, model name, microcode, flags,
//! and whether (and under which hypervisor) the machine is virtual.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::{Avail, Reader, Warnings};

/// Where the kernel describes each online CPU.
pub const CPUINFO: &str = "/proc/cpuinfo";

/// What the processor is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuIdentity {
    /// `vendor_id`: `AuthenticAMD`, `GenuineIntel`, ... (other architectures: the CPU implementer).
    pub vendor: Option<String>,
    /// `cpu family` (decimal).
    pub family: Option<u32>,
    /// `model` (decimal).
    pub model: Option<u32>,
    /// `stepping`.
    pub stepping: Option<u32>,
    /// `model name` (or `cpu` / `Processor` on other architectures), whitespace collapsed.
    pub model_name: Option<String>,
    /// `microcode` revision as written (e.g. `0x830104d`).
    pub microcode: Option<String>,
    /// CPU flags of the first processor (`constant_tsc`, `nonstop_tsc`, `hypervisor`, ...).
    pub flags: Vec<String>,
    /// Known hardware bugs of the first processor (`spectre_v2`, ...).
    pub bugs: Vec<String>,
    /// Number of `processor` blocks in /proc/cpuinfo (online logical CPUs).
    pub processors: usize,
}

impl CpuIdentity {
    /// Whether the first processor lists `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether the TSC runs at a constant rate through P- and C-states (`constant_tsc` and
    /// `nonstop_tsc`): the condition for using it as a clock and for `tsc=reliable`.
    pub fn invariant_tsc(&self) -> bool {
        self.has_flag("constant_tsc") && self.has_flag("nonstop_tsc")
    }

    /// Whether the CPU runs under a hypervisor (the `hypervisor` flag).
    pub fn is_virtual(&self) -> bool {
        self.has_flag("hypervisor")
    }
}

/// The hypervisor a virtual machine runs under, and how it was recognised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypervisor {
    /// `KVM`, `Xen`, `VMware`, `Hyper-V`, ... or `unknown`.
    pub vendor: String,
    /// The file and value that told it (e.g. `/sys/class/dmi/id/sys_vendor = QEMU`).
    pub evidence: String,
}

/// Parses /proc/cpuinfo. Lines without a `key : value` shape are warned about and skipped.
pub fn parse_cpuinfo(text: &str, warnings: &mut Warnings) -> CpuIdentity {
    let mut first: BTreeMap<&str, &str> = BTreeMap::new();
    let mut processors = 0;
    let mut in_first = true;
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\0');
        if line.trim().is_empty() {
            if processors > 0 {
                in_first = false;
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            warnings.line(CPUINFO, index + 1, "line without 'key : value', skipped");
            continue;
        };
        let key = key.trim();
        if key == "processor" {
            processors += 1;
        }
        if in_first {
            first.entry(key).or_insert(value.trim());
        }
    }
    let text_of = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| first.get(k))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|v| !v.is_empty())
    };
    let number_of = |key: &str| first.get(key).and_then(|v| parse_number(v));
    let words = |key: &str| {
        first
            .get(key)
            .map(|v| v.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    };
    CpuIdentity {
        vendor: text_of(&["vendor_id", "CPU implementer", "vendor"]),
        family: number_of("cpu family"),
        model: number_of("model"),
        stepping: number_of("stepping"),
        model_name: text_of(&["model name", "cpu", "Processor"]),
        microcode: text_of(&["microcode"]),
        flags: words("flags"),
        bugs: words("bugs"),
        processors,
    }
}

fn parse_number(text: &str) -> Option<u32> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Reads the CPU identity; unavailable when /proc/cpuinfo lists no processor (empty or
/// garbled: nothing in it is evidence, not even the absence of the hypervisor flag).
pub fn read(r: &mut Reader) -> Avail<CpuIdentity> {
    match r.text(CPUINFO) {
        Avail::Available(text) => match parse_cpuinfo(&text, &mut r.warnings) {
            identity if identity.processors == 0 => {
                Avail::missing(format!("{CPUINFO} lists no processor (empty or garbled)"))
            }
            identity => Avail::Available(identity),
        },
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

/// Recognises the hypervisor of a virtual machine from what the guest can see: Xen's
/// /sys/hypervisor/type, the DMI system vendor and product, and paravirtual clocksources.
/// Returns None on bare metal (no `hypervisor` flag).
pub fn read_hypervisor(r: &mut Reader, identity: &CpuIdentity) -> Option<Hypervisor> {
    if !identity.is_virtual() {
        return None;
    }
    let found = |vendor: &str, path: &str, value: &str| Hypervisor {
        vendor: vendor.to_string(),
        evidence: format!("{path} = {value}"),
    };
    const XEN: &str = "/sys/hypervisor/type";
    if let Some(value) = r.opt::<String>(XEN) {
        return Some(found(&capitalise(&value), XEN, &value));
    }
    const DMI_VENDOR: &str = "/sys/class/dmi/id/sys_vendor";
    const DMI_PRODUCT: &str = "/sys/class/dmi/id/product_name";
    for path in [DMI_VENDOR, DMI_PRODUCT] {
        if let Some(value) = r.opt::<String>(path)
            && let Some(vendor) = vendor_from_dmi(&value)
        {
            return Some(found(vendor, path, &value));
        }
    }
    const CLOCKSOURCES: &str = "/sys/devices/system/clocksource/clocksource0/available_clocksource";
    if let Some(value) = r.opt::<String>(CLOCKSOURCES) {
        let vendor = value.split_whitespace().find_map(|c| match c {
            "kvm-clock" => Some("KVM"),
            "hyperv_clocksource_tsc_page" | "hyperv_clocksource_msr" => Some("Hyper-V"),
            "xen" => Some("Xen"),
            _ => None,
        });
        if let Some(vendor) = vendor {
            return Some(found(vendor, CLOCKSOURCES, &value));
        }
    }
    Some(Hypervisor {
        vendor: "unknown".to_string(),
        evidence: "the CPU's hypervisor flag; nothing under the root names the vendor".to_string(),
    })
}

fn vendor_from_dmi(value: &str) -> Option<&'static str> {
    let lower = value.to_ascii_lowercase();
    [
        ("qemu", "KVM"),
        ("kvm", "KVM"),
        ("vmware", "VMware"),
        ("microsoft", "Hyper-V"),
        ("virtualbox", "VirtualBox"),
        ("innotek", "VirtualBox"),
        ("xen", "Xen"),
        ("amazon ec2", "KVM (Amazon EC2 Nitro)"),
        ("google compute engine", "KVM (Google Compute Engine)"),
        ("openstack", "KVM (OpenStack)"),
    ]
    .into_iter()
    .find(|(needle, _)| lower.contains(needle))
    .map(|(_, vendor)| vendor)
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPYC: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n\
model name\t: AMD EPYC 7F32 8-Core Processor\nstepping\t: 0\nmicrocode\t: 0x830104d\n\
flags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\nbugs\t\t: sysret_ss_attrs spectre_v1\n\n\
processor\t: 1\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu\n\n";

    #[test]
    fn reads_identity_from_the_first_block() {
        let mut warnings = Warnings::default();
        let id = parse_cpuinfo(EPYC, &mut warnings);
        assert_eq!(id.vendor.as_deref(), Some("AuthenticAMD"));
        assert_eq!(
            (id.family, id.model, id.stepping),
            (Some(23), Some(49), Some(0))
        );
        assert_eq!(
            id.model_name.as_deref(),
            Some("AMD EPYC 7F32 8-Core Processor")
        );
        assert_eq!(id.microcode.as_deref(), Some("0x830104d"));
        assert!(id.invariant_tsc());
        assert!(!id.is_virtual());
        assert_eq!(id.processors, 2);
        assert!(warnings.into_vec().is_empty());
    }

    #[test]
    fn garbled_lines_are_warned_and_skipped() {
        let mut warnings = Warnings::default();
        let id = parse_cpuinfo(
            "processor : 0\nthis is junk\nvendor_id : GenuineIntel\n",
            &mut warnings,
        );
        assert_eq!(id.vendor.as_deref(), Some("GenuineIntel"));
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(2));
    }

    #[test]
    fn dmi_names_the_hypervisor() {
        assert_eq!(vendor_from_dmi("QEMU"), Some("KVM"));
        assert_eq!(vendor_from_dmi("VMware, Inc."), Some("VMware"));
        assert_eq!(vendor_from_dmi("HPE"), None);
    }
}
