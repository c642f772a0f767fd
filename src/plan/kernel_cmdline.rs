//! The kernel command line of a plan: which arguments to add and remove, why, and the commands
//! that install them with grubby or through /etc/default/grub.

use crate::text::{Page, comment, shell_word};
use std::collections::BTreeSet;

use super::request::{HugepagePool, PlanProfile, PowerPolicy};
use super::sources::{GUIDE, KERNEL_PARAMS, RT_GUIDE};
use super::{Draft, Inputs, Plan, PlanError, cmdline_size, setting};
use crate::audit::rules::boot::NOSOFTLOCKUP_TRADEOFF;
use crate::audit::rules::sysctl::NMI_WATCHDOG_TRADEOFF;
use crate::audit::site::SiteKernel;
use crate::machine::cpu::CpuIdentity;
use crate::machine::cpulist::ListSyntax;
use crate::machine::kernel::cmdline::Param;
use crate::tuning::partition::Partition;
use crate::tuning::setting::{Layer, Setting};
use crate::tuning::setting_id::SettingId;

/// A boot setting adding `args` under the key `key`.
fn boot(key: &str, args: impl Into<String>, rationale: &str, source: &str) -> Setting {
    setting(
        SettingId::Cmdline(key.to_string()),
        args,
        Layer::Boot,
        rationale,
        source,
    )
}

/// A boot setting with a security trade-off label.
fn tradeoff(key: &str, arg: &str, rationale: &str, tradeoff: &str) -> Setting {
    Setting {
        security_tradeoff: Some(tradeoff.to_string()),
        ..boot(key, arg, rationale, &format!("{GUIDE} §4.3.5"))
    }
}

/// Adds the boot arguments of the plan to `draft`.
pub(crate) fn plan(inputs: &Inputs, draft: &mut Draft) -> Result<(), PlanError> {
    let p = inputs.partition;
    let options = &inputs.request.options;
    let cpu = inputs.machine.cpu.get();
    let syntax = cmdline_size::list_syntax(&inputs.machine.kernel);
    let iso = p.isolated.to_list_in(syntax);
    let hk = p.housekeeping.to_list_in(syntax);

    draft.add(boot(
        "isolcpus",
        isolcpus_args(p, syntax),
        &isolcpus_rationale(p),
        &format!("{GUIDE} §4.3.2 (no_balance_cores); {KERNEL_PARAMS} (isolcpus=)"),
    ));
    draft.add(boot(
        "nohz_full",
        format!("nohz_full={iso}"),
        "Stops the scheduler tick on isolated CPUs that run a single task, and keeps unbound kernel threads and timers off them.",
        &format!("{GUIDE} §4.4.1"),
    ));
    draft.add(boot(
        "rcu_nocbs",
        format!("rcu_nocbs={iso}"),
        "Runs the RCU callbacks of isolated CPUs in kernel threads on the housekeeping CPUs.",
        &format!("{GUIDE} §4.4.1"),
    ));
    draft.add(boot(
        "irqaffinity",
        format!("irqaffinity={hk}"),
        "Gives every IRQ set up during boot the housekeeping CPUs as its affinity, before any run-time placement.",
        &format!("TuneD realtime-virtual-host profile; {KERNEL_PARAMS} (irqaffinity=)"),
    ));
    draft.add(boot(
        "nohz",
        "nohz=on",
        "Lets idle CPUs stop their tick (the base nohz_full builds on).",
        &format!("{GUIDE} §4.4.1"),
    ));
    draft.add(boot(
        "skew_tick",
        "skew_tick=1",
        "Offsets the tick of each CPU so that they do not all contend for the jiffies and timer locks at once.",
        &format!("TuneD network-latency profile; {RT_GUIDE}"),
    ));
    plan_tsc(cpu, draft);
    draft.add(boot(
        "transparent_hugepage",
        "transparent_hugepage=never",
        "No transparent hugepages: khugepaged scans and compaction stall page faults unpredictably; use explicit hugepages.",
        &format!("{GUIDE} §4.3.5"),
    ));
    plan_hugepages(inputs, &options.hugepages, draft)?;
    plan_idle(options.power, cpu, draft);
    plan_tradeoffs(inputs, draft);
    plan_removals(inputs, draft);
    Ok(())
}

