//! Time synchronisation: which of ptp4l, phc2sys, chronyd, ntpd and systemd-timesyncd run, on
//! which CPUs, with which command line, which of them steer the system clock, and the sources
//! their configuration files name. Files only (`/proc/PID/cmdline` and the configuration
//! files), so a snapshot holds it all; the live offset (`chronyc tracking`) is asked for by
//! `lowlat inventory` on the live machine and parsed here ([`parse_chronyc_tracking`]).

use serde::{Deserialize, Serialize};

use super::tasks::Tasks;
use super::{Avail, CpuSet, Reader};

/// A time daemon lowlat knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DaemonKind {
    /// linuxptp's PTP daemon: steers a NIC's PTP hardware clock, or the system clock with
    /// software timestamping (`-S`).
    Ptp4l,
    /// linuxptp's clock copier: steers the system clock from a PHC unless told another target.
    Phc2sys,
    /// chrony's NTP daemon.
    Chronyd,
    /// The reference NTP daemon (ntp or NTPsec).
    Ntpd,
    /// systemd's SNTP client.
    SystemdTimesyncd,
}

impl DaemonKind {
    /// Every kind, in the order lowlat reports them.
    pub const ALL: [DaemonKind; 5] = [
        DaemonKind::Ptp4l,
        DaemonKind::Phc2sys,
        DaemonKind::Chronyd,
        DaemonKind::Ntpd,
        DaemonKind::SystemdTimesyncd,
    ];

    /// The daemon's name.
    pub fn name(self) -> &'static str {
        match self {
            DaemonKind::Ptp4l => "ptp4l",
            DaemonKind::Phc2sys => "phc2sys",
            DaemonKind::Chronyd => "chronyd",
            DaemonKind::Ntpd => "ntpd",
            DaemonKind::SystemdTimesyncd => "systemd-timesyncd",
        }
    }

    /// Its command name as the kernel stores it (at most 15 bytes).
    fn comm(self) -> &'static str {
        match self {
            DaemonKind::SystemdTimesyncd => "systemd-timesyn",
            other => other.name(),
        }
    }

    /// The configuration files it reads by default, in the order they are looked for.
    fn config_files(self) -> &'static [&'static str] {
        match self {
            DaemonKind::Ptp4l => &["/etc/linuxptp/ptp4l.conf", "/etc/ptp4l.conf"],
            DaemonKind::Phc2sys => &[],
            DaemonKind::Chronyd => &["/etc/chrony/chrony.conf", "/etc/chrony.conf"],
            DaemonKind::Ntpd => &["/etc/ntpsec/ntp.conf", "/etc/ntp.conf"],
            DaemonKind::SystemdTimesyncd => &["/etc/systemd/timesyncd.conf"],
        }
    }
}

/// The time daemons and their configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSync {
    /// The time daemons running; unavailable when the processes could not be read.
    pub daemons: Avail<Vec<TimeDaemon>>,
    /// The configuration files found (of running daemons and at the default paths).
    pub configs: Vec<TimeConfig>,
    /// chronyd's own view (`chronyc -n -c tracking`), asked for by `lowlat inventory` on the
    /// live machine while chronyd runs; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrony_tracking: Option<Avail<ChronyTracking>>,
    /// ptp4l's own view (`pmc -u -b 0 'GET TIME_STATUS_NP'`), asked for by `lowlat inventory`
    /// on the live machine while ptp4l runs; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptp_time_status: Option<Avail<PtpTimeStatus>>,
}

/// What ptp4l answers to `GET TIME_STATUS_NP`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PtpTimeStatus {
    /// The offset of this clock from its master, in ns.
    pub master_offset_ns: i64,
    /// Whether a grandmaster other than this clock is present.
    pub gm_present: bool,
    /// The grandmaster's clock identity (this clock's own when none is present).
    pub gm_identity: String,
}

/// One running time daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeDaemon {
    /// Which daemon.
    pub kind: DaemonKind,
    /// Its process id.
    pub pid: u32,
    /// The CPUs it may run on.
    pub cpus_allowed: Avail<CpuSet>,
    /// The CPU it last ran on; `None` where the process list did not show it.
    pub last_cpu: Option<u32>,
    /// Its command line (`/proc/PID/cmdline`), the program first; empty when unreadable.
    pub args: Vec<String>,
    /// Whether it steers the system clock (CLOCK_REALTIME), from its command line and
    /// configuration: chronyd unless `-x`, ntpd and systemd-timesyncd always, phc2sys unless
    /// `-c` names another clock (or `-a` without `-r`), ptp4l only with software timestamping
    /// and not `free_running`.
    pub steers_system_clock: bool,
    /// The systemd unit that started it, from its cgroup (`chrony.service`).
    pub unit: Option<String>,
}

