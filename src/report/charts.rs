//! Charts as SVG (embedded in report.html) and PNG, drawn with plotters and
//! the DejaVu fonts compiled in, so text renders on machines without fonts.

use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::Once;

pub(crate) const SIZE: (u32, u32) = (960, 480);
pub(crate) const FONT: &str = "sans-serif";
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// One line. A point whose y is not finite (NaN) is a gap: the line breaks there, and a
/// point alone between gaps is drawn as a dot.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The runs of finite points between gaps.
    fn segments(&self) -> impl Iterator<Item = &[(f64, f64)]> {
        self.points.split(|p| !p.1.is_finite()).filter(|s| !s.is_empty())
    }
}

pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
}

/// A bar per label.
pub struct BarChart<'a> {
    pub title: &'a str,
    pub y_label: &'a str,
    pub bars: Vec<(String, f64)>,
}

/// A line chart named `name` (its file stem) with a caption.
pub fn line(chart: &LineChart, name: &str, caption: &str) -> Result<Chart> {
    lines(chart, name, caption, Axes::Linear)
}

/// The same with x given as log2 of the value and labelled with the value (1, 2, 4 … 512).
pub fn line_log2(chart: &LineChart, name: &str, caption: &str) -> Result<Chart> {
    lines(chart, name, caption, Axes::Log2X)
}

/// The same, and y given as log10 of the value, labelled by decade (0.1, 1, 10 …): for
/// values that span orders of magnitude, such as claim latency from 1 to 512 workers.
pub fn line_log2_log10(chart: &LineChart, name: &str, caption: &str) -> Result<Chart> {
    lines(chart, name, caption, Axes::Log2XLog10Y)
}

fn lines(chart: &LineChart, name: &str, caption: &str, axes: Axes) -> Result<Chart> {
    render(name, caption, |area| draw_line(area, chart, axes), |area| draw_line(area, chart, axes))
}

#[derive(Clone, Copy, PartialEq)]
enum Axes {
    Linear,
    Log2X,
    Log2XLog10Y,
}

pub fn bars(chart: &BarChart, name: &str, caption: &str) -> Result<Chart> {
    render(name, caption, |area| draw_bars(area, chart), |area| draw_bars(area, chart))
}

/// A drawing's outcome: the backend's error (its type depends on the backend) boxed.
pub(crate) type Drawn = std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Boxes a drawing backend's error for [`Drawn`].
pub(crate) fn drawing<E: std::error::Error + Send + Sync + 'static>(
    e: DrawingAreaErrorKind<E>,
) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(e)
}

/// One drawn chart: its file stem and caption, and the same drawing as SVG (embedded in the
/// HTML pages) and PNG. Drawn in memory; the exporters write `<stem>.svg` and `<stem>.png`.
#[derive(Debug, Clone)]
pub struct Chart {
    pub name: String,
    pub caption: String,
    pub svg: String,
    pub png: Vec<u8>,
}

impl Chart {
    /// The chart's two files, under `folder` (relative to the output folder).
    pub fn files(&self, folder: &str) -> [(String, Vec<u8>); 2] {
        [
            (format!("{folder}/{}.svg", self.name), self.svg.clone().into_bytes()),
            (format!("{folder}/{}.png", self.name), self.png.clone()),
        ]
    }
}

/// Draws one chart twice, as SVG and as PNG, in memory.
pub(crate) fn render(
    name: &str,
    caption: &str,
    svg: impl FnOnce(DrawingArea<SVGBackend, Shift>) -> Drawn,
    png: impl FnOnce(DrawingArea<BitMapBackend, Shift>) -> Drawn,
) -> Result<Chart> {
    render_at(SIZE, name, caption, svg, png)
}