/// Lays a site profile's `[kernel]` over the plan's command line, last: each argument added
/// replaces the plan's (or the profile's) argument of its key, planned or left out (the site
/// asked for it; the same argument left out as a trade-off keeps its label), each key removed is taken off whatever the plan
/// or the profile wanted of it. Each names its file and line as its source.
pub(crate) fn site_arguments(kernel: &SiteKernel, profile: PlanProfile, draft: &mut Draft) {
    for (arg, remove) in
        (kernel.add.iter().map(|a| (a, false))).chain(kernel.remove.iter().map(|a| (a, true)))
    {
        let before = draft.take_decided(&SettingId::Cmdline(arg.key.clone()));
        let replaced = (before.as_ref())
            .filter(|s| !s.value.is_empty() && s.value != arg.arg)
            .map(|s| format!("; it wins over the {profile} plan's `{}`", s.value))
            .unwrap_or_default();
        let (value, rationale) = if remove {
            (
                String::new(),
                format!("Taken off the command line by the site profile{replaced}."),
            )
        } else {
            (
                arg.arg.clone(),
                format!("Added by the site profile{replaced}."),
            )
        };
        // The label belongs to the argument it was given for, not to another value of its key.
        let tradeoff =
            (before.filter(|s| !remove && s.value == arg.arg)).and_then(|s| s.security_tradeoff);
        draft.add(Setting {
            security_tradeoff: tradeoff,
            ..boot(&arg.key, value, &rationale, &arg.place.to_string())
        });
    }
}

/// Takes off the command line the idle arguments the power policy does not set itself:
/// `idle=` (poll) always, and with the balanced policy every idle limit. The plan owns these
/// keys (`findings::PLAN_KEYS`), so it says what it wants of them whatever the running command
/// line holds: a removal is "already as planned" where the argument is absent, and plan →
/// apply → reboot → plan is a fixed point.
fn plan_removals(inputs: &Inputs, draft: &mut Draft) {
    let power = inputs.request.options.power;
    let poll = "No idle=: idle=poll keeps every idle CPU spinning at full power, the housekeeping cores and idle SMT siblings included, taking turbo headroom and pipeline slots from the busy cores; the isolated cores that busy-poll gain nothing from it.";
    let no_limit = "The balanced power policy sets no idle limit on the command line.";
    let mut conflicts: Vec<(&str, &str)> = vec![("idle", poll)];
    if power == PowerPolicy::Balanced {
        conflicts.extend([
            ("cpuidle.off", no_limit),
            ("processor.max_cstate", no_limit),
            ("intel_idle.max_cstate", no_limit),
        ]);
    }
    for (key, why) in conflicts {
        if !draft.has(&SettingId::Cmdline(key.to_string())) {
            draft.add(boot(
                key,
                "",
                why,
                &format!("{GUIDE} §4.3.5 (what it sets)"),
            ));
        }
    }
}

/// `isolcpus=`: managed IRQs off every isolated CPU; scheduler domains (no load balancing) on
/// the no-balance CPUs. Two arguments when the sets differ: the kernel keeps one housekeeping
/// mask per flag. The CPU lists are written in `syntax`.
pub(crate) fn isolcpus_args(p: &Partition, syntax: ListSyntax) -> String {
    let iso = p.isolated.to_list_in(syntax);
    if p.no_balance.is_empty() {
        format!("isolcpus=managed_irq,{iso}")
    } else if p.no_balance == p.isolated {
        format!("isolcpus=managed_irq,domain,{iso}")
    } else {
        format!(
            "isolcpus=managed_irq,{iso} isolcpus=domain,{}",
            p.no_balance.to_list_in(syntax)
        )
    }
}

