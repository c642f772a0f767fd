//! What `memlat` is asked, and the sizing decided from it before anything is mapped: the
//! chasing CPU, the sizes, the pages, and the node × node matrix; then the run of that sizing:
//! the curve, then each cell of the matrix at the largest size.

use super::loaded::{DELAYS_NS, loaded};
use super::{ChaseConfig, MemlatError, MemlatReport, NodeLatency, chase_sizes, default_sizes};
use crate::machine::CpuSet;
use crate::machine::topology::{NumaNode, Topology};
use crate::measure::runner::harness::StopFlag;
use crate::measure::runner::measurement::{Measurement, SizingRefused};
use crate::measure::runner::memory::{MemoryBudget, MemoryError, check_node};
use crate::measure::runner::node_matrix::{
    MatrixAxes, NodeError, each_cell, empty_matrix, find_node, matrix_axes, matrix_nodes,
};
use crate::measure::runner::place::CpuPlace;
use crate::measure::runner::progress::Progress;
use crate::measure::runner::region::Backing;
use crate::measure::runner::session::Session;
use crate::units::bytes;

/// A randomisation window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Windows of this many bytes.
    Bytes(u64),
    /// The whole buffer.
    Full,
}

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemlatRequest {
    /// The CPU that chases the curve's pointers; `None`: the first chosen CPU.
    pub cpu: Option<u32>,
    /// The NUMA node of the curve's buffer; `None`: the chasing CPU's first touch.
    pub node: Option<u32>,
    /// Buffer sizes, bytes; `None`: 4 KiB to 4 × the machine's last-level cache.
    pub sizes: Option<Vec<u64>>,
    /// Back the buffer with reserved huge pages.
    pub hugepages: bool,
    /// The randomisation window.
    pub window: Window,
    /// Bytes between chased pointers.
    pub stride_bytes: u64,
    /// NUMA nodes of the node × node matrix; `None`: every node of a multi-node machine.
    pub nodes: Option<CpuSet>,
    /// Length of one sample, ms.
    pub sample_ms: u64,
    /// Samples per size.
    pub samples: u32,
    /// Seed of the random visit order.
    pub seed: u64,
    /// Threads of the loaded-latency curve, one per chosen CPU other than the chasing one
    /// (nearest first); `None`: no loaded curve.
    pub load_threads: Option<u32>,
}

/// Everything decided before a memlat run.
#[derive(Debug, PartialEq)]
pub(crate) struct MemlatSizing {
    /// The curve's configuration.
    pub curve: ChaseConfig,
    /// Matrix rows: node and the CPU that chases for it.
    pub rows: Vec<(u32, u32)>,
    /// Matrix columns: memory nodes.
    pub columns: Vec<u32>,
    /// The CPUs of the loaded-latency curve's load threads; `None`: no loaded curve.
    pub load_cpus: Option<Vec<u32>>,
}

