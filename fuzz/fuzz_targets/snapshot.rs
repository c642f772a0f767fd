//! Snapshot opener and loader: any bytes given as a `--snapshot` file never panic, every archive
//! entry lands inside the opener's private temporary directory, and that directory is gone once
//! the opened root is dropped; loading the file into memory (as `lowlat fleet` does, with its
//! own walk of the tar headers) never panics and writes nothing.
//!
//! An input that starts with the zstd magic number is opened as it is (the decoder is fuzzed
//! too); any other input is taken for a tar stream and compressed first, so that mutations
//! reach the archive checks rather than dying in the decompressor.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The zstd frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A scratch directory for this process: `input` holds the snapshot file and `tmp` is
/// `TMPDIR`, where the opener makes its private directory. Anything that appears in the
/// scratch directory besides them, or stays in `tmp` after the root is dropped, was written
/// outside the private directory or leaked.
struct Scratch {
    dir: PathBuf,
    input: PathBuf,
    tmp: PathBuf,
}

fn scratch() -> &'static Scratch {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("lowlat-fuzz-snapshot-{}", std::process::id()));
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).expect("creating the fuzz scratch directory");
        // SAFETY: set once, before the opener (the only reader of TMPDIR here) first runs, and
        // libFuzzer runs the target on one thread.
        unsafe { std::env::set_var("TMPDIR", &tmp) };
        Scratch {
            input: dir.join("input.lowlat"),
            dir,
            tmp,
        }
    })
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listing the fuzz scratch directory")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fuzz_target!(|data: &[u8]| {
    let scratch = scratch();
    let file = if data.starts_with(&ZSTD_MAGIC) {
        data.to_vec()
    } else {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    };
    std::fs::write(&scratch.input, file).expect("writing the fuzz input");
    if let Ok((root, _manifest)) = lowlat::snapshot::open(&scratch.input) {
        let private = root.dir_path().to_path_buf();
        assert!(
            private.starts_with(&scratch.tmp),
            "unpacked outside TMPDIR: {private:?}"
        );
        drop(root);
        assert!(
            !private.exists(),
            "{private:?} left behind after the root was dropped"
        );
    }
    if let Ok((root, _manifest)) = lowlat::snapshot::load(&scratch.input) {
        // Every listing and read of the loaded tree works without panicking.
        let mut dirs = vec![String::from("/")];
        while let Some(dir) = dirs.pop() {
            for name in root.list(&dir).unwrap_or_default() {
                let path = format!("{}/{name}", dir.trim_end_matches('/'));
                if root.is_dir(&path) {
                    dirs.push(path.clone());
                }
                let _ = root.read_bytes(&path);
            }
        }
    }
    assert_eq!(
        names_in(&scratch.dir),
        ["input.lowlat", "tmp"],
        "written outside the private directory"
    );
    assert!(
        names_in(&scratch.tmp).is_empty(),
        "private directory left behind in TMPDIR"
    );
});
