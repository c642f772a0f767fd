//! The OS's side of a BIOS check, after the reset: what the running kernel shows of a setting
//! the BMC says is current (SMT from the threads per core, boost from cpufreq, core C-states
//! from the cpuidle states the firmware exposes, NPS from the NUMA nodes per socket). A BMC can report
//! a value that never took effect (a job that never ran, a setting another one overrides); this
//! is how lowlat finds out.

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::machine::power::{BoostState, IdleState};

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
pub(crate) fn check(machine: &Machine, intent: &str, wanted: &str) -> Option<InBand> {
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
        "core-cstates" => {
            let deeper = deeper_idle_states(machine)?;
            let seen = if deeper.is_empty() { "off" } else { "on" };
            let observed = if deeper.is_empty() {
                "no enabled idle state deeper than C1 (/sys/devices/system/cpu/cpu*/cpuidle)"
                    .to_string()
            } else {
                format!(
                    "enabled idle states deeper than C1: {} (/sys/devices/system/cpu/cpu*/cpuidle)",
                    deeper.join(", ")
                )
            };
            (seen, observed)
        }
        "nps" => {
            let nodes = machine.topology.shape.nodes_per_socket?;
            (
                match nodes {
                    1 => "1",
                    2 => "2",
                    4 => "4",
                    _ => "other",
                },
                format!("{nodes} NUMA node(s) per socket (/sys/devices/system/node)"),
            )
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

/// The names of the enabled idle states deeper than C1 on any CPU, sorted; `None` when no CPU
/// lists its idle states. With core C-states off in the BIOS the firmware exposes none.
fn deeper_idle_states(machine: &Machine) -> Option<Vec<String>> {
    let mut listed = false;
    let mut deeper = std::collections::BTreeSet::new();
    for cpu in &machine.power.cpus {
        let Some(states) = cpu.idle_states.get() else {
            continue;
        };
        listed = true;
        deeper.extend(states.iter().filter_map(deeper_than_c1));
    }
    listed.then(|| deeper.into_iter().collect())
}

/// The name of `state` when it is enabled and deeper than C1 (neither POLL nor C1; C1E counts
/// as deeper: "no C-states" in a BIOS turns it off too).
fn deeper_than_c1(state: &IdleState) -> Option<String> {
    let name = state.name.get()?;
    let enabled = state.disabled.get().is_none_or(|disabled| !disabled);
    (enabled && !matches!(name.as_str(), "POLL" | "C1")).then(|| name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    fn machine(name: &str) -> Machine {
        Machine::read(&TestTree::fixture(name).root())
    }

    #[test]
    fn core_cstates_are_off_when_the_firmware_exposes_nothing_deeper_than_c1() {
        let off = check(&machine("milan64-nps4-smt"), "core-cstates", "off").unwrap();
        assert!(off.agrees, "{off:?}");
        assert!(
            off.observed
                .starts_with("no enabled idle state deeper than C1")
        );
        let on = check(&machine("xeon-2s-smt"), "core-cstates", "off").unwrap();
        assert_eq!(on.seen, "on");
        assert!(!on.agrees);
        assert!(on.observed.contains("C1E, C6"), "{}", on.observed);
    }

    #[test]
    fn a_disabled_deep_state_does_not_count() {
        let tree = TestTree::fixture("epyc7f32-2s");
        let cpus = machine("epyc7f32-2s").topology.cpus.len();
        for cpu in 0..cpus {
            tree.write(
                &format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state2/disable"),
                "1\n",
            );
        }
        let seen = check(&Machine::read(&tree.root()), "core-cstates", "off").unwrap();
        assert!(seen.agrees, "{seen:?}");
    }

    #[test]
    fn nps_is_the_numa_nodes_per_socket() {
        let nps4 = check(&machine("milan64-nps4-smt"), "nps", "4").unwrap();
        assert!(nps4.agrees, "{nps4:?}");
        let nps1 = check(&machine("epyc7f32-2s"), "nps", "4").unwrap();
        assert_eq!(nps1.seen, "1");
        assert!(!nps1.agrees);
    }
}
