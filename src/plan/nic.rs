//! The plan's NIC settings (`nic:<interface>:<knob>`) outside `lowlat apply`: the TuneD
//! profile's net-plugin sections, and the udev rule that sets them again whenever an interface
//! appears (boot, driver reload, a device reset that re-registers it, hot-plug) or is renamed.
//! Both are rendered from the same settings apply makes, as the `ethtool` arguments
//! [`Knob::ethtool_option`] names and the sysfs files of NAPI's knobs.

use crate::text::{Page, comment};
use std::collections::BTreeMap;

use super::Plan;
use crate::machine::nic::knob::{Knob, sysfs_path};
use crate::tuning::setting_id::SettingId;

/// Where the udev rule is installed: after `80-net-setup-link.rules`, which names interfaces.
pub(crate) const UDEV_RULES_PATH: &str = "/etc/udev/rules.d/81-lowlat-nic.rules";

/// The ethtool udev runs (udev needs an absolute path; Debian, Ubuntu, RHEL and SUSE install
/// it there).
const ETHTOOL: &str = "/usr/sbin/ethtool";

/// The ethtool options in the order they are applied, with the TuneD net-plugin option that
/// takes the same arguments: channels first, since a new channel count can reset a driver's
/// rings and coalescing.
const OPTIONS: [(&str, &str); 4] = [
    ("-L", "channels"),
    ("-G", "ring"),
    ("-C", "coalesce"),
    ("-K", "features"),
];

/// The planned NIC knobs, by interface (in name order), each interface's knobs in
/// [`Knob::ALL`]'s order with the plan's value (`8`, `off`).
pub(crate) fn by_interface(plan: &Plan) -> BTreeMap<&str, BTreeMap<Knob, &str>> {
    let mut out: BTreeMap<&str, BTreeMap<Knob, &str>> = BTreeMap::new();
    for s in &plan.settings {
        if let SettingId::Nic { interface, knob } = &s.id {
            out.entry(interface.as_str())
                .or_default()
                .insert(*knob, s.value.as_str());
        }
    }
    out
}

/// Whether `interface` can be written into a udev rule or a TuneD `devices=` as it is: udev
/// reads `*?[` as patterns, `$%` as substitutions and `"` as the end of a value; TuneD splits
/// `devices=` on commas and reads `!` as negation.
pub(crate) fn plain_name(interface: &str) -> bool {
    interface
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b))
}

/// One interface's ethtool knobs as argument strings, by option in the order they are
/// applied: `("-C", "coalesce", "rx-usecs 8 adaptive-rx off")`.
pub(crate) fn ethtool_args(
    knobs: &BTreeMap<Knob, &str>,
) -> Vec<(&'static str, &'static str, String)> {
    OPTIONS
        .iter()
        .filter_map(|&(option, tuned)| {
            let words: Vec<String> = knobs
                .iter()
                .filter_map(|(knob, value)| {
                    let (o, word) = knob.ethtool_option()?;
                    (o == option).then(|| format!("{word} {value}"))
                })
                .collect();
            (!words.is_empty()).then(|| (option, tuned, words.join(" ")))
        })
        .collect()
}

