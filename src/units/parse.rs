//! Reading the quantities people write on a command line or in a site profile: durations,
//! latencies, sizes, percentages, bounded counts and SCHED_FIFO priorities. Each refusal says
//! what is allowed; the command line puts the flag in front of it (`invalid value '-1' for
//! '--threshold <NS>': …`), a site profile its file and line.

use std::time::Duration;

/// A value that is not what its flag or field takes; the message quotes it and says what to
/// give instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ValueError(String);

/// Parses a duration: `10s`, `500ms`, `250us` (or `250µs`), `800ns`, `2m`, `1h`, or a bare
/// number of seconds. Zero, negative durations and durations whose nanoseconds do not fit 64
/// bits are refused.
pub(crate) fn duration(text: &str) -> Result<Duration, ValueError> {
    const EXAMPLES: &str = "give one above zero, e.g. 10s, 500ms or 2m";
    let text = text.trim();
    if text.starts_with('-') {
        return Err(ValueError(format!(
            "'{text}': a duration cannot be negative; {EXAMPLES}"
        )));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| ValueError(format!("'{text}' is not a duration (e.g. 10s, 500ms, 2m)")))?;
    let ns_per_unit = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(ValueError(format!(
                "'{text}': unknown unit '{unit}' (use ns, us, ms, s, m or h)"
            )));
        }
    };
    let ns = (value * ns_per_unit).round();
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(ValueError(format!(
            "'{text}' is too long (at most 584 years, 2^64 ns)"
        )));
    }
    if ns < 1.0 {
        return Err(ValueError(format!("must be above zero; {EXAMPLES}")));
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
pub(crate) fn latency_bare_ns(text: &str) -> Result<Latency, ValueError> {
    latency(text, 1)
}

/// Parses a latency whose bare numbers are microseconds (`--interval 1000` = 1 ms).
pub(crate) fn latency_bare_us(text: &str) -> Result<Latency, ValueError> {
    latency(text, 1000)
}

fn latency(text: &str, bare_ns: u64) -> Result<Latency, ValueError> {
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
pub(crate) fn duration_with_unit(text: &str) -> Result<Duration, ValueError> {
    let number = text.trim();
    if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(ValueError(format!(
            "'{number}' has no unit; write {number}us, {number}ms or {number}s (a bare number \
             is microseconds to cyclictest and hwlatdetect, seconds elsewhere)"
        )));
    }
    duration(text)
}

/// Parses a percentage above 0 and below 100 (`3`, `0.5`, `3%`).
pub(crate) fn percent(text: &str) -> Result<f64, ValueError> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(ValueError(format!(
            "'{text}': give a percentage above 0 and below 100, e.g. 3 for ±3 %"
        ))),
    }
}

/// Parses a size: a number with an optional binary suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB`,
/// `T`/`TiB` (case-insensitive); fractions are allowed with a suffix (`1.5G`).
pub(crate) fn size(text: &str) -> Result<u64, ValueError> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(ValueError(format!(
            "'{text}': a size cannot be negative; give bytes with an optional K, M, G or T \
             suffix, e.g. 64K or 2G"
        )));
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
            return Err(ValueError(format!(
                "'{text}': write a binary suffix (K or KiB, M or MiB, G or GiB, T or TiB)"
            )));
        }
        _ => {
            return Err(ValueError(format!(
                "'{text}' is not a size (expected a number with an optional K, M, G or T)"
            )));
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        ValueError(format!(
            "'{text}' is not a size (expected a number such as 64K or 2G)"
        ))
    })?;
    if shift == 0 && number.contains('.') {
        return Err(ValueError(format!(
            "'{text}': a size in bytes must be a whole number"
        )));
    }
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(ValueError(format!("'{text}' is too large")));
    }
    Ok(bytes.round() as u64)
}

/// A parser of whole numbers from `min` to `max`; negative numbers and values outside the
/// range are refused, saying what is allowed.
pub(crate) fn count<T>(
    min: T,
    max: T,
) -> impl Fn(&str) -> Result<T, ValueError> + Clone + Send + Sync + 'static
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
            return Err(ValueError(format!(
                "'{text}' is negative; expected {allowed}"
            )));
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ValueError(format!(
                "'{text}' is not a whole number; expected {allowed}"
            )));
        }
        let value = match text.parse::<u64>() {
            Ok(value) if value > max => None,
            Ok(value) => Some(value),
            Err(_) => None,
        };
        let Some(value) = value else {
            return Err(ValueError(format!(
                "'{text}' is too large; expected {allowed}"
            )));
        };
        if value < min {
            return Err(ValueError(format!(
                "'{text}' is too small; expected {allowed}"
            )));
        }
        T::try_from(value)
            .map_err(|_| ValueError(format!("'{text}' is too large; expected {allowed}")))
    }
}

/// Parses a SCHED_FIFO priority (1-99).
pub(crate) fn priority(text: &str) -> Result<u8, ValueError> {
    match text.trim().parse::<u8>() {
        Ok(p @ 1..=99) => Ok(p),
        _ => Err(ValueError(format!(
            "'{text}': a SCHED_FIFO priority is 1 to 99"
        ))),
    }
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
        assert!(
            duration("0s")
                .unwrap_err()
                .to_string()
                .contains("above zero")
        );
        assert!(duration("10 parsecs").is_err());
        assert!(duration("s").is_err());
        assert!(duration("").is_err());
    }

    #[test]
    fn durations_with_unit_need_it() {
        assert_eq!(duration_with_unit("20us"), Ok(Duration::from_micros(20)));
        assert_eq!(duration_with_unit("1ms"), Ok(Duration::from_millis(1)));
        assert!(
            duration_with_unit("20")
                .unwrap_err()
                .to_string()
                .contains("'20' has no unit; write 20us")
        );
        assert!(
            duration_with_unit("0.5")
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
        assert!(
            duration_with_unit("-5us")
                .unwrap_err()
                .to_string()
                .contains("cannot be negative")
        );
    }

    #[test]
    fn negative_and_overflowing_durations_are_refused() {
        assert!(
            duration("-1s")
                .unwrap_err()
                .to_string()
                .contains("cannot be negative")
        );
        for long in ["18446744073709551615", "99999999999999999999h", "5200000h"] {
            assert!(duration(long).is_err(), "{long}");
        }
        assert!(
            duration("18446744073709551615")
                .unwrap_err()
                .to_string()
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
        assert!(
            size("-1")
                .unwrap_err()
                .to_string()
                .contains("cannot be negative")
        );
    }

    #[test]
    fn counts_say_what_is_allowed() {
        let positive = count(1u64, u64::MAX);
        assert!(
            positive("0")
                .unwrap_err()
                .to_string()
                .contains("above zero")
        );
        assert_eq!(positive("300000"), Ok(300_000));
        assert!(
            positive("-1")
                .unwrap_err()
                .to_string()
                .contains("is negative")
        );
        assert!(
            positive("18446744073709551616")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
        assert!(
            positive("1e3")
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
        let small = count(2u32, u32::MAX);
        assert!(
            small("1")
                .unwrap_err()
                .to_string()
                .contains("from 2 to 4294967295")
        );
        assert!(
            small("4294967296")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
        let bounded = count(1u64, 10);
        assert!(
            bounded("11")
                .unwrap_err()
                .to_string()
                .contains("at most 10")
        );
        assert_eq!(bounded("10"), Ok(10));
    }

    #[test]
    fn priorities_are_1_to_99() {
        assert!(priority("100").is_err());
        assert!(priority("-1").unwrap_err().to_string().contains("1 to 99"));
        assert_eq!(priority("95"), Ok(95));
    }
}