/// One configuration file and the time sources it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeConfig {
    /// The daemon that reads it.
    pub daemon: DaemonKind,
    /// The file.
    pub path: String,
    /// Its source lines, as written: chrony's and ntpd's `server`, `pool`, `peer`,
    /// `refclock` and `local`; timesyncd's `NTP=` and `FallbackNTP=`; ptp4l's interface
    /// sections (`[eth0]`), `time_stamping` and `free_running` (whitespace runs made one
    /// space, comments dropped).
    pub sources: Vec<String>,
}

/// What `chronyc -n -c tracking` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChronyTracking {
    /// The reference chronyd follows (an address, or a reference id such as `LOCL`).
    pub reference: String,
    /// Its stratum.
    pub stratum: u32,
    /// How far the system clock is from chronyd's estimate of true time, in ns (positive:
    /// fast).
    pub offset_ns: i64,
    /// The offset measured at the last clock update, in ns.
    pub last_offset_ns: i64,
    /// The long-term average of the offsets, in ns.
    pub rms_offset_ns: i64,
    /// `Normal`, `Insert second`, `Delete second` or `Not synchronised`.
    pub leap_status: String,
}

/// Why a `chronyc -c tracking` output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chronyc tracking: {0}")]
pub struct TrackingError(String);

/// Reads the running time daemons (from `tasks`) and the configuration files.
pub fn read(r: &mut Reader, tasks: &Avail<Tasks>) -> TimeSync {
    let daemons: Avail<Vec<TimeDaemon>> = match tasks {
        Avail::Available(tasks) => Avail::Available(
            DaemonKind::ALL
                .iter()
                .flat_map(|&kind| {
                    tasks
                        .with_comm(kind.comm())
                        .filter(|t| !t.kernel_thread)
                        .map(move |t| (kind, t))
                })
                .map(|(kind, task)| {
                    let args = r
                        .root
                        .read_bytes(&format!("/proc/{}/cmdline", task.pid))
                        .map(|bytes| {
                            bytes
                                .split(|&b| b == 0)
                                .filter(|a| !a.is_empty())
                                .map(|a| String::from_utf8_lossy(a).into_owned())
                                .collect()
                        })
                        .unwrap_or_default();
                    TimeDaemon {
                        kind,
                        pid: task.pid,
                        cpus_allowed: task.cpus_allowed.clone(),
                        last_cpu: task.last_cpu,
                        steers_system_clock: false,
                        args,
                        unit: task.service_unit().map(str::to_string),
                    }
                })
                .collect(),
        ),
        Avail::Unavailable { unavailable } => {
            Avail::missing(format!("processes unreadable: {unavailable}"))
        }
    };
    let mut configs: Vec<TimeConfig> = Vec::new();
    let mut read_config = |r: &mut Reader, kind: DaemonKind, path: &str| {
        if configs.iter().any(|c| c.path == path) {
            return;
        }
        if let Some(text) = r.text_or_warn(path) {
            let found = sources(kind, &text);
            // chrony's confdir and sourcedir name directories of more files.
            let dirs: Vec<(String, &str)> = text
                .lines()
                .filter_map(|line| {
                    let mut words = line.split_whitespace();
                    match (words.next(), words.next()) {
                        (Some("confdir"), Some(dir)) => Some((dir.to_string(), ".conf")),
                        (Some("sourcedir"), Some(dir)) => Some((dir.to_string(), ".sources")),
                        _ => None,
                    }
                })
                .collect();
            configs.push(TimeConfig {
                daemon: kind,
                path: path.to_string(),
                sources: found,
            });
            for (dir, suffix) in dirs {
                for name in r.root.list(&dir).unwrap_or_default() {
                    let file = format!("{}/{name}", dir.trim_end_matches('/'));
                    if name.ends_with(suffix)
                        && !configs.iter().any(|c| c.path == file)
                        && let Some(text) = r.text_or_warn(&file)
                    {
                        configs.push(TimeConfig {
                            daemon: kind,
                            path: file,
                            sources: sources(kind, &text),
                        });
                    }
                }
            }
        }
    };
    // The files the running daemons were told to read (`-f FILE`), then the default ones.
    if let Some(daemons) = daemons.get() {
        for daemon in daemons {
            if let Some(file) = option_value(&daemon.args, "-f") {
                read_config(r, daemon.kind, file);
            }
        }
    }
    for kind in DaemonKind::ALL {
        for path in kind.config_files() {
            read_config(r, kind, path);
        }
    }
    for name in r
        .root
        .list("/etc/systemd/timesyncd.conf.d")
        .unwrap_or_default()
    {
        if name.ends_with(".conf") {
            read_config(
                r,
                DaemonKind::SystemdTimesyncd,
                &format!("/etc/systemd/timesyncd.conf.d/{name}"),
            );
        }
    }
    let daemons = match daemons {
        Avail::Available(mut daemons) => {
            for daemon in &mut daemons {
                daemon.steers_system_clock = steers_system_clock(daemon, &configs);
            }
            Avail::Available(daemons)
        }
        unavailable => unavailable,
    };
    TimeSync {
        daemons,
        configs,
        chrony_tracking: printed_tracking(r),
        ptp_time_status: None,
    }
}

