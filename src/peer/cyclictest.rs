//! cyclictest compatibility: the `-h` histogram block and the `T:` summary line as rt-tests
//! 2.4 to 2.6 print them (every bucket row, zeros included, and a `# Total:` line; v2.7 and
//! later drop zero rows and the total), and a parser for the `-v` per-sample stream so that
//! recorded runs can be replayed through lowlat's statistics.

use crate::machine::Warnings;
use crate::measure::engines::timer::cyclic::CyclicStats;
use crate::text::Page;
use std::collections::BTreeMap;

/// The histogram block of `cyclictest -h N`, one column per thread, ending with the blank
/// line cyclictest prints after it. All threads must have the same bucket count.
pub fn histogram_block(threads: &[CyclicStats]) -> String {
    let mut out = Page::from("# Histogram\n");
    let rows = threads.iter().map(|t| t.buckets.len()).max().unwrap_or(0);
    for bucket in 0..rows {
        write!(out, "{bucket:06} ");
        let counts: Vec<String> = threads
            .iter()
            .map(|t| format!("{:06}", t.buckets.get(bucket).copied().unwrap_or(0)))
            .collect();
        out.text(counts.join("\t"));
        out.text('\n');
    }
    let mut line = |label: &str, value: &dyn Fn(&CyclicStats) -> String| {
        out.text(label);
        for thread in threads {
            out.text(' ');
            out.text(value(thread));
        }
        out.text('\n');
    };
    line("# Total:", &|t| format!("{:09}", t.in_buckets()));
    line("# Min Latencies:", &|t| format!("{:05}", t.min));
    line("# Avg Latencies:", &|t| format!("{:05}", t.avg()));
    line("# Max Latencies:", &|t| format!("{:05}", t.max));
    line("# Histogram Overflows:", &|t| format!("{:05}", t.overflows));
    out.line("# Histogram Overflow at cycle number:");
    for (index, thread) in threads.iter().enumerate() {
        write!(out, "# Thread {index}:");
        for cycle in &thread.overflow_cycles {
            write!(out, " {cycle:05}");
        }
        let listed = thread.overflow_cycles.len() as u64;
        if listed < thread.overflows {
            write!(out, " # {:05} others", thread.overflows - listed);
        }
        out.text('\n');
    }
    out.text('\n');
    out.into_string()
}

/// What identifies a thread in cyclictest's `T:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLabel {
    /// Thread index.
    pub index: u32,
    /// Kernel thread id.
    pub tid: u32,
    /// SCHED_FIFO priority (0 for normal scheduling).
    pub priority: u8,
    /// Interval, µs.
    pub interval_us: u64,
}

/// cyclictest's summary line for one thread (µs mode).
pub fn thread_line(label: &ThreadLabel, stats: &CyclicStats) -> String {
    format!(
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
        label.index,
        label.tid,
        label.priority,
        label.interval_us,
        stats.cycles,
        stats.min,
        stats.act,
        stats.avg(),
        stats.max
    )
}

/// One thread's `T:` line read back: what cyclictest's summary gives, µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryLine {
    /// Thread index, TID, priority and interval.
    pub label: ThreadLabel,
    /// `C:`: wake-ups measured.
    pub cycles: u64,
    /// `Min:`, µs.
    pub min_us: u64,
    /// `Avg:`, µs (cyclictest rounds it down).
    pub avg_us: u64,
    /// `Max:`, µs.
    pub max_us: u64,
}

/// Parses cyclictest's `T:` summary lines, with `-q` (one per thread at the end) or without
/// (one per thread every refresh, the last one standing): the last line of each thread is
/// kept. A `T:` line without its numbers is reported naming `path` and the 1-based line.
pub fn parse_summary(
    text: &str,
    path: &str,
    warnings: &mut Warnings,
) -> BTreeMap<u32, SummaryLine> {
    let mut threads = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if !line.starts_with("T:") {
            continue;
        }
        match summary_line(line) {
            Some(summary) => {
                threads.insert(summary.label.index, summary);
            }
            None => warnings.line(
                path,
                index + 1,
                "expected `T: N (TID) P:N I:N C: N Min: N Act: N Avg: N Max: N`; line skipped",
            ),
        }
    }
    threads
}

/// The fields of one `T:` line, each `Key:` followed by its number (with or without a space);
/// the TID is the number in parentheses.
fn summary_line(line: &str) -> Option<SummaryLine> {
    let spaced = line
        .replace(':', ": ")
        .replace('(', " ( ")
        .replace(')', " ) ");
    let mut fields: BTreeMap<&str, u64> = BTreeMap::new();
    let mut tokens = spaced.split_whitespace();
    while let Some(key) = tokens.next() {
        let value = tokens.next()?.parse().ok()?;
        let key = key.trim_end_matches(':');
        if key == "(" {
            tokens.next().filter(|&t| t == ")")?;
        }
        fields.insert(key, value);
    }
    let get = |key: &str| fields.get(key).copied();
    Some(SummaryLine {
        label: ThreadLabel {
            index: u32::try_from(get("T")?).ok()?,
            tid: u32::try_from(get("(")?).ok()?,
            priority: u8::try_from(get("P")?).ok()?,
            interval_us: get("I")?,
        },
        cycles: get("C")?,
        min_us: get("Min")?,
        avg_us: get("Avg")?,
        max_us: get("Max")?,
    })
}

