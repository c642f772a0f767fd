//! Apply, revert and verify on copies of the fixture machines: revert leaves the tree
//! byte-identical (content, modes, links), applying twice equals applying once, a dry run
//! writes nothing, and a crash after any single step of apply is undone exactly.

use super::journal::JOURNAL_PATH;
use super::revert::{RestoreStatus, revert};
use super::verify::{self, VerifyStatus};
use super::*;
use crate::plan::request::PlanRequest;
use crate::sysroot::SysRoot;

use crate::test_tree::{TestTree, tree};
use crate::tuning::setting_id::SettingId;

/// A fixture machine copied into a temporary directory.
struct Fixture {
    dir: TestTree,
    machine: Machine,
    pristine: tree::Tree,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir = TestTree::fixture(name);
        let machine = Machine::read(&dir.root());
        let pristine = tree::describe(dir.path());
        Fixture {
            dir,
            machine,
            pristine,
        }
    }

    /// A fresh copy of the same machine (the machine model is the same).
    fn again(&self, name: &str) -> Fixture {
        let dir = TestTree::fixture(name);
        Fixture {
            dir,
            machine: self.machine.clone(),
            pristine: self.pristine.clone(),
        }
    }

    fn root(&self) -> SysRoot {
        self.dir.root()
    }

    fn now(&self) -> tree::Tree {
        tree::describe(self.dir.path())
    }
}

fn setting(id: &str, value: &str, layer: Layer) -> Setting {
    crate::plan::setting(id.parse().unwrap(), value, layer, "test", "test")
}

/// The plan lowlat makes for the machine, plus knobs the plan does not set on its own (the
/// audit's remediations), where the machine has them.
fn plan_for(machine: &Machine, root: &SysRoot) -> Plan {
    let mut extra = vec![
        setting("sysctl:vm.stat_interval", "10", Layer::Sysctl),
        setting("sysctl:kernel.nonexistent_knob", "1", Layer::Sysctl),
        setting("cpufreq:governor", "powersave", Layer::Runtime),
        setting("cpufreq:boost", "0", Layer::Runtime),
        setting("cpuidle:cpu1:state2", "disabled", Layer::Runtime),
        setting("cpu:1:pm_qos_resume_latency_us", "1", Layer::Runtime),
        setting("thp:enabled", "never", Layer::Runtime),
        setting("hugepages:node0:2048kB", "64", Layer::Runtime),
        setting("clocksource:current", "hpet", Layer::Runtime),
        setting("service:irqbalance", "masked", Layer::Service),
        setting("task:order_gw:affinity", "0", Layer::Runtime),
        // A setting done by hand (firmware), under a sysctl-shaped id: no audit rule plans
        // one, but a plan may hold one.
        setting("sysctl:firmware.smt", "disabled", Layer::Firmware),
    ];
    if root.exists("/etc/sysconfig/irqbalance") {
        extra.push(setting(
            "file:/etc/sysconfig/irqbalance:IRQBALANCE_BANNED_CPULIST",
            "1-7",
            Layer::File,
        ));
    }
    let mut plan = crate::plan::build(machine, &PlanRequest::default(), |_| Vec::new()).unwrap();
    let at = plan
        .settings
        .iter()
        .position(|s| s.layer == Layer::File)
        .unwrap_or(plan.settings.len());
    for s in extra.into_iter().rev() {
        plan.settings.insert(at, s);
    }
    plan
}

fn ctx<'a>(root: &'a SysRoot, machine: &'a Machine) -> ApplyContext<'a> {
    ApplyContext {
        root,
        machine,
        runner: None,
    }
}

fn run_apply(f: &Fixture, plan: &Plan, steps: &mut Steps) -> ApplyReport {
    let root = f.root();
    let ctx = ctx(&root, &f.machine);
    let items = prepare(&ctx, plan, &plan.to_json(), Scope::All).unwrap();
    apply(&ctx, &items, "/tmp/plan.json", Scope::All, steps).unwrap()
}

fn run_revert(f: &Fixture) -> revert::RevertReport {
    let root = f.root();
    revert(&ctx(&root, &f.machine), false).unwrap()
}

