//! CPU power management: cpufreq policies (driver, governor, limits, EPP), boost, the P-state
//! driver's mode, cpuidle (driver, governor, per-CPU idle states) and per-CPU resume-latency
//! constraints.
//!
//! Frequencies are in kHz, as the kernel writes them in `/sys/devices/system/cpu/cpufreq`.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::machine::{Avail, CpuSet, Reader};

const CPU_DIR: &str = "/sys/devices/system/cpu";
const CPUFREQ_DIR: &str = "/sys/devices/system/cpu/cpufreq";
const CPUIDLE_DIR: &str = "/sys/devices/system/cpu/cpuidle";

/// The power-management state of the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Power {
    /// The cpufreq policies in policy order, or why there are none (VMs, or a BIOS that keeps
    /// P-states to itself).
    pub cpufreq: Avail<Vec<Policy>>,
    /// Whether the CPUs may run above their base frequency (turbo / core performance boost), as
    /// the kernel sees it. A BIOS that disables boost may still show it enabled here.
    pub boost: Avail<Boost>,
    /// The mode of the intel_pstate or amd_pstate driver, when one is present.
    pub pstate: Avail<PstateMode>,
    /// The cpuidle framework: driver and governor.
    pub cpuidle: Avail<Cpuidle>,
    /// Per logical CPU (from the `cpuN` directories), in CPU order.
    pub cpus: Vec<CpuPower>,
}

impl Power {
    /// The cpufreq policy that covers `cpu` (by its `affected_cpus`).
    pub fn policy_of(&self, cpu: u32) -> Option<&Policy> {
        self.cpufreq
            .get()?
            .iter()
            .find(|p| p.affected_cpus.get().is_some_and(|cpus| cpus.contains(cpu)))
    }
}

/// One cpufreq policy: a group of CPUs that share a frequency. `scaling_cur_freq` is not read
/// on purpose: drivers such as acpi-cpufreq answer it by reading an MSR on a CPU of the policy,
/// an interrupt to a CPU that may be isolated (`lowlat measure freq` measures frequency instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// The policy number (`policyN`; on kernels without policy directories, the first CPU).
    pub id: u32,
    /// The directory read, e.g. `/sys/devices/system/cpu/cpufreq/policy0`.
    pub path: String,
    /// `scaling_driver`: acpi-cpufreq, intel_pstate, amd-pstate-epp, intel_cpufreq ...
    pub driver: Avail<String>,
    /// `scaling_governor`: performance, powersave, schedutil, ondemand ...
    pub governor: Avail<String>,
    /// `scaling_available_governors`.
    pub available_governors: Avail<Vec<String>>,
    /// `scaling_min_freq`: the lowest frequency the governor may pick (kHz).
    pub min_khz: Avail<u64>,
    /// `scaling_max_freq`: the highest frequency the governor may pick (kHz).
    pub max_khz: Avail<u64>,
    /// `cpuinfo_min_freq`: the hardware minimum (kHz).
    pub cpuinfo_min_khz: Avail<u64>,
    /// `cpuinfo_max_freq`: the hardware maximum, boost included where boost is on (kHz).
    pub cpuinfo_max_khz: Avail<u64>,
    /// `affected_cpus`: the online CPUs this policy drives.
    pub affected_cpus: Avail<CpuSet>,
    /// `energy_performance_preference` (intel_pstate and amd-pstate active mode):
    /// performance, balance_performance, balance_power, power, default.
    pub energy_performance_preference: Avail<String>,
    /// `boost`: per-policy boost switch (Linux 6.11+ for some drivers).
    pub boost: Avail<bool>,
}

/// Whether boost is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoostState {
    /// The CPUs may boost.
    Enabled,
    /// Boost is off.
    Disabled,
    /// Per-policy switches disagree.
    Mixed,
}

/// The boost state and the file it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boost {
    /// On, off, or mixed across policies.
    pub state: BoostState,
    /// The file read: `/sys/devices/system/cpu/cpufreq/boost` (acpi-cpufreq, amd-pstate),
    /// `/sys/devices/system/cpu/intel_pstate/no_turbo` (inverted), or the per-policy files.
    pub source: String,
}

/// The operating mode of a P-state driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PstateMode {
    /// `intel_pstate` or `amd_pstate`.
    pub driver: String,
    /// The content of its `status` file: active, passive, guided (amd), off/disable.
    pub status: String,
}

