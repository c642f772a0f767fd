//! Which CPUs watch watches and which it runs on: the CPUs given, else the plan's isolated
//! CPUs, else the one rule of the CPUs that matter (`audit::partition::measured_cpus`: the
//! kernel's isolated CPUs, else every CPU but the first); the rest of the online CPUs are the
//! housekeeping ones watch pins itself to. The machine they are chosen on is read here too,
//! the way watch can afford ([`read_machine`]).

use thiserror::Error;

use crate::audit::partition::{self, MeasuredCpus};
use crate::audit::profile::Profile;
use crate::machine::{CpuSet, Machine, ReadOptions};
use crate::sysroot::SysRoot;
use crate::tuning::partition::PartitionError;

/// The machine as watch reads it before it starts, once: to check the plan and choose the CPUs
/// ([`choose`]); with a plan, the part of it verify's comparisons need is kept (see
/// `drift::PlanWatch`). Without the interrupts (checking settings against a plan does not need
/// them, and on a large machine their table is tens of megabytes), and on this thread: watch
/// runs beside the production work on the housekeeping CPUs, and threads of its own would keep
/// their memory arenas for as long as it runs.
pub(crate) fn read_machine(root: &SysRoot) -> Machine {
    Machine::read_with(
        root,
        ReadOptions {
            interrupts: false,
            threads: 1,
        },
    )
}

/// The CPUs a watch is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Targets {
    /// The CPUs watched (the isolated ones).
    pub isolated: CpuSet,
    /// The online CPUs not watched, where watch itself runs.
    pub housekeeping: CpuSet,
    /// Why these CPUs, when neither the user nor a plan named them (the rule's reason).
    pub chosen_because: Option<String>,
}

/// Why no CPUs can be watched.
#[derive(Debug, Error)]
pub(crate) enum TargetError {
    /// The machine's partition could not be read.
    #[error("the partition: {0}")]
    Partition(#[from] PartitionError),
    /// The list of CPUs to watch is empty.
    #[error("nothing to watch: the isolated CPU list is empty; give --isolated LIST")]
    Empty,
    /// Some CPUs to watch are not online.
    #[error("--isolated {isolated}: CPUs {offline} are not online (online: {online})")]
    Offline {
        /// The CPUs to watch, as a list.
        isolated: String,
        /// Those of them not online, as a list.
        offline: String,
        /// The online CPUs, as a list.
        online: String,
    },
    /// Every online CPU would be watched, leaving none to run on.
    #[error(
        "--isolated {0}: every online CPU is isolated, so watch has no housekeeping CPU to run on"
    )]
    NoHousekeeping(String),
}

