//! The loads beside a measurement (`--load`) as text: what each kind achieved in a round and
//! the IPIs the measured CPUs received, in one line, the same in `measure` and `check`.

use crate::measure::load::{KindIntensity, RoundLoad};

/// `cpu 48.2k messages/s, mem 3.10 GB/s; the measured CPUs received 1.2k IPIs/s`, with the
/// kinds that failed named.
pub(crate) fn line(round: &RoundLoad) -> String {
    let kinds: Vec<String> = round.kinds.iter().map(kind).collect();
    let mut said = if kinds.is_empty() {
        "no load ran".to_string()
    } else {
        kinds.join(", ")
    };
    if let Some(ipis) = round.ipis_received_per_s {
        said += &format!("; the measured CPUs received {} IPIs/s", rate(ipis));
    }
    if round.loaded && !round.as_asked {
        said += "; NOT loaded as asked";
    }
    said
}

/// `mem 3.10 GB/s`, `net 12.0k packets/s over eth0 to 10.0.0.2:11111`, with why it failed.
fn kind(intensity: &KindIntensity) -> String {
    let mut said = format!(
        "{} {} {}",
        intensity.kind.name(),
        rate(intensity.rate),
        intensity.unit
    );
    if let Some(over) = &intensity.over {
        said += &format!(" over {}", crate::text::escape_controls(over));
    }
    if let Some(failed) = &intensity.failed {
        said += &format!(" ({})", crate::text::escape_controls(failed));
    }
    said
}

/// A rate with three significant figures: `0.512`, `3.10`, `48.2k`, `1.25M`.
pub(crate) fn rate(value: f64) -> String {
    let (scaled, suffix) = match value.abs() {
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    let decimals = match scaled.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{scaled:.decimals$}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::load::Kind;

    #[test]
    fn a_round_says_each_kind_and_the_ipis_received() {
        let round = RoundLoad {
            loaded: true,
            as_asked: false,
            kinds: vec![
                KindIntensity {
                    kind: Kind::Mem,
                    threads: 1,
                    rate: 3.1,
                    unit: "GB/s".into(),
                    over: None,
                    failed: None,
                },
                KindIntensity {
                    kind: Kind::Net,
                    threads: 2,
                    rate: 12_000.0,
                    unit: "packets/s".into(),
                    over: Some("eth0 to 10.0.0.2:11111".into()),
                    failed: None,
                },
                KindIntensity {
                    kind: Kind::Ipi,
                    threads: 1,
                    rate: 48_213.0,
                    unit: "IPIs sent/s".into(),
                    over: None,
                    failed: Some("1 of its 1 threads ended\n".into()),
                },
            ],
            ipis_received_per_s: Some(1_250.0),
        };
        assert_eq!(
            line(&round),
            "mem 3.10 GB/s, net 12.0k packets/s over eth0 to 10.0.0.2:11111, ipi 48.2k IPIs sent/s (1 of its 1 threads ended\\x0a); the measured \
             CPUs received 1.25k IPIs/s; NOT loaded as asked"
        );
        assert_eq!(rate(0.5), "0.50");
        assert_eq!(rate(1_250_000.0), "1.25M");
    }
}