/// The cpuidle framework.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpuidle {
    /// `current_driver`: intel_idle, acpi_idle, haltpoll, none ...
    pub driver: Avail<String>,
    /// `current_governor` (or `current_governor_ro` on older kernels): menu, teo, ladder,
    /// haltpoll.
    pub governor: Avail<String>,
}

/// Power state of one logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuPower {
    /// The logical CPU number.
    pub cpu: u32,
    /// The cpufreq policy driving it, if any.
    pub policy: Option<u32>,
    /// Its idle states, shallowest first, or why there are none.
    pub idle_states: Avail<Vec<IdleState>>,
    /// `power/pm_qos_resume_latency_us`: the wake-up latency the CPU must honour.
    pub resume_latency: Avail<ResumeLatency>,
}

/// One cpuidle state of one CPU (`cpuN/cpuidle/stateK`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    /// The state index K (0 is usually POLL).
    pub index: u32,
    /// `name`: POLL, C1, C1E, C2, C6 ...
    pub name: Avail<String>,
    /// `desc`: the driver's description (e.g. `ACPI FFH MWAIT 0x1`).
    pub desc: Avail<String>,
    /// `latency`: worst-case exit latency (µs).
    pub latency_us: Avail<u64>,
    /// `residency`: target residency, the shortest idle period worth entering it for (µs).
    pub residency_us: Avail<u64>,
    /// `disable`: whether the state is disabled for this CPU.
    pub disabled: Avail<bool>,
}

impl IdleState {
    /// Whether the CPU may enter it: enabled, and allowed by the resume-latency `limit`.
    pub fn usable(&self, limit: Option<&ResumeLatency>) -> bool {
        let enabled = self.disabled.get().is_none_or(|d| !d);
        let allowed = match (limit, self.latency_us.get()) {
            (Some(ResumeLatency::ZeroLatency), Some(latency)) => *latency == 0,
            (Some(ResumeLatency::MaxUs(max)), Some(latency)) => *latency <= u64::from(*max),
            _ => true,
        };
        enabled && allowed
    }
}

impl CpuPower {
    /// The idle state with the longest exit latency that the CPU may enter (enabled, allowed
    /// by its resume-latency limit): the most that leaving idle can cost it; `None` when its
    /// states are unknown or none has a known latency.
    pub fn deepest_usable_idle(&self) -> Option<&IdleState> {
        let limit = self.resume_latency.get();
        self.idle_states
            .get()?
            .iter()
            .filter(|s| s.usable(limit) && s.latency_us.get().is_some())
            .max_by_key(|s| s.latency_us.get().copied())
    }
}

/// A CPU's resume-latency constraint, as `pm_qos_resume_latency_us` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeLatency {
    /// `0`: no constraint; every idle state may be used.
    NoConstraint,
    /// `n/a`: zero latency required; only states with no exit latency (polling) may be used.
    ZeroLatency,
    /// A limit: idle states with a longer exit latency are not used (µs).
    MaxUs(u32),
}

/// Parses `pm_qos_resume_latency_us`.
pub fn parse_resume_latency(text: &str) -> Option<ResumeLatency> {
    match text.trim() {
        "0" => Some(ResumeLatency::NoConstraint),
        "n/a" => Some(ResumeLatency::ZeroLatency),
        other => other.parse().ok().map(ResumeLatency::MaxUs),
    }
}

/// Parses a CPU-number file written as numbers separated by spaces (`affected_cpus`:
/// `0 1 2 3`); `None` when a word is not a CPU number.
pub fn parse_cpu_words(text: &str) -> Option<CpuSet> {
    text.split_whitespace().map(|w| w.parse().ok()).collect()
}

