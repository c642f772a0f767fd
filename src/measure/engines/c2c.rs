//! `c2c`: core-to-core latency by cache-line ping-pong (\[M-C2C\]).
//!
//! Two threads, pinned to CPUs A and B, share one cache line holding a flag. B flips it from
//! PING to PONG with compare-and-swap, A flips it back, so every round trip moves the line from
//! one core's cache to the other's and back. A sample times `round_trips` round trips with the
//! monotonic clock; half a round trip is the one-way latency. The first sample of each pair is a
//! warm-up and is discarded. This is the algorithm and the defaults (1000 round trips × 300
//! samples) of `core-to-core-latency`'s CAS benchmark, so figures compare with it.
//!
//! CPUs are measured in the session's locality order: by package, node and L3
//! group ([`crate::measure::runner::place::places`]) so that CCX, CCD and socket blocks are
//! visible.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

use crate::machine::vcpu_sharing::{self, PairMean, VcpuProbe};
use crate::measure::matrix::Matrix;
use crate::measure::runner::attribution::own_waited_ns;
use crate::measure::runner::harness::{StopFlag, pin_current_thread};
use crate::measure::runner::measurement::{Measurement, Warning};
use crate::measure::runner::memory::MemoryError;
use crate::measure::runner::pairs::{Layout, check_two};
use crate::measure::runner::place::{self, CpuPlace, PairClass};
use crate::measure::runner::progress::{Progress, should_stop};
use crate::measure::runner::session::Session;
use crate::measure::runner::summary::Summary;

/// Round trips per sample and samples per pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PingPongConfig {
    /// Round trips timed together in one sample.
    pub round_trips: u32,
    /// Samples kept per pair (one more is taken first and discarded).
    pub samples: u32,
}

/// What `c2c` is asked: how each pair is timed, and in which directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct C2cRequest {
    /// Round trips per sample and samples per pair.
    pub ping_pong: PingPongConfig,
    /// Measure each pair both ways (A starts, then B starts) instead of once.
    pub both_directions: bool,
}

impl Default for PingPongConfig {
    /// core-to-core-latency's defaults: 1000 round trips per sample, 300 samples.
    fn default() -> Self {
        Self {
            round_trips: 1000,
            samples: 300,
        }
    }
}

/// The latency between two CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairLatency {
    /// The CPU that starts each round trip and times it.
    pub from_cpu: u32,
    /// The CPU that answers.
    pub to_cpu: u32,
    /// One-way latency (half a round trip) per sample, nanoseconds.
    pub one_way_ns: Summary,
    /// Share of the pair's run during which one of its threads was ready to run while another
    /// task ran on its CPU, % (the larger of the two); `None` where the thread's schedstat
    /// could not be read.
    pub shared_percent: Option<f64>,
}

/// A whole c2c run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct C2cRun {
    /// The CPUs, in the order of the matrix.
    pub cpus: Vec<u32>,
    /// Round trips per sample and samples per pair.
    pub config: PingPongConfig,
    /// Whether each pair was measured in both directions.
    pub both_directions: bool,
    /// Every measured pair, in measuring order.
    pub pairs: Vec<PairLatency>,
    /// Mean one-way latency in nanoseconds, row = starting CPU, column = answering CPU; a pair
    /// measured in one direction fills both cells.
    pub matrix_mean_ns: Matrix,
}

/// Everything `lowlat measure c2c` measured, with its summaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct C2cReport {
    /// The pairs and the matrix.
    pub run: C2cRun,
    /// Pairs summarised by how their CPUs are related.
    pub by_class: Vec<ClassLatency>,
    /// Matrix indices after which the L3 group (or package) changes.
    pub group_breaks: Vec<usize>,
    /// In a VM: the vCPU pairs at SMT-sibling latency although the guest shows them as
    /// separate cores (they share a physical core on the host), or why no claim is made;
    /// absent on bare metal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_sharing: Option<VcpuProbe>,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum C2cError {
    /// A thread could not be pinned.
    #[error("c2c: cannot pin a thread to CPU {cpu}: {message} (is the CPU online and allowed?)")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The error.
        message: String,
    },
    /// The configuration is unusable.
    #[error("c2c: {0}")]
    Config(String),
    /// The samples would not fit in the memory available.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

const PING: u32 = 0;
const PONG: u32 = 1;

/// The flag on a cache line of its own (128 bytes: adjacent-line prefetchers pair lines).
#[repr(align(128))]
struct Line(AtomicU32);

