//! A labelled matrix of measurements (CPU × CPU latencies, node × node bandwidths), with its
//! terminal table and CSV forms.

use serde::Serialize;
use std::fmt::Write;

/// Values indexed by a row label and a column label; a cell not measured is `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
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
    pub fn new(row_kind: &str, column_kind: &str, rows: Vec<String>, columns: Vec<String>) -> Self {
        let values = vec![vec![None; columns.len()]; rows.len()];
        Self {
            row_kind: row_kind.to_string(),
            column_kind: column_kind.to_string(),
            rows,
            columns,
            values,
        }
    }

    /// Sets one cell; out-of-range indices are ignored.
    pub fn set(&mut self, row: usize, column: usize, value: f64) {
        if let Some(cell) = self.values.get_mut(row).and_then(|r| r.get_mut(column)) {
            *cell = Some(value);
        }
    }

    /// One cell, if measured.
    pub fn get(&self, row: usize, column: usize) -> Option<f64> {
        self.values.get(row)?.get(column).copied().flatten()
    }

    /// A terminal table with `decimals` digits after the point; unmeasured cells are blank.
    /// `breaks_after` lists row/column indices after which a separator is drawn (group
    /// boundaries, e.g. L3 groups).
    pub fn render(&self, decimals: usize, breaks_after: &[usize]) -> String {
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.decimals$}"));
        let label_width = self
            .rows
            .iter()
            .map(String::len)
            .chain([self.row_kind.len()])
            .max()
            .unwrap_or(0);
        let width = self
            .values
            .iter()
            .flatten()
            .map(|v| cell(*v).len())
            .chain(self.columns.iter().map(String::len))
            .max()
            .unwrap_or(1);
        let mut out = String::new();
        let _ = write!(out, "{:>label_width$} ", self.row_kind);
        for (c, label) in self.columns.iter().enumerate() {
            let _ = write!(out, " {label:>width$}");
            if breaks_after.contains(&c) && c + 1 < self.columns.len() {
                out.push_str(" |");
            }
        }
        out.push('\n');
        for (r, label) in self.rows.iter().enumerate() {
            let _ = write!(out, "{label:>label_width$} ");
            for c in 0..self.columns.len() {
                let _ = write!(out, " {:>width$}", cell(self.get(r, c)));
                if breaks_after.contains(&c) && c + 1 < self.columns.len() {
                    out.push_str(" |");
                }
            }
            out.push('\n');
            if breaks_after.contains(&r) && r + 1 < self.rows.len() {
                let line_width = out.lines().next().map_or(0, str::len);
                out.push_str(&"-".repeat(line_width));
                out.push('\n');
            }
        }
        out
    }

    /// CSV: a header `row_kind,col1,col2,...`, then one line per row; blank where unmeasured.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.row_kind);
        for label in &self.columns {
            out.push(',');
            out.push_str(label);
        }
        out.push('\n');
        for (r, label) in self.rows.iter().enumerate() {
            out.push_str(label);
            for c in 0..self.columns.len() {
                out.push(',');
                if let Some(v) = self.get(r, c) {
                    let _ = write!(out, "{v}");
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Matrix {
        let labels = vec!["0".to_string(), "1".to_string(), "2".to_string()];
        let mut m = Matrix::new("cpu", "cpu", labels.clone(), labels);
        m.set(0, 1, 21.5);
        m.set(1, 0, 21.25);
        m.set(2, 0, 110.0);
        m.set(9, 9, 1.0);
        m
    }

    #[test]
    fn csv_has_blanks_for_unmeasured() {
        assert_eq!(
            sample().to_csv(),
            "cpu,0,1,2\n0,,21.5,\n1,21.25,,\n2,110,,\n"
        );
    }

    #[test]
    fn table_aligns_and_draws_group_breaks() {
        let text = sample().render(1, &[1]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "cpu      0     1 |     2");
        assert_eq!(lines[1], "  0         21.5 |      ");
        assert_eq!(lines[2], "  1   21.2       |      ");
        assert!(lines[3].chars().all(|c| c == '-'));
        assert_eq!(lines[4], "  2  110.0       |      ");
    }
}
