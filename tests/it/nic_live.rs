//! NICs read on the live machine through ethtool's netlink interface: a veth pair made for the
//! test (`ip link add … type veth`, removed whatever happens) reports its channels, the first
//! device-backed interface (eth0, virtio-net, on the CI VM) its coalescing, and a snapshot
//! taken now shows the same NIC block offline; apply and revert round-trip a veth's and eth0's
//! knobs; udev's own parser reads the plan's NIC rule and sets a veth's knobs on add and move.
//! `#[ignore]`d: it runs only with `LOWLAT_LIVE_TESTS=1` and `--include-ignored`, as root (CI
//! does all three).

use crate::support::{is_root, live_tests_allowed, lowlat, missing_data};
use lowlat::machine::Machine;
use lowlat::sysroot::SysRoot;
use std::process::Command;

/// A veth pair that is removed when dropped.
struct VethPair(&'static str);

impl VethPair {
    fn add(name: &'static str, peer: &str) -> Option<Self> {
        let _ = Command::new("ip").args(["link", "del", name]).output();
        let made = Command::new("ip")
            .args(["link", "add", name, "type", "veth", "peer", "name", peer])
            .status()
            .ok()?;
        made.success().then_some(Self(name))
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", self.0]).status();
    }
}

#[test]
#[ignore = "changes the live machine (a veth pair); run with LOWLAT_LIVE_TESTS=1"]
fn live_nics_answer_through_netlink_and_snapshots_keep_the_answers() {
    // One test at a time changes the machine's interfaces: the NIC block compared below lists
    // them all, and another test adds veths and flips eth0's GRO.
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !is_root("adds a veth pair") {
        return;
    }
    let Some(_veth) = VethPair::add("llnic0", "llnic1") else {
        missing_data("ip link add … type veth (iproute2 and the veth module)");
        return;
    };
    let machine = Machine::read(&SysRoot::live());
    let net = machine.net.get().expect("interfaces");
    let veth = net.iter().find(|i| i.name == "llnic0").expect("the veth");
    let nic = veth.nic.as_ref().expect("asked");
    assert_eq!(nic.driver.get().unwrap().driver, "veth");
    let channels = nic.channels.get().expect("veth answers channels");
    assert!(channels.rx.max.is_some_and(|m| m >= 1), "{channels:?}");
    assert!(
        nic.coalesce
            .reason()
            .is_some_and(|r| r.contains("EOPNOTSUPP")),
        "veth refuses coalescing, said: {:?}",
        nic.coalesce
    );
    let Some(device) = net.iter().find(|i| i.device && i.nic.is_some()) else {
        missing_data("a device-backed network interface (eth0 on the CI VM)");
        return;
    };
    let nic = device.nic.as_ref().unwrap();
    let coalesce = nic.coalesce.get().expect("the device answers coalescing");
    assert!(coalesce.rx_frames.is_some() || coalesce.rx_usecs.is_some());
    assert!(
        nic.unknown_attributes.is_empty(),
        "{:?}",
        nic.unknown_attributes
    );

    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("s.lowlat");
    lowlat(&["snapshot", "-o", snapshot.to_str().unwrap()])
        .assert()
        .success();
    let live = lowlat(&["inventory"]).output().unwrap();
    let offline = lowlat(&["inventory", "--snapshot", snapshot.to_str().unwrap()])
        .output()
        .unwrap();
    let block = |out: &[u8]| {
        let text = String::from_utf8_lossy(out).into_owned();
        let start = text.find("\nNICs ").expect("a NICs row");
        let end = text[start + 1..]
            .find("\n\n")
            .map_or(text.len(), |e| start + 1 + e);
        text[start..end]
            .lines()
            .filter(|l| !l.contains("IRQs") && !l.contains("effective"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let live_block = block(&live.stdout);
    assert!(live_block.contains("llnic0: veth"), "{live_block}");
    assert_eq!(live_block, block(&offline.stdout));
}

/// What a plan's NIC knobs cover of interface `name`, as read now: channels, offloads,
/// coalescing and the NAPI knobs (the parts a NIC plan changes).
fn knobs_of(name: &str) -> String {
    let machine = Machine::read(&SysRoot::live());
    let net = machine.net.get().expect("interfaces");
    let nic = net
        .iter()
        .find(|i| i.name == name)
        .and_then(|i| i.nic.clone())
        .unwrap_or_else(|| panic!("{name} read"));
    format!(
        "{:?} {:?} {:?} {:?} {:?}",
        nic.channels, nic.rings, nic.coalesce, nic.features, nic.napi
    )
}

/// A plan made on this machine, holding only `settings` (id, value): every NIC knob is a
/// runtime setting.
fn nic_plan(dir: &std::path::Path, settings: &[(String, String)]) -> std::path::PathBuf {
    let out = dir.join("plan");
    lowlat(&["plan", "--out", out.to_str().unwrap()])
        .assert()
        .success();
    let text = std::fs::read_to_string(out.join("plan.json")).unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    plan["settings"] = settings
        .iter()
        .map(|(id, value)| {
            serde_json::json!({
                "id": id, "value": value, "layer": "runtime", "reboot": false,
                "rationale": "live test", "source": "tests/it/nic_live.rs"
            })
        })
        .collect();
    plan["skipped"] = serde_json::json!([]);
    let path = dir.join("nic-plan.json");
    std::fs::write(&path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    path
}

#[test]
#[ignore = "changes the live machine (a veth pair, eth0's GRO); run with LOWLAT_LIVE_TESTS=1"]
fn live_nic_settings_apply_verify_and_revert_exactly_through_netlink() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !is_root("sets NIC knobs") {
        return;
    }
    let Some(veth) = VethPair::add("llnic2", "llnic3") else {
        missing_data("ip link add … type veth (iproute2 and the veth module)");
        return;
    };
    let machine = Machine::read(&SysRoot::live());
    let net = machine.net.get().expect("interfaces");
    let nic = net
        .iter()
        .find(|i| i.name == "llnic2")
        .and_then(|i| i.nic.clone())
        .expect("the veth");
    let channels = nic.channels.get().expect("veth answers channels").clone();
    let features = nic.features.get().expect("veth answers features").clone();
    let flip = |on: bool| if on { "off" } else { "on" }.to_string();
    let s = |id: &str, value: String| (id.to_string(), value);
    let mut settings = vec![
        s(
            "nic:llnic2:rx-channels",
            channels.rx.max.unwrap().to_string(),
        ),
        s(
            "nic:llnic2:tx-channels",
            channels.tx.max.unwrap().to_string(),
        ),
        s("nic:llnic2:gro", flip(features.gro.unwrap().on)),
        s("nic:llnic2:tso", flip(features.tso.unwrap().on)),
        s("nic:llnic2:napi_defer_hard_irqs", "2".into()),
        s("nic:llnic2:gro_flush_timeout", "200000".into()),
    ];
    assert_ne!(channels.rx.current, channels.rx.max, "{channels:?}");
    // eth0 (virtio-net) takes GRO on and off; its coalescing and rings are fixed.
    let device = net
        .iter()
        .find(|i| i.device && i.nic.as_ref().is_some_and(|n| n.features.get().is_some()))
        .map(|i| (i.name.clone(), i.nic.clone().unwrap()));
    let device = device.filter(|(_, nic)| {
        nic.features
            .get()
            .and_then(|f| f.gro)
            .is_some_and(|g| g.changeable)
    });
    match &device {
        Some((name, nic)) => settings.push(s(
            &format!("nic:{name}:gro"),
            flip(nic.features.get().unwrap().gro.unwrap().on),
        )),
        None => missing_data("a device-backed interface whose GRO can change (eth0 on the CI VM)"),
    }
    let before_veth = knobs_of("llnic2");
    let before_device = device.as_ref().map(|(name, _)| knobs_of(name));

    let dir = tempfile::tempdir().unwrap();
    let plan = nic_plan(dir.path(), &settings);
    let plan = plan.to_str().unwrap();
    let dry = lowlat(&["apply", "--plan", plan, "--dry-run"])
        .output()
        .unwrap();
    let dry = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(dry.contains("ethtool -L llnic2 rx: 1 -> 2"), "{dry}");

    let applied = lowlat(&["apply", "--plan", plan, "--yes"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&applied.stdout).into_owned();
    assert_eq!(applied.status.code(), Some(0), "{text}");
    assert_ne!(knobs_of("llnic2"), before_veth);
    let verified = lowlat(&["verify", "--plan", plan]).output().unwrap();
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    lowlat(&["revert"]).assert().success();
    assert_eq!(knobs_of("llnic2"), before_veth, "the veth after revert");
    if let Some((name, _)) = &device {
        assert_eq!(Some(knobs_of(name)), before_device, "{name} after revert");
    }

    // Renamed between apply and revert: its knobs come back under the new name (R2-8: revert
    // went by the name, refused, and removed the journal).
    let ip = |args: &[&str]| assert!(Command::new("ip").args(args).status().unwrap().success());
    lowlat(&["apply", "--plan", plan, "--yes"])
        .assert()
        .success();
    ip(&["link", "set", "dev", "llnic2", "name", "llnic9"]);
    let reverted = lowlat(&["revert"]).output().unwrap();
    let renamed_back = knobs_of("llnic9");
    ip(&["link", "set", "dev", "llnic9", "name", "llnic2"]);
    assert_eq!(
        reverted.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&reverted.stdout)
    );
    assert_eq!(renamed_back, before_veth, "the renamed veth after revert");

    // The veth goes away between apply and revert: said, the rest restored, and its records
    // kept in the journal (removed here: the device never comes back).
    lowlat(&["apply", "--plan", plan, "--yes"])
        .assert()
        .success();
    drop(veth);
    let reverted = lowlat(&["revert"]).output().unwrap();
    let text = String::from_utf8_lossy(&reverted.stdout).into_owned();
    let _ = std::fs::remove_file("/var/lib/lowlat/journal.jsonl");
    let _ = std::fs::remove_dir("/var/lib/lowlat");
    assert!(text.contains("llnic2 (ifindex "), "{text}");
    assert!(
        text.contains("is gone: no network interface is that device now"),
        "{text}"
    );
    assert!(text.contains("Kept: "), "{text}");
    if let Some((name, _)) = &device {
        assert_eq!(Some(knobs_of(name)), before_device, "{name} after revert");
    }
}

/// The plan's udev rule file in the runtime rules directory, removed when dropped (with
/// `/run/udev` itself when it was not there before).
struct RuntimeRule {
    path: std::path::PathBuf,
    made_run_udev: bool,
}

impl Drop for RuntimeRule {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if self.made_run_udev {
            let _ = std::fs::remove_dir_all("/run/udev");
        }
    }
}

#[test]
#[ignore = "changes the live machine (a veth pair, a udev rule in /run); run with LOWLAT_LIVE_TESTS=1"]
fn live_udev_reads_the_plans_nic_rule_and_sets_the_knobs_on_add_and_move() {
    let _turn = crate::support::cpu1_turn();
    if !live_tests_allowed() || !is_root("adds a veth pair and a udev rule") {
        return;
    }
    if Command::new("udevadm").arg("--version").output().is_err() {
        missing_data("udevadm (Debian package udev)");
        return;
    }
    let Some(_veth) = VethPair::add("llnic6", "llnic7") else {
        missing_data("ip link add … type veth (iproute2 and the veth module)");
        return;
    };
    use lowlat::plan::{self, artifacts};
    use lowlat::tuning::setting::Layer;
    let machine = Machine::read(&SysRoot::live());
    let nic = |knob: &str, value: &str| {
        let id = format!("nic:llnic6:{knob}").parse().unwrap();
        plan::setting(
            id,
            value,
            Layer::Runtime,
            "live test",
            "tests/it/nic_live.rs",
        )
    };
    let settings = || {
        vec![
            nic("gro", "off"),
            nic("rx-channels", "1"),
            nic("napi_defer_hard_irqs", "3"),
            nic("gro_flush_timeout", "100000"),
        ]
    };
    let plan = match plan::build(&machine, &Default::default(), |_| settings()) {
        Ok(plan) => plan,
        Err(e) => {
            missing_data(&format!("a machine the plan can partition ({e})"));
            return;
        }
    };
    let rules = artifacts::render(&plan)
        .into_iter()
        .find(|a| a.path == "udev/81-lowlat-nic.rules")
        .expect("the plan's udev rule")
        .to_text()
        .into_owned();

    // udevadm of systemd 252 has no `verify`: `udevadm test` parses every rules file with
    // udev's own parser (a bad key is said as FILE:LINE) and runs the rules of one event.
    let made_run_udev = !std::path::Path::new("/run/udev").exists();
    std::fs::create_dir_all("/run/udev/rules.d").unwrap();
    let rule = RuntimeRule {
        path: "/run/udev/rules.d/81-lowlat-nic.rules".into(),
        made_run_udev,
    };
    std::fs::write(&rule.path, &rules).unwrap();
    let napi = "/sys/class/net/llnic6/napi_defer_hard_irqs";
    for action in ["add", "move"] {
        std::fs::write(napi, "0").unwrap();
        let out = Command::new("udevadm")
            .args([
                "test",
                &format!("--action={action}"),
                "/sys/class/net/llnic6",
            ])
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        let ours: Vec<&str> = said
            .lines()
            .filter(|l| l.contains("81-lowlat-nic.rules"))
            .collect();
        assert!(
            !ours
                .iter()
                .any(|l| l.contains("Invalid") || l.contains("rror")),
            "udev refused a line of the rule:\n{rules}\n{said}"
        );
        for want in [
            "ATTR '/sys/devices/virtual/net/llnic6/napi_defer_hard_irqs' writing '3'",
            "ATTR '/sys/devices/virtual/net/llnic6/gro_flush_timeout' writing '100000'",
            "RUN '/usr/sbin/ethtool -L llnic6 rx 1'",
            "RUN '/usr/sbin/ethtool -K llnic6 gro off'",
        ] {
            assert!(
                ours.iter().any(|l| l.contains(want)),
                "{action}: udev did not {want}:\n{said}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(napi).unwrap().trim(),
            "3",
            "{action}: udev wrote the NAPI file"
        );
    }
}
