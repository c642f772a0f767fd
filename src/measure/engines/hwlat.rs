//! `hwlat`: latency the hardware and firmware add with the OS out of the way (SMIs, a
//! hypervisor's exits), through the kernel's hwlat tracer: one CPU at a time spins with
//! interrupts off for `width` of every `window`, reading the clock in a loop, and records every
//! gap above the threshold. These are the figures hwlatdetect (rt-tests) reports; the defaults
//! are its own and \[S002\]'s: 120 s, window 1 s, width 0.5 s, threshold 10 µs.
//!
//! Every tracefs file the run writes is read first and written back afterwards, in reverse
//! order, whatever happens (an error, Ctrl-C): a run must not leave the tracer on or change
//! the options another tool relies on (rtla's runs are known to leak them).

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::machine::Avail;
use crate::machine::kernel::tracers;
use crate::measure::runner::harness::StopFlag;
use crate::measure::runner::measurement::Measurement;
use crate::measure::runner::progress::should_stop;
use crate::measure::runner::session::Session;
use crate::sysroot::SysRoot;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HwlatRequest {
    /// How long the tracer runs (ns).
    pub duration_ns: u64,
    /// The period in which one sampling burst runs (µs).
    pub window_us: u64,
    /// How long each burst spins with interrupts off (µs); at most the window.
    pub width_us: u64,
    /// Gaps at or above this are recorded (µs).
    pub threshold_us: u64,
}

impl Default for HwlatRequest {
    /// hwlatdetect's defaults.
    fn default() -> Self {
        Self {
            duration_ns: 120_000_000_000,
            window_us: 1_000_000,
            width_us: 500_000,
            threshold_us: 10,
        }
    }
}

impl HwlatRequest {
    /// A run of `duration` with bursts `width` long every `window`, recording gaps of
    /// `threshold` or more (whole µs, at least 1); refuses a width above the window, naming
    /// the flags of `measure hwlat`.
    pub(crate) fn of(
        duration: Duration,
        window: Duration,
        width: Duration,
        threshold: Duration,
    ) -> Result<HwlatRequest, HwlatError> {
        if width > window {
            return Err(HwlatError::Config(format!(
                "--width {width:?}: must be at most --window ({window:?})"
            )));
        }
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Ok(HwlatRequest {
            duration_ns: u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
            window_us: micros(window),
            width_us: micros(width),
            threshold_us: micros(threshold).max(1),
        })
    }
}

/// One gap the tracer recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HwlatSample {
    /// The tracer's sequence number.
    pub seq: u64,
    /// The CPU the burst ran on.
    pub cpu: u32,
    /// The largest gap between two clock reads inside the loop (µs).
    pub inner_us: u64,
    /// The largest gap between two loop iterations (µs).
    pub outer_us: u64,
    /// When it was seen, as the tracer prints it (`seconds.nanoseconds`).
    pub timestamp: String,
    /// Gaps above the threshold in that burst, when the kernel says (5.9 and later).
    pub count: Option<u64>,
    /// Time spent in NMIs during the burst (ns), when the kernel says.
    pub nmi_total_ns: Option<u64>,
}

impl HwlatSample {
    /// The larger of the two gaps (µs).
    pub(crate) fn latency_us(&self) -> u64 {
        self.inner_us.max(self.outer_us)
    }
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HwlatRun {
    /// What was asked.
    pub config: HwlatRequest,
    /// The tracefs directory used.
    pub tracefs: String,
    /// How long the tracer ran (ns): shorter than asked when stopped.
    pub elapsed_ns: u64,
    /// Every recorded gap, in the tracer's order.
    pub samples: Vec<HwlatSample>,
    /// The largest gap (µs); `None` when nothing reached the threshold.
    pub max_latency_us: Option<u64>,
    /// Trace lines that were not hwlat samples (other than comments), for the record.
    pub unparsed_lines: usize,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HwlatError {
    /// No tracefs, or no hwlat tracer in it.
    #[error("the hwlat tracer is not available on this kernel ({0})")]
    NotAvailable(String),
    /// A tracefs file could not be read or written.
    #[error("{0}")]
    Tracefs(String),
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// The tracer is missing and the kernel's build configuration says it was not built.
    #[error(
        "{why}; {config} says CONFIG_HWLAT_TRACER is not set, so no tracefs mount gives it: a \
         kernel built with it is needed"
    )]
    NotBuilt {
        /// Why the tracer was not found.
        why: Box<HwlatError>,
        /// Where the build configuration was read.
        config: String,
    },
}

