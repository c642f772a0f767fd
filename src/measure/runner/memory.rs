//! What memory the memory engines may use, and the checks that turn a size that cannot work
//! into a clear error before anything is mapped: not enough available memory, a NUMA node
//! without memory or without enough free memory, huge pages not reserved.

use std::collections::BTreeMap;

use crate::machine::Avail;
use crate::machine::kernel::{Hugepages, Meminfo};
use crate::machine::topology::NumaNode;
use crate::units::bytes;

/// The system memory file.
const MEMINFO: &str = "/proc/meminfo";

/// The memory figures the engines need, from the machine model's kernel part.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryBudget {
    /// `MemAvailable`: memory available to new work without swapping, KiB.
    pub available_kib: Avail<u64>,
    /// `Hugepagesize`: the default huge page size, KiB.
    pub hugepage_kib: Avail<u64>,
    /// `HugePages_Free`: free huge pages of the default size (count).
    pub hugepages_free: Avail<u64>,
    /// Free huge pages of the default size per NUMA node (count).
    pub node_hugepages_free: BTreeMap<u32, Avail<u64>>,
}

impl MemoryBudget {
    /// The budget from /proc/meminfo and the huge page pools, as the machine model read them.
    pub(crate) fn new(meminfo: &Avail<Meminfo>, hugepages: &Hugepages) -> MemoryBudget {
        let field = |pick: fn(&Meminfo) -> Option<u64>, key: &str| match meminfo {
            Avail::Available(m) => match pick(m) {
                Some(value) => Avail::Available(value),
                None => Avail::missing(format!("{MEMINFO} has no {key}")),
            },
            Avail::Unavailable { unavailable } => Avail::missing(unavailable.clone()),
        };
        let hugepage_kib = field(|m| m.hugepage_size_kib, "Hugepagesize");
        let node_hugepages_free = hugepages
            .nodes
            .iter()
            .map(|node| {
                let pool = hugepage_kib
                    .get()
                    .and_then(|&kib| node.pools.iter().find(|p| p.size_kib == kib));
                let free = match pool {
                    Some(pool) => pool.free.clone(),
                    None => Avail::missing(format!(
                        "/sys/devices/system/node/node{}/hugepages has no pool of the default \
                         huge page size",
                        node.node
                    )),
                };
                (node.node, free)
            })
            .collect();
        MemoryBudget {
            available_kib: field(|m| m.mem_available_kib, "MemAvailable"),
            hugepage_kib,
            hugepages_free: field(|m| m.hugepages_free, "HugePages_Free"),
            node_hugepages_free,
        }
    }

    /// Fails when `need` bytes exceed MemAvailable. An unknown MemAvailable passes (the
    /// kernel will refuse instead), since old kernels do not print it.
    pub(crate) fn check_available(&self, what: &str, need: u64) -> Result<(), MemoryError> {
        match self.available_kib.get() {
            Some(&kib) if need > kib.saturating_mul(1024) => Err(MemoryError::NotAvailable {
                what: what.to_string(),
                need,
                available: kib.saturating_mul(1024),
            }),
            _ => Ok(()),
        }
    }

    /// Fails when `vectors` vectors of `samples` + 1 timings (8 bytes each, the discarded
    /// first one included) held at once exceed MemAvailable: `--samples 4294967295` asked for
    /// 34 GB and aborted in the allocator instead of saying so.
    pub(crate) fn check_samples(&self, samples: u32, vectors: u64) -> Result<(), MemoryError> {
        let need = (u64::from(samples) + 1)
            .saturating_mul(8)
            .saturating_mul(vectors);
        self.check_available(
            &format!(
                "--samples {samples} ({vectors} x {} timings of 8 bytes held at once)",
                u64::from(samples) + 1
            ),
            need,
        )
    }

    /// The default huge page size in bytes and the pages `need` bytes take, or why huge pages
    /// cannot be used: none reserved, too few free.
    pub(crate) fn check_hugepages(
        &self,
        what: &str,
        need: u64,
    ) -> Result<(usize, u64), MemoryError> {
        let page_kib =
            *self
                .hugepage_kib
                .get()
                .ok_or_else(|| MemoryError::HugePageSizeUnknown {
                    reason: self.hugepage_kib.reason().unwrap_or_default().to_string(),
                })?;
        let page = page_kib.saturating_mul(1024).max(1);
        let pages = need.div_ceil(page);
        let free = self.hugepages_free.get().copied().unwrap_or(0);
        if free < pages {
            return Err(MemoryError::HugePagesShort {
                what: what.to_string(),
                pages,
                page,
                free,
            });
        }
        let page = usize::try_from(page).map_err(|_| MemoryError::HugePageTooLarge)?;
        Ok((page, pages))
    }