/// Chooses the watched CPUs: `requested` (`--isolated`), else `planned` (the plan's isolated
/// CPUs), else the rule of the CPUs that matter on `machine`, with a site `profile`'s
/// `[partition]` taken for the machine's (as `lowlat check` measures).
pub(crate) fn choose(
    machine: &Machine,
    requested: Option<&CpuSet>,
    planned: Option<&CpuSet>,
    profile: Option<&Profile>,
) -> Result<Targets, TargetError> {
    let online = machine.topology.online_cpus();
    let (isolated, chosen_because) = match requested.or(planned) {
        Some(cpus) => (cpus.clone(), None),
        None => {
            // Watch runs beside these CPUs, not on them, so its own affinity does not narrow
            // them: every online CPU counts as allowed.
            let partition = match profile {
                Some(profile) => crate::audit::site::choose_partition(machine, None, profile)?,
                None => partition::choose(machine, None)?,
            };
            let MeasuredCpus { cpus, why } =
                partition::measured_cpus(&partition, &online, &online, None);
            (cpus, Some(why))
        }
    };
    if isolated.is_empty() {
        return Err(TargetError::Empty);
    }
    if !isolated.is_subset(&online) {
        return Err(TargetError::Offline {
            isolated: isolated.to_list(),
            offline: isolated.difference(&online).to_list(),
            online: online.to_list(),
        });
    }
    let housekeeping = online.difference(&isolated);
    if housekeeping.is_empty() {
        return Err(TargetError::NoHousekeeping(isolated.to_list()));
    }
    Ok(Targets {
        isolated,
        housekeeping,
        chosen_because,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    /// A machine of `cpus` online single-thread cores, with `cmdline`.
    fn machine(cpus: &str, cmdline: &str) -> Machine {
        let tree = TestTree::empty();
        tree.write("/sys/devices/system/cpu/possible", format!("{cpus}\n"));
        tree.write("/sys/devices/system/cpu/online", format!("{cpus}\n"));
        for cpu in CpuSet::parse_list(cpus).unwrap().iter() {
            let topology = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
            tree.write(&format!("{topology}/physical_package_id"), "0\n");
            tree.write(&format!("{topology}/core_id"), format!("{cpu}\n"));
            tree.write(
                &format!("{topology}/thread_siblings_list"),
                format!("{cpu}\n"),
            );
        }
        tree.write("/proc/cmdline", format!("{cmdline}\n"));
        Machine::read(&tree.root())
    }

    fn set(list: &str) -> CpuSet {
        CpuSet::parse_list(list).unwrap()
    }

    #[test]
    fn the_flag_then_the_plan_then_the_rule() {
        let machine = machine("0-3", "isolcpus=2-3");
        let flag = choose(&machine, Some(&set("1")), Some(&set("2")), None).unwrap();
        assert_eq!(
            (flag.isolated, flag.housekeeping, flag.chosen_because),
            (set("1"), set("0,2-3"), None)
        );
        let planned = choose(&machine, None, Some(&set("2")), None).unwrap();
        assert_eq!(planned.isolated, set("2"));
        let rule = choose(&machine, None, None, None).unwrap();
        assert_eq!(rule.isolated, set("2-3"));
        assert!(
            rule.chosen_because
                .as_deref()
                .unwrap()
                .contains("isolcpus="),
            "{rule:?}"
        );
        // Nothing isolated: every CPU but the first, said.
        let rule = choose(&self::machine("0-3", "quiet"), None, None, None).unwrap();
        assert_eq!(rule.isolated, set("1-3"));
        assert_eq!(
            rule.chosen_because.as_deref(),
            Some("nothing is isolated: every CPU but the first")
        );
    }

    /// Issue 45: `watch --profile FILE` watches the site's partition where neither
    /// `--isolated` nor a plan names the CPUs, saying where it comes from.
    #[test]
    fn a_site_profiles_partition_comes_before_the_machines() {
        let machine = machine("0-3", "isolcpus=2-3");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("site.toml");
        std::fs::write(
            &file,
            "extends = \"low-latency\"\n[partition]\nhousekeeping = \"0\"\n",
        )
        .unwrap();
        let profile = crate::audit::site::load(&file).unwrap();
        let site = choose(&machine, None, None, Some(&profile)).unwrap();
        assert_eq!(site.isolated, set("1-3"));
        let why = site.chosen_because.unwrap();
        assert!(why.contains("site.toml:3"), "{why}");
        // The flag and the plan still win.
        let flag = choose(&machine, Some(&set("1")), None, Some(&profile)).unwrap();
        assert_eq!(flag.isolated, set("1"));
    }

    #[test]
    fn lists_that_leave_nothing_to_watch_or_nowhere_to_run_are_refused() {
        let machine = machine("0-3", "quiet");
        let said = |requested: &str| {
            choose(&machine, Some(&set(requested)), None, None)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            said(""),
            "nothing to watch: the isolated CPU list is empty; give --isolated LIST"
        );
        assert_eq!(
            said("9"),
            "--isolated 9: CPUs 9 are not online (online: 0-3)"
        );
        assert!(said("0-3").contains("every online CPU is isolated"));
        // A single-CPU machine has nothing to watch from: every CPU but the first is none.
        let single = choose(&self::machine("0", "quiet"), None, None, None).unwrap_err();
        assert!(
            single.to_string().contains("no housekeeping CPU"),
            "{single}"
        );
    }
}
