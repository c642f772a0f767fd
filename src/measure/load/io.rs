//! `io`: O_DIRECT reads and writes of 4 KiB at random places of a scratch file, one thread and
//! one file per housekeeping CPU, so that each operation reaches the block device (and its
//! interrupts). The files are opened `O_TMPFILE`: they have no name, and the kernel frees them
//! when they are closed, also when lowlat is killed, so nothing is ever left behind. Counts the
//! operations.

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Context, Worker};
use crate::machine::CpuSet;
use crate::measure::runner::region::{Backing, Region};

/// Where the scratch files go by default: a directory on disk that survives reboots, unlike
/// /tmp, which is often memory.
pub(super) const DEFAULT_DIR: &str = "/var/tmp";
/// Bytes of one operation (and their alignment, which O_DIRECT needs).
const BLOCK: usize = 4096;
/// Bytes of each scratch file.
pub(super) const FILE_BYTES: u64 = 16 << 20;
/// Operations between two looks at the stop.
const OPS_PER_CHUNK: u32 = 16;

/// One thread per CPU of `cpus`, each with its scratch file in `dir` (default
/// [`DEFAULT_DIR`]), opened here so that a directory where none can be made is said at once.
pub(super) fn workers(cpus: &CpuSet, dir: Option<&Path>) -> Result<Vec<Worker>, String> {
    let dir = dir.unwrap_or(Path::new(DEFAULT_DIR));
    let mut workers = Vec::new();
    for cpu in cpus.iter() {
        let file = scratch(dir).map_err(|e| {
            format!(
                "no scratch file in {}: {e}; io skipped (give a writable directory on the disk \
                 to load with --load-dir)",
                dir.display()
            )
        })?;
        workers.push(Worker {
            cpu,
            work: Box::new(move |ctx| read_and_write(ctx, &file, u64::from(cpu))),
        });
    }
    Ok(workers)
}

/// An unnamed file of [`FILE_BYTES`] in `dir`, for direct I/O.
pub(super) fn scratch(dir: &Path) -> std::io::Result<File> {
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("the path holds a NUL byte"))?;
    // SAFETY: open with a valid C string; the descriptor returned is owned below.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_DIRECT | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.set_len(FILE_BYTES)?;
    Ok(file)
}

/// Writes then reads a block at random places, chunk by chunk.
fn read_and_write(ctx: &Context<'_>, file: &File, seed: u64) -> Result<(), String> {
    // A page-aligned block, as O_DIRECT needs.
    let mut region = Region::map(BLOCK, Backing::Normal).map_err(|e| format!("a buffer: {e}"))?;
    let block = &mut region.as_f64_mut()[..BLOCK / 8];
    block.fill(1.0);
    let mut rng = fastrand::Rng::with_seed(seed);
    let blocks = FILE_BYTES / BLOCK as u64;
    ctx.chunks(|| {
        for i in 0..OPS_PER_CHUNK {
            let at = rng.u64(0..blocks) * BLOCK as u64;
            let bytes = as_bytes(block);
            let done = if i % 2 == 0 {
                file.write_at(bytes, at)
            } else {
                file.read_at(bytes, at)
            };
            done.map_err(|e| format!("an O_DIRECT operation: {e}"))?;
            ctx.done.fetch_add(1, Ordering::Relaxed);
        }
        Ok(true)
    })
}

/// The block's bytes.
fn as_bytes(block: &mut [f64]) -> &mut [u8] {
    // SAFETY: any byte pattern is a valid f64 and u8; the length is the same memory.
    unsafe { std::slice::from_raw_parts_mut(block.as_mut_ptr().cast::<u8>(), block.len() * 8) }
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{run_briefly, small};
    use super::*;

    #[test]
    fn a_directory_without_a_scratch_file_skips_io_and_says_where() {
        let err = workers(
            &CpuSet::parse_list("0").unwrap(),
            Some(Path::new("/nonexistent-lowlat")),
        )
        .err()
        .unwrap();
        assert!(
            err.contains("no scratch file in /nonexistent-lowlat"),
            "{err}"
        );
        assert!(err.contains("io skipped"), "{err}");
    }

    #[test]
    fn operations_are_counted_and_no_file_is_left_behind() {
        let dir = tempfile::tempdir_in(DEFAULT_DIR).unwrap();
        let probe = scratch(dir.path());
        if let Err(e) = &probe {
            crate::test_tree::missing_data(&format!(
                "a scratch file in {DEFAULT_DIR} (O_TMPFILE|O_DIRECT: {e})"
            ));
            return;
        }
        drop(probe);
        let round = run_briefly(&small(&[Kind::Io], Some(dir.path().to_path_buf())));
        assert!(round.kinds[0].rate > 0.0, "{round:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