/// The tracefs files a run changes, in the order they are set (restored in reverse).
const TOUCHED: [&str; 5] = [
    "tracing_on",
    "current_tracer",
    "tracing_thresh",
    "hwlat_detector/window",
    "hwlat_detector/width",
];

/// The tracefs directory under `root` that offers the hwlat tracer; when it does not, the
/// error says which latency tracers the kernel has and the build option of each one missing.
pub(crate) fn find_tracefs(root: &SysRoot) -> Result<String, HwlatError> {
    let tracers = match tracers::read_root(root) {
        Avail::Available(tracers) => tracers,
        Avail::Unavailable { unavailable } => return Err(HwlatError::NotAvailable(unavailable)),
    };
    if !tracers.has("hwlat") {
        return Err(HwlatError::NotAvailable(format!(
            "CONFIG_HWLAT_TRACER not set: {}",
            tracers.describe()
        )));
    }
    Ok(tracers.dir)
}

/// [`find_tracefs`] on `session`'s machine; where the kernel's build configuration says
/// CONFIG_HWLAT_TRACER is not set, the error says so ([`HwlatError::NotBuilt`]).
pub(crate) fn find_tracer(session: &Session) -> Result<String, HwlatError> {
    find_tracefs(session.root()).map_err(|e| {
        let config = session.machine.kernel.config.get();
        match config.filter(|c| !c.enabled("CONFIG_HWLAT_TRACER")) {
            Some(c) => HwlatError::NotBuilt {
                why: Box::new(e),
                config: c.source.to_string(),
            },
            None => e,
        }
    })
}

/// The values of the touched files before the run, put back when dropped.
struct Saved<'r> {
    root: &'r SysRoot,
    dir: String,
    values: Vec<(&'static str, String)>,
}

impl Drop for Saved<'_> {
    fn drop(&mut self) {
        // The kernel refuses a width above the window at every write, so one order cannot put
        // back every pair of values: the second pass over the two sets what the first refused.
        for pass in 0..2 {
            for (file, value) in self.values.iter().rev() {
                if pass == 1 && !file.starts_with("hwlat_detector/") {
                    continue;
                }
                let _ = self
                    .root
                    .write_knob(&format!("{}/{file}", self.dir), value.as_bytes());
            }
        }
    }
}

/// The value to write back for a file as read (`current_tracer` reads `nop`; numbers read
/// with a newline).
fn restorable(text: &str) -> String {
    text.trim().to_string()
}

/// Runs the hwlat tracer of the session's machine for the request's duration (or until Ctrl-C
/// or the session's stop flag) and returns what it recorded; every tracefs file it touched is
/// restored before it returns. The tracer picks its CPUs itself: the session's are not used.
pub(crate) fn run(
    session: &Session,
    request: HwlatRequest,
) -> Result<Measurement<HwlatRun>, HwlatError> {
    let run = trace(session.root(), request, &session.stop)?;
    Ok(Measurement::new(session, METHOD, run))
}

/// How hwlat measures, in the result header.
pub(crate) const METHOD: &str = "the kernel's hwlat tracer: one CPU at a time spins with \
     interrupts off for width of every window reading the clock; gaps at or above the threshold \
     are recorded";