fn render_at(
    size: (u32, u32),
    name: &str,
    caption: &str,
    svg: impl FnOnce(DrawingArea<SVGBackend, Shift>) -> Drawn,
    png: impl FnOnce(DrawingArea<BitMapBackend, Shift>) -> Drawn,
) -> Result<Chart> {
    fonts();
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        svg(area).map_err(|e| Error::machine(format!("chart {name}"), e))?;
    }
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let area = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        png(area).map_err(|e| Error::machine(format!("chart {name}"), e))?;
    }
    let mut bytes = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut bytes),
        &rgb,
        size.0,
        size.1,
        image::ColorType::Rgb8,
    )
    .map_err(|e| Error::machine(format!("chart {name}: encoding the PNG"), e))?;
    Ok(Chart { name: name.to_string(), caption: caption.to_string(), svg: text, png: bytes })
}

/// Does the chart have no point to draw (every series empty or all gaps)?
pub fn is_empty(c: &LineChart) -> bool {
    c.series.iter().all(|s| s.segments().next().is_none())
}

/// A chart with nothing to draw: its title and, in words, why — instead of empty axes, which
/// read as a measured nothing. Lower than a chart; the same files (`<name>.svg`, `.png`).
pub fn note(title: &str, why: &str, name: &str, caption: &str) -> Result<Chart> {
    let lines = wrap(why, 90);
    let size = (SIZE.0, 70 + 22 * lines.len() as u32 + 20);
    render_at(size, name, caption, |a| draw_note(a, title, &lines), |a| draw_note(a, title, &lines))
}

/// `text` in lines of at most about `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn draw_note<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, title: &str, lines: &[String]) -> Drawn
where
    DB::ErrorType: 'static,
{
    let e = drawing::<DB::ErrorType>;
    area.fill(&WHITE).map_err(e)?;
    let (w, _) = area.dim_in_pixel();
    let centre = Pos::new(HPos::Center, VPos::Center);
    let bold = TextStyle::from((FONT, 22).into_font().style(FontStyle::Bold)).pos(centre);
    area.draw(&Text::new(title.to_string(), (w as i32 / 2, 30), bold)).map_err(e)?;
    let grey = RGBColor(90, 90, 90);
    for (i, line) in lines.iter().enumerate() {
        let style = (FONT, 16).into_font().color(&grey).pos(centre);
        area.draw(&Text::new(line.clone(), (w as i32 / 2, 72 + 22 * i as i32), style)).map_err(e)?;
    }
    Ok(())
}

/// Headroom above the data so the legend does not sit on the lines.
fn upper(v: f64) -> f64 {
    if v <= 0.0 { 1.0 } else { v * 1.3 }
}

fn draw_line<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, c: &LineChart, axes: Axes) -> Drawn
where
    DB::ErrorType: 'static,
{
    let e = drawing::<DB::ErrorType>;
    area.fill(&WHITE).map_err(e)?;
    let pts = c.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.1.is_finite());
    let (xmax, ymin, ymax) =
        pts.fold((0f64, f64::MAX, f64::MIN), |(x, lo, hi), p| (x.max(p.0), lo.min(p.1), hi.max(p.1)));
    // Log y: whole decades around the data, a little headroom for the legend.
    let (y0, y1) = match axes {
        Axes::Log2XLog10Y if ymin <= ymax => (ymin.floor(), ymax.ceil() + 0.5),
        _ => (0.0, upper(ymax.max(0.0))),
    };
    let mut chart = ChartBuilder::on(&area)
        .caption(c.title, (FONT, 22).into_font().style(FontStyle::Bold))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..xmax.max(1.0), y0..y1)
        .map_err(e)?;
    let pow2 = |x: &f64| format!("{:.0}", 2f64.powf(*x));
    let pow10 = |y: &f64| {
        let v = 10f64.powf(*y);
        if v < 1.0 { format!("{v:.1}") } else { format!("{v:.0}") }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_label)
        .y_desc(c.y_label)
        .x_labels(10)
        .y_labels(6)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235));
    if axes != Axes::Linear {
        mesh.x_labels(xmax.max(1.0) as usize + 1).x_label_formatter(&pow2);
    }
    if axes == Axes::Log2XLog10Y {
        mesh.y_labels((y1 - y0) as usize + 1).y_label_formatter(&pow10);
    }
    mesh.draw().map_err(e)?;
    for (i, s) in c.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let lone = s.segments().filter(|seg| seg.len() == 1).map(|seg| Circle::new(seg[0], 3, color.filled()));
        chart.draw_series(lone).map_err(e)?;
        for seg in s.segments().filter(|seg| seg.len() > 1) {
            chart.draw_series(LineSeries::new(seg.iter().copied(), color.stroke_width(2))).map_err(e)?;
        }
        // The legend entry, once per series (an empty series still names its line).
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(e)?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
    }
    if c.series.len() > 1 || c.series.first().is_some_and(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font((FONT, 14))
            .draw()
            .map_err(e)?;
    }
    area.present().map_err(e)
}

