//! The system software around the kernel that decides about the same knobs as lowlat:
//! workqueue CPU masks, irqbalance, TuneD and other services, and the OS release.
//!
//! Only files are read (no `systemctl`), so this works on fixture trees and snapshots:
//! a service is *enabled* when a `*.wants/` directory under `/etc/systemd/system` links its
//! unit, *installed* when its unit file exists, and *running* when a process with its command
//! name runs (or, for one-shot units, when the kernel state they set is in force).

pub mod irqbalance;
pub(crate) mod listed;
pub mod os_release;
pub mod tuned;
pub(crate) mod vars;

pub use irqbalance::IrqbalanceConfig;
pub use os_release::OsRelease;
pub use tuned::{CpuPartitioning, Tuned, TunedCpus};

use super::tasks::Tasks;
use super::{Avail, CpuSet, Reader};
use crate::sysroot::ReadError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The CPUs unbound workqueues (`kworker/uN:M`) may run on.
pub const WORKQUEUE_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";
/// The CPUs the writeback workqueue (page cache flushing) may run on.
pub const WRITEBACK_CPUMASK: &str = "/sys/bus/workqueue/devices/writeback/cpumask";

/// Where systemd unit files live: the admin's directory first, then the vendor's.
const UNIT_DIRS: [&str; 3] = [
    "/etc/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

/// Services, workqueue masks and OS release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Services {
    /// `/sys/devices/virtual/workqueue/cpumask`: CPUs for unbound workqueues.
    pub workqueue_cpumask: Avail<CpuSet>,
    /// `/sys/bus/workqueue/devices/writeback/cpumask`: CPUs for writeback workers.
    pub writeback_cpumask: Avail<CpuSet>,
    /// irqbalance's environment file; unavailable when none exists (irqbalance then runs with
    /// its defaults) or it could not be read (then [`Services::irqbalance_unread`] says so).
    pub irqbalance: Avail<IrqbalanceConfig>,
    /// Why irqbalance's environment file could not be read though it may exist: a support
    /// bundle that did not capture it, or a read error. Absent when it was read or does not
    /// exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqbalance_unread: Option<String>,
    /// TuneD's profile and cpu-partitioning variables.
    pub tuned: Tuned,
    /// The services that manage CPU, IRQ and power knobs, in a fixed order.
    pub services: Vec<Service>,
    /// Why systemd's unit files could not be read: none of its unit directories exists (a
    /// support bundle that holds no /etc, as a must-gather's node snapshot). Then no
    /// service's `installed`, `enabled` or `masked` says anything. Absent when they were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units_unreadable: Option<String>,
    /// The OS release.
    pub os_release: Avail<OsRelease>,
}

impl Services {
    /// The service called `name` (`irqbalance`, `tuned` ...).
    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|service| service.name == name)
    }

    /// Whether `service` is in force: running, or, for a one-shot unit whose effect the files
    /// do not show (cpupower), enabled; a masked unit never is, nor one neither enabled nor
    /// running. A unit file is not required: a copied tree or snapshot may hold only the
    /// `*.wants` link and the process. Unknown, with the reason, when the processes cannot tell
    /// whether a daemon runs (no process list: a support bundle) and it is enabled, or the unit
    /// files cannot be read either: an enabled daemon may have failed or been stopped.
    pub fn in_force(&self, service: &Service) -> Result<bool, ServiceUnknown> {
        let unknown = |why: String| ServiceUnknown {
            service: service.name.clone(),
            why,
        };
        match (service.running, &self.units_unreadable) {
            (Some(running), _) => Ok(!service.masked && running),
            (None, Some(units)) => Err(unknown(format!(
                "no process list, and systemd's unit files could not be read ({units})"
            ))),
            (None, None) if service.masked || !service.enabled => Ok(false),
            (None, None) if daemon(&service.name) => Err(unknown(format!(
                "{} is enabled, and there is no process list to tell whether it runs",
                service.unit
            ))),
            (None, None) => Ok(true),
        }
    }

    /// Why whether irqbalance's environment file sets anything is unknown, when it is.
    pub fn irqbalance_unknown(&self) -> Option<&str> {
        self.irqbalance_unread.as_deref()
    }
}

