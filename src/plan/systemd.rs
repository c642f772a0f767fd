//! The systemd files of a plan: `lowlat-runtime.service`, the boot-time oneshot that applies
//! the run-time part of the plan (it replaces the guide's oneshot_script.sh), and the
//! `system.conf.d` drop-in that keeps PID 1 and every service it starts on the housekeeping
//! CPUs.

use crate::text::Page;

use super::Plan;

/// Where the unit is installed.
pub(crate) const RUNTIME_UNIT_PATH: &str = "/etc/systemd/system/lowlat-runtime.service";

/// The unit name.
pub(crate) const RUNTIME_UNIT: &str = "lowlat-runtime.service";

/// Where `lowlat apply` installs plan.json for the unit to read.
pub(crate) const PLAN_PATH: &str = "/etc/lowlat/plan.json";

/// How the units call the lowlat binary: by name, which systemd (239 and later) resolves on its
/// fixed search path, `/usr/local/bin` before `/usr/bin`. So the same unit runs the static
/// binary copied to `/usr/local/bin` (README, the Ansible install role) and the one the .deb and
/// .rpm install as `/usr/bin/lowlat`, and it is the lowlat a root shell runs as `lowlat`.
pub(crate) const BINARY: &str = "lowlat";

/// lowlat-runtime.service.
pub(crate) fn render_runtime_unit(header: &str) -> String {
    let mut out = Page::from(header);
    write!(
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
    out.into_string()
}

/// Where the watch unit goes when it is installed (by hand: `lowlat apply` does not).
pub(crate) const WATCH_UNIT_PATH: &str = "/etc/systemd/system/lowlat-watch.service";

/// The address the watch unit serves its metrics on.
pub(crate) const WATCH_LISTEN: &str = "127.0.0.1:9464";

/// lowlat-watch.service: `lowlat watch` on the housekeeping CPUs, serving Prometheus metrics.
pub(crate) fn render_watch_unit(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# Watches the isolated CPUs (what interrupts them) and the machine against the plan\n\
         # (drift), and serves both to Prometheus at http://{WATCH_LISTEN}/metrics. It runs on\n\
         # the housekeeping CPUs only and reads procfs counters, so it never disturbs the\n\
         # isolated ones. For node_exporter's textfile collector instead, replace --listen with\n\
         # --textfile /var/lib/node_exporter/textfile_collector/lowlat.prom and add\n\
         # ReadWritePaths=/var/lib/node_exporter/textfile_collector.\n\
         # Install: copy to {WATCH_UNIT_PATH}, then systemctl enable --now lowlat-watch.\n\n\
         [Unit]\n\
         Description=lowlat: watch the isolated CPUs and the plan, for Prometheus\n\
         ConditionPathExists={PLAN_PATH}\n\
         After={RUNTIME_UNIT}\n\n\
         [Service]\n\
         Type=simple\n\
         ExecStart={BINARY} watch --plan {PLAN_PATH} --listen {WATCH_LISTEN}\n\
         CPUAffinity={}\n\
         Nice=10\n\
         Restart=on-failure\n\
         RestartSec=10s\n\
         NoNewPrivileges=yes\n\
         ProtectSystem=strict\n\
         ProtectHome=yes\n\
         PrivateTmp=yes\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        plan.partition.housekeeping.to_list().replace(',', " ")
    );
    out.into_string()
}

/// system.conf.d/50-lowlat.conf: `CPUAffinity=` for PID 1, inherited by every service.
pub(crate) fn render_affinity_dropin(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# PID 1 and every process it starts run on the housekeeping CPUs; the workload is placed\n\
         # on isolated CPUs explicitly (taskset, numactl, its own affinity). Takes effect at the\n\
         # next boot (or `systemctl daemon-reexec` for services started afterwards).\n\n\
         [Manager]\n\
         CPUAffinity={}\n",
        plan.partition.housekeeping.to_list()
    );
    out.into_string()
}