/// One interface's NAPI knobs (sysfs files), with their values.
pub(crate) fn sysfs_knobs<'m, 'a: 'm>(
    knobs: &'m BTreeMap<Knob, &'a str>,
) -> impl Iterator<Item = (Knob, &'a str)> + 'm {
    knobs
        .iter()
        .filter(|(knob, _)| knob.ethtool_option().is_none())
        .map(|(knob, value)| (*knob, *value))
}

/// The TuneD sections of the plan's NIC settings: one `[net_<interface>]` instance of the net
/// plugin per interface (`coalesce=`, `ring=`, `channels=`, `features=` take ethtool's
/// arguments), and a `[sysfs]` section for NAPI's files, which the net plugin does not set.
/// Empty when the plan has none.
pub(crate) fn render_tuned(plan: &Plan) -> String {
    let mut out = Page::new();
    let mut sysfs = Vec::new();
    for (interface, knobs) in by_interface(plan) {
        if !plain_name(interface) {
            writeln!(
                out,
                "\n# {}: not written (a name TuneD's devices= would read as a pattern); \
                 lowlat apply sets its knobs.",
                comment(interface)
            );
            continue;
        }
        write!(out, "\n[net_{interface}]\ntype=net\ndevices={interface}\n");
        for (_, tuned, args) in ethtool_args(&knobs) {
            writeln!(out, "{tuned}={args}");
        }
        sysfs.extend(
            sysfs_knobs(&knobs).map(|(knob, value)| (sysfs_path(interface, knob.name()), value)),
        );
    }
    if !sysfs.is_empty() {
        out.text("\n# NAPI's per-device knobs, which the net plugin does not set.\n[sysfs]\n");
        for (path, value) in sysfs {
            writeln!(out, "{path}={value}");
        }
    }
    out.into_string()
}

/// The udev rule file: for each interface with planned knobs, rules that match its `add`
/// (the device registered: boot, driver reload, reset, hot-plug) and `move` (renamed to this
/// name) events, set NAPI's files with `ATTR{}` and run ethtool once per option. `None` when
/// the plan has no NIC setting.
pub(crate) fn render_udev_rules(plan: &Plan, header: &str) -> Option<String> {
    let interfaces = by_interface(plan);
    if interfaces.is_empty() {
        return None;
    }
    let mut out = Page::from(header);
    out.text(
        "#\n# Sets the plan's NIC knobs again whenever an interface appears (boot, driver reload,\n\
         # a reset that re-registers the device, hot-plug) or is renamed to its planned name;\n\
         # lowlat-runtime.service sets them at boot too. A carrier flap (link down/up) sends no\n\
         # udev event: a driver that resets its settings on link down needs\n\
         # `lowlat apply --runtime` again. Installed by `lowlat apply`, removed by\n\
         # `lowlat revert`; udevd rereads changed rules by itself (`udevadm control --reload`).\n",
    );
    for (interface, knobs) in interfaces {
        if !plain_name(interface) {
            writeln!(
                out,
                "\n# {}: no rule (a name udev would read as a pattern); lowlat apply sets its knobs.",
                comment(interface)
            );
            continue;
        }
        writeln!(out, "\n# {interface}");
        let matches = format!("ACTION==\"add|move\", SUBSYSTEM==\"net\", KERNEL==\"{interface}\"");
        let attrs: Vec<String> = sysfs_knobs(&knobs)
            .map(|(knob, value)| format!("ATTR{{{}}}=\"{value}\"", knob.name()))
            .collect();
        if !attrs.is_empty() {
            writeln!(out, "{matches}, {}", attrs.join(", "));
        }
        for (option, _, args) in ethtool_args(&knobs) {
            writeln!(
                out,
                "{matches}, RUN+=\"{ETHTOOL} {option} {interface} {args}\""
            );
        }
    }
    Some(out.into_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{artifacts, setting};
    use crate::tuning::setting::Layer;

    /// The plan of a fixture VM with NIC settings on eth0 and a veth, as the audit's fixes and
    /// a hand-written plan would carry them.
    fn nic_plan() -> Plan {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/kvm-guest-2vcpu");
        let machine = crate::machine::Machine::read(&crate::sysroot::SysRoot::dir(dir));
        let knobs = [
            ("eth0", Knob::Gro, "off"),
            ("eth0", Knob::RxUsecs, "8"),
            ("eth0", Knob::AdaptiveRx, "off"),
            ("eth0", Knob::RxRing, "512"),
            ("veth0", Knob::RxChannels, "2"),
            ("veth0", Knob::TxChannels, "2"),
            ("veth0", Knob::NapiDeferHardIrqs, "2"),
            ("veth0", Knob::GroFlushTimeout, "200000"),
            ("we*rd", Knob::Gro, "off"),
        ];
        let settings = || {
            knobs
                .iter()
                .map(|&(interface, knob, value)| {
                    let id = SettingId::Nic {
                        interface: interface.into(),
                        knob,
                    };
                    setting(id, value, Layer::Runtime, "test", "test")
                })
                .collect()
        };
        crate::plan::build(&machine, &Default::default(), |_| settings()).unwrap()
    }

    fn artifact(plan: &Plan, path: &str) -> String {
        artifacts::render(plan)
            .into_iter()
            .find(|a| a.path == path)
            .unwrap_or_else(|| panic!("no {path}"))
            .to_text()
            .into_owned()
    }

    #[test]
    fn the_tuned_profile_has_one_net_instance_per_interface_and_napi_files_in_sysfs() {
        let plan = nic_plan();
        let profile = artifact(&plan, "tuned/lowlat/tuned.conf");
        let from = profile.find("\n[net_eth0]").expect("the net sections");
        let to = profile.find("\n[bootloader]").unwrap();
        assert_eq!(
            &profile[from..to],
            "\n[net_eth0]\ntype=net\ndevices=eth0\n\
             ring=rx 512\n\
             coalesce=rx-usecs 8 adaptive-rx off\n\
             features=gro off\n\
             \n[net_veth0]\ntype=net\ndevices=veth0\n\
             channels=rx 2 tx 2\n\
             \n# we*rd: not written (a name TuneD's devices= would read as a pattern); lowlat apply sets its knobs.\n\
             \n# NAPI's per-device knobs, which the net plugin does not set.\n[sysfs]\n\
             /sys/class/net/veth0/napi_defer_hard_irqs=2\n\
             /sys/class/net/veth0/gro_flush_timeout=200000\n"
        );
    }

    #[test]
    fn the_udev_rule_is_an_installed_file_of_the_plan_with_one_rule_per_option() {
        let plan = nic_plan();
        let installed = plan
            .setting(&SettingId::File(UDEV_RULES_PATH.into()))
            .expect("apply installs the rule");
        assert_eq!(installed.layer, Layer::File);
        let rules = artifact(&plan, "udev/81-lowlat-nic.rules");
        assert_eq!(
            rules, installed.value,
            "the artifact is what apply installs"
        );
        assert!(rules.starts_with("# Generated by lowlat"), "{rules}");
        assert!(rules.contains(&format!("# Install as: {UDEV_RULES_PATH}\n")));
        let body = &rules[rules.find("\n# eth0").unwrap()..];
        let m = "ACTION==\"add|move\", SUBSYSTEM==\"net\"";
        assert_eq!(
            body,
            format!(
                "\n# eth0\n\
                 {m}, KERNEL==\"eth0\", RUN+=\"/usr/sbin/ethtool -G eth0 rx 512\"\n\
                 {m}, KERNEL==\"eth0\", RUN+=\"/usr/sbin/ethtool -C eth0 rx-usecs 8 adaptive-rx off\"\n\
                 {m}, KERNEL==\"eth0\", RUN+=\"/usr/sbin/ethtool -K eth0 gro off\"\n\
                 \n# veth0\n\
                 {m}, KERNEL==\"veth0\", ATTR{{napi_defer_hard_irqs}}=\"2\", ATTR{{gro_flush_timeout}}=\"200000\"\n\
                 {m}, KERNEL==\"veth0\", RUN+=\"/usr/sbin/ethtool -L veth0 rx 2 tx 2\"\n\
                 \n# we*rd: no rule (a name udev would read as a pattern); lowlat apply sets its knobs.\n"
            )
        );
    }

    #[test]
    fn a_plan_without_nic_settings_has_no_rule_and_no_net_section() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/kvm-guest-2vcpu");
        let machine = crate::machine::Machine::read(&crate::sysroot::SysRoot::dir(dir));
        let plan = crate::plan::build(&machine, &Default::default(), |_| Vec::new()).unwrap();
        assert!(
            plan.setting(&SettingId::File(UDEV_RULES_PATH.into()))
                .is_none()
        );
        assert!(
            !artifacts::render(&plan)
                .iter()
                .any(|a| a.path.starts_with("udev/"))
        );
        let profile = artifact(&plan, "tuned/lowlat/tuned.conf");
        assert!(!profile.contains("type=net") && !profile.contains("[sysfs]"));
    }
}