/// Where a tree keeps what `chronyc tracking` printed (a sosreport's
/// `sos_commands/chrony/chronyc_tracking`).
pub(crate) const PRINTED_TRACKING: &str = "/lowlat-answers/printed/chronyc_tracking";

/// chronyd's view as a tree keeps it printed ([`PRINTED_TRACKING`]); `None` on the live
/// machine (`lowlat inventory` asks chronyd) and where the tree keeps none.
fn printed_tracking(r: &Reader) -> Option<Avail<ChronyTracking>> {
    if r.root.is_live() {
        return None;
    }
    let text = r.root.read(PRINTED_TRACKING).ok()?;
    Some(match parse_chronyc_tracking_text(&text) {
        Ok(tracking) => Avail::Available(tracking),
        Err(e) => Avail::missing(format!("{PRINTED_TRACKING}: {e}")),
    })
}

/// Parses `chronyc tracking` as it prints it for people (`Reference ID    : C0A80001
/// (192.168.0.1)`, `System time     : 0.000001234 seconds slow of NTP time`, `Last offset     :
/// +0.000000123 seconds` ...).
pub(crate) fn parse_chronyc_tracking_text(text: &str) -> Result<ChronyTracking, TrackingError> {
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim())
        })
    };
    let missing = |name: &str| TrackingError(format!("no `{name}` line"));
    let seconds = |name: &str| -> Result<i64, TrackingError> {
        let value = field(name).ok_or_else(|| missing(name))?;
        let mut words = value.split_whitespace();
        let number: f64 = (words.next().and_then(|w| w.parse().ok()))
            .ok_or_else(|| TrackingError(format!("{name}: not a number of seconds: {value}")))?;
        // `slow of NTP time`: the clock is behind.
        let sign = if value.contains(" slow ") { -1.0 } else { 1.0 };
        Ok((sign * number * 1e9).round() as i64)
    };
    let reference = field("Reference ID").ok_or_else(|| missing("Reference ID"))?;
    let reference = match reference.split_once('(') {
        Some((_, inner)) => inner.trim_end_matches(')').trim(),
        None => reference,
    };
    let stratum = field("Stratum").ok_or_else(|| missing("Stratum"))?;
    Ok(ChronyTracking {
        reference: reference.to_string(),
        stratum: (stratum.parse())
            .map_err(|_| TrackingError(format!("the stratum is not a number: {stratum}")))?,
        offset_ns: seconds("System time")?,
        last_offset_ns: seconds("Last offset")?,
        rms_offset_ns: seconds("RMS offset")?,
        leap_status: field("Leap status")
            .ok_or_else(|| missing("Leap status"))?
            .to_string(),
    })
}

/// The value after `flag` in `args` (`-f FILE`), or joined to it (`-fFILE`).
fn option_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().enumerate().skip(1).find_map(|(i, arg)| {
        if arg == flag {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix(flag).filter(|v| !v.is_empty())
        }
    })
}

/// Whether `args` hold the flag `flag` alone or in a group of one-letter flags (`-S`, `-mS`).
fn has_flag(args: &[String], flag: char) -> bool {
    args.iter().skip(1).any(|arg| {
        arg.strip_prefix('-').is_some_and(|rest| {
            !rest.starts_with('-')
                && rest.chars().all(|c| c.is_ascii_alphabetic())
                && rest.contains(flag)
        })
    })
}

