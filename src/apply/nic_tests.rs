//! NIC knobs applied, verified and reverted on a fixture machine holding the recorded answers
//! of real NICs (mlx5 as ens1f0, ixgbe as eth4, ice as eth0): the emulated SET requests
//! rewrite the captured answers, the model reads the new values back, and revert leaves the
//! tree byte-identical; a knob the driver lacks, a count above the maximum, a feature the
//! driver keeps and an interface that is gone are each said, and the rest goes on.

use super::revert::{RestoreStatus, revert};
use super::verify::{self, VerifyStatus};
use super::*;
use crate::machine::nic::knob::{self, Knob};
use crate::machine::nic::{ethtool, netlink, recorded};
use crate::sysroot::SysRoot;
use crate::test_tree::{TestTree, tree};

/// The fixture guest with three recorded NICs.
fn nic_tree() -> TestTree {
    let dir = TestTree::fixture("kvm-guest-2vcpu");
    recorded::write(&dir, "ens1f0", &recorded::recording("mlx5"), 0);
    recorded::write(&dir, "eth4", &recorded::recording("ixgbe"), 0);
    recorded::write(&dir, "eth0", &recorded::recording("ice"), 0);
    dir
}

/// A plan of `settings` (id, value) for `machine`, all at the runtime layer.
fn plan_of(machine: &Machine, settings: &[(&str, &str)]) -> Plan {
    let mut plan = crate::plan::build(
        machine,
        &crate::plan::request::PlanRequest::default(),
        |_| Vec::new(),
    )
    .unwrap();
    plan.settings = settings
        .iter()
        .map(|(id, value)| {
            crate::plan::setting(id.parse().unwrap(), *value, Layer::Runtime, "test", "test")
        })
        .collect();
    plan
}

fn ctx<'a>(root: &'a SysRoot, machine: &'a Machine) -> ApplyContext<'a> {
    ApplyContext {
        root,
        machine,
        runner: None,
    }
}

fn apply_plan(root: &SysRoot, machine: &Machine, plan: &Plan) -> ApplyReport {
    let ctx = ctx(root, machine);
    let items = prepare(&ctx, plan, &plan.to_json(), Scope::All).unwrap();
    apply(
        &ctx,
        &items,
        "/tmp/plan.json",
        Scope::All,
        &mut Steps::new(),
    )
    .unwrap()
}

fn item<'r>(report: &'r ApplyReport, id: &str) -> &'r ItemReport {
    report
        .items
        .iter()
        .find(|i| i.label == id)
        .unwrap_or_else(|| panic!("no item {id}"))
}

/// The refusal of the one change of item `id`, which is also what the item says of why
/// (prove lists it beside the setting it leaves out).
fn refusal(report: &ApplyReport, id: &str) -> String {
    let item = item(report, id);
    let ChangeOutcome::Failed { error } = &item.changes[0].outcome else {
        panic!("{id}: {:?}", item.changes[0].outcome);
    };
    assert_eq!(item.why(), Some(error.as_str()), "{id}");
    error.clone()
}

const PLAN: &[(&str, &str)] = &[
    ("nic:ens1f0:adaptive-rx", "off"),
    ("nic:ens1f0:adaptive-tx", "off"),
    ("nic:ens1f0:rx-usecs", "0"),
    ("nic:ens1f0:gro", "off"),
    ("nic:ens1f0:combined", "8"),
    ("nic:ens1f0:rx-ring", "4096"),
    ("nic:ens1f0:napi_defer_hard_irqs", "2"),
    ("nic:ens1f0:gro_flush_timeout", "200000"),
    ("nic:eth4:lro", "off"),
    ("nic:eth4:rx-ring", "8192"),
    ("nic:eth4:rx-frames", "4"),
    ("nic:eth0:lro", "on"),
    ("nic:eth9:rx-usecs", "0"),
];

