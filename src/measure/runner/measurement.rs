//! What every hardware engine returns: its figures finished, with how it measured, the
//! warnings a reader of them must know and whether they are whole, so that the printers and
//! the command line take the result as it is and add nothing to it.

use crate::measure::runner::session::Session;
use crate::units::bytes;

/// A finished measurement: the engine's figures and what its result header says of them.
#[derive(Debug)]
pub(crate) struct Measurement<R> {
    /// How the figures were measured, one sentence (the engine's `METHOD`).
    pub method: &'static str,
    /// What a reader of the figures must know, in the order found.
    pub warnings: Vec<Warning>,
    /// Whether the engine's own figures are whole: validated (membw), ended as asked (net).
    /// An interruption is said by `interrupted`.
    pub complete: bool,
    /// Whether Ctrl-C (or the session's stop flag) cut the run short; the figures hold what
    /// was measured until then.
    pub interrupted: bool,
    /// The figures.
    pub figures: R,
}

impl<R> Measurement<R> {
    /// `figures` measured on `session` by `method`, just ended: with the session's own warning
    /// (memory not locked where the engine needs it) and whether the run was cut short;
    /// complete until the engine says otherwise.
    pub(crate) fn new(session: &Session, method: &'static str, figures: R) -> Self {
        Self {
            method,
            warnings: memory_warning(session).into_iter().collect(),
            complete: true,
            interrupted: session.interrupted(),
            figures,
        }
    }

    /// Whether the measurement is complete and was not cut short: exit 0.
    pub(crate) fn whole(&self) -> bool {
        self.complete && !self.interrupted
    }

    /// The warnings as the result header and the terminal write them.
    pub(crate) fn warning_lines(&self) -> Vec<String> {
        self.warnings.iter().map(ToString::to_string).collect()
    }
}

/// A memory engine's request refused by its sizing, said with the flag of the request behind
/// it: `membw: --threads 9: only 4 CPUs are chosen`, or, where the refusal says what to do
/// instead, `--load 9: …; give --load 3 at most, or more --cpus`.
#[derive(Debug)]
pub(crate) struct SizingRefused<E> {
    /// The engine (`membw`).
    pub engine: &'static str,
    /// The flag behind the refusal, with its value, when one is.
    pub flag: Option<String>,
    /// What to do instead, where the refusal says more than its flag.
    pub hint: Option<String>,
    /// The refusal (boxed: a sizing error is large beside the sizing).
    pub error: Box<E>,
}

impl<E: std::fmt::Display> std::fmt::Display for SizingRefused<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (engine, error) = (self.engine, &self.error);
        match (&self.flag, &self.hint) {
            (Some(flag), Some(hint)) => write!(f, "{flag}: {error}; {hint}"),
            (Some(flag), None) => write!(f, "{engine}: {flag}: {error}"),
            (None, _) => write!(f, "{engine}: {error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for SizingRefused<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.error)
    }
}

/// The warning of a run on `session` when the engine needed memory locked and it could not
/// be, with the first cause found.
fn memory_warning(session: &Session) -> Option<Warning> {
    if !session.memory_unlocked() {
        return None;
    }
    let mut reader = crate::machine::Reader::new(session.root());
    let causes = crate::machine::rt_permission::mlock_refusal_causes(&mut reader, "self");
    Some(Warning::MemoryNotLocked {
        why: causes.into_iter().next(),
    })
}

/// Something a reader of a measurement's figures must know: a rule bent, a source
/// unavailable, a figure that holds more than it says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Warning {
    /// The engine needed its memory locked (mlockall) and it could not be.
    #[error("memory could not be locked (mlockall){}: page faults may add noise", why.as_ref().map_or(String::new(), |why| format!(" ({why})")))]
    MemoryNotLocked {
        /// The first cause found (a limit, a missing capability), when one was.
        why: Option<String>,
    },
    /// membw: the cache sizes are unknown, so the arrays have stream.c's default size.
    #[error(
        "cache sizes unknown (no /sys/devices/system/cpu/cpu*/cache): arrays sized by \
         stream.c's default of 10,000,000 elements"
    )]
    CacheSizesUnknown,
    /// membw: the arrays asked for (`--size`, the only way below the rule) are smaller than
    /// STREAM's rule.
    #[error(
        "--size {} is below STREAM's rule of 4 × {} of cache = {} per array: caches may \
         inflate the rates",
        bytes(*.array_bytes), bytes(*.total_cache_bytes), bytes(*.rule_bytes)
    )]
    ArraysBelowRule {
        /// Bytes per array asked for.
        array_bytes: u64,
        /// All cache of the machine, bytes.
        total_cache_bytes: u64,
        /// STREAM's rule for one array, bytes.
        rule_bytes: u64,
    },
    /// A warning the engine's figures carry in their own words (membw's kernels timed under
    /// STREAM's 1 ms).
    #[error("{0}")]
    Figures(String),
    /// c2c: pairs ran on CPUs other tasks shared (a thread of the pair waited at least 1 % of
    /// its run).
    #[error(
        "{shared} of {pairs} pairs ran on CPUs other tasks shared (up to {worst_percent:.0} % \
         of a pair's time): their latencies include the time those tasks ran"
    )]
    PairsShared {
        /// Pairs that did.
        shared: usize,
        /// Pairs measured.
        pairs: usize,
        /// The largest share of a pair's time another task took, %.
        worst_percent: f64,
    },
    /// net: the client and the echo ran on one CPU.
    #[error(
        "the client and the echo share CPU {cpu}: each round trip includes a context switch; \
         give them two CPUs"
    )]
    ClientAndEchoShareCpu {
        /// The CPU.
        cpu: u32,
    },
    /// A loop engine (jitter, timer): a problem met reading the counters around the run.
    #[error("{0}")]
    Counters(crate::machine::Warning),
    /// A loop engine: a measured CPU other tasks shared during the run, in the sentence
    /// [`crate::measure::runner::attribution::CpuAttribution::shared_warning`] says it.
    #[error("{0}")]
    CpuShared(String),
    /// net: the echo was not pinned (one CPU given).
    #[error("the echo is not pinned (one CPU given): give a second CPU in --cpus or --echo-cpu")]
    EchoNotPinned,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_read_as_they_always_did() {
        let w = Warning::MemoryNotLocked { why: None };
        assert_eq!(
            w.to_string(),
            "memory could not be locked (mlockall): page faults may add noise"
        );
        let w = Warning::MemoryNotLocked {
            why: Some("RLIMIT_MEMLOCK is 8 MiB".into()),
        };
        assert_eq!(
            w.to_string(),
            "memory could not be locked (mlockall) (RLIMIT_MEMLOCK is 8 MiB): page faults may \
             add noise"
        );
        let w = Warning::ArraysBelowRule {
            array_bytes: 16 << 20,
            total_cache_bytes: 1 << 20,
            rule_bytes: 4 << 20,
        };
        assert!(
            w.to_string()
                .starts_with("--size 16 MiB is below STREAM's rule of 4 × 1 MiB of cache"),
            "{w}"
        );
        let w = Warning::PairsShared {
            shared: 2,
            pairs: 6,
            worst_percent: 12.4,
        };
        assert_eq!(
            w.to_string(),
            "2 of 6 pairs ran on CPUs other tasks shared (up to 12 % of a pair's time): their \
             latencies include the time those tasks ran"
        );
    }
}
