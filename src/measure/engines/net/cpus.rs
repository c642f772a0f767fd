//! Where `measure net` runs: the client's CPU, and the echo's (the second CPU asked for, or
//! one of its own), checked against the CPUs this process may use before anything is opened.

use crate::machine::CpuSet;
use crate::measure::runner::cpus::CpuChoiceError;
use crate::measure::runner::harness::current_affinity;
use crate::measure::runner::session::Session;

/// Where the echo is, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EchoAt {
    /// The second CPU of the session (loopback and veth, no CPU of its own).
    SecondCpu,
    /// A CPU of its own (`--echo-cpu`).
    Cpu(u32),
    /// The peer answers: no local echo.
    Peer,
}

/// Why the CPUs of a net run are refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NetCpusError {
    /// More CPUs than the client and the echo take.
    #[error(
        "--cpus {}: measure net runs its client on the first CPU{}; name {}",
        cpus.to_list(),
        match echo {
            EchoAt::SecondCpu => " and its echo on the second",
            EchoAt::Peer => " (the echo is the peer)",
            EchoAt::Cpu(_) => " (the echo on --echo-cpu)",
        },
        if *echo == EchoAt::SecondCpu { "one or two CPUs" } else { "one CPU" }
    )]
    TooMany {
        /// The CPUs given.
        cpus: CpuSet,
        /// Where the echo is.
        echo: EchoAt,
    },
    /// More than one CPU for `--serve`'s echo.
    #[error("--serve --cpus {}: the echo runs on one CPU; name one", cpus.to_list())]
    ServeTooMany {
        /// The CPUs given.
        cpus: CpuSet,
    },
    /// The echo's own CPU cannot be used.
    #[error("--echo-cpu {cpu}")]
    EchoCpu {
        /// The CPU asked for.
        cpu: u32,
        /// Why not.
        #[source]
        source: CpuChoiceError,
    },
}

/// The CPU `--serve`'s echo is pinned to: the one of `cpus` when given; more are refused.
pub(crate) fn serve_cpu(cpus: Option<&CpuSet>) -> Result<Option<u32>, NetCpusError> {
    match cpus {
        Some(cpus) if cpus.len() > 1 => Err(NetCpusError::ServeTooMany { cpus: cpus.clone() }),
        cpus => Ok(cpus.and_then(|cpus| cpus.iter().next())),
    }
}

impl EchoAt {
    /// Where the echo is: the peer when there is one (`peer`), else `echo_cpu`, else the
    /// session's second CPU.
    pub(crate) fn of(peer: bool, echo_cpu: Option<u32>) -> EchoAt {
        match (peer, echo_cpu) {
            (true, _) => Self::Peer,
            (false, Some(cpu)) => Self::Cpu(cpu),
            (false, None) => Self::SecondCpu,
        }
    }

    /// The CPUs of a run not given its own: the first this process may run on, as many as
    /// the session holds.
    pub(crate) fn default_cpus(self) -> std::io::Result<CpuSet> {
        let allowed = current_affinity()?;
        Ok(allowed.iter().take(self.session_cpus()).collect())
    }

    /// How many CPUs the session holds: the client's, and the echo's on the second.
    pub(crate) fn session_cpus(self) -> usize {
        match self {
            Self::SecondCpu => 2,
            Self::Cpu(_) | Self::Peer => 1,
        }
    }

    /// The echo's CPU on `session` (none for a peer; the client alone when only one CPU was
    /// given), after checking that the session holds no more CPUs than the run takes.
    pub(crate) fn cpu(self, session: &Session) -> Result<Option<u32>, NetCpusError> {
        let cpus = session.cpus_by_locality();
        if cpus.len() > self.session_cpus() {
            return Err(NetCpusError::TooMany {
                cpus: session.cpus.clone(),
                echo: self,
            });
        }
        match self {
            Self::Peer => Ok(None),
            Self::Cpu(cpu) => {
                let checked = (session.check_cpus(&std::iter::once(cpu).collect()))
                    .map_err(|source| NetCpusError::EchoCpu { cpu, source })?;
                Ok(checked.iter().next())
            }
            Self::SecondCpu => Ok(cpus.get(1).copied()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_serves_on_one_cpu_or_none() {
        let set = |list| CpuSet::parse_list(list).unwrap();
        assert_eq!(serve_cpu(None).unwrap(), None);
        assert_eq!(serve_cpu(Some(&set("3"))).unwrap(), Some(3));
        let err = serve_cpu(Some(&set("3-4"))).unwrap_err().to_string();
        assert_eq!(
            err,
            "--serve --cpus 3-4: the echo runs on one CPU; name one"
        );
    }

    #[test]
    fn a_peer_wins_over_the_echo_cpu_then_the_second_cpu() {
        assert_eq!(EchoAt::of(true, Some(3)), EchoAt::Peer);
        assert_eq!(EchoAt::of(false, Some(3)), EchoAt::Cpu(3));
        assert_eq!(EchoAt::of(false, None), EchoAt::SecondCpu);
        let two = EchoAt::SecondCpu.default_cpus().unwrap();
        assert!((1..=2).contains(&two.len()), "{two}");
        assert_eq!(EchoAt::Peer.default_cpus().unwrap().len(), 1);
    }

    #[test]
    fn too_many_cpus_are_refused_saying_where_the_echo_runs() {
        let cpus = CpuSet::parse_list("1-3").unwrap();
        let said = |echo| {
            let cpus = cpus.clone();
            NetCpusError::TooMany { cpus, echo }.to_string()
        };
        assert_eq!(
            said(EchoAt::SecondCpu),
            "--cpus 1-3: measure net runs its client on the first CPU and its echo on the \
             second; name one or two CPUs"
        );
        assert_eq!(
            said(EchoAt::Peer),
            "--cpus 1-3: measure net runs its client on the first CPU (the echo is the peer); \
             name one CPU"
        );
        assert_eq!(
            said(EchoAt::Cpu(4)),
            "--cpus 1-3: measure net runs its client on the first CPU (the echo on --echo-cpu); \
             name one CPU"
        );
        assert_eq!(
            (
                EchoAt::SecondCpu.session_cpus(),
                EchoAt::Cpu(4).session_cpus()
            ),
            (2, 1)
        );
    }
}
