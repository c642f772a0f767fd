//! What `membw` is asked, and the sizing decided from it before anything is mapped: STREAM's
//! array sizing rule, the threads spread over the chosen CPUs, and the node × node matrix;
//! then the run of that sizing: the whole machine, then each cell of the matrix.

use super::{
    Kernel, Kernels, LABEL, MembwError, MembwReport, NodeBandwidth, NodeRun, StreamConfig, stream,
    stream_array_bytes,
};
use crate::machine::CpuSet;
use crate::machine::topology::Topology;
use crate::measure::runner::harness::StopFlag;
use crate::measure::runner::measurement::{Measurement, SizingRefused, Warning};
use crate::measure::runner::memory::{MemoryBudget, MemoryError};
use crate::measure::runner::node_matrix::{
    MatrixAxes, NodeError, each_cell, empty_matrix, matrix_axes, matrix_nodes,
};
use crate::measure::runner::place::{self, CpuPlace};
use crate::measure::runner::progress::Progress;
use crate::measure::runner::session::Session;
use crate::units::bytes;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MembwRequest {
    /// Threads of the whole-machine run; `None`: one per core of the chosen CPUs.
    pub threads: Option<u32>,
    /// NUMA nodes of the node × node matrix; `None`: every node of a multi-node machine.
    pub nodes: Option<CpuSet>,
    /// Bytes per array; `None`: STREAM's rule.
    pub array_bytes: Option<u64>,
    /// Iterations of the four kernels (STREAM's NTIMES, at least 2).
    pub ntimes: u32,
    /// The vector unit and stores of the kernels.
    pub kernels: Kernels,
}

/// Everything decided before a membw run.
#[derive(Debug, PartialEq)]
pub(crate) struct MembwSizing {
    /// Elements per array.
    pub elements: usize,
    /// Iterations of the four kernels.
    pub ntimes: usize,
    /// All cache of the machine, bytes.
    pub total_cache_bytes: u64,
    /// STREAM's rule for one array, bytes.
    pub rule_bytes: u64,
    /// The CPUs of the whole-machine run, in thread order.
    pub system_cpus: Vec<u32>,
    /// Matrix rows: node and the CPUs (one per core, spread) of its threads.
    pub rows: Vec<(u32, Vec<u32>)>,
    /// Matrix columns: memory nodes.
    pub columns: Vec<u32>,
    /// Rules bent, which the user should know about.
    pub warnings: Vec<Warning>,
    /// The vector unit and stores of the kernels.
    pub kernels: Kernels,
}

/// Why a membw request cannot be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum MembwSizingError {
    /// More threads than chosen CPUs.
    #[error("only {chosen} CPUs are chosen")]
    TooManyThreads {
        /// Threads asked for.
        threads: usize,
        /// CPUs chosen.
        chosen: usize,
    },
    /// Arrays larger than this machine can address.
    #[error("too large for this machine")]
    ArraysTooLarge {
        /// Bytes per array asked for.
        array_bytes: u64,
    },
    /// Arrays with fewer elements than threads.
    #[error("{elements} elements cannot be shared by {threads} threads")]
    ArraysTooSmall {
        /// Bytes per array asked for.
        array_bytes: u64,
        /// Elements per array.
        elements: usize,
        /// Threads.
        threads: usize,
    },
    /// Not enough memory.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The matrix nodes cannot be used.
    #[error(transparent)]
    Nodes(#[from] NodeError),
}

impl MembwSizingError {
    /// The flag of `request` (with its value) that caused the error, when one did: the
    /// command line puts it in front of the error.
    pub(crate) fn flag(&self, request: &MembwRequest) -> Option<String> {
        match self {
            Self::TooManyThreads { threads, .. } => Some(format!("--threads {threads}")),
            Self::ArraysTooLarge { array_bytes } | Self::ArraysTooSmall { array_bytes, .. } => {
                Some(format!("--size {array_bytes}"))
            }
            Self::Nodes(_) => request.nodes.as_ref().map(|n| format!("--nodes {n}")),
            Self::Memory(_) => None,
        }
    }
}

