//! The time-stamp counter: reading it, checking that it is usable, and finding its frequency.
//!
//! Busy-loop engines read the TSC back to back and only ever subtract two reads taken on the
//! same CPU, so only its rate matters. The rate comes from CPUID leaf 0x15 (Intel), else from
//! the hypervisor timing leaf 0x40000010, else from a calibration against
//! `CLOCK_MONOTONIC_RAW` repeated until two estimates agree within 0.1 %. The method is
//! recorded with every result. On other architectures the counter is `CLOCK_MONOTONIC_RAW`
//! itself (1 tick = 1 ns).

use serde::{Deserialize, Serialize};

/// How the counter frequency was found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub(crate) enum FreqMethod {
    /// CPUID leaf 0x15 (TSC / crystal ratio times the crystal frequency).
    Cpuid15,
    /// The hypervisor's timing leaf 0x40000010 (TSC frequency in kHz).
    HypervisorLeaf,
    /// Estimated against `CLOCK_MONOTONIC_RAW`.
    Calibrated {
        /// Estimates made until two consecutive ones agreed.
        rounds: u32,
        /// Difference between the last two estimates, in parts per million.
        spread_ppm: f64,
    },
    /// The counter is `CLOCK_MONOTONIC_RAW` itself (not x86_64): exactly 1 GHz.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    MonotonicRaw,
}

/// The counter used by the busy-loop engines and what is known about it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tsc {
    /// Counter ticks per second (Hz).
    pub hz: u64,
    /// Where `hz` comes from.
    pub freq: FreqMethod,
    /// Whether CPUID says the TSC is invariant (constant rate across P-, C- and T-states).
    pub invariant: bool,
}

/// Why the counter cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum TscError {
    /// The calibration never produced two estimates within 0.1 % of each other.
    #[error(
        "could not calibrate the TSC: {rounds} estimates against CLOCK_MONOTONIC_RAW never \
         agreed within 0.1% (the machine is very busy or the TSC is unstable; retry on a \
         quieter machine)"
    )]
    NoAgreement {
        /// Estimates made.
        rounds: u32,
    },
}

impl Tsc {
    /// Finds the counter frequency, from CPUID where it is given, else by calibration.
    pub(crate) fn detect() -> Result<Self, TscError> {
        let invariant = invariant_tsc();
        if let Some((hz, freq)) = cpuid_frequency() {
            return Ok(Self {
                hz,
                freq,
                invariant,
            });
        }
        let (hz, freq) = calibrate(&mut MonotonicRaw, CALIBRATION_WINDOW_NS, MAX_ROUNDS)?;
        Ok(Self {
            hz,
            freq,
            invariant,
        })
    }

    /// Converts ticks to nanoseconds (truncated).
    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        ticks_to_ns(ticks, self.hz)
    }

    /// Converts nanoseconds to ticks, rounded up (so a threshold in ticks is never below the
    /// threshold in ns).
    pub(crate) fn ticks(&self, ns: u64) -> u64 {
        let ticks = (u128::from(ns) * u128::from(self.hz)).div_ceil(1_000_000_000);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// The frequency truncated to whole MHz, as sysjitter and oslat print and compute with.
    pub(crate) fn mhz(&self) -> u64 {
        self.hz / 1_000_000
    }
}

/// Converts ticks at `hz` to nanoseconds, truncating.
pub(crate) fn ticks_to_ns(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(hz)).unwrap_or(u64::MAX)
}

/// Reads the counter (bare `rdtsc` on x86_64, as sysjitter does).
#[inline(always)]
pub(crate) fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no memory effects; every x86_64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_raw_ns()
    }
}

/// Reads the counter and the id of the CPU it was read on (`rdtscp`; the id is the low 12
/// bits of TSC_AUX as Linux sets it). Used to check that a thread did not migrate.
#[inline(always)]
pub(crate) fn read_with_cpu() -> (u64, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: rdtscp writes only `aux`; Linux enables it on every x86_64 CPU that has it,
        // and `has_rdtscp` is checked by callers that rely on the CPU id.
        let ticks = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
        (ticks, aux & 0xfff)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (monotonic_raw_ns(), u32::MAX)
    }
}

/// Whether the CPU has `rdtscp` (so [`read_with_cpu`] reports a CPU id).
pub(crate) fn has_rdtscp() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        raw_cpuid::CpuId::new()
            .get_extended_processor_and_feature_identifiers()
            .is_some_and(|f| f.has_rdtscp())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether CPUID reports an invariant TSC (leaf 0x80000007 EDX bit 8).
pub(crate) fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        raw_cpuid::CpuId::new()
            .get_advanced_power_mgmt_info()
            .is_some_and(|apm| apm.has_invariant_tsc())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// The counter frequency as CPUID gives it, when it does.
fn cpuid_frequency() -> Option<(u64, FreqMethod)> {
    #[cfg(target_arch = "x86_64")]
    {
        let cpuid = raw_cpuid::CpuId::new();
        if let Some(hz) = cpuid.get_tsc_info().and_then(|t| t.tsc_frequency())
            && hz > 0
        {
            return Some((hz, FreqMethod::Cpuid15));
        }
        if let Some(khz) = cpuid.get_hypervisor_info().and_then(|h| h.tsc_frequency())
            && khz > 0
        {
            return Some((u64::from(khz) * 1000, FreqMethod::HypervisorLeaf));
        }
        None
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Some((1_000_000_000, FreqMethod::MonotonicRaw))
    }
}