fn isolcpus_rationale(p: &Partition) -> String {
    let managed = "Keeps kernel-managed IRQs (multi-queue NVMe and NIC vectors, whose affinity cannot be changed at run time) off the isolated CPUs (managed_irq).";
    if p.no_balance.is_empty() {
        format!(
            "{managed} The isolated CPUs keep scheduler load balancing among themselves; pin each latency-critical thread."
        )
    } else if p.no_balance == p.isolated {
        format!(
            "{managed} Takes the isolated CPUs out of scheduler load balancing (domain): tasks placed there are never migrated."
        )
    } else {
        format!(
            "{managed} Takes the no-balance CPUs {} out of scheduler load balancing (domain) with a second isolcpus= argument, which kernels without per-flag housekeeping masks ignore with the warning 'Housekeeping: nohz_full= must match isolcpus='.",
            p.no_balance.to_list()
        )
    }
}

fn plan_tsc(cpu: Option<&CpuIdentity>, draft: &mut Draft) {
    let arg = boot(
        "tsc",
        "tsc=reliable",
        "Marks the TSC reliable: no clocksource watchdog timer, no fall-back to HPET when the watchdog misjudges it.",
        &format!("{GUIDE} §4.3.5; {RT_GUIDE}"),
    );
    match cpu {
        Some(cpu) if cpu.invariant_tsc() => draft.add(arg),
        Some(_) => draft.skip(
            arg,
            "the CPU does not report an invariant TSC (constant_tsc and nonstop_tsc); the clocksource watchdog must stay",
        ),
        None => draft.skip(
            arg,
            "the CPU flags are unknown (/proc/cpuinfo unreadable), so an invariant TSC cannot be confirmed",
        ),
    }
}

/// Hugepage pools on the command line, checked against the CPU's page sizes and the memory.
fn plan_hugepages(
    inputs: &Inputs,
    pools: &[HugepagePool],
    draft: &mut Draft,
) -> Result<(), PlanError> {
    let Some(first) = pools.first() else {
        return Ok(());
    };
    let refuse = |pool: &HugepagePool, problem: String| PlanError::Hugepages {
        pool: pool.to_string(),
        problem,
    };
    let mut sizes = BTreeSet::new();
    let kernel_sizes: Vec<HugepagePool> = inputs
        .machine
        .kernel
        .hugepages
        .global
        .iter()
        .map(|p| HugepagePool {
            size_kib: p.size_kib,
            count: 1,
        })
        .collect();
    for pool in pools {
        if !sizes.insert(pool.size_kib) {
            return Err(refuse(
                pool,
                "this page size is given twice; give each size once".into(),
            ));
        }
        if !kernel_sizes.is_empty() {
            if !kernel_sizes.iter().any(|k| k.size_kib == pool.size_kib) {
                let offered: Vec<String> =
                    kernel_sizes.iter().map(HugepagePool::size_arg).collect();
                return Err(refuse(
                    pool,
                    format!(
                        "the kernel offers hugepages of {} only; use one of those sizes",
                        offered.join(", ")
                    ),
                ));
            }
        } else if let Some(cpu) = inputs.machine.cpu.get().filter(|c| is_x86(c)) {
            match pool.size_kib {
                2048 => {}
                1_048_576 if cpu.has_flag("pdpe1gb") => {}
                1_048_576 => {
                    return Err(refuse(
                        pool,
                        "the CPU has no 1 GiB page support (no pdpe1gb flag); use 2M pages".into(),
                    ));
                }
                _ => {
                    return Err(refuse(
                        pool,
                        "x86 pages are 2M or 1G; use one of those sizes".into(),
                    ));
                }
            }
        }
    }
    let total_kib: u64 = pools.iter().map(HugepagePool::total_kib).sum();
    let memory_kib: Option<u64> = inputs
        .machine
        .topology
        .nodes
        .iter()
        .map(|n| n.mem_total_kib.get().copied())
        .sum();
    if let Some(memory_kib) = memory_kib.filter(|&m| m > 0)
        && total_kib >= memory_kib
    {
        return Err(refuse(
            first,
            format!(
                "the pools take {} GiB but the machine has {} GiB of memory; ask for fewer pages",
                total_kib >> 20,
                memory_kib >> 20
            ),
        ));
    }
    let mut args = Page::from(format!("default_hugepagesz={}", first.size_arg()));
    for pool in pools {
        write!(
            args,
            " hugepagesz={} hugepages={}",
            pool.size_arg(),
            pool.count
        );
    }
    draft.add(boot(
        "hugepages",
        args,
        "Reserves the hugepage pools at boot, while memory is not yet fragmented (1 GiB pages can only be had reliably then); the first size is the default.",
        &format!("{GUIDE} §4.3.5; {RT_GUIDE}"),
    ));
    Ok(())
}