impl MembwRequest {
    /// [`MembwRequest::size`] on `session`'s machine and CPUs, a refusal said with its flag.
    pub(crate) fn size_on(
        &self,
        session: &Session,
    ) -> Result<MembwSizing, SizingRefused<MembwSizingError>> {
        let sizing = self.size(&session.machine.topology, &session.places, &session.budget);
        sizing.map_err(|error| SizingRefused {
            engine: "membw",
            flag: error.flag(self),
            hint: None,
            error: Box::new(error),
        })
    }

    /// Decides sizes, threads and nodes on the chosen CPUs (`places`), and checks that they
    /// fit `budget`, before anything is mapped.
    pub(crate) fn size(
        &self,
        topology: &Topology,
        places: &[CpuPlace],
        budget: &MemoryBudget,
    ) -> Result<MembwSizing, MembwSizingError> {
        let mut warnings = Vec::new();
        let total_cache_bytes = topology.total_cache_bytes();
        let rule_bytes = stream_array_bytes(total_cache_bytes);
        if total_cache_bytes == 0 {
            warnings.push(Warning::CacheSizesUnknown);
        }
        let array_bytes = self.array_bytes.unwrap_or(rule_bytes);
        if array_bytes < rule_bytes {
            warnings.push(Warning::ArraysBelowRule {
                array_bytes,
                total_cache_bytes,
                rule_bytes,
            });
        }
        let threads = match self.threads {
            Some(n) => n as usize,
            None => place::one_per_core(places).len(),
        };
        if threads > places.len() {
            return Err(MembwSizingError::TooManyThreads {
                threads,
                chosen: places.len(),
            });
        }
        let elements = usize::try_from(array_bytes / 8)
            .map_err(|_| MembwSizingError::ArraysTooLarge { array_bytes })?;
        if elements < threads {
            return Err(MembwSizingError::ArraysTooSmall {
                array_bytes,
                elements,
                threads,
            });
        }
        let need = array_bytes.saturating_mul(3);
        let what = format!("3 arrays of {}", bytes(array_bytes));
        budget.check_available(&what, need)?;
        let nodes = matrix_nodes(topology, self.nodes.as_ref())?;
        let MatrixAxes { rows, columns } =
            matrix_axes(&nodes, places, self.nodes.is_some(), need, &what)?;
        let rows = rows
            .into_iter()
            .map(|(node, cpus)| {
                let per_core = place::one_per_core(&cpus).len();
                (node, place::spread(&cpus, per_core))
            })
            .collect();
        Ok(MembwSizing {
            elements,
            ntimes: self.ntimes as usize,
            total_cache_bytes,
            rule_bytes,
            system_cpus: place::spread(places, threads),
            rows,
            columns: columns.iter().map(|n| n.id).collect(),
            warnings,
            kernels: self.kernels,
        })
    }
}

impl MembwSizing {
    /// Measurement steps, for progress: the whole machine, then each cell of the matrix.
    pub(crate) fn steps(&self) -> usize {
        1 + self.rows.len() * self.columns.len()
    }
}

/// Runs `sizing` (sized on the session's CPUs by [`MembwRequest::size`]): the whole machine,
/// then the node × node matrix cell by cell, each step said on stderr; Ctrl-C or the session's
/// stop flag ends it early, keeping what was measured.
///
/// The result carries the sizing's warnings and the kernels' own, and is complete when every
/// run validated (STREAM's check of the arrays' final values).
pub(crate) fn run(
    session: &Session,
    sizing: &MembwSizing,
) -> Result<Measurement<MembwReport>, MembwError> {
    let mut progress = Progress::stderr("membw", sizing.steps());
    let report = sizing.measure(&session.stop, &mut progress);
    progress.finish();
    let report = report?;
    let validated = report.system.validation.validated
        && (report.node_matrix.as_ref())
            .is_none_or(|m| m.runs.iter().all(|r| r.run.validation.validated));
    let mut measured = Measurement::new(session, METHOD, report);
    measured.warnings.extend(sizing.warnings.iter().cloned());
    let kernels = measured.figures.system.warnings.iter().cloned();
    measured.warnings.extend(kernels.map(Warning::Figures));
    measured.complete = validated;
    Ok(measured)
}