#[test]
fn nic_knobs_apply_verify_and_revert_exactly() {
    let dir = nic_tree();
    let pristine = tree::describe(dir.path());
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(&machine, PLAN);

    let report = apply_plan(&root, &machine, &plan);
    assert_eq!(report.stopped, None, "{report:#?}");
    for id in &PLAN[..9] {
        assert_eq!(
            item(&report, id.0).status,
            ItemStatus::Changed,
            "{}: {report:#?}",
            id.0
        );
    }
    assert_eq!(item(&report, "nic:ens1f0:rx-usecs").changes[0].from, "8");
    // Said per setting, and the rest went on.
    assert!(
        refusal(&report, "nic:eth4:rx-ring").contains("EINVAL"),
        "{}",
        refusal(&report, "nic:eth4:rx-ring")
    );
    assert_eq!(
        refusal(&report, "nic:eth4:rx-frames"),
        "eth4: the driver does not report rx-frames"
    );
    assert_eq!(
        refusal(&report, "nic:eth0:lro"),
        "eth0 lro: set on, the driver kept off"
    );
    assert_eq!(
        refusal(&report, "nic:eth9:rx-usecs"),
        "eth9 is gone (no such network interface now)"
    );

    // The model reads what the requests left.
    let after = Machine::read(&root);
    let nic = |name: &str| {
        after
            .net
            .get()
            .unwrap()
            .iter()
            .find(|i| i.name == name)
            .unwrap()
            .nic
            .clone()
            .unwrap()
    };
    let mlx5 = nic("ens1f0");
    let c = mlx5.coalesce.get().unwrap();
    assert_eq!(
        (c.adaptive_rx, c.adaptive_tx, c.rx_usecs),
        (Some(false), Some(false), Some(0))
    );
    assert_eq!(c.tx_usecs, Some(16), "untouched");
    assert!(!mlx5.features.get().unwrap().gro.unwrap().on);
    assert_eq!(mlx5.channels.get().unwrap().combined.current, Some(8));
    assert_eq!(mlx5.rings.get().unwrap().rx.current, Some(4096));
    assert_eq!(mlx5.napi.defer_hard_irqs, Some(2));
    assert_eq!(mlx5.napi.gro_flush_timeout_ns, Some(200_000));
    assert!(!nic("eth4").features.get().unwrap().lro.unwrap().on);

    let verified = verify::verify(&ctx(&root, &after), &plan, "plan.json");
    for check in &verified.checks {
        let want = if PLAN[..9].iter().any(|(id, _)| check.id == *id) {
            VerifyStatus::Ok
        } else {
            VerifyStatus::Unsupported
        };
        if check.id == "nic:eth4:rx-ring" || check.id == "nic:eth0:lro" {
            assert_eq!(check.status, VerifyStatus::Drift, "{check:?}");
        } else {
            assert_eq!(check.status, want, "{check:?}");
        }
    }

    let reverted = revert(&ctx(&root, &machine), false).unwrap();
    assert_eq!(reverted.stopped, None);
    let restored = reverted
        .lines
        .iter()
        .filter(|l| l.what.starts_with("nic:") && l.status == RestoreStatus::Restored)
        .count();
    assert_eq!(restored, 9, "{reverted:#?}");
    tree::assert_same(&pristine, &tree::describe(dir.path()), "revert");
}

#[test]
fn verify_reports_the_value_a_rounding_driver_kept() {
    let dir = nic_tree();
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(&machine, &[("nic:ens1f0:rx-usecs", "7")]);
    apply_plan(&root, &machine, &plan);
    // The driver kept 8 (its moderation timer counts in steps of 2 µs, say).
    let path = ethtool::answer_path("ens1f0", "coalesce");
    let answer = root.read_bytes(&path).unwrap();
    let rounded = netlink::with_attr(
        &answer,
        ethtool::coalesce_attr::RX_USECS,
        &8u32.to_ne_bytes(),
        false,
    )
    .unwrap();
    dir.write(&path, rounded);
    let verified = verify::verify(&ctx(&root, &machine), &plan, "plan.json");
    let check = &verified.checks[0];
    assert_eq!(
        (check.status, check.expected.as_str(), check.actual.as_str()),
        (VerifyStatus::Drift, "7", "8")
    );
}

#[test]
fn revert_says_which_interface_is_gone_and_restores_the_rest() {
    let dir = nic_tree();
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(
        &machine,
        &[("nic:ens1f0:rx-usecs", "0"), ("nic:eth4:lro", "off")],
    );
    apply_plan(&root, &machine, &plan);
    dir.remove("/lowlat-answers/ethtool/eth4");
    let reverted = revert(&ctx(&root, &machine), false).unwrap();
    let line = reverted
        .lines
        .iter()
        .find(|l| l.what.starts_with("nic:eth4:lro"))
        .unwrap();
    assert_eq!(line.status, RestoreStatus::Failed);
    assert_eq!(
        line.reason.as_deref(),
        Some("eth4 is gone (no such network interface now)")
    );
    assert_eq!(knob::read(&root, "ens1f0", Knob::RxUsecs).unwrap(), 8);
}

