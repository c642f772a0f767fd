//! Byte sizes as people write them on the command line (`64K`, `1.5G`) and as tables print
//! them (`1.5 GiB`). Sizes use binary multiples; rates elsewhere use MB = 10^6 as STREAM does.

/// Parses a size: a number with an optional binary suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB`,
/// `T`/`TiB` (case-insensitive). Fractions are allowed with a suffix (`1.5G`). Returns what is
/// wrong otherwise.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
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

/// Formats a byte count with the largest binary unit that keeps the number at least 1:
/// `4 KiB`, `1.5 MiB`, `1.04 GiB`, `17 B` (at most two decimals).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scaled = n as f64 / (1u64 << (10 * unit)) as f64;
    let number = format!("{scaled:.2}");
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("64kib"), Ok(65536));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes(" 2 GiB "), Ok(2 << 30));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "K", "12Q", "1.5", "-4K", "4KB", "99999999999T", "1..2M"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(bytes(17), "17 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(6144), "6 KiB");
        assert_eq!(bytes(3 << 19), "1.5 MiB");
        assert_eq!(bytes(1060 << 20), "1.04 GiB");
        assert_eq!(bytes(1 << 30), "1 GiB");
    }
}
