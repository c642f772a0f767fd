//! Formatting of sizes and other quantities for people: shared by every layer that words a
//! size (audit observations, measure messages, report tables), so it sits at the bottom; and
//! reading them back from what people write ([`parse`]).

pub(crate) mod parse;

/// Formats a byte count with binary units: `512 B`, `32 KiB`, `16 MiB`, `1.5 GiB`.
pub(crate) fn bytes(value: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut size = value as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{value} B");
    }
    let text = format!("{size:.1}");
    format!("{} {}", text.trim_end_matches(".0"), UNITS[unit])
}

/// Formats a KiB count with binary units.
pub(crate) fn kib(value: u64) -> String {
    bytes(value.saturating_mul(1024))
}

/// "1 thing" / "2 things", for any count type.
pub(crate) fn plural<N: std::fmt::Display + PartialEq + From<u8>>(
    count: N,
    one: &str,
    many: &str,
) -> String {
    if count == N::from(1) {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

/// A setting given in ns in µs without trailing zeros (`1 µs`, `0.2 µs`, `1000 µs`), in ms from
/// 10 ms (`200 ms`, not `200000 µs`) and in s from 10 s (`60 s`).
pub(crate) fn micros_setting(ns: u64) -> String {
    let (value, unit) = match ns {
        0..10_000_000 => (ns as f64 / 1e3, "µs"),
        10_000_000..10_000_000_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    let text = format!("{value:.3}");
    format!(
        "{} {unit}",
        text.trim_end_matches('0').trim_end_matches('.')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(32 << 10), "32 KiB");
        assert_eq!(bytes(16 << 20), "16 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
        assert_eq!(kib(32823440), "31.3 GiB");
        assert_eq!(plural(1, "node", "nodes"), "1 node");
    }

    #[test]
    fn settings_lose_trailing_zeros_and_large_ones_change_unit() {
        assert_eq!(micros_setting(1000), "1 µs");
        assert_eq!(micros_setting(200), "0.2 µs");
        assert_eq!(micros_setting(1_000_000), "1000 µs");
        // Issue 44 N15: a target of `≥ 200000 µs`.
        assert_eq!(micros_setting(200_000_000), "200 ms");
        assert_eq!(micros_setting(9_999_000), "9999 µs");
        assert_eq!(micros_setting(60_000_000_000), "60 s");
    }
}
