//! Runtime isolation (`plan --isolation runtime|both`): the cpusets that keep the isolated
//! CPUs free of every movable task without a reboot.
//!
//! cgroup v1 (the arrangement `cset shield` makes, built here from its description): every
//! existing cpuset limited to the housekeeping CPUs (deepest first, a child's CPUs staying
//! within its parent's), a housekeeping cpuset on those CPUs, an isolated cpuset with
//! `cpu_exclusive=1` and `sched_load_balance=0`, every movable thread of the root cpuset moved
//! into the housekeeping one (its children are born there), and load balancing off at the root
//! so that the isolated CPUs form no scheduler domain. cgroup v2: an isolated partition
//! (`cpuset.cpus.partition=isolated`) takes the isolated CPUs from every other cgroup; a
//! top-level cgroup whose own `cpuset.cpus` names one of them is limited to the housekeeping
//! CPUs first (through an `AllowedCPUs=` drop-in as well where systemd manages the slice, so
//! that systemd keeps the value).

use super::{Draft, Inputs, PlanError, setting};
use crate::machine::capabilities::Capabilities;
use crate::machine::cgroup_cpuset::{CgroupVersion, CpusetTree, Manager};
use crate::machine::{Avail, CpuSet};
use crate::tuning::runtime_isolation::{HOUSEKEEPING, ISOLATED, LIMITS, stays_in_root};
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::{CpusetAttribute, SettingId};

/// Where the arrangement comes from, cited in each setting.
const SOURCE: &str = "Linux admin-guide/cgroup-v1/cpusets (cpu_exclusive, sched_load_balance); cset shield's arrangement";
/// The source of the v2 settings.
const SOURCE_V2: &str = "Linux admin-guide/cgroup-v2 (cpuset.cpus.partition)";

/// The most unmovable kernel threads named in the plan; the rest are counted.
const NAMED: usize = 8;

fn cpuset_setting(
    path: &str,
    attribute: CpusetAttribute,
    value: String,
    why: &str,
    source: &str,
) -> Setting {
    setting(
        SettingId::Cpuset {
            path: path.to_string(),
            attribute,
        },
        value,
        Layer::Runtime,
        why,
        source,
    )
}

/// Adds the cpuset settings of runtime isolation. A tree the kubelet manages is refused; a
/// machine without a cpuset controller gets the settings skipped, with the reason.
pub(crate) fn plan(inputs: &Inputs, draft: &mut Draft) -> Result<(), PlanError> {
    let hk = &inputs.partition.housekeeping;
    let iso = &inputs.partition.isolated;
    let read = match inputs.machine.cpusets.as_ref() {
        Some(Avail::Available(tree)) => Ok(tree),
        Some(Avail::Unavailable { unavailable }) => {
            let layout = Capabilities::of(inputs.machine)
                .cgroup
                .map(|layout| format!(" ({})", layout.name()))
                .unwrap_or_default();
            Err(format!(
                "no runtime isolation: {unavailable}{layout}; isolate at boot instead \
                 (`lowlat plan --isolation boot`)"
            ))
        }
        None => Err("no runtime isolation: the cpuset hierarchy was not read".to_string()),
    };
    let tree = match read {
        Ok(tree) => tree,
        Err(reason) => {
            draft.skip(
                cpuset_setting(
                    ISOLATED,
                    CpusetAttribute::Cpus,
                    iso.to_list(),
                    "The isolated CPUs in a cpuset of their own.",
                    SOURCE,
                ),
                reason,
            );
            return Ok(());
        }
    };
    if let Manager::Kubelet { cgroup } = &tree.manager {
        return Err(PlanError::ManagedTree(format!(
            "the kubelet manages the cpusets ({} {}): runtime isolation would fight its cpu manager; isolate with the kubelet's own reservedSystemCPUs and the static cpu manager policy (`lowlat plan` renders them for Kubernetes), or plan --isolation boot",
            tree.version.name(),
            cgroup
        )));
    }
    match tree.version {
        CgroupVersion::V1 => plan_v1(tree, hk, iso, draft),
        CgroupVersion::V2 => plan_v2(tree, hk, iso, draft),
    }
    note_unmovable(inputs, tree, draft);
    Ok(())
}

