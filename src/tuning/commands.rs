//! The shell commands that give a setting its value by hand, as root: what `lowlat audit`
//! prints as a finding's fix and `lowlat audit --fix-script` writes. POSIX sh (shellcheck
//! clean), one id family per arm of [`commands`]; kernel arguments go through
//! [`boot_commands`], since they take the boot configuration and a reboot. Pure, no I/O.

use super::kernel_args::{AllArgs, Args};
use super::setting::{Layer, Setting};
use super::setting_id::{SettingId, TaskAttribute};
use crate::text::{is_plain, shell_word};

/// `echo VALUE > PATH`.
fn write_to(value: &str, path: &str) -> String {
    format!("echo {} > {}", shell_word(value), shell_word(path))
}

/// `for f in GLOB; do echo VALUE > "$f"; done`: every file the glob names.
fn write_each(value: &str, glob: &str) -> String {
    format!(
        "for f in {glob}; do echo {} > \"$f\"; done",
        shell_word(value)
    )
}

/// A task-name pattern (`name`, or `prefix*`) as the extended regular expression `pgrep`
/// takes: the name itself (`-x`), or anchored at the start; after `--`, so that a task named
/// `-u0` is a pattern and not pgrep's option.
fn pgrep(pattern: &str) -> String {
    let escape = |name: &str| -> String {
        name.chars()
            .flat_map(|c| {
                let special = r".[]{}()\*+?|^$".contains(c);
                special.then_some('\\').into_iter().chain([c])
            })
            .collect()
    };
    match pattern.strip_suffix('*') {
        Some(prefix) => format!("pgrep -- {}", shell_word(&format!("^{}", escape(prefix)))),
        None => format!("pgrep -x -- {}", shell_word(&escape(pattern))),
    }
}

/// `chrt`'s options for a `priority` value (`fifo:50`, `rr:10`, `other`).
fn chrt(value: &str) -> Option<String> {
    match value.split_once(':') {
        Some(("fifo", priority)) => Some(format!("-f {}", shell_word(priority))),
        Some(("rr", priority)) => Some(format!("-r {}", shell_word(priority))),
        None if value == "other" => Some("-o 0".to_string()),
        _ => None,
    }
}

/// The lines that write `content` to `path` (its directory created): a here-document, so that
/// nothing in it is expanded.
fn install_file(path: &str, content: &str) -> Vec<String> {
    let dir = std::path::Path::new(path)
        .parent()
        .map_or("/".to_string(), |d| d.display().to_string());
    let mut lines = vec![
        format!("mkdir -p {}", shell_word(&dir)),
        format!("cat > {} <<'LOWLAT_EOF'", shell_word(path)),
    ];
    lines.extend(content.lines().map(str::to_string));
    lines.push("LOWLAT_EOF".to_string());
    lines
}

/// The lines that set `KEY=value` in an environment file: the line replaced where it is,
/// else appended. A systemd manager drop-in (`system.conf.d`) is written whole, under its
/// `[Manager]` section.
fn set_key(path: &str, key: &str, value: &str) -> Vec<String> {
    if path.starts_with("/etc/systemd/system.conf.d/") {
        return install_file(path, &format!("[Manager]\n{key}={value}\n"));
    }
    let line = format!("{key}={}", shell_word(value));
    let file = shell_word(path);
    vec![format!(
        "if grep -q '^{key}=' {file} 2>/dev/null; then sed -i {} {file}; else echo {} >> {file}; fi",
        shell_word(&format!("s|^{key}=.*|{}|", line.replace('|', r"\|"))),
        shell_word(&line),
    )]
}

