//! The reboot in the middle of a prove run: the one-shot resume installed before it
//! (`lowlat-prove-resume.service` where systemd is PID 1; elsewhere, the command to run after
//! the boot), the settle condition waited for after it, and the check that the machine that
//! came back is the one planned for.
//!
//! The settle condition: where systemd is PID 1, `systemctl is-system-running` no longer says
//! `initializing` or `starting` (the boot's jobs are done; the unit is `Type=exec`, so it holds
//! no boot job itself); then every housekeeping CPU less than [`Settle::busy_below`] busy
//! (user, nice, system, IRQ, softirq and steal time over all time in `/proc/stat`) over one
//! window of [`Settle::window`]. At most [`Settle::timeout`] in all: a machine still busy then
//! is measured anyway (its own load was in the before arm too), and the state says so. A
//! directory tree (`--root`) does not change: it is settled at once.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::apply::command::Runner;
use crate::machine::kernel::stat::{self, CpuTimes};
use crate::machine::{CpuSet, Reader};
use crate::sysroot::{Perms, SysRoot, WriteError};
use crate::text::shell_word;

/// The resume unit's name.
pub(crate) const RESUME_UNIT: &str = "lowlat-prove-resume.service";
/// Where it is installed, under the SysRoot.
pub(crate) const RESUME_UNIT_PATH: &str = "/etc/systemd/system/lowlat-prove-resume.service";

/// Why a path cannot go into the unit or the command line prove writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{shown}: the path holds a control character or is not UTF-8, and prove writes it into a unit run as root at boot; choose a plain directory for --out"
)]
pub(crate) struct UnsafePath {
    /// The path, escaped.
    pub shown: String,
}

/// `path` as text safe to write into a unit file or a shell line: UTF-8 without control
/// characters (a newline would start another unit line).
fn plain(path: &Path) -> Result<&str, UnsafePath> {
    path.to_str()
        .filter(|text| !text.chars().any(char::is_control))
        .ok_or_else(|| UnsafePath {
            shown: crate::text::quoted(&path.to_string_lossy()),
        })
}

/// `word` as one argument of a systemd `ExecStart=` line: in double quotes, a backslash and a
/// quote escaped (systemd unquotes C-style), `%` doubled (else a specifier) and `$` doubled
/// (else a variable). systemd then hands the program exactly `word`, whatever it holds: no
/// shell reads it.
pub(crate) fn systemd_word(word: &str) -> String {
    let mut quoted = String::from('"');
    for c in word.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' => quoted.push_str("$$"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The command that resumes the run in `dir`, for a person (or a boot script) to run: each
/// word quoted for the shell.
pub(crate) fn resume_command(binary: &Path, dir: &Path) -> Result<String, UnsafePath> {
    Ok(format!(
        "{} prove --resume {}",
        shell_word(plain(binary)?),
        shell_word(plain(dir)?)
    ))
}

/// lowlat-prove-resume.service: runs `binary prove --resume dir` once at the next boot.
pub(crate) fn render_unit(binary: &Path, dir: &Path) -> Result<String, UnsafePath> {
    let shown = crate::text::comment(plain(dir)?).into_owned();
    Ok(format!(
        "# Written by lowlat prove: resumes the prove run in {shown} once after the reboot.\n\
         # prove removes this unit when the run goes on; `lowlat prove --status DIR` says where\n\
         # it stands.\n\n\
         [Unit]\n\
         Description=lowlat: resume a prove run after the reboot\n\
         Wants=network-online.target\n\
         After=network-online.target\n\n\
         [Service]\n\
         Type=exec\n\
         ExecStart={} prove --resume {}\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        systemd_word(plain(binary)?),
        systemd_word(plain(dir)?)
    ))
}

/// Why the resume could not be installed or removed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    /// The path would not be safe in the unit.
    #[error(transparent)]
    Path(#[from] UnsafePath),
    /// The unit file could not be written or removed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// systemctl failed.
    #[error("systemctl {args}: {message}")]
    Systemctl {
        /// Its arguments.
        args: String,
        /// What it said.
        message: String,
    },
}

/// Whether PID 1 under `root` is systemd.
pub(crate) fn systemd_is_pid1(root: &SysRoot) -> bool {
    root.read_value("/proc/1/comm")
        .is_ok_and(|comm| comm == "systemd")
}

/// Runs `systemctl args` with `runner` (the live machine); without one (a directory tree)
/// nothing is run.
fn systemctl(runner: Option<&dyn Runner>, args: &[&str]) -> Result<String, ResumeError> {
    let Some(runner) = runner else {
        return Ok(String::new());
    };
    let shown = args.join(" ");
    let failed = |message: String| ResumeError::Systemctl {
        args: shown.clone(),
        message,
    };
    let program = runner
        .find("systemctl")
        .ok_or_else(|| failed("systemctl is not installed".to_string()))?;
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = runner
        .run(&program, &args)
        .map_err(|e| failed(e.to_string()))?;
    if !out.success() && args.first().map(String::as_str) != Some("is-system-running") {
        return Err(failed(out.message()));
    }
    Ok(out.stdout.trim().to_string())
}

/// How the run resumes after the boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resume {
    /// The unit is installed and enabled: it resumes by itself.
    Unit,
    /// No systemd: this command must be run after the boot.
    ByHand(String),
}