/// How membw measures, in the result header.
pub(crate) const METHOD: &str = "STREAM 5.10 kernels (Copy, Scale, Add, Triad) under STREAM's \
     run rules; best rate after the first iteration, MB = 10^6 bytes, STREAM byte counting";

impl MembwSizing {
    /// Measures the sizing as [`run`] does, saying each step on `progress`, until `stop`.
    fn measure(&self, stop: &StopFlag, progress: &mut Progress) -> Result<MembwReport, MembwError> {
        let config = |cpus: Vec<u32>, memory_node: Option<u32>| StreamConfig {
            cpus,
            elements: self.elements,
            ntimes: self.ntimes,
            memory_node,
            kernels: self.kernels,
        };
        progress.step(&format!(
            "{} threads, 3 × {}",
            self.system_cpus.len(),
            bytes(self.elements as u64 * 8)
        ));
        let system = stream(&config(self.system_cpus.clone(), None), stop)?;
        let node_matrix = (!self.rows.is_empty()).then(|| NodeBandwidth {
            triad_best_mb_per_s: empty_matrix(&self.rows, &self.columns),
            runs: Vec::new(),
        });
        let mut report = MembwReport {
            label: LABEL.into(),
            total_cache_bytes: self.total_cache_bytes,
            rule_array_bytes: self.rule_bytes,
            system,
            node_matrix,
        };
        if let Some(matrix) = &mut report.node_matrix {
            each_cell(
                &self.rows,
                &self.columns,
                stop,
                |r, (cpu_node, cpus), c, memory_node| {
                    progress.step(&format!(
                        "CPUs of node {cpu_node}, memory of node {memory_node}"
                    ));
                    let run = stream(&config(cpus.clone(), Some(memory_node)), stop)?;
                    if let Some(rate) = run.best_rate(Kernel::Triad) {
                        matrix.triad_best_mb_per_s.set(r, c, rate);
                    }
                    matrix.runs.push(NodeRun {
                        cpu_node: *cpu_node,
                        memory_node,
                        run,
                    });
                    Ok(())
                },
            )?;
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::sysroot::SysRoot;

    fn epyc() -> Machine {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/epyc7f32-2s");
        Machine::read(&SysRoot::dir(dir))
    }

    fn request() -> MembwRequest {
        MembwRequest {
            threads: None,
            nodes: None,
            array_bytes: None,
            kernels: Kernels::detect(crate::measure::engines::membw::Stores::Normal).unwrap(),
            ntimes: 10,
        }
    }

    #[test]
    fn sizes_by_streams_rule_and_refuses_with_typed_errors() {
        let m = epyc();
        let places = place::places(&m.topology);
        let budget = MemoryBudget::new(&m.kernel.meminfo, &m.kernel.hugepages);
        let sizing = request().size(&m.topology, &places, &budget).unwrap();
        assert_eq!(sizing.rule_bytes, 1060 << 20);
        assert_eq!((sizing.ntimes, sizing.steps()), (10, 1 + 2 * 2));
        let small = MembwRequest {
            array_bytes: Some(16 << 20),
            ..request()
        };
        let sizing = small.size(&m.topology, &places, &budget).unwrap();
        assert!(matches!(
            sizing.warnings[..],
            [Warning::ArraysBelowRule {
                array_bytes: 16_777_216,
                ..
            }]
        ));
        let too_many = MembwRequest {
            threads: Some(17),
            ..request()
        };
        assert_eq!(
            too_many.size(&m.topology, &places, &budget),
            Err(MembwSizingError::TooManyThreads {
                threads: 17,
                chosen: 16
            })
        );
        let missing = MembwRequest {
            nodes: Some([7].into_iter().collect()),
            ..request()
        };
        let err = missing.size(&m.topology, &places, &budget).unwrap_err();
        assert!(matches!(
            err,
            MembwSizingError::Nodes(NodeError::Missing { id: 7, .. })
        ));
        assert!(!err.to_string().contains("--"), "no flag in {err}");
    }
}
