//! `--hugepages SIZE:COUNT`: never panics, and a parsed pool prints back to a value that parses
//! to the same pool.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lowlat::plan::request::HugepagePool;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(pool) = text.parse::<HugepagePool>() {
        assert_eq!(pool.to_string().parse::<HugepagePool>(), Ok(pool));
    }
});