/// Every cpuset but lowlat's own whose CPUs include an isolated one, deepest first, limited to
/// what it has of the housekeeping CPUs (all of them when it has none).
fn limit_others(
    tree: &CpusetTree,
    hk: &CpuSet,
    iso: &CpuSet,
    source: &str,
    draft: &mut Draft,
) -> Vec<String> {
    let mut limited = Vec::new();
    for group in tree.deepest_first() {
        if group.path == HOUSEKEEPING || group.path == ISOLATED {
            continue;
        }
        let Some(cpus) = group.cpus.as_ref().filter(|c| c.intersects(iso)) else {
            continue;
        };
        let kept = cpus.difference(iso);
        let kept = if kept.is_empty() { hk.clone() } else { kept };
        draft.add(cpuset_setting(
            &group.path,
            CpusetAttribute::Cpus,
            kept.to_list(),
            &format!(
                "An existing cpuset limited to housekeeping CPUs: its tasks leave the isolated CPUs (it had {}).",
                cpus.to_list()
            ),
            source,
        ));
        limited.push(group.path.clone());
    }
    limited
}

fn plan_v1(tree: &CpusetTree, hk: &CpuSet, iso: &CpuSet, draft: &mut Draft) {
    limit_others(tree, hk, iso, SOURCE, draft);
    draft.add(cpuset_setting(
        HOUSEKEEPING,
        CpusetAttribute::Cpus,
        hk.to_list(),
        "The housekeeping cpuset: every movable task and kernel thread runs here, and what they start is born here.",
        SOURCE,
    ));
    draft.add(cpuset_setting(
        ISOLATED,
        CpusetAttribute::Cpus,
        iso.to_list(),
        "The isolated cpuset: only what is started in it (`lowlat run`) runs on these CPUs.",
        SOURCE,
    ));
    draft.add(cpuset_setting(
        ISOLATED,
        CpusetAttribute::CpuExclusive,
        "1".into(),
        "No other cpuset may share the isolated CPUs.",
        SOURCE,
    ));
    draft.add(cpuset_setting(
        ISOLATED,
        CpusetAttribute::SchedLoadBalance,
        "0".into(),
        "The scheduler does not balance load onto or across the isolated CPUs.",
        SOURCE,
    ));
    draft.add(cpuset_setting(
        HOUSEKEEPING,
        CpusetAttribute::Tasks,
        "/".into(),
        "Every movable thread of the root cpuset moves to the housekeeping cpuset (each one's cpuset and affinity journaled first).",
        SOURCE,
    ));
    draft.add(cpuset_setting(
        "/",
        CpusetAttribute::SchedLoadBalance,
        "0".into(),
        "Load balancing off at the root, so that the isolated CPUs form no scheduler domain with the housekeeping ones.",
        SOURCE,
    ));
}

fn plan_v2(tree: &CpusetTree, hk: &CpuSet, iso: &CpuSet, draft: &mut Draft) {
    let limited = limit_others(tree, hk, iso, SOURCE_V2, draft);
    if tree.manager == Manager::Systemd {
        // Every top-level slice keeps to the housekeeping CPUs through systemd, so that the
        // partition never has to take CPUs a slice names.
        let slices = tree
            .groups
            .iter()
            .filter(|g| g.path.matches('/').count() == 1 && g.path.ends_with(".slice"));
        for slice in slices {
            if !limited.contains(&slice.path) {
                draft.add(cpuset_setting(
                    &slice.path,
                    CpusetAttribute::Cpus,
                    hk.to_list(),
                    "A slice systemd manages, limited to the housekeeping CPUs now (its drop-in keeps it so).",
                    SOURCE_V2,
                ));
            }
            let unit = slice.path.trim_start_matches('/');
            draft.add(setting(
                SettingId::File(format!("/etc/systemd/system/{unit}.d/50-lowlat-allowed-cpus.conf")),
                format!("# lowlat: runtime isolation keeps {unit} on the housekeeping CPUs.\n[Slice]\nAllowedCPUs={}\n", hk.to_list()),
                Layer::File,
                "systemd manages this slice's cpuset: AllowedCPUs= makes it keep the housekeeping CPUs that lowlat writes now.",
                "systemd.resource-control(5) AllowedCPUs=",
            ));
        }
    }
    draft.add(cpuset_setting(
        ISOLATED,
        CpusetAttribute::Cpus,
        iso.to_list(),
        "The isolated CPUs, which the partition takes from every other cgroup.",
        SOURCE_V2,
    ));
    draft.add(cpuset_setting(
        ISOLATED,
        CpusetAttribute::Partition,
        "isolated".into(),
        "An isolated partition: no other cgroup's tasks run on its CPUs, and the scheduler does not balance load there (each task's affinity is journaled first).",
        SOURCE_V2,
    ));
}