fn status_of<'r>(report: &'r ApplyReport, label: &str) -> &'r ItemReport {
    report
        .items
        .iter()
        .find(|i| i.label == label)
        .unwrap_or_else(|| panic!("no item {label}"))
}

#[test]
fn apply_then_revert_leaves_the_tree_byte_identical() {
    for name in [
        "epyc7f32-2s",
        "rt-guest-4vcpu",
        "epyc7f32-2s-tuned",
        "kvm-guest-2vcpu",
    ] {
        let f = Fixture::new(name);
        let plan = plan_for(&f.machine, &f.root());
        let report = run_apply(&f, &plan, &mut Steps::new());
        assert_eq!(report.stopped, None, "{name}");
        assert!(report.journaled, "{name}");
        assert!(report.count(ItemStatus::Changed) > 5, "{name}: {report:#?}");
        assert!(f.root().exists(JOURNAL_PATH));
        assert!(!tree::differences(&f.pristine, &f.now()).is_empty());
        // Directory trees: kernel arguments go to GRUB's defaults, the regeneration is
        // printed; without GRUB (the captured Firecracker guest) they cannot be installed.
        if f.root().exists("/etc/default/grub") {
            assert!(report.reboot_required, "{name}");
            assert!(
                report
                    .follow_ups
                    .iter()
                    .any(|f| f.contains("grub2-mkconfig")),
                "{name}: {:?}",
                report.follow_ups
            );
        } else {
            let boot = report
                .items
                .iter()
                .find(|i| i.layer == Layer::Boot)
                .unwrap();
            assert_eq!(boot.status, ItemStatus::Unsupported, "{name}");
            assert!(!report.reboot_required, "{name}");
        }
        let tasks = status_of(&report, "task:order_gw:affinity");
        assert!(
            matches!(tasks.status, ItemStatus::Unsupported),
            "{name}: {tasks:?}"
        );
        let manual = status_of(&report, "sysctl:firmware.smt");
        assert_eq!(manual.status, ItemStatus::Manual);
        let absent = status_of(&report, "sysctl:kernel.nonexistent_knob");
        assert_eq!(absent.status, ItemStatus::Unsupported);

        let reverted = run_revert(&f);
        assert_eq!(reverted.stopped, None, "{name}");
        assert!(reverted.count(RestoreStatus::Restored) > 5);
        tree::assert_same(&f.pristine, &f.now(), name);

        // Idempotent: a second revert finds nothing to do.
        let again = run_revert(&f);
        assert!(!again.had_journal);
        tree::assert_same(&f.pristine, &f.now(), name);
    }
}

#[test]
fn the_knobs_get_the_planned_values() {
    let f = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&f.machine, &f.root());
    run_apply(&f, &plan, &mut Steps::new());
    let root = f.root();
    let value = |path: &str| root.read_value(path).unwrap();
    assert_eq!(value("/proc/sys/vm/stat_interval"), "10");
    // As the kernel shows it (a tree reads back as a live kernel would).
    assert_eq!(
        value("/sys/kernel/mm/transparent_hugepage/enabled"),
        "always madvise [never]"
    );
    assert_eq!(
        value("/sys/devices/system/cpu/cpu1/cpuidle/state2/disable"),
        "1"
    );
    assert_eq!(value("/sys/devices/system/cpu/cpufreq/boost"), "0");
    assert_eq!(
        value("/sys/devices/system/cpu/cpufreq/policy5/scaling_governor"),
        "powersave"
    );
    let hk = plan.partition.housekeeping.clone();
    assert_eq!(
        crate::machine::CpuSet::parse_mask(&value("/proc/irq/default_smp_affinity")).unwrap(),
        hk
    );
    let banned = root.read("/etc/sysconfig/irqbalance").unwrap();
    assert!(
        banned.contains("\nIRQBALANCE_BANNED_CPULIST=1-7\n"),
        "{banned}"
    );
    let grub = root.read("/etc/default/grub").unwrap();
    assert!(grub.contains("# BEGIN lowlat kernel arguments"), "{grub}");
    assert!(grub.contains("nohz_full="), "{grub}");
    assert!(
        root.read("/etc/lowlat/plan.json")
            .unwrap()
            .contains("\"kind\": \"plan\"")
    );
    assert_eq!(
        root.metadata("/etc/lowlat/plan.json")
            .unwrap()
            .unwrap()
            .mode,
        0o644
    );
}

