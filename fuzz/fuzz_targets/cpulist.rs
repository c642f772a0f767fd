//! CPU list and mask parsers: never panic, and what parses round-trips (masks at any width).
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::CpuSet;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(set) = CpuSet::parse_list(text) {
        assert_eq!(CpuSet::parse_list(&set.to_list()).unwrap(), set);
    }
    if let Ok(set) = CpuSet::parse_mask(text) {
        // Widths: narrower than the set, a small machine's, a large machine's.
        for nr_cpu_ids in [0, 16, 256] {
            assert_eq!(CpuSet::parse_mask(&set.to_mask(nr_cpu_ids)).unwrap(), set);
        }
    }
});