fn is_x86(cpu: &CpuIdentity) -> bool {
    matches!(
        cpu.vendor.as_deref(),
        Some("GenuineIntel" | "AuthenticAMD" | "HygonGenuine")
    )
}

/// Idle-state arguments chosen by the power policy.
fn plan_idle(power: PowerPolicy, cpu: Option<&CpuIdentity>, draft: &mut Draft) {
    let source = format!("{GUIDE} §4.3.5; {RT_GUIDE}");
    match power {
        PowerPolicy::Latency => {
            draft.add(boot(
                "processor.max_cstate",
                "processor.max_cstate=1",
                "Limits idle to C1 (wake-up in about a microsecond) instead of deep C-states (tens to hundreds of microseconds). Chosen over idle=poll, which burns the housekeeping cores and idle SMT siblings at full power for little gain.",
                &source,
            ));
            if cpu.and_then(|c| c.vendor.as_deref()) == Some("GenuineIntel") {
                draft.add(boot(
                    "intel_idle.max_cstate",
                    "intel_idle.max_cstate=0",
                    "Disables the intel_idle driver, which ignores processor.max_cstate, so that the C1 limit holds.",
                    &source,
                ));
            }
        }
        PowerPolicy::Balanced => {}
    }
}

/// The trade-offs of the guides (see `Setting::security_tradeoff` for the one rule): planned
/// only with `--allow-security-tradeoffs`, else listed as not planned.
fn plan_tradeoffs(inputs: &Inputs, draft: &mut Draft) {
    let allowed = inputs.request.options.allow_security_tradeoffs;
    let cmdline = inputs.machine.kernel.cmdline.get();
    let offers = [
        Setting {
            source: format!("{GUIDE} §4.4.1"),
            ..tradeoff(
                "nosoftlockup",
                "nosoftlockup",
                "Disables the soft-lockup detector, whose per-CPU timer would interrupt the isolated CPUs and which reports busy-polling threads as lockups. Without it the detector still leaves the isolated CPUs alone: nohz_full CPUs are outside kernel.watchdog_cpumask, which the plan sets to the housekeeping CPUs.",
                NOSOFTLOCKUP_TRADEOFF,
            )
        },
        tradeoff(
            "nmi_watchdog",
            "nmi_watchdog=0",
            "Disables the NMI (hard-lockup) watchdog, a periodic performance-counter NMI on every CPU. Without it the NMI still leaves the isolated CPUs alone: the plan's kernel.watchdog_cpumask keeps it on the housekeeping CPUs.",
            NMI_WATCHDOG_TRADEOFF,
        ),
        tradeoff(
            "mitigations",
            "mitigations=off",
            "Removes the cost of CPU vulnerability mitigations on every kernel entry and exit.",
            "disables the Spectre/Meltdown/MDS/... mitigations: code running on this machine may read memory of other processes and of the kernel",
        ),
        tradeoff(
            "selinux",
            "selinux=0",
            "Removes SELinux access checks from system calls.",
            "disables SELinux mandatory access control",
        ),
        tradeoff(
            "audit",
            "audit=0",
            "Removes the kernel audit subsystem's per-system-call work.",
            "disables the kernel audit trail",
        ),
        tradeoff(
            "mce",
            "mce=ignore_ce",
            "Stops the periodic polling of corrected machine-check errors.",
            "corrected memory and CPU errors are no longer reported: no early warning of failing hardware",
        ),
        tradeoff(
            "ipv6.disable",
            "ipv6.disable=1",
            "Removes the IPv6 stack and its timers.",
            "IPv6 networking is unavailable",
        ),
    ];
    for offer in offers {
        if allowed {
            draft.add(offer);
            continue;
        }
        let key = offer.id.cmdline_key().unwrap_or_default();
        let reason = tradeoff_reason(cmdline.and_then(|c| c.last(key)), &offer.value);
        draft.skip(offer, reason);
    }
}

