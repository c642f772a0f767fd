//! What this machine can honour: the kernel's build (a boot parameter needs its option), the
//! idle driver, the platform (bare metal or a guest), the init system, the cgroup layout and
//! the boot loader, read once from the [`Machine`]. The plan never plans what the machine
//! cannot honour (it lists it as not planned, with the reason and the way out), and the audit
//! judges by the same facts.

use super::Machine;
use super::kernel::Kernel;
use super::kernel::boot_loader::BootLoader;
use super::kernel::cgroup::CgroupLayout;

/// A boot parameter that works only on a kernel built with an option.
pub struct Needs {
    /// The parameter (`nohz_full`).
    pub key: &'static str,
    /// The option it needs (`CONFIG_NO_HZ_FULL`).
    pub option: &'static str,
    /// The first kernel version that has the option under this name; older kernels are not
    /// judged by it.
    pub since: (u32, u32),
    /// Words of a boot-log message that say the kernel dropped the parameter.
    pub log_says: Option<&'static str>,
}

/// `nohz_full=` needs `CONFIG_NO_HZ_FULL` (Linux 3.10).
pub const NOHZ_FULL: Needs = Needs {
    key: "nohz_full",
    option: "CONFIG_NO_HZ_FULL",
    since: (3, 10),
    log_says: Some("nohz unsupported"),
};

/// `rcu_nocbs=` needs `CONFIG_RCU_NOCB_CPU` (Linux 3.7).
pub const RCU_NOCBS: Needs = Needs {
    key: "rcu_nocbs",
    option: "CONFIG_RCU_NOCB_CPU",
    since: (3, 7),
    log_says: None,
};

/// `isolcpus=` needs `CONFIG_CPU_ISOLATION` (the option exists from Linux 4.15; before, isolcpus
/// was always built in).
pub const ISOLCPUS: Needs = Needs {
    key: "isolcpus",
    option: "CONFIG_CPU_ISOLATION",
    since: (4, 15),
    log_says: None,
};

/// The boot parameters that need a kernel option.
pub const KERNEL_OPTIONS: [&Needs; 3] = [&NOHZ_FULL, &RCU_NOCBS, &ISOLCPUS];

impl Needs {
    /// Whether the kernel's configuration says it lacks the option (an older kernel than
    /// [`Needs::since`] is not judged); `None` when the configuration is unreadable.
    pub fn missing_in(&self, kernel: &Kernel) -> Option<bool> {
        let config = kernel.config.get()?;
        let old = kernel.version().is_some_and(|v| v < self.since);
        Some(!config.enabled(self.option) && !old)
    }

    /// The boot-log line that says the kernel dropped the parameter: its own message
    /// (`log_says`), or the list of unknown parameters naming it.
    pub fn dropped_by_log<'a>(&self, kernel: &'a Kernel) -> Option<&'a String> {
        let unknown = format!("{}=", self.key);
        kernel.isolation_log.get()?.iter().find(|line| {
            self.log_says.is_some_and(|words| line.contains(words))
                || (line.starts_with("Unknown kernel command line parameters")
                    && line.contains(&unknown))
        })
    }
}

/// The `isolcpus=` flags and the first upstream kernel that knows each.
const ISOLCPUS_FLAGS: [(&str, (u32, u32)); 3] = [
    ("nohz", (4, 15)),
    ("domain", (4, 15)),
    ("managed_irq", (5, 6)),
];

/// An `isolcpus=` flag this kernel does not know: `flag` (`managed_irq`), and how it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFlag {
    /// The flag.
    pub flag: String,
    /// Whether it is certain: the boot log says so (the kernel skipped the flag, or rejected
    /// the whole argument), or no kernel knows the flag. Otherwise only the kernel's version
    /// says so, and a distribution may have backported the flag.
    pub certain: bool,
    /// What says so, for people.
    pub why: String,
}