#[test]
fn a_plan_value_a_knob_does_not_take_is_refused_before_anything_changes() {
    let dir = nic_tree();
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(
        &machine,
        &[("nic:ens1f0:gro", "0"), ("nic:ens1f0:rx-usecs", "-1")],
    );
    let ctx = ctx(&root, &machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All);
    let err = match items {
        Err(err) => err.to_string(),
        Ok(items) => {
            let report = execute(&ctx, &items, None, &mut Steps::new());
            panic!("accepted: {report:#?}")
        }
    };
    assert!(
        err.contains("'0' is not a value of gro: on or off"),
        "{err}"
    );
    assert!(
        err.contains("'-1' is not a value of rx-usecs: a whole number"),
        "{err}"
    );
}

#[test]
fn a_dry_run_lists_the_nic_changes_and_writes_nothing() {
    let dir = nic_tree();
    let pristine = tree::describe(dir.path());
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(&machine, &PLAN[..4]);
    let ctx = ctx(&root, &machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All).unwrap();
    let report = execute(&ctx, &items, None, &mut Steps::new());
    assert_eq!(report.count(ItemStatus::WouldChange), 4, "{report:#?}");
    let gro = &item(&report, "nic:ens1f0:gro").changes[0];
    assert_eq!((gro.from.as_str(), gro.to.as_str()), ("on", "off"));
    tree::assert_same(&pristine, &tree::describe(dir.path()), "dry run");
}

#[test]
fn the_plan_carries_the_nic_rules_settings_and_a_dry_run_lists_them() {
    let dir = nic_tree();
    let root = dir.root();
    let machine = Machine::read(&root);
    let request = crate::plan::request::PlanRequest::default();
    let profile = crate::plan::findings::audit_profile(request.profile).unwrap();
    let plan = crate::plan::build(&machine, &request, |partition| {
        crate::plan::findings::profile_settings(&machine, &profile, partition)
    })
    .unwrap();
    let nic: Vec<String> = plan
        .settings
        .iter()
        .filter(|s| s.id.family() == "nic")
        .map(|s| format!("{}={}", s.id, s.value))
        .collect();
    for want in [
        "nic:ens1f0:adaptive-rx=off",
        "nic:ens1f0:adaptive-tx=off",
        "nic:eth0:adaptive-rx=off",
        "nic:eth0:rx-usecs=8",
        "nic:eth4:rx-usecs=8",
        "nic:eth4:lro=off",
        "nic:ens1f0:gro=off",
    ] {
        assert!(nic.contains(&want.to_string()), "{want} not in {nic:?}");
    }
    let adaptive = plan
        .settings
        .iter()
        .find(|s| s.id == "nic:ens1f0:adaptive-rx")
        .unwrap();
    assert!(
        adaptive.rationale.contains("Adaptive moderation"),
        "{}",
        adaptive.rationale
    );
    let ctx = ctx(&root, &machine);
    let items = prepare(&ctx, &plan, &plan.to_json(), Scope::All).unwrap();
    let report = execute(&ctx, &items, None, &mut Steps::new());
    // The plan holds every NIC's desired knobs, those already as planned included.
    let listed = |status| {
        report
            .items
            .iter()
            .filter(|i| i.label.starts_with("nic:") && i.status == status)
            .count()
    };
    let (changing, in_place) = (
        listed(ItemStatus::WouldChange),
        listed(ItemStatus::Unchanged),
    );
    assert!(changing >= 7, "{report:#?}");
    assert_eq!(changing + in_place, nic.len(), "{report:#?}");
}

#[test]
fn apply_installs_the_nic_udev_rule_of_the_plan_and_revert_removes_it() {
    let dir = nic_tree();
    let pristine = tree::describe(dir.path());
    let root = dir.root();
    let machine = Machine::read(&root);
    let request = crate::plan::request::PlanRequest::default();
    let profile = crate::plan::findings::audit_profile(request.profile).unwrap();
    let plan = crate::plan::build(&machine, &request, |partition| {
        crate::plan::findings::profile_settings(&machine, &profile, partition)
    })
    .unwrap();
    let path = crate::plan::nic::UDEV_RULES_PATH;
    let planned = plan
        .settings
        .iter()
        .find(|s| s.id == format!("file:{path}").as_str())
        .expect("the plan installs the udev rule");
    let on_disk = dir.path().join(path.trim_start_matches('/'));
    assert!(!on_disk.exists());

    let report = apply_plan(&root, &machine, &plan);
    assert_eq!(report.stopped, None, "{report:#?}");
    let label = format!("file:{path}");
    assert_eq!(item(&report, &label).status, ItemStatus::Changed);
    let installed = std::fs::read_to_string(&on_disk).unwrap();
    assert_eq!(installed, planned.value);
    // The audit's fixes of the recorded mlx5 (ens1f0), as udev sets them again.
    assert!(
        installed.contains(
            "ACTION==\"add|move\", SUBSYSTEM==\"net\", KERNEL==\"ens1f0\", \
             RUN+=\"/usr/sbin/ethtool -C ens1f0 rx-usecs 8 adaptive-rx off adaptive-tx off\"\n"
        ),
        "{installed}"
    );
    assert!(
        installed.contains("RUN+=\"/usr/sbin/ethtool -K eth4 gro off lro off\"\n"),
        "{installed}"
    );

    let reverted = revert(&ctx(&root, &machine), false).unwrap();
    assert_eq!(reverted.stopped, None);
    assert!(
        reverted
            .lines
            .iter()
            .any(|l| l.what.contains(path) && l.status == RestoreStatus::Restored),
        "{reverted:#?}"
    );
    assert!(!on_disk.exists(), "revert removes the rule lowlat created");
    tree::assert_same(&pristine, &tree::describe(dir.path()), "revert");
}