/// A `cyclictest -v` output read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerboseStream {
    /// Latencies (µs) per thread index, in cycle order.
    pub threads: BTreeMap<u32, Vec<i64>>,
    /// The histogram block the tool printed after the samples (from `# Histogram` to the
    /// end), when there is one.
    pub histogram_block: Option<String>,
}

impl VerboseStream {
    /// Feeds every thread's samples to fresh statistics with `buckets` histogram buckets.
    pub fn replay(&self, buckets: usize) -> Vec<CyclicStats> {
        self.threads
            .values()
            .map(|samples| {
                let mut stats = CyclicStats::new(buckets);
                for &us in samples {
                    stats.add(us);
                }
                stats
            })
            .collect()
    }
}

/// Parses `cyclictest -v` output: `thread:cycle:value` lines are samples; other lines (the
/// tool's messages, `T:` lines, the histogram) are not samples and are skipped. A line of
/// three colon-separated fields that are not numbers, and a cycle number out of sequence,
/// are reported as warnings naming `path` and the 1-based line.
pub fn parse_verbose(text: &str, path: &str, warnings: &mut Warnings) -> VerboseStream {
    let mut stream = VerboseStream::default();
    let mut next_cycle: BTreeMap<u32, u64> = BTreeMap::new();
    let mut histogram_from = None;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        if line.starts_with("# Histogram") && histogram_from.is_none() {
            histogram_from = Some(start);
        }
        if line.starts_with('#') || line.matches(':').count() != 2 {
            continue;
        }
        let fields: Vec<&str> = line.split(':').map(str::trim).collect();
        let parsed = (
            fields.first().and_then(|f| f.parse::<u32>().ok()),
            fields.get(1).and_then(|f| f.parse::<u64>().ok()),
            fields.get(2).and_then(|f| f.parse::<i64>().ok()),
        );
        let (Some(thread), Some(cycle), Some(value)) = parsed else {
            warnings.line(
                path,
                index + 1,
                "expected thread:cycle:latency as three numbers; line skipped",
            );
            continue;
        };
        let expected = next_cycle.entry(thread).or_insert(0);
        if cycle != *expected {
            warnings.line(
                path,
                index + 1,
                format!(
                    "thread {thread}: cycle {cycle} follows {}: samples are missing or repeated",
                    expected.wrapping_sub(1)
                ),
            );
        }
        *expected = cycle + 1;
        stream.threads.entry(thread).or_default().push(value);
    }
    stream.histogram_block = histogram_from
        .and_then(|from| text.get(from..))
        .map(str::to_string);
    stream
}

/// A `cyclictest -h N` histogram block read back: per thread, the count of each 1 µs bucket,
/// the overflows (latencies of N µs or more) and the largest latency.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramBlock {
    /// Per thread index, the count of each bucket (bucket i holds latencies of i µs).
    pub buckets: Vec<Vec<u64>>,
    /// Per thread, `# Histogram Overflows:`.
    pub overflows: Vec<u64>,
    /// Per thread, `# Max Latencies:`, µs.
    pub max_us: Vec<u64>,
}

/// The most buckets cyclictest's `-h` takes (its HIST_MAX).
const MAX_BUCKETS: usize = 1_000_000;