/// Why a trade-off offering `offered` (`mitigations=off`) is not planned, given the argument of
/// its key on the running command line, if any: the same words as every trade-off, and what
/// the command line already says about it.
fn tradeoff_reason(running: Option<&Param>, offered: &str) -> String {
    const NOT_PLANNED: &str = "security trade-off: planned only with --allow-security-tradeoffs";
    let Some(param) = running else {
        return NOT_PLANNED.to_string();
    };
    let token = match &param.value {
        Some(value) => format!("{}={value}", param.key),
        None => param.key.clone(),
    };
    if offered.split_once('=').map(|(_, v)| v) == param.value.as_deref() {
        format!("{NOT_PLANNED} (already on the command line: lowlat neither adds nor removes it)")
    } else {
        format!("{NOT_PLANNED} (the command line has {token}: lowlat leaves it as it is)")
    }
}

/// The keys a boot setting owns: the id's key and every key in its value.
pub(crate) fn owned_keys(setting: &Setting) -> Vec<String> {
    let key = match setting.id.cmdline_key() {
        Some(key) => key.to_string(),
        None => setting.id.to_string(),
    };
    let mut keys = vec![key];
    push_keys(&mut keys, &setting.value);
    keys
}

/// Appends the keys of the arguments in `args` that `keys` does not hold yet.
fn push_keys(keys: &mut Vec<String>, args: &str) {
    for token in args.split_whitespace() {
        let key = token.split_once('=').map_or(token, |(k, _)| k);
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
    }
}

/// The arguments to add (in plan order) and the keys to remove.
pub(crate) fn add_and_remove(plan: &Plan) -> (Vec<&str>, Vec<String>) {
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for setting in plan.layer(Layer::Boot) {
        if setting.value.trim().is_empty() {
            remove.extend(owned_keys(setting));
        } else {
            add.extend(setting.value.split_whitespace());
        }
    }
    (add, remove)
}

