//! What a setting id names: the knob, file, task group, service or boot argument that
//! `apply`, `revert` and `verify` act on. Pure parsing of the id, no I/O.
//!
//! | id | what |
//! |---|---|
//! | `sysctl:<key>` | `/proc/sys/<key with . as />` |
//! | `irq:default:affinity` | `/proc/irq/default_smp_affinity` (hex mask) |
//! | `irq:<N>:affinity` | `/proc/irq/<N>/smp_affinity_list` (CPU list) |
//! | `rps:<interface>:rps_cpus` | `/sys/class/net/<interface>/queues/rx-*/rps_cpus`, every receive queue (hex mask) |
//! | `workqueue:cpumask` | `/sys/devices/virtual/workqueue/cpumask` (hex mask) |
//! | `workqueue:<name>:cpumask` | `/sys/bus/workqueue/devices/<name>/cpumask` (hex mask) |
//! | `kthread:<pattern>:affinity`, `task:<pattern>:affinity` | CPU affinity of every kernel thread / user task whose name matches (`name`, or `prefix*`) |
//! | `kthread:<pattern>:priority`, `task:<pattern>:priority` | scheduling policy: `fifo:<1-99>`, `rr:<1-99>`, `other` |
//! | `cpufreq:governor`, `cpufreq:policy<N>:governor` | `scaling_governor` of every / one policy |
//! | `cpufreq:energy_performance_preference`, `cpufreq:policy<N>:energy_performance_preference` | EPP of every / one policy |
//! | `cpufreq:boost` | `cpufreq/boost` (`1` on), else `intel_pstate/no_turbo` (inverted) |
//! | `cpuidle:cpu<N>:state<K>` | `disabled` or `enabled` |
//! | `cpu:<N>:pm_qos_resume_latency_us` | `cpu<N>/power/pm_qos_resume_latency_us` |
//! | `thp:enabled`, `thp:defrag` | `/sys/kernel/mm/transparent_hugepage/*` |
//! | `hugepages:<size>kB`, `hugepages:node<N>:<size>kB` | `nr_hugepages` of the pool, global or of one node |
//! | `clocksource:current` | `current_clocksource` |
//! | `service:<unit>` | `enabled`, `disabled`, `stopped`, `masked` or `running` |
//! | `file:<path>` | the whole file |
//! | `file:<path>:<KEY>` | one `KEY=value` line of a shell-style environment file |
//! | `cmdline:<key>` | kernel arguments: the value is the argument(s) as written, empty for "none with this key" |

use std::fmt;

/// The thing a setting id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A sysctl, by its dotted key.
    Sysctl(String),
    /// The default affinity of new IRQs.
    IrqDefault,
    /// The affinity of one IRQ.
    Irq(u32),
    /// The receive packet steering mask of every receive queue of a network interface.
    Rps(String),
    /// The unbound workqueue mask (`None`) or the mask of one WQ_SYSFS workqueue.
    Workqueue(Option<String>),
    /// A per-policy cpufreq attribute of every policy (`None`) or one.
    Cpufreq {
        /// The policy number, or every policy.
        policy: Option<u32>,
        /// `scaling_governor` or `energy_performance_preference`.
        attribute: &'static str,
    },
    /// Frequency boost (turbo) on or off.
    Boost,
    /// Whether one idle state of one CPU may be entered.
    Cpuidle {
        /// The CPU.
        cpu: u32,
        /// The state index.
        state: u32,
    },
    /// The PM QoS resume-latency limit of one CPU (µs).
    ResumeLatency(u32),
    /// A transparent hugepage attribute (`enabled`, `defrag`).
    Thp(&'static str),
    /// A hugepage pool.
    Hugepages {
        /// The NUMA node, or the global pool.
        node: Option<u32>,
        /// Page size in KiB.
        size_kib: u64,
    },
    /// The current clocksource.
    Clocksource,
    /// Tasks matched by name.
    Tasks {
        /// Kernel threads (`kthread:`) or user tasks (`task:`).
        kernel: bool,
        /// A name, or a prefix followed by `*`.
        pattern: String,
        /// What to set.
        attribute: TaskAttribute,
    },
    /// A systemd unit.
    Service(String),
    /// A whole file.
    File(String),
    /// One `KEY=value` assignment of an environment file.
    FileKey {
        /// The file.
        path: String,
        /// The variable.
        key: String,
    },
    /// Kernel command-line arguments with this key.
    Cmdline(String),
}