/// Runs the tracer under `root`, as [`run`] does, until `stop`.
fn trace(root: &SysRoot, config: HwlatRequest, stop: &StopFlag) -> Result<HwlatRun, HwlatError> {
    if config.width_us == 0 || config.width_us > config.window_us {
        return Err(HwlatError::Config(format!(
            "the width ({} µs) must be above zero and at most the window ({} µs)",
            config.width_us, config.window_us
        )));
    }
    let dir = find_tracefs(root)?;
    let path = |file: &str| format!("{dir}/{file}");
    let mut saved = Saved {
        root,
        dir: dir.clone(),
        values: Vec::new(),
    };
    for file in TOUCHED {
        let value = root
            .read(&path(file))
            .map_err(|e| HwlatError::Tracefs(e.to_string()))?;
        saved.values.push((file, restorable(&value)));
    }
    let write = |file: &str, value: String| {
        root.write_knob(&path(file), value.as_bytes())
            .map_err(|e| HwlatError::Tracefs(format!("{e} (writing tracefs needs root)")))
    };
    write("tracing_on", "0".into())?;
    write("current_tracer", "nop".into())?;
    write("tracing_thresh", config.threshold_us.to_string())?;
    // The kernel refuses a width above the window at every write: first a width that fits
    // both the old and the new window, then the window, then the width.
    let narrowest = config
        .width_us
        .min(current(root, &path("hwlat_detector/width")));
    write("hwlat_detector/width", narrowest.to_string())?;
    write("hwlat_detector/window", config.window_us.to_string())?;
    write("hwlat_detector/width", config.width_us.to_string())?;
    write("trace", String::new())?;
    write("current_tracer", "hwlat".into())?;
    write("tracing_on", "1".into())?;
    let started = std::time::Instant::now();
    let duration = Duration::from_nanos(config.duration_ns);
    while started.elapsed() < duration && !should_stop(stop) {
        std::thread::sleep(
            Duration::from_millis(100).min(duration.saturating_sub(started.elapsed())),
        );
    }
    write("tracing_on", "0".into())?;
    let elapsed = started.elapsed();
    let trace = root
        .read(&path("trace"))
        .map_err(|e| HwlatError::Tracefs(e.to_string()))?;
    drop(saved);
    let (samples, unparsed_lines) = parse_trace(&trace);
    Ok(HwlatRun {
        config,
        tracefs: dir.to_string(),
        elapsed_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        max_latency_us: samples.iter().map(HwlatSample::latency_us).max(),
        samples,
        unparsed_lines,
    })
}

/// A number file's value; 0 when unreadable.
fn current(root: &SysRoot, path: &str) -> u64 {
    root.read_value(path)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The hwlat samples of a `trace` file, and how many other non-comment lines it had. A sample
/// line reads `<task>-<pid> [<cpu>] <flags> <time>: #<seq> inner/outer(us): <i>/<o>
/// ts:<s.ns>` followed, on newer kernels, by `count:<n>` and on older ones by
/// `nmi-total:<ns> nmi-count:<n>`.
pub(crate) fn parse_trace(text: &str) -> (Vec<HwlatSample>, usize) {
    let mut samples = Vec::new();
    let mut unparsed = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_sample(line) {
            Some(sample) => samples.push(sample),
            None => unparsed += 1,
        }
    }
    (samples, unparsed)
}

fn parse_sample(line: &str) -> Option<HwlatSample> {
    let cpu = line
        .split_once('[')?
        .1
        .split_once(']')?
        .0
        .trim()
        .parse()
        .ok()?;
    let (_, rest) = line.split_once(": #")?;
    let mut words = rest.split_whitespace();
    let seq = words.next()?.parse().ok()?;
    if words.next()? != "inner/outer(us):" {
        return None;
    }
    let (inner, outer) = words.next()?.split_once('/')?;
    let mut sample = HwlatSample {
        seq,
        cpu,
        inner_us: inner.parse().ok()?,
        outer_us: outer.parse().ok()?,
        timestamp: String::new(),
        count: None,
        nmi_total_ns: None,
    };
    for word in words {
        if let Some(ts) = word.strip_prefix("ts:") {
            sample.timestamp = ts.to_string();
        } else if let Some(count) = word.strip_prefix("count:") {
            sample.count = count.parse().ok();
        } else if let Some(total) = word.strip_prefix("nmi-total:") {
            sample.nmi_total_ns = total.parse().ok();
        }
    }
    (!sample.timestamp.is_empty()).then_some(sample)
}

