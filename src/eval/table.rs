//! Aligned text tables (and their Markdown form) and the number format the text reports
//! share.

/// A number for a table: four decimals, or scientific for tiny magnitudes.
pub(crate) fn num(v: f64) -> String {
    if v == 0.0 || v.abs() >= 1e-3 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

pub(crate) fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), num)
}

/// An estimate with its confidence interval, `(estimate, low, high)`, as
/// `estimate [low, high]`; `-` without one.
pub(crate) fn ci(v: Option<(f64, f64, f64)>) -> String {
    v.map_or_else(
        || "-".to_string(),
        |(e, lo, hi)| format!("{} [{}, {}]", num(e), num(lo), num(hi)),
    )
}

/// Aligned columns: text columns to the left, number columns to the right.
pub(crate) struct Table {
    header: Vec<String>,
    left: Vec<bool>,
    rows: Vec<Vec<String>>,
}

/// Longest cell of a text table, in characters; longer ones end in `…`.
const MAX_CELL_CHARS: usize = 80;

/// A cell as the table shows it: control characters (a newline in a label would break the
/// table's lines) as `\u{..}` escapes, and at most [`MAX_CELL_CHARS`] characters.
fn cell_text(c: &str) -> String {
    let mut out = String::new();
    for (n, ch) in c.chars().enumerate() {
        if n + 1 >= MAX_CELL_CHARS && c.chars().count() > MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

impl Table {
    /// A table with these column names; `left` marks the text columns.
    pub(crate) fn new(header: &[&str], left: &[bool]) -> Self {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            left: left.to_vec(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self, out: &mut String, indent: &str) {
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| cell_text(c)).collect())
            .collect();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        for row in std::iter::once(&self.header).chain(&rows) {
            let mut line = String::from(indent);
            for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                // Padded by hand: `format!`'s width argument panics above 65,535.
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                if self.left.get(i).copied().unwrap_or(false) {
                    line.push_str(c);
                    line.push_str(&pad);
                } else {
                    line.push_str(&pad);
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }

    /// The table as Markdown: a header row, its rule, a line per row. Cells are whole (a
    /// reader's viewer wraps them); a `|` in one is escaped, control characters too.
    pub(crate) fn render_markdown(&self, out: &mut String) {
        let line = |cells: &[String]| {
            let cells: Vec<String> = cells
                .iter()
                .map(|c| {
                    c.chars()
                        .flat_map(|ch| match ch {
                            '|' => "\\|".chars().collect::<Vec<_>>(),
                            ch if ch.is_control() => ch.escape_unicode().collect(),
                            ch => vec![ch],
                        })
                        .collect()
                })
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        out.push_str(&line(&self.header));
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for row in &self.rows {
            out.push_str(&line(row));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_and_control_characters_keep_the_table_whole() {
        let mut t = Table::new(&["regime", "steps"], &[true, false]);
        t.row(vec!["x".repeat(70_000), "1".into()]);
        t.row(vec!["a\nb\u{7}".into(), "2".into()]);
        let mut out = String::new();
        t.render(&mut out, "");
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(out.contains("a\\u{a}b\\u{7}"), "{out}");
        assert!(out.lines().all(|l| l.chars().count() < 100), "{out}");
    }

    #[test]
    fn markdown_rows_keep_their_columns_when_a_cell_holds_a_bar() {
        let mut t = Table::new(&["agent", "score"], &[true, false]);
        t.row(vec!["a|b".into(), "0.5".into()]);
        let mut out = String::new();
        t.render_markdown(&mut out);
        assert_eq!(out, "| agent | score |\n|---|---|\n| a\\|b | 0.5 |\n");
    }
}