/// The abort flag, on another line than the ping-pong flag.
#[repr(align(128))]
struct Abort(AtomicBool);

/// Measures one pair: `from` starts and times the round trips, `to` answers. When stopped,
/// the pair holds the samples completed; `None` when there were none.
pub(crate) fn measure_pair(
    from: u32,
    to: u32,
    config: PingPongConfig,
    stop: &StopFlag,
) -> Result<Option<PairLatency>, C2cError> {
    if config.round_trips == 0 || config.samples == 0 {
        return Err(C2cError::Config(
            "round trips and samples must be at least 1".into(),
        ));
    }
    let line = Line(AtomicU32::new(PING));
    let abort = Abort(AtomicBool::new(false));
    let ready = Barrier::new(2);
    let flips = u64::from(config.round_trips) * (u64::from(config.samples) + 1);
    // Each side pins its thread (a failure aborts the pair for both), then both start.
    let pin_and_wait = |cpu| {
        let pinned = pin_current_thread(cpu);
        if pinned.is_err() {
            abort.0.store(true, Ordering::Relaxed);
        }
        ready.wait();
        pinned
    };
    let (ping, pong) = std::thread::scope(|scope| {
        let answerer = scope.spawn(|| {
            let pinned = pin_and_wait(to);
            let before = own_waited_ns();
            if pinned.is_ok() && !abort.0.load(Ordering::Relaxed) {
                answer(&line, &abort, flips);
            }
            pinned.map(|()| waited_since(before))
        });
        let starter = scope.spawn(|| {
            let pinned = pin_and_wait(from);
            if pinned.is_err() || abort.0.load(Ordering::Relaxed) {
                return pinned.map(|()| (Vec::new(), None, 0));
            }
            let (before, began) = (own_waited_ns(), Instant::now());
            let samples = start(&line, &abort, config, stop);
            abort.0.store(true, Ordering::Relaxed);
            let elapsed_ns = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
            Ok((samples, waited_since(before), elapsed_ns))
        });
        (starter.join(), answerer.join())
    });
    let join_failed = |cpu| C2cError::Pin {
        cpu,
        message: "the thread panicked".into(),
    };
    let (samples, ping_waited, elapsed_ns) =
        ping.map_err(|_| join_failed(from))?
            .map_err(|e| C2cError::Pin {
                cpu: from,
                message: e.to_string(),
            })?;
    let pong_waited = pong
        .map_err(|_| join_failed(to))?
        .map_err(|e| C2cError::Pin {
            cpu: to,
            message: e.to_string(),
        })?;
    let shared_percent = match (ping_waited, pong_waited) {
        (Some(a), Some(b)) if elapsed_ns > 0 => Some(a.max(b) as f64 * 100.0 / elapsed_ns as f64),
        _ => None,
    };
    Ok(Summary::of(&samples).map(|one_way_ns| PairLatency {
        from_cpu: from,
        to_cpu: to,
        one_way_ns,
        shared_percent,
    }))
}

/// The time the calling thread waited on a run queue since `before` (an [`own_waited_ns`]
/// reading), ns.
fn waited_since(before: Option<u64>) -> Option<u64> {
    Some(own_waited_ns()?.saturating_sub(before?))
}

/// Says that pairs ran on CPUs other tasks shared (a thread of the pair waited for at least
/// 1 % of its run): their latencies hold that time too.
fn shared_warning(pairs: &[PairLatency]) -> Option<Warning> {
    let shared: Vec<f64> = pairs
        .iter()
        .filter_map(|p| p.shared_percent)
        .filter(|&percent| percent >= 1.0)
        .collect();
    let worst = shared.iter().copied().fold(0.0, f64::max);
    (!shared.is_empty()).then_some(Warning::PairsShared {
        shared: shared.len(),
        pairs: pairs.len(),
        worst_percent: worst,
    })
}