/// Why a memlat request cannot be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MemlatSizingError {
    /// The chasing CPU is not among the chosen CPUs.
    #[error("not among the chosen CPUs ({chosen})")]
    CpuNotChosen {
        /// The CPU asked for.
        cpu: u32,
        /// The chosen CPUs.
        chosen: CpuSet,
    },
    /// No CPU was chosen.
    #[error("no CPU chosen")]
    NoCpu,
    /// Fewer chosen CPUs besides the chasing one than load threads.
    #[error("only {free} CPU(s) besides the chasing CPU {cpu} are chosen")]
    TooFewLoadCpus {
        /// Load threads asked for.
        threads: u32,
        /// Chosen CPUs other than the chasing one.
        free: usize,
        /// The chasing CPU.
        cpu: u32,
    },
    /// The stride does not fit this machine's address width.
    #[error("too large")]
    StrideTooLarge,
    /// The window does not fit this machine's address width.
    #[error("too large")]
    WindowTooLarge,
    /// The curve's node cannot be used.
    #[error(transparent)]
    CurveNode(NodeError),
    /// Not enough memory or huge pages.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The matrix nodes cannot be used.
    #[error(transparent)]
    Nodes(#[from] NodeError),
    /// The curve's configuration is refused.
    #[error(transparent)]
    Chase(#[from] MemlatError),
}

impl MemlatSizingError {
    /// The flag of `request` (with its value) that caused the error, when one did: the
    /// command line puts it in front of the error.
    pub(crate) fn flag(&self, request: &MemlatRequest) -> Option<String> {
        match self {
            Self::TooFewLoadCpus { threads, .. } => Some(format!("--load {threads}")),
            Self::CpuNotChosen { cpu, .. } => Some(format!("--cpu {cpu}")),
            Self::NoCpu | Self::Chase(_) => None,
            Self::StrideTooLarge => Some("--stride".to_string()),
            Self::WindowTooLarge => Some("--window".to_string()),
            Self::CurveNode(_) => request.node.map(|n| format!("--node {n}")),
            Self::Memory(e) => e.is_about_hugepages().then(|| "--hugepages".to_string()),
            Self::Nodes(_) => request.nodes.as_ref().map(|n| format!("--nodes {n}")),
        }
    }

    /// What to do instead, where the error says more than its flag: fewer load threads.
    pub(crate) fn hint(&self) -> Option<String> {
        match self {
            Self::TooFewLoadCpus { free, .. } => {
                Some(format!("give --load {free} at most, or more --cpus"))
            }
            _ => None,
        }
    }
}

impl MemlatRequest {
    /// [`MemlatRequest::size`] on `session`'s machine and CPUs, a refusal said with its flag.
    pub(crate) fn size_on(
        &self,
        session: &Session,
    ) -> Result<MemlatSizing, SizingRefused<MemlatSizingError>> {
        let sizing = self.size(&session.machine.topology, &session.places, &session.budget);
        sizing.map_err(|error| SizingRefused {
            engine: "memlat",
            flag: error.flag(self),
            hint: error.hint(),
            error: Box::new(error),
        })
    }

    /// Decides the CPU, sizes, pages and nodes on the chosen CPUs (`places`), and checks that
    /// they fit `budget`, before anything is mapped.
    pub(crate) fn size(
        &self,
        topology: &Topology,
        places: &[CpuPlace],
        budget: &MemoryBudget,
    ) -> Result<MemlatSizing, MemlatSizingError> {
        let cpu = match self.cpu {
            Some(cpu) if places.iter().any(|p| p.cpu == cpu) => cpu,
            Some(cpu) => {
                let chosen: CpuSet = places.iter().map(|p| p.cpu).collect();
                return Err(MemlatSizingError::CpuNotChosen { cpu, chosen });
            }
            None => places
                .first()
                .map(|p| p.cpu)
                .ok_or(MemlatSizingError::NoCpu)?,
        };
        let sizes = self
            .sizes
            .clone()
            .unwrap_or_else(|| default_sizes(topology.llc_bytes_total()));
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let stride =
            usize::try_from(self.stride_bytes).map_err(|_| MemlatSizingError::StrideTooLarge)?;
        let window_bytes = match self.window {
            Window::Full => None,
            Window::Bytes(b) => {
                Some(usize::try_from(b).map_err(|_| MemlatSizingError::WindowTooLarge)?)
            }
        };
        let what = format!("a {} buffer", bytes(largest));
        // The buffer, plus the visit order built next to it (one word per line).
        let order_bytes = largest / self.stride_bytes.max(1) * 8;
        budget.check_available(&what, largest.saturating_add(order_bytes))?;
        let backing = if self.hugepages {
            let (page_bytes, _) = budget.check_hugepages(&what, largest)?;
            Backing::Huge { page_bytes }
        } else {
            // DRAM latency, not TLB-miss latency: 2 MiB pages where the kernel gives them.
            Backing::Transparent
        };
        let node_check = |node: &NumaNode| -> Result<(), MemoryError> {
            check_node(node, &what, largest)?;
            if let Backing::Huge { page_bytes } = backing {
                let pages = largest.div_ceil(page_bytes as u64);
                budget.check_node_hugepages(node.id, pages, page_bytes as u64 / 1024)?;
            }
            Ok(())
        };
        if let Some(id) = self.node {
            node_check(find_node(topology, id).map_err(MemlatSizingError::CurveNode)?)?;
        }
        let nodes = matrix_nodes(topology, self.nodes.as_ref())?;
        let MatrixAxes { rows, columns } =
            matrix_axes(&nodes, places, self.nodes.is_some(), largest, &what)?;
        for node in &columns {
            node_check(node)?;
        }
        let curve = ChaseConfig {
            cpu,
            sizes,
            stride_bytes: stride,
            window_bytes,
            backing,
            memory_node: self.node,
            sample_ms: self.sample_ms,
            samples: self.samples as usize,
            seed: self.seed,
        };
        curve.check()?;
        let load_cpus = match self.load_threads {
            Some(threads) => Some(load_cpus(places, cpu, threads)?),
            None => None,
        };
        Ok(MemlatSizing {
            curve,
            rows: rows
                .into_iter()
                .filter_map(|(node, cpus)| Some((node, cpus.first()?.cpu)))
                .collect(),
            columns: columns.iter().map(|n| n.id).collect(),
            load_cpus,
        })
    }
}

/// The CPUs of `threads` load threads: the chosen CPUs (`places`, in locality order) other
/// than the chasing `cpu`, nearest first.
fn load_cpus(places: &[CpuPlace], cpu: u32, threads: u32) -> Result<Vec<u32>, MemlatSizingError> {
    let free: Vec<u32> = (places.iter().map(|p| p.cpu))
        .filter(|&c| c != cpu)
        .collect();
    if free.len() < threads as usize {
        return Err(MemlatSizingError::TooFewLoadCpus {
            threads,
            free: free.len(),
            cpu,
        });
    }
    Ok(free.into_iter().take(threads as usize).collect())
}

impl MemlatSizing {
    /// Measurement steps, for progress: each size of the curve, each cell of the matrix, then
    /// each intensity of the loaded curve.
    pub(crate) fn steps(&self) -> usize {
        let loaded = self.load_cpus.as_ref().map_or(0, |_| DELAYS_NS.len());
        self.curve.sizes.len() + self.rows.len() * self.columns.len() + loaded
    }
}

/// Runs `sizing` (sized on the session's CPUs by [`MemlatRequest::size`]): the curve, the node ×
/// node matrix at the largest size, then the loaded curve, each step said on stderr; Ctrl-C or
/// the session's stop flag ends it early, keeping what was measured.
pub(crate) fn run(
    session: &Session,
    sizing: &MemlatSizing,
) -> Result<Measurement<MemlatReport>, MemlatError> {
    let mut progress = Progress::stderr("memlat", sizing.steps());
    let report = sizing.measure(&session.stop, &mut progress);
    progress.finish();
    Ok(Measurement::new(session, METHOD, report?))
}

/// How memlat measures, in the result header.
pub(crate) const METHOD: &str = "dependent pointer chase over a random single cycle, one pointer \
     per stride, windows and the lines within them in random order; ns per load over samples \
     after a warm-up";

impl MemlatSizing {
    /// Measures the sizing as [`run`] does, saying each step on `progress`, until `stop`.
    fn measure(
        &self,
        stop: &StopFlag,
        progress: &mut Progress,
    ) -> Result<MemlatReport, MemlatError> {
        let curve = chase_sizes(&self.curve, stop, progress)?;
        let largest = self.curve.sizes.iter().copied().max().unwrap_or(0);
        let mut node_matrix = (!self.rows.is_empty()).then(|| NodeLatency {
            size_bytes: largest,
            median_ns: empty_matrix(&self.rows, &self.columns),
            runs: Vec::new(),
        });
        if let Some(matrix) = &mut node_matrix {
            each_cell(
                &self.rows,
                &self.columns,
                stop,
                |r, &(_, cpu), c, memory_node| {
                    let cell = ChaseConfig {
                        cpu,
                        sizes: vec![largest],
                        memory_node: Some(memory_node),
                        ..self.curve.clone()
                    };
                    let run = chase_sizes(&cell, stop, progress)?;
                    if let Some(point) = run.points.first() {
                        matrix.median_ns.set(r, c, point.latency_ns.median);
                    }
                    matrix.runs.push(run);
                    Ok(())
                },
            )?;
        }
        let loaded = match &self.load_cpus {
            Some(cpus) => Some(loaded(&self.curve, cpus, stop, progress)?),
            None => None,
        };
        Ok(MemlatReport {
            curve,
            node_matrix,
            loaded,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::measure::runner::place;
    use crate::sysroot::SysRoot;

    fn milan() -> Machine {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/milan64-nps4-smt");
        Machine::read(&SysRoot::dir(dir))
    }

    fn request() -> MemlatRequest {
        MemlatRequest {
            cpu: None,
            node: None,
            sizes: None,
            hugepages: false,
            window: Window::Bytes(4096),
            stride_bytes: 64,
            nodes: None,
            sample_ms: 100,
            samples: 5,
            seed: 1,
            load_threads: None,
        }
    }

    #[test]
    fn sizes_one_chasing_cpu_per_node_and_refuses_with_typed_errors() {
        let m = milan();
        let places = place::places(&m.topology);
        let budget = MemoryBudget::new(&m.kernel.meminfo, &m.kernel.hugepages);
        let sizing = request().size(&m.topology, &places, &budget).unwrap();
        assert_eq!(sizing.curve.sizes.last(), Some(&(1 << 30)));
        assert_eq!(sizing.rows, vec![(0, 0), (1, 16), (2, 32), (3, 48)]);
        assert_eq!(sizing.steps(), sizing.curve.sizes.len() + 4 * 4);
        let elsewhere = MemlatRequest {
            cpu: Some(999),
            ..request()
        };
        let err = elsewhere.size(&m.topology, &places, &budget).unwrap_err();
        assert!(matches!(
            err,
            MemlatSizingError::CpuNotChosen { cpu: 999, .. }
        ));
        let missing = MemlatRequest {
            node: Some(9),
            ..request()
        };
        let err = missing.size(&m.topology, &places, &budget).unwrap_err();
        assert!(matches!(
            err,
            MemlatSizingError::CurveNode(NodeError::Missing { id: 9, .. })
        ));
        assert!(!err.to_string().contains("--"), "no flag in {err}");
    }

    #[test]
    fn load_threads_take_the_nearest_other_cpus_or_are_refused() {
        let m = milan();
        let places = place::places(&m.topology);
        let budget = MemoryBudget::new(&m.kernel.meminfo, &m.kernel.hugepages);
        let loaded = MemlatRequest {
            load_threads: Some(2),
            ..request()
        };
        let sizing = loaded.size(&m.topology, &places, &budget).unwrap();
        let nearest: Vec<u32> = (places.iter().map(|p| p.cpu))
            .filter(|&c| c != sizing.curve.cpu)
            .take(2)
            .collect();
        assert_eq!(sizing.load_cpus, Some(nearest));
        assert_eq!(
            sizing.steps(),
            sizing.curve.sizes.len() + 4 * 4 + DELAYS_NS.len()
        );
        let too_many = MemlatRequest {
            load_threads: Some(places.len() as u32),
            ..request()
        };
        let err = too_many.size(&m.topology, &places, &budget).unwrap_err();
        let free = places.len() - 1;
        assert!(
            matches!(err, MemlatSizingError::TooFewLoadCpus { free: f, cpu: 0, .. } if f == free),
            "{err}"
        );
        assert!(!err.to_string().contains("--"), "no flag in {err}");
    }
}