/// How long each calibration estimate spins (ns of `CLOCK_MONOTONIC_RAW`).
const CALIBRATION_WINDOW_NS: u64 = 20_000_000;
/// Estimates made before giving up.
const MAX_ROUNDS: u32 = 50;

/// A reference clock and the counter it calibrates; the real one is `CLOCK_MONOTONIC_RAW`
/// and the TSC, a test one is scripted.
pub(crate) trait CalibrationSource {
    /// One bracketed reading: (reference ns, counter ticks) taken as close together as the
    /// source can.
    fn pair(&mut self) -> (u64, u64);
}

/// `CLOCK_MONOTONIC_RAW` against the TSC.
pub(crate) struct MonotonicRaw;

impl CalibrationSource for MonotonicRaw {
    fn pair(&mut self) -> (u64, u64) {
        // Bracket the counter read with two clock reads and keep the tightest of a few tries,
        // so a preemption between the reads does not skew the pair.
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..5 {
            let before = monotonic_raw_ns();
            let ticks = read();
            let after = monotonic_raw_ns();
            let width = after.saturating_sub(before);
            if width < best.0 {
                best = (width, before + width / 2, ticks);
            }
        }
        (best.1, best.2)
    }
}

/// Estimates the counter frequency from `source`: each estimate spans at least `window_ns` of
/// reference time; stops when two consecutive estimates differ by at most 0.1 %.
pub(crate) fn calibrate(
    source: &mut impl CalibrationSource,
    window_ns: u64,
    max_rounds: u32,
) -> Result<(u64, FreqMethod), TscError> {
    let mut previous: Option<f64> = None;
    for round in 1..=max_rounds {
        let (ns0, t0) = source.pair();
        let (mut ns1, mut t1) = source.pair();
        while ns1.saturating_sub(ns0) < window_ns {
            (ns1, t1) = source.pair();
        }
        let hz = t1.wrapping_sub(t0) as f64 * 1e9 / ns1.saturating_sub(ns0) as f64;
        if let Some(prev) = previous {
            let spread = (hz - prev).abs() / prev;
            if spread <= 0.001 {
                return Ok((
                    hz.round() as u64,
                    FreqMethod::Calibrated {
                        rounds: round,
                        spread_ppm: (spread * 1e6 * 10.0).round() / 10.0,
                    },
                ));
            }
        }
        previous = Some(hz);
    }
    Err(TscError::NoAgreement { rounds: max_rounds })
}

/// `CLOCK_MONOTONIC_RAW` in ns.
pub(crate) fn monotonic_raw_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripted pairs: reference advances `step_ns` per pair, counter by `hz` scaled, with a
    /// one-off disturbance per listed round.
    struct Scripted {
        ns: u64,
        ticks: u64,
        hz_per_pair: Vec<f64>,
        pair: usize,
    }

    impl CalibrationSource for Scripted {
        fn pair(&mut self) -> (u64, u64) {
            let hz = self
                .hz_per_pair
                .get(self.pair)
                .copied()
                .unwrap_or(*self.hz_per_pair.last().unwrap());
            self.pair += 1;
            self.ns += 10_000_000;
            self.ticks += (hz * 0.01) as u64;
            (self.ns, self.ticks)
        }
    }

    #[test]
    fn calibration_stops_when_two_estimates_agree() {
        // Pairs 0..3 form estimate 1 (skewed by a 5 % faster counter in its second step),
        // the next ones are steady at 2.5 GHz.
        let mut source = Scripted {
            ns: 0,
            ticks: 0,
            hz_per_pair: vec![2.5e9, 2.625e9, 2.5e9],
            pair: 0,
        };
        let (hz, method) = calibrate(&mut source, 20_000_000, 10).unwrap();
        assert_eq!(hz, 2_500_000_000);
        let FreqMethod::Calibrated { rounds, spread_ppm } = method else {
            panic!("{method:?}")
        };
        assert_eq!(rounds, 3);
        assert_eq!(spread_ppm, 0.0);
    }

    #[test]
    fn calibration_gives_up_on_a_wandering_counter() {
        let mut source = Scripted {
            ns: 0,
            ticks: 0,
            hz_per_pair: (0..100)
                .map(|i| 1e9 * (1.0 + 0.01 * f64::from(i)))
                .collect(),
            pair: 0,
        };
        assert_eq!(
            calibrate(&mut source, 20_000_000, 4),
            Err(TscError::NoAgreement { rounds: 4 })
        );
    }

    #[test]
    fn conversions_round_the_safe_way() {
        let tsc = Tsc {
            hz: 2_445_406_000,
            freq: FreqMethod::Cpuid15,
            invariant: true,
        };
        assert_eq!(tsc.mhz(), 2445);
        assert_eq!(tsc.ns(2_445_406_000), 1_000_000_000);
        // 300 us is 733621.8 ticks: the threshold in ticks rounds up.
        assert_eq!(tsc.ticks(300_000), 733_622);
        assert!(tsc.ns(tsc.ticks(300_000)) >= 299_999);
        assert_eq!(ticks_to_ns(5, 0), 0);
    }

    #[test]
    fn the_live_counter_advances() {
        let a = read();
        let b = read();
        assert!(b >= a);
    }
}
