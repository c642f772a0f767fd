//! The sysctls of a plan and `sysctl.d/99-lowlat.conf`. The partition-derived sysctl
//! (`kernel.watchdog_cpumask`) is planned here; the others come from the audit's findings.
//! Only keys that exist on the target kernel are set; the others are skipped with the reason.

use crate::text::{Page, comment};
use std::collections::BTreeMap;

use super::sources::GUIDE;
use super::{Draft, Inputs, Plan, Skipped, setting};
use crate::machine::Avail;
use crate::tuning::setting::Layer;
use crate::tuning::setting_id::SettingId;

/// Where the file is installed.
pub(crate) const INSTALL_PATH: &str = "/etc/sysctl.d/99-lowlat.conf";

/// The current value of each sysctl lowlat read from the target, or why it could not be read.
pub(crate) type SysctlValues = BTreeMap<String, Avail<String>>;

/// Adds the partition-derived sysctls.
pub(crate) fn plan(inputs: &Inputs, draft: &mut Draft) {
    draft.add(setting(
        SettingId::Sysctl("kernel.watchdog_cpumask".to_string()),
        inputs.partition.housekeeping.to_list(),
        Layer::Sysctl,
        "Runs the lockup watchdog's per-CPU timers and threads only on the housekeeping CPUs.",
        format!("{GUIDE} §4.2.1"),
    ));
}

/// Moves every sysctl setting whose key the target kernel does not have (or that lowlat could
/// not read) from `plan.settings` to `plan.skipped`.
pub(crate) fn keep_existing(values: &SysctlValues, plan: &mut Plan) {
    let settings = std::mem::take(&mut plan.settings);
    for s in settings {
        let Some(key) = key(&s.id) else {
            plan.settings.push(s);
            continue;
        };
        let reason = match values.get(key) {
            Some(Avail::Available(_)) => None,
            Some(Avail::Unavailable { unavailable }) => Some(unavailable.clone()),
            None => Some(format!(
                "lowlat did not read /proc/sys/{} on the target",
                key.replace('.', "/")
            )),
        };
        match reason {
            None => plan.settings.push(s),
            Some(reason) => plan.skipped.push(Skipped { setting: s, reason }),
        }
    }
}

/// The key of a sysctl setting.
pub(crate) fn key(id: &SettingId) -> Option<&str> {
    match id {
        SettingId::Sysctl(key) => Some(key),
        _ => None,
    }
}

/// sysctl.d/99-lowlat.conf: every planned sysctl with its reason, then the skipped ones as
/// comments.
pub(crate) fn render(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    out.text(
        "#\n# systemd-sysctl applies this file at boot; `sysctl -p /etc/sysctl.d/99-lowlat.conf`\n\
         # applies it now. Only keys that exist on the target kernel are set.\n",
    );
    for s in plan.layer(Layer::Sysctl) {
        let Some(key) = key(&s.id) else { continue };
        write!(
            out,
            "\n# {} [{}]\n{key} = {}\n",
            comment(&s.rationale),
            comment(&s.source),
            s.value
        );
    }
    let skipped: Vec<&Skipped> = plan.skipped_in(Layer::Sysctl).collect();
    if !skipped.is_empty() {
        out.text("\n# Skipped:\n");
        for s in skipped {
            let key = match key(&s.setting.id) {
                Some(key) => key.to_string(),
                None => s.setting.id.to_string(),
            };
            writeln!(
                out,
                "# {} = {}    ({})",
                comment(&key),
                comment(&s.setting.value),
                comment(&s.reason)
            );
        }
    }
    out.into_string()
}