/// The lines of a revert that restore NIC knobs.
fn nic_lines(report: &super::revert::RevertReport) -> Vec<&super::revert::RestoreLine> {
    report
        .lines
        .iter()
        .filter(|l| l.what.starts_with("nic:"))
        .collect()
}

/// Moves interface `from` of the tree (its sysfs directory and captured answers) to `to`.
fn rename(dir: &TestTree, from: &str, to: &str) {
    for base in ["/sys/class/net", "/lowlat-answers/ethtool"] {
        std::fs::rename(
            dir.join(&format!("{base}/{from}")),
            dir.join(&format!("{base}/{to}")),
        )
        .unwrap();
    }
}

#[test]
fn revert_follows_a_renamed_nic_and_leaves_the_one_that_took_its_name() {
    let dir = nic_tree();
    dir.write("/sys/class/net/ens1f0/ifindex", "5\n");
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(&machine, &[("nic:ens1f0:rx-usecs", "0")]);
    apply_plan(&root, &machine, &plan);
    assert_eq!(knob::read(&root, "ens1f0", Knob::RxUsecs).unwrap(), 0);
    // udev renames it, and another device (index 9, at its defaults) takes the old name.
    rename(&dir, "ens1f0", "ens2");
    recorded::write(&dir, "ens1f0", &recorded::recording("mlx5"), 0);
    dir.write("/sys/class/net/ens1f0/ifindex", "9\n");
    let newcomer = dir.path().join("lowlat-answers/ethtool/ens1f0/coalesce");
    let netlink::Answer::Reply(_) =
        netlink::parse_answer(&std::fs::read(&newcomer).unwrap()).unwrap()
    else {
        panic!("a recorded answer");
    };
    let untouched = std::fs::read(&newcomer).unwrap();
    let reverted = revert(&ctx(&root, &machine), false).unwrap();
    let nic = nic_lines(&reverted);
    assert_eq!(nic.len(), 1, "{reverted:#?}");
    assert_eq!(nic[0].status, RestoreStatus::Restored, "{reverted:#?}");
    assert_eq!(knob::read(&root, "ens2", Knob::RxUsecs).unwrap(), 8);
    assert_eq!(std::fs::read(&newcomer).unwrap(), untouched, "the newcomer");
    assert!(reverted.kept.is_empty());
    assert!(!root.exists(crate::apply::journal::JOURNAL_PATH));
}