/// Parses a `0`/`1` switch file.
pub fn parse_switch(text: &str) -> Option<bool> {
    match text.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Reads the power-management part of the machine model.
pub fn read(r: &mut Reader) -> Power {
    let cpufreq = read_policies(r);
    let boost = read_boost(r, cpufreq.get().map(Vec::as_slice));
    let cpuidle = read_cpuidle(r);
    let policy_of = policy_by_cpu(cpufreq.get().map(Vec::as_slice).unwrap_or_default());
    let mut idle_descriptions = IdleDescriptions::default();
    let cpus = r
        .root
        .list_numbered(CPU_DIR, "cpu")
        .into_iter()
        .map(|(cpu, _)| CpuPower {
            cpu,
            policy: policy_of.get(&cpu).copied(),
            idle_states: read_idle_states(r, cpu, &mut idle_descriptions),
            resume_latency: read_with(
                r,
                &format!("{CPU_DIR}/cpu{cpu}/power/pm_qos_resume_latency_us"),
                parse_resume_latency,
            ),
        })
        .collect();
    Power {
        cpufreq,
        boost,
        pstate: read_pstate(r),
        cpuidle,
        cpus,
    }
}

/// The policy id of every CPU named in a policy's `affected_cpus`; a CPU named by two
/// policies keeps the first, in policy order. One pass over the policies, where a search per
/// CPU would cost CPUs x policies (67 million set lookups at 8,192 CPUs).
fn policy_by_cpu(policies: &[Policy]) -> HashMap<u32, u32> {
    let mut by_cpu = HashMap::new();
    for policy in policies {
        for cpu in policy
            .affected_cpus
            .get()
            .into_iter()
            .flat_map(CpuSet::iter)
        {
            by_cpu.entry(cpu).or_insert(policy.id);
        }
    }
    by_cpu
}

/// Reads a one-value file and parses it with `parse`; garbled content is warned about.
fn read_with<T>(r: &mut Reader, path: &str, parse: fn(&str) -> Option<T>) -> Avail<T> {
    match r.value(path) {
        Avail::Available(text) => match parse(&text) {
            Some(value) => Avail::Available(value),
            None => {
                let message = format!("cannot parse '{}'", crate::machine::truncate(&text, 40));
                r.warnings.file(path, message.clone());
                Avail::missing(format!("{path}: {message}"))
            }
        },
        Avail::Unavailable { unavailable } => Avail::missing(unavailable),
    }
}

fn read_policies(r: &mut Reader) -> Avail<Vec<Policy>> {
    let mut dirs: Vec<(u32, String)> = r
        .root
        .list_numbered(CPUFREQ_DIR, "policy")
        .into_iter()
        .map(|(id, name)| (id, format!("{CPUFREQ_DIR}/{name}")))
        .collect();
    if dirs.is_empty() {
        // Kernels before the policy directories (RHEL 7's 3.10): one cpufreq directory per CPU,
        // shared CPUs repeat the policy; keep the one of each policy's first CPU.
        for (cpu, name) in r.root.list_numbered(CPU_DIR, "cpu") {
            let dir = format!("{CPU_DIR}/{name}/cpufreq");
            if !r.root.exists(&dir) {
                continue;
            }
            let affected = read_with(r, &format!("{dir}/affected_cpus"), parse_cpu_words);
            if affected.get().and_then(CpuSet::first).unwrap_or(cpu) == cpu {
                dirs.push((cpu, dir));
            }
        }
    }
    if dirs.is_empty() {
        return Avail::missing(format!(
            "no cpufreq: {CPUFREQ_DIR} has no policies (a VM or a BIOS that keeps P-states to itself)"
        ));
    }
    let mut driver_wide = None;
    Avail::Available(
        dirs.into_iter()
            .map(|(id, path)| read_policy(r, id, path, &mut driver_wide))
            .collect(),
    )
}

/// The files of a policy that the kernel answers from the one cpufreq driver, not from the
/// policy (`scaling_driver` prints the driver's name, `scaling_available_governors` the
/// governors registered, or `performance powersave` for a driver that sets policies itself):
/// equal in every policy, so read from the first policy that has both and reused.
struct DriverWide {
    driver: String,
    available_governors: Vec<String>,
}

fn read_policy(
    r: &mut Reader,
    id: u32,
    path: String,
    driver_wide: &mut Option<DriverWide>,
) -> Policy {
    let file = |name: &str| format!("{path}/{name}");
    let (driver, available_governors) = match driver_wide {
        Some(known) => (
            Avail::Available(known.driver.clone()),
            Avail::Available(known.available_governors.clone()),
        ),
        None => {
            let driver = r.value(&file("scaling_driver"));
            let governors: Avail<Vec<String>> = r
                .value(&file("scaling_available_governors"))
                .map(|text| text.split_whitespace().map(str::to_string).collect());
            if let (Some(driver), Some(governors)) = (driver.get(), governors.get()) {
                *driver_wide = Some(DriverWide {
                    driver: driver.clone(),
                    available_governors: governors.clone(),
                });
            }
            (driver, governors)
        }
    };
    Policy {
        id,
        driver,
        governor: r.value(&file("scaling_governor")),
        available_governors,
        min_khz: r.parse(&file("scaling_min_freq")),
        max_khz: r.parse(&file("scaling_max_freq")),
        cpuinfo_min_khz: r.parse(&file("cpuinfo_min_freq")),
        cpuinfo_max_khz: r.parse(&file("cpuinfo_max_freq")),
        affected_cpus: read_with(r, &file("affected_cpus"), parse_cpu_words),
        energy_performance_preference: r.value(&file("energy_performance_preference")),
        boost: read_with(r, &file("boost"), parse_switch),
        path,
    }
}

fn read_boost(r: &mut Reader, policies: Option<&[Policy]>) -> Avail<Boost> {
    let found = |enabled: bool, source: &str| {
        Avail::Available(Boost {
            state: if enabled {
                BoostState::Enabled
            } else {
                BoostState::Disabled
            },
            source: source.to_string(),
        })
    };
    let global = format!("{CPUFREQ_DIR}/boost");
    if let Avail::Available(on) = read_with(r, &global, parse_switch) {
        return found(on, &global);
    }
    let no_turbo = format!("{CPU_DIR}/intel_pstate/no_turbo");
    if let Avail::Available(off) = read_with(r, &no_turbo, parse_switch) {
        return found(!off, &no_turbo);
    }
    let per_policy: Vec<bool> = policies
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.boost.get().copied())
        .collect();
    let source = format!("{CPUFREQ_DIR}/policy*/boost");
    if per_policy.is_empty() {
        return Avail::missing(format!(
            "no boost switch: none of {global}, {no_turbo} or {source} exists"
        ));
    }
    if per_policy.iter().all(|&on| on) {
        found(true, &source)
    } else if per_policy.iter().all(|&on| !on) {
        found(false, &source)
    } else {
        Avail::Available(Boost {
            state: BoostState::Mixed,
            source,
        })
    }
}

