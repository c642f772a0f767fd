//! Setting ids: the one grammar that names a knob, file, task group, service or boot argument.
//! Every setting carries a [`SettingId`]: the audit and the plan build them from the variants,
//! apply, verify, watch and the reports match on the variant, and plan.json and every JSON
//! document write it as the string of the table below. An id that does not parse is refused
//! when the document loads, naming the id and why. Pure, no I/O.
//!
//! | id | what | value |
//! |---|---|---|
//! | `sysctl:<key>` | `/proc/sys/<key with . as />` | the value as `sysctl` writes it |
//! | `irq:default:affinity` | `/proc/irq/default_smp_affinity` | hex mask |
//! | `irq:<N>:affinity` | `/proc/irq/<N>/smp_affinity_list` | CPU list |
//! | `irq:*:affinity` | every movable IRQ (only in a plan's skipped settings) | CPU list |
//! | `rps:<interface>:rps_cpus` | `/sys/class/net/<interface>/queues/rx-*/rps_cpus`, every receive queue | hex mask |
//! | `workqueue:cpumask` | `/sys/devices/virtual/workqueue/cpumask` | hex mask |
//! | `workqueue:<name>:cpumask` | `/sys/bus/workqueue/devices/<name>/cpumask` | hex mask |
//! | `kthread:<pattern>:affinity`, `task:<pattern>:affinity` | CPU affinity of every kernel thread / user task whose name matches (`name`, or `prefix*`: `rcuop/*`) | CPU list |
//! | `kthread:<pattern>:priority`, `task:<pattern>:priority` | scheduling policy of the matched tasks | `fifo:<1-99>`, `rr:<1-99>`, `other` |
//! | `cpufreq:governor`, `cpufreq:policy<N>:governor` | `scaling_governor` of every / one policy | governor name |
//! | `cpufreq:energy_performance_preference`, `cpufreq:policy<N>:energy_performance_preference` | EPP of every / one policy | EPP name |
//! | `cpufreq:boost` | `cpufreq/boost`, else `intel_pstate/no_turbo` (inverted) | `1` on, `0` off |
//! | `cpuidle:cpu<N>:state<K>` | whether one idle state of one CPU may be entered | `disabled` or `enabled` |
//! | `cpu:<N>:pm_qos_resume_latency_us` | `cpu<N>/power/pm_qos_resume_latency_us` | µs |
//! | `thp:enabled`, `thp:defrag` | `/sys/kernel/mm/transparent_hugepage/*` | the mode |
//! | `hugepages:<size>kB`, `hugepages:node<N>:<size>kB` | `nr_hugepages` of the pool, global or of one node | page count |
//! | `clocksource:current` | `current_clocksource` | clocksource name |
//! | `service:<unit>` | a systemd unit | `enabled`, `disabled`, `stopped`, `masked` or `running` |
//! | `file:<path>` | a file lowlat installs | the whole content |
//! | `file:<path>:<KEY>` | one `KEY=value` line of a shell-style environment file | the value |
//! | `cpuset:<path>:cpus` | `cpuset.cpus` of the cpuset `<path>` (`/lowlat-isolated`) of the machine's cpuset hierarchy (v1 `/sys/fs/cgroup/cpuset`, v2 `/sys/fs/cgroup`); the cpuset is made when absent | CPU list |
//! | `cpuset:<path>:cpu_exclusive`, `cpuset:<path>:sched_load_balance` | those v1 flags of the cpuset | `0` or `1` |
//! | `cpuset:<path>:partition` | `cpuset.cpus.partition` (v2) | `member`, `root` or `isolated` |
//! | `cpuset:<path>:tasks` | every movable thread of the cpuset named by the value moves into `<path>` (cgroup v1; on v2 the partition takes the CPUs) | the source cpuset's path |
//! | `nic:<interface>:<knob>` | one knob of a network interface (module `machine::nic::knob`): coalescing `rx-usecs`, `rx-frames`, `tx-usecs`, `tx-frames`, `adaptive-rx`, `adaptive-tx`; rings `rx-ring`, `tx-ring`; channels `combined`, `rx-channels`, `tx-channels` (ethtool netlink); offloads `gro`, `lro`, `tso`, `gso`; NAPI's `napi_defer_hard_irqs` and `gro_flush_timeout` (sysfs) | a number (µs, frames, descriptors, channels, polls, ns), or `on`/`off` |
//! | `cmdline:<key>` | kernel command-line arguments | the argument(s) as written (`nohz_full=1-7`, `nosoftlockup`, several space-separated when one key needs several, e.g. hugepages); empty: no argument with this key may remain. The arguments of a setting own the id's key and every key in the value. |