/// The commands that give `setting` its value now, one shell line each; `None` for kernel
/// arguments ([`boot_commands`]), settings made by hand (BIOS, libvirt domains), ids lowlat
/// does not know, and settings whose id or value holds a control or bidi character (a task
/// named with `ESC`, `CR` or `U+202E`; R2-11 of issue 44): quoted, the shell would read it
/// safely, but a person reading the script would see another command.
pub(crate) fn commands(setting: &Setting) -> Option<Vec<String>> {
    // A file's content is written line by line: its newlines are its own.
    let plain_value = match setting.id {
        SettingId::File(_) => setting.value.split('\n').all(is_plain),
        _ => is_plain(&setting.value),
    };
    if setting.layer == Layer::Boot || !is_plain(&setting.id.to_string()) || !plain_value {
        return None;
    }
    let value = setting.value.as_str();
    let id = &setting.id;
    // A hex mask says which CPUs it holds, in a comment.
    let line = |l: String| {
        Some(vec![if id.takes_cpu_mask() {
            format!("{l}  # {}", setting.value_for_people())
        } else {
            l
        }])
    };
    match id.clone() {
        SettingId::Sysctl(key) => line(format!(
            "sysctl -w {}",
            shell_word(&format!("{key}={value}"))
        )),
        SettingId::IrqDefault => line(write_to(value, "/proc/irq/default_smp_affinity")),
        // Named only by a plan that could not read the IRQs: nothing to write.
        SettingId::EveryIrq => None,
        SettingId::Irq(irq) => line(write_to(
            value,
            &format!("/proc/irq/{irq}/smp_affinity_list"),
        )),
        SettingId::Rps(interface) => line(write_each(
            value,
            &format!(
                "{}/queues/rx-*/rps_cpus",
                shell_word(&format!("/sys/class/net/{interface}"))
            ),
        )),
        SettingId::Workqueue(None) => {
            line(write_to(value, "/sys/devices/virtual/workqueue/cpumask"))
        }
        SettingId::Workqueue(Some(name)) => line(write_to(
            value,
            &format!("/sys/bus/workqueue/devices/{name}/cpumask"),
        )),
        SettingId::Cpufreq {
            policy: None,
            attribute,
        } => line(write_each(
            value,
            &format!("/sys/devices/system/cpu/cpufreq/policy*/{attribute}"),
        )),
        SettingId::Cpufreq {
            policy: Some(policy),
            attribute,
        } => line(write_to(
            value,
            &format!("/sys/devices/system/cpu/cpufreq/policy{policy}/{attribute}"),
        )),
        SettingId::Boost => {
            let no_turbo = if value == "0" { "1" } else { "0" };
            line(format!(
                "if [ -e /sys/devices/system/cpu/cpufreq/boost ]; then {}; else {}; fi",
                write_to(value, "/sys/devices/system/cpu/cpufreq/boost"),
                write_to(no_turbo, "/sys/devices/system/cpu/intel_pstate/no_turbo")
            ))
        }
        SettingId::Cpuidle { cpu, state } => line(write_to(
            if value == "disabled" { "1" } else { "0" },
            &format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/disable"),
        )),
        SettingId::ResumeLatency(cpu) => line(write_to(
            value,
            &format!("/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us"),
        )),
        SettingId::Thp(attribute) => line(write_to(
            value,
            &format!("/sys/kernel/mm/transparent_hugepage/{attribute}"),
        )),
        SettingId::Hugepages { node, size_kib } => {
            let pool = format!("hugepages/hugepages-{size_kib}kB/nr_hugepages");
            line(write_to(
                value,
                &match node {
                    Some(node) => format!("/sys/devices/system/node/node{node}/{pool}"),
                    None => format!("/sys/kernel/mm/{pool}"),
                },
            ))
        }
        SettingId::Nic { interface, knob } => {
            line(knob.command(&shell_word(&interface), knob.parse_value(value).ok()?))
        }
        SettingId::Clocksource => line(write_to(
            value,
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )),
        SettingId::Tasks {
            pattern, attribute, ..
        } => {
            let set = match attribute {
                TaskAttribute::Affinity => {
                    format!("taskset -pc {} \"$pid\" >/dev/null", shell_word(value))
                }
                TaskAttribute::Priority => format!("chrt -p {} \"$pid\"", chrt(value)?),
            };
            line(format!("for pid in $({}); do {set}; done", pgrep(&pattern)))
        }
        SettingId::Service(unit) => {
            let unit = shell_word(&unit);
            line(match value {
                "enabled" => format!("systemctl enable {unit}"),
                "disabled" => format!("systemctl disable --now {unit}"),
                "stopped" => format!("systemctl stop {unit}"),
                "masked" => format!("systemctl mask --now {unit}"),
                "running" => format!("systemctl start {unit}"),
                _ => return None,
            })
        }
        SettingId::File(path) => Some(install_file(&path, value)),
        SettingId::FileKey { path, key } => Some(set_key(&path, &key, value)),
        SettingId::Cmdline(_) => None,
        // Runtime isolation moves every task between cpusets: apply journals each task's
        // place and revert puts it back, which a shell line cannot.
        SettingId::Cpuset { .. } => None,
    }
}