/// What is set on matched tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAttribute {
    /// CPU affinity (a CPU list).
    Affinity,
    /// Scheduling policy and priority.
    Priority,
}

/// Why an id was not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// The id's family (`foo:`) is not one lowlat applies.
    Unknown,
    /// The family is known but the rest of the id is malformed.
    Malformed(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Unknown => f.write_str("lowlat does not know how to apply this setting"),
            TargetError::Malformed(why) => f.write_str(why),
        }
    }
}

fn number(text: &str, prefix: &str) -> Option<u32> {
    let digits = text.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a shell variable name.
fn variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether a task-name pattern is usable: a command name as `/proc/PID/stat` shows it (15
/// bytes for user tasks; kernel threads show up to 63 since Linux 6.x; no NUL or newline),
/// optionally ending in `*`.
fn task_pattern(pattern: &str) -> bool {
    let name = pattern.strip_suffix('*').unwrap_or(pattern);
    !pattern.is_empty() && name.len() <= 63 && !name.contains(['\0', '\n', '*'])
}

/// A hugepage size as the kernel names its pool directories (`2048kB`).
fn page_size(text: &str) -> Option<u64> {
    text.strip_suffix("kB")?.parse().ok().filter(|&k| k > 0)
}

/// Parses a setting id.
pub fn parse(id: &str) -> Result<Target, TargetError> {
    let malformed = |why: &str| Err(TargetError::Malformed(why.to_string()));
    let Some((family, rest)) = id.split_once(':') else {
        return Err(TargetError::Unknown);
    };
    let parts: Vec<&str> = rest.split(':').collect();
    match family {
        "sysctl" => {
            let ok = !rest.is_empty()
                && rest
                    .split(['.', '/'])
                    .all(|p| !p.is_empty() && p != ".." && !p.contains('\0'));
            if ok {
                Ok(Target::Sysctl(rest.to_string()))
            } else {
                malformed("expected sysctl:<dotted.key>")
            }
        }
        "irq" => match parts.as_slice() {
            ["default", "affinity"] => Ok(Target::IrqDefault),
            [n, "affinity"] => match number(n, "") {
                Some(n) => Ok(Target::Irq(n)),
                None => malformed("expected irq:<number>:affinity or irq:default:affinity"),
            },
            _ => malformed("expected irq:<number>:affinity or irq:default:affinity"),
        },
        "rps" => match parts.as_slice() {
            [name, "rps_cpus"]
                if !name.is_empty() && !name.contains(['/', '\0']) && *name != ".." =>
            {
                Ok(Target::Rps(name.to_string()))
            }
            _ => malformed("expected rps:<interface>:rps_cpus"),
        },
        "workqueue" => match parts.as_slice() {
            ["cpumask"] => Ok(Target::Workqueue(None)),
            [name, "cpumask"]
                if !name.is_empty() && !name.contains(['/', '\0']) && *name != ".." =>
            {
                Ok(Target::Workqueue(Some(name.to_string())))
            }
            _ => malformed("expected workqueue:cpumask or workqueue:<name>:cpumask"),
        },
        "kthread" | "task" => {
            let kernel = family == "kthread";
            let Some((pattern, attribute)) = rest.rsplit_once(':') else {
                return malformed("expected <kthread|task>:<name>:<affinity|priority>");
            };
            let attribute = match attribute {
                "affinity" => TaskAttribute::Affinity,
                "priority" => TaskAttribute::Priority,
                _ => return malformed("the last part must be affinity or priority"),
            };
            if !task_pattern(pattern) {
                return malformed(
                    "the name must be a command name of at most 63 bytes, optionally ending in *",
                );
            }
            Ok(Target::Tasks {
                kernel,
                pattern: pattern.to_string(),
                attribute,
            })
        }
        "cpufreq" => {
            let attribute = |name: &str| match name {
                "governor" => Some("scaling_governor"),
                "energy_performance_preference" => Some("energy_performance_preference"),
                _ => None,
            };
            match parts.as_slice() {
                ["boost"] => Ok(Target::Boost),
                [name] if attribute(name).is_some() => Ok(Target::Cpufreq {
                    policy: None,
                    attribute: attribute(name).unwrap_or_default(),
                }),
                [policy, name] => match (number(policy, "policy"), attribute(name)) {
                    (Some(policy), Some(attribute)) => Ok(Target::Cpufreq {
                        policy: Some(policy),
                        attribute,
                    }),
                    _ => malformed(
                        "expected cpufreq:[policy<N>:]<governor|energy_performance_preference> or cpufreq:boost",
                    ),
                },
                _ => malformed(
                    "expected cpufreq:[policy<N>:]<governor|energy_performance_preference> or cpufreq:boost",
                ),
            }
        }
        "cpuidle" => match parts.as_slice() {
            [cpu, state] => match (number(cpu, "cpu"), number(state, "state")) {
                (Some(cpu), Some(state)) => Ok(Target::Cpuidle { cpu, state }),
                _ => malformed("expected cpuidle:cpu<N>:state<K>"),
            },
            _ => malformed("expected cpuidle:cpu<N>:state<K>"),
        },
        "cpu" => match parts.as_slice() {
            [cpu, "pm_qos_resume_latency_us"] => match number(cpu, "") {
                Some(cpu) => Ok(Target::ResumeLatency(cpu)),
                None => malformed("expected cpu:<N>:pm_qos_resume_latency_us"),
            },
            _ => Err(TargetError::Unknown),
        },
        "thp" => match rest {
            "enabled" => Ok(Target::Thp("enabled")),
            "defrag" => Ok(Target::Thp("defrag")),
            _ => malformed("expected thp:enabled or thp:defrag"),
        },
        "hugepages" => match parts.as_slice() {
            [size] => match page_size(size) {
                Some(size_kib) => Ok(Target::Hugepages {
                    node: None,
                    size_kib,
                }),
                None => malformed("expected hugepages:[node<N>:]<size>kB"),
            },
            [node, size] => match (number(node, "node"), page_size(size)) {
                (Some(node), Some(size_kib)) => Ok(Target::Hugepages {
                    node: Some(node),
                    size_kib,
                }),
                _ => malformed("expected hugepages:[node<N>:]<size>kB"),
            },
            _ => malformed("expected hugepages:[node<N>:]<size>kB"),
        },
        "clocksource" if rest == "current" => Ok(Target::Clocksource),
        "service" => {
            if rest.is_empty() || rest.contains(['/', '\0', ' ']) || rest.starts_with('-') {
                malformed("expected service:<unit name>")
            } else {
                Ok(Target::Service(rest.to_string()))
            }
        }
        "file" => {
            if !rest.starts_with('/') || rest.split('/').any(|p| p == "..") || rest.contains('\0') {
                return malformed("expected file:<absolute path>[:<KEY>]");
            }
            match rest.rsplit_once(':') {
                Some((path, key)) if variable_name(key) && !path.is_empty() => {
                    Ok(Target::FileKey {
                        path: path.to_string(),
                        key: key.to_string(),
                    })
                }
                _ if rest.ends_with('/') => malformed("expected a file path, not a directory"),
                _ => Ok(Target::File(rest.to_string())),
            }
        }
        "cmdline" => {
            if rest.is_empty() || rest.contains(char::is_whitespace) || rest.contains(['=', '"']) {
                malformed("expected cmdline:<argument key>")
            } else {
                Ok(Target::Cmdline(rest.to_string()))
            }
        }
        _ => Err(TargetError::Unknown),
    }
}

/// Whether a task name matches a pattern (`name`, or `prefix*`).
pub fn matches(pattern: &str, comm: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => comm.starts_with(prefix),
        None => comm == pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_family() {
        let cases = [
            (
                "sysctl:kernel.numa_balancing",
                Target::Sysctl("kernel.numa_balancing".into()),
            ),
            ("irq:default:affinity", Target::IrqDefault),
            ("irq:45:affinity", Target::Irq(45)),
            ("workqueue:cpumask", Target::Workqueue(None)),
            ("rps:ens1f0:rps_cpus", Target::Rps("ens1f0".into())),
            (
                "workqueue:writeback:cpumask",
                Target::Workqueue(Some("writeback".into())),
            ),
            (
                "kthread:rcuop/*:affinity",
                Target::Tasks {
                    kernel: true,
                    pattern: "rcuop/*".into(),
                    attribute: TaskAttribute::Affinity,
                },
            ),
            (
                "task:order_gw:priority",
                Target::Tasks {
                    kernel: false,
                    pattern: "order_gw".into(),
                    attribute: TaskAttribute::Priority,
                },
            ),
            (
                "cpufreq:governor",
                Target::Cpufreq {
                    policy: None,
                    attribute: "scaling_governor",
                },
            ),
            (
                "cpufreq:policy3:energy_performance_preference",
                Target::Cpufreq {
                    policy: Some(3),
                    attribute: "energy_performance_preference",
                },
            ),
            ("cpufreq:boost", Target::Boost),
            ("cpuidle:cpu3:state2", Target::Cpuidle { cpu: 3, state: 2 }),
            ("cpu:7:pm_qos_resume_latency_us", Target::ResumeLatency(7)),
            ("thp:enabled", Target::Thp("enabled")),
            (
                "hugepages:node1:1048576kB",
                Target::Hugepages {
                    node: Some(1),
                    size_kib: 1_048_576,
                },
            ),
            ("clocksource:current", Target::Clocksource),
            ("service:irqbalance", Target::Service("irqbalance".into())),
            (
                "file:/etc/sysctl.d/99-lowlat.conf",
                Target::File("/etc/sysctl.d/99-lowlat.conf".into()),
            ),
            (
                "file:/etc/sysconfig/irqbalance:IRQBALANCE_BANNED_CPULIST",
                Target::FileKey {
                    path: "/etc/sysconfig/irqbalance".into(),
                    key: "IRQBALANCE_BANNED_CPULIST".into(),
                },
            ),
            ("cmdline:nohz_full", Target::Cmdline("nohz_full".into())),
        ];
        for (id, want) in cases {
            assert_eq!(parse(id), Ok(want), "{id}");
        }
    }

    #[test]
    fn refuses_malformed_ids_and_leaves_unknown_families_alone() {
        for id in [
            "sysctl:",
            "sysctl:kernel..x",
            "sysctl:../etc",
            "irq:x:affinity",
            "irq:45",
            "workqueue:../x:cpumask",
            "rps:../x:rps_cpus",
            "rps:eth0",
            "kthread:a_name_longer_than_the_63_bytes_a_kernel_thread_name_can_ever_have:affinity",
            "kthread:a*b:affinity",
            "kthread:x:nice",
            "cpufreq:policyx:governor",
            "cpuidle:cpu3",
            "hugepages:2M",
            "file:relative",
            "file:/etc/../shadow",
            "cmdline:a=b",
            "service:../x",
        ] {
            assert!(matches!(parse(id), Err(TargetError::Malformed(_))), "{id}");
        }
        for id in ["bios:smt", "nothing", "cpu:3:online"] {
            assert_eq!(parse(id), Err(TargetError::Unknown), "{id}");
        }
    }

    #[test]
    fn patterns_match_names_and_prefixes() {
        assert!(matches("kswapd0", "kswapd0"));
        assert!(!matches("kswapd0", "kswapd1"));
        assert!(matches("rcuop/*", "rcuop/12"));
        assert!(!matches("rcuop/*", "rcuos/12"));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(id in ".{0,60}") {
            let _ = parse(&id);
        }
    }
}
