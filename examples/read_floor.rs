//! The least time reading a machine tree's files can take on this machine: the lower bound
//! under `lowlat inventory`, `audit` and `plan` on a large tree (bench/read-floor.sh).
//!
//! It reads the files listed in LIST, each whole, with nothing else: no parsing, no model, no
//! output. Each line of LIST is `DIR<TAB>PATH`, a file as lowlat opened it (`PATH` relative
//! to the directory `DIR`, as `strace -y` shows its `openat` calls); each directory is opened
//! once, as lowlat does, so a path walks no more components than lowlat's. The work is spread
//! over THREADS threads (default: every CPU) as evenly as it can be: files are handed out one
//! at a time, and a file over 64 MiB (a large `/proc/interrupts`) is read in 256 KiB pieces
//! with `pread`, the pieces handed out like files. So the time printed is what the kernel
//! needs to open, copy and close these files, spread perfectly over the CPUs: a floor no
//! reader of the same files goes under.
//!
//! Usage: read_floor LIST [THREADS]
//! Prints one line: `files F bytes B threads T wall_s W cpu_s C`: seconds from the first
//! open to the last close, and the CPU time (user and system, all threads) spent over them.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use rustix::fs::{Mode, OFlags};

/// Files larger than this are read in pieces by all threads.
const LARGE_FILE_BYTES: u64 = 64 << 20;
/// The size of one piece of a large file, and of the buffer each thread reads into.
const PIECE_BYTES: usize = 256 << 10;

/// One unit of work: a small file read whole, or a piece of a large one.
enum Work {
    /// A file: index of its directory, and its path from there.
    File(usize, CString),
    /// `PIECE_BYTES` of the large file `large[index]` from byte `offset`.
    Piece(usize, u64),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(list), threads) = (args.get(1), args.get(2)) else {
        eprintln!("usage: read_floor LIST [THREADS]  (LIST: lines of DIR<TAB>PATH)");
        return ExitCode::from(2);
    };
    let threads = match threads.map(|t| t.parse::<usize>()) {
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Some(Ok(t)) if t > 0 => t,
        Some(_) => {
            eprintln!("read_floor: THREADS must be a positive number");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(list) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("read_floor: {list}: {e}");
            return ExitCode::from(2);
        }
    };
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let read_flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut dir_index = HashMap::new();
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut files = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some((dir, path)) = line.split_once('\t') else {
            eprintln!("read_floor: {list}:{}: not DIR<TAB>PATH", number + 1);
            return ExitCode::from(2);
        };
        let index = match dir_index.get(dir) {
            Some(&index) => index,
            None => match rustix::fs::open(dir, dir_flags, Mode::empty()) {
                Ok(fd) => {
                    dirs.push(fd);
                    dir_index.insert(dir.to_string(), dirs.len() - 1);
                    dirs.len() - 1
                }
                Err(e) => {
                    eprintln!("read_floor: {list}:{}: {dir}: {e}", number + 1);
                    return ExitCode::from(2);
                }
            },
        };
        let Ok(path) = CString::new(path) else {
            eprintln!("read_floor: {list}:{}: a path with a NUL byte", number + 1);
            return ExitCode::from(2);
        };
        files.push((index, path));
    }

    // The sizes are looked at before the clock starts: lowlat does not look at them.
    let sized: Vec<(usize, CString, u64)> = files
        .into_iter()
        .map(|(dir, path)| {
            let size = rustix::fs::statat(&dirs[dir], &*path, rustix::fs::AtFlags::empty())
                .map_or(0, |stat| stat.st_size as u64);
            (dir, path, size)
        })
        .collect();

    let cpu_before = cpu_seconds();
    let started = Instant::now();
    // Large files are opened here (once) and cut into pieces; the others are read whole.
    let mut large: Vec<OwnedFd> = Vec::new();
    let mut work = Vec::with_capacity(sized.len());
    for (dir, path, size) in sized {
        if size <= LARGE_FILE_BYTES {
            work.push(Work::File(dir, path));
            continue;
        }
        match rustix::fs::openat(&dirs[dir], &*path, read_flags, Mode::empty()) {
            Ok(fd) => large.push(fd),
            Err(e) => {
                eprintln!("read_floor: {}: {e}", path.to_string_lossy());
                return ExitCode::from(1);
            }
        }
        work.extend(
            (0..size.div_ceil(PIECE_BYTES as u64))
                .map(|piece| Work::Piece(large.len() - 1, piece * PIECE_BYTES as u64)),
        );
    }
    let next = AtomicUsize::new(0);
    let bytes = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buffer = vec![0u8; PIECE_BYTES];
                let mut read = 0u64;
                while let Some(item) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    read += match item {
                        Work::File(dir, path) => {
                            let Ok(fd) =
                                rustix::fs::openat(&dirs[*dir], &**path, read_flags, Mode::empty())
                            else {
                                continue;
                            };
                            // A read that comes back short is the end (as lowlat reads a tree).
                            let mut total = 0;
                            while let Ok(n) = rustix::io::read(&fd, &mut buffer[..]) {
                                total += n as u64;
                                if n < buffer.len() {
                                    break;
                                }
                            }
                            total
                        }
                        Work::Piece(file, offset) => {
                            rustix::io::pread(&large[*file], &mut buffer[..], *offset)
                                .map_or(0, |n| n as u64)
                        }
                    };
                }
                bytes.fetch_add(read, Ordering::Relaxed);
            });
        }
    });
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    println!(
        "files {} bytes {} threads {threads} wall_s {wall:.3} cpu_s {cpu:.3}",
        work.iter().filter(|w| matches!(w, Work::File(..))).count() + large.len(),
        bytes.load(Ordering::Relaxed),
    );
    ExitCode::SUCCESS
}

/// The CPU time of this process so far (all threads, user and system), in seconds.
fn cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