/// The kernel arguments of the boot settings among `settings`: those to add, and the keys of
/// the settings that want no argument with their key. `None` when there is none, or when one
/// cannot be written safely into a boot configuration (quotes, shell characters).
pub(crate) fn boot_args<'a>(settings: impl IntoIterator<Item = &'a Setting>) -> Option<BootArgs> {
    let mut args = Vec::new();
    let mut remove = Vec::new();
    for setting in settings.into_iter().filter(|s| s.layer == Layer::Boot) {
        let parsed = Args::of(setting).ok()?;
        if parsed.tokens.is_empty() {
            remove.extend(parsed.keys.iter().cloned());
        }
        args.push(parsed);
    }
    (!args.is_empty()).then(|| BootArgs {
        all: AllArgs::of(&args),
        remove,
    })
}

/// Kernel arguments to install ([`boot_args`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BootArgs {
    /// Every argument wanted and every key owned.
    pub all: AllArgs,
    /// The keys no argument may keep.
    pub remove: Vec<String>,
}

/// The grubby lines that install `args` in every boot entry (RHEL, Fedora, SUSE with BLS):
/// the arguments added (grubby replaces an earlier value of the same key), the keys to drop
/// removed.
pub(crate) fn boot_commands(args: &BootArgs) -> Vec<String> {
    let mut lines = Vec::new();
    if !args.remove.is_empty() {
        lines.push(format!(
            "grubby --update-kernel=ALL --remove-args={}",
            shell_word(&args.remove.join(" "))
        ));
    }
    if !args.all.tokens.is_empty() {
        lines.push(format!(
            "grubby --update-kernel=ALL --args={}",
            shell_word(&args.all.tokens.join(" "))
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(id: &str, value: &str, layer: Layer) -> Setting {
        Setting {
            id: id.parse().unwrap(),
            value: value.to_string(),
            layer,
            reboot: layer == Layer::Boot,
            rationale: String::new(),
            source: String::new(),
            security_tradeoff: None,
        }
    }

    fn one(id: &str, value: &str, layer: Layer) -> String {
        commands(&setting(id, value, layer)).unwrap().join("\n")
    }

    #[test]
    fn each_family_gets_the_command_that_sets_it() {
        let r = Layer::Runtime;
        for (id, value, layer, want) in [
            (
                "sysctl:kernel.numa_balancing",
                "0",
                Layer::Sysctl,
                "sysctl -w kernel.numa_balancing=0",
            ),
            (
                "sysctl:kernel.watchdog_cpumask",
                "0 8",
                Layer::Sysctl,
                "sysctl -w 'kernel.watchdog_cpumask=0 8'",
            ),
            (
                "irq:24:affinity",
                "0",
                r,
                "echo 0 > /proc/irq/24/smp_affinity_list",
            ),
            (
                "irq:default:affinity",
                "0101",
                r,
                "echo 0101 > /proc/irq/default_smp_affinity  # CPUs 0,8 (mask 0101)",
            ),
            (
                "rps:eth0:rps_cpus",
                "1",
                r,
                "for f in /sys/class/net/eth0/queues/rx-*/rps_cpus; do echo 1 > \"$f\"; done  # CPUs 0 (mask 1)",
            ),
            (
                "workqueue:cpumask",
                "3",
                r,
                "echo 3 > /sys/devices/virtual/workqueue/cpumask  # CPUs 0-1 (mask 3)",
            ),
            (
                "workqueue:writeback:cpumask",
                "3",
                r,
                "echo 3 > /sys/bus/workqueue/devices/writeback/cpumask  # CPUs 0-1 (mask 3)",
            ),
            (
                "cpufreq:governor",
                "performance",
                r,
                "for f in /sys/devices/system/cpu/cpufreq/policy*/scaling_governor; do echo performance > \"$f\"; done",
            ),
            (
                "cpuidle:cpu3:state2",
                "disabled",
                r,
                "echo 1 > /sys/devices/system/cpu/cpu3/cpuidle/state2/disable",
            ),
            (
                "cpu:1:pm_qos_resume_latency_us",
                "1",
                r,
                "echo 1 > /sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us",
            ),
            (
                "thp:enabled",
                "never",
                r,
                "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
            ),
            (
                "hugepages:node1:2048kB",
                "64",
                r,
                "echo 64 > /sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages",
            ),
            (
                "clocksource:current",
                "tsc",
                r,
                "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            (
                "kthread:kswapd0:affinity",
                "0",
                r,
                "for pid in $(pgrep -x -- kswapd0); do taskset -pc 0 \"$pid\" >/dev/null; done",
            ),
            (
                "kthread:rcuop/*:affinity",
                "0,8",
                r,
                "for pid in $(pgrep -- '^rcuop/'); do taskset -pc 0,8 \"$pid\" >/dev/null; done",
            ),
            (
                "kthread:ksoftirqd/*:priority",
                "fifo:2",
                r,
                "for pid in $(pgrep -- '^ksoftirqd/'); do chrt -p -f 2 \"$pid\"; done",
            ),
            (
                "service:irqbalance",
                "disabled",
                Layer::Service,
                "systemctl disable --now irqbalance",
            ),
        ] {
            assert_eq!(one(id, value, layer), want, "{id}");
        }
        assert!(commands(&setting("cmdline:nohz_full", "nohz_full=1-7", Layer::Boot)).is_none());
    }

    #[test]
    fn files_are_written_without_expansion_and_keys_replaced_or_appended() {
        let file = one("file:/etc/sysctl.d/99-x.conf", "a = $b\n", Layer::File);
        assert_eq!(
            file,
            "mkdir -p /etc/sysctl.d\ncat > /etc/sysctl.d/99-x.conf <<'LOWLAT_EOF'\na = $b\nLOWLAT_EOF"
        );
        let key = one(
            "file:/etc/sysconfig/irqbalance:IRQBALANCE_BANNED_CPULIST",
            "1-7",
            Layer::File,
        );
        assert_eq!(
            key,
            "if grep -q '^IRQBALANCE_BANNED_CPULIST=' /etc/sysconfig/irqbalance 2>/dev/null; then \
             sed -i 's|^IRQBALANCE_BANNED_CPULIST=.*|IRQBALANCE_BANNED_CPULIST=1-7|' /etc/sysconfig/irqbalance; \
             else echo IRQBALANCE_BANNED_CPULIST=1-7 >> /etc/sysconfig/irqbalance; fi"
        );
        let manager = one(
            "file:/etc/systemd/system.conf.d/50-lowlat.conf:CPUAffinity",
            "0 8",
            Layer::File,
        );
        assert!(
            manager.contains("[Manager]\nCPUAffinity=0 8\n"),
            "{manager}"
        );
    }

    #[test]
    fn kernel_arguments_become_grubby_lines() {
        let settings = [
            setting("cmdline:nohz_full", "nohz_full=1-7", Layer::Boot),
            setting("cmdline:rcu_nocbs", "rcu_nocbs=1-7", Layer::Boot),
            setting("cmdline:idle", "", Layer::Boot),
            setting("sysctl:vm.swappiness", "0", Layer::Sysctl),
        ];
        let args = boot_args(&settings).unwrap();
        assert_eq!(
            boot_commands(&args),
            [
                "grubby --update-kernel=ALL --remove-args=idle",
                "grubby --update-kernel=ALL --args='nohz_full=1-7 rcu_nocbs=1-7'",
            ]
        );
        assert!(boot_args(&settings[3..]).is_none());
    }
}