    /// Fails when node `node` has fewer than `pages` free huge pages of `page_kib` KiB:
    /// binding huge pages to a node that lacks them ends in SIGBUS at the first touch, not
    /// in an error.
    pub(crate) fn check_node_hugepages(
        &self,
        node: u32,
        pages: u64,
        page_kib: u64,
    ) -> Result<(), MemoryError> {
        let unknown = Avail::missing(format!("no huge page pool is listed for node {node}"));
        let free = self.node_hugepages_free.get(&node).unwrap_or(&unknown);
        match free.get() {
            Some(&free) if free >= pages => Ok(()),
            Some(&free) => Err(MemoryError::NodeHugePagesShort {
                node,
                free,
                pages,
                page_kib,
            }),
            None => Err(MemoryError::NodeHugePagesUnknown {
                node,
                reason: free.reason().unwrap_or_default().to_string(),
            }),
        }
    }
}

/// Why a size cannot work on this machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum MemoryError {
    /// More than MemAvailable.
    #[error(
        "{what} needs {} but {MEMINFO} says only {} is available (MemAvailable): ask for less",
        bytes(*.need), bytes(*.available)
    )]
    NotAvailable {
        /// What needs the memory (`3 arrays of 1 GiB`).
        what: String,
        /// Bytes needed.
        need: u64,
        /// Bytes available.
        available: u64,
    },
    /// The default huge page size is not known.
    #[error("the huge page size is unknown ({reason}); is hugetlbfs built in?")]
    HugePageSizeUnknown {
        /// Why it is not known.
        reason: String,
    },
    /// Fewer free huge pages than needed.
    #[error(
        "{what} needs {pages} huge pages of {} but {} (HugePages_Free in {MEMINFO}); reserve \
         them first, e.g. `echo {pages} > /proc/sys/vm/nr_hugepages` as root",
        bytes(*.page), free_pages(*.free)
    )]
    HugePagesShort {
        /// What needs the pages.
        what: String,
        /// Huge pages needed.
        pages: u64,
        /// Bytes per huge page.
        page: u64,
        /// Huge pages free.
        free: u64,
    },
    /// The huge page size does not fit this machine's address width.
    #[error("huge page size too large")]
    HugePageTooLarge,
    /// Fewer free huge pages on a node than needed.
    #[error(
        "NUMA node {node} has {free} free huge pages of {} but {pages} are needed; reserve \
         them on that node, e.g. `echo {pages} > \
         /sys/devices/system/node/node{node}/hugepages/hugepages-{page_kib}kB/nr_hugepages`",
        bytes(.page_kib.saturating_mul(1024))
    )]
    NodeHugePagesShort {
        /// The node.
        node: u32,
        /// Huge pages free on it.
        free: u64,
        /// Huge pages needed.
        pages: u64,
        /// KiB per huge page.
        page_kib: u64,
    },
    /// A node's free huge pages are not known.
    #[error("cannot tell how many huge pages NUMA node {node} has free ({reason})")]
    NodeHugePagesUnknown {
        /// The node.
        node: u32,
        /// Why they are not known.
        reason: String,
    },
    /// A node without memory.
    #[error(
        "NUMA node {node} has no memory (MemTotal 0 kB in {}): choose a node with memory",
        node_meminfo(*.node)
    )]
    NodeWithoutMemory {
        /// The node.
        node: u32,
    },
    /// Less free memory on a node than needed.
    #[error(
        "{what} needs {} on NUMA node {node} but only {} is free there (MemFree in {}): ask \
         for less",
        bytes(*.need), bytes(*.free), node_meminfo(*.node)
    )]
    NodeMemoryShort {
        /// What needs the memory.
        what: String,
        /// Bytes needed.
        need: u64,
        /// The node.
        node: u32,
        /// Bytes free on it.
        free: u64,
    },
}

impl MemoryError {
    /// Whether the error is about huge pages (asked for with a huge-page option).
    pub(crate) fn is_about_hugepages(&self) -> bool {
        matches!(
            self,
            MemoryError::HugePageSizeUnknown { .. }
                | MemoryError::HugePagesShort { .. }
                | MemoryError::HugePageTooLarge
                | MemoryError::NodeHugePagesShort { .. }
                | MemoryError::NodeHugePagesUnknown { .. }
        )
    }
}

/// `no huge pages are free` or `only N are free`.
fn free_pages(free: u64) -> String {
    if free == 0 {
        "no huge pages are free".to_string()
    } else {
        format!("only {free} are free")
    }
}

/// A node's meminfo file.
fn node_meminfo(node: u32) -> String {
    format!("/sys/devices/system/node/node{node}/meminfo")
}

