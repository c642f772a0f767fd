//! What the machine cannot honour is not planned: kernel arguments this kernel ignores
//! (`nohz_full=` without `CONFIG_NO_HZ_FULL`), `intel_idle.max_cstate=` under another idle
//! driver, and the files only systemd applies at boot on a host whose PID 1 is not systemd.
//! Each is listed as not planned, with the reason and the way out
//! ([`crate::machine::capabilities`]).

use super::{Draft, Plan, Skipped, irqbalance, sysctl, systemd};
use crate::machine::capabilities::Capabilities;
use crate::tuning::installed_files::SYSTEMD_AFFINITY_DROPIN;
use crate::tuning::setting_id::SettingId;

/// Moves the kernel arguments the machine cannot honour from the draft to its skipped ones.
pub(crate) fn skip_arguments(caps: &Capabilities, draft: &mut Draft) {
    let unhonoured: Vec<(SettingId, String)> = draft
        .settings()
        .iter()
        .filter_map(|s| {
            let SettingId::Cmdline(key) = &s.id else {
                return None;
            };
            // Taking an argument off is honoured whatever the kernel does with it.
            if s.value.is_empty() {
                return None;
            }
            let why = match key.as_str() {
                "intel_idle.max_cstate" => caps.intel_idle_absent(),
                key => caps.kernel_ignores(key).cloned(),
            };
            why.map(|why| (s.id.clone(), why.to_string()))
        })
        .collect();
    for (id, why) in unhonoured {
        if let Some(setting) = draft.take(&id) {
            draft.skip(setting, why);
        }
    }
}

/// The files that only systemd applies at boot: sysctl.d (systemd-sysctl), the unit and the
/// drop-ins, and the service that enables the unit.
fn needs_systemd(id: &SettingId) -> bool {
    match id {
        SettingId::File(path) => [
            sysctl::INSTALL_PATH,
            SYSTEMD_AFFINITY_DROPIN,
            irqbalance::DROPIN_PATH,
            systemd::RUNTIME_UNIT_PATH,
        ]
        .contains(&path.as_str()),
        SettingId::Service(name) => name == systemd::RUNTIME_UNIT,
        _ => false,
    }
}

/// Moves the persistence files to the skipped ones where PID 1 is not systemd: nothing would
/// apply them at boot, and installing them would only pretend that the tuning persists.
pub(crate) fn skip_persistence(caps: &Capabilities, plan: &mut Plan) {
    let Some(why) = caps.no_systemd() else {
        return;
    };
    let (skipped, kept) = std::mem::take(&mut plan.settings)
        .into_iter()
        .partition(|s| needs_systemd(&s.id));
    plan.settings = kept;
    plan.skipped.extend(
        skipped
            .into_iter()
            .map(|setting: crate::tuning::setting::Setting| Skipped {
                setting,
                reason: why.to_string(),
            }),
    );
}

#[cfg(test)]
mod tests {
    use crate::machine::Machine;
    use crate::plan::{Plan, build, findings, request::PlanRequest};
    use crate::test_tree::TestTree;

    fn plan(dir: &TestTree) -> Plan {
        let machine = Machine::read(&dir.root());
        let request = PlanRequest::default();
        let profile = findings::audit_profile(request.profile).unwrap();
        build(&machine, &request, |partition| {
            findings::profile_settings(&machine, &profile, partition)
        })
        .unwrap()
    }

    /// The reason the plan gives for not planning `id`; `None` when it is planned.
    fn not_planned(plan: &Plan, id: &str) -> Option<String> {
        assert!(
            plan.setting(&id.parse().unwrap()).is_none()
                || !plan.skipped.iter().any(|s| s.setting.id == id),
            "{id} both planned and skipped"
        );
        plan.skipped
            .iter()
            .find(|s| s.setting.id == id)
            .map(|s| s.reason.clone())
    }

    #[test]
    fn a_kernel_without_nohz_full_gets_no_nohz_full_and_is_told_the_way_out() {
        // Ubuntu 22.04's generic 5.15 kernel: # CONFIG_NO_HZ_FULL is not set.
        let milan = plan(&TestTree::fixture("milan64-nps4-smt"));
        let why = not_planned(&milan, "cmdline:nohz_full").expect("nohz_full planned");
        assert!(why.contains("built without CONFIG_NO_HZ_FULL"), "{why}");
        assert!(why.contains("--isolation runtime"), "{why}");
        // The options it has stay planned.
        assert!(
            milan
                .setting(&"cmdline:rcu_nocbs".parse().unwrap())
                .is_some()
        );
        assert!(
            milan
                .setting(&"cmdline:isolcpus".parse().unwrap())
                .is_some()
        );
        let built = plan(&TestTree::fixture("xeon-2s-smt"));
        assert!(
            built
                .setting(&"cmdline:nohz_full".parse().unwrap())
                .is_some()
        );
    }

    #[test]
    fn intel_idle_max_cstate_only_where_intel_idle_drives_idle() {
        let dir = TestTree::fixture("xeon-2s-smt");
        let id = "cmdline:intel_idle.max_cstate";
        assert!(plan(&dir).setting(&id.parse().unwrap()).is_some());
        dir.write(
            "/sys/devices/system/cpu/cpuidle/current_driver",
            "haltpoll\n",
        );
        let why = not_planned(&plan(&dir), id).expect("intel_idle planned under haltpoll");
        assert!(why.contains("the idle driver is haltpoll"), "{why}");
    }

    #[test]
    fn no_systemd_no_persistence_files() {
        let dir = TestTree::fixture("epyc7f32-2s");
        let files = [
            "file:/etc/sysctl.d/99-lowlat.conf",
            "file:/etc/systemd/system/lowlat-runtime.service",
            "service:lowlat-runtime.service",
        ];
        let systemd = plan(&dir);
        for id in files {
            assert!(systemd.setting(&id.parse().unwrap()).is_some(), "{id}");
        }
        let stat = std::fs::read_to_string(dir.join("/proc/1/stat")).unwrap();
        dir.write("/proc/1/stat", stat.replace("(systemd)", "(process_api)"))
            .write("/proc/1/comm", "process_api\n");
        let other = plan(&dir);
        for id in files {
            let why = not_planned(&other, id).unwrap_or_else(|| panic!("{id} planned"));
            assert!(why.contains("PID 1 is process_api, not systemd"), "{why}");
            assert!(why.contains("again after each boot"), "{why}");
        }
        // The run-time settings themselves stay.
        assert!(
            other
                .setting(&"sysctl:vm.stat_interval".parse().unwrap())
                .is_some()
        );
    }
}