#[test]
fn applying_twice_equals_applying_once() {
    let f = Fixture::new("rt-guest-4vcpu");
    let plan = plan_for(&f.machine, &f.root());
    run_apply(&f, &plan, &mut Steps::new());
    let once = f.now();
    let second = run_apply(&f, &plan, &mut Steps::new());
    assert_eq!(second.stopped, None);
    assert_eq!(second.count(ItemStatus::Changed), 0, "{second:#?}");
    assert!(!second.journaled);
    tree::assert_same(&once, &f.now(), "second apply");
    run_revert(&f);
    tree::assert_same(&f.pristine, &f.now(), "revert after two applies");
}

#[test]
fn a_dry_run_writes_nothing() {
    let f = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&f.machine, &f.root());
    let root = f.root();
    let ctx = ctx(&root, &f.machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All).unwrap();
    let report = execute(&ctx, &items, None, &mut Steps::new());
    assert!(report.count(ItemStatus::WouldChange) > 5);
    assert_eq!(report.count(ItemStatus::Changed), 0);
    assert!(
        report
            .follow_ups
            .iter()
            .all(|f| f.starts_with("run on the machine itself"))
    );
    // The kernel arguments would be configured, and /proc/cmdline does not show them.
    assert!(report.reboot_required);
    tree::assert_same(&f.pristine, &f.now(), "dry run");
    let listing = revert(&ctx, true).unwrap();
    assert!(!listing.had_journal);
}

#[test]
fn a_crash_after_any_step_is_reverted_exactly() {
    const NAME: &str = "rt-guest-4vcpu";
    let first = Fixture::new(NAME);
    let plan = plan_for(&first.machine, &first.root());
    let mut steps = Steps::new();
    run_apply(&first, &plan, &mut steps);
    let total = steps.done();
    assert!(total > 20, "only {total} steps");
    for k in 1..=total {
        let f = first.again(NAME);
        let report = run_apply(&f, &plan, &mut Steps::aborting_after(k));
        let stopped = report.stopped.clone().unwrap_or_default();
        assert!(
            stopped.contains(&format!("after step {k}")),
            "k={k}: {stopped}"
        );
        if k % 7 == 0 {
            // The crash also tore the line being appended after step k.
            f.root()
                .append_durably(
                    JOURNAL_PATH,
                    b"{\"crc32\":\"0badf00d\",\"entry\":{\"seq",
                    0o600,
                )
                .unwrap();
        }
        let reverted = run_revert(&f);
        assert_eq!(reverted.stopped, None, "k={k}");
        tree::assert_same(&f.pristine, &f.now(), &format!("crash after step {k}"));
    }
}

#[test]
fn a_crash_while_the_first_line_was_written_leaves_nothing_behind() {
    let f = Fixture::new("rt-guest-4vcpu");
    let root = f.root();
    root.create_dirs(super::journal::STATE_DIR).unwrap();
    root.append_durably(JOURNAL_PATH, b"{\"crc32\":\"00", 0o600)
        .unwrap();
    let report = run_revert(&f);
    assert_eq!(report.torn_last_line, Some(1));
    assert!(report.lines.is_empty());
    // /var and /var/lib are not known to be lowlat's: only its own state directory goes.
    let mut now = f.now();
    assert!(!now.contains_key("var/lib/lowlat"));
    assert!(now.remove("var/lib").is_some() && now.remove("var").is_some());
    tree::assert_same(&f.pristine, &now, "revert of a torn first line");
}