/// Fails when `node` has no memory, or less free memory than `need` bytes.
pub(crate) fn check_node(node: &NumaNode, what: &str, need: u64) -> Result<(), MemoryError> {
    if node.mem_total_kib.get() == Some(&0) {
        return Err(MemoryError::NodeWithoutMemory { node: node.id });
    }
    match node.mem_free_kib.get() {
        Some(&kib) if need > kib.saturating_mul(1024) => Err(MemoryError::NodeMemoryShort {
            what: what.to_string(),
            need,
            node: node.id,
            free: kib.saturating_mul(1024),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_beyond_available_memory_are_refused() {
        let budget = MemoryBudget {
            available_kib: Avail::Available(1 << 20),
            hugepage_kib: Avail::missing("x".to_string()),
            hugepages_free: Avail::missing("x".to_string()),
            node_hugepages_free: BTreeMap::new(),
        };
        assert!(budget.check_samples(2000, 3).is_ok());
        let err = budget.check_samples(u32::MAX, 3).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "--samples 4294967295 (3 x 4294967296 timings of 8 bytes held at once) needs"
            ),
            "{err}"
        );
    }
    use crate::machine::kernel::{HugePool, NodeHugepages};

    fn budget(available_kib: u64, page_kib: u64, free: u64) -> MemoryBudget {
        MemoryBudget {
            available_kib: Avail::Available(available_kib),
            hugepage_kib: Avail::Available(page_kib),
            hugepages_free: Avail::Available(free),
            node_hugepages_free: BTreeMap::new(),
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

    fn pool(size_kib: u64, free: u64) -> HugePool {
        HugePool {
            size_kib,
            total: Avail::Available(free),
            free: Avail::Available(free),
            reserved: Avail::missing("per node"),
            surplus: Avail::Available(0),
        }
    }

    #[test]
    fn built_from_the_kernel_model() {
        let meminfo = Avail::Available(Meminfo {
            mem_available_kib: Some(1000),
            hugepages_free: Some(3),
            hugepage_size_kib: Some(2048),
            ..Meminfo::default()
        });
        let hugepages = Hugepages {
            global: vec![pool(2048, 3)],
            nodes: vec![
                NodeHugepages {
                    node: 0,
                    pools: vec![pool(2048, 1), pool(1 << 20, 4)],
                },
                NodeHugepages {
                    node: 1,
                    pools: vec![pool(1 << 20, 4)],
                },
            ],
        };
        let b = MemoryBudget::new(&meminfo, &hugepages);
        assert_eq!(b.available_kib, Avail::Available(1000));
        assert_eq!(b.hugepage_kib, Avail::Available(2048));
        assert_eq!(b.hugepages_free, Avail::Available(3));
        assert_eq!(b.node_hugepages_free[&0], Avail::Available(1));
        assert!(
            b.node_hugepages_free[&1]
                .reason()
                .unwrap()
                .contains("node1")
        );
        let missing =
            MemoryBudget::new(&Avail::missing("/proc/meminfo does not exist"), &hugepages);
        assert!(
            missing
                .available_kib
                .reason()
                .unwrap()
                .contains("/proc/meminfo")
        );
        let old = MemoryBudget::new(&Avail::Available(Meminfo::default()), &hugepages);
        assert!(old.available_kib.reason().unwrap().contains("MemAvailable"));
    }

    #[test]
    fn available_memory_bounds_the_size() {
        let b = budget(1 << 20, 2048, 0); // 1 GiB available
        assert!(b.check_available("3 arrays", 1 << 29).is_ok());
        let err = b
            .check_available("3 arrays", 3 << 30)
            .unwrap_err()
            .to_string();
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
            .unwrap_err()
            .to_string();
        assert!(err.contains("128 huge pages of 2 MiB"), "{err}");
        assert!(err.contains("no huge pages are free"), "{err}");
        assert!(
            err.contains("echo 128 > /proc/sys/vm/nr_hugepages"),
            "{err}"
        );
        let err = budget(1 << 30, 2048, 5)
            .check_hugepages("x", 256 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains("only 5 are free"), "{err}");
        assert_eq!(
            budget(1 << 30, 2048, 128).check_hugepages("x", (256 << 20) - 1),
            Ok((2 << 20, 128))
        );
    }

    #[test]
    fn node_huge_pages_are_checked() {
        let mut b = budget(1 << 30, 2048, 8);
        b.node_hugepages_free.insert(0, Avail::Available(4));
        b.node_hugepages_free.insert(1, Avail::Available(1));
        assert!(b.check_node_hugepages(0, 4, 2048).is_ok());
        let err = b.check_node_hugepages(1, 4, 2048).unwrap_err().to_string();
        assert!(
            err.contains("node 1 has 1 free") && err.contains("node1/hugepages"),
            "{err}"
        );
        assert!(
            b.check_node_hugepages(2, 4, 2048)
                .unwrap_err()
                .to_string()
                .contains("node 2")
        );
    }

    #[test]
    fn nodes_need_memory() {
        let err = check_node(&node(2, 0, 0), "x", 1).unwrap_err().to_string();
        assert!(
            err.contains("node 2 has no memory") && err.contains("node2/meminfo"),
            "{err}"
        );
        let err = check_node(&node(1, 1 << 20, 1 << 10), "3 arrays", 3 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains("only 1 MiB is free"), "{err}");
        assert!(check_node(&node(0, 1 << 20, 1 << 20), "x", 1 << 20).is_ok());
    }
}