use std::fmt;
use std::str::FromStr;

use crate::machine::nic::knob::Knob;

/// What a setting id names; written and parsed as the strings of the module's table.
///
/// Adding a family is done here: a variant (with its parameters), its arm in `Display`,
/// `parse` and [`SettingId::family`], a row of the module's table, and a case in the tests
/// (`parses_every_family` and `any_id`, which checks that every id survives its string). The
/// `match`es elsewhere have no catch-all where it matters (the plan's own families in
/// `plan::findings`, the diff's readers in `report::plan::diff`), so the compiler then names
/// each place that must decide what the new family means; appliers that do not know it report
/// it unsupported.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SettingId {
    /// A sysctl, by its dotted key.
    Sysctl(String),
    /// The default affinity of new IRQs.
    IrqDefault,
    /// The affinity of one IRQ.
    Irq(u32),
    /// The affinity of every movable IRQ: named by the setting a plan skips when the IRQs could
    /// not be read; apply has nothing to write for it.
    EveryIrq,
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
    /// One knob of a network interface.
    Nic {
        /// The interface (`ens1f0`).
        interface: String,
        /// The knob.
        knob: Knob,
    },
    /// A file of a cpuset, or the threads it holds.
    Cpuset {
        /// The cpuset's path in its hierarchy (`/`, `/lowlat-isolated`).
        path: String,
        /// What is set.
        attribute: CpusetAttribute,
    },
}

/// What a `cpuset:` setting sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpusetAttribute {
    /// `cpuset.cpus`.
    Cpus,
    /// `cpuset.cpu_exclusive` (v1).
    CpuExclusive,
    /// `cpuset.sched_load_balance` (v1).
    SchedLoadBalance,
    /// `cpuset.cpus.partition` (v2).
    Partition,
    /// The threads it holds.
    Tasks,
}

impl CpusetAttribute {
    /// The name in the id, which is also the file's name after `cpuset.` (but for `tasks`).
    pub fn name(self) -> &'static str {
        match self {
            CpusetAttribute::Cpus => "cpus",
            CpusetAttribute::CpuExclusive => "cpu_exclusive",
            CpusetAttribute::SchedLoadBalance => "sched_load_balance",
            CpusetAttribute::Partition => "partition",
            CpusetAttribute::Tasks => "tasks",
        }
    }

    /// The cpuset file it writes; `None` for the threads.
    pub fn file(self) -> Option<&'static str> {
        match self {
            CpusetAttribute::Cpus => Some("cpuset.cpus"),
            CpusetAttribute::CpuExclusive => Some("cpuset.cpu_exclusive"),
            CpusetAttribute::SchedLoadBalance => Some("cpuset.sched_load_balance"),
            CpusetAttribute::Partition => Some("cpuset.cpus.partition"),
            CpusetAttribute::Tasks => None,
        }
    }
}

/// Whether `path` is a cpuset path: absolute, without `..`, empty parts or NUL.
fn cpuset_path(path: &str) -> bool {
    path == "/"
        || (path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|p| !p.is_empty() && p != ".." && p != "." && !p.contains('\0')))
}

/// What is set on matched tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskAttribute {
    /// CPU affinity (a CPU list).
    Affinity,
    /// Scheduling policy and priority.
    Priority,
}

