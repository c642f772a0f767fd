//! A labelled matrix of measurements (CPU × CPU latencies, node × node bandwidths). Its
//! terminal table and CSV forms are in `report::matrix`.

use serde::{Deserialize, Serialize};

/// Values indexed by a row label and a column label; a cell not measured is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Matrix {
    /// What the rows are (e.g. "cpu", "cpu node", "waker cpu").
    pub row_kind: String,
    /// What the columns are (e.g. "cpu", "memory node", "woken cpu").
    pub column_kind: String,
    /// Row labels, in order.
    pub rows: Vec<String>,
    /// Column labels, in order.
    pub columns: Vec<String>,
    /// `values[r][c]`; `null` in JSON where not measured.
    pub values: Vec<Vec<Option<f64>>>,
}

impl Matrix {
    /// An empty (all unmeasured) matrix.
    pub(crate) fn new(
        row_kind: &str,
        column_kind: &str,
        rows: Vec<String>,
        columns: Vec<String>,
    ) -> Self {
        let values = vec![vec![None; columns.len()]; rows.len()];
        Self {
            row_kind: row_kind.to_string(),
            column_kind: column_kind.to_string(),
            rows,
            columns,
            values,
        }
    }

    /// An empty matrix whose rows and columns are numbered (CPUs, NUMA nodes).
    pub(crate) fn numbered(
        row_kind: &str,
        column_kind: &str,
        rows: &[u32],
        columns: &[u32],
    ) -> Self {
        let labels = |ids: &[u32]| ids.iter().map(u32::to_string).collect();
        Self::new(row_kind, column_kind, labels(rows), labels(columns))
    }

    /// Sets one cell; out-of-range indices are ignored.
    pub(crate) fn set(&mut self, row: usize, column: usize, value: f64) {
        if let Some(cell) = self.values.get_mut(row).and_then(|r| r.get_mut(column)) {
            *cell = Some(value);
        }
    }

    /// One cell, if measured.
    pub(crate) fn get(&self, row: usize, column: usize) -> Option<f64> {
        self.values.get(row)?.get(column).copied().flatten()
    }

    /// The measured cells, row by row.
    pub(crate) fn cells(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter().flatten().flatten().copied()
    }
}
