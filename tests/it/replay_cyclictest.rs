//! Exact replay: cyclictest's own `-v` samples, fed to lowlat's statistics and cyclictest
//! printer, give the histogram block cyclictest printed after them, byte for byte.

use lowlat::machine::Warnings;
use lowlat::measure::engines::timer::cyclic::CyclicStats;
use lowlat::peer::cyclictest::{ThreadLabel, histogram_block, parse_verbose, thread_line};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/samples/cyclictest"
);

#[test]
fn histogram_block_is_byte_identical() {
    let path = format!("{DIR}/v-h200-p95-i1000-l3000.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut warnings = Warnings::default();
    let stream = parse_verbose(&text, &path, &mut warnings);
    assert!(warnings.into_vec().is_empty());
    assert_eq!(stream.threads[&0].len(), 3000);
    let threads = stream.replay(200);
    assert_eq!(
        histogram_block(&threads),
        stream.histogram_block.expect("the file has its histogram")
    );
}

/// The recorded `T:` line comes from a separate run without `-v`, so its samples are not
/// available; rebuild statistics with the same count, min, last, mean and max and check the
/// line byte for byte (this checks the format and the truncated mean, not a replay).
#[test]
fn thread_line_is_byte_identical() {
    let text = std::fs::read_to_string(format!("{DIR}/summary-p95-i1000-l3000.txt")).unwrap();
    let expected = text.lines().find(|l| l.starts_with("T:")).unwrap();
    let mut stats = CyclicStats::new(0);
    // 3000 samples: min 17, max 2160, last 47, sum chosen so the truncated mean is 41.
    stats.add(17);
    stats.add(2160);
    for _ in 0..2997 {
        stats.add(41);
    }
    stats.add(47);
    assert_eq!(stats.avg(), 41);
    let label = ThreadLabel {
        index: 0,
        tid: 9262,
        priority: 95,
        interval_us: 1000,
    };
    assert_eq!(thread_line(&label, &stats), expected);
}
