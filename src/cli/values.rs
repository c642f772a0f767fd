//! The value parsers of every subcommand: CPU lists, durations, sizes, counts, SCHED_FIFO
//! priorities, and the domain's enums as clap values (profiles, power, stores). Each returns a message that says what is allowed; clap puts the flag in front
//! of it (`invalid value '-1' for '--threshold <NS>': …`).
//!
//! Flags that take a number are declared with `allow_negative_numbers` (or
//! `allow_hyphen_values` where the value has a unit, as `-1s`), so that a negative value
//! reaches these parsers and is refused here, naming the flag, instead of clap reading it as
//! an unknown flag.

use clap::builder::PossibleValue;
use std::time::Duration;

use crate::machine::CpuSet;
use crate::machine::core_types::CoreType;
use crate::measure::engines::membw::Stores;
use crate::measure::runner::inject::InjectSpec;
use crate::plan::request::{Isolation, PowerPolicy, SmtChoice};
use crate::tuning::profile_name::ProfileName;

/// `--load KINDS`: the kinds of load asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadKinds(pub(crate) Vec<crate::measure::load::Kind>);

/// `--load KINDS`: `cpu,mem`, `all`.
pub(crate) fn load_kinds(text: &str) -> Result<LoadKinds, String> {
    crate::measure::load::Kind::parse_list(text).map(LoadKinds)
}

/// Parses a CPU list in the kernel's list form (`1`, `2-3,6`, `0-15:2/4`): the one parser of
/// every flag that names CPUs.
pub(crate) fn cpu_list(text: &str) -> Result<CpuSet, String> {
    let cpus = CpuSet::parse_list(text).map_err(|e| e.to_string())?;
    if cpus.is_empty() {
        return Err("the list names no CPU; give CPUs such as 2-7 or 1-7,9-15".into());
    }
    Ok(cpus)
}

/// Parses a duration: `10s`, `500ms`, `250us` (or `250µs`), `800ns`, `2m`, `1h`, or a bare
/// number of seconds. Zero, negative durations and durations whose nanoseconds do not fit 64
/// bits are refused.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    const EXAMPLES: &str = "give one above zero, e.g. 10s, 500ms or 2m";
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!(
            "'{text}': a duration cannot be negative; {EXAMPLES}"
        ));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let ns_per_unit = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use ns, us, ms, s, m or h)"
            ));
        }
    };
    let ns = (value * ns_per_unit).round();
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(format!("'{text}' is too long (at most 584 years, 2^64 ns)"));
    }
    if ns < 1.0 {
        return Err(format!("must be above zero; {EXAMPLES}"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// A latency flag's value: a duration with its unit (`1us`, `1ms`), or a bare number in the
/// unit the flag took before it took units (deprecated; [`Latency::note`] says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// The value.
    pub duration: Duration,
    /// Given as a bare number.
    pub bare: bool,
}

impl Latency {
    /// The value in ns.
    pub(crate) fn ns(self) -> u64 {
        u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX)
    }

    /// For a bare number, the deprecation note for `flag`, whose bare numbers were in `unit`
    /// (`ns` or `us`).
    pub(crate) fn note(self, flag: &str, unit: &str) -> Option<String> {
        let (per, word) = if unit == "us" {
            (1000, "µs")
        } else {
            (1, "ns")
        };
        self.bare.then(|| {
            format!(
                "{flag} {} is read as {} {word}, as before; a bare number is \
                 deprecated: write the unit ({flag} {})",
                self.ns() / per,
                self.ns() / per,
                human(self.duration)
            )
        })
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&human(self.duration))
    }
}

/// A duration in the largest unit that keeps it whole: `1us`, `1ms`, `250us`, `20s`.
pub(crate) fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    units
        .iter()
        .find(|(per, _)| ns.is_multiple_of(*per))
        .map_or_else(
            || format!("{ns}ns"),
            |(per, unit)| format!("{}{unit}", ns / per),
        )
}

/// Parses a latency whose bare numbers are nanoseconds (`--threshold 1000` = 1 µs).
pub(crate) fn latency_bare_ns(text: &str) -> Result<Latency, String> {
    latency(text, 1)
}

