//! The irqbalance configuration of a plan: an environment file lowlat owns and a drop-in that
//! makes irqbalance.service read it after the distribution's own file
//! (`/etc/default/irqbalance` on Debian and Ubuntu, `/etc/sysconfig/irqbalance` on RHEL), so
//! the same two files work everywhere and no distribution file is edited.
//!
//! irqbalance reads `IRQBALANCE_BANNED_CPUS` (a mask, deprecated) before
//! `IRQBALANCE_BANNED_CPULIST` and lets it win, so a mask left in the distribution's file (or
//! written by another tool, such as OpenShift's `IRQBALANCE_BANNED_CPUS=0`) silently replaces
//! the list. Versions before 1.8 know only the mask, and treat an empty one as "ban nothing".
//! The file therefore sets both variables to the same CPUs: whichever one a version reads, the
//! isolated CPUs are banned.

use crate::text::Page;

use super::Plan;
use super::irq_plan;

/// Where the environment file is installed.
pub(crate) const ENV_PATH: &str = "/etc/lowlat/irqbalance.env";

/// Where the service drop-in is installed.
pub(crate) const DROPIN_PATH: &str = "/etc/systemd/system/irqbalance.service.d/50-lowlat.conf";

/// irqbalance.env.
pub(crate) fn render_env(plan: &Plan, header: &str) -> String {
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# Read by irqbalance.service after the distribution's environment file (see\n\
         # {DROPIN_PATH}), so these values win.\n\
         # irqbalance never places an IRQ on the isolated CPUs. Both variables hold the same\n\
         # CPUs: the deprecated mask wins over the list where both are read (1.8 and later, with\n\
         # a warning), and is the only one older versions read.\n\
         IRQBALANCE_BANNED_CPUS={}\n\
         IRQBALANCE_BANNED_CPULIST={}\n",
        plan.partition.isolated.to_mask(plan.partition.nr_cpus),
        plan.partition.isolated.to_list()
    );
    let pinned = irq_plan::pinned_irqs(plan);
    if !pinned.is_empty() {
        let args: Vec<String> = pinned.iter().map(|n| format!("--banirq={n}")).collect();
        write!(
            out,
            "# IRQs lowlat pins to one CPU each (the NIC queue spread): irqbalance leaves them\n\
             # alone. This replaces any IRQBALANCE_ARGS of the distribution's file.\n\
             IRQBALANCE_ARGS=\"{}\"\n",
            args.join(" ")
        );
    }
    out.into_string()
}

/// irqbalance.service.d/50-lowlat.conf.
pub(crate) fn render_dropin(header: &str) -> String {
    let mut out = Page::from(header);
    write!(
        out,
        "#\n# A later EnvironmentFile= overrides the variables of an earlier one.\n\n\
         [Service]\n\
         EnvironmentFile={ENV_PATH}\n"
    );
    out.into_string()
}