/// The flags of `flags` this kernel does not know: those its boot log names as skipped
/// ("isolcpus: Skipped unknown flag managed_irq"), every one newer than the kernel where the
/// log says the kernel rejected an unknown flag ("isolcpus: Error, unknown flag", which drops
/// the whole argument), and, where the log says nothing, those newer than the kernel's version.
pub fn isolcpus_unknown_flags(kernel: &Kernel, flags: &[&str]) -> Vec<UnknownFlag> {
    let log = kernel
        .isolation_log
        .get()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let version = kernel.version();
    let newer = |flag: &str| {
        let since = ISOLCPUS_FLAGS
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| *v);
        match (since, version) {
            (None, _) => Some((true, "no kernel knows it".to_string())),
            (Some(since), Some(v)) if v < since => Some((
                false,
                format!(
                    "upstream Linux knows it from {}.{}, this kernel is {}.{}",
                    since.0, since.1, v.0, v.1
                ),
            )),
            _ => None,
        }
    };
    let rejected = log.iter().find(|l| {
        l.contains("isolcpus:") && (l.contains("Error, unknown flag") || l.contains("Invalid flag"))
    });
    flags
        .iter()
        .filter_map(|flag| {
            let skipped = log.iter().find(|l| {
                l.contains("isolcpus:")
                    && l.contains("unknown flag")
                    && l.split_whitespace().any(|w| w == *flag)
            });
            let (certain, why) = match (skipped, rejected, newer(flag)) {
                (Some(line), _, _) => (
                    true,
                    format!("the kernel skipped it at boot (boot log: {line})"),
                ),
                (None, Some(line), Some((_, newer))) => (
                    true,
                    format!("{newer}, and the kernel rejected isolcpus= at boot (boot log: {line})"),
                ),
                (None, None, Some((true, newer))) => (true, newer),
                (None, None, Some((false, newer))) => (
                    false,
                    format!(
                        "{newer}: unless the distribution backported it, the kernel ignores it (the boot log tells: `dmesg | grep isolcpus`)"
                    ),
                ),
                _ => return None,
            };
            Some(UnknownFlag {
                flag: (*flag).to_string(),
                certain,
                why,
            })
        })
        .collect()
}

/// What runs as PID 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Init {
    /// systemd: systemd-sysctl, units and drop-ins apply lowlat's files at boot.
    Systemd,
    /// Another init (its command name): nothing applies lowlat's systemd files at boot.
    Other(String),
    /// PID 1 could not be read (a snapshot without processes).
    Unknown,
}

/// Where the kernel runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Platform {
    /// On the hardware (or no hypervisor was seen).
    BareMetal,
    /// In a virtual machine of this hypervisor (`KVM`): the host owns the firmware, the
    /// frequency and the PCIe links.
    Guest(String),
}

/// A setting this machine cannot honour: why, and the way out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhonoured {
    /// Why (`this kernel is built without CONFIG_NO_HZ_FULL (/boot/config-…)`).
    pub reason: String,
    /// What would make it possible (another kernel, `--isolation runtime`, the host side).
    pub way_out: String,
}

impl std::fmt::Display for Unhonoured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.reason, self.way_out)
    }
}

/// What this machine can honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Boot parameters the kernel ignores, with why and the way out.
    ignored_args: Vec<(&'static str, Unhonoured)>,
    /// The cpuidle driver (`intel_idle`, `acpi_idle`, `haltpoll`, `none`), when read.
    pub idle_driver: Option<String>,
    /// Bare metal or a guest.
    pub platform: Platform,
    /// PID 1.
    pub init: Init,
    /// How the cgroup hierarchies are mounted, when known.
    pub cgroup: Option<CgroupLayout>,
    /// The boot loader, when known.
    pub boot_loader: Option<BootLoader>,
}

