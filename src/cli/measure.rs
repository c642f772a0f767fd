//! `lowlat measure ENGINE`: the measurement engines, and the option values they share.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::time::Duration;

use super::Cli;
use super::measure_cpu::{C2cArgs, FreqArgs, WakeupArgs};
use super::measure_mem::{MembwArgs, MemlatArgs};
use crate::machine::CpuSet;
use crate::sysroot::SysRoot;

/// Options of `lowlat measure`.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Which measurement to run.
    #[command(subcommand)]
    pub engine: MeasureEngine,
}

/// The measurement engines.
#[derive(Debug, Subcommand)]
pub enum MeasureEngine {
    /// Busy-loop gaps (interruptions) per CPU: sysjitter's statistics, oslat's buckets.
    Jitter(super::measure_jitter::JitterArgs),
    /// Timer wake-up latency per CPU: cyclictest's measurement, with percentiles.
    Timer(super::measure_timer::TimerArgs),
    /// Memory bandwidth: STREAM Copy, Scale, Add and Triad over the machine and per NUMA node
    /// (a STREAM-variant).
    Membw(MembwArgs),
    /// Memory latency: a pointer-chase curve over buffer sizes (L1, L2, L3, DRAM) and an
    /// idle-latency NUMA node matrix.
    Memlat(MemlatArgs),
    /// Core-to-core latency: cache-line ping-pong between every pair of CPUs.
    C2c(C2cArgs),
    /// Cross-CPU wake-up latency: a futex wake on one CPU until the thread runs on another.
    Wakeup(WakeupArgs),
    /// Effective frequency per CPU under load (boost, throttling, steadiness).
    Freq(FreqArgs),
}

/// Runs `lowlat measure`.
pub fn run(cli: &Cli, args: &MeasureArgs) -> Result<u8> {
    match &args.engine {
        MeasureEngine::Jitter(args) => super::measure_jitter::run(cli, args),
        MeasureEngine::Timer(args) => super::measure_timer::run(cli, args),
        MeasureEngine::Membw(a) => super::measure_mem::run_membw(cli, a),
        MeasureEngine::Memlat(a) => super::measure_mem::run_memlat(cli, a),
        MeasureEngine::C2c(a) => super::measure_cpu::run_c2c(cli, a),
        MeasureEngine::Wakeup(a) => super::measure_cpu::run_wakeup(cli, a),
        MeasureEngine::Freq(a) => super::measure_cpu::run_freq(cli, a),
    }
}

/// The live machine: measurements cannot run on a fixture tree or a snapshot.
pub fn live_root(cli: &Cli) -> Result<SysRoot> {
    let root = cli.sysroot()?;
    if !root.is_live() {
        anyhow::bail!(
            "--root/--snapshot: measurements run on this machine only; drop --root/--snapshot"
        );
    }
    Ok(root)
}

/// Parses a duration: `10s`, `500ms`, `250us`, `2m`, `1h`, or a bare number of seconds;
/// zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let seconds_per_unit = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use us, ms, s, m or h)"
            ));
        }
    };
    let duration = Duration::try_from_secs_f64(value * seconds_per_unit)
        .map_err(|_| format!("'{text}' is out of range"))?;
    if duration.is_zero() {
        return Err("must be above zero".to_string());
    }
    Ok(duration)
}

/// Parses a size: a number with an optional binary suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB`,
/// `T`/`TiB` (case-insensitive); fractions are allowed with a suffix (`1.5G`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(format!(
                "'{text}': write a binary suffix (K or KiB, M or MiB, G or GiB, T or TiB)"
            ));
        }
        _ => {
            return Err(format!(
                "'{text}' is not a size (expected a number with an optional K, M, G or T)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (expected a number such as 64K or 2G)"))?;
    if shift == 0 && number.contains('.') {
        return Err(format!("'{text}': a size in bytes must be a whole number"));
    }
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a CPU list (`1`, `2-3,6`).
pub fn parse_cpus(text: &str) -> Result<CpuSet, String> {
    CpuSet::parse_list(text).map_err(|e| e.to_string())
}

/// Parses a count that must be above zero.
pub fn parse_positive(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be above zero".to_string()),
        Ok(value) => Ok(value),
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

/// Parses a SCHED_FIFO priority (1-99).
pub fn parse_priority(text: &str) -> Result<u8, String> {
    match text.trim().parse::<u8>() {
        Ok(p @ 1..=99) => Ok(p),
        _ => Err(format!("'{text}': a SCHED_FIFO priority is 1 to 99")),
    }
}

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_the_usual_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("0s").unwrap_err().contains("above zero"));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64kib"), Ok(65536));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size(" 2 GiB "), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        for bad in ["", "K", "12Q", "1.5", "-4K", "4KB", "99999999999T", "1..2M"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_and_priorities_are_checked() {
        assert!(parse_positive("0").is_err());
        assert_eq!(parse_positive("300000"), Ok(300_000));
        assert!(parse_priority("100").is_err());
        assert_eq!(parse_priority("95"), Ok(95));
    }
}
