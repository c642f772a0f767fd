//! The oslat view of a busy-loop run, as oslat (rt-tests 2.7 and later) prints it: one column
//! per thread, 1 µs buckets labelled by their upper edge, the last one holding the
//! overflows, then minimum, average, maximum and duration.
//!
//! Differences from the tool, on purpose: the average adds each thread's own overflow sum
//! (oslat adds thread 0's to every thread), and no header block is printed. rt-tests 2.4 to
//! 2.6 print `(Mhz)`, and 2.4 reports minimum and maximum one µs higher.

use crate::machine::Warnings;
use crate::measure::engines::jitter::busy::OSLAT_BUCKETS;
use crate::text::Page;

/// A duration of `ticks` of a `mhz` counter as oslat states its minimum and maximum: whole
/// µs rounded up, so that a loop iteration of a few ns is 1 µs (the upper edge of the first
/// bucket, as the average counts it), never 0.
pub(crate) fn oslat_us(ticks: u64, mhz: u64) -> u64 {
    ticks.div_ceil(mhz.max(1))
}

/// One oslat column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OslatThread {
    /// The CPU.
    pub cpu: u32,
    /// Counter frequency, whole MHz.
    pub mhz: u64,
    /// Iterations per 1 µs bucket; the last also holds the longer ones.
    pub buckets: [u64; OSLAT_BUCKETS],
    /// Sum over the longer ones of (whole µs − number of buckets).
    pub overflow_sum: u64,
    /// Shortest iteration, whole µs (rounded up, see [`oslat_us`]).
    pub min_us: u64,
    /// Longest iteration, whole µs (rounded up, see [`oslat_us`]).
    pub max_us: u64,
    /// Time measured, s.
    pub seconds: f64,
}

impl OslatThread {
    /// oslat's average: each bucket counted at its upper edge, plus the overflow sum, over
    /// the iterations, µs.
    pub(crate) fn average_us(&self) -> f64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let weighted: u64 = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, &count)| count.saturating_mul(i as u64 + 1))
            .fold(0u64, u64::saturating_add);
        (weighted.saturating_add(self.overflow_sum)) as f64 / total as f64
    }
}

/// The table oslat prints after a run.
pub(crate) fn view(threads: &[OslatThread]) -> String {
    let mut out = Page::new();
    let mut row = |label: &str, values: Vec<String>, suffix: &str| {
        write!(out, "{label:>12}:\t");
        for value in values {
            write!(out, " {value}");
        }
        out.text(suffix);
        out.text('\n');
    };
    let each = |f: &dyn Fn(&OslatThread) -> String| threads.iter().map(f).collect::<Vec<_>>();
    row("Core", each(&|t| t.cpu.to_string()), "");
    row("Counter Freq", each(&|t| t.mhz.to_string()), " (MHz)");
    for bucket in 0..OSLAT_BUCKETS {
        let suffix = if bucket + 1 == OSLAT_BUCKETS {
            " (including overflows)"
        } else {
            ""
        };
        row(
            &format!("{:03} (us)", bucket + 1),
            each(&|t| t.buckets[bucket].to_string()),
            suffix,
        );
    }
    row("Minimum", each(&|t| t.min_us.to_string()), " (us)");
    row(
        "Average",
        each(&|t| format!("{:.3}", t.average_us())),
        " (us)",
    );
    row("Maximum", each(&|t| t.max_us.to_string()), " (us)");
    row(
        "Max-Min",
        each(&|t| (t.max_us - t.min_us.min(t.max_us)).to_string()),
        " (us)",
    );
    row("Duration", each(&|t| format!("{:.3}", t.seconds)), " (sec)");
    out.text('\n');
    out.into_string()
}

/// One CPU's column of oslat's table read back (any bucket count and width, zero rows
/// omitted with `-z` or not).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OslatColumn {
    /// The CPU (`Core:`).
    pub cpu: u32,
    /// `(upper edge, count)` of every bucket row printed, µs, ascending; the last row also
    /// holds the iterations longer than its edge (oslat's overflows).
    pub buckets: Vec<(u64, u64)>,
    /// `Maximum:`, µs.
    pub max_us: u64,
    /// `Duration:`, s.
    pub seconds: f64,
}

/// The rows of the table after `Core:` that are not buckets and are needed.
const NEEDED: [&str; 2] = ["Maximum", "Duration"];