/// Parses the histogram block of `cyclictest -h` (rt-tests 2.4 to 2.6 with every row, and
/// 2.7 and later without the zero rows): `bucket count…` rows after `# Histogram`, then the
/// `# …:` summary lines. Other lines (the tool's messages, `T:` lines) are left alone; a row
/// that is not numbers, or with a column count other than the first row's, is reported as a
/// warning naming `path` and the 1-based line.
pub fn parse_histogram(text: &str, path: &str, warnings: &mut Warnings) -> HistogramBlock {
    let mut block = HistogramBlock::default();
    let mut inside = false;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("# Histogram") && !line.contains("Overflow") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let Some((key, values)) = rest.split_once(':') else {
                continue;
            };
            let numbers: Vec<u64> = values
                .split_whitespace()
                .map_while(|v| v.parse().ok())
                .collect();
            match key.trim() {
                "Histogram Overflows" => block.overflows = numbers,
                "Max Latencies" => block.max_us = numbers,
                _ => {}
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let fields: Result<Vec<u64>, _> = line.split_whitespace().map(str::parse).collect();
        match fields.as_deref() {
            Ok([bucket, counts @ ..]) if !counts.is_empty() => {
                let threads = block.buckets.len().max(counts.len());
                if !block.buckets.is_empty() && counts.len() != block.buckets.len() {
                    warnings.line(
                        path,
                        index + 1,
                        format!(
                            "{} columns of counts where the rows before had {}; line skipped",
                            counts.len(),
                            block.buckets.len()
                        ),
                    );
                    continue;
                }
                let Some(bucket) = usize::try_from(*bucket).ok().filter(|&b| b < MAX_BUCKETS)
                else {
                    warnings.line(
                        path,
                        index + 1,
                        format!(
                            "bucket {bucket} is beyond cyclictest's {MAX_BUCKETS}; line skipped"
                        ),
                    );
                    continue;
                };
                block.buckets.resize(threads, Vec::new());
                for (thread, &count) in block.buckets.iter_mut().zip(counts) {
                    if thread.len() <= bucket {
                        thread.resize(bucket.saturating_add(1), 0);
                    }
                    thread[bucket] = count;
                }
            }
            _ => warnings.line(
                path,
                index + 1,
                "expected a bucket number and one count per thread; line skipped",
            ),
        }
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistics of `samples` (µs), with `buckets` histogram buckets.
    fn stats(buckets: usize, samples: &[i64]) -> CyclicStats {
        let mut stats = CyclicStats::new(buckets);
        for &us in samples {
            stats.add(us);
        }
        stats
    }

    /// Two threads with 3 histogram buckets: the first overflows once, the second four times.
    fn two_threads() -> [CyclicStats; 2] {
        [stats(3, &[1, 1, 2, 7]), stats(3, &[0, 4, 5, 6, 8])]
    }

    #[test]
    fn histogram_block_reads_back_and_garbage_is_named() {
        let [a, b] = two_threads();
        let text = format!("T: 0 ( 1) P:95\n{}", histogram_block(&two_threads()));
        let mut warnings = Warnings::default();
        let block = parse_histogram(&text, "h.txt", &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(block.buckets, vec![a.buckets, b.buckets]);
        assert_eq!(block.overflows, vec![1, 4]);
        assert_eq!(block.max_us, vec![7, 8]);
        let mut warnings = Warnings::default();
        parse_histogram(
            "# Histogram\n000000 000001\n000001 x\n",
            "h.txt",
            &mut warnings,
        );
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(3));
    }

    #[test]
    fn block_lists_every_row_totals_and_overflow_cycles() {
        let expected = "# Histogram\n000000 000000\t000001\n000001 000002\t000000\n\
            000002 000001\t000000\n# Total: 000000003 000000001\n\
            # Min Latencies: 00001 00000\n# Avg Latencies: 00002 00004\n\
            # Max Latencies: 00007 00008\n# Histogram Overflows: 00001 00004\n\
            # Histogram Overflow at cycle number:\n# Thread 0: 00003\n\
            # Thread 1: 00001 00002 00003 # 00001 others\n\n";
        assert_eq!(histogram_block(&two_threads()), expected);
    }

    #[test]
    fn thread_line_matches_cyclictest_widths() {
        let stats = stats(0, &[17, 60, 47]);
        let label = ThreadLabel {
            index: 0,
            tid: 9262,
            priority: 95,
            interval_us: 1000,
        };
        assert_eq!(
            thread_line(&label, &stats),
            "T: 0 ( 9262) P:95 I:1000 C:      3 Min:     17 Act:   47 Avg:   41 Max:      60"
        );
    }

    #[test]
    fn summary_keeps_each_threads_last_line_and_names_a_garbled_one() {
        let stats = stats(0, &[17, 60, 47]);
        let label = ThreadLabel {
            index: 1,
            tid: 9262,
            priority: 95,
            interval_us: 1500,
        };
        let text = format!(
            "policy: fifo\nT: 1 ( 9262) P:95 I:1500 C:      1 Min:     17 Act:   17 Avg:   17 Max:      17\n\
             {}\nT: 0 ( 9261) P:95 I:1000 C:\n",
            thread_line(&label, &stats)
        );
        let mut warnings = Warnings::default();
        let threads = parse_summary(&text, "t.txt", &mut warnings);
        assert_eq!(
            threads.values().copied().collect::<Vec<_>>(),
            [SummaryLine {
                label,
                cycles: 3,
                min_us: 17,
                avg_us: 41,
                max_us: 60,
            }]
        );
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(4));
    }

    #[test]
    fn verbose_stream_groups_samples_and_warns() {
        let text = "Using 1 cpus.\nThread 0 Interval: 1000\n       0:       0:      41\n\
            \x20      1:       0:       7\n       0:       2:      50\n       0:       x:      50\n\
            # Histogram\n000000 000001\n";
        let mut warnings = Warnings::default();
        let stream = parse_verbose(text, "v.txt", &mut warnings);
        assert_eq!(stream.threads[&0], vec![41, 50]);
        assert_eq!(stream.threads[&1], vec![7]);
        assert_eq!(
            stream.histogram_block.as_deref(),
            Some("# Histogram\n000000 000001\n")
        );
        let lines: Vec<_> = warnings.into_vec().iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![Some(5), Some(6)]);
    }
}