fn read_pstate(r: &mut Reader) -> Avail<PstateMode> {
    for driver in ["intel_pstate", "amd_pstate"] {
        if let Avail::Available(status) = r.value(&format!("{CPU_DIR}/{driver}/status")) {
            return Avail::Available(PstateMode {
                driver: driver.to_string(),
                status,
            });
        }
    }
    Avail::missing(format!(
        "no P-state driver status: neither {CPU_DIR}/intel_pstate/status nor {CPU_DIR}/amd_pstate/status exists"
    ))
}

fn read_cpuidle(r: &mut Reader) -> Avail<Cpuidle> {
    if !r.root.exists(CPUIDLE_DIR) {
        return Avail::missing(format!(
            "no cpuidle: {CPUIDLE_DIR} does not exist (cpuidle.off=1, or a kernel without cpuidle)"
        ));
    }
    let governor = match r.value(&format!("{CPUIDLE_DIR}/current_governor")) {
        Avail::Available(governor) => Avail::Available(governor),
        Avail::Unavailable { .. } => r.value(&format!("{CPUIDLE_DIR}/current_governor_ro")),
    };
    Avail::Available(Cpuidle {
        driver: r.value(&format!("{CPUIDLE_DIR}/current_driver")),
        governor,
    })
}

/// The description of an idle state (`name`, `desc`, `latency`, `residency`): the kernel
/// prints these from the cpuidle driver's state table, not from the CPU, so every CPU driven
/// by the same driver shows the same ones. Only `disable` is the CPU's own.
struct IdleDescription {
    name: String,
    desc: String,
    latency_us: u64,
    residency_us: u64,
}

/// The idle state descriptions read so far, by driver and state index, so that a large
/// machine reads them from one CPU per driver instead of from every CPU.
#[derive(Default)]
struct IdleDescriptions {
    /// Whether CPUs may have drivers of their own (`cpuN/cpuidle/driver/name`, kernels built
    /// with CONFIG_CPU_IDLE_MULTIPLE_DRIVERS, such as ARM big.LITTLE): then the key is that
    /// name; otherwise one driver drives every CPU. Decided at the first CPU with states.
    per_cpu_drivers: Option<bool>,
    /// By (driver name, or empty for the one driver; state index); only descriptions whose
    /// four files were all read and parsed.
    known: HashMap<(String, u32), IdleDescription>,
}

