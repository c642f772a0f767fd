//! Kernel memory settings: transparent huge pages, huge page pools (global and per NUMA node)
//! and `/proc/meminfo`.

use serde::{Deserialize, Serialize};

use crate::machine::{Avail, Reader, Warnings};

/// A sysfs setting written as its choices with the current one in brackets
/// (`always [madvise] never`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The choice in effect (the bracketed word).
    pub current: String,
    /// Every choice offered, in the kernel's order.
    pub available: Vec<String>,
}

/// Parses `always [madvise] never`; `None` when no word is bracketed.
pub(crate) fn parse_choice(text: &str) -> Option<Choice> {
    let mut current = None;
    let mut available = Vec::new();
    for word in text.split_whitespace() {
        match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(inner) => {
                current = Some(inner.to_string());
                available.push(inner.to_string());
            }
            None => available.push(word.to_string()),
        }
    }
    Some(Choice {
        current: current?,
        available,
    })
}

/// Transparent huge page settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thp {
    /// `/sys/kernel/mm/transparent_hugepage/enabled`: always, madvise or never.
    pub enabled: Avail<Choice>,
    /// `/sys/kernel/mm/transparent_hugepage/defrag`: always, defer, defer+madvise, madvise,
    /// never.
    pub defrag: Avail<Choice>,
}

const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// Reads the THP settings; garbled files are warned about.
pub(crate) fn read_thp(r: &mut Reader) -> Thp {
    Thp {
        enabled: read_choice(r, &format!("{THP_DIR}/enabled")),
        defrag: read_choice(r, &format!("{THP_DIR}/defrag")),
    }
}

fn read_choice(r: &mut Reader, path: &str) -> Avail<Choice> {
    match r.value(path) {
        Avail::Available(text) => match parse_choice(&text) {
            Some(choice) => Avail::Available(choice),
            None => {
                r.warnings.file(path, "no choice is marked [current]");
                Avail::missing(format!("{path}: no choice is marked [current]"))
            }
        },
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

/// One huge page pool: the pages of one size, globally or on one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HugePool {
    /// The page size in KiB (2048 for 2 MiB, 1048576 for 1 GiB).
    pub size_kib: u64,
    /// `nr_hugepages`: pages in the pool (count).
    pub total: Avail<u64>,
    /// `free_hugepages`: pages not yet faulted in by anyone (count).
    pub free: Avail<u64>,
    /// `resv_hugepages`: pages promised to mappings but not yet faulted in (count); the
    /// kernel keeps this only globally.
    pub reserved: Avail<u64>,
    /// `surplus_hugepages`: pages above `nr_hugepages` from overcommit (count).
    pub surplus: Avail<u64>,
}

/// The huge page pools of one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeHugepages {
    /// The node number.
    pub node: u32,
    /// One pool per page size, smallest first.
    pub pools: Vec<HugePool>,
}

/// Huge page pools, globally and per node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hugepages {
    /// `/sys/kernel/mm/hugepages/hugepages-<N>kB`, smallest size first; empty when the kernel
    /// has no hugetlbfs support.
    pub global: Vec<HugePool>,
    /// `/sys/devices/system/node/node<N>/hugepages`, per node in node order.
    pub nodes: Vec<NodeHugepages>,
}

/// The page size in KiB of a pool directory name (`hugepages-2048kB` → 2048).
pub(crate) fn parse_pool_dir(name: &str) -> Option<u64> {
    name.strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()
}

/// Reads the global and per-node huge page pools.
pub(crate) fn read_hugepages(r: &mut Reader) -> Hugepages {
    let global = read_pools(r, "/sys/kernel/mm/hugepages", true);
    let nodes = r
        .root
        .list_numbered("/sys/devices/system/node", "node")
        .into_iter()
        .map(|(node, name)| NodeHugepages {
            node,
            pools: read_pools(
                r,
                &format!("/sys/devices/system/node/{name}/hugepages"),
                false,
            ),
        })
        .collect();
    Hugepages { global, nodes }
}