/// Installs the one-shot resume of the run in `dir` (`binary` is this lowlat): the unit,
/// enabled, where systemd is PID 1; elsewhere, nothing is installed and the command to run
/// after the boot is returned.
pub(crate) fn install(
    root: &SysRoot,
    runner: Option<&dyn Runner>,
    binary: &Path,
    dir: &Path,
) -> Result<Resume, ResumeError> {
    if !systemd_is_pid1(root) {
        return Ok(Resume::ByHand(resume_command(binary, dir)?));
    }
    let unit = render_unit(binary, dir)?;
    root.install_file(RESUME_UNIT_PATH, unit.as_bytes(), Perms::mode(0o644))?;
    systemctl(runner, &["daemon-reload"])?;
    systemctl(runner, &["enable", RESUME_UNIT])?;
    Ok(Resume::Unit)
}

/// Removes the resume unit, if installed (disabled first, so that no link is left).
pub(crate) fn remove(root: &SysRoot, runner: Option<&dyn Runner>) -> Result<(), ResumeError> {
    if !root.exists(RESUME_UNIT_PATH) {
        return Ok(());
    }
    systemctl(runner, &["disable", RESUME_UNIT])?;
    root.remove_file(RESUME_UNIT_PATH)?;
    systemctl(runner, &["daemon-reload"])?;
    Ok(())
}

/// The settle condition's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settle {
    /// How long the housekeeping CPUs must stay quiet.
    pub window: Duration,
    /// The most time waited for the boot to finish and the CPUs to quiet down.
    pub timeout: Duration,
    /// The share of its time a housekeeping CPU may be busy over the window (0.25: 25 %).
    pub busy_below: f64,
}

impl Default for Settle {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(10),
            timeout: Duration::from_secs(300),
            busy_below: 0.25,
        }
    }
}

/// The busy share of each CPU of `cpus` between two reads of `/proc/stat`.
fn busy(before: &[(u32, CpuTimes)], after: &[(u32, CpuTimes)], cpus: &CpuSet) -> Vec<(u32, f64)> {
    let sum = |t: &CpuTimes| {
        let busy = t.user + t.nice + t.system + t.irq + t.softirq + t.steal;
        (busy, busy + t.idle + t.iowait)
    };
    (after.iter())
        .filter(|(cpu, _)| cpus.contains(*cpu))
        .filter_map(|(cpu, now)| {
            let (_, then) = before.iter().find(|(c, _)| c == cpu)?;
            let ((b1, t1), (b0, t0)) = (sum(now), sum(then));
            let total = t1.saturating_sub(t0);
            Some((*cpu, b1.saturating_sub(b0) as f64 / total.max(1) as f64))
        })
        .collect()
}

