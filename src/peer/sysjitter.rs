//! sysjitter 1.4 compatibility: its summary table, its `--raw` files, and a parser for those
//! files so that recorded runs can be replayed through lowlat's statistics.
//!
//! The arithmetic follows sysjitter's, which decides the last digit: the counter frequency is
//! truncated to whole MHz, ticks become ns as `ticks * 1000 / mhz` (integer), seconds are
//! single-precision floats, and the rate is a single-precision division.

use crate::machine::Warnings;
use crate::measure::engines::jitter::stats::GapStats;
use crate::text::Page;

/// One core's column of the summary, in sysjitter's units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SysjitterCore {
    /// The core measured.
    pub cpu: u32,
    /// The threshold asked for, ns.
    pub threshold_ns: u64,
    /// Counter frequency truncated to whole MHz.
    pub cpu_mhz: u64,
    /// Counter ticks between the start and the stop of the measurement.
    pub runtime_ticks: u64,
    /// The interruption statistics, ticks.
    pub stats: GapStats,
}

impl SysjitterCore {
    fn ns(&self, ticks: u64) -> u64 {
        ticks_to_ns_int_mhz(ticks, self.cpu_mhz)
    }

    /// Seconds as sysjitter computes them: a double division returned as a float.
    fn seconds(&self, ticks: u64) -> f32 {
        if self.cpu_mhz == 0 {
            return 0.0;
        }
        (ticks as f64 / (self.cpu_mhz as f64 * 1e6)) as f32
    }

    fn runtime_s(&self) -> f32 {
        self.seconds(self.runtime_ticks)
    }

    fn per_sec(&self) -> f32 {
        self.stats.n as f32 / self.runtime_s()
    }

    fn total_percent(&self) -> f64 {
        if self.runtime_ticks == 0 {
            return 0.0;
        }
        self.stats.total as f64 * 100.0 / self.runtime_ticks as f64
    }
}

/// `ticks * 1000 / mhz`, integer, as sysjitter converts (0 when mhz is 0).
pub fn ticks_to_ns_int_mhz(ticks: u64, mhz: u64) -> u64 {
    if mhz == 0 {
        return 0;
    }
    u64::try_from(u128::from(ticks) * 1000 / u128::from(mhz)).unwrap_or(u64::MAX)
}

/// The transposed summary table sysjitter prints on stdout: one `label:` row per statistic
/// and one value per core.
pub fn summary(cores: &[SysjitterCore]) -> String {
    let mut out = Page::new();
    let mut row = |label: &str, value: &dyn Fn(&SysjitterCore) -> String| {
        out.text(label);
        out.text(':');
        for core in cores {
            out.text(' ');
            out.text(value(core));
        }
        out.blank();
    };
    row("core_i", &|c| c.cpu.to_string());
    row("threshold(ns)", &|c| c.threshold_ns.to_string());
    row("cpu_mhz", &|c| c.cpu_mhz.to_string());
    row("runtime(ns)", &|c| c.ns(c.runtime_ticks).to_string());
    row("runtime(s)", &|c| {
        format!("{:.3}", f64::from(c.runtime_s()))
    });
    row("int_n", &|c| c.stats.n.to_string());
    row("int_n_per_sec", &|c| {
        format!("{:.3}", f64::from(c.per_sec()))
    });
    let s = |pick: fn(&GapStats) -> u64| move |c: &SysjitterCore| c.ns(pick(&c.stats)).to_string();
    row("int_min(ns)", &s(|g| g.min));
    row("int_median(ns)", &s(|g| g.median));
    row("int_mean(ns)", &s(|g| g.mean));
    row("int_90(ns)", &s(|g| g.p90));
    row("int_99(ns)", &s(|g| g.p99));
    row("int_999(ns)", &s(|g| g.p999));
    row("int_9999(ns)", &s(|g| g.p9999));
    row("int_99999(ns)", &s(|g| g.p99999));
    row("int_max(ns)", &s(|g| g.max));
    row("int_total(ns)", &s(|g| g.total));
    row("int_total(%)", &|c| format!("{:.3}", c.total_percent()));
    out.into_string()
}