/// The answering side: flips PING to PONG `flips` times, or until aborted.
fn answer(line: &Line, abort: &Abort, flips: u64) {
    for _ in 0..flips {
        while line
            .0
            .compare_exchange(PING, PONG, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            if abort.0.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

/// How many round trips the starting side makes between two looks at the stop flag.
const STOP_EVERY: u32 = 4096;

/// The starting side: times the samples; the first is discarded. When stopped (or the
/// answerer went away) it returns the samples completed so far.
fn start(line: &Line, abort: &Abort, config: PingPongConfig, stop: &StopFlag) -> Vec<f64> {
    let mut samples = Vec::with_capacity(config.samples as usize);
    for i in 0..=config.samples {
        if should_stop(stop) {
            break;
        }
        let begin = Instant::now();
        for trip in 0..config.round_trips {
            // A sample of 2^32 round trips lasts minutes: Ctrl-C is looked at within it too,
            // every STOP_EVERY round trips (one relaxed load, lost in the transfers).
            if trip % STOP_EVERY == STOP_EVERY - 1 && should_stop(stop) {
                return samples;
            }
            while line
                .0
                .compare_exchange(PONG, PING, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                if abort.0.load(Ordering::Relaxed) {
                    return samples;
                }
            }
        }
        let ns = begin.elapsed().as_nanos() as f64;
        if i > 0 {
            samples.push(ns / f64::from(config.round_trips) / 2.0);
        }
    }
    samples
}

/// How c2c measures, in the result header.
pub(crate) const METHOD: &str = "cache-line ping-pong with compare-and-swap between two pinned \
     threads; one-way latency = half a round trip, per sample of round trips timed with \
     CLOCK_MONOTONIC";

/// Measures every pair of the session's CPUs in locality order (each unordered pair once, or
/// both ways when the request says so), with its progress on stderr, and finishes the result:
/// the pairs by class, the matrix's group breaks, in a VM the vCPUs the host shares, and the
/// warning for pairs on shared CPUs. Ctrl-C or the session's stop flag ends the run; pairs
/// done so far are kept.
pub(crate) fn run(
    session: &Session,
    request: C2cRequest,
) -> Result<Measurement<C2cReport>, C2cError> {
    // At once: each pair's samples and the sorted copy its summary makes.
    session.budget.check_samples(request.ping_pong.samples, 2)?;
    let run = session.on_cpus("c2c", |cpus, stop, progress| {
        measure(cpus, request, stop, progress)
    })?;
    let shared = shared_warning(&run.pairs);
    let report = C2cReport {
        by_class: by_class(&run.pairs, &session.places),
        group_breaks: place::group_breaks(&session.places),
        host_sharing: (session.machine.hypervisor.as_ref())
            .map(|_| host_sharing(&run.pairs, &session.places)),
        run,
    };
    let mut measured = Measurement::new(session, METHOD, report);
    measured.warnings.extend(shared);
    Ok(measured)
}

/// Measures every pair of `cpus`, as [`run`] does, saying each pair on `progress`.
fn measure(
    cpus: &[u32],
    request: C2cRequest,
    stop: &StopFlag,
    progress: &mut Progress,
) -> Result<C2cRun, C2cError> {
    let C2cRequest {
        ping_pong: config,
        both_directions,
    } = request;
    check_two(cpus).map_err(|e| C2cError::Config(e.to_string()))?;
    let mut order = Vec::new();
    for i in 0..cpus.len() {
        for j in i + 1..cpus.len() {
            order.push((i, j));
            if both_directions {
                order.push((j, i));
            }
        }
    }
    let layout = Layout {
        axes: ("cpu", "cpu"),
        mirrored: !both_directions,
        label: |from, to| format!("CPU {from} <-> CPU {to}"),
        figure: |pair: &PairLatency| pair.one_way_ns.mean,
    };
    let (pairs, matrix) = layout.measure(cpus, &order, (stop, progress), |from, to| {
        measure_pair(from, to, config, stop)
    })?;
    Ok(C2cRun {
        cpus: cpus.to_vec(),
        config,
        both_directions,
        pairs,
        matrix_mean_ns: matrix,
    })
}

/// Reads `pairs` for vCPUs that share host cores: one probe, against the guest's own cores
/// (`places`).
pub(crate) fn host_sharing(pairs: &[PairLatency], places: &[CpuPlace]) -> VcpuProbe {
    let means: Vec<PairMean> = (pairs.iter())
        .map(|p| PairMean {
            a: p.from_cpu,
            b: p.to_cpu,
            mean_ns: p.one_way_ns.mean,
        })
        .collect();
    let place = |cpu: u32| places.iter().find(|p| p.cpu == cpu);
    let same_core = |a: u32, b: u32| match (place(a), place(b)) {
        (Some(x), Some(y)) => x.same_core(y),
        _ => false,
    };
    match vcpu_sharing::analyse(&means, same_core) {
        Ok(reading) => VcpuProbe {
            probes: vec![Some(reading)],
            no_claim: None,
        },
        Err(e) => VcpuProbe {
            probes: vec![None],
            no_claim: Some(e.to_string()),
        },
    }
}

/// Round trips and samples of one pair of [`probe`]: short, since the probe looks for pairs
/// ten times faster than the rest, not for a figure to compare.
const PROBE_PING_PONG: PingPongConfig = PingPongConfig {
    round_trips: 200,
    samples: 5,
};

/// `check`'s short probe of a guest: `probes` quick passes over every pair of `places`
/// (the guest's vCPUs), each read as by [`host_sharing`], within `budget` in all (a pass cut
/// short reads the pairs it measured). Two passes that find different pairs mean the host
/// moves the vCPUs.
pub(crate) fn probe(
    places: &[CpuPlace],
    probes: usize,
    budget: std::time::Duration,
) -> Result<VcpuProbe, C2cError> {
    let started = Instant::now();
    let per_probe = budget / u32::try_from(probes.max(1)).unwrap_or(u32::MAX);
    let stop = StopFlag::new();
    let mut out = VcpuProbe {
        probes: Vec::new(),
        no_claim: None,
    };
    for number in 0..probes {
        let deadline = per_probe * u32::try_from(number + 1).unwrap_or(u32::MAX);
        let mut pairs = Vec::new();
        'pass: for (i, a) in places.iter().enumerate() {
            for b in &places[i + 1..] {
                if started.elapsed() >= deadline {
                    break 'pass;
                }
                if let Some(pair) = measure_pair(a.cpu, b.cpu, PROBE_PING_PONG, &stop)? {
                    pairs.push(pair);
                }
            }
        }
        let reading = host_sharing(&pairs, places);
        out.no_claim = out.no_claim.or(reading.no_claim);
        out.probes.extend(reading.probes);
    }
    Ok(out)
}

/// The pairs of one [`PairClass`], summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassLatency {
    /// How the CPUs of these pairs are related.
    pub class: PairClass,
    /// Pairs in the class.
    pub pairs: usize,
    /// Mean of the pairs' mean one-way latencies, nanoseconds.
    pub mean_ns: f64,
    /// The lowest pair mean, nanoseconds.
    pub min_ns: f64,
    /// The highest pair mean, nanoseconds.
    pub max_ns: f64,
}

/// Groups the pairs by how their CPUs are related (SMT siblings, same L3, same package,
/// other package), the summary numbers of a topology-ordered heatmap.
pub(crate) fn by_class(pairs: &[PairLatency], places: &[CpuPlace]) -> Vec<ClassLatency> {
    let place = |cpu: u32| places.iter().find(|p| p.cpu == cpu);
    let mut classes: BTreeMap<PairClass, Vec<f64>> = BTreeMap::new();
    for pair in pairs {
        let class = match (place(pair.from_cpu), place(pair.to_cpu)) {
            (Some(a), Some(b)) => PairClass::of(a, b),
            _ => PairClass::Unknown,
        };
        classes.entry(class).or_default().push(pair.one_way_ns.mean);
    }
    classes
        .into_iter()
        .map(|(class, means)| ClassLatency {
            class,
            pairs: means.len(),
            mean_ns: means.iter().sum::<f64>() / means.len() as f64,
            min_ns: means.iter().copied().fold(f64::INFINITY, f64::min),
            max_ns: means.iter().copied().fold(0.0, f64::max),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::runner::place::tests::described;

    fn pair(from: u32, to: u32, mean: f64) -> PairLatency {
        PairLatency {
            from_cpu: from,
            to_cpu: to,
            one_way_ns: Summary::of(&[mean]).unwrap(),
            shared_percent: Some(0.0),
        }
    }

    #[test]
    fn pairs_on_shared_cpus_are_called_out() {
        // Regression: c2c under contention reported 14,961 ns without a warning.
        let mut pairs = vec![pair(0, 1, 20.0), pair(0, 2, 14_961.0), pair(1, 2, 20.0)];
        assert_eq!(shared_warning(&pairs), None);
        pairs[1].shared_percent = Some(48.7);
        pairs[2].shared_percent = None;
        let warning = shared_warning(&pairs).unwrap().to_string();
        assert!(
            warning.starts_with("1 of 3 pairs ran on CPUs other tasks shared (up to 49 %"),
            "{warning}"
        );
    }

    #[test]
    fn classes_summarise_pairs() {
        let places = described(2, 2, 2, 1);
        let pairs = [
            pair(0, 1, 20.0),
            pair(2, 3, 30.0),
            pair(0, 2, 100.0),
            pair(0, 4, 200.0),
        ];
        let classes = by_class(&pairs, &places);
        let got: Vec<(PairClass, usize, f64)> = classes
            .iter()
            .map(|c| (c.class, c.pairs, c.mean_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (PairClass::SameL3, 2, 25.0),
                (PairClass::SamePackage, 1, 100.0),
                (PairClass::CrossPackage, 1, 200.0),
            ]
        );
        assert_eq!((classes[0].min_ns, classes[0].max_ns), (20.0, 30.0));
    }

    #[test]
    fn host_sharing_leaves_out_the_siblings_the_guest_shows() {
        // 1 package, 1 L3, 4 cores × 2 threads: CPU N and N+4 are siblings in the guest.
        let places = described(1, 1, 4, 2);
        let mut pairs = Vec::new();
        for a in 0..8u32 {
            for b in a + 1..8 {
                let ns = match (a, b) {
                    (a, b) if b == a + 4 => 9.0, // the guest's own siblings
                    (1, 2) => 8.5,               // separate cores in the guest
                    _ => 70.0,
                };
                pairs.push(pair(a, b, ns));
            }
        }
        let probe = host_sharing(&pairs, &places);
        let reading = probe.readings().next().unwrap();
        assert_eq!(reading.pair_list(), "1-2");
        assert_eq!(reading.pairs, 24);
        assert_eq!(host_sharing(&pairs[..3], &places).probes, vec![None]);
    }

    #[test]
    fn the_probe_keeps_to_its_budget() {
        // A budget spent before the first pair: two passes, no pair measured, no claim.
        let places = described(1, 1, 8, 1);
        let started = Instant::now();
        let probe = probe(&places, 2, std::time::Duration::ZERO).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert_eq!(probe.probes, vec![None, None]);
        assert!(
            probe
                .no_claim
                .unwrap()
                .starts_with("0 pair(s) of separate cores")
        );
    }

    #[test]
    fn needs_two_cpus_and_valid_counts() {
        let stop = StopFlag::new();
        let mut progress = Progress::silent();
        assert!(measure(&[0], C2cRequest::default(), &stop, &mut progress).is_err());
        let zero = PingPongConfig {
            round_trips: 0,
            samples: 1,
        };
        assert!(measure_pair(0, 1, zero, &stop).is_err());
    }

    #[test]
    fn unpinnable_cpu_is_an_error_not_a_hang() {
        let config = PingPongConfig {
            round_trips: 10,
            samples: 2,
        };
        let err = measure_pair(0, 8000, config, &StopFlag::new()).unwrap_err();
        assert!(matches!(err, C2cError::Pin { cpu: 8000, .. }), "{err}");
    }

    #[test]
    fn matrix_is_symmetric_within_noise() {
        let Some(cpus) = crate::measure::runner::harness::two_allowed_cpus() else {
            return;
        };
        let config = PingPongConfig {
            round_trips: 200,
            samples: 50,
        };
        let request = C2cRequest {
            ping_pong: config,
            both_directions: true,
        };
        let run = measure(&cpus, request, &StopFlag::new(), &mut Progress::silent()).unwrap();
        assert_eq!(run.pairs.len(), 2);
        let there = run.pairs[0].one_way_ns.median;
        let back = run.pairs[1].one_way_ns.median;
        assert!(there > 0.0 && back > 0.0);
        // The same line moves the same way in both directions; a shared VM adds noise, so the
        // medians need only agree within a factor of two.
        assert!(
            there / back < 2.0 && back / there < 2.0,
            "{there} ns vs {back} ns"
        );
        assert_eq!(
            run.matrix_mean_ns.get(0, 1),
            Some(run.pairs[0].one_way_ns.mean)
        );
        assert_eq!(
            run.matrix_mean_ns.get(1, 0),
            Some(run.pairs[1].one_way_ns.mean)
        );
        assert_eq!(run.matrix_mean_ns.get(0, 0), None);
    }

    #[test]
    fn stop_keeps_partial_results() {
        let stop = StopFlag::new();
        stop.stop();
        let run = measure(
            &[0, 1],
            C2cRequest::default(),
            &stop,
            &mut Progress::silent(),
        )
        .unwrap();
        assert!(run.pairs.is_empty());
    }
}