#[test]
fn a_nic_gone_at_revert_keeps_its_record_until_it_is_back() {
    let dir = nic_tree();
    dir.write("/sys/class/net/ens1f0/ifindex", "5\n");
    let root = dir.root();
    let machine = Machine::read(&root);
    let plan = plan_of(
        &machine,
        &[("nic:ens1f0:rx-usecs", "0"), ("nic:eth4:lro", "off")],
    );
    apply_plan(&root, &machine, &plan);
    // Out of the machine while revert runs; another device holds its name.
    let away = tempfile::tempdir().unwrap();
    for base in ["sys/class/net", "lowlat-answers/ethtool"] {
        std::fs::create_dir_all(away.path().join(base)).unwrap();
        std::fs::rename(
            dir.path().join(base).join("ens1f0"),
            away.path().join(base).join("ens1f0"),
        )
        .unwrap();
    }
    recorded::write(&dir, "ens1f0", &recorded::recording("mlx5"), 0);
    dir.write("/sys/class/net/ens1f0/ifindex", "9\n");
    let reverted = revert(&ctx(&root, &machine), false).unwrap();
    let line = reverted
        .lines
        .iter()
        .find(|l| l.what.starts_with("nic:ens1f0:rx-usecs"))
        .unwrap();
    assert_eq!(line.status, RestoreStatus::Failed, "{reverted:#?}");
    assert!(
        line.reason
            .as_deref()
            .unwrap()
            .starts_with("ens1f0 (ifindex 5) is gone"),
        "{line:?}"
    );
    assert_eq!(nic_lines(&reverted).len(), 2);
    assert_eq!(reverted.kept, [line.line]);
    assert_eq!(
        knob::read(&root, "eth4", Knob::Lro).unwrap(),
        1,
        "the rest restored"
    );
    assert_eq!(
        knob::read(&root, "ens1f0", Knob::RxUsecs).unwrap(),
        8,
        "the newcomer"
    );

    // Back under another name: the kept record restores it, and the journal goes.
    for base in ["sys/class/net", "lowlat-answers/ethtool"] {
        std::fs::rename(
            away.path().join(base).join("ens1f0"),
            dir.path().join(base).join("ens3"),
        )
        .unwrap();
    }
    let again = revert(&ctx(&root, &machine), false).unwrap();
    assert_eq!(again.lines.len(), 1, "{again:#?}");
    assert_eq!(again.count(RestoreStatus::Restored), 1, "{again:#?}");
    assert_eq!(knob::read(&root, "ens3", Knob::RxUsecs).unwrap(), 8);
    assert!(again.kept.is_empty());
    assert!(!root.exists(crate::apply::journal::JOURNAL_PATH));
}

/// The TSO features of interface `name` that are on, as its captured answer holds them.
fn tso_on(root: &SysRoot, name: &str) -> Vec<String> {
    let answer = root
        .read_bytes(&ethtool::answer_path(name, "features"))
        .unwrap();
    let attrs = ethtool::parse(ethtool::Query::Features, &answer).unwrap();
    ethtool::bitset_bits(attrs.get(4).unwrap())
        .unwrap()
        .into_iter()
        .map(|(_, name)| name)
        .filter(|name| ethtool::TSO_GROUP.contains(&name.as_str()))
        .collect()
}

/// R2-12: `tso = off` cleared tx-tcp-segmentation only; ECN and IPv6 segmentation stayed on
/// (`ethtool -k` said tso on) while verify said ok. The whole group is set, and a feature of it
/// the driver keeps on keeps the knob on.
#[test]
fn tso_sets_the_whole_tso_group_and_reads_on_while_any_of_it_is() {
    let dir = TestTree::fixture("kvm-guest-2vcpu");
    let group = "\ttx-tcp-segmentation: on\n";
    let mlx5 = recorded::recording("mlx5");
    let both = group.to_string() + "\ttx-tcp-ecn-segmentation: on\n\ttx-tcp6-segmentation: on\n";
    recorded::write(&dir, "ens1f0", &mlx5.replace(group, &both), 0);
    let fixed = group.to_string() + "\ttx-tcp6-segmentation: on [fixed]\n";
    recorded::write(&dir, "eth4", &mlx5.replace(group, &fixed), 0);
    let root = dir.root();
    let machine = Machine::read(&root);
    assert_eq!(tso_on(&root, "ens1f0").len(), 3);
    let plan = plan_of(
        &machine,
        &[("nic:ens1f0:tso", "off"), ("nic:eth4:tso", "off")],
    );
    let report = apply_plan(&root, &machine, &plan);
    assert_eq!(item(&report, "nic:ens1f0:tso").status, ItemStatus::Changed);
    assert!(
        tso_on(&root, "ens1f0").is_empty(),
        "{:?}",
        tso_on(&root, "ens1f0")
    );
    assert_eq!(
        refusal(&report, "nic:eth4:tso"),
        "eth4 tso: set off, the driver kept on"
    );
    assert_eq!(tso_on(&root, "eth4"), ["tx-tcp6-segmentation"]);
    let after = Machine::read(&root);
    let verified = verify::verify(&ctx(&root, &after), &plan, "plan.json");
    let status = |id: &str| verified.checks.iter().find(|c| c.id == id).unwrap().status;
    assert_eq!(status("nic:ens1f0:tso"), VerifyStatus::Ok);
    assert_eq!(status("nic:eth4:tso"), VerifyStatus::Drift);
    // And back: revert turns the group on again where the device lets it.
    revert(&ctx(&root, &machine), false).unwrap();
    assert_eq!(tso_on(&root, "ens1f0").len(), 3);
}
