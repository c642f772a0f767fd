//! /proc/PID/stat and /proc/PID/status parsers and the per-CPU kthread recogniser: never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::Warnings;
use lowlat::machine::tasks::{parse_stat, parse_status, per_cpu};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(stat) = parse_stat(&text) {
        let _ = per_cpu(&stat.comm);
    }
    let _ = parse_status(&text, "/proc/1/status", &mut Warnings::default());
});