/// kernel-cmdline.txt: a shell fragment setting `LOWLAT_CMDLINE_ADD` and
/// `LOWLAT_CMDLINE_REMOVE`, each argument explained, and the boot-loader commands as comments.
pub(crate) fn render(plan: &Plan, header: &str) -> String {
    let (add, remove) = add_and_remove(plan);
    let add_line = add.join(" ");
    let remove_line = remove.join(" ");
    let mut out = Page::from(header);
    out.text(
        "#\n# A shell fragment: `. ./kernel-cmdline.txt` sets the two variables below. Everything\n\
         # else is comments: the reasons, then the commands for your boot loader.\n\n",
    );
    writeln!(out, "LOWLAT_CMDLINE_ADD={}", shell_word(&add_line));
    writeln!(out, "LOWLAT_CMDLINE_REMOVE={}", shell_word(&remove_line));

    out.text("\n# Arguments to add, and why:\n");
    for s in plan
        .layer(Layer::Boot)
        .filter(|s| !s.value.trim().is_empty() && s.security_tradeoff.is_none())
    {
        explain(&mut out, &s.value, &s.rationale, &s.source);
    }
    let tradeoffs: Vec<&Setting> = plan
        .layer(Layer::Boot)
        .filter(|s| s.security_tradeoff.is_some())
        .collect();
    if !tradeoffs.is_empty() {
        out.text("#\n# Security trade-offs, planned because of --allow-security-tradeoffs:\n");
        for s in tradeoffs {
            let label = format!(
                "SECURITY TRADE-OFF: {}. {}",
                s.security_tradeoff.as_deref().unwrap_or(""),
                s.rationale
            );
            explain(&mut out, &s.value, &label, &s.source);
        }
    }
    let removals: Vec<&Setting> = plan
        .layer(Layer::Boot)
        .filter(|s| s.value.trim().is_empty())
        .collect();
    if !removals.is_empty() {
        out.text("#\n# Arguments to remove, and why:\n");
        for s in removals {
            explain(&mut out, &owned_keys(s).join(" "), &s.rationale, &s.source);
        }
    }
    let skipped: Vec<_> = plan.skipped_in(Layer::Boot).collect();
    if !skipped.is_empty() {
        out.text("#\n# Not planned:\n");
        for s in skipped {
            writeln!(
                out,
                "#   {}  ({})",
                comment(&s.setting.value),
                comment(&s.reason)
            );
        }
    }
    render_commands(&mut out, &add_line, &remove, two_isolcpus(&add));
    out.into_string()
}

fn explain(out: &mut Page, args: &str, rationale: &str, source: &str) {
    writeln!(out, "#   {}", comment(args));
    writeln!(out, "#       {} [{}]", comment(rationale), comment(source));
}

fn two_isolcpus(add: &[&str]) -> bool {
    add.iter().filter(|a| a.starts_with("isolcpus=")).count() > 1
}

/// The grubby and /etc/default/grub commands, as comments.
fn render_commands(out: &mut Page, add: &str, remove: &[String], two_isolcpus: bool) {
    out.text(
        "#\n# ---- grubby (RHEL, CentOS Stream, Rocky, Alma, Fedora): every installed kernel.\n\
         # First drop any earlier value of the planned keys, then add the arguments:\n",
    );
    let mut drop = Vec::new();
    push_keys(&mut drop, add);
    push_keys(&mut drop, &remove.join(" "));
    writeln!(
        out,
        "# grubby --update-kernel=ALL --remove-args=\"{}\"",
        comment(&drop.join(" "))
    );
    writeln!(
        out,
        "# grubby --update-kernel=ALL --args=\"{}\"",
        comment(add)
    );
    out.line("# grubby --info=DEFAULT        # check the args= line");
    if two_isolcpus {
        out.text(
            "# NOTE: this plan has two isolcpus= arguments and grubby keeps one value per name:\n\
             # use the /etc/default/grub method, or edit the options line of /boot/loader/entries/*.conf.\n",
        );
    }
    write!(
        out,
        "#\n# ---- /etc/default/grub (Debian, Ubuntu; GRUB systems without grubby).\n\
         # grub/{GRUB_DROPIN} drops earlier values of the planned keys from GRUB_CMDLINE_LINUX and\n\
         # GRUB_CMDLINE_LINUX_DEFAULT and appends the arguments to GRUB_CMDLINE_LINUX_DEFAULT;\n\
         # /etc/default/grub itself is not edited, and deleting the file undoes it.\n\
         # install -D -m 0644 grub/{GRUB_DROPIN} /etc/default/grub.d/{GRUB_DROPIN}\n\
         # update-grub                       # Debian, Ubuntu\n\
         # Where grub2-mkconfig does not read /etc/default/grub.d (RHEL, SUSE without BLS):\n\
         # echo '. /etc/default/grub.d/{GRUB_DROPIN}' >> /etc/default/grub\n\
         # grub2-mkconfig -o /boot/grub2/grub.cfg                       # BIOS\n\
         # grub2-mkconfig -o /boot/efi/EFI/$(. /etc/os-release; echo $ID)/grub.cfg   # UEFI, RHEL 8 and older\n\
         #\n\
         # After the reboot, /proc/cmdline must hold every argument of LOWLAT_CMDLINE_ADD\n\
         # (`lowlat verify` checks it).\n"
    );
}

