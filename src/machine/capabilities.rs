//! What this machine can honour: the kernel's build (a boot parameter needs its option), the
//! idle driver, the platform (bare metal or a guest) and the init system, read once from the
//! [`Machine`]. The plan never plans what the machine cannot honour (it lists it as not
//! planned, with the reason and the way out), and the audit judges by the same facts.

use super::Machine;
use super::kernel::Kernel;

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