/// A tracefs under `tree` that offers `tracers` (a line of `available_tracers`), with the
/// files a run touches set as another tool left them (tracing on, the function tracer) and an
/// empty `trace`: a plain file, which the run clears as the kernel's is cleared.
#[cfg(test)]
pub(crate) fn fake_tracefs(tree: &crate::test_tree::TestTree, tracers: &str) {
    let d = "/sys/kernel/tracing";
    tree.write(&format!("{d}/available_tracers"), tracers);
    tree.write(&format!("{d}/tracing_on"), "1\n");
    tree.write(&format!("{d}/current_tracer"), "function\n");
    tree.write(&format!("{d}/tracing_thresh"), "0\n");
    tree.write(&format!("{d}/hwlat_detector/window"), "1000000\n");
    tree.write(&format!("{d}/hwlat_detector/width"), "500000\n");
    tree.write(&format!("{d}/trace"), "");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// A trace as the 5.x and 6.x kernels write it, with an older line (nmi fields) and a
    /// stray one.
    const TRACE: &str = "\
# tracer: hwlat
#
# entries-in-buffer/entries-written: 3/3   #P:8
#
#           TASK-PID     CPU#  ||||  TIMESTAMP  FUNCTION
#              | |         |   ||||     |         |
           <...>-1729    [001] d...   678.473449: #1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6
           <...>-1729    [004] d...   689.556542: #2     inner/outer(us):   16/9     ts:1581527494.889008092 count:1
           <...>-1729    [002] dn..   701.000001: #3     inner/outer(us):   10/27    ts:1581527506.332112000 nmi-total:4 nmi-count:1
something else
";

    #[test]
    fn samples_are_read_from_a_recorded_trace() {
        let (samples, unparsed) = parse_trace(TRACE);
        assert_eq!(unparsed, 1);
        assert_eq!(samples.len(), 3);
        assert_eq!(
            samples[0],
            HwlatSample {
                seq: 1,
                cpu: 1,
                inner_us: 11,
                outer_us: 12,
                timestamp: "1581527483.343962693".into(),
                count: Some(6),
                nmi_total_ns: None,
            }
        );
        assert_eq!(samples[2].latency_us(), 27);
        assert_eq!(samples[2].nmi_total_ns, Some(4));
    }

    fn tracefs(tree: &TestTree, tracers: &str) {
        fake_tracefs(tree, tracers);
        tree.write("/sys/kernel/tracing/trace", TRACE);
    }

    #[test]
    fn every_touched_option_is_restored_after_a_run() {
        let tree = TestTree::empty();
        tracefs(&tree, "hwlat function nop\n");
        let config = HwlatRequest {
            duration_ns: 1_000_000,
            window_us: 2_000_000,
            width_us: 100_000,
            threshold_us: 7,
        };
        let run = trace(&tree.root(), config, &StopFlag::new()).unwrap();
        assert_eq!(run.tracefs, "/sys/kernel/tracing");
        // A plain file stands in for the trace buffer: the run cleared it, as the kernel's
        // trace file is cleared by a truncating write.
        assert!(run.samples.is_empty());
        let read = |f: &str| {
            std::fs::read_to_string(tree.join(&format!("/sys/kernel/tracing/{f}"))).unwrap()
        };
        assert_eq!(read("tracing_on"), "1");
        assert_eq!(read("current_tracer"), "function");
        assert_eq!(read("tracing_thresh"), "0");
        assert_eq!(read("hwlat_detector/window"), "1000000");
        assert_eq!(read("hwlat_detector/width"), "500000");
    }

    /// The flags' durations in the tracer's units; a width above the window is refused with
    /// both flags, a threshold below 1 µs taken as 1 µs (0 would be the kernel's default).
    #[test]
    fn a_request_of_the_flags_refuses_a_width_above_the_window() {
        let ms = Duration::from_millis;
        let request = HwlatRequest::of(ms(2000), ms(1000), ms(500), Duration::ZERO).unwrap();
        let expected = HwlatRequest {
            duration_ns: 2_000_000_000,
            threshold_us: 1,
            ..HwlatRequest::default()
        };
        assert_eq!(request, expected);
        let err = HwlatRequest::of(ms(2000), ms(500), ms(501), ms(1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--width 501ms: must be at most --window (500ms)"
        );
    }

    #[test]
    fn a_kernel_without_the_tracer_says_so() {
        let tree = TestTree::empty();
        let err = trace(&tree.root(), HwlatRequest::default(), &StopFlag::new()).unwrap_err();
        assert!(err.to_string().contains("no tracefs"), "{err}");
        tracefs(&tree, "function nop\n");
        let err = trace(&tree.root(), HwlatRequest::default(), &StopFlag::new()).unwrap_err();
        assert!(
            err.to_string().contains("CONFIG_HWLAT_TRACER not set"),
            "{err}"
        );
        let bad = HwlatRequest {
            width_us: 2_000_000,
            ..HwlatRequest::default()
        };
        assert!(trace(&tree.root(), bad, &StopFlag::new()).is_err());
    }
}
