//! Asking the running time daemons for their own view (`lowlat inventory` and `lowlat check` on
//! the live machine): monitoring requests that change no setting, each given up after
//! [`QUERY_TIMEOUT`].

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::timesync::{DaemonKind, TrackingError, parse_chronyc_tracking, parse_pmc_time_status};
use super::{Avail, Machine};

/// How long `chronyc tracking` or `pmc` may take before it is given up.
const QUERY_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a daemon gave no answer.
#[derive(Debug, thiserror::Error)]
enum QueryError {
    /// The program could not be started or waited for (not installed, not permitted).
    #[error("{program}: {source}")]
    Run {
        /// The program.
        program: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The program did not end in time, and was killed.
    #[error("{program} gave no answer in {} s", QUERY_TIMEOUT.as_secs())]
    Timeout {
        /// The program.
        program: &'static str,
    },
    /// The program failed; its first line of output, escaped.
    #[error("{command}: {said}")]
    Failed {
        /// The command line.
        command: String,
        /// What it said.
        said: String,
    },
    /// The answer could not be read.
    #[error(transparent)]
    Answer(#[from] TrackingError),
}

/// Asks the running chronyd and ptp4l for their offsets (`chronyc -n -c tracking`, `pmc -u -b 0
/// 'GET TIME_STATUS_NP'`) and puts the answers, or why there are none, in the machine's time
/// block. A daemon that is not running is not asked.
pub(crate) fn ask_time_daemons(machine: &mut Machine) {
    fn avail<T>(answer: Result<T, QueryError>) -> Avail<T> {
        answer.map_or_else(|why| Avail::missing(why.to_string()), Avail::Available)
    }
    let running = |kind: DaemonKind| {
        machine
            .time_sync
            .daemons
            .get()
            .is_some_and(|d| d.iter().any(|d| d.kind == kind))
    };
    if running(DaemonKind::Chronyd) {
        let answer = query("chronyc", &["-n", "-c", "tracking"])
            .and_then(|text| Ok(parse_chronyc_tracking(&text)?));
        machine.time_sync.chrony_tracking = Some(avail(answer));
    }
    if running(DaemonKind::Ptp4l) {
        let answer = query("pmc", &["-u", "-b", "0", "GET TIME_STATUS_NP"])
            .and_then(|text| Ok(parse_pmc_time_status(&text)?));
        machine.time_sync.ptp_time_status = Some(avail(answer));
    }
}

/// The stdout of `program args`, or why there is none (not installed, failed, too slow: then
/// killed).
fn query(program: &'static str, args: &[&str]) -> Result<String, QueryError> {
    let run = |source| QueryError::Run { program, source };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(run)?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(run)? {
            Some(status) => break status,
            None if started.elapsed() < QUERY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(QueryError::Timeout { program });
            }
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut err);
    }
    if status.success() {
        return Ok(out);
    }
    let said = err
        .lines()
        .chain(out.lines())
        .find(|l| !l.trim().is_empty());
    Err(QueryError::Failed {
        command: format!("{program} {}", args.join(" ")),
        said: crate::text::escape_controls(said.unwrap_or("failed without a message")).into_owned(),
    })
}