/// Parses a latency whose bare numbers are microseconds (`--interval 1000` = 1 ms).
pub(crate) fn latency_bare_us(text: &str) -> Result<Latency, String> {
    latency(text, 1000)
}

fn latency(text: &str, bare_ns: u64) -> Result<Latency, String> {
    let number = text.trim();
    let digits = number.strip_prefix('-').unwrap_or(number);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let value = count(1u64, u64::MAX / bare_ns)(number)?;
        return Ok(Latency {
            duration: Duration::from_nanos(value * bare_ns),
            bare: true,
        });
    }
    duration(number).map(|duration| Latency {
        duration,
        bare: false,
    })
}

/// Parses a duration that must carry its unit (`10us`, `1ms`): a latency threshold, or
/// hwlat's window and width. A bare number is seconds to [`duration`] but microseconds to
/// cyclictest and hwlatdetect, so `20` is refused rather than read as 20 s.
pub(crate) fn duration_with_unit(text: &str) -> Result<Duration, String> {
    let number = text.trim();
    if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "'{number}' has no unit; write {number}us, {number}ms or {number}s (a bare number \
             is microseconds to cyclictest and hwlatdetect, seconds elsewhere)"
        ));
    }
    duration(text)
}

/// Parses a percentage above 0 and below 100 (`3`, `0.5`, `3%`).
pub(crate) fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(format!(
            "'{text}': give a percentage above 0 and below 100, e.g. 3 for ±3 %"
        )),
    }
}

/// Parses a size: a number with an optional binary suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB`,
/// `T`/`TiB` (case-insensitive); fractions are allowed with a suffix (`1.5G`).
pub(crate) fn size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!(
            "'{text}': a size cannot be negative; give bytes with an optional K, M, G or T \
             suffix, e.g. 64K or 2G"
        ));
    }
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

/// A parser of whole numbers from `min` to `max`; negative numbers and values outside the
/// range are refused, saying what is allowed.
pub(crate) fn count<T>(
    min: T,
    max: T,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Into<u64> + Copy + Send + Sync + 'static,
{
    let (min, max): (u64, u64) = (min.into(), max.into());
    move |text: &str| {
        let text = text.trim();
        let allowed = if min == 1 {
            format!("a whole number above zero, at most {max}")
        } else {
            format!("a whole number from {min} to {max}")
        };
        if text.starts_with('-') {
            return Err(format!("'{text}' is negative; expected {allowed}"));
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "'{text}' is not a whole number; expected {allowed}"
            ));
        }
        let value = match text.parse::<u64>() {
            Ok(value) if value > max => None,
            Ok(value) => Some(value),
            Err(_) => None,
        };
        let Some(value) = value else {
            return Err(format!("'{text}' is too large; expected {allowed}"));
        };
        if value < min {
            return Err(format!("'{text}' is too small; expected {allowed}"));
        }
        T::try_from(value).map_err(|_| format!("'{text}' is too large; expected {allowed}"))
    }
}

/// `--profile` of audit, check and fleet: every profile, with its summary as the help that
/// `--help`, the man pages and shell completion show. `freebsd-router` is accepted but not
/// listed: only audit takes it, for a FreeBSD capture (audit's `--help` says so).
impl clap::ValueEnum for ProfileName {
    fn value_variants<'a>() -> &'a [Self] {
        &ProfileName::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.as_str());
        Some(
            match crate::audit::profile::PROFILES
                .iter()
                .find(|info| info.name == *self)
            {
                Some(info) => value.help(info.summary),
                None => value.hide(true),
            },
        )
    }
}

/// `--power` of plan.
impl clap::ValueEnum for PowerPolicy {
    fn value_variants<'a>() -> &'a [Self] {
        &[PowerPolicy::Latency, PowerPolicy::Balanced]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(match self {
            PowerPolicy::Latency => "No C-state deeper than C1.",
            PowerPolicy::Balanced => "No idle-state limit on the command line.",
        }))
    }
}

/// `--smt` of plan: `keep` or `off`; without the flag, the profile decides
/// ([`SmtChoice::Profile`], which has no value of its own).
impl clap::ValueEnum for SmtChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &[SmtChoice::Keep, SmtChoice::Off]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            SmtChoice::Profile => None,
            SmtChoice::Keep => Some(
                PossibleValue::new("keep").help("Keep SMT on, siblings together in the partition"),
            ),
            SmtChoice::Off => {
                Some(PossibleValue::new("off").help("Turn SMT off at the next boot (nosmt)"))
            }
        }
    }
}

