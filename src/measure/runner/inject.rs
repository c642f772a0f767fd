//! Known-answer noise (PERIOD_MS:SPIN_US). On each measured CPU a
//! SCHED_FIFO 99 thread wakes at absolute deadlines every PERIOD and spins SPIN, so the
//! busy loop must see about 1000/PERIOD_MS extra interruptions per second lasting about
//! SPIN, and the timer loop a latency plateau from its baseline up to about SPIN.

use crate::measure::runner::harness::Helper;
use crate::measure::runner::harness::{self, StopFlag};
use crate::text::voice;
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The SCHED_FIFO priority of the injectors: above any measuring thread.
pub(crate) const PRIORITY: u8 = 99;

/// What known-answer noise is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectSpec {
    /// Time between the starts of two spins, ns.
    pub period_ns: u64,
    /// Length of each spin, ns.
    pub spin_ns: u64,
}

/// Why a known-answer noise specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InjectSpecError {
    /// Not of the form PERIOD_MS:SPIN_US.
    #[error("'{0}': expected PERIOD_MS:SPIN_US, e.g. 10:500 (spin 500 us every 10 ms)")]
    Form(String),
    /// A zero period or spin.
    #[error("'{0}': the period and the spin must be above 0")]
    Zero(String),
    /// A spin as long as the period.
    #[error("'{0}': the spin must be shorter than the period, or the CPU never gets free")]
    SpinTooLong(String),
}

impl FromStr for InjectSpec {
    type Err = InjectSpecError;

    /// Parses `PERIOD_MS:SPIN_US`, e.g. `10:500` or `50.3:100`.
    fn from_str(text: &str) -> Result<Self, InjectSpecError> {
        let usage = || InjectSpecError::Form(text.to_string());
        let (period, spin) = text.split_once(':').ok_or_else(usage)?;
        let period_ns = decimal_scaled(period, 1_000_000).ok_or_else(usage)?;
        let spin_ns = decimal_scaled(spin, 1_000).ok_or_else(usage)?;
        if period_ns == 0 || spin_ns == 0 {
            return Err(InjectSpecError::Zero(text.to_string()));
        }
        if spin_ns >= period_ns {
            return Err(InjectSpecError::SpinTooLong(text.to_string()));
        }
        Ok(Self { period_ns, spin_ns })
    }
}

/// `12.5` with `scale` 1000 → 12500; at most 6 decimals; no sign, no exponent.
fn decimal_scaled(text: &str, scale: u64) -> Option<u64> {
    let (whole, fraction) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if whole.is_empty() && fraction.is_empty() || fraction.len() > 6 {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut value = whole.checked_mul(scale)?;
    let mut unit = scale;
    for digit in fraction.bytes() {
        unit /= 10;
        value = value.checked_add(u64::from(digit - b'0') * unit)?;
    }
    Some(value)
}

/// How many spins each injector did (in the order of the CPUs given to [`injectors`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct SpinCounts(Arc<Vec<AtomicU64>>);

impl SpinCounts {
    /// The counts so far.
    pub(crate) fn get(&self) -> Vec<u64> {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }
}

/// One injector per CPU of `cpus`. The caller must have checked that SCHED_FIFO 99 is
/// permitted (see [`harness::fifo_permitted`]); an injector that cannot get it does nothing
/// and says so.
pub(crate) fn injectors(cpus: &[u32], spec: InjectSpec) -> (Vec<Helper<'static>>, SpinCounts) {
    let counts = SpinCounts(Arc::new(cpus.iter().map(|_| AtomicU64::new(0)).collect()));
    let helpers = cpus
        .iter()
        .enumerate()
        .map(|(slot, &cpu)| -> Helper<'static> {
            let counts = counts.clone();
            Box::new(move |stop: &StopFlag| {
                if let Some(count) = counts.0.get(slot) {
                    inject(cpu, spec, stop, count);
                }
            })
        })
        .collect();
    (helpers, counts)
}

fn inject(cpu: u32, spec: InjectSpec, stop: &StopFlag, count: &AtomicU64) {
    if let Err(e) =
        harness::pin_current_thread(cpu).and_then(|()| harness::set_fifo_priority(PRIORITY))
    {
        voice::warning!("no known-answer injector on CPU {cpu}: {e}");
        return;
    }
    let mut next = harness::monotonic_ns() + spec.period_ns;
    while !stop.is_stopped() {
        if stop.sleep_until(next) {
            return;
        }
        let until = harness::monotonic_ns() + spec.spin_ns;
        while harness::monotonic_ns() < until {
            std::hint::spin_loop();
        }
        count.fetch_add(1, Ordering::Relaxed);
        // Periods missed while the CPU was taken away (a VM pause) are skipped, not caught up.
        let now = harness::monotonic_ns();
        next += spec.period_ns;
        while next <= now {
            next += spec.period_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_period_and_spin() {
        assert_eq!(
            "10:500".parse(),
            Ok(InjectSpec {
                period_ns: 10_000_000,
                spin_ns: 500_000
            })
        );
        assert_eq!(
            "50.3:100".parse::<InjectSpec>().unwrap().period_ns,
            50_300_000
        );
        assert_eq!("1:0.5".parse::<InjectSpec>().unwrap().spin_ns, 500);
    }

    #[test]
    fn rejects_bad_specs_with_the_reason() {
        for bad in ["10", "10:", ":5", "a:b", "-1:5", "1e3:5", "0:5", "10:0"] {
            assert!(bad.parse::<InjectSpec>().is_err(), "{bad}");
        }
        let err = "1:1000".parse::<InjectSpec>().unwrap_err().to_string();
        assert!(err.contains("shorter than the period"), "{err}");
    }
}
