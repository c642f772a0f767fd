//! The OS's side of a BIOS check, after the reset: what the running kernel shows of a setting
//! the BMC says is current (SMT from the threads per core, boost from cpufreq). A BMC can report
//! a value that never took effect (a job that never ran, a setting another one overrides); this
//! is how lowlat finds out.

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::machine::power::BoostState;

/// What the OS shows of one intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InBand {
    /// The intent (`smt`).
    pub intent: String,
    /// The value the OS shows, in the intent's words (`on`, `off`).
    pub seen: String,
    /// What it was read from, and how.
    pub observed: String,
    /// Whether it is the value wanted.
    pub agrees: bool,
}

/// The OS's view of `intent`=`wanted` on `machine`; `None` for an intent the OS cannot show,
/// or when the files it would be read from are missing.
pub fn check(machine: &Machine, intent: &str, wanted: &str) -> Option<InBand> {
    let (seen, observed) = match intent {
        "smt" => {
            let threads = machine.topology.shape.threads_per_core;
            if machine.topology.cpus.is_empty() {
                return None;
            }
            let seen = if threads > 1 { "on" } else { "off" };
            (
                seen,
                format!(
                    "{threads} thread(s) per core (/sys/devices/system/cpu/cpu*/topology/thread_siblings_list)"
                ),
            )
        }
        "boost" => {
            let boost = machine.power.boost.get()?;
            let seen = match boost.state {
                BoostState::Enabled => "on",
                BoostState::Disabled => "off",
                BoostState::Mixed => "mixed",
            };
            (seen, format!("boost {seen} ({})", boost.source))
        }
        _ => return None,
    };
    Some(InBand {
        intent: intent.to_string(),
        seen: seen.to_string(),
        observed,
        agrees: seen == wanted,
    })
}