/// Names the kernel threads of the root cpuset that cannot leave it.
fn note_unmovable(inputs: &Inputs, tree: &CpusetTree, draft: &mut Draft) {
    let Some(tasks) = inputs.machine.tasks.get() else {
        return;
    };
    let in_root = tree.root().map(|r| r.tasks.as_slice()).unwrap_or_default();
    let stuck: Vec<&str> = tasks
        .tasks
        .iter()
        .filter(|t| {
            stays_in_root(t.kernel_thread, t.affinity_locked, &t.comm)
                && in_root.binary_search(&t.pid).is_ok()
        })
        .map(|t| t.comm.as_str())
        .collect();
    if stuck.is_empty() || tree.version == CgroupVersion::V2 {
        return;
    }
    let mut named = stuck
        .iter()
        .take(NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if stuck.len() > NAMED {
        named.push_str(&format!(" and {} more", stuck.len() - NAMED));
    }
    draft.unmovable(
        format!("{} kernel threads stay in the root cpuset ({named})", stuck.len()),
        "the kernel keeps kthreadd and every PF_NO_SETAFFINITY thread in the root cpuset: per-CPU threads stay on their CPU, unbound workqueue workers follow the workqueue cpumask and new kernel threads kthreadd's affinity, which the plan sets to the housekeeping CPUs",
    );
}

/// The lines of the plan's summary on what runtime isolation cannot do.
pub(crate) fn limits() -> Vec<String> {
    LIMITS
        .iter()
        .map(|(what, boot)| format!("{what}: {boot}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::cgroup_cpuset::fixtures;
    use crate::machine::{Machine, Reader, cgroup_cpuset};
    use crate::plan::request::{Isolation, PlanRequest};
    use crate::plan::{Plan, build};
    use crate::test_tree::TestTree;

    /// The plan of the 2-CPU KVM guest isolating CPU 1 at run time, with the cpuset tree of
    /// `tree`.
    fn plan_with(tree: &TestTree, isolation: Isolation) -> Result<Plan, PlanError> {
        let guest = TestTree::fixture("kvm-guest-2vcpu");
        let mut machine = Machine::read(&guest.root());
        let root = tree.root();
        machine.cpusets = Some(cgroup_cpuset::read(&mut Reader::new(&root)));
        let mut request = PlanRequest::default();
        request.partition.isolate = Some(CpuSet::parse_list("1").unwrap());
        request.options.isolation = isolation;
        build(&machine, &request, |_| Vec::new())
    }

    fn cpuset_settings(plan: &Plan) -> Vec<String> {
        plan.settings
            .iter()
            .filter(|s| s.id.family() == "cpuset" || s.id.to_string().contains("lowlat-allowed"))
            .map(|s| format!("{} = {}", s.id, s.value.lines().last().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn v1_makes_the_shield_and_limits_every_other_cpuset_deepest_first() {
        let plan = plan_with(&fixtures::v1(), Isolation::Runtime).unwrap();
        assert_eq!(
            cpuset_settings(&plan),
            [
                "cpuset:/libpod_parent/conmon:cpus = 0",
                "cpuset:/libpod_parent:cpus = 0",
                "cpuset:/lowlat-housekeeping:cpus = 0",
                "cpuset:/lowlat-isolated:cpus = 1",
                "cpuset:/lowlat-isolated:cpu_exclusive = 1",
                "cpuset:/lowlat-isolated:sched_load_balance = 0",
                "cpuset:/lowlat-housekeeping:tasks = /",
                "cpuset:/:sched_load_balance = 0",
            ]
        );
        // No kernel argument: each is left out, saying why.
        assert!(plan.settings.iter().all(|s| s.layer != Layer::Boot));
        let nohz = plan
            .skipped
            .iter()
            .find(|s| s.setting.id == "cmdline:nohz_full")
            .unwrap();
        assert!(
            nohz.reason.contains("--isolation runtime"),
            "{}",
            nohz.reason
        );
        // The IRQ and kernel-thread settings stay.
        assert!(plan.setting(&SettingId::Workqueue(None)).is_some());
        // Runtime isolation records itself in plan.json, and reads back.
        let back = Plan::from_json(&plan.to_json()).unwrap();
        assert_eq!(back.options.isolation, Isolation::Runtime);
        assert!(plan.to_json().contains("\"isolation\": \"runtime\""));
    }

    #[test]
    fn both_keeps_the_kernel_arguments_and_boot_plans_no_cpuset() {
        let both = plan_with(&fixtures::v1(), Isolation::Both).unwrap();
        assert!(
            both.setting(&SettingId::Cmdline("nohz_full".into()))
                .is_some()
        );
        assert_eq!(cpuset_settings(&both).len(), 8);
        let boot = plan_with(&fixtures::v1(), Isolation::Boot).unwrap();
        assert!(cpuset_settings(&boot).is_empty());
        assert!(
            !boot.to_json().contains("isolation"),
            "plan.json of boot plans unchanged"
        );
    }

    #[test]
    fn v2_under_systemd_makes_an_isolated_partition_and_keeps_slices_off_it() {
        let plan = plan_with(&fixtures::v2(), Isolation::Runtime).unwrap();
        assert_eq!(
            cpuset_settings(&plan),
            [
                "cpuset:/system.slice:cpus = 0",
                "cpuset:/user.slice:cpus = 0",
                "cpuset:/lowlat-isolated:cpus = 1",
                "cpuset:/lowlat-isolated:partition = isolated",
                "file:/etc/systemd/system/system.slice.d/50-lowlat-allowed-cpus.conf = AllowedCPUs=0",
                "file:/etc/systemd/system/user.slice.d/50-lowlat-allowed-cpus.conf = AllowedCPUs=0",
            ]
        );
    }

    #[test]
    fn a_tree_the_kubelet_manages_is_refused_and_no_controller_is_said() {
        let tree = fixtures::v2();
        tree.write(
            "/sys/fs/cgroup/kubepods.slice/cpuset.cpus.effective",
            "0-3\n",
        );
        let err = plan_with(&tree, Isolation::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "--isolation runtime: the kubelet manages the cpusets (cgroup v2 /kubepods.slice)"
            ),
            "{err}"
        );
        let plan = plan_with(&TestTree::empty(), Isolation::Runtime).unwrap();
        let skipped = plan
            .skipped
            .iter()
            .find(|s| s.setting.id.family() == "cpuset")
            .unwrap();
        assert!(
            skipped.reason.contains("no cpuset controller"),
            "{}",
            skipped.reason
        );
    }

    #[test]
    fn kthreadd_and_pinned_kernel_threads_are_named_as_staying_in_the_root() {
        let plan = plan_with(&fixtures::v1(), Isolation::Runtime).unwrap();
        let stays = plan
            .unmovable
            .iter()
            .find(|u| u.what.contains("root cpuset"))
            .map(|u| u.what.clone());
        // The fixture's root cpuset lists pids 1, 2 (kthreadd), 10 (a bound kworker) and 300.
        assert_eq!(
            stays.as_deref(),
            Some(
                "2 kernel threads stay in the root cpuset (kthreadd, kworker/0:0H-events_highpri)"
            )
        );
    }
}