#[test]
fn a_damaged_journal_stops_revert_before_any_change() {
    let f = Fixture::new("rt-guest-4vcpu");
    let plan = plan_for(&f.machine, &f.root());
    run_apply(&f, &plan, &mut Steps::new());
    let root = f.root();
    let text = root.read(JOURNAL_PATH).unwrap();
    let damaged = text.replacen("\"kind\":\"knob\"", "\"kind\":\"knoB\"", 1);
    root.replace_file(
        JOURNAL_PATH,
        damaged.as_bytes(),
        crate::sysroot::Perms::mode(0o600),
    )
    .unwrap();
    let applied = f.now();
    let err = revert(&ctx(&root, &f.machine), false)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("{JOURNAL_PATH}:")), "{err}");
    assert!(err.contains("checksum mismatch"), "{err}");
    tree::assert_same(&applied, &f.now(), "revert of a damaged journal");
    // Nor does a new apply write after a damaged journal.
    let ctx = ctx(&root, &f.machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All).unwrap();
    let err = apply(&ctx, &items, "p", Scope::All, &mut Steps::new()).unwrap_err();
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
}

#[test]
fn verify_tells_ok_drift_pending_and_unsupported() {
    let f = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&f.machine, &f.root());
    let root = f.root();
    let before = verify::verify(&ctx(&root, &f.machine), &plan, "p");
    assert!(before.drifted());
    let status = |report: &verify::Report, id: &str| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no check {id}"))
            .status
    };
    assert_eq!(
        status(&before, "sysctl:vm.stat_interval"),
        VerifyStatus::Drift
    );
    assert_eq!(status(&before, "cmdline:nohz_full"), VerifyStatus::Drift);
    run_apply(&f, &plan, &mut Steps::new());
    // The kernel arguments and the tasks are read from the tree as it was.
    let machine = Machine::read(&root);
    let after = verify::verify(&ctx(&root, &machine), &plan, "p");
    assert_eq!(status(&after, "sysctl:vm.stat_interval"), VerifyStatus::Ok);
    assert_eq!(status(&after, "thp:enabled"), VerifyStatus::Ok);
    assert_eq!(
        status(&after, "cmdline:nohz_full"),
        VerifyStatus::PendingReboot
    );
    assert_eq!(
        status(&after, "sysctl:kernel.nonexistent_knob"),
        VerifyStatus::Unsupported
    );
    assert_eq!(
        status(&after, "service:irqbalance"),
        VerifyStatus::Unsupported
    );
    assert_eq!(
        status(&after, "sysctl:firmware.smt"),
        VerifyStatus::Unsupported
    );
    for check in after
        .checks
        .iter()
        .filter(|c| c.status == VerifyStatus::Drift)
    {
        assert!(
            matches!(check.id, SettingId::Tasks { .. }),
            "unexpected drift: {check:?}"
        );
    }
}

#[test]
fn another_machines_plan_is_told_apart() {
    let a = Fixture::new("rt-guest-4vcpu");
    let b = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&a.machine, &a.root());
    assert_eq!(check_target(&plan, &a.machine), Ok(()));
    let err = check_target(&plan, &b.machine).unwrap_err().to_string();
    assert!(err.contains("made for host rt-guest-01"), "{err}");
    assert!(err.contains("CPUs 0-3"), "{err}");
}

#[test]
fn malformed_settings_refuse_the_whole_plan() {
    let f = Fixture::new("rt-guest-4vcpu");
    let mut plan = plan_for(&f.machine, &f.root());
    plan.settings.push(setting(
        "irq:default:affinity",
        "not-a-mask",
        Layer::Runtime,
    ));
    plan.settings
        .push(setting("cmdline:bad", "x=$(reboot)", Layer::Boot));
    let root = f.root();
    let err = match prepare(&ctx(&root, &f.machine), &plan, "{}", Scope::All) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("prepared a malformed plan"),
    };
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(err.contains("not-a-mask"), "{err}");
    assert!(err.contains("cmdline:bad"), "{err}");
}

#[test]
fn scopes_split_runtime_from_persistent() {
    let f = Fixture::new("rt-guest-4vcpu");
    let plan = plan_for(&f.machine, &f.root());
    let root = f.root();
    let ctx = ctx(&root, &f.machine);
    let runtime = prepare(&ctx, &plan, "{}", Scope::Runtime).unwrap();
    assert!(
        runtime
            .iter()
            .all(|i| matches!(i.layer, Layer::Sysctl | Layer::Runtime | Layer::Service))
    );
    let boot = prepare(&ctx, &plan, "{}", Scope::Boot).unwrap();
    assert!(
        boot.iter()
            .all(|i| matches!(i.layer, Layer::Boot | Layer::File | Layer::Service))
    );
    assert!(boot.iter().any(|i| i.label == "file:/etc/lowlat/plan.json"));
    assert!(!runtime.iter().any(|i| i.layer == Layer::Boot));
}