/// Why raw files under a prefix cannot be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RawPrefixError {
    /// The prefix names a directory, not files in one.
    #[error("give a file name prefix, e.g. run (files run.<cpu>), not a directory")]
    NotAPrefix,
    /// Its directory does not exist.
    #[error("directory {} does not exist; create it or name another", .0.display())]
    NoDirectory(std::path::PathBuf),
    /// Its directory is not writable.
    #[error("directory {} is not writable ({why}); name another", dir.display())]
    NotWritable {
        /// The directory.
        dir: std::path::PathBuf,
        /// What `access(W_OK)` said.
        why: std::io::Error,
    },
}

/// Checks, before measuring, that the raw files `PREFIX.<cpu>` can be created: the directory
/// of `prefix` exists and is writable (a run must not be lost to a typo).
pub(crate) fn check_raw_prefix(prefix: &str) -> Result<(), RawPrefixError> {
    let path = std::path::Path::new(prefix);
    if path.file_name().is_none() || prefix.ends_with('/') {
        return Err(RawPrefixError::NotAPrefix);
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(RawPrefixError::NoDirectory(dir.to_path_buf()));
    }
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).map_err(|e| RawPrefixError::NotWritable {
        dir: dir.to_path_buf(),
        why: e.into(),
    })
}

/// The name of a raw file: `PREFIX.<cpu>` with the CPU zero-padded to the width of the
/// largest CPU measured (`raw.07` when CPUs go to 15).
pub fn raw_file_name(prefix: &str, cpu: u32, largest_cpu: u32) -> String {
    let width = largest_cpu.to_string().len();
    format!("{prefix}.{cpu:0width$}")
}

/// The contents of sysjitter's unsorted `--raw` file for one core. `gap_ends` are the end of
/// each gap in ticks since the start of the measurement, paired with its length in ticks.
pub fn raw_file(core: &SysjitterCore, gaps: &[(u64, u64)]) -> String {
    let mut out = Page::new();
    writeln!(out, "# cpu_mhz: {}", core.cpu_mhz);
    writeln!(out, "# threshold: {}ns", core.threshold_ns);
    writeln!(out, "# n_interruptions: {}", core.stats.n);
    if core.stats.n == 0 {
        return out.into_string();
    }
    writeln!(out, "# interruption: {:.6}%", core.total_percent());
    writeln!(out, "# total_interruption: {} cycles", core.stats.total);
    writeln!(out, "# total_runtime: {} cycles", core.runtime_ticks);
    let seconds = |ticks| f64::from(core.seconds(ticks));
    writeln!(
        out,
        "# total_interruption: {:.9} seconds",
        seconds(core.stats.total)
    );
    writeln!(
        out,
        "# total_runtime: {:.9} seconds",
        seconds(core.runtime_ticks)
    );
    out.line("#");
    out.line("#      Timestamp      delta   <== interruption =>");
    out.line("#         (nsec)     (usec)   (cycles)     (nsec)");
    let mut prev_end = gaps.first().map_or(0, |g| g.0);
    for &(end, ticks) in gaps {
        let delta_us = end.wrapping_sub(prev_end) / core.cpu_mhz.max(1);
        prev_end = end;
        writeln!(
            out,
            "{:16} {:10} {:10} {:10}",
            core.ns(end),
            delta_us,
            ticks,
            core.ns(ticks)
        );
    }
    out.into_string()
}

/// A sysjitter `--raw` file read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawFile {
    /// `# cpu_mhz:`, whole MHz.
    pub cpu_mhz: Option<u64>,
    /// `# threshold:`, ns.
    pub threshold_ns: Option<u64>,
    /// `# n_interruptions:`.
    pub n_interruptions: Option<u64>,
    /// `# total_runtime: N cycles` (absent when there were no interruptions).
    pub total_runtime_ticks: Option<u64>,
    /// `# total_interruption: N cycles`.
    pub total_interruption_ticks: Option<u64>,
    /// The body rows, in file order.
    pub rows: Vec<RawRow>,
}