/// Why an id was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingIdError {
    /// The id's family (`foo:`) is not one lowlat applies.
    #[error("lowlat does not know how to apply this setting")]
    Unknown,
    /// The family is known but the rest of the id is malformed; says what was expected.
    #[error("{0}")]
    Malformed(String),
}

/// An id that does not parse, with the id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("setting id `{id}`: {why}")]
pub struct NamedIdError {
    /// The id as written.
    pub id: String,
    /// Why it was refused.
    pub why: SettingIdError,
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

/// Whether `name` is a network interface name as the kernel takes it: 1 to 15 bytes, no
/// `/`, `:`, white space or NUL, not `.` or `..`.
fn interface_name(name: &str) -> bool {
    (1..=15).contains(&name.len())
        && name != "."
        && name != ".."
        && !name.contains(|c: char| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
}

/// A hugepage size as the kernel names its pool directories (`2048kB`).
fn page_size(text: &str) -> Option<u64> {
    text.strip_suffix("kB")?.parse().ok().filter(|&k| k > 0)
}

impl SettingId {
    /// Parses `text`; the error names the id and says why (`setting id `x`: …`), the words
    /// of a document that does not load.
    pub(crate) fn parse_named(text: &str) -> Result<SettingId, NamedIdError> {
        text.parse().map_err(|why| NamedIdError {
            id: text.to_string(),
            why,
        })
    }

    /// The family word the id starts with: `sysctl`, `irq`, `kthread`, `cpu`, ...
    pub fn family(&self) -> &'static str {
        match self {
            SettingId::Sysctl(_) => "sysctl",
            SettingId::IrqDefault | SettingId::Irq(_) | SettingId::EveryIrq => "irq",
            SettingId::Rps(_) => "rps",
            SettingId::Workqueue(_) => "workqueue",
            SettingId::Cpufreq { .. } | SettingId::Boost => "cpufreq",
            SettingId::Cpuidle { .. } => "cpuidle",
            SettingId::ResumeLatency(_) => "cpu",
            SettingId::Thp(_) => "thp",
            SettingId::Hugepages { .. } => "hugepages",
            SettingId::Clocksource => "clocksource",
            SettingId::Tasks { kernel: true, .. } => "kthread",
            SettingId::Tasks { kernel: false, .. } => "task",
            SettingId::Service(_) => "service",
            SettingId::File(_) | SettingId::FileKey { .. } => "file",
            SettingId::Cmdline(_) => "cmdline",
            SettingId::Cpuset { .. } => "cpuset",
            SettingId::Nic { .. } => "nic",
        }
    }

    /// The id without its family word: `vm.swappiness` of `sysctl:vm.swappiness`,
    /// `/etc/default/irqbalance:IRQBALANCE_BANNED_CPULIST` of a file key.
    pub fn without_family(&self) -> String {
        let text = self.to_string();
        text[self.family().len() + 1..].to_string()
    }

    /// Whether the id is an IRQ affinity (the default, one IRQ's or every IRQ's).
    pub fn is_irq(&self) -> bool {
        matches!(
            self,
            SettingId::IrqDefault | SettingId::Irq(_) | SettingId::EveryIrq
        )
    }

    /// The key of a kernel command-line setting (`nohz_full` of `cmdline:nohz_full`).
    pub fn cmdline_key(&self) -> Option<&str> {
        match self {
            SettingId::Cmdline(key) => Some(key),
            _ => None,
        }
    }

    /// Whether the value of this setting is a hex CPU mask (the files that take one:
    /// `default_smp_affinity`, `rps_cpus`, workqueue `cpumask`) rather than a CPU list.
    pub fn takes_cpu_mask(&self) -> bool {
        matches!(
            self,
            SettingId::IrqDefault | SettingId::Rps(_) | SettingId::Workqueue(_)
        )
    }
}

/// Written as its id string; a width (`{:<40}`, a table's column) pads it as it pads a string.
impl fmt::Display for SettingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() {
            f.pad(&Unpadded(self).to_string())
        } else {
            Unpadded(self).fmt(f)
        }
    }
}

