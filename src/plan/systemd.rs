//! The systemd files of a plan: `lowlat-runtime.service`, the boot-time oneshot that applies
//! the run-time part of the plan (it replaces the guide's oneshot_script.sh), and the
//! `system.conf.d` drop-in that keeps PID 1 and every service it starts on the housekeeping
//! CPUs.

use std::fmt::Write;

use super::Plan;

/// Where the unit is installed.
pub(crate) const RUNTIME_UNIT_PATH: &str = "/etc/systemd/system/lowlat-runtime.service";

/// The unit name.
pub(crate) const RUNTIME_UNIT: &str = "lowlat-runtime.service";

/// Where `lowlat apply` installs plan.json for the unit to read.
pub(crate) const PLAN_PATH: &str = "/etc/lowlat/plan.json";

/// Where the unit expects the lowlat binary.
pub(crate) const BINARY: &str = "/usr/local/bin/lowlat";

/// lowlat-runtime.service.
pub(crate) fn render_runtime_unit(header: &str) -> String {
    let mut out = String::from(header);
    let _ = write!(
        out,
        "#\n# Applies the run-time part of the plan at every boot: sysctls, IRQ placement (NIC\n\
         # queues included, once the interfaces are up), workqueue masks, kernel-thread affinity\n\
         # and priorities. It runs before multi-user.target is reached; a workload unit that must\n\
         # start on a tuned machine adds After={RUNTIME_UNIT} and Requires={RUNTIME_UNIT}.\n\n\
         [Unit]\n\
         Description=lowlat: apply the run-time part of the low-latency plan\n\
         ConditionPathExists={PLAN_PATH}\n\
         Wants=network-online.target\n\
         After=systemd-sysctl.service network-online.target irqbalance.service\n\
         Before=multi-user.target\n\n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         ExecStart={BINARY} apply --runtime --yes --plan {PLAN_PATH}\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    );
    out
}

/// system.conf.d/50-lowlat.conf: `CPUAffinity=` for PID 1, inherited by every service.
pub(crate) fn render_affinity_dropin(plan: &Plan, header: &str) -> String {
    let mut out = String::from(header);
    let _ = write!(
        out,
        "#\n# PID 1 and every process it starts run on the housekeeping CPUs; the workload is placed\n\
         # on isolated CPUs explicitly (taskset, numactl, its own affinity). Takes effect at the\n\
         # next boot (or `systemctl daemon-reexec` for services started afterwards).\n\n\
         [Manager]\n\
         CPUAffinity={}\n",
        plan.partition.housekeeping.to_list()
    );
    out
}