/// `--isolate-core-type` of plan: `p` or `e`.
impl clap::ValueEnum for CoreType {
    fn value_variants<'a>() -> &'a [Self] {
        &[CoreType::Performance, CoreType::Efficiency]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            CoreType::Performance => {
                PossibleValue::new("p").help("The performance cores (P-cores, big).")
            }
            CoreType::Efficiency => {
                PossibleValue::new("e").help("The efficiency cores (E-cores, LITTLE).")
            }
        })
    }
}

/// `--isolation` of plan.
impl clap::ValueEnum for Isolation {
    fn value_variants<'a>() -> &'a [Self] {
        &[Isolation::Boot, Isolation::Runtime, Isolation::Both]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(match self {
            Isolation::Boot => "Kernel arguments, after a reboot.",
            Isolation::Runtime => "Cpusets now, no reboot, no kernel argument.",
            Isolation::Both => "Both.",
        }))
    }
}

/// `--stores` of measure membw.
impl clap::ValueEnum for Stores {
    fn value_variants<'a>() -> &'a [Self] {
        &[Stores::Normal, Stores::Streaming]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Stores::Normal => {
                PossibleValue::new("normal").help("Normal stores: STREAM's accounting.")
            }
            Stores::Streaming => PossibleValue::new("streaming").help("Non-temporal stores."),
        })
    }
}

/// Parses known-answer noise, `PERIOD_MS:SPIN_US` (e.g. `10:500`).
pub(crate) fn inject(text: &str) -> Result<InjectSpec, String> {
    text.parse()
        .map_err(|e: crate::measure::runner::inject::InjectSpecError| e.to_string())
}

/// Parses a SCHED_FIFO priority (1-99).
pub(crate) fn priority(text: &str) -> Result<u8, String> {
    match text.trim().parse::<u8>() {
        Ok(p @ 1..=99) => Ok(p),
        _ => Err(format!("'{text}': a SCHED_FIFO priority is 1 to 99")),
    }
}

/// `--status`: a finding status by its name (`fail`, `warn`, ...).
pub(crate) fn status(text: &str) -> Result<crate::audit::FindingStatus, String> {
    use crate::audit::FindingStatus;
    FindingStatus::ALL
        .into_iter()
        .find(|s| s.name() == text)
        .ok_or_else(|| {
            let names: Vec<_> = FindingStatus::ALL.iter().map(|s| s.name()).collect();
            format!("no status '{text}'; the statuses: {}", names.join(", "))
        })
}

/// `--layer`: a layer by its name (`boot`, `sysctl`, ...), or as the report heads it
/// (`services`).
pub(crate) fn layer(text: &str) -> Result<crate::tuning::setting::Layer, String> {
    use crate::tuning::setting::Layer;
    Layer::ALL
        .into_iter()
        .find(|l| l.name() == text || text.strip_suffix('s') == Some(l.name()))
        .ok_or_else(|| {
            let names: Vec<_> = Layer::ALL.iter().map(|l| l.name()).collect();
            format!("no layer '{text}'; the layers: {}", names.join(", "))
        })
}

