//! The sweep's charts, drawn with the run reports' plotters setup
//! (`report::charts`): throughput and claim p99 by batch (one line per
//! combination of the other swept keys), a heatmap of throughput over the
//! first two swept keys, and expired-lease and duplicate rates by lease.

use super::grid::Grid;
use super::results::Measured;
use crate::error::Result;
use crate::report::charts::{self, Chart, Drawn, FONT, LineChart, Series};
use crate::scenario::units::parse_duration;
use plotters::coord::Shift;
use plotters::prelude::*;

pub(crate) const BATCH: &str = "workers.batch";
pub(crate) const LEASE: &str = "lease.duration";

/// A cell as the charts see it: its params and its numbers.
pub(crate) struct Point<'a> {
    pub params: &'a [(String, String)],
    pub m: &'a Measured,
}

/// Every chart the grid allows.
pub(crate) fn draw(grid: &Grid, points: &[Point]) -> Result<Vec<Chart>> {
    let mut out = Vec::new();
    if grid.axis(BATCH).is_some() {
        for (name, title, y, f) in [
            (
                "throughput-by-batch",
                "Throughput by batch",
                "jobs/s",
                (|m: &Measured| m.jobs_per_sec) as fn(&Measured) -> f64,
            ),
            ("claim-p99-by-batch", "Claim p99 by batch", "ms", |m: &Measured| m.claim_p99_ms),
        ] {
            let series = by_axis(points, BATCH, |v| v.parse::<f64>().ok(), f);
            let chart = LineChart { title, x_label: "workers.batch", y_label: y, series };
            let caption = format!("{title}, one line per combination of the other swept keys.");
            out.push(charts::line(&chart, name, &caption)?);
        }
    }
    if grid.axes.len() >= 2 {
        let (x, y) = (&grid.axes[0], &grid.axes[1]);
        let cell = |xi: &str, yi: &str| {
            points
                .iter()
                .filter(|p| value(p.params, &x.key) == Some(xi) && value(p.params, &y.key) == Some(yi))
                .map(|p| p.m.jobs_per_sec)
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
        };
        let values: Vec<Vec<Option<f64>>> =
            y.values.iter().map(|yv| x.values.iter().map(|xv| cell(xv, yv)).collect()).collect();
        let map = Heatmap { title: "Throughput (jobs/s)", x: (&x.key, &x.values), y: (&y.key, &y.values), values };
        let more = if grid.axes.len() > 2 { " (the best over the other swept keys)" } else { "" };
        let caption = format!("Jobs/s by {} and {}{more}.", x.key, y.key);
        out.push(charts::render("heatmap-throughput", &caption, |a| heatmap(a, &map), |a| heatmap(a, &map))?);
    }
    if grid.axis(LEASE).is_some() {
        let secs = |v: &str| parse_duration(v).ok().map(|d| d.as_secs_f64());
        let worst = |f: fn(&Measured) -> f64| {
            let mut pts: Vec<(f64, f64)> = Vec::new();
            for p in points {
                let Some(x) = value(p.params, LEASE).and_then(secs) else { continue };
                match pts.iter_mut().find(|(px, _)| *px == x) {
                    Some(pt) => pt.1 = pt.1.max(f(p.m) * 100.0),
                    None => pts.push((x, f(p.m) * 100.0)),
                }
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            pts
        };
        let series = vec![
            Series { name: "expired leases %".into(), points: worst(|m| m.expired_rate) },
            Series { name: "duplicate executions %".into(), points: worst(|m| m.duplicate_rate) },
        ];
        let chart =
            LineChart { title: "Expired leases and duplicates by lease", x_label: "lease (s)", y_label: "%", series };
        out.push(charts::line(
            &chart,
            "expired-by-lease",
            "Expired-lease and duplicate rates by lease (the worst cell at each lease); a rate above 0.5 % is worth investigating.",
        )?);
    }
    Ok(out)
}

fn value<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// One series per combination of the keys other than `key`, x read from `key`'s value.
fn by_axis(points: &[Point], key: &str, x: impl Fn(&str) -> Option<f64>, y: fn(&Measured) -> f64) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let Some(xv) = value(p.params, key).and_then(&x) else { continue };
        let name: Vec<String> = p.params.iter().filter(|(k, _)| k != key).map(|(k, v)| format!("{k}={v}")).collect();
        let name = name.join(" ");
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((xv, y(p.m))),
            None => series.push(Series { name, points: vec![(xv, y(p.m))] }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

struct Heatmap<'a> {
    title: &'a str,
    x: (&'a str, &'a [String]),
    y: (&'a str, &'a [String]),
    /// values[y][x]; None: the cell did not finish.
    values: Vec<Vec<Option<f64>>>,
}

fn heatmap<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, h: &Heatmap) -> Drawn
where
    DB::ErrorType: 'static,
{
    let e = charts::drawing::<DB::ErrorType>;
    area.fill(&WHITE).map_err(e)?;
    let (nx, ny) = (h.x.1.len() as i32, h.y.1.len() as i32);
    let max = h.values.iter().flatten().flatten().fold(0f64, |m, v| m.max(*v)).max(1e-9);
    let mut chart = ChartBuilder::on(&area)
        .caption(h.title, (FONT, 22).into_font().style(FontStyle::Bold))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(110)
        .build_cartesian_2d((0..nx - 1).into_segmented(), (0..ny - 1).into_segmented())
        .map_err(e)?;
    let label = |names: &[String], v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(h.x.0)
        .y_desc(h.y.0)
        .x_labels(nx as usize)
        .y_labels(ny as usize)
        .x_label_formatter(&|v| label(h.x.1, v))
        .y_label_formatter(&|v| label(h.y.1, v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(e)?;
    let centered = TextStyle::from((FONT, 16).into_font()).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Center,
    ));
    for (yi, row) in h.values.iter().enumerate() {
        for (xi, v) in row.iter().enumerate() {
            let (x, y) = (xi as i32, yi as i32);
            let shade = v.map_or(0.0, |v| v / max);
            let color = RGBColor(255 - (200.0 * shade) as u8, 255 - (120.0 * shade) as u8, 255 - (40.0 * shade) as u8);
            let rect = Rectangle::new(
                [
                    (SegmentValue::Exact(x), SegmentValue::Exact(y)),
                    (SegmentValue::Exact(x + 1), SegmentValue::Exact(y + 1)),
                ],
                color.filled(),
            );
            chart.draw_series(std::iter::once(rect)).map_err(e)?;
            let text = v.map_or("—".to_string(), |v| format!("{v:.0}"));
            let t = Text::new(text, (SegmentValue::CenterOf(x), SegmentValue::CenterOf(y)), centered.clone());
            chart.draw_series(std::iter::once(t)).map_err(e)?;
        }
    }
    area.present().map_err(e)
}