/// Whether the service `name` is a daemon, told running by its process (not a one-shot unit).
fn daemon(name: &str) -> bool {
    KNOWN
        .iter()
        .any(|(known, _, probe)| *known == name && matches!(probe, Probe::Process(_)))
}

/// Why whether a service is in force is unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("whether {service} runs is unknown: {why}")]
pub struct ServiceUnknown {
    /// The service's name.
    pub service: String,
    /// Why: what the machine's files do not show.
    pub why: String,
}

/// One service and its state as files show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    /// The service's common name (`irqbalance`, `chronyd`).
    pub name: String,
    /// The unit file found (`chrony.service` on Debian, `chronyd.service` on RHEL); the
    /// first known unit name when none is installed.
    pub unit: String,
    /// Whether a unit file exists under `/etc/systemd/system`, `/usr/lib/systemd/system` or
    /// `/lib/systemd/system`.
    pub installed: bool,
    /// Whether a `*.wants/` directory under `/etc/systemd/system` links the unit (it starts
    /// at boot).
    pub enabled: bool,
    /// Whether the unit is masked (its `/etc/systemd/system` entry is empty, a link to
    /// `/dev/null`).
    pub masked: bool,
    /// Whether it is in force now: a process with its command name runs, or for one-shot
    /// units the state they set (kdump: a crash kernel is loaded; ksm: KSM is merging).
    /// `None` when the files cannot tell (cpupower; tasks unavailable).
    pub running: Option<bool>,
    /// Where `running` was told when not by the processes: a support bundle's `systemctl
    /// list-units` (`/lowlat-answers/printed/systemctl_list-units` in the tree). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_from: Option<String>,
}

impl Service {
    /// What a service that is not in force is ([`Services::in_force`]): `masked`, `not
    /// running`, or `not enabled` where no process list tells whether it runs.
    pub fn idle_state(&self) -> &'static str {
        match (self.running, self.masked) {
            (Some(false), _) => "not running",
            (_, true) => "masked",
            _ => "not enabled",
        }
    }

    /// The evidence of [`Service::idle_state`]: the processes (or the units listed), or the
    /// unit links.
    pub fn idle_evidence(&self) -> &str {
        match (&self.running_from, self.running) {
            (Some(from), _) => from,
            (None, Some(_)) => "/proc/*/comm",
            (None, None) => "/etc/systemd/system/*.wants",
        }
    }
}

