//! TuneD accepts the profile lowlat renders: with the Debian `tuned` package installed, the
//! `lowlat` profile (next to a copy of TuneD's own profiles) is listed by TuneD's profile
//! locator and loads through TuneD's loader without error, its cpu-partitioning variables
//! included. The daemon is not needed: the test drives TuneD's Python modules directly, the
//! way `tuned-adm` does before it talks to the daemon. Skipped, with a message, when TuneD is
//! not installed (`.ci/run` installs it).

use lowlat::machine::Machine;
use lowlat::plan::request::PlanRequest;
use lowlat::plan::{self, artifacts, findings};
use lowlat::sysroot::SysRoot;
use lowlat::tuning::setting::Layer;
use lowlat::tuning::setting_id::SettingId;
use std::path::Path;
use std::process::Command;

const TUNED_PROFILES: &str = "/usr/lib/tuned";
const PYTHON: &str = "/usr/bin/python3";

/// Lists the profiles TuneD finds in the given directories, loads `lowlat` and prints what it
/// resolved, one `key<TAB>value` per line.
const SCRIPT: &str = r#"
import sys
from tuned.profiles.locator import Locator
from tuned.profiles.loader import Loader
from tuned.profiles.factory import Factory
from tuned.profiles.merger import Merger
from tuned.profiles.variables import Variables
from tuned.utils.global_config import GlobalConfig

dirs = sys.argv[1:]
locator = Locator(dirs)
print("listed\t" + ",".join(sorted(locator.get_known_names())))
variables = Variables()
profile = Loader(locator, Factory(), Merger(), GlobalConfig(), variables).load("lowlat")
print("isolated_cores\t" + variables.expand("${isolated_cores}"))
for unit in ("bootloader", "sysctl"):
    for key, value in profile.units[unit].options.items():
        print(unit + "." + key + "\t" + variables.expand(str(value)))
for name, unit in profile.units.items():
    if unit.type in ("net", "sysfs"):
        print(name + ".type\t" + unit.type)
        print(name + ".devices\t" + str(unit.devices))
        for key, value in unit.options.items():
            print(name + "." + key + "\t" + variables.expand(str(value)))
"#;

fn tuned_missing() -> Option<String> {
    if !Path::new(TUNED_PROFILES)
        .join("cpu-partitioning/tuned.conf")
        .is_file()
    {
        return Some(format!("{TUNED_PROFILES}/cpu-partitioning is absent"));
    }
    let import = Command::new(PYTHON).args(["-c", "import tuned"]).output();
    match import {
        Ok(out) if out.status.success() => None,
        _ => Some(format!("{PYTHON} cannot import TuneD's modules")),
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn tuned_lists_and_loads_the_lowlat_profile() {
    if let Some(why) = tuned_missing() {
        crate::support::missing_data(&format!("TuneD (Debian package tuned): {why}"));
        return;
    }
    // The plan of this very machine: cpu-partitioning asserts that the isolated CPUs are
    // online here, so a plan for another machine could not load.
    let root = SysRoot::live();
    let machine = Machine::read(&root);
    let request = PlanRequest::default();
    let profile = findings::audit_profile(request.profile).unwrap();
    // NIC settings as the audit's fixes carry them, on an interface TuneD need not find.
    let nic = |interface: &str, knob: &str, value: &str| {
        let id: SettingId = format!("nic:{interface}:{knob}").parse().unwrap();
        plan::setting(id, value, Layer::Runtime, "test", "test")
    };
    let plan = match plan::build(&machine, &request, |partition| {
        let mut settings = findings::profile_settings(&machine, &profile, partition);
        settings.retain(|s| !matches!(s.id, SettingId::Nic { .. }));
        settings.extend([
            nic("llnet0", "rx-usecs", "8"),
            nic("llnet0", "adaptive-rx", "off"),
            nic("llnet0", "gro", "off"),
            nic("llnet0", "combined", "2"),
            nic("llnet0", "napi_defer_hard_irqs", "2"),
        ]);
        settings
    }) {
        Ok(plan) => plan,
        Err(e) => {
            // A planner that refused every machine would pass here: under CI this fails.
            crate::support::missing_data(&format!("a machine the plan can partition ({e})"));
            return;
        }
    };
    let files = artifacts::render(&plan);
    let get = |path: &str| {
        files
            .iter()
            .find(|a| a.path == path)
            .map(|a| a.to_text().into_owned())
            .unwrap()
    };

    let tmp = tempfile::tempdir().unwrap();
    let system = tmp.path().join("usr-lib-tuned");
    copy_tree(Path::new(TUNED_PROFILES), &system);
    // cpu-partitioning reads its variables from /etc/tuned; point the copy at ours.
    let variables = tmp.path().join("cpu-partitioning-variables.conf");
    std::fs::write(&variables, get("tuned/cpu-partitioning-variables.conf")).unwrap();
    let cpu_part = system.join("cpu-partitioning/tuned.conf");
    let text = std::fs::read_to_string(&cpu_part).unwrap();
    let patched = text.replace(
        "/etc/tuned/cpu-partitioning-variables.conf",
        &variables.display().to_string(),
    );
    assert_ne!(
        text, patched,
        "cpu-partitioning no longer includes its variables file"
    );
    std::fs::write(&cpu_part, patched).unwrap();
    let site = tmp.path().join("etc-tuned");
    std::fs::create_dir_all(site.join("lowlat")).unwrap();
    std::fs::write(
        site.join("lowlat/tuned.conf"),
        get("tuned/lowlat/tuned.conf"),
    )
    .unwrap();

    let out = Command::new(PYTHON)
        .args(["-c", SCRIPT])
        .arg(&system)
        .arg(&site)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "TuneD refused the profile:\n{stderr}\n{stdout}"
    );
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
            .unwrap_or_else(|| panic!("TuneD printed no {key}:\n{stdout}\n{stderr}"))
            .to_string()
    };
    let iso = plan.partition.isolated.to_list();
    assert!(value("listed").split(',').any(|name| name == "lowlat"));
    assert_eq!(value("isolated_cores"), iso);
    assert!(
        value("bootloader.cmdline_cpu_part").contains(&format!("nohz_full={iso}")),
        "cpu-partitioning derived its arguments from our variables"
    );
    let ours = value("bootloader.cmdline_lowlat");
    assert!(
        ours.contains(&format!("isolcpus=managed_irq,{iso}")),
        "{ours}"
    );
    assert!(ours.contains(&format!(
        "irqaffinity={}",
        plan.partition.housekeeping.to_list()
    )));
    // Every planned sysctl reached TuneD's [sysctl] unit with its value.
    for s in plan.layer(Layer::Sysctl) {
        let key = s.id.without_family();
        assert_eq!(value(&format!("sysctl.{key}")), s.value, "{key}");
    }
    // The NIC settings reached a net-plugin instance for their interface, and NAPI's file the
    // sysfs unit.
    assert_eq!(value("net_llnet0.type"), "net");
    assert_eq!(value("net_llnet0.devices"), "llnet0");
    assert_eq!(value("net_llnet0.coalesce"), "rx-usecs 8 adaptive-rx off");
    assert_eq!(value("net_llnet0.features"), "gro off");
    assert_eq!(value("net_llnet0.channels"), "combined 2");
    assert_eq!(
        value("sysfs./sys/class/net/llnet0/napi_defer_hard_irqs"),
        "2"
    );
    assert!(!stderr.contains("ERROR"), "TuneD logged errors:\n{stderr}");
}
