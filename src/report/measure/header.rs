//! What every engine's result says before its figures: how it measured, whether Ctrl-C cut
//! it short, what the reader must know, at which priority and on which CPUs. Loop engines
//! (jitter, timer) and hardware engines (membw, memlat, c2c, wakeup, freq) share it; the
//! engine's figures follow in the same object.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::machine::CpuSet;

/// The fields every engine's result starts with.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ResultHeader {
    /// One sentence saying how the numbers were measured.
    pub method: Cow<'static, str>,
    /// True when Ctrl-C stopped the run early; the figures hold what was measured until then.
    pub interrupted: bool,
    /// Notes a reader must know (rules bent, sources unavailable, garbled counters).
    pub warnings: Vec<String>,
    /// SCHED_FIFO priority of the measuring threads (`null`: normal scheduling).
    pub priority: Option<u8>,
    /// The CPUs measured, in the kernel's list form (`2-3,6`).
    pub measured_cpus: CpuSet,
}

/// An engine's result: the [`ResultHeader`], then the engine's own fields flattened in.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Measured<T> {
    /// How, whether cut short, notes, priority and CPUs.
    #[serde(flatten)]
    pub header: ResultHeader,
    /// The engine's figures; their field names carry the units.
    #[serde(flatten)]
    pub figures: T,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Figures {
        latency_ns: f64,
    }

    #[test]
    fn header_and_figures_share_one_object() {
        let measured = Measured {
            header: ResultHeader {
                method: "ping-pong".into(),
                interrupted: true,
                warnings: vec!["a note".to_string()],
                priority: Some(95),
                measured_cpus: [2, 3].into_iter().collect(),
            },
            figures: Figures { latency_ns: 21.5 },
        };
        let json = serde_json::to_value(&measured).unwrap();
        assert_eq!(json["method"], "ping-pong");
        assert_eq!(json["interrupted"], true);
        assert_eq!(json["warnings"][0], "a note");
        assert_eq!(json["priority"], 95);
        assert_eq!(json["measured_cpus"], "2-3");
        assert_eq!(json["latency_ns"], 21.5);
    }
}