/// Waits for the machine under `root` to settle after its boot (the module's condition) and
/// says what it found: settled, or measured anyway after the timeout.
pub(crate) fn settle(
    root: &SysRoot,
    runner: Option<&dyn Runner>,
    housekeeping: &CpuSet,
    settle: Settle,
) -> String {
    if !root.is_live() {
        return "a directory tree (--root): settled at once".to_string();
    }
    let start = Instant::now();
    let mut boot = "PID 1 is not systemd".to_string();
    if systemd_is_pid1(root) {
        loop {
            let state = systemctl(runner, &["is-system-running"]).unwrap_or_default();
            if !matches!(state.as_str(), "initializing" | "starting") {
                boot = format!("systemd {state}");
                break;
            }
            if start.elapsed() >= settle.timeout {
                boot = format!("systemd still {state}");
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let read = || {
        (stat::read(&mut Reader::new(root)).get())
            .map(|s| s.per_cpu.clone())
            .unwrap_or_default()
    };
    let limit = settle.busy_below * 100.0;
    loop {
        let before = read();
        std::thread::sleep(settle.window);
        let shares = busy(&before, &read(), housekeeping);
        let busiest = shares.iter().map(|(_, s)| *s).fold(0.0, f64::max) * 100.0;
        if busiest < limit {
            return format!(
                "settled after {:.0} s: {boot}, housekeeping CPUs {} at most {busiest:.0} % \
                 busy over {} s (below {limit:.0} %)",
                start.elapsed().as_secs_f64(),
                housekeeping.to_list(),
                settle.window.as_secs()
            );
        }
        if start.elapsed() >= settle.timeout {
            return format!(
                "not settled after {} s ({boot}, housekeeping CPUs {} up to {busiest:.0} % \
                 busy, the limit is {limit:.0} %): measured anyway, as the before arm was under \
                 this machine's own load",
                settle.timeout.as_secs(),
                housekeeping.to_list()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What systemd hands the program for one `ExecStart=` word (its unquoting, for the
    /// characters [`systemd_word`] writes): `None` where it would expand a specifier or a
    /// variable, or end the word early.
    fn systemd_unquote(word: &str) -> Option<String> {
        let inner = word.strip_prefix('"')?.strip_suffix('"')?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                '"' => return None,
                '%' | '$' => {
                    if chars.next()? != c {
                        return None;
                    }
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        Some(out)
    }

    #[test]
    fn a_hostile_directory_is_one_word_of_the_unit_and_of_the_shell_line() {
        let hostile = "/tmp/a b;$(touch x)`id`'\"\\%n${HOME}; ;";
        let unit = render_unit(Path::new("/usr/bin/lowlat"), Path::new(hostile)).unwrap();
        let exec = (unit.lines())
            .find_map(|l| l.strip_prefix("ExecStart="))
            .unwrap();
        let word = exec
            .strip_prefix("\"/usr/bin/lowlat\" prove --resume ")
            .unwrap();
        assert_eq!(systemd_unquote(word).as_deref(), Some(hostile), "{exec}");
        assert_eq!(
            unit.lines().filter(|l| l.starts_with("ExecStart=")).count(),
            1
        );
        let line = resume_command(Path::new("/usr/bin/lowlat"), Path::new(hostile)).unwrap();
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!(
                    "printf %s {}",
                    &line["/usr/bin/lowlat prove --resume ".len()..]
                ),
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    }

    #[test]
    fn a_directory_with_a_newline_is_refused() {
        let err =
            render_unit(Path::new("/usr/bin/lowlat"), Path::new("/tmp/a\n[Service]")).unwrap_err();
        assert!(err.to_string().contains("control character"), "{err}");
        assert!(resume_command(Path::new("lowlat"), Path::new("/tmp/\x1b[2J")).is_err());
    }

    #[test]
    fn busy_shares_come_from_the_counters_between_two_reads() {
        let times = |busy: u64, idle: u64| CpuTimes {
            user: busy,
            idle,
            ..CpuTimes::default()
        };
        let before = [(0, times(100, 100)), (1, times(0, 0))];
        let after = [(0, times(130, 170)), (1, times(100, 0))];
        let shares = busy(&before, &after, &CpuSet::from_iter([0]));
        assert_eq!(shares, [(0, 0.3)]);
    }
}
