//! What a sweep leaves behind: `sweep.csv` (one row per cell: the swept
//! values, then the summary's columns as medians over the repeats),
//! `runs.csv` (every repeat, `report::summary_csv`), `sweep.html` (table,
//! charts, recommendation) and the terminal table.

use super::grid::Grid;
use super::recommend::{Line, pct};
use super::results::{CellResult, duplicate_rate, expired_lease_rate};
use crate::report::charts::Chart;
use crate::report::html::{escape, figures, page};
use std::fmt::Write;

/// `sweep.csv`: cell, the swept keys, repeats, passed, the two rates the rules
/// read (worst repeat), then every summary metric (median), sorted like `summary.csv`.
pub(crate) fn sweep_csv(grid: &Grid, cells: &[CellResult]) -> String {
    let medians: Vec<_> = cells.iter().map(CellResult::medians).collect();
    let mut cols: Vec<&String> = medians.iter().flat_map(|m| m.keys()).collect();
    cols.sort();
    cols.dedup();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["cell".to_string()];
    header.extend(grid.axes.iter().map(|a| a.key.clone()));
    header.extend(["repeats", "passed", "expired_lease_rate", "duplicate_rate", "error"].map(String::from));
    header.extend(cols.iter().map(|c| c.to_string()));
    let _ = w.write_record(&header);
    for (c, m) in cells.iter().zip(&medians) {
        let worst = |f: fn(&crate::model::summary::RunSummary) -> f64| {
            c.runs.iter().map(f).fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
        };
        let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut row = vec![format!("{:02}", c.cell.index + 1)];
        row.extend(c.cell.params.iter().map(|(_, v)| v.clone()));
        row.push(c.runs.len().to_string());
        row.push(c.passed().to_string());
        row.push(num(worst(expired_lease_rate)));
        row.push(num(worst(duplicate_rate)));
        row.push(c.errors.join("; "));
        row.extend(cols.iter().map(|k| num(m.get(*k).copied())));
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The table's rows: the swept values, then jobs/s, claim p99, work p99, expired, duplicates, verdict.
fn table_rows(grid: &Grid, cells: &[CellResult]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head: Vec<String> = vec!["cell".into()];
    head.extend(grid.axes.iter().map(|a| a.key.clone()));
    head.extend(["jobs/s", "claim p99 ms", "work p99 s", "expired", "duplicates", "verdict"].map(String::from));
    let rows = cells
        .iter()
        .map(|c| {
            let mut r = vec![format!("{:02}", c.cell.index + 1)];
            r.extend(c.cell.params.iter().map(|(_, v)| v.clone()));
            match c.measured() {
                Some(m) => r.extend([
                    super::recommend::num(m.jobs_per_sec),
                    format!("{:.2}", m.claim_p99_ms),
                    super::recommend::num(m.work_p99_s),
                    pct(m.expired_rate),
                    pct(m.duplicate_rate),
                    if c.passed() { "passed".into() } else { "FAILED".into() },
                ]),
                None => r.extend(["—", "—", "—", "—", "—", "not run"].map(String::from)),
            }
            r
        })
        .collect();
    (head, rows)
}

pub(crate) fn terminal(grid: &Grid, cells: &[CellResult], lines: &[Line]) -> String {
    let (head, rows) = table_rows(grid, cells);
    let widths: Vec<usize> = (0..head.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([head[i].chars().count()]).max().unwrap_or(0))
        .collect();
    let fmt = |r: &[String]| {
        let cells: Vec<String> = r.iter().zip(&widths).map(|(v, w)| format!("{v:>w$}")).collect();
        format!("  {}\n", cells.join("  "))
    };
    let mut o = fmt(&head);
    for r in &rows {
        o.push_str(&fmt(r));
    }
    o.push_str("\nrecommendation\n");
    for l in lines {
        let _ = writeln!(o, "  {:<13} {}", l.topic, l.value.as_deref().unwrap_or("no recommendation"));
        let _ = writeln!(o, "  {:<13}   rule: {}", "", l.rule);
        let _ = writeln!(o, "  {:<13}   measured: {}", "", l.evidence);
    }
    o
}

pub(crate) fn html(
    name: &str,
    scale: f64,
    grid: &Grid,
    cells: &[CellResult],
    lines: &[Line],
    charts: &[Chart],
) -> String {
    let mut o = format!("<h1>{} — sweep of {} cells</h1>", escape(name), cells.len());
    if scale != 1.0 {
        let _ = write!(
            o,
            "<p>time scale {scale}: every duration ran × {scale}; times and rates are in the scenario's units, claim \
             latencies in real ms.</p>"
        );
    }
    o.push_str("<h2>Recommendation</h2><table><tr><th>what</th><th>value</th><th>rule</th><th>measured</th></tr>");
    for l in lines {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(l.topic),
            escape(l.value.as_deref().unwrap_or("no recommendation")),
            escape(&l.rule),
            escape(&l.evidence)
        );
    }
    o.push_str("</table><h2>Cells</h2><table><tr>");
    let (head, rows) = table_rows(grid, cells);
    for h in &head {
        let _ = write!(o, "<th>{}</th>", escape(h));
    }
    o.push_str("<th>report</th></tr>");
    for (r, c) in rows.iter().zip(cells) {
        o.push_str("<tr>");
        for v in r {
            let _ = write!(o, "<td>{}</td>", escape(v));
        }
        let link = c.dirs.first().map(|d| d.join("report.html").display().to_string()).unwrap_or_default();
        let _ = write!(o, "<td><a href=\"{}\">report</a></td></tr>", escape(&link));
    }
    o.push_str("</table>");
    figures(&mut o, charts);
    page(&format!("{name} sweep"), &o)
}
