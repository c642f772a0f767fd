//! The host side of virtualisation: the libvirt domains defined or running here, the KVM
//! module parameters that add guest jitter, and KSM.
//!
//! Domains are read from `/etc/libvirt/qemu/*.xml` (defined) and `/run/libvirt/qemu/*.xml`
//! (running; this file wins for a domain in both, since it is what QEMU runs with), through
//! the SysRoot, so a snapshot carries them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::machine::Reader;
use crate::machine::domain::{self, Domain, DomainError};

/// Where libvirt keeps persistent domain definitions.
pub const DEFINED_DIR: &str = "/etc/libvirt/qemu";
/// Where libvirt keeps the status of running domains.
pub const RUNNING_DIR: &str = "/run/libvirt/qemu";
/// KSM's switch: 0 stopped, 1 merging, 2 stopped and unmerged.
pub const KSM_RUN: &str = "/sys/kernel/mm/ksm/run";

/// The KVM module parameters the real-time host rules read, as `module.parameter`.
pub const KVM_PARAMETERS: &[&str] = &[
    "kvm.kvmclock_periodic_sync",
    "kvm.nx_huge_pages",
    "kvm_intel.ple_gap",
    "kvm_amd.pause_filter_count",
];

/// Virtualisation state of a host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Virt {
    /// The domains read, by name.
    pub domains: Vec<Domain>,
    /// Domain files that could not be read as domains.
    pub errors: Vec<DomainError>,
    /// The loaded KVM module parameters of [`KVM_PARAMETERS`], `module.parameter` → value as
    /// the kernel prints it (`Y`, `N`, `0`, `auto`).
    pub kvm: BTreeMap<String, String>,
    /// `/sys/kernel/mm/ksm/run` when KSM is built in.
    pub ksm_run: Option<u32>,
}

impl Virt {
    /// Whether nothing virtualisation-related was found (then it is left out of JSON).
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.errors.is_empty() && self.kvm.is_empty()
    }

    /// Replaces the domains found with one given domain file (`audit --domain FILE`).
    pub fn only(&mut self, domain: Domain) {
        self.domains = vec![domain];
        self.errors.clear();
    }
}

/// Reads the domains, the KVM parameters and KSM under the reader's root.
pub fn read(r: &mut Reader) -> Virt {
    let mut by_name: BTreeMap<String, Domain> = BTreeMap::new();
    let mut errors = Vec::new();
    for dir in [DEFINED_DIR, RUNNING_DIR] {
        let names = r.root.list(dir).unwrap_or_default();
        for file in names.iter().filter(|n| n.ends_with(".xml")) {
            let path = format!("{dir}/{file}");
            let Some(text) = r.text_or_warn(&path) else {
                continue;
            };
            match domain::parse(&path, &text) {
                Ok(domain) => {
                    by_name.insert(domain.name.clone(), domain);
                }
                Err(e) => errors.push(e),
            }
        }
    }
    let mut kvm = BTreeMap::new();
    for key in KVM_PARAMETERS {
        let (module, parameter) = key.split_once('.').unwrap_or_default();
        let path = format!("/sys/module/{module}/parameters/{parameter}");
        if let Some(value) = r.value(&path).get() {
            kvm.insert(key.to_string(), value.clone());
        }
    }
    Virt {
        domains: by_name.into_values().collect(),
        errors,
        kvm,
        ksm_run: r.opt(KSM_RUN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn running_status_wins_and_bad_files_are_errors() {
        let tree = TestTree::with(&[
            (
                "/etc/libvirt/qemu/a.xml",
                "<domain><name>a</name><vcpu>2</vcpu></domain>",
            ),
            (
                "/run/libvirt/qemu/a.xml",
                "<domstatus state='running'><domain><name>a</name><vcpu>4</vcpu></domain></domstatus>",
            ),
            ("/etc/libvirt/qemu/b.xml", "<domain><name>b</name>"),
            ("/etc/libvirt/qemu/autostart", ""),
            ("/sys/module/kvm/parameters/nx_huge_pages", "auto\n"),
            ("/sys/kernel/mm/ksm/run", "0\n"),
        ]);
        let root = tree.root();
        let virt = read(&mut Reader::new(&root));
        assert_eq!(virt.domains.len(), 1);
        assert_eq!(virt.domains[0].vcpus, 4);
        assert_eq!(virt.domains[0].path, "/run/libvirt/qemu/a.xml");
        assert_eq!(virt.errors.len(), 1);
        assert_eq!(virt.errors[0].path, "/etc/libvirt/qemu/b.xml");
        assert_eq!(virt.kvm["kvm.nx_huge_pages"], "auto");
        assert_eq!(virt.ksm_run, Some(0));
    }
}