#[test]
fn one_id_with_two_values_refuses_the_plan() {
    // U-10: both settings used to be applied, the second one winning.
    let f = Fixture::new("rt-guest-4vcpu");
    let mut plan = plan_for(&f.machine, &f.root());
    plan.settings
        .push(setting("sysctl:vm.stat_interval", "20", Layer::Sysctl));
    let root = f.root();
    let err = match prepare(&ctx(&root, &f.machine), &plan, "{}", Scope::All) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("prepared a plan setting one id twice"),
    };
    assert!(
        err.contains("sysctl:vm.stat_interval: the plan sets it twice, to 10 and to 20"),
        "{err}"
    );
}

#[test]
fn cpus_the_machine_lacks_refuse_the_plan() {
    // U-10: `apply --force` of a bigger machine's plan wrote affinities for missing CPUs.
    let f = Fixture::new("rt-guest-4vcpu");
    let mut plan = plan_for(&f.machine, &f.root());
    plan.settings
        .push(setting("irq:default:affinity", "ff", Layer::Runtime));
    let root = f.root();
    let err = match prepare(&ctx(&root, &f.machine), &plan, "{}", Scope::All) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("prepared a plan naming CPUs 4-7 on a 4-CPU machine"),
    };
    assert!(err.contains("names CPUs 4-7"), "{err}");
}

#[test]
fn a_dry_run_counts_every_plan_setting_once() {
    // U-7: the boot item of 12 kernel arguments was counted as one setting.
    let f = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&f.machine, &f.root());
    let root = f.root();
    let ctx = ctx(&root, &f.machine);
    let items = prepare(&ctx, &plan, "{}", Scope::All).unwrap();
    let report = execute(&ctx, &items, None, &mut Steps::new());
    let counted: usize = [
        ItemStatus::Changed,
        ItemStatus::WouldChange,
        ItemStatus::Unchanged,
        ItemStatus::Failed,
        ItemStatus::Unsupported,
        ItemStatus::Manual,
    ]
    .into_iter()
    .map(|status| report.count(status))
    .sum();
    let boot = plan
        .settings
        .iter()
        .filter(|s| s.layer == Layer::Boot)
        .count();
    assert!(boot > 1, "the plan has {boot} kernel arguments");
    assert_eq!(counted, plan.settings.len());
}

#[test]
fn verify_and_bios_verify_say_the_same_verdicts_with_the_same_words() {
    use crate::bios::settings::BiosStatus;
    let json = |status: VerifyStatus| serde_json::json!(status);
    for status in [
        VerifyStatus::Ok,
        VerifyStatus::Drift,
        VerifyStatus::PendingReboot,
        VerifyStatus::NotConfigured,
        VerifyStatus::NotInEffect,
        VerifyStatus::Unsupported,
    ] {
        assert_eq!(json(status), serde_json::json!(status.name()));
    }
    assert_eq!(BiosStatus::Ok.name(), VerifyStatus::Ok.name());
    assert_eq!(BiosStatus::Drift.name(), VerifyStatus::Drift.name());
    let pending = [
        BiosStatus::PendingReset.name(),
        VerifyStatus::PendingReboot.name(),
    ];
    assert!(pending.iter().all(|word| word.starts_with("pending-")));
}

