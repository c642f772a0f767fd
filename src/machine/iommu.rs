//! Whether an IOMMU translates device DMA: the units the kernel registered and the default
//! domain type of the IOMMU groups (`identity` under `iommu=pt`).

use serde::{Deserialize, Serialize};

use super::{Avail, Reader};

/// Where the kernel lists IOMMU units (`ivhd0` on AMD, `dmar0` on Intel).
pub(crate) const UNITS: &str = "/sys/class/iommu";
/// Where the kernel lists IOMMU groups.
pub(crate) const GROUPS: &str = "/sys/kernel/iommu_groups";

/// The IOMMU as the OS sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iommu {
    /// The IOMMU units the kernel registered; empty when the IOMMU is off (in the BIOS or
    /// with `amd_iommu=off` / `intel_iommu=off`). Unavailable when the root has no
    /// `/sys/class` at all (a container or a partial copy).
    pub units: Avail<Vec<String>>,
    /// The domain type of the first IOMMU group (`/sys/kernel/iommu_groups/N/type`, Linux
    /// 5.11+): `identity` (passthrough), `DMA` or `DMA-FQ` (translating).
    pub default_domain: Option<String>,
}

/// Reads the IOMMU state.
pub(crate) fn read(r: &mut Reader) -> Iommu {
    let units = if r.root.exists("/sys/class") {
        match r.root.list(UNITS) {
            Ok(units) => Avail::Available(units),
            Err(e) => Avail::missing(e.to_string()),
        }
    } else {
        Avail::missing("/sys/class does not exist under the root")
    };
    let default_domain = r
        .root
        .list_numbered(GROUPS, "")
        .first()
        .and_then(|(_, group)| r.opt::<String>(&format!("{GROUPS}/{group}/type")));
    Iommu {
        units,
        default_domain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn reads_units_and_domain_type() {
        let dir = TestTree::empty();
        dir.make_dir("/sys/class/iommu/ivhd0")
            .make_dir("/sys/kernel/iommu_groups/12")
            .write("/sys/kernel/iommu_groups/3/type", "identity\n");
        let root = dir.root();
        let iommu = read(&mut Reader::new(&root));
        assert_eq!(iommu.units.get().unwrap(), &vec!["ivhd0".to_string()]);
        assert_eq!(iommu.default_domain.as_deref(), Some("identity"));
    }

    #[test]
    fn no_sysfs_is_unavailable_and_an_empty_class_is_off() {
        let dir = TestTree::empty();
        let root = dir.root();
        assert!(read(&mut Reader::new(&root)).units.reason().is_some());
        dir.make_dir("/sys/class/net");
        let iommu = read(&mut Reader::new(&root));
        assert_eq!(iommu.units.get().map(Vec::len), Some(0));
        assert_eq!(iommu.default_domain, None);
    }
}