/// One body row of a raw file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRow {
    /// End of the gap, ns since the start of the measurement.
    pub timestamp_ns: u64,
    /// µs since the end of the previous row's gap (unsorted files only).
    pub delta_us: Option<u64>,
    /// Length of the gap, ticks.
    pub ticks: u64,
    /// Length of the gap, ns.
    pub ns: u64,
}

/// Parses a sysjitter `--raw` file (unsorted with four columns, or `--sort` with three).
/// Garbled lines are skipped and reported as warnings naming `path` and the 1-based line.
pub fn parse_raw(text: &str, path: &str, warnings: &mut Warnings) -> RawFile {
    let mut file = RawFile::default();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(header) = line.strip_prefix('#') {
            parse_header(header.trim(), &mut file);
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let fields: Result<Vec<u64>, _> = line.split_whitespace().map(str::parse).collect();
        match fields.as_deref() {
            Ok([ts, delta, ticks, ns]) => file.rows.push(RawRow {
                timestamp_ns: *ts,
                delta_us: Some(*delta),
                ticks: *ticks,
                ns: *ns,
            }),
            Ok([ts, ticks, ns]) => file.rows.push(RawRow {
                timestamp_ns: *ts,
                delta_us: None,
                ticks: *ticks,
                ns: *ns,
            }),
            _ => warnings.line(
                path,
                number,
                "expected 3 or 4 unsigned numbers (timestamp, [delta,] cycles, ns); line skipped",
            ),
        }
    }
    if let Some(n) = file.n_interruptions
        && n != file.rows.len() as u64
    {
        warnings.file(
            path,
            format!(
                "the header says {n} interruptions but {} rows were read",
                file.rows.len()
            ),
        );
    }
    file
}

/// A header line that a sysjitter `--raw` file lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the raw file of CPU {cpu} has no '# {line}' line")]
pub struct MissingLine {
    /// The CPU of the file.
    pub cpu: u32,
    /// The line, as far as its value (`threshold`, `cpu_mhz`, `total_runtime: N cycles`).
    pub line: &'static str,
}

impl RawFile {
    /// The summary column of this file, computed with lowlat's statistics from the gap
    /// lengths in ticks. Fails, naming what is missing, when the header lacks the frequency,
    /// the threshold or the run length (sysjitter omits the latter when nothing was recorded).
    pub fn core(&self, cpu: u32) -> Result<SysjitterCore, MissingLine> {
        let missing = |line: &'static str| MissingLine { cpu, line };
        let mut ticks: Vec<u64> = self.rows.iter().map(|r| r.ticks).collect();
        Ok(SysjitterCore {
            cpu,
            threshold_ns: self.threshold_ns.ok_or_else(|| missing("threshold"))?,
            cpu_mhz: self.cpu_mhz.ok_or_else(|| missing("cpu_mhz"))?,
            runtime_ticks: self
                .total_runtime_ticks
                .ok_or_else(|| missing("total_runtime: N cycles"))?,
            stats: crate::measure::engines::jitter::stats::gap_stats(&mut ticks),
        })
    }
}

/// One core's column of sysjitter's summary table read back: the figures compare can use,
/// ns (sysjitter's own conversion from ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryColumn {
    /// The core (`core_i`).
    pub cpu: u32,
    /// `threshold(ns)`: interruptions shorter than this were not counted, ns.
    pub threshold_ns: u64,
    /// `runtime(ns)`: how long the core was watched, ns.
    pub runtime_ns: u64,
    /// `int_n`: interruptions counted.
    pub int_n: u64,
    /// `int_median(ns)`, ns.
    pub median_ns: u64,
    /// `int_mean(ns)`, ns.
    pub mean_ns: u64,
    /// `int_99(ns)`, ns.
    pub p99_ns: u64,
    /// `int_max(ns)`, ns.
    pub max_ns: u64,
}

/// The rows of the summary table compare reads, in [`SummaryColumn`]'s field order.
const SUMMARY_ROWS: [&str; 8] = [
    "core_i",
    "threshold(ns)",
    "runtime(ns)",
    "int_n",
    "int_median(ns)",
    "int_mean(ns)",
    "int_99(ns)",
    "int_max(ns)",
];