/// Whether the daemon steers CLOCK_REALTIME (see [`TimeDaemon::steers_system_clock`]).
fn steers_system_clock(daemon: &TimeDaemon, configs: &[TimeConfig]) -> bool {
    let args = &daemon.args;
    match daemon.kind {
        DaemonKind::Chronyd => !has_flag(args, 'x'),
        DaemonKind::Ntpd | DaemonKind::SystemdTimesyncd => true,
        DaemonKind::Phc2sys => {
            if has_flag(args, 'a') {
                has_flag(args, 'r')
            } else {
                option_value(args, "-c").is_none_or(|clock| clock == "CLOCK_REALTIME")
            }
        }
        DaemonKind::Ptp4l => {
            let config = option_value(args, "-f")
                .and_then(|file| configs.iter().find(|c| c.path == file))
                .or_else(|| configs.iter().find(|c| c.daemon == DaemonKind::Ptp4l));
            let set = |key: &str, value: &str| {
                config.is_some_and(|c| c.sources.iter().any(|s| *s == format!("{key} {value}")))
                    || option_value(args, &format!("--{key}")) == Some(value)
                    || args.iter().any(|a| *a == format!("--{key}={value}"))
            };
            !set("free_running", "1") && (has_flag(args, 'S') || set("time_stamping", "software"))
        }
    }
}

/// The source lines of a configuration file of `kind`.
fn sources(kind: DaemonKind, text: &str) -> Vec<String> {
    let lines = text
        .lines()
        .map(|line| {
            let line = line.split(['#', ';']).next().unwrap_or("");
            line.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|line| !line.is_empty());
    match kind {
        DaemonKind::Chronyd | DaemonKind::Ntpd => lines
            .filter(|line| {
                let word = line.split_whitespace().next().unwrap_or("");
                matches!(word, "server" | "pool" | "peer" | "refclock" | "local")
            })
            .collect(),
        DaemonKind::SystemdTimesyncd => lines
            .filter(|line| {
                let key = line.split('=').next().unwrap_or("").trim();
                (key == "NTP" || key == "FallbackNTP") && line.contains('=')
            })
            .collect(),
        DaemonKind::Ptp4l => lines
            .filter(|line| {
                (line.starts_with('[') && line != "[global]")
                    || matches!(
                        line.split_whitespace().next(),
                        Some("time_stamping" | "free_running")
                    )
            })
            .collect(),
        DaemonKind::Phc2sys => Vec::new(),
    }
}

/// Parses `chronyc -n -c tracking` (one CSV line: reference id, address, stratum, reference
/// time, system time offset, last offset, RMS offset, frequency, residual frequency, skew, root
/// delay, root dispersion, update interval, leap status; offsets in seconds).
pub fn parse_chronyc_tracking(text: &str) -> Result<ChronyTracking, TrackingError> {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| TrackingError("no output".into()))?;
    let fields: Vec<&str> = line.split(',').collect();
    if fields.len() < 14 {
        return Err(TrackingError(format!(
            "{} comma-separated fields, expected 14 (`chronyc -c tracking`)",
            fields.len()
        )));
    }
    let seconds = |i: usize| -> Result<i64, TrackingError> {
        fields[i]
            .trim()
            .parse::<f64>()
            .map(|s| (s * 1e9).round() as i64)
            .map_err(|_| TrackingError(format!("field {} is not a number: {}", i + 1, fields[i])))
    };
    let reference = if fields[1].trim().is_empty() {
        fields[0].trim()
    } else {
        fields[1].trim()
    };
    Ok(ChronyTracking {
        reference: reference.to_string(),
        stratum: fields[2]
            .trim()
            .parse()
            .map_err(|_| TrackingError(format!("the stratum is not a number: {}", fields[2])))?,
        offset_ns: seconds(4)?,
        last_offset_ns: seconds(5)?,
        rms_offset_ns: seconds(6)?,
        leap_status: fields[13].trim().to_string(),
    })
}