/// Reads a `--target` (the grammar is check's, in `check::targets::parse`).
pub(crate) fn target(text: &str) -> Result<crate::check::targets::Target, String> {
    let length =
        |t: &str| duration_with_unit(t).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    crate::check::targets::parse(text, length, crate::check::JITTER_THRESHOLD_NS)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_take_units_and_bare_numbers_keep_their_old_unit() {
        let threshold = latency_bare_ns("1us").unwrap();
        assert_eq!((threshold.ns(), threshold.bare), (1000, false));
        assert_eq!(latency_bare_ns("1µs").unwrap().ns(), 1000);
        assert_eq!(latency_bare_ns("800ns").unwrap().ns(), 800);
        let bare = latency_bare_ns("1000").unwrap();
        assert_eq!((bare.ns(), bare.bare), (1000, true));
        assert_eq!(
            bare.note("--threshold", "ns").unwrap(),
            "--threshold 1000 is read as 1000 ns, as before; a bare number is \
             deprecated: write the unit (--threshold 1us)"
        );
        assert_eq!(latency_bare_us("1000").unwrap().ns(), 1_000_000);
        assert_eq!(latency_bare_us("1ms").unwrap().to_string(), "1ms");
        assert!(
            latency_bare_us("1ms")
                .unwrap()
                .note("--interval", "us")
                .is_none()
        );
        assert!(latency_bare_us("0").is_err());
        assert!(latency_bare_ns("-5us").is_err());
        assert_eq!(human(Duration::from_nanos(1500)), "1500ns");
    }

    #[test]
    fn durations_take_the_usual_units() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert!(duration("0s").unwrap_err().contains("above zero"));
        assert!(duration("10 parsecs").is_err());
        assert!(duration("s").is_err());
        assert!(duration("").is_err());
    }

    #[test]
    fn a_cpu_list_names_at_least_one_cpu() {
        assert_eq!(cpu_list("1-3").unwrap().to_list(), "1-3");
        // An empty --isolate was "no CPU is left to isolate; keep fewer cores for housekeeping".
        for empty in ["", " "] {
            assert!(
                cpu_list(empty).unwrap_err().contains("names no CPU"),
                "{empty:?}"
            );
        }
    }

    #[test]
    fn durations_with_unit_need_it() {
        assert_eq!(duration_with_unit("20us"), Ok(Duration::from_micros(20)));
        assert_eq!(duration_with_unit("1ms"), Ok(Duration::from_millis(1)));
        assert!(
            duration_with_unit("20")
                .unwrap_err()
                .contains("'20' has no unit; write 20us")
        );
        assert!(duration_with_unit("0.5").unwrap_err().contains("no unit"));
        assert!(
            duration_with_unit("-5us")
                .unwrap_err()
                .contains("cannot be negative")
        );
    }

    #[test]
    fn negative_and_overflowing_durations_are_refused() {
        assert!(duration("-1s").unwrap_err().contains("cannot be negative"));
        for long in ["18446744073709551615", "99999999999999999999h", "5200000h"] {
            assert!(duration(long).is_err(), "{long}");
        }
        assert!(
            duration("18446744073709551615")
                .unwrap_err()
                .contains("too long")
        );
        assert!(duration("500000h").is_ok());
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("64K"), Ok(65536));
        assert_eq!(size("64kib"), Ok(65536));
        assert_eq!(size("1.5G"), Ok(3 << 29));
        assert_eq!(size(" 2 GiB "), Ok(2 << 30));
        assert_eq!(size("1T"), Ok(1 << 40));
        for bad in ["", "K", "12Q", "1.5", "-4K", "4KB", "99999999999T", "1..2M"] {
            assert!(size(bad).is_err(), "{bad}");
        }
        assert!(size("-1").unwrap_err().contains("cannot be negative"));
    }

    #[test]
    fn counts_say_what_is_allowed() {
        let positive = count(1u64, u64::MAX);
        assert!(positive("0").unwrap_err().contains("above zero"));
        assert_eq!(positive("300000"), Ok(300_000));
        assert!(positive("-1").unwrap_err().contains("is negative"));
        assert!(
            positive("18446744073709551616")
                .unwrap_err()
                .contains("too large")
        );
        assert!(positive("1e3").unwrap_err().contains("not a whole number"));
        let small = count(2u32, u32::MAX);
        assert!(small("1").unwrap_err().contains("from 2 to 4294967295"));
        assert!(small("4294967296").unwrap_err().contains("too large"));
        let bounded = count(1u64, 10);
        assert!(bounded("11").unwrap_err().contains("at most 10"));
        assert_eq!(bounded("10"), Ok(10));
    }

    #[test]
    fn priorities_are_1_to_99() {
        assert!(priority("100").is_err());
        assert!(priority("-1").unwrap_err().contains("1 to 99"));
        assert_eq!(priority("95"), Ok(95));
    }

    #[test]
    fn cpu_lists_use_the_kernel_form() {
        assert_eq!(cpu_list("2-3,6").unwrap().to_list(), "2-3,6");
        assert!(cpu_list("x").is_err());
    }
}