impl Capabilities {
    /// The capabilities of `machine`.
    pub fn of(machine: &Machine) -> Capabilities {
        let kernel = &machine.kernel;
        let ignored_args = KERNEL_OPTIONS
            .iter()
            .filter_map(|needs| {
                let reason = match (needs.missing_in(kernel), kernel.config.get()) {
                    (Some(true), Some(config)) => format!(
                        "this kernel is built without {} ({}): {}= would be ignored",
                        needs.option, config.source, needs.key
                    ),
                    (Some(_), _) => return None,
                    (None, _) => format!(
                        "the kernel dropped {}= at boot (boot log: {})",
                        needs.key,
                        needs.dropped_by_log(kernel)?
                    ),
                };
                let way_out = format!(
                    "boot a kernel built with {}=y (Fedora, RHEL, Debian, Arch, openSUSE and \
                     Ubuntu's generic kernel from 24.04 ship it), or isolate without a reboot: \
                     `lowlat plan --isolation runtime`",
                    needs.option
                );
                Some((needs.key, Unhonoured { reason, way_out }))
            })
            .collect();
        let init = match machine.tasks.get() {
            Some(tasks) => match tasks.tasks.iter().find(|t| t.pid == 1) {
                Some(task) if task.comm == "systemd" => Init::Systemd,
                Some(task) => Init::Other(task.comm.clone()),
                None => Init::Unknown,
            },
            None => Init::Unknown,
        };
        Capabilities {
            ignored_args,
            idle_driver: machine
                .power
                .cpuidle
                .get()
                .and_then(|c| c.driver.get().cloned()),
            platform: match &machine.hypervisor {
                Some(hv) => Platform::Guest(hv.vendor.clone()),
                None => Platform::BareMetal,
            },
            init,
            cgroup: kernel.cgroup.get().copied(),
            boot_loader: kernel.boot_loader.get().copied(),
        }
    }

    /// Why the kernel ignores the boot parameter `key`, when it does.
    pub fn kernel_ignores(&self, key: &str) -> Option<&Unhonoured> {
        self.ignored_args
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, why)| why)
    }

    /// Why `intel_idle.max_cstate=` would do nothing: the idle driver is another one.
    pub fn intel_idle_absent(&self) -> Option<Unhonoured> {
        let driver = self.idle_driver.as_deref()?;
        (driver != "intel_idle").then(|| Unhonoured {
            reason: format!(
                "the idle driver is {driver}, not intel_idle: intel_idle.max_cstate= would do nothing"
            ),
            way_out: "processor.max_cstate= and the PM QoS resume latency limit the idle states \
                      of this driver"
                .to_string(),
        })
    }

    /// What persists and what does not, said once where nothing re-applies lowlat's settings
    /// at boot (PID 1 is known and is not systemd); `None` under systemd.
    pub fn persistence(&self) -> Option<String> {
        let Init::Other(comm) = &self.init else {
            return None;
        };
        let comm = crate::text::escape_controls(comm);
        Some(format!(
            "PID 1 is {comm}, not systemd: nothing re-applies lowlat's settings at boot. What \
             persists: the kernel arguments (in the boot loader's configuration) and \
             /etc/lowlat/plan.json. What does not: the sysctls, the IRQ, task and kernel-thread \
             placement, cpufreq, idle states and services set now hold until the next reboot; \
             run `lowlat apply --plan /etc/lowlat/plan.json` again after each boot (from the \
             init system's own boot script)."
        ))
    }

    /// Why lowlat cannot make kernel arguments persist itself: the boot loader is
    /// systemd-boot, which reads neither GRUB's defaults nor a block in them.
    pub fn boot_loader_not_grub(&self) -> Option<Unhonoured> {
        (self.boot_loader == Some(BootLoader::SystemdBoot)).then(|| Unhonoured {
            reason: "the boot loader is systemd-boot (loader.conf on the EFI system partition): \
                     it reads no GRUB configuration"
                .to_string(),
            way_out: "add the arguments to /etc/kernel/cmdline and run `kernel-install add` for \
                      each installed kernel (or edit the entries under loader/entries)"
                .to_string(),
        })
    }

    /// Why nothing applies lowlat's systemd files (sysctl.d, units, drop-ins) at boot: PID 1
    /// is known and is not systemd.
    pub fn no_systemd(&self) -> Option<Unhonoured> {
        match &self.init {
            Init::Other(comm) => Some(Unhonoured {
                reason: format!("PID 1 is {comm}, not systemd: nothing applies this file at boot"),
                way_out: "the run-time settings hold until the next reboot: run `lowlat apply \
                          --plan /etc/lowlat/plan.json` again after each boot (from the init \
                          system's own boot script)"
                    .to_string(),
            }),
            Init::Systemd | Init::Unknown => None,
        }
    }
}
