//! The outline of an HTML page this crate writes (report.html, comparison.html): its title,
//! headings, paragraphs, captions and every table row, one line each, without the inline
//! charts' bytes (an `<svg>` is `[svg]`), the style sheet or a `<pre>`'s text (its line count).
//! What a golden file of a page compares: a change of the page's shape or wording shows, a
//! redrawn chart does not. A plain scanner over the tags: the pages are our own, simple HTML.

/// The outline of `html`, one line per block; table rows indented under their `table` line.
pub(super) fn outline(html: &str) -> String {
    let mut o = Outline::default();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        o.text(&rest[..lt]);
        let Some(gt) = rest[lt..].find('>') else { break };
        o.tag(&rest[lt + 1..lt + gt]);
        rest = &rest[lt + gt + 1..];
    }
    o.text(rest);
    o.flush("text");
    let mut out = o.lines.join("\n");
    out.push('\n');
    out
}

/// Tags whose text is a line of the outline.
const BLOCKS: [&str; 10] = ["title", "h1", "h2", "h3", "p", "pre", "figure", "figcaption", "div", "li"];

#[derive(Default)]
struct Outline {
    lines: Vec<String>,
    /// Text since the last block boundary.
    buf: String,
    /// The blocks open, innermost last.
    open: Vec<String>,
    /// The cells of the table row being read, and the cell being read.
    row: Option<Vec<String>>,
    cell: Option<String>,
    /// Inside `<svg>` (nested depth) or `<style>`: text and tags are not read.
    skip_svg: usize,
    in_style: bool,
}

impl Outline {
    fn text(&mut self, t: &str) {
        if self.skip_svg > 0 || self.in_style {
            return;
        }
        match &mut self.cell {
            Some(c) => c.push_str(t),
            None => self.buf.push_str(t),
        }
    }

    fn tag(&mut self, raw: &str) {
        let closing = raw.starts_with('/');
        let name: String = raw
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if self.in_style {
            self.in_style = !(closing && name == "style");
            return;
        }
        if name == "svg" {
            if closing {
                self.skip_svg = self.skip_svg.saturating_sub(1);
            } else {
                if self.skip_svg == 0 {
                    self.text(" [svg] ");
                }
                self.skip_svg += 1;
            }
            return;
        }
        if self.skip_svg > 0 {
            return;
        }
        match (name.as_str(), closing) {
            ("style", false) => self.in_style = true,
            ("table", false) => {
                self.flush("text");
                self.lines.push(format!("{}table", self.indent()));
            }
            ("tr", false) => self.row = Some(Vec::new()),
            ("tr", true) => self.end_row(),
            ("td" | "th", false) => self.cell = Some(String::new()),
            ("td" | "th", true) => {
                let cell = self.cell.take().map(|c| collapse(&c)).unwrap_or_default();
                let mark = if name == "th" { "*" } else { "" };
                if let Some(r) = &mut self.row {
                    r.push(format!("{mark}{cell}"));
                }
            }
            ("br", _) => self.text(" "),
            (b, false) if BLOCKS.contains(&b) => {
                let outer = self.open.last().cloned().unwrap_or_else(|| "text".into());
                self.flush(&outer);
                self.open.push(b.to_string());
            }
            (b, true) if BLOCKS.contains(&b) => {
                self.flush(b);
                if let Some(i) = self.open.iter().rposition(|o| o == b) {
                    self.open.truncate(i);
                }
            }
            _ => {}
        }
    }

    /// A row: `| a | b |`; a header cell is marked `*`.
    fn end_row(&mut self) {
        if let Some(cells) = self.row.take() {
            self.lines.push(format!("{}  | {} |", self.indent(), cells.join(" | ")));
        }
    }

    /// The text read since the last boundary, as a line labelled `label` (a `pre` by its size).
    fn flush(&mut self, label: &str) {
        let text = std::mem::take(&mut self.buf);
        let line = if label == "pre" {
            format!("pre: [{} lines]", text.lines().count())
        } else {
            let t = collapse(&text);
            if t.is_empty() {
                return;
            }
            format!("{label}: {t}")
        };
        self.lines.push(format!("{}{line}", self.indent()));
    }

    fn indent(&self) -> String {
        "  ".repeat(self.open.len().saturating_sub(1))
    }
}

/// Runs of whitespace as one space, trimmed, with the entities the pages use decoded.
fn collapse(t: &str) -> String {
    let decoded =
        t.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn an_outline_keeps_text_and_rows_and_drops_the_chart_and_the_style() {
    let html = "<!doctype html><html><head><title>t &amp; u</title><style>h1{x}</style></head><body>\
                <h1>run — <span>PASSED</span></h1><p class=muted>one\n  two</p>\
                <table><tr><th></th><th>check</th></tr><tr><td><span>ok</span></td><td>exactly_once</td></tr></table>\
                <figure><svg><text>12 s</text><svg></svg></svg><figcaption><div>→ a</div></figcaption></figure>\
                <pre>a\nb\n</pre></body></html>";
    assert_eq!(
        outline(html),
        "title: t & u\nh1: run — PASSED\np: one two\ntable\n  | * | *check |\n  | ok | exactly_once |\n\
         figure: [svg]\n    div: → a\npre: [2 lines]\n"
    );
}