/// The id string of a setting id, without padding.
struct Unpadded<'a>(&'a SettingId);

impl fmt::Display for Unpadded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            SettingId::Sysctl(key) => write!(f, "sysctl:{key}"),
            SettingId::IrqDefault => f.write_str("irq:default:affinity"),
            SettingId::Irq(irq) => write!(f, "irq:{irq}:affinity"),
            SettingId::EveryIrq => f.write_str("irq:*:affinity"),
            SettingId::Rps(interface) => write!(f, "rps:{interface}:rps_cpus"),
            SettingId::Workqueue(None) => f.write_str("workqueue:cpumask"),
            SettingId::Workqueue(Some(name)) => write!(f, "workqueue:{name}:cpumask"),
            SettingId::Cpufreq { policy, attribute } => {
                let name = match *attribute {
                    "scaling_governor" => "governor",
                    other => other,
                };
                match policy {
                    Some(policy) => write!(f, "cpufreq:policy{policy}:{name}"),
                    None => write!(f, "cpufreq:{name}"),
                }
            }
            SettingId::Boost => f.write_str("cpufreq:boost"),
            SettingId::Cpuidle { cpu, state } => write!(f, "cpuidle:cpu{cpu}:state{state}"),
            SettingId::ResumeLatency(cpu) => write!(f, "cpu:{cpu}:pm_qos_resume_latency_us"),
            SettingId::Thp(attribute) => write!(f, "thp:{attribute}"),
            SettingId::Hugepages {
                node: Some(node),
                size_kib,
            } => write!(f, "hugepages:node{node}:{size_kib}kB"),
            SettingId::Hugepages {
                node: None,
                size_kib,
            } => write!(f, "hugepages:{size_kib}kB"),
            SettingId::Clocksource => f.write_str("clocksource:current"),
            SettingId::Tasks {
                kernel,
                pattern,
                attribute,
            } => {
                let family = if *kernel { "kthread" } else { "task" };
                let attribute = match attribute {
                    TaskAttribute::Affinity => "affinity",
                    TaskAttribute::Priority => "priority",
                };
                write!(f, "{family}:{pattern}:{attribute}")
            }
            SettingId::Service(unit) => write!(f, "service:{unit}"),
            SettingId::File(path) => write!(f, "file:{path}"),
            SettingId::FileKey { path, key } => write!(f, "file:{path}:{key}"),
            SettingId::Cmdline(key) => write!(f, "cmdline:{key}"),
            SettingId::Cpuset { path, attribute } => {
                write!(f, "cpuset:{path}:{}", attribute.name())
            }
            SettingId::Nic { interface, knob } => write!(f, "nic:{interface}:{knob}"),
        }
    }
}

/// Tests compare an id with the string it is written as (`id == "cmdline:idle"`); the code
/// itself matches on the variants.
#[cfg(test)]
impl PartialEq<&str> for SettingId {
    fn eq(&self, other: &&str) -> bool {
        other.parse::<SettingId>().as_ref() == Ok(self)
    }
}

/// Written as its id string, so plan.json and every JSON document keep the table's form.
impl serde::Serialize for SettingId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read from its id string; an id that does not parse is refused, naming the id and why.
impl<'de> serde::Deserialize<'de> for SettingId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        SettingId::parse_named(&text).map_err(serde::de::Error::custom)
    }
}

impl FromStr for SettingId {
    type Err = SettingIdError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        parse(id)
    }
}