/// Parses pmc's answer to `GET TIME_STATUS_NP` (`master_offset`, `gmPresent`, `gmIdentity`
/// lines of the `RESPONSE MANAGEMENT TIME_STATUS_NP` block).
pub fn parse_pmc_time_status(text: &str) -> Result<PtpTimeStatus, TrackingError> {
    let error = |what: &str| TrackingError(format!("pmc GET TIME_STATUS_NP: {what}"));
    if !text.contains("RESPONSE MANAGEMENT TIME_STATUS_NP") {
        return Err(error(
            "no response (is ptp4l's management socket /var/run/ptp4l?)",
        ));
    }
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(name)).then(|| words.next().unwrap_or("").to_string())
        })
    };
    let offset = field("master_offset").ok_or_else(|| error("no master_offset"))?;
    Ok(PtpTimeStatus {
        master_offset_ns: offset
            .parse()
            .map_err(|_| error(&format!("master_offset is not a number: {offset}")))?,
        gm_present: field("gmPresent").as_deref() == Some("true"),
        gm_identity: field("gmIdentity").ok_or_else(|| error("no gmIdentity"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn daemon(kind: DaemonKind, line: &str) -> TimeDaemon {
        TimeDaemon {
            kind,
            pid: 1,
            cpus_allowed: Avail::missing("test"),
            last_cpu: Some(0),
            args: args(line),
            steers_system_clock: false,
            unit: None,
        }
    }

    #[test]
    fn who_steers_the_system_clock() {
        let none: &[TimeConfig] = &[];
        for (kind, line, steers) in [
            (DaemonKind::Chronyd, "/usr/sbin/chronyd -F 1", true),
            (DaemonKind::Chronyd, "chronyd -x -f /tmp/c.conf", false),
            (DaemonKind::Ntpd, "ntpd -g", true),
            (
                DaemonKind::SystemdTimesyncd,
                "/lib/systemd/systemd-timesyncd",
                true,
            ),
            (DaemonKind::Phc2sys, "phc2sys -s eth0 -w", true),
            (
                DaemonKind::Phc2sys,
                "phc2sys -s CLOCK_REALTIME -c /dev/ptp1",
                false,
            ),
            (DaemonKind::Phc2sys, "phc2sys -a -r", true),
            (DaemonKind::Phc2sys, "phc2sys -a", false),
            (DaemonKind::Ptp4l, "ptp4l -i eth0 -m", false),
            (DaemonKind::Ptp4l, "ptp4l -i veth0 -S -m", true),
            (DaemonKind::Ptp4l, "ptp4l -i veth0 -mS", true),
            (
                DaemonKind::Ptp4l,
                "ptp4l -i veth0 -S --free_running 1",
                false,
            ),
            (
                DaemonKind::Ptp4l,
                "ptp4l -i veth0 -S --free_running=1",
                false,
            ),
        ] {
            assert_eq!(
                steers_system_clock(&daemon(kind, line), none),
                steers,
                "{line}"
            );
        }
        let software = [TimeConfig {
            daemon: DaemonKind::Ptp4l,
            path: "/etc/ptp.conf".into(),
            sources: vec!["[eth1]".into(), "time_stamping software".into()],
        }];
        assert!(steers_system_clock(
            &daemon(DaemonKind::Ptp4l, "ptp4l -f /etc/ptp.conf"),
            &software
        ));
    }

    #[test]
    fn reads_daemons_and_the_sources_of_their_files() {
        let tree = TestTree::empty();
        tree.write(
            "/proc/700/stat",
            "700 (chronyd) S 1 734 734 0 -1 4194304 71742 0 49 0 635167 16857 0 0 20 0 1 0 1768 \
             128000000 750 18446744073709551615 1 2 3 0 0 0 0 4096 1260 1 0 0 17 3 0 0 0 0 0\n",
        );
        tree.write(
            "/proc/700/status",
            "Name:\tchronyd\nCpus_allowed_list:\t0-3\n",
        );
        tree.write("/proc/700/comm", "chronyd\n");
        tree.write(
            "/proc/700/cmdline",
            "/usr/sbin/chronyd\0-f\0/run/lowlat/chrony.conf\0",
        );
        tree.write(
            "/run/lowlat/chrony.conf",
            "# test\nlocal stratum 10\nallow 127.0.0.1\nconfdir /run/lowlat/conf.d\n",
        );
        tree.write(
            "/run/lowlat/conf.d/a.conf",
            "server 192.0.2.1 iburst # lab\n",
        );
        tree.write(
            "/etc/chrony/chrony.conf",
            "pool 2.debian.pool.ntp.org iburst\nsourcedir /run/chrony-dhcp\nmakestep 1 3\n",
        );
        tree.write(
            "/etc/linuxptp/ptp4l.conf",
            "[global]\ntime_stamping hardware\n[eth3]\n",
        );
        tree.write(
            "/etc/systemd/timesyncd.conf",
            "[Time]\n#NTP=\nFallbackNTP=0.debian.pool.ntp.org\n",
        );
        let root = tree.root();
        let mut r = Reader::new(&root);
        let tasks = crate::machine::tasks::read(&mut r);
        let ts = read(&mut r, &tasks);
        let daemons = ts.daemons.get().unwrap();
        assert_eq!(daemons.len(), 1);
        assert_eq!(daemons[0].kind, DaemonKind::Chronyd);
        assert_eq!(daemons[0].cpus_allowed.get().unwrap().to_list(), "0-3");
        assert_eq!(daemons[0].last_cpu, Some(3));
        assert!(daemons[0].steers_system_clock);
        let by_path = |p: &str| {
            ts.configs
                .iter()
                .find(|c| c.path == p)
                .unwrap()
                .sources
                .clone()
        };
        assert_eq!(by_path("/run/lowlat/chrony.conf"), ["local stratum 10"]);
        assert_eq!(
            by_path("/run/lowlat/conf.d/a.conf"),
            ["server 192.0.2.1 iburst"]
        );
        assert_eq!(
            by_path("/etc/chrony/chrony.conf"),
            ["pool 2.debian.pool.ntp.org iburst"]
        );
        assert_eq!(
            by_path("/etc/linuxptp/ptp4l.conf"),
            ["time_stamping hardware", "[eth3]"]
        );
        assert_eq!(
            by_path("/etc/systemd/timesyncd.conf"),
            ["FallbackNTP=0.debian.pool.ntp.org"]
        );
        // Without processes the daemons are unknown, not absent.
        let none = read(&mut r, &Avail::missing("no /proc"));
        assert!(none.daemons.get().is_none());
    }

    #[test]
    fn pmc_time_status() {
        // linuxptp 3.1.1's pmc -u -b 0 against ptp4l -S alone on a veth pair.
        let text = "sending: GET TIME_STATUS_NP\n\t6224dd.fffe.839a7b-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP \n\t\tmaster_offset              -42\n\t\tingress_time               0\n\t\tcumulativeScaledRateOffset +0.000000000\n\t\tscaledLastGmPhaseChange    0\n\t\tgmTimeBaseIndicator        0\n\t\tlastGmPhaseChange          0x0000'0000000000000000.0000\n\t\tgmPresent                  false\n\t\tgmIdentity                 6224dd.fffe.839a7b\n";
        let status = parse_pmc_time_status(text).unwrap();
        assert_eq!(status.master_offset_ns, -42);
        assert!(!status.gm_present);
        assert_eq!(status.gm_identity, "6224dd.fffe.839a7b");
        let err = parse_pmc_time_status("sending: GET TIME_STATUS_NP\n").unwrap_err();
        assert!(err.to_string().contains("no response"), "{err}");
    }

    #[test]
    fn chronyc_tracking_csv() {
        // chronyc 4.3 -n -c tracking against chronyd with `local stratum 10`.
        let t = parse_chronyc_tracking(
            "7F7F0101,,10,1764262300.123456789,0.000000012,-0.000000003,0.000000101,-12.345,0.001,0.010,0.000000000,0.000011,64.2,Normal\n",
        )
        .unwrap();
        assert_eq!(t.reference, "7F7F0101");
        assert_eq!(t.stratum, 10);
        assert_eq!(t.offset_ns, 12);
        assert_eq!(t.last_offset_ns, -3);
        assert_eq!(t.rms_offset_ns, 101);
        assert_eq!(t.leap_status, "Normal");
        let err = parse_chronyc_tracking("506 Cannot talk to daemon\n").unwrap_err();
        assert!(err.to_string().contains("expected 14"), "{err}");
        assert!(parse_chronyc_tracking("").is_err());
    }

    #[test]
    fn reads_chronyc_tracking_as_printed_for_people() {
        let text = "Reference ID    : C0A80001 (192.168.0.1)\n\
                    Stratum         : 3\n\
                    Ref time (UTC)  : Sat Dec 05 19:29:10 2026\n\
                    System time     : 0.000001234 seconds slow of NTP time\n\
                    Last offset     : +0.000000123 seconds\n\
                    RMS offset      : 0.000001000 seconds\n\
                    Leap status     : Normal\n";
        let tracking = parse_chronyc_tracking_text(text).unwrap();
        assert_eq!(tracking.reference, "192.168.0.1");
        assert_eq!(tracking.stratum, 3);
        assert_eq!(tracking.offset_ns, -1234);
        assert_eq!(tracking.last_offset_ns, 123);
        assert_eq!(tracking.rms_offset_ns, 1000);
        assert_eq!(tracking.leap_status, "Normal");
        let err = parse_chronyc_tracking_text("506 Cannot talk to daemon\n").unwrap_err();
        assert!(err.to_string().contains("Reference ID"), "{err}");
    }
}
