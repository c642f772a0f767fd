//! What memory the memory engines may use, and the checks that turn a size that cannot work
//! into a clear error before anything is mapped: not enough available memory, a NUMA node
//! without memory or without enough free memory, huge pages not reserved.

use crate::machine::topology::NumaNode;
use crate::machine::{Avail, Reader};
use crate::report::units::bytes;

/// The system memory file.
const MEMINFO: &str = "/proc/meminfo";

/// The memory figures of /proc/meminfo the engines need.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryBudget {
    /// `MemAvailable`: memory available to new work without swapping, KiB.
    pub available_kib: Avail<u64>,
    /// `Hugepagesize`: the default huge page size, KiB.
    pub hugepage_kib: Avail<u64>,
    /// `HugePages_Free`: free huge pages of the default size (count).
    pub hugepages_free: Avail<u64>,
}

/// One `Key: value [kB]` field of a meminfo text; `None` when absent or not a number.
pub fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        (name.trim() == key).then_some(())?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

impl MemoryBudget {
    /// Reads /proc/meminfo through the reader.
    pub fn read(r: &mut Reader) -> MemoryBudget {
        let text = r.text(MEMINFO);
        let field = |key: &str| match &text {
            Avail::Available(text) => match meminfo_field(text, key) {
                Some(value) => Avail::Available(value),
                None => Avail::missing(format!("{MEMINFO} has no {key}")),
            },
            Avail::Unavailable { unavailable } => Avail::missing(unavailable.clone()),
        };
        MemoryBudget {
            available_kib: field("MemAvailable"),
            hugepage_kib: field("Hugepagesize"),
            hugepages_free: field("HugePages_Free"),
        }
    }

    /// Fails when `need` bytes exceed MemAvailable. An unknown MemAvailable passes (the
    /// kernel will refuse instead), since old kernels do not print it.
    pub fn check_available(&self, what: &str, need: u64) -> Result<(), String> {
        match self.available_kib.get() {
            Some(&kib) if need > kib.saturating_mul(1024) => Err(format!(
                "{what} needs {} but {MEMINFO} says only {} is available (MemAvailable): \
                 ask for less",
                bytes(need),
                bytes(kib.saturating_mul(1024))
            )),
            _ => Ok(()),
        }
    }

    /// The default huge page size in bytes and the pages `need` bytes take, or why huge pages
    /// cannot be used: none reserved, too few free.
    pub fn check_hugepages(&self, what: &str, need: u64) -> Result<(usize, u64), String> {
        let page_kib = *self.hugepage_kib.get().ok_or_else(|| {
            format!(
                "--hugepages: the huge page size is unknown ({}); is hugetlbfs built in?",
                self.hugepage_kib.reason().unwrap_or_default()
            )
        })?;
        let page = page_kib.saturating_mul(1024).max(1);
        let pages = need.div_ceil(page);
        let free = self.hugepages_free.get().copied().unwrap_or(0);
        if free < pages {
            let reserved = if free == 0 {
                "no huge pages are free".to_string()
            } else {
                format!("only {free} are free")
            };
            return Err(format!(
                "--hugepages: {what} needs {pages} huge pages of {} but {reserved} \
                 (HugePages_Free in {MEMINFO}); reserve them first, e.g. \
                 `echo {pages} > /proc/sys/vm/nr_hugepages` as root",
                bytes(page)
            ));
        }
        let page = usize::try_from(page).map_err(|_| "huge page size too large".to_string())?;
        Ok((page, pages))
    }
}

/// Free huge pages of `page_kib` KiB on NUMA node `node`
/// (`/sys/devices/system/node/nodeN/hugepages/hugepages-<size>kB/free_hugepages`).
pub fn node_hugepages_free(r: &mut Reader, node: u32, page_kib: u64) -> Avail<u64> {
    r.parse(&format!(
        "/sys/devices/system/node/node{node}/hugepages/hugepages-{page_kib}kB/free_hugepages"
    ))
}

/// Fails when node `node` has fewer than `pages` free huge pages of `page_kib` KiB: binding
/// huge pages to a node that lacks them ends in SIGBUS at the first touch, not in an error.
pub fn check_node_hugepages(
    node: u32,
    pages: u64,
    page_kib: u64,
    free: &Avail<u64>,
) -> Result<(), String> {
    match free.get() {
        Some(&free) if free >= pages => Ok(()),
        Some(&free) => Err(format!(
            "--hugepages: NUMA node {node} has {free} free huge pages of {} but {pages} are \
             needed; reserve them on that node, e.g. `echo {pages} > \
             /sys/devices/system/node/node{node}/hugepages/hugepages-{page_kib}kB/nr_hugepages`",
            bytes(page_kib.saturating_mul(1024))
        )),
        None => Err(format!(
            "--hugepages: cannot tell how many huge pages NUMA node {node} has free ({})",
            free.reason().unwrap_or_default()
        )),
    }
}