/// The file name of the /etc/default/grub.d drop-in.
pub(crate) const GRUB_DROPIN: &str = "99-lowlat.cfg";

/// The /etc/default/grub.d drop-in: the header, then the very block `lowlat apply` writes
/// (a POSIX shell fragment sourced by grub-mkconfig after /etc/default/grub that drops every
/// earlier argument with a key the plan owns and appends the planned ones), so that the file
/// a user installs by hand and the one apply installs cannot differ.
pub(crate) fn grub_dropin(plan: &Plan, header: &str) -> String {
    use crate::tuning::kernel_args::{AllArgs, Args};
    let args: Vec<Args> = plan
        .layer(Layer::Boot)
        .filter_map(|setting| Args::of(setting).ok())
        .collect();
    let mut out = Page::from(header);
    out.text(
        "#
# Delete it and run update-grub (or grub2-mkconfig) to undo.

",
    );
    out.text(crate::tuning::grub_block::render_block(
        &AllArgs::of(&args),
        crate::tuning::grub_block::BY_APPLY,
    ));
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::CpuSet;

    fn partition(iso: &str, nb: &str) -> Partition {
        Partition {
            housekeeping: "0,8".parse().unwrap(),
            isolated: iso.parse().unwrap(),
            no_balance: nb.parse::<CpuSet>().unwrap(),
            nr_cpus: 16,
        }
    }

    #[test]
    fn isolcpus_follows_the_no_balance_band() {
        let ranges = ListSyntax::Ranges;
        assert_eq!(
            isolcpus_args(&partition("1-7,9-15", ""), ranges),
            "isolcpus=managed_irq,1-7,9-15"
        );
        assert_eq!(
            isolcpus_args(&partition("1-7,9-15", "1-7,9-15"), ranges),
            "isolcpus=managed_irq,domain,1-7,9-15"
        );
        assert_eq!(
            isolcpus_args(&partition("1-7,9-15", "1-2,9-10"), ranges),
            "isolcpus=managed_irq,1-7,9-15 isolcpus=domain,1-2,9-10"
        );
        assert_eq!(
            isolcpus_args(&partition("1-3,5-7,9-11,13-15", ""), ListSyntax::Groups),
            "isolcpus=managed_irq,1-15:3/4"
        );
    }

    #[test]
    fn a_trade_off_is_already_on_the_command_line_only_with_its_value() {
        // D10 (issue 32): `mitigations=auto,nosmt` was called mitigations=off "already on the
        // command line".
        let cmdline = crate::machine::kernel::cmdline::parse_cmdline(
            "ro mitigations=auto,nosmt mce=ignore_ce",
        );
        let reason = |key: &str, offered: &str| tradeoff_reason(cmdline.last(key), offered);
        assert_eq!(
            reason("mitigations", "mitigations=off"),
            "security trade-off: planned only with --allow-security-tradeoffs (the command line has mitigations=auto,nosmt: lowlat leaves it as it is)"
        );
        assert!(
            reason("mce", "mce=ignore_ce")
                .ends_with("(already on the command line: lowlat neither adds nor removes it)")
        );
        assert_eq!(
            reason("audit", "audit=0"),
            "security trade-off: planned only with --allow-security-tradeoffs"
        );
    }

    #[test]
    fn owned_keys_cover_the_id_and_the_value() {
        let s = boot(
            "hugepages",
            "default_hugepagesz=1G hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=8",
            "",
            "",
        );
        assert_eq!(
            owned_keys(&s),
            ["hugepages", "default_hugepagesz", "hugepagesz"]
        );
        assert_eq!(owned_keys(&boot("idle", "", "", "")), ["idle"]);
    }
}
