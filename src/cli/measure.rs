//! `lowlat measure ENGINE`: the measurement engines, and the option values they share.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::time::Duration;

use super::Cli;
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
}

/// Runs `lowlat measure`.
pub fn run(cli: &Cli, args: &MeasureArgs) -> Result<u8> {
    match &args.engine {
        MeasureEngine::Jitter(args) => super::measure_jitter::run(cli, args),
        MeasureEngine::Timer(args) => super::measure_timer::run(cli, args),
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
    fn counts_and_priorities_are_checked() {
        assert!(parse_positive("0").is_err());
        assert_eq!(parse_positive("300000"), Ok(300_000));
        assert!(parse_priority("100").is_err());
        assert_eq!(parse_priority("95"), Ok(95));
    }
}
