//! The axes of a NUMA node × node matrix (rows: nodes with chosen CPUs; columns: nodes whose
//! memory is measured), checked before anything is mapped, and the walk over its cells.

use super::harness::StopFlag;
use super::memory::{MemoryError, check_node};
use super::place::CpuPlace;
use super::progress::should_stop;
use crate::machine::CpuSet;
use crate::machine::topology::{NumaNode, Topology};
use crate::measure::matrix::Matrix;

/// Why the nodes of a matrix cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum NodeError {
    /// A node that does not exist.
    #[error("NUMA node {id} does not exist (nodes: {nodes})")]
    Missing {
        /// The node asked for.
        id: u32,
        /// The nodes of the machine.
        nodes: CpuSet,
    },
    /// No chosen CPU is on the nodes.
    #[error(
        "none of the chosen CPUs is on NUMA nodes {nodes}: choose nodes with CPUs (or more CPUs)"
    )]
    NoChosenCpu {
        /// The nodes asked for.
        nodes: CpuSet,
    },
    /// A node's memory cannot hold what is measured.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// NUMA node `id` of `topology`.
pub(crate) fn find_node(topology: &Topology, id: u32) -> Result<&NumaNode, NodeError> {
    topology
        .nodes
        .iter()
        .find(|n| n.id == id)
        .ok_or_else(|| NodeError::Missing {
            id,
            nodes: topology.nodes.iter().map(|n| n.id).collect(),
        })
}

/// The `requested` nodes, or every node of a multi-node machine; each checked to exist.
pub(crate) fn matrix_nodes<'t>(
    topology: &'t Topology,
    requested: Option<&CpuSet>,
) -> Result<Vec<&'t NumaNode>, NodeError> {
    match requested {
        Some(list) => list.iter().map(|id| find_node(topology, id)).collect(),
        None if topology.nodes.len() > 1 => Ok(topology.nodes.iter().collect()),
        None => Ok(Vec::new()),
    }
}

/// The rows and columns of a node × node matrix.
pub(crate) struct MatrixAxes<'t> {
    /// Nodes with chosen CPUs, each with those CPUs (locality order).
    pub rows: Vec<(u32, Vec<CpuPlace>)>,
    /// Nodes with memory.
    pub columns: Vec<&'t NumaNode>,
}

/// Rows (nodes with chosen CPUs) and columns (nodes with memory, each checked to hold `need`
/// bytes for `what`); no matrix when no node has memory. `explicit`: the nodes were listed
/// by the user, so a node without memory is an error rather than skipped.
pub(crate) fn matrix_axes<'t>(
    nodes: &[&'t NumaNode],
    places: &[CpuPlace],
    explicit: bool,
    need: u64,
    what: &str,
) -> Result<MatrixAxes<'t>, NodeError> {
    let mut rows = Vec::new();
    let mut columns = Vec::new();
    for node in nodes {
        let cpus: Vec<CpuPlace> = places
            .iter()
            .filter(|p| p.node == Some(node.id))
            .cloned()
            .collect();
        if !cpus.is_empty() {
            rows.push((node.id, cpus));
        }
        if node.mem_total_kib.get() == Some(&0) && !explicit {
            continue;
        }
        check_node(node, what, need)?;
        columns.push(*node);
    }
    if columns.is_empty() {
        return Ok(MatrixAxes {
            rows: Vec::new(),
            columns,
        });
    }
    if rows.is_empty() {
        return Err(NodeError::NoChosenCpu {
            nodes: nodes.iter().map(|n| n.id).collect(),
        });
    }
    Ok(MatrixAxes { rows, columns })
}

/// An empty node × node matrix: rows = the nodes of `rows` (CPU side), columns = memory
/// nodes.
pub(crate) fn empty_matrix<T>(rows: &[(u32, T)], columns: &[u32]) -> Matrix {
    let row_nodes: Vec<u32> = rows.iter().map(|(node, _)| *node).collect();
    Matrix::numbered("cpu node", "memory node", &row_nodes, columns)
}

/// Measures the cells of a node × node matrix row by row with `measure(row index, row,
/// column index, memory node)`, ending early (keeping what was done) at Ctrl-C or `stop`.
pub(crate) fn each_cell<T, E>(
    rows: &[T],
    columns: &[u32],
    stop: &StopFlag,
    mut measure: impl FnMut(usize, &T, usize, u32) -> Result<(), E>,
) -> Result<(), E> {
    for (r, row) in rows.iter().enumerate() {
        for (c, &memory_node) in columns.iter().enumerate() {
            if should_stop(stop) {
                return Ok(());
            }
            measure(r, row, c, memory_node)?;
        }
    }
    Ok(())
}