fn draw_bars<DB: DrawingBackend>(area: DrawingArea<DB, Shift>, c: &BarChart) -> Drawn
where
    DB::ErrorType: 'static,
{
    let e = drawing::<DB::ErrorType>;
    area.fill(&WHITE).map_err(e)?;
    let n = c.bars.len().max(1);
    let ymax = c.bars.iter().fold(0f64, |m, b| m.max(b.1));
    let mut chart = ChartBuilder::on(&area)
        .caption(c.title, (FONT, 22).into_font().style(FontStyle::Bold))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..n as f64, 0f64..upper(ymax))
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|_| String::new())
        .y_desc(c.y_label)
        .y_labels(6)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let centered = |size| TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (i, (label, v)) in c.bars.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let x = i as f64;
        let bar = Rectangle::new([(x + 0.12, 0.0), (x + 0.88, *v)], color.mix(0.85).filled());
        chart.draw_series(std::iter::once(bar)).map_err(e)?;
        let value = if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") };
        let texts = [
            Text::new(value, (x + 0.5, *v), centered(15)),
            Text::new(label.clone(), (x + 0.5, *v + upper(ymax) * 0.07), centered(15)),
        ];
        chart.draw_series(texts).map_err(e)?;
    }
    area.present().map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_svg_and_png_with_embedded_fonts() {
        let chart = LineChart {
            title: "Throughput",
            x_label: "seconds",
            y_label: "jobs/s",
            series: vec![Series { name: "done".into(), points: vec![(0.0, 1.0), (1.0, 3.0)] }],
        };
        let c = line(&chart, "t", "caption").unwrap();
        assert!(c.svg.contains("<svg") && c.svg.contains("Throughput"));
        assert_eq!(&c.png[1..4], b"PNG");
        let decoded = image::load_from_memory(&c.png).unwrap();
        assert_eq!((decoded.width(), decoded.height()), SIZE);
        assert_eq!(c.files("charts")[1].0, "charts/t.png");
        let b = BarChart {
            title: "jobs/s",
            y_label: "jobs/s",
            bars: vec![("naive".into(), 465.0), ("skip".into(), 1450.0)],
        };
        assert!(bars(&b, "b", "").unwrap().svg.contains("naive"));
    }

    #[test]
    fn a_gap_breaks_the_line_and_a_lone_point_is_a_dot() {
        let points =
            vec![(0.0, 1.0), (1.0, 2.0), (2.0, f64::NAN), (5.0, 3.0), (6.0, f64::NAN), (9.0, 4.0), (10.0, 5.0)];
        let s = Series { name: "q".into(), points };
        let lens: Vec<usize> = s.segments().map(|seg| seg.len()).collect();
        assert_eq!(lens, [2, 1, 2]);
        let chart = LineChart { title: "Gaps", x_label: "s", y_label: "n", series: vec![s] };
        let svg = line(&chart, "g", "").unwrap().svg;
        let ours = svg.lines().filter(|l| l.contains("<polyline") && l.contains("#1F77B4")).count();
        assert_eq!(ours, 2 + 1, "two lines (not one across the gaps) and the legend's");
        assert!(svg.contains("<circle"), "the lone point is a dot");
    }
}