/// Fails when `node` has no memory, or less free memory than `need` bytes.
pub fn check_node(node: &NumaNode, what: &str, need: u64) -> Result<(), String> {
    let path = format!("/sys/devices/system/node/node{}/meminfo", node.id);
    if node.mem_total_kib.get() == Some(&0) {
        return Err(format!(
            "NUMA node {} has no memory (MemTotal 0 kB in {path}): choose a node with memory",
            node.id
        ));
    }
    match node.mem_free_kib.get() {
        Some(&kib) if need > kib.saturating_mul(1024) => Err(format!(
            "{what} needs {} on NUMA node {} but only {} is free there (MemFree in {path}): \
             ask for less",
            bytes(need),
            node.id,
            bytes(kib.saturating_mul(1024))
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(available_kib: u64, page_kib: u64, free: u64) -> MemoryBudget {
        MemoryBudget {
            available_kib: Avail::Available(available_kib),
            hugepage_kib: Avail::Available(page_kib),
            hugepages_free: Avail::Available(free),
        }
    }

    fn node(id: u32, total_kib: u64, free_kib: u64) -> NumaNode {
        NumaNode {
            id,
            cpus: Default::default(),
            mem_total_kib: Avail::Available(total_kib),
            mem_free_kib: Avail::Available(free_kib),
            distances: vec![10],
            implied: false,
        }
    }

    #[test]
    fn reads_meminfo_fields() {
        let text = "MemTotal:       24684000 kB\nMemAvailable:   24240000 kB\n\
                    HugePages_Free:        3\nHugepagesize:       2048 kB\ngarbage\n";
        assert_eq!(meminfo_field(text, "MemAvailable"), Some(24_240_000));
        assert_eq!(meminfo_field(text, "HugePages_Free"), Some(3));
        assert_eq!(meminfo_field(text, "Hugepagesize"), Some(2048));
        assert_eq!(meminfo_field(text, "MemFree"), None);
        assert_eq!(meminfo_field("MemFree: lots", "MemFree"), None);
    }

    #[test]
    fn reads_through_a_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/meminfo"),
            "MemAvailable: 1000 kB\nHugePages_Free: 0\nHugepagesize: 2048 kB\n",
        )
        .unwrap();
        let root = crate::sysroot::SysRoot::dir(dir.path());
        let b = MemoryBudget::read(&mut Reader::new(&root));
        assert_eq!(b, budget(1000, 2048, 0));
        let empty = tempfile::tempdir().unwrap();
        let root = crate::sysroot::SysRoot::dir(empty.path());
        let b = MemoryBudget::read(&mut Reader::new(&root));
        assert!(b.available_kib.reason().unwrap().contains("/proc/meminfo"));
    }

    #[test]
    fn available_memory_bounds_the_size() {
        let b = budget(1 << 20, 2048, 0); // 1 GiB available
        assert!(b.check_available("3 arrays", 1 << 29).is_ok());
        let err = b.check_available("3 arrays", 3 << 30).unwrap_err();
        assert!(
            err.contains("3 GiB") && err.contains("MemAvailable"),
            "{err}"
        );
        let unknown = MemoryBudget {
            available_kib: Avail::missing("old kernel"),
            ..b
        };
        assert!(unknown.check_available("x", u64::MAX).is_ok());
    }

    #[test]
    fn huge_pages_must_be_reserved() {
        let err = budget(1 << 30, 2048, 0)
            .check_hugepages("a 256 MiB buffer", 256 << 20)
            .unwrap_err();
        assert!(err.contains("128 huge pages of 2 MiB"), "{err}");
        assert!(err.contains("no huge pages are free"), "{err}");
        assert!(
            err.contains("echo 128 > /proc/sys/vm/nr_hugepages"),
            "{err}"
        );
        let err = budget(1 << 30, 2048, 5)
            .check_hugepages("x", 256 << 20)
            .unwrap_err();
        assert!(err.contains("only 5 are free"), "{err}");
        assert_eq!(
            budget(1 << 30, 2048, 128).check_hugepages("x", (256 << 20) - 1),
            Ok((2 << 20, 128))
        );
    }

    #[test]
    fn node_huge_pages_are_checked() {
        assert!(check_node_hugepages(1, 4, 2048, &Avail::Available(4)).is_ok());
        let err = check_node_hugepages(1, 4, 2048, &Avail::Available(1)).unwrap_err();
        assert!(
            err.contains("node 1 has 1 free") && err.contains("node1/hugepages"),
            "{err}"
        );
        assert!(check_node_hugepages(1, 4, 2048, &Avail::missing("absent")).is_err());
        let dir = tempfile::tempdir().unwrap();
        let pool = dir
            .path()
            .join("sys/devices/system/node/node1/hugepages/hugepages-2048kB");
        std::fs::create_dir_all(&pool).unwrap();
        std::fs::write(pool.join("free_hugepages"), "7\n").unwrap();
        let root = crate::sysroot::SysRoot::dir(dir.path());
        assert_eq!(
            node_hugepages_free(&mut Reader::new(&root), 1, 2048),
            Avail::Available(7)
        );
    }

    #[test]
    fn nodes_need_memory() {
        let err = check_node(&node(2, 0, 0), "x", 1).unwrap_err();
        assert!(
            err.contains("node 2 has no memory") && err.contains("node2/meminfo"),
            "{err}"
        );
        let err = check_node(&node(1, 1 << 20, 1 << 10), "3 arrays", 3 << 20).unwrap_err();
        assert!(err.contains("only 1 MiB is free"), "{err}");
        assert!(check_node(&node(0, 1 << 20, 1 << 20), "x", 1 << 20).is_ok());
    }
}