impl IdleDescriptions {
    /// The key of `dir`'s driver: its name where CPUs have drivers of their own, else empty;
    /// `None` when that name cannot be read (then nothing is shared).
    fn driver_key(&mut self, r: &mut Reader, dir: &str) -> Option<String> {
        let driver = format!("{dir}/driver");
        let per_cpu = *self
            .per_cpu_drivers
            .get_or_insert_with(|| r.root.is_dir(&driver));
        if !per_cpu {
            return Some(String::new());
        }
        r.value(&format!("{driver}/name")).get_owned()
    }
}

fn read_idle_states(
    r: &mut Reader,
    cpu: u32,
    descriptions: &mut IdleDescriptions,
) -> Avail<Vec<IdleState>> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle");
    let states = r.root.list_numbered(&dir, "state");
    if states.is_empty() {
        return Avail::missing(format!(
            "{dir} has no idle states (no cpuidle driver, idle=poll, or cpuidle.off=1)"
        ));
    }
    let driver = descriptions.driver_key(r, &dir);
    Avail::Available(
        states
            .into_iter()
            .map(|(index, name)| {
                let file = |f: &str| format!("{dir}/{name}/{f}");
                let key = driver.clone().map(|driver| (driver, index));
                let (state_name, desc, latency_us, residency_us) =
                    match key.as_ref().and_then(|key| descriptions.known.get(key)) {
                        Some(known) => known.to_avail(),
                        None => {
                            let read = (
                                r.value(&file("name")),
                                r.value(&file("desc")),
                                r.parse(&file("latency")),
                                r.parse(&file("residency")),
                            );
                            if let (Some(key), Some(description)) =
                                (key, IdleDescription::from_read(&read))
                            {
                                descriptions.known.insert(key, description);
                            }
                            read
                        }
                    };
                IdleState {
                    index,
                    name: state_name,
                    desc,
                    latency_us,
                    residency_us,
                    disabled: read_with(r, &file("disable"), parse_switch),
                }
            })
            .collect(),
    )
}

/// An idle state's description as read: name, desc, latency and residency.
type ReadDescription = (Avail<String>, Avail<String>, Avail<u64>, Avail<u64>);

impl IdleDescription {
    /// The description, when all four files were read and parsed.
    fn from_read((name, desc, latency, residency): &ReadDescription) -> Option<Self> {
        Some(Self {
            name: name.get_owned()?,
            desc: desc.get_owned()?,
            latency_us: *latency.get()?,
            residency_us: *residency.get()?,
        })
    }