fn read_pools(r: &mut Reader, dir: &str, global: bool) -> Vec<HugePool> {
    let names = match r.root.list(dir) {
        Ok(names) => names,
        Err(e) => {
            r.warnings.file(dir, e.to_string());
            return Vec::new();
        }
    };
    let mut pools: Vec<HugePool> = names
        .iter()
        .filter_map(|name| Some((parse_pool_dir(name)?, name)))
        .map(|(size_kib, name)| {
            let pool = format!("{dir}/{name}");
            HugePool {
                size_kib,
                total: r.parse(&format!("{pool}/nr_hugepages")),
                free: r.parse(&format!("{pool}/free_hugepages")),
                reserved: if global {
                    r.parse(&format!("{pool}/resv_hugepages"))
                } else {
                    Avail::missing("the kernel counts reserved huge pages only globally")
                },
                surplus: r.parse(&format!("{pool}/surplus_hugepages")),
            }
        })
        .collect();
    pools.sort_by_key(|pool| pool.size_kib);
    pools
}

/// The fields of `/proc/meminfo` that lowlat uses; `None` when the kernel does not print one.
// Unknown fields are refused so that `{"unavailable": ...}` is not read back as an
// `Avail::Available` with every field `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meminfo {
    /// `MemTotal`: usable RAM in KiB.
    pub mem_total_kib: Option<u64>,
    /// `MemFree`: unused RAM in KiB.
    pub mem_free_kib: Option<u64>,
    /// `MemAvailable`: RAM available for new work without swapping, in KiB.
    pub mem_available_kib: Option<u64>,
    /// `HugePages_Total`: pages in the default-size pool (count).
    pub hugepages_total: Option<u64>,
    /// `HugePages_Free`: free pages in the default-size pool (count).
    pub hugepages_free: Option<u64>,
    /// `HugePages_Rsvd`: reserved pages in the default-size pool (count).
    pub hugepages_reserved: Option<u64>,
    /// `HugePages_Surp`: surplus pages in the default-size pool (count).
    pub hugepages_surplus: Option<u64>,
    /// `Hugepagesize`: the default huge page size in KiB.
    pub hugepage_size_kib: Option<u64>,
    /// `Hugetlb`: memory in all huge page pools, in KiB (Linux 4.16+).
    pub hugetlb_kib: Option<u64>,
}

/// Parses `/proc/meminfo` (`Key:   value kB` lines). Lines that do not have that shape are
/// warned about with `path` and their line number, and skipped.
pub(crate) fn parse_meminfo(text: &str, path: &str, warnings: &mut Warnings) -> Meminfo {
    let mut info = Meminfo::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = line.split_once(':').and_then(|(key, rest)| {
            let mut words = rest.split_whitespace();
            let value: u64 = words.next()?.parse().ok()?;
            match (words.next(), words.next()) {
                (None | Some("kB"), None) => Some((key.trim(), value)),
                _ => None,
            }
        });
        let Some((key, value)) = parsed else {
            warnings.line(
                path,
                index + 1,
                format!(
                    "expected 'Key: number [kB]', found '{}'",
                    crate::machine::truncate(line, 60)
                ),
            );
            continue;
        };
        let slot = match key {
            "MemTotal" => &mut info.mem_total_kib,
            "MemFree" => &mut info.mem_free_kib,
            "MemAvailable" => &mut info.mem_available_kib,
            "HugePages_Total" => &mut info.hugepages_total,
            "HugePages_Free" => &mut info.hugepages_free,
            "HugePages_Rsvd" => &mut info.hugepages_reserved,
            "HugePages_Surp" => &mut info.hugepages_surplus,
            "Hugepagesize" => &mut info.hugepage_size_kib,
            "Hugetlb" => &mut info.hugetlb_kib,
            _ => continue,
        };
        *slot = Some(value);
    }
    info
}

/// The meminfo file.
pub(crate) const MEMINFO: &str = "/proc/meminfo";