/// How to tell whether a service is in force.
enum Probe {
    /// A process with this command name (at most 15 bytes, as the kernel truncates it).
    Process(&'static str),
    /// A sysfs file that reads `1` while the service's effect is in force.
    KernelFlag(&'static str),
    /// A one-shot unit whose effect the files do not show.
    Unknown,
}

/// The services lowlat reports: name, unit names across distributions, probe.
const KNOWN: &[(&str, &[&str], Probe)] = &[
    (
        "irqbalance",
        &["irqbalance.service"],
        Probe::Process("irqbalance"),
    ),
    ("tuned", &["tuned.service"], Probe::Process("tuned")),
    (
        "power-profiles-daemon",
        &["power-profiles-daemon.service"],
        Probe::Process("power-profiles-"),
    ),
    (
        "tuned-ppd",
        &["tuned-ppd.service"],
        Probe::Process("tuned-ppd"),
    ),
    ("cpupower", &["cpupower.service"], Probe::Unknown),
    (
        "kdump",
        &["kdump.service", "kdump-tools.service"],
        Probe::KernelFlag("/sys/kernel/kexec_crash_loaded"),
    ),
    (
        "ksm",
        &["ksm.service"],
        Probe::KernelFlag("/sys/kernel/mm/ksm/run"),
    ),
    (
        "ksmtuned",
        &["ksmtuned.service"],
        Probe::Process("ksmtuned"),
    ),
    ("numad", &["numad.service"], Probe::Process("numad")),
    (
        "thermald",
        &["thermald.service"],
        Probe::Process("thermald"),
    ),
    (
        "chronyd",
        &["chronyd.service", "chrony.service"],
        Probe::Process("chronyd"),
    ),
];

/// Reads workqueue masks, irqbalance, TuneD, the known services and the OS release; `tasks`
/// (from [`super::tasks::read`]) tells which daemons run.
pub fn read(r: &mut Reader, tasks: &Avail<Tasks>) -> Services {
    let irqbalance = irqbalance::read(r);
    Services {
        workqueue_cpumask: r.cpumask(WORKQUEUE_CPUMASK),
        writeback_cpumask: r.cpumask(WRITEBACK_CPUMASK),
        irqbalance: irqbalance.0,
        irqbalance_unread: irqbalance.1,
        tuned: tuned::read(r),
        services: read_services(r, tasks),
        units_unreadable: units_unreadable(r),
        os_release: os_release::read(r),
    }
}

/// Why no unit directory could be read, when none could.
fn units_unreadable(r: &Reader) -> Option<String> {
    UNIT_DIRS
        .iter()
        .all(|dir| !r.root.is_dir(dir))
        .then(|| format!("none of {} exists", UNIT_DIRS.join(", ")))
}

fn read_services(r: &mut Reader, tasks: &Avail<Tasks>) -> Vec<Service> {
    let units: Vec<Vec<String>> = UNIT_DIRS
        .iter()
        .map(|dir| r.root.list(dir).unwrap_or_default())
        .collect();
    let wants: Vec<String> = units
        .first()
        .into_iter()
        .flatten()
        .filter(|name| name.ends_with(".wants"))
        .flat_map(|dir| {
            r.root
                .list(&format!("{}/{dir}", UNIT_DIRS[0]))
                .unwrap_or_default()
        })
        .collect();
    let listed = listed::read(r);
    KNOWN
        .iter()
        .map(|(name, unit_names, probe)| {
            let installed_unit = unit_names
                .iter()
                .find(|unit| units.iter().any(|dir| dir.contains(&unit.to_string())));
            let unit = installed_unit
                .or(unit_names.first())
                .copied()
                .unwrap_or(name);
            let admin_path = format!("{}/{unit}", UNIT_DIRS[0]);
            let masked = units
                .first()
                .is_some_and(|admin| admin.contains(&unit.to_string()))
                // The link first: a tree's link to /dev/null leads out of it and is not read.
                && (r
                    .root
                    .read_link(&admin_path)
                    .is_ok_and(|target| target == Path::new("/dev/null"))
                    || r.root
                        .read(&admin_path)
                        .is_ok_and(|text| text.trim().is_empty()));
            let mut running_from = None;
            let mut running = running(r, probe, tasks);
            // No process list: the units systemd listed as running, where the tree keeps them.
            if let (None, Probe::Process(_), Some(listed)) = (running, probe, &listed) {
                running = Some(
                    unit_names
                        .iter()
                        .any(|unit| listed.get(*unit).is_some_and(|u| u.sub == "running")),
                );
                running_from = Some(listed::LIST_UNITS.to_string());
            }
            Service {
                name: name.to_string(),
                unit: unit.to_string(),
                installed: installed_unit.is_some(),
                enabled: wants.iter().any(|linked| linked == unit),
                masked,
                running,
                running_from,
            }
        })
        .collect()
}

fn running(r: &mut Reader, probe: &Probe, tasks: &Avail<Tasks>) -> Option<bool> {
    match probe {
        // Not among the tasks read is not "not running" when some could not be read.
        Probe::Process(comm) => tasks.get().and_then(|tasks| {
            let found = tasks.with_comm(comm).next().is_some();
            (found || tasks.missing().is_none()).then_some(found)
        }),
        Probe::KernelFlag(path) => r.value(path).get().map(|value| value == "1"),
        Probe::Unknown => None,
    }
}

/// Why none of a list of configuration files could be read.
#[derive(Debug, thiserror::Error)]
enum FirstFileError {
    /// A file exists but could not be read (e.g. only root may read it).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// None of the files exists (the paths, joined by `, `).
    #[error("none of {0} exists")]
    NoneExists(String),
}

/// The first of `paths` that exists, with its text; absent files are skipped, any other
/// failure (e.g. only root may read it) is the reason the value is unavailable.
fn first_file(
    r: &Reader,
    paths: &[&'static str],
) -> Result<(&'static str, String), FirstFileError> {
    for path in paths {
        match r.root.read(path) {
            Ok(text) => return Ok((path, text)),
            Err(ReadError::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(FirstFileError::NoneExists(paths.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::tasks::Task;
    use crate::sysroot::SysRoot;
    use crate::test_tree::TestTree;
    use std::os::unix::fs::symlink;

    fn task(pid: u32, comm: &str) -> Task {
        Task::sample(pid, comm)
    }

    #[test]
    fn reads_services_masks_and_configs() {
        let dir = TestTree::with(&[
            (WORKQUEUE_CPUMASK, "0101\n"),
            ("/usr/lib/systemd/system/irqbalance.service", "[Unit]\n"),
            ("/usr/lib/systemd/system/tuned.service", "[Unit]\n"),
            ("/lib/systemd/system/chrony.service", "[Unit]\n"),
            ("/usr/lib/systemd/system/kdump.service", "[Unit]\n"),
            ("/sys/kernel/kexec_crash_loaded", "1\n"),
            ("/sys/kernel/mm/ksm/run", "0\n"),
            ("/etc/sysconfig/irqbalance", "IRQBALANCE_BANNED_CPUS=fefe\n"),
            ("/etc/os-release", "ID=\"rhel\"\nVERSION_ID=\"8.1\"\n"),
            ("/etc/tuned/active_profile", "cpu-partitioning\n"),
        ]);
        let etc = dir.path().join("etc/systemd/system");
        let wants = etc.join("multi-user.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        // Absolute links dangle (or point at the host) under a fixture root; only the names
        // count.
        for unit in ["irqbalance.service", "chrony.service"] {
            symlink(format!("/usr/lib/systemd/system/{unit}"), wants.join(unit)).unwrap();
        }
        symlink("/dev/null", etc.join("tuned.service")).unwrap();

        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let tasks = Avail::Available(Tasks {
            tasks: vec![task(800, "irqbalance"), task(900, "power-profiles-")],
            unreadable: 0,
            unparsed: 0,
        });
        let services = read(&mut r, &tasks);
        assert!(r.warnings.into_vec().is_empty());

        assert_eq!(
            services
                .workqueue_cpumask
                .get()
                .map(CpuSet::to_list)
                .as_deref(),
            Some("0,8")
        );
        assert!(services.writeback_cpumask.reason().is_some());
        let banned = services.irqbalance.get().and_then(|c| c.banned().cloned());
        assert_eq!(banned.map(|c| c.to_list()).as_deref(), Some("1-7,9-15"));
        assert_eq!(
            services.os_release.get().and_then(|o| o.id.as_deref()),
            Some("rhel")
        );

        let s = |name: &str| services.service(name).unwrap();
        let state = |name: &str| {
            let svc = s(name);
            (svc.installed, svc.enabled, svc.masked, svc.running)
        };
        assert_eq!(state("irqbalance"), (true, true, false, Some(true)));
        assert_eq!(state("tuned"), (true, false, true, Some(false)));
        assert_eq!(s("chronyd").unit, "chrony.service");
        assert_eq!(state("chronyd"), (true, true, false, Some(false)));
        assert_eq!(
            state("power-profiles-daemon"),
            (false, false, false, Some(true))
        );
        assert_eq!(state("kdump").3, Some(true));
        assert_eq!(state("ksm"), (false, false, false, Some(false)));
        assert_eq!(state("cpupower"), (false, false, false, None));
        assert_eq!(state("thermald").3, Some(false));
        assert_eq!(services.services.len(), KNOWN.len());
    }

    #[test]
    fn an_empty_root_is_all_unavailable_without_warnings() {
        let dir = TestTree::with(&[]);
        let root = SysRoot::dir(dir.path());
        let mut r = Reader::new(&root);
        let services = read(&mut r, &Avail::missing("no /proc"));
        assert!(r.warnings.into_vec().is_empty());
        assert!(services.workqueue_cpumask.reason().is_some());
        assert!(services.irqbalance.reason().is_some());
        assert!(services.os_release.reason().is_some());
        assert!(
            services
                .services
                .iter()
                .all(|s| !s.installed && !s.enabled && !s.masked && s.running.is_none())
        );
        let json = serde_json::to_value(&services).unwrap();
        assert!(json["irqbalance"]["unavailable"].is_string());
    }
}