    /// The description as the four values of an [`IdleState`].
    fn to_avail(&self) -> ReadDescription {
        (
            Avail::Available(self.name.clone()),
            Avail::Available(self.desc.clone()),
            Avail::Available(self.latency_us),
            Avail::Available(self.residency_us),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    fn policy(d: &TestTree, id: u32, cpus: &str, governor: &str) {
        let p = format!("{CPUFREQ_DIR}/policy{id}");
        d.write(&format!("{p}/scaling_driver"), "acpi-cpufreq\n");
        d.write(&format!("{p}/scaling_governor"), format!("{governor}\n"));
        d.write(
            &format!("{p}/scaling_available_governors"),
            "conservative ondemand userspace powersave performance schedutil \n",
        );
        d.write(&format!("{p}/scaling_min_freq"), "1500000\n");
        d.write(&format!("{p}/scaling_max_freq"), "3700000\n");
        d.write(&format!("{p}/scaling_cur_freq"), "3699945\n");
        d.write(&format!("{p}/cpuinfo_min_freq"), "1500000\n");
        d.write(&format!("{p}/cpuinfo_max_freq"), "3700000\n");
        d.write(&format!("{p}/affected_cpus"), format!("{cpus}\n"));
    }

    fn idle_state(d: &TestTree, cpu: u32, k: u32, name: &str, latency: u32, disable: &str) {
        let s = format!("{CPU_DIR}/cpu{cpu}/cpuidle/state{k}");
        d.write(&format!("{s}/name"), format!("{name}\n"));
        d.write(&format!("{s}/desc"), "ACPI FFH MWAIT 0x0\n");
        d.write(&format!("{s}/latency"), format!("{latency}\n"));
        d.write(&format!("{s}/residency"), format!("{}\n", latency * 2));
        d.write(&format!("{s}/disable"), format!("{disable}\n"));
    }

    /// Two CPUs of the tuned EPYC 7F32 (\[S000\]): performance governor, boost off, C2
    /// disabled on CPU 1.
    fn epyc() -> TestTree {
        let dir = TestTree::empty();
        let d = &dir;
        policy(d, 0, "0", "performance");
        policy(d, 1, "1", "performance");
        d.write(&format!("{CPUFREQ_DIR}/boost"), "0\n");
        d.write(&format!("{CPUIDLE_DIR}/current_driver"), "acpi_idle\n");
        d.write(&format!("{CPUIDLE_DIR}/current_governor_ro"), "menu\n");
        for cpu in 0..2 {
            idle_state(d, cpu, 0, "POLL", 0, "0");
            idle_state(d, cpu, 1, "C1", 1, "0");
            idle_state(d, cpu, 2, "C2", 400, if cpu == 1 { "1" } else { "0" });
        }
        d.write(
            &format!("{CPU_DIR}/cpu0/power/pm_qos_resume_latency_us"),
            "0\n",
        );
        d.write(
            &format!("{CPU_DIR}/cpu1/power/pm_qos_resume_latency_us"),
            "n/a\n",
        );
        dir
    }

    #[test]
    fn reads_policies_boost_and_idle_states() {
        let dir = epyc();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let policies = power.cpufreq.get().unwrap();
        assert_eq!(policies.len(), 2);
        let p1 = power.policy_of(1).unwrap();
        assert_eq!(p1.id, 1);
        assert_eq!(p1.governor.get().map(String::as_str), Some("performance"));
        assert_eq!(p1.max_khz.get(), Some(&3_700_000));
        assert_eq!(p1.available_governors.get().unwrap().len(), 6);
        assert!(p1.energy_performance_preference.reason().is_some());
        assert!(power.policy_of(7).is_none());
        let boost = power.boost.get().unwrap();
        assert_eq!(boost.state, BoostState::Disabled);
        assert_eq!(boost.source, "/sys/devices/system/cpu/cpufreq/boost");
        let idle = power.cpuidle.get().unwrap();
        assert_eq!(idle.driver.get().map(String::as_str), Some("acpi_idle"));
        assert_eq!(idle.governor.get().map(String::as_str), Some("menu"));
        assert_eq!(power.cpus.len(), 2);
        let cpu1 = &power.cpus[1];
        assert_eq!(cpu1.policy, Some(1));
        let states = cpu1.idle_states.get().unwrap();
        assert_eq!(states.len(), 3);
        assert_eq!(states[2].name.get().map(String::as_str), Some("C2"));
        assert_eq!(states[2].latency_us.get(), Some(&400));
        assert_eq!(states[2].residency_us.get(), Some(&800));
        assert_eq!(states[2].disabled.get(), Some(&true));
        assert_eq!(
            power.cpus[0].resume_latency.get(),
            Some(&ResumeLatency::NoConstraint)
        );
        assert_eq!(cpu1.resume_latency.get(), Some(&ResumeLatency::ZeroLatency));
        assert!(power.pstate.reason().is_some());
        assert!(r.warnings.into_vec().is_empty());
        let json = serde_json::to_value(&power).unwrap();
        assert_eq!(serde_json::from_value::<Power>(json).unwrap(), power);
    }

    #[test]
    fn idle_descriptions_and_driver_files_are_read_from_one_cpu() {
        let dir = epyc();
        let root = dir.root().recording();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let states = power.cpus[1].idle_states.get().unwrap();
        assert_eq!(states[2].name.get().map(String::as_str), Some("C2"));
        assert_eq!(
            states[2].desc.get().map(String::as_str),
            Some("ACPI FFH MWAIT 0x0")
        );
        assert_eq!(states[2].latency_us.get(), Some(&400));
        assert_eq!(states[2].disabled.get(), Some(&true));
        let policy1 = &power.cpufreq.get().unwrap()[1];
        assert_eq!(
            policy1.driver.get().map(String::as_str),
            Some("acpi-cpufreq")
        );
        assert_eq!(policy1.available_governors.get().unwrap().len(), 6);
        let recorded = root.recorded();
        let read = |path: String| recorded.contains_key(&path);
        assert!(read(format!("{CPU_DIR}/cpu0/cpuidle/state2/name")));
        assert!(!read(format!("{CPU_DIR}/cpu1/cpuidle/state2/name")));
        assert!(!read(format!("{CPU_DIR}/cpu1/cpuidle/state2/latency")));
        assert!(read(format!("{CPU_DIR}/cpu1/cpuidle/state2/disable")));
        assert!(read(format!("{CPUFREQ_DIR}/policy0/scaling_driver")));
        assert!(!read(format!("{CPUFREQ_DIR}/policy1/scaling_driver")));
        assert!(!read(format!(
            "{CPUFREQ_DIR}/policy1/scaling_available_governors"
        )));
        assert!(read(format!("{CPUFREQ_DIR}/policy1/scaling_governor")));
    }

    #[test]
    fn cpus_with_idle_drivers_of_their_own_keep_their_own_states() {
        let dir = TestTree::empty();
        let d = &dir;
        idle_state(d, 0, 0, "WFI", 1, "0");
        idle_state(d, 1, 0, "WFI", 1, "0");
        idle_state(d, 2, 0, "cpu-sleep", 150, "0");
        for (cpu, driver) in [(0, "little"), (1, "little"), (2, "big")] {
            d.write(
                &format!("{CPU_DIR}/cpu{cpu}/cpuidle/driver/name"),
                format!("{driver}\n"),
            );
        }
        // CPU 1 shares CPU 0's driver, so its own (here garbled) description is not read.
        d.write(&format!("{CPU_DIR}/cpu1/cpuidle/state0/residency"), "x\n");
        let root = d.root().recording();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let state = |cpu: usize| &power.cpus[cpu].idle_states.get().unwrap()[0];
        assert_eq!(state(2).name.get().map(String::as_str), Some("cpu-sleep"));
        assert_eq!(state(2).latency_us.get(), Some(&150));
        assert_eq!(state(1).name.get().map(String::as_str), Some("WFI"));
        assert_eq!(state(1).residency_us.get(), Some(&2));
        assert!(
            !root
                .recorded()
                .contains_key(&format!("{CPU_DIR}/cpu1/cpuidle/state0/residency"))
        );
    }

    #[test]
    fn a_garbled_idle_description_is_not_shared() {
        let dir = TestTree::empty();
        let d = &dir;
        idle_state(d, 0, 0, "C1", 1, "0");
        idle_state(d, 1, 0, "C1", 1, "0");
        d.write(&format!("{CPU_DIR}/cpu0/cpuidle/state0/latency"), "soon\n");
        let root = d.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let latency = |cpu: usize| {
            power.cpus[cpu].idle_states.get().unwrap()[0]
                .latency_us
                .clone()
        };
        assert!(latency(0).reason().is_some());
        assert_eq!(latency(1).get(), Some(&1));
        let warned: Vec<String> = r.warnings.into_vec().into_iter().map(|w| w.path).collect();
        assert_eq!(
            warned,
            vec![format!("{CPU_DIR}/cpu0/cpuidle/state0/latency")]
        );
    }

    #[test]
    fn intel_pstate_no_turbo_is_inverted() {
        let dir = TestTree::empty();
        let d = &dir;
        policy(d, 0, "0 1", "powersave");
        d.write(&format!("{CPU_DIR}/intel_pstate/no_turbo"), "1\n");
        d.write(&format!("{CPU_DIR}/intel_pstate/status"), "active\n");
        d.write(
            &format!("{CPUFREQ_DIR}/policy0/energy_performance_preference"),
            "balance_performance\n",
        );
        std::fs::create_dir_all(d.join("sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::create_dir_all(d.join("sys/devices/system/cpu/cpu1")).unwrap();
        let root = d.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        assert_eq!(power.boost.get().unwrap().state, BoostState::Disabled);
        assert!(power.boost.get().unwrap().source.ends_with("no_turbo"));
        let pstate = power.pstate.get().unwrap();
        assert_eq!(
            (pstate.driver.as_str(), pstate.status.as_str()),
            ("intel_pstate", "active")
        );
        assert_eq!(power.cpus[1].policy, Some(0));
        let epp = &power.cpufreq.get().unwrap()[0].energy_performance_preference;
        assert_eq!(epp.get().map(String::as_str), Some("balance_performance"));
        let reason = power.cpuidle.reason().unwrap();
        assert!(reason.contains("cpuidle.off=1"), "{reason}");
        assert!(power.cpus[0].idle_states.reason().is_some());
    }

    #[test]
    fn per_policy_boost_and_garbled_files() {
        let dir = TestTree::empty();
        let d = &dir;
        policy(d, 0, "0", "performance");
        policy(d, 1, "1", "performance");
        d.write(&format!("{CPUFREQ_DIR}/policy0/boost"), "1\n");
        d.write(&format!("{CPUFREQ_DIR}/policy1/boost"), "0\n");
        d.write(&format!("{CPUFREQ_DIR}/policy1/scaling_max_freq"), "fast\n");
        d.write(
            &format!("{CPU_DIR}/cpu0/power/pm_qos_resume_latency_us"),
            "20\n",
        );
        d.write(
            &format!("{CPU_DIR}/cpu1/power/pm_qos_resume_latency_us"),
            "-\n",
        );
        let root = d.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        assert_eq!(power.boost.get().unwrap().state, BoostState::Mixed);
        assert_eq!(
            power.cpus[0].resume_latency.get(),
            Some(&ResumeLatency::MaxUs(20))
        );
        assert!(power.cpus[1].resume_latency.reason().is_some());
        assert!(power.cpufreq.get().unwrap()[1].max_khz.reason().is_some());
        let warned: Vec<String> = r.warnings.into_vec().into_iter().map(|w| w.path).collect();
        assert_eq!(
            warned,
            vec![
                format!("{CPUFREQ_DIR}/policy1/scaling_max_freq"),
                format!("{CPU_DIR}/cpu1/power/pm_qos_resume_latency_us"),
            ]
        );
    }

    #[test]
    fn a_vm_without_cpufreq() {
        let dir = TestTree::empty();
        std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        let root = dir.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let reason = power.cpufreq.reason().unwrap();
        assert!(reason.starts_with("no cpufreq:"), "{reason}");
        assert!(reason.contains("VM"));
        assert!(power.boost.reason().unwrap().starts_with("no boost switch"));
        assert_eq!(power.cpus.len(), 1);
        assert_eq!(power.cpus[0].policy, None);
    }

    #[test]
    fn old_kernels_without_policy_directories() {
        let dir = TestTree::empty();
        let d = &dir;
        for cpu in 0..4 {
            let c = format!("{CPU_DIR}/cpu{cpu}/cpufreq");
            let shared = if cpu < 2 { "0 1" } else { "2 3" };
            d.write(&format!("{c}/affected_cpus"), format!("{shared}\n"));
            d.write(&format!("{c}/scaling_governor"), "ondemand\n");
        }
        let root = d.root();
        let mut r = Reader::new(&root);
        let power = read(&mut r);
        let ids: Vec<u32> = power.cpufreq.get().unwrap().iter().map(|p| p.id).collect();
        assert_eq!(ids, vec![0, 2]);
        assert_eq!(power.cpus[3].policy, Some(2));
        assert_eq!(
            power.policy_of(1).unwrap().path,
            "/sys/devices/system/cpu/cpu0/cpufreq"
        );
    }

    #[test]
    fn small_parsers() {
        assert_eq!(parse_cpu_words("0 1 2 3 \n").unwrap().to_list(), "0-3");
        assert_eq!(parse_cpu_words("").unwrap().len(), 0);
        assert_eq!(parse_cpu_words("0 x"), None);
        assert_eq!(parse_switch("1\n"), Some(true));
        assert_eq!(parse_switch("2"), None);
        assert_eq!(parse_resume_latency("0"), Some(ResumeLatency::NoConstraint));
        assert_eq!(
            parse_resume_latency("n/a\n"),
            Some(ResumeLatency::ZeroLatency)
        );
        assert_eq!(parse_resume_latency("100"), Some(ResumeLatency::MaxUs(100)));
        assert_eq!(parse_resume_latency("-5"), None);
    }
}
