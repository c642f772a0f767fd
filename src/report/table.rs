//! The one column aligner of the terminal printers: rows of cells laid out in columns two
//! spaces apart, each column as wide as its widest cell, trailing spaces trimmed. (Anchor:
//! hyperfine's `MarkupExporter`.)

/// Where a column's cells sit within its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text: padded on the right.
    Left,
    /// Figures: padded on the left.
    Right,
}

/// How the width of a cell is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// In bytes: a `µ` or `±` widens its column by one more space. The tables of compare,
    /// check and the measurements have always been laid out so, and their golden files and
    /// guide examples show it.
    Bytes,
    /// In characters: every character takes one place.
    Chars,
}

/// `rows` as lines: the first column left-aligned (the row's name), the others right-aligned
/// (its figures), widths in bytes.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    columns(rows, Width::Bytes, |c| {
        if c == 0 { Align::Left } else { Align::Right }
    })
}

/// `rows` as lines, column `c` aligned as `align(c)` says, cells measured as `width` says.
/// Rows may be shorter than others; a missing cell takes no place.
pub(crate) fn columns(
    rows: &[Vec<String>],
    width: Width,
    align: impl Fn(usize) -> Align,
) -> String {
    let measure = |cell: &String| match width {
        Width::Bytes => cell.len(),
        Width::Chars => cell.chars().count(),
    };
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(measure)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &width))| match align(c) {
                Align::Left => format!("{cell:<width$}"),
                Align::Right => format!("{cell:>width$}"),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn names_left_figures_right_two_spaces_apart() {
        let table = rows(&[&["cpu", "p99"], &["10", "1.5"], &["2", "12.25"]]);
        assert_eq!(aligned(&table), "cpu    p99\n10     1.5\n2    12.25\n");
    }

    #[test]
    fn widths_in_characters_or_bytes_and_trailing_space_trimmed() {
        let table = rows(&[&["µs", "a"], &["xy", ""], &["z"]]);
        let left = |_| Align::Left;
        assert_eq!(columns(&table, Width::Chars, left), "µs  a\nxy\nz\n");
        assert_eq!(columns(&table, Width::Bytes, left), "µs   a\nxy\nz\n");
    }
}
