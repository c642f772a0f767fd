//! Anonymous memory for the memory engines, mapped without being touched, optionally backed
//! by reserved huge pages and optionally bound to one NUMA node. Nothing is placed until the
//! first write, so the thread that writes a page first decides where it lives (or the binding
//! does), as STREAM's first-touch rule and MLC's `-j` node option require.

use std::io;
use std::ptr::NonNull;

/// The size of a transparent huge page on x86-64 and most arm64 kernels (PMD size).
pub(crate) const THP_BYTES: usize = 2 << 20;

/// One anonymous private mapping, unmapped on drop.
pub(crate) struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned memory with no thread affinity; access is through &/&mut.
unsafe impl Send for Region {}
// SAFETY: shared access only hands out shared slices.
unsafe impl Sync for Region {}

/// How the region is backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backing {
    /// Normal pages (4 KiB on x86; transparent huge pages may apply).
    Normal,
    /// Normal pages the kernel is asked to back with transparent huge pages: the mapping is
    /// aligned to [`THP_BYTES`] and advised `MADV_HUGEPAGE` (which works in THP's `always`
    /// and `madvise` modes; in `never`, or without THP, the pages stay small).
    Transparent,
    /// Reserved huge pages of this many bytes (MAP_HUGETLB with the default huge page size).
    Huge {
        /// The huge page size in bytes (Hugepagesize of /proc/meminfo).
        page_bytes: usize,
    },
}

impl Region {
    /// Maps at least `len` bytes (rounded up to whole huge pages for [`Backing::Huge`]).
    /// Fails with the kernel's error; for huge pages that means none are free.
    pub(crate) fn map(len: usize, backing: Backing) -> io::Result<Region> {
        if backing == Backing::Transparent {
            return Region::map_transparent(len);
        }
        let (len, extra) = match backing {
            Backing::Normal | Backing::Transparent => (len.max(1), 0),
            Backing::Huge { page_bytes } => {
                let page = page_bytes.max(1);
                (len.max(1).div_ceil(page) * page, libc::MAP_HUGETLB)
            }
        };
        // SAFETY: an anonymous private mapping at an address of the kernel's choice.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        Ok(Region { ptr, len })
    }

    /// A mapping of whole [`THP_BYTES`] blocks starting on a block boundary (a larger one is
    /// mapped and its ends given back), advised `MADV_HUGEPAGE`.
    fn map_transparent(len: usize) -> io::Result<Region> {
        let len = len.max(1).div_ceil(THP_BYTES) * THP_BYTES;
        let wide = Region::map(len + THP_BYTES, Backing::Normal)?;
        let start = wide.ptr.as_ptr() as usize;
        let aligned = start.div_ceil(THP_BYTES) * THP_BYTES;
        let (head, tail) = (aligned - start, wide.len - (aligned - start) - len);
        let region = Region {
            // SAFETY: `aligned` lies inside the mapping, THP_BYTES - 1 bytes at most from its start.
            ptr: unsafe { NonNull::new_unchecked(aligned as *mut u8) },
            len,
        };
        std::mem::forget(wide);
        // SAFETY: the two ends are parts of the mapping made above that `region` does not
        // cover; the advice concerns `region`'s own range.
        unsafe {
            if head > 0 {
                libc::munmap(start as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((aligned + len) as *mut libc::c_void, tail);
            }
            // Without THP (EINVAL) the pages stay small: the run reports what it got.
            libc::madvise(region.ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
        }
        Ok(region)
    }

    /// Bytes of the region backed by transparent huge pages now, from the `AnonHugePages` of
    /// its mapping in `/proc/self/smaps`; `None` when that cannot be read.
    pub(crate) fn transparent_huge_bytes(&self) -> Option<u64> {
        let smaps = crate::sysroot::SysRoot::live()
            .read("/proc/self/smaps")
            .ok()?;
        let start = format!("{:x}-", self.ptr.as_ptr() as usize);
        // Every mapping lists AnonHugePages: the first one after the region's header is its.
        smaps
            .lines()
            .skip_while(|l| !l.starts_with(&start))
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    }

    /// Binds the region's future pages to NUMA node `node` (mbind MPOL_BIND). Call before the
    /// first write; pages already placed stay where they are.
    pub(crate) fn bind_to_node(&self, node: u32) -> io::Result<()> {
        const BITS: usize = u64::BITS as usize;
        let mut mask = vec![0u64; node as usize / BITS + 1];
        if let Some(word) = mask.get_mut(node as usize / BITS) {
            *word |= 1 << (node as usize % BITS);
        }
        // The kernel reads `maxnode - 1` bits, hence the + 1 (as numactl does).
        let maxnode = mask.len() * BITS + 1;
        // SAFETY: the range is our own mapping and the mask outlives the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr.as_ptr(),
                self.len,
                libc::MPOL_BIND,
                mask.as_ptr(),
                maxnode,
                0u32,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The mapped length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The start address.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The region as `f64`s. Reading before writing gives zeros (fresh anonymous memory), and
    /// touches the pages from the reading thread.
    pub(crate) fn as_f64_mut(&mut self) -> &mut [f64] {
        // SAFETY: page-aligned, zero-filled memory of `len` bytes, exclusively borrowed; every
        // bit pattern is a valid f64.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().cast::<f64>(),
                self.len / size_of::<f64>(),
            )
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped; no borrows outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transparent_region_is_aligned_to_huge_pages_and_says_what_backs_it() {
        let mut region = Region::map(3 << 20, Backing::Transparent).unwrap();
        assert_eq!(region.as_ptr() as usize % THP_BYTES, 0);
        assert_eq!(region.len(), 4 << 20);
        region.as_f64_mut().fill(1.0);
        // How much THP backs depends on the kernel's mode; that it can be read does not.
        let backed = region
            .transparent_huge_bytes()
            .expect("smaps names the mapping");
        assert!(backed <= 4 << 20);
    }

    #[test]
    fn maps_binds_and_writes() {
        let mut region = Region::map(3 * 4096 + 5, Backing::Normal).unwrap();
        assert_eq!(region.len(), 3 * 4096 + 5);
        // Node 0 exists on every Linux machine with NUMA support; without it mbind says ENOSYS.
        match region.bind_to_node(0) {
            Ok(()) => {}
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOSYS), "{e}"),
        }
        let values = region.as_f64_mut();
        assert!(values.iter().all(|&v| v == 0.0));
        values[0] = 1.5;
        assert_eq!(region.as_f64_mut()[0], 1.5);
    }

    #[test]
    fn binding_to_a_missing_node_fails() {
        let region = Region::map(4096, Backing::Normal).unwrap();
        assert!(region.bind_to_node(1000).is_err());
    }

    #[test]
    fn huge_rounds_up_to_whole_pages() {
        // Without reserved huge pages the kernel refuses; with them the length is rounded.
        match Region::map(
            1,
            Backing::Huge {
                page_bytes: 2 << 20,
            },
        ) {
            Ok(region) => assert_eq!(region.len(), 2 << 20),
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }
}