/// Parses the summary table sysjitter prints without `--raw` (one `label: value…` row per
/// statistic, one value per core). A row compare reads whose values are not unsigned
/// numbers, or not one per core, is reported naming `path` and the 1-based line; a row that
/// is missing (the table was cut off) is reported naming the file. Columns are returned only
/// when every row was read.
pub fn parse_summary(text: &str, path: &str, warnings: &mut Warnings) -> Vec<SummaryColumn> {
    let mut rows: [Option<Vec<u64>>; SUMMARY_ROWS.len()] = Default::default();
    for (index, line) in text.lines().enumerate() {
        let Some((label, values)) = line.split_once(':') else {
            continue;
        };
        let Some(slot) = SUMMARY_ROWS.iter().position(|&r| r == label.trim()) else {
            continue;
        };
        let values: Result<Vec<u64>, _> = values.split_whitespace().map(str::parse).collect();
        let cores = rows[0].as_ref().map(Vec::len);
        match values {
            Ok(values) if !values.is_empty() && cores.is_none_or(|n| n == values.len()) => {
                rows[slot] = Some(values);
            }
            Ok(values) if !values.is_empty() => warnings.line(
                path,
                index + 1,
                format!(
                    "{} values where core_i lists {} cores",
                    values.len(),
                    cores.unwrap_or(0)
                ),
            ),
            _ => warnings.line(
                path,
                index + 1,
                format!(
                    "expected `{}:` and one unsigned number per core",
                    label.trim()
                ),
            ),
        }
    }
    let mut read = Vec::with_capacity(SUMMARY_ROWS.len());
    for (row, label) in rows.into_iter().zip(SUMMARY_ROWS) {
        match row {
            Some(values) => read.push(values),
            None => {
                warnings.file(
                    path,
                    format!("sysjitter's summary table has no `{label}:` row: it was cut off"),
                );
                return Vec::new();
            }
        }
    }
    let at = |row: usize, core: usize| read[row][core];
    (0..read[0].len())
        .map(|core| SummaryColumn {
            cpu: u32::try_from(at(0, core)).unwrap_or(u32::MAX),
            threshold_ns: at(1, core),
            runtime_ns: at(2, core),
            int_n: at(3, core),
            median_ns: at(4, core),
            mean_ns: at(5, core),
            p99_ns: at(6, core),
            max_ns: at(7, core),
        })
        .collect()
}