/// Parses the table oslat prints at the end of a run, from its `Core:` row on: bucket rows
/// (`001 (us): n…`), `Maximum:` and `Duration:`; the other rows are left alone. A row whose
/// values are not numbers, or not one per core, is reported naming `path` and the 1-based
/// line; a missing `Maximum:` or `Duration:` row (the table was cut off) names the file.
/// Columns are returned only when both were read.
pub(crate) fn parse(text: &str, path: &str, warnings: &mut Warnings) -> Vec<OslatColumn> {
    let mut cpus: Option<Vec<u32>> = None;
    let mut buckets: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut needed: [Option<Vec<f64>>; NEEDED.len()] = Default::default();
    for (index, line) in text.lines().enumerate() {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let label = label.trim();
        // The values, up to the unit in parentheses.
        let values: Vec<&str> = rest
            .split_whitespace()
            .take_while(|v| !v.starts_with('('))
            .collect();
        let bad = |warnings: &mut Warnings, what: &str| {
            warnings.line(
                path,
                index + 1,
                format!("oslat's `{label}:` row: {what}; line skipped"),
            );
        };
        let Some(cores) = &cpus else {
            if label == "Core" {
                match values.iter().map(|v| v.parse()).collect() {
                    Ok(list) => cpus = Some(list),
                    Err(_) => bad(warnings, "expected CPU numbers"),
                }
            }
            continue;
        };
        if values.len() != cores.len() {
            bad(
                warnings,
                &format!(
                    "{} values where `Core:` lists {}",
                    values.len(),
                    cores.len()
                ),
            );
            continue;
        }
        if let Some(edge) = label.strip_suffix("(us)").map(str::trim) {
            let counts: Result<Vec<u64>, _> = values.iter().map(|v| v.parse()).collect();
            match (edge.parse::<u64>(), counts) {
                (Ok(edge), Ok(counts)) => buckets.push((edge, counts)),
                _ => bad(warnings, "expected a bucket edge and one count per core"),
            }
        } else if let Some(slot) = NEEDED.iter().position(|&n| n == label) {
            match values.iter().map(|v| v.parse::<f64>()).collect() {
                Ok(list) => needed[slot] = Some(list),
                Err(_) => bad(warnings, "expected one number per core"),
            }
        }
    }
    let Some(cpus) = cpus else {
        warnings.file(path, "no `Core:` row: not oslat's table, or it was cut off");
        return Vec::new();
    };
    let [Some(max), Some(duration)] = needed else {
        let missing = NEEDED
            .iter()
            .zip(&needed)
            .find(|(_, v)| v.is_none())
            .map_or("", |(n, _)| *n);
        warnings.file(
            path,
            format!("oslat's table has no `{missing}:` row: it was cut off"),
        );
        return Vec::new();
    };
    cpus.iter()
        .enumerate()
        .map(|(i, &cpu)| OslatColumn {
            cpu,
            buckets: buckets.iter().map(|(edge, c)| (*edge, c[i])).collect(),
            max_us: max[i] as u64,
            seconds: duration[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_back_what_view_writes() {
        let mut buckets = [0; OSLAT_BUCKETS];
        buckets[0] = 1000;
        buckets[31] = 2;
        let thread = |cpu| OslatThread {
            cpu,
            mhz: 2597,
            buckets,
            overflow_sum: 100,
            min_us: 1,
            max_us: 80,
            seconds: 2.0,
        };
        let text = format!("Test completed.\n\n{}", view(&[thread(2), thread(3)]));
        let mut warnings = Warnings::default();
        let columns = parse(&text, "o.txt", &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(columns.len(), 2);
        assert_eq!(columns[1].cpu, 3);
        assert_eq!(columns[1].buckets.len(), OSLAT_BUCKETS);
        assert_eq!(columns[1].buckets[0], (1, 1000));
        assert_eq!(columns[1].buckets[31], (32, 2));
        assert_eq!((columns[1].max_us, columns[1].seconds), (80, 2.0));
    }

    #[test]
    fn parse_names_a_garbled_row_and_a_cut_table() {
        let mut warnings = Warnings::default();
        let text = "        Core:\t 1 2\n    001 (us):\t 5\n    002 (us):\t 5 x\n";
        assert!(parse(text, "o.txt", &mut warnings).is_empty());
        let warnings = warnings.into_vec();
        assert_eq!(warnings[0].line, Some(2));
        assert_eq!(warnings[1].line, Some(3));
        assert_eq!(warnings[2].line, None);
        assert!(warnings[2].message.contains("no `Maximum:` row"));
    }

    #[test]
    fn minimum_and_maximum_round_up_as_oslat() {
        // Issue 18: a 20-tick loop iteration at 2597 MHz printed `Minimum: 0 (us)`.
        assert_eq!(oslat_us(20, 2597), 1);
        assert_eq!(oslat_us(2597, 2597), 1);
        assert_eq!(oslat_us(2598, 2597), 2);
        assert_eq!(oslat_us(0, 2597), 0);
    }

    #[test]
    fn prints_oslat_rows_with_upper_edge_labels() {
        let mut buckets = [0; OSLAT_BUCKETS];
        buckets[0] = 1000;
        buckets[2] = 10;
        buckets[31] = 2;
        let thread = OslatThread {
            cpu: 1,
            mhz: 2597,
            buckets,
            overflow_sum: 100,
            min_us: 0,
            max_us: 80,
            seconds: 1.0004,
        };
        // (1000*1 + 10*3 + 2*32 + 100) / 1012.
        assert!((thread.average_us() - 1194.0 / 1012.0).abs() < 1e-12);
        let text = view(&[thread]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "        Core:\t 1");
        assert_eq!(lines[1], "Counter Freq:\t 2597 (MHz)");
        assert_eq!(lines[2], "    001 (us):\t 1000");
        assert_eq!(lines[33], "    032 (us):\t 2 (including overflows)");
        assert_eq!(lines[34], "     Minimum:\t 0 (us)");
        assert_eq!(lines[35], "     Average:\t 1.180 (us)");
        assert_eq!(lines[37], "     Max-Min:\t 80 (us)");
        assert_eq!(lines[38], "    Duration:\t 1.000 (sec)");
    }
}