/// Parses a setting id (see the module's table).
fn parse(id: &str) -> Result<SettingId, SettingIdError> {
    let malformed = |why: &str| Err(SettingIdError::Malformed(why.to_string()));
    let Some((family, rest)) = id.split_once(':') else {
        return Err(SettingIdError::Unknown);
    };
    let parts: Vec<&str> = rest.split(':').collect();
    match family {
        "sysctl" => {
            let ok = !rest.is_empty()
                && rest
                    .split(['.', '/'])
                    .all(|p| !p.is_empty() && p != ".." && !p.contains('\0'));
            if ok {
                Ok(SettingId::Sysctl(rest.to_string()))
            } else {
                malformed("expected sysctl:<dotted.key>")
            }
        }
        "irq" => match parts.as_slice() {
            ["default", "affinity"] => Ok(SettingId::IrqDefault),
            ["*", "affinity"] => Ok(SettingId::EveryIrq),
            [n, "affinity"] => match number(n, "") {
                Some(n) => Ok(SettingId::Irq(n)),
                None => malformed("expected irq:<number>:affinity or irq:default:affinity"),
            },
            _ => malformed("expected irq:<number>:affinity or irq:default:affinity"),
        },
        "rps" => match parts.as_slice() {
            [name, "rps_cpus"]
                if !name.is_empty() && !name.contains(['/', '\0']) && *name != ".." =>
            {
                Ok(SettingId::Rps(name.to_string()))
            }
            _ => malformed("expected rps:<interface>:rps_cpus"),
        },
        "workqueue" => match parts.as_slice() {
            ["cpumask"] => Ok(SettingId::Workqueue(None)),
            [name, "cpumask"]
                if !name.is_empty() && !name.contains(['/', '\0']) && *name != ".." =>
            {
                Ok(SettingId::Workqueue(Some(name.to_string())))
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
            Ok(SettingId::Tasks {
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
                ["boost"] => Ok(SettingId::Boost),
                [name] if attribute(name).is_some() => Ok(SettingId::Cpufreq {
                    policy: None,
                    attribute: attribute(name).unwrap_or_default(),
                }),
                [policy, name] => match (number(policy, "policy"), attribute(name)) {
                    (Some(policy), Some(attribute)) => Ok(SettingId::Cpufreq {
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
                (Some(cpu), Some(state)) => Ok(SettingId::Cpuidle { cpu, state }),
                _ => malformed("expected cpuidle:cpu<N>:state<K>"),
            },
            _ => malformed("expected cpuidle:cpu<N>:state<K>"),
        },
        "cpu" => match parts.as_slice() {
            [cpu, "pm_qos_resume_latency_us"] => match number(cpu, "") {
                Some(cpu) => Ok(SettingId::ResumeLatency(cpu)),
                None => malformed("expected cpu:<N>:pm_qos_resume_latency_us"),
            },
            _ => Err(SettingIdError::Unknown),
        },
        "thp" => match rest {
            "enabled" => Ok(SettingId::Thp("enabled")),
            "defrag" => Ok(SettingId::Thp("defrag")),
            _ => malformed("expected thp:enabled or thp:defrag"),
        },
        "hugepages" => match parts.as_slice() {
            [size] => match page_size(size) {
                Some(size_kib) => Ok(SettingId::Hugepages {
                    node: None,
                    size_kib,
                }),
                None => malformed("expected hugepages:[node<N>:]<size>kB"),
            },
            [node, size] => match (number(node, "node"), page_size(size)) {
                (Some(node), Some(size_kib)) => Ok(SettingId::Hugepages {
                    node: Some(node),
                    size_kib,
                }),
                _ => malformed("expected hugepages:[node<N>:]<size>kB"),
            },
            _ => malformed("expected hugepages:[node<N>:]<size>kB"),
        },
        "clocksource" if rest == "current" => Ok(SettingId::Clocksource),
        "service" => {
            if rest.is_empty() || rest.contains(['/', '\0', ' ']) || rest.starts_with('-') {
                malformed("expected service:<unit name>")
            } else {
                Ok(SettingId::Service(rest.to_string()))
            }
        }
        "file" => {
            if !rest.starts_with('/') || rest.split('/').any(|p| p == "..") || rest.contains('\0') {
                return malformed("expected file:<absolute path>[:<KEY>]");
            }
            match rest.rsplit_once(':') {
                Some((path, key)) if variable_name(key) && !path.is_empty() => {
                    Ok(SettingId::FileKey {
                        path: path.to_string(),
                        key: key.to_string(),
                    })
                }
                _ if rest.ends_with('/') => malformed("expected a file path, not a directory"),
                _ => Ok(SettingId::File(rest.to_string())),
            }
        }
        "cmdline" => {
            if rest.is_empty() || rest.contains(char::is_whitespace) || rest.contains(['=', '"']) {
                malformed("expected cmdline:<argument key>")
            } else {
                Ok(SettingId::Cmdline(rest.to_string()))
            }
        }
        "cpuset" => {
            let attribute = match rest.rsplit_once(':') {
                Some((path, name)) if cpuset_path(path) => match name {
                    "cpus" => CpusetAttribute::Cpus,
                    "cpu_exclusive" => CpusetAttribute::CpuExclusive,
                    "sched_load_balance" => CpusetAttribute::SchedLoadBalance,
                    "partition" => CpusetAttribute::Partition,
                    "tasks" => CpusetAttribute::Tasks,
                    _ => {
                        return malformed(
                            "the last part must be cpus, cpu_exclusive, sched_load_balance, partition or tasks",
                        );
                    }
                },
                _ => return malformed("expected cpuset:<absolute cpuset path>:<attribute>"),
            };
            let path = rest.rsplit_once(':').map_or("", |(p, _)| p).to_string();
            Ok(SettingId::Cpuset { path, attribute })
        }
        "nic" => match rest.split_once(':') {
            Some((interface, knob)) if interface_name(interface) => match Knob::from_name(knob) {
                Some(knob) => Ok(SettingId::Nic {
                    interface: interface.to_string(),
                    knob,
                }),
                None => malformed(&format!(
                    "the knob must be one of {}",
                    Knob::ALL.map(Knob::name).join(", ")
                )),
            },
            _ => malformed("expected nic:<interface name>:<knob>"),
        },
        _ => Err(SettingIdError::Unknown),
    }
}

/// Whether a task name matches a pattern (`name`, or `prefix*`).
pub(crate) fn matches(pattern: &str, comm: &str) -> bool {
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
                SettingId::Sysctl("kernel.numa_balancing".into()),
            ),
            ("irq:default:affinity", SettingId::IrqDefault),
            ("irq:45:affinity", SettingId::Irq(45)),
            ("irq:*:affinity", SettingId::EveryIrq),
            ("workqueue:cpumask", SettingId::Workqueue(None)),
            ("rps:ens1f0:rps_cpus", SettingId::Rps("ens1f0".into())),
            (
                "workqueue:writeback:cpumask",
                SettingId::Workqueue(Some("writeback".into())),
            ),
            (
                "kthread:rcuop/*:affinity",
                SettingId::Tasks {
                    kernel: true,
                    pattern: "rcuop/*".into(),
                    attribute: TaskAttribute::Affinity,
                },
            ),
            (
                "task:order_gw:priority",
                SettingId::Tasks {
                    kernel: false,
                    pattern: "order_gw".into(),
                    attribute: TaskAttribute::Priority,
                },
            ),
            (
                "cpufreq:governor",
                SettingId::Cpufreq {
                    policy: None,
                    attribute: "scaling_governor",
                },
            ),
            (
                "cpufreq:policy3:energy_performance_preference",
                SettingId::Cpufreq {
                    policy: Some(3),
                    attribute: "energy_performance_preference",
                },
            ),
            ("cpufreq:boost", SettingId::Boost),
            (
                "cpuidle:cpu3:state2",
                SettingId::Cpuidle { cpu: 3, state: 2 },
            ),
            (
                "cpu:7:pm_qos_resume_latency_us",
                SettingId::ResumeLatency(7),
            ),
            ("thp:enabled", SettingId::Thp("enabled")),
            (
                "hugepages:node1:1048576kB",
                SettingId::Hugepages {
                    node: Some(1),
                    size_kib: 1_048_576,
                },
            ),
            ("clocksource:current", SettingId::Clocksource),
            (
                "service:irqbalance",
                SettingId::Service("irqbalance".into()),
            ),
            (
                "file:/etc/sysctl.d/99-lowlat.conf",
                SettingId::File("/etc/sysctl.d/99-lowlat.conf".into()),
            ),
            (
                "file:/etc/sysconfig/irqbalance:IRQBALANCE_BANNED_CPULIST",
                SettingId::FileKey {
                    path: "/etc/sysconfig/irqbalance".into(),
                    key: "IRQBALANCE_BANNED_CPULIST".into(),
                },
            ),
            ("cmdline:nohz_full", SettingId::Cmdline("nohz_full".into())),
            (
                "cpuset:/lowlat-isolated:cpu_exclusive",
                SettingId::Cpuset {
                    path: "/lowlat-isolated".into(),
                    attribute: CpusetAttribute::CpuExclusive,
                },
            ),
            (
                "nic:ens1f0:rx-usecs",
                SettingId::Nic {
                    interface: "ens1f0".into(),
                    knob: Knob::RxUsecs,
                },
            ),
            (
                "nic:eth0:napi_defer_hard_irqs",
                SettingId::Nic {
                    interface: "eth0".into(),
                    knob: Knob::NapiDeferHardIrqs,
                },
            ),
            (
                "cpuset:/:sched_load_balance",
                SettingId::Cpuset {
                    path: "/".into(),
                    attribute: CpusetAttribute::SchedLoadBalance,
                },
            ),
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
            "cpuset:/a/../b:cpus",
            "cpuset:relative:cpus",
            "cpuset:/x:mems",
            "cpuset:/x//y:tasks",
            "nic:eth0",
            "nic:eth0:rx-usec",
            "nic::gro",
            "nic:../x:gro",
            "nic:an_interface_name_too_long:gro",
            "nic:eth0:gro:on",
        ] {
            assert!(
                matches!(parse(id), Err(SettingIdError::Malformed(_))),
                "{id}"
            );
        }
        for id in ["bios:smt", "nothing", "cpu:3:online"] {
            assert_eq!(parse(id), Err(SettingIdError::Unknown), "{id}");
        }
    }

    #[test]
    fn patterns_match_names_and_prefixes() {
        assert!(matches("kswapd0", "kswapd0"));
        assert!(!matches("kswapd0", "kswapd1"));
        assert!(matches("rcuop/*", "rcuop/12"));
        assert!(!matches("rcuop/*", "rcuos/12"));
    }

    fn any_id() -> impl proptest::strategy::Strategy<Value = SettingId> {
        use proptest::prelude::*;
        let name = "[a-z][a-z0-9_]{0,14}";
        let key = "[a-z][a-z0-9_]{0,10}(\\.[a-z][a-z0-9_]{0,10}){0,3}";
        let path = "(/[a-z0-9_.-]{1,12}){1,4}".prop_filter("no .. part", |p: &String| {
            !p.split('/').any(|part| part == "..")
        });
        prop_oneof![
            key.prop_map(SettingId::Sysctl),
            Just(SettingId::IrqDefault),
            any::<u32>().prop_map(SettingId::Irq),
            Just(SettingId::EveryIrq),
            name.prop_map(SettingId::Rps),
            proptest::option::of(name).prop_map(SettingId::Workqueue),
            (
                proptest::option::of(any::<u32>()),
                prop_oneof![
                    Just("scaling_governor"),
                    Just("energy_performance_preference")
                ]
            )
                .prop_map(|(policy, attribute)| SettingId::Cpufreq { policy, attribute }),
            Just(SettingId::Boost),
            (any::<u32>(), any::<u32>()).prop_map(|(cpu, state)| SettingId::Cpuidle { cpu, state }),
            any::<u32>().prop_map(SettingId::ResumeLatency),
            prop_oneof![Just("enabled"), Just("defrag")].prop_map(SettingId::Thp),
            (proptest::option::of(any::<u32>()), 1..=u64::MAX)
                .prop_map(|(node, size_kib)| SettingId::Hugepages { node, size_kib }),
            Just(SettingId::Clocksource),
            (
                any::<bool>(),
                "[a-z][a-z0-9_/]{0,14}\\*?",
                prop_oneof![Just(TaskAttribute::Affinity), Just(TaskAttribute::Priority)]
            )
                .prop_map(|(kernel, pattern, attribute)| SettingId::Tasks {
                    kernel,
                    pattern,
                    attribute
                }),
            "[a-z][a-z0-9_@.-]{0,20}".prop_map(SettingId::Service),
            path.clone().prop_map(SettingId::File),
            (path, "[A-Z_][A-Z0-9_]{0,15}")
                .prop_map(|(path, key)| SettingId::FileKey { path, key }),
            name.prop_map(SettingId::Cmdline),
            (name, proptest::sample::select(Knob::ALL.to_vec()))
                .prop_map(|(interface, knob)| SettingId::Nic { interface, knob }),
        ]
    }

    #[test]
    fn a_width_pads_the_id_as_a_string() {
        let id = SettingId::Sysctl("vm.swappiness".into());
        assert_eq!(format!("[{id:<22}]"), "[sysctl:vm.swappiness  ]");
        assert_eq!(format!("{id}"), "sysctl:vm.swappiness");
    }

    #[test]
    fn serde_writes_and_reads_the_id_string() {
        let id: SettingId = "cpuidle:cpu3:state2".parse().unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"cpuidle:cpu3:state2\"");
        assert_eq!(serde_json::from_str::<SettingId>(&json).unwrap(), id);
    }

    #[test]
    fn serde_refuses_an_id_that_does_not_parse_and_names_it() {
        let err = serde_json::from_str::<SettingId>("\"frobnicate:x\"").unwrap_err();
        assert!(err.to_string().contains("frobnicate:x"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(id in ".{0,60}") {
            let _ = parse(&id);
        }

        #[test]
        fn ids_survive_a_round_trip_through_their_string(id in any_id()) {
            let text = id.to_string();
            proptest::prop_assert_eq!(text.parse::<SettingId>(), Ok(id), "{}", text);
        }
    }

    /// Every setting (an object with `id`, `value` and `layer`) in `json`, by its id.
    fn setting_ids(json: &serde_json::Value, out: &mut Vec<String>) {
        match json {
            serde_json::Value::Object(map) => {
                if let (Some(serde_json::Value::String(id)), true, true) = (
                    map.get("id"),
                    map.contains_key("value"),
                    map.contains_key("layer"),
                ) {
                    // A group of plan.json (schema 3) stands for one id per CPU or name.
                    let cpus = map.get("cpus").and_then(|c| c.as_str()).map(|list| {
                        crate::machine::CpuSet::parse_list(list)
                            .unwrap()
                            .iter()
                            .map(|cpu| id.replace("{cpus}", &cpu.to_string()))
                            .collect::<Vec<_>>()
                    });
                    let names = map.get("names").and_then(|n| n.as_array()).map(|names| {
                        names
                            .iter()
                            .map(|name| id.replace("{names}", name.as_str().unwrap()))
                            .collect::<Vec<_>>()
                    });
                    match cpus.or(names) {
                        Some(members) => out.extend(members),
                        None => out.push(id.clone()),
                    }
                }
                map.values().for_each(|v| setting_ids(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| setting_ids(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_id_in_the_golden_files_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
        let mut ids = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".json.snap") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // An insta snapshot: a `---`-fenced header, then the document.
            let body = text.splitn(3, "---\n").nth(2).unwrap_or_default();
            let json: serde_json::Value =
                serde_json::from_str(body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            setting_ids(&json, &mut ids);
        }
        assert!(ids.len() > 100, "only {} setting ids found", ids.len());
        for id in ids {
            let parsed: SettingId = id.parse().unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(parsed.to_string(), id);
        }
    }
}