/// A `vm.stat_interval` put back from 3600 s left the vmstat work armed for up to an hour:
/// revert folds the counters through `vm.stat_refresh`, and says so.
#[test]
fn reverting_a_long_stat_interval_refreshes_the_vmstat_counters() {
    let f = Fixture::new("rt-guest-4vcpu");
    f.dir.write("/proc/sys/vm/stat_interval", "1\n");
    f.dir.write("/proc/sys/vm/stat_refresh", "");
    let plan = Plan {
        settings: vec![setting("sysctl:vm.stat_interval", "3600", Layer::Runtime)],
        ..plan_for(&f.machine, &f.root())
    };
    run_apply(&f, &plan, &mut Steps::new());
    assert_eq!(
        f.root().read_value("/proc/sys/vm/stat_interval").unwrap(),
        "3600"
    );
    let reverted = run_revert(&f);
    let line = reverted
        .lines
        .iter()
        .find(|l| l.what.starts_with("/proc/sys/vm/stat_interval = 1"))
        .unwrap();
    assert!(
        line.what.ends_with("(and /proc/sys/vm/stat_refresh written: the vmstat counters folded now, not at the end of the 3600 s interval)"),
        "{line:?}"
    );
    assert_eq!(f.root().read("/proc/sys/vm/stat_refresh").unwrap(), "1\n");
    assert_eq!(
        f.root().read_value("/proc/sys/vm/stat_interval").unwrap(),
        "1"
    );
}

#[test]
fn an_argument_the_kernel_ignores_is_not_in_effect_not_ok() {
    // Ubuntu 22.04's generic 5.15 kernel is built without CONFIG_NO_HZ_FULL: after a reboot
    // into nohz_full=, the command line has it and the kernel ignores it.
    let dir = TestTree::fixture("milan64-nps4-smt");
    dir.write("/proc/cmdline", "ro nohz_full=1-3 rcu_nocbs=1-3\n");
    let root = dir.root();
    let machine = Machine::read(&root);
    let ctx = ctx(&root, &machine);
    let nohz = verify::check(
        &ctx,
        &setting("cmdline:nohz_full", "nohz_full=1-3", Layer::Boot),
    );
    assert_eq!(nohz.status, VerifyStatus::NotInEffect, "{nohz:?}");
    assert!(nohz.actual.contains("CONFIG_NO_HZ_FULL"), "{}", nohz.actual);
    assert!(nohz.status.differs());
    // rcu_nocbs= is built in: written and in effect.
    let rcu = verify::check(
        &ctx,
        &setting("cmdline:rcu_nocbs", "rcu_nocbs=1-3", Layer::Boot),
    );
    assert_eq!(rcu.status, VerifyStatus::Ok, "{rcu:?}");
}

#[test]
fn after_apply_runtime_the_persistent_settings_are_not_applied_not_drift() {
    // Issue 43: verify after `apply --runtime` said drift of every file and kernel argument,
    // as if someone had undone them.
    let f = Fixture::new("epyc7f32-2s");
    let plan = plan_for(&f.machine, &f.root());
    let root = f.root();
    let before = ctx(&root, &f.machine);
    let items = prepare(&before, &plan, &plan.to_json(), Scope::Runtime).unwrap();
    apply(
        &before,
        &items,
        "/tmp/plan.json",
        Scope::Runtime,
        &mut Steps::new(),
    )
    .unwrap();
    let machine = Machine::read(&root);
    let report = verify::verify(&ctx(&root, &machine), &plan, "p");
    let check = |id: &str| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no check {id}"))
    };
    assert_eq!(check("sysctl:vm.stat_interval").status, VerifyStatus::Ok);
    for id in ["cmdline:nohz_full", "file:/etc/sysctl.d/99-lowlat.conf"] {
        let c = check(id);
        assert_eq!(c.status, VerifyStatus::NotApplied, "{c:?}");
        assert!(
            c.actual
                .ends_with("not applied (runtime only: `lowlat apply --runtime` left it out)"),
            "{}",
            c.actual
        );
    }
    assert!(report.summary.not_applied >= 2, "{:?}", report.summary);
    assert!(!report.drifted(), "{:?}", report.summary);
    // A run-time setting changed behind lowlat's back is still drift.
    f.dir.write("/proc/sys/vm/stat_interval", "1\n");
    let machine = Machine::read(&root);
    let report = verify::verify(&ctx(&root, &machine), &plan, "p");
    assert!(report.drifted());
    // After the whole plan is applied, nothing is left out any more.
    run_apply(&f, &plan, &mut Steps::new());
    let machine = Machine::read(&root);
    let report = verify::verify(&ctx(&root, &machine), &plan, "p");
    assert_eq!(report.summary.not_applied, 0, "{:?}", report.summary);
}

