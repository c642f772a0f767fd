//! The TuneD rendering of a plan, for sites that keep TuneD: a `lowlat` profile that includes
//! TuneD's cpu-partitioning profile, and the `cpu-partitioning-variables.conf` that profile
//! reads its CPU lists from.
//!
//! cpu-partitioning derives `nohz=on`, `nohz_full`, `rcu_nocbs`, `nosoftlockup`, the
//! workqueue masks, systemd's `CPUAffinity`, irqbalance's banned CPUs and (for
//! `no_balance_cores`) `isolcpus=<cpus>` from the variables; the profile adds the rest of the
//! plan's boot arguments and sysctls. Boot arguments the plan removes cannot be removed by
//! TuneD (it only removes what it added), so they are listed as comments. The plan's NIC
//! settings become net-plugin sections ([`nic::render_tuned`]).

use crate::text::{Page, comment, is_host_name};

use super::Plan;
use super::kernel_cmdline;
use super::nic;
use super::sysctl;
use crate::tuning::setting::Layer;

/// The profile name.
pub(crate) const PROFILE: &str = "lowlat";

/// Where the variables file is installed (cpu-partitioning reads it from there).
pub(crate) const VARIABLES_PATH: &str = "/etc/tuned/cpu-partitioning-variables.conf";

/// Where the profile is installed.
pub(crate) const PROFILE_PATH: &str = "/etc/tuned/lowlat/tuned.conf";

/// Boot settings that cpu-partitioning (or network-latency, which it includes) already
/// derives from the same variables; the profile does not repeat them.
const FROM_CPU_PARTITIONING: &[&str] = &[
    "nohz",
    "nohz_full",
    "rcu_nocbs",
    "nosoftlockup",
    "skew_tick",
];

/// tuned/lowlat/tuned.conf.
pub(crate) fn render_profile(plan: &Plan, header: &str) -> String {
    let p = &plan.partition;
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# A TuneD profile built on cpu-partitioning: install it as {PROFILE_PATH}, install\n\
         # cpu-partitioning-variables.conf as {VARIABLES_PATH}, then run\n\
         # `tuned-adm profile {PROFILE}`. Use either this profile or `lowlat apply` for the boot\n\
         # arguments and sysctls, not both. The IRQ spread of NIC queues and the kernel-thread\n\
         # placement are applied by lowlat-runtime.service in either case.\n\
         # cpu-partitioning also adds intel_pstate=disable to the command line, and nosoftlockup:\n\
         # a trade-off, which lowlat's own plan leaves out unless --allow-security-tradeoffs.\n\n\
         [main]\n\
         summary=lowlat plan{host}: housekeeping {hk}, isolated {iso}\n\
         include=cpu-partitioning\n",
        host = summary_host(&plan.target.host),
        hk = p.housekeeping.to_list(),
        iso = p.isolated.to_list(),
    );

    let sysctls: Vec<_> = plan
        .layer(Layer::Sysctl)
        .filter_map(|s| sysctl::key(&s.id).map(|key| (key, &s.value)))
        .collect();
    if !sysctls.is_empty() {
        out.text("\n[sysctl]\n");
        for (key, value) in sysctls {
            writeln!(out, "{key}={value}");
        }
    }
    out.text(nic::render_tuned(plan));

    let mut args = vec![format!("isolcpus=managed_irq,{}", p.isolated.to_list())];
    let mut removed = Vec::new();
    for s in plan.layer(Layer::Boot) {
        let key = s.id.cmdline_key().unwrap_or_default();
        if key == "isolcpus" || FROM_CPU_PARTITIONING.contains(&key) {
            continue;
        }
        if s.value.trim().is_empty() {
            removed.extend(kernel_cmdline::owned_keys(s));
        } else {
            args.extend(s.value.split_whitespace().map(str::to_string));
        }
    }
    out.text("\n[bootloader]\n");
    if !removed.is_empty() {
        writeln!(
            out,
            "# Remove by hand (TuneD only removes arguments it added): {}",
            comment(&removed.join(" "))
        );
    }
    writeln!(out, "cmdline_lowlat=+{}", args.join(" "));
    out.into_string()
}

/// ` for HOST` in the profile's summary, where TuneD shows it (`tuned-adm list`): only a host
/// name ([`is_host_name`]) goes into an INI value, where `#` starts a comment and `${…}` is
/// expanded; any other name is left out (the header shows it quoted).
fn summary_host(host: &str) -> String {
    if is_host_name(host) {
        format!(" for {host}")
    } else {
        String::new()
    }
}

/// cpu-partitioning-variables.conf.
pub(crate) fn render_variables(plan: &Plan, header: &str) -> String {
    let p = &plan.partition;
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# Read by TuneD's cpu-partitioning profile (and so by the {PROFILE} profile).\n\
         isolated_cores={}\n",
        p.isolated.to_list()
    );
    if !p.no_balance.is_empty() {
        writeln!(out, "no_balance_cores={}", p.no_balance.to_list());
    }
    out.into_string()
}
