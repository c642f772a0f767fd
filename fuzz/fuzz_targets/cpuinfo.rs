//! /proc/cpuinfo parser: never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::machine::{Warnings, cpu::parse_cpuinfo};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_cpuinfo(&text, &mut Warnings::default());
});