fn parse_header(header: &str, file: &mut RawFile) {
    let Some((key, value)) = header.split_once(':') else {
        return;
    };
    let value = value.trim();
    let number = |suffix: &str| value.strip_suffix(suffix)?.trim().parse().ok();
    match key.trim() {
        "cpu_mhz" => file.cpu_mhz = value.parse().ok(),
        "threshold" => file.threshold_ns = number("ns"),
        "n_interruptions" => file.n_interruptions = value.parse().ok(),
        "total_runtime" if value.ends_with("cycles") => {
            file.total_runtime_ticks = number("cycles");
        }
        "total_interruption" if value.ends_with("cycles") => {
            file.total_interruption_ticks = number("cycles");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::engines::jitter::stats::gap_stats;

    fn core(gaps: &mut [u64]) -> SysjitterCore {
        SysjitterCore {
            cpu: 3,
            threshold_ns: 1000,
            cpu_mhz: 2000,
            runtime_ticks: 6_000_000_000,
            stats: gap_stats(gaps),
        }
    }

    #[test]
    fn summary_rows_use_sysjitter_arithmetic() {
        let core = core(&mut [2001, 4000, 2_000_000]);
        let text = summary(&[core]);
        let expected = "core_i: 3\nthreshold(ns): 1000\ncpu_mhz: 2000\n\
            runtime(ns): 3000000000\nruntime(s): 3.000\nint_n: 3\nint_n_per_sec: 1.000\n\
            int_min(ns): 1000\nint_median(ns): 2000\nint_mean(ns): 334333\n\
            int_90(ns): 1000000\nint_99(ns): 1000000\nint_999(ns): 1000000\n\
            int_9999(ns): 1000000\nint_99999(ns): 1000000\nint_max(ns): 1000000\n\
            int_total(ns): 1003000\nint_total(%): 0.033\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn raw_file_has_the_header_and_fixed_width_rows() {
        let core = core(&mut [2001, 4001]);
        let text = raw_file(&core, &[(10_000, 2001), (2_012_000, 4001)]);
        let expected = "# cpu_mhz: 2000\n# threshold: 1000ns\n# n_interruptions: 2\n\
            # interruption: 0.000100%\n# total_interruption: 6002 cycles\n\
            # total_runtime: 6000000000 cycles\n# total_interruption: 0.000003001 seconds\n\
            # total_runtime: 3.000000000 seconds\n#\n\
            #      Timestamp      delta   <== interruption =>\n\
            #         (nsec)     (usec)   (cycles)     (nsec)\n\
            \x20           5000          0       2001       1000\n\
            \x20        1006000       1001       4001       2000\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn raw_file_without_interruptions_stops_after_the_count() {
        let core = core(&mut []);
        assert_eq!(
            raw_file(&core, &[]),
            "# cpu_mhz: 2000\n# threshold: 1000ns\n# n_interruptions: 0\n"
        );
    }

    #[test]
    fn raw_names_are_zero_padded_to_the_largest_cpu() {
        assert_eq!(raw_file_name("run", 7, 15), "run.07");
        assert_eq!(raw_file_name("run", 1, 1), "run.1");
    }

    #[test]
    fn summary_reads_back_what_summary_writes() {
        let mut gaps = [2001, 4000, 2_000_000];
        let text = summary(&[core(&mut gaps)]);
        let mut warnings = Warnings::default();
        let columns = parse_summary(&text, "s.txt", &mut warnings);
        assert!(warnings.into_vec().is_empty());
        assert_eq!(
            columns,
            [SummaryColumn {
                cpu: 3,
                threshold_ns: 1000,
                runtime_ns: 3_000_000_000,
                int_n: 3,
                median_ns: 2000,
                mean_ns: 334_333,
                p99_ns: 1_000_000,
                max_ns: 1_000_000,
            }]
        );
    }

    #[test]
    fn summary_names_a_garbled_row_and_a_missing_one() {
        let mut warnings = Warnings::default();
        let text = "core_i: 0 1\nthreshold(ns): 1000\nint_n: 5 x\n";
        assert!(parse_summary(text, "s.txt", &mut warnings).is_empty());
        let warnings = warnings.into_vec();
        assert_eq!(warnings[0].line, Some(2));
        assert!(
            warnings[0]
                .message
                .contains("1 values where core_i lists 2")
        );
        assert_eq!(warnings[1].line, Some(3));
        assert_eq!(warnings[2].line, None);
        assert!(warnings[2].message.contains("`threshold(ns):`"));
    }

    #[test]
    fn parse_raw_reads_headers_rows_and_warns_about_garbage() {
        let text = "# cpu_mhz: 2445\n# threshold: 1000ns\n# n_interruptions: 2\n\
            # total_runtime: 99 cycles\n# total_runtime: 3.0 seconds\n\
            1 0 2445 1000\nnot a row\n5 2 100\n";
        let mut warnings = Warnings::default();
        let file = parse_raw(text, "run.1", &mut warnings);
        assert_eq!(file.cpu_mhz, Some(2445));
        assert_eq!(file.threshold_ns, Some(1000));
        assert_eq!(file.total_runtime_ticks, Some(99));
        assert_eq!(file.rows.len(), 2);
        assert_eq!(file.rows[1].delta_us, None);
        let warnings = warnings.into_vec();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, Some(7));
        assert_eq!(warnings[0].path, "run.1");
    }

    #[test]
    fn a_raw_prefix_needs_a_writable_directory() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = |name: &str| dir.path().join(name).display().to_string();
        assert!(check_raw_prefix(&prefix("run")).is_ok());
        let err = check_raw_prefix(&format!("{}/", prefix("run"))).unwrap_err();
        assert!(matches!(err, RawPrefixError::NotAPrefix), "{err}");
        let err = check_raw_prefix(&prefix("missing/run")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "directory {} does not exist; create it or name another",
                prefix("missing")
            )
        );
    }
}