#[test]
fn without_systemd_apply_and_verify_say_once_what_persists() {
    // Issue 43: on a host whose PID 1 is not systemd, nothing said which of the applied
    // settings would survive a reboot.
    let f = Fixture::new("epyc7f32-2s");
    let under_systemd = run_apply(&f, &plan_for(&f.machine, &f.root()), &mut Steps::new());
    assert_eq!(under_systemd.persistence, None);
    let f = Fixture::new("epyc7f32-2s");
    let stat = f.root().read("/proc/1/stat").unwrap();
    f.dir
        .write("/proc/1/stat", stat.replace("(systemd)", "(process_api)"))
        .write("/proc/1/comm", "process_api\n");
    let f = Fixture {
        machine: Machine::read(&f.root()),
        ..f
    };
    let plan = plan_for(&f.machine, &f.root());
    let report = run_apply(&f, &plan, &mut Steps::new());
    let said = report.persistence.clone().expect("persistence said");
    assert!(
        said.starts_with("PID 1 is process_api, not systemd"),
        "{said}"
    );
    assert!(
        said.contains("What persists: the kernel arguments"),
        "{said}"
    );
    assert!(said.contains("again after each boot"), "{said}");
    // Said once for the whole apply, not per setting.
    let per_setting = (report.items.iter())
        .filter(|i| {
            i.reason
                .as_deref()
                .is_some_and(|r| r.contains("not systemd"))
        })
        .count();
    assert_eq!(per_setting, 0, "{report:?}");
    let root = f.root();
    let verified = verify::verify(&ctx(&root, &f.machine), &plan, "p");
    assert_eq!(verified.persistence.as_deref(), Some(said.as_str()));
}

#[test]
fn an_isolcpus_flag_the_kernel_rejected_is_not_in_effect() {
    // Issue 43: RHEL 8.1's 4.18 kernel; on a kernel older than 5.6 upstream, the boot log says
    // it rejected managed_irq (and with it the whole isolcpus=).
    let dir = TestTree::fixture("epyc7f32-2s");
    dir.write("/proc/cmdline", "ro isolcpus=managed_irq,domain,1-7\n");
    let setting = setting(
        "cmdline:isolcpus",
        "isolcpus=managed_irq,domain,1-7",
        Layer::Boot,
    );
    let root = dir.root();
    let machine = Machine::read(&root);
    let before = verify::check(&ctx(&root, &machine), &setting);
    assert_eq!(before.status, VerifyStatus::Ok, "{before:?}");
    dir.write("/dev/kmsg", "4,2,10,-;isolcpus: Error, unknown flag\n");
    let machine = Machine::read(&root);
    let after = verify::check(&ctx(&root, &machine), &setting);
    assert_eq!(after.status, VerifyStatus::NotInEffect, "{after:?}");
    assert!(
        after
            .actual
            .contains("but the flag managed_irq is unknown to this kernel"),
        "{}",
        after.actual
    );
}

#[test]
fn on_systemd_boot_the_kernel_arguments_are_not_written_into_grubs_files() {
    // Issue 43: the boot loader was not in the model, so a GRUB defaults file left on a
    // systemd-boot machine got the arguments, and nothing read them at boot.
    let f = Fixture::new("epyc7f32-2s");
    f.dir.write("/boot/efi/loader/loader.conf", "timeout 3\n");
    let root = f.root();
    let grub = root.read("/etc/default/grub").unwrap();
    let machine = Machine::read(&root);
    let plan = plan_for(&machine, &root);
    let ctx = ctx(&root, &machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All).unwrap();
    let report = apply(
        &ctx,
        &items,
        "/tmp/plan.json",
        Scope::All,
        &mut Steps::new(),
    )
    .unwrap();
    let boot = report
        .items
        .iter()
        .find(|i| i.layer == Layer::Boot)
        .unwrap();
    assert_eq!(boot.status, ItemStatus::Unsupported, "{boot:?}");
    let reason = boot.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("the boot loader is systemd-boot"),
        "{reason}"
    );
    assert_eq!(root.read("/etc/default/grub").unwrap(), grub);
    let line = report
        .boot_not_configured
        .expect("the arguments to add by hand");
    assert!(line.why.contains("/etc/kernel/cmdline"), "{}", line.why);
}
