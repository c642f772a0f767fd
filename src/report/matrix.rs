//! The terminal table and CSV forms of a [`Matrix`].

use crate::text::Page;

use crate::measure::matrix::Matrix;

/// A terminal table with `decimals` digits after the point; unmeasured cells are blank.
/// `breaks_after` lists row/column indices after which a separator is drawn (group
/// boundaries, e.g. L3 groups).
pub(crate) fn table(matrix: &Matrix, decimals: usize, breaks_after: &[usize]) -> String {
    let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.decimals$}"));
    let label_width = matrix
        .rows
        .iter()
        .map(String::len)
        .chain([matrix.row_kind.len()])
        .max()
        .unwrap_or(0);
    let width = matrix
        .values
        .iter()
        .flatten()
        .map(|v| cell(*v).len())
        .chain(matrix.columns.iter().map(String::len))
        .max()
        .unwrap_or(1);
    let mut out = Page::new();
    write!(out, "{:>label_width$} ", matrix.row_kind);
    for (c, label) in matrix.columns.iter().enumerate() {
        write!(out, " {label:>width$}");
        if breaks_after.contains(&c) && c + 1 < matrix.columns.len() {
            out.text(" |");
        }
    }
    out.blank();
    for (r, label) in matrix.rows.iter().enumerate() {
        write!(out, "{label:>label_width$} ");
        for c in 0..matrix.columns.len() {
            write!(out, " {:>width$}", cell(matrix.get(r, c)));
            if breaks_after.contains(&c) && c + 1 < matrix.columns.len() {
                out.text(" |");
            }
        }
        out.blank();
        if breaks_after.contains(&r) && r + 1 < matrix.rows.len() {
            let line_width = out.as_str().lines().next().map_or(0, str::len);
            out.text("-".repeat(line_width));
            out.blank();
        }
    }
    out.into_string()
}

/// CSV: a header `row_kind,col1,col2,...`, then one line per row; blank where unmeasured.
/// Values (ns) carry at most one decimal: the measurement resolves no finer.
pub(crate) fn csv(matrix: &Matrix) -> String {
    let mut out = Page::new();
    out.text(&matrix.row_kind);
    for label in &matrix.columns {
        out.text(',');
        out.text(label);
    }
    out.blank();
    for (r, label) in matrix.rows.iter().enumerate() {
        out.text(label);
        for c in 0..matrix.columns.len() {
            out.text(',');
            if let Some(v) = matrix.get(r, c) {
                let tenths = format!("{v:.1}");
                out.text(tenths.strip_suffix(".0").unwrap_or(&tenths));
            }
        }
        out.blank();
    }
    out.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Matrix {
        let mut m = Matrix::numbered("cpu", "cpu", &[0, 1, 2], &[0, 1, 2]);
        m.set(0, 1, 21.5);
        m.set(1, 0, 21.25);
        m.set(2, 0, 110.0);
        m.set(9, 9, 1.0);
        m
    }

    #[test]
    fn csv_has_blanks_for_unmeasured() {
        assert_eq!(csv(&sample()), "cpu,0,1,2\n0,,21.5,\n1,21.2,,\n2,110,,\n");
    }

    #[test]
    fn csv_values_carry_at_most_one_decimal() {
        // Issue 18: the c2c CSV printed 17 significant digits.
        let mut m = Matrix::numbered("cpu", "cpu", &[0], &[0, 1]);
        m.set(0, 0, 14_961.123456789012);
        m.set(0, 1, 40.04);
        assert_eq!(csv(&m), "cpu,0,1\n0,14961.1,40\n");
    }

    #[test]
    fn table_aligns_and_draws_group_breaks() {
        let text = table(&sample(), 1, &[1]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "cpu      0     1 |     2");
        assert_eq!(lines[1], "  0         21.5 |      ");
        assert_eq!(lines[2], "  1   21.2       |      ");
        assert!(lines[3].chars().all(|c| c == '-'));
        assert_eq!(lines[4], "  2  110.0       |      ");
    }
}
