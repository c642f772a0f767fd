//! Anonymous memory for the memory engines, mapped without being touched, optionally backed
//! by reserved huge pages and optionally bound to one NUMA node. Nothing is placed until the
//! first write, so the thread that writes a page first decides where it lives (or the binding
//! does), as STREAM's first-touch rule and MLC's `-j` node option require.

use std::io;
use std::ptr::NonNull;

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
        let (len, extra) = match backing {
            Backing::Normal => (len.max(1), 0),
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