/// Reads and parses `/proc/meminfo`.
pub(crate) fn read_meminfo(r: &mut Reader) -> Avail<Meminfo> {
    match r.text(MEMINFO) {
        Avail::Available(text) => Avail::Available(parse_meminfo(&text, MEMINFO, &mut r.warnings)),
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;
    use proptest::prelude::*;

    #[test]
    fn bracketed_choices() {
        let choice = parse_choice("always [madvise] never\n").unwrap();
        assert_eq!(choice.current, "madvise");
        assert_eq!(choice.available, vec!["always", "madvise", "never"]);
        let defrag = parse_choice("always defer defer+madvise [madvise] never").unwrap();
        assert_eq!(defrag.current, "madvise");
        assert_eq!(defrag.available.len(), 5);
        assert_eq!(parse_choice("always madvise never"), None);
        assert_eq!(parse_choice(""), None);
        assert_eq!(parse_choice("[]").unwrap().current, "");
    }

    #[test]
    fn pool_directory_names() {
        assert_eq!(parse_pool_dir("hugepages-2048kB"), Some(2048));
        assert_eq!(parse_pool_dir("hugepages-1048576kB"), Some(1_048_576));
        assert_eq!(parse_pool_dir("hugepages-kB"), None);
        assert_eq!(parse_pool_dir("hugepages-2048MB"), None);
        assert_eq!(parse_pool_dir("nr_hugepages"), None);
    }

    // [S002]: the RT guest after tuning, 1 GiB default pages.
    const RT_GUEST_MEMINFO: &str = "MemTotal:       16266836 kB
MemFree:         2987652 kB
MemAvailable:    3141100 kB
Buffers:            2104 kB
HugePages_Total:      12
HugePages_Free:       12
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:    1048576 kB
Hugetlb:        12582912 kB
DirectMap1G:     8388608 kB
";

    #[test]
    fn meminfo_of_the_rt_guest() {
        let mut warnings = Warnings::default();
        let info = parse_meminfo(RT_GUEST_MEMINFO, MEMINFO, &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(info.mem_total_kib, Some(16_266_836));
        assert_eq!(info.mem_available_kib, Some(3_141_100));
        assert_eq!(info.hugepages_total, Some(12));
        assert_eq!(info.hugepage_size_kib, Some(1_048_576));
        assert_eq!(info.hugetlb_kib, Some(12_582_912));
    }

    #[test]
    fn garbled_meminfo_lines_are_warned_and_skipped() {
        let text = "MemTotal: 100 kB\nMemFree 5 kB\nHugePages_Total: x\nMemAvailable: 7 MB\n\nHugepagesize: 2048 kB\n";
        let mut warnings = Warnings::default();
        let info = parse_meminfo(text, MEMINFO, &mut warnings);
        let lines: Vec<_> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(2), Some(3), Some(4)]);
        assert_eq!(info.mem_total_kib, Some(100));
        assert_eq!(info.mem_free_kib, None);
        assert_eq!(info.mem_available_kib, None);
        assert_eq!(info.hugepage_size_kib, Some(2048));
    }

    #[test]
    fn reads_pools_globally_and_per_node() {
        let dir = TestTree::empty();
        let d = &dir;
        for (size, nr) in [("1048576", "12"), ("2048", "0")] {
            let pool = format!("/sys/kernel/mm/hugepages/hugepages-{size}kB");
            d.write(&format!("{pool}/nr_hugepages"), format!("{nr}\n"));
            d.write(&format!("{pool}/free_hugepages"), "12\n");
            d.write(&format!("{pool}/resv_hugepages"), "0\n");
            d.write(&format!("{pool}/surplus_hugepages"), "0\n");
        }
        let node = "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB";
        d.write(&format!("{node}/nr_hugepages"), "12\n");
        d.write(&format!("{node}/free_hugepages"), "garbage\n");
        d.write(&format!("{node}/surplus_hugepages"), "0\n");
        d.write(&format!("{THP_DIR}/enabled"), "always madvise [never]\n");
        d.write(&format!("{THP_DIR}/defrag"), "always defer\n");
        let root = d.root();
        let mut r = Reader::new(&root);
        let pages = read_hugepages(&mut r);
        let sizes: Vec<u64> = pages.global.iter().map(|p| p.size_kib).collect();
        assert_eq!(sizes, vec![2048, 1_048_576]);
        assert_eq!(pages.global[1].total.get(), Some(&12));
        assert_eq!(pages.nodes.len(), 1);
        let pool = &pages.nodes[0].pools[0];
        assert_eq!(pool.total.get(), Some(&12));
        assert!(pool.free.reason().unwrap().contains("cannot parse"));
        assert!(pool.reserved.reason().unwrap().contains("only globally"));
        let thp = read_thp(&mut r);
        assert_eq!(thp.enabled.get().unwrap().current, "never");
        assert!(thp.defrag.reason().is_some());
        let warned: Vec<String> = r.warnings.into_vec().into_iter().map(|w| w.path).collect();
        assert_eq!(
            warned,
            vec![
                format!("{node}/free_hugepages"),
                format!("{THP_DIR}/defrag")
            ]
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC{0,200}") {
            let mut warnings = Warnings::default();
            let _ = parse_meminfo(&text, MEMINFO, &mut warnings);
            let _ = parse_choice(&text);
            let _ = parse_pool_dir(&text);
        }
    }
}
