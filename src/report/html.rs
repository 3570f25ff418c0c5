//! `report.html` (one run) and `comparison.html` (several): single
//! self-contained files, charts inlined as SVG, no scripts, no fetches.

use super::ComparedRun;
use super::charts::Chart;
use super::swimlane::Swimlane;
use crate::gate;
use crate::model::summary::{Percentiles, RunSummary};
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1040px;color:#222;padding:0 1rem}\
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.25rem .6rem;text-align:left;vertical-align:top}\
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}.ok{color:#1a7f37;font-weight:600}\
.fail{color:#cf222e;font-weight:600}.muted{color:#666}pre{background:#f6f8fa;padding:.8rem;overflow:auto}\
figure{margin:1rem 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}";

pub(crate) use super::escape::escape;

/// Each chart as an inline SVG figure with its caption.
pub(crate) fn figures(o: &mut String, charts: &[Chart]) {
    for c in charts {
        let _ = write!(o, "<figure>{}<figcaption class=muted>{}</figcaption></figure>", c.svg, escape(&c.caption));
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "<span class=ok>ok</span>" } else { "<span class=fail>FAIL</span>" }
}

pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        escape(title)
    )
}

fn rows(o: &mut String, pairs: &[(&str, String)]) {
    o.push_str("<table>");
    for (k, v) in pairs {
        let _ = write!(o, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    o.push_str("</table>");
}

fn latency_row(o: &mut String, name: &str, p: &Percentiles) {
    let _ = write!(o, "<tr><td>{}</td><td class=n>{}</td>", escape(name), p.count);
    // No sample: nothing measured, not a latency of 0.
    if p.count == 0 {
        o.push_str("<td class='n muted' colspan=6>— (not measured)</td></tr>");
        return;
    }
    for v in [p.p50, p.p90, p.p95, p.p99, p.p999, p.max] {
        let _ = write!(o, "<td class=n>{v:.3}</td>");
    }
    o.push_str("</tr>");
}

/// The report of one run, its charts inlined.
pub(crate) fn report(s: &RunSummary, charts: &[Chart], lanes: &[Swimlane], scenario_text: &str) -> String {
    let mut o = String::new();
    header(&mut o, s);
    expectations(&mut o, s);
    checks(&mut o, s);
    example_jobs(&mut o, lanes);
    o.push_str("<h2>Jobs and executions</h2>");
    // The agents get a table of their own below.
    let lines: Vec<_> = super::terminal::lines(s).into_iter().filter(|(l, _)| !l.trim().starts_with("agent")).collect();
    rows(&mut o, &lines);
    super::agents::table(&mut o, s);
    latencies(&mut o, s);
    o.push_str("<h2>Charts</h2>");
    figures(&mut o, charts);
    environment(&mut o, s);
    let _ = write!(o, "<h2>Scenario</h2><pre>{}</pre>", escape(scenario_text));
    page(&format!("queuebench · {}", s.scenario), &o)
}

/// The verdict, the workload, the database and the throughput.
fn header(o: &mut String, s: &RunSummary) {
    let status = if s.interrupted {
        "INTERRUPTED"
    } else if s.partial {
        "PARTIAL"
    } else if s.passed {
        "PASSED"
    } else {
        "FAILED"
    };
    let _ = write!(
        o,
        "<h1>{} — {}{}</h1><p class=muted>{}</p>",
        escape(&s.scenario),
        verdict_word(status),
        expected(s),
        escape(&s.description)
    );
    if s.partial {
        let why = escape(&s.partial_reason);
        let _ = write!(o, "<p class=fail>PARTIAL REPORT: {why}; the checks on the final table were not run</p>");
    }
    let db = &s.database;
    rows(
        o,
        &[
            ("run", format!("{} (started {})", s.run_id, s.started_at)),
            (
                "workload",
                format!(
                    "strategy {} · mode {} · fencing {} · {} workers · batch {} · work {} · stop {}",
                    s.strategy, s.mode, s.fencing, s.workers, s.batch, s.work, s.stop
                ),
            ),
            (
                "database",
                format!("{} {} · PostgreSQL {} · schema {}", db.kind, db.shown(), db.server_version, db.schema),
            ),
            (
                "throughput",
                format!(
                    "{:.1} jobs/s · {:.1} claims/s over {:.2} s{}",
                    s.throughput.jobs_per_sec,
                    s.throughput.claims_per_sec,
                    s.throughput.duration_s,
                    super::terminal::ceiling_note(&s.throughput)
                ),
            ),
        ],
    );
}

fn expectations(o: &mut String, s: &RunSummary) {
    o.push_str("<h2>Expectations</h2><table><tr><th></th><th>metric</th><th>expected</th><th>actual</th></tr>");
    for e in &s.expectations {
        let actual = e.actual_shown();
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td></tr>",
            if e.judged() { verdict(e.passed) } else { "<span>not judged</span>" },
            escape(&e.name),
            escape(&e.expression),
            escape(&actual)
        );
    }
    o.push_str("</table>");
}

fn checks(o: &mut String, s: &RunSummary) {
    o.push_str(
        "<h2>Checks</h2><table><tr><th></th><th>check</th><th>violations</th><th>detail</th><th>example jobs</th></tr>",
    );
    let excused = gate::expected_failures(s);
    for c in &s.checks {
        let ex: Vec<String> = c.examples.iter().map(i64::to_string).collect();
        let mark = if excused.contains(&c.name) {
            format!("{} <span class=muted>as expected</span>", verdict(false))
        } else {
            verdict(c.passed).to_string()
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=n>{}</td><td>{}</td><td>{}</td></tr>",
            mark,
            escape(c.name.name()),
            c.violations,
            escape(&c.detail),
            ex.join(", ")
        );
    }
    o.push_str("</table>");
}

/// The "Example jobs" section of report.html.
pub(crate) fn example_jobs(o: &mut String, lanes: &[Swimlane]) {
    if lanes.is_empty() {
        return;
    }
    o.push_str(
        "<h2>Example jobs</h2><p class=muted>Up to five example jobs of each failed check, from the run's \
         history (<code>queuebench explain RUN_DIR --job N</code> tells the same story in words). Hover a mark for its time.</p>",
    );
    for l in lanes {
        let _ = write!(o, "<h3>job {} · {}</h3><figure>{}<figcaption>", l.job, escape(&l.check), l.svg);
        for c in &l.causes {
            let _ = write!(o, "<div>→ {}</div>", escape(c));
        }
        o.push_str("</figcaption></figure>");
    }
}

fn latencies(o: &mut String, s: &RunSummary) {
    o.push_str("<h2>Latency (ms)</h2><table><tr><th></th><th>count</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
    let l = &s.latency_ms;
    for (name, p) in [
        ("claim statement", &l.claim),
        ("claim transaction", &l.claim_tx),
        ("work", &l.work),
        ("complete", &l.complete),
        ("end to end", &l.end_to_end),
    ] {
        latency_row(o, name, p);
    }
    for (class, p) in l.queue_wait.iter().filter(|(_, p)| p.count > 0) {
        latency_row(o, &format!("queue wait · {class}"), p);
    }
    o.push_str("</table><p class=muted>Queue wait and end to end count from each job's intended enqueue time.");
    if s.mode.starts_with("client ") {
        o.push_str(
            " A process client's claim and completion are the library's own statements, sent from inside its worker: \
             not measured here. Work is the handler's span (its start to its end line).",
        );
    }
    o.push_str("</p>");
}

fn environment(o: &mut String, s: &RunSummary) {
    o.push_str("<h2>Environment</h2>");
    let env = &s.environment;
    let settings: Vec<String> = env.pg_settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let pairs = [
        ("machine", format!("{} cores · {:.1} GiB · {}", env.cores, env.memory_gib, env.os)),
        ("queuebench", s.queuebench_version.clone()),
        ("non-default pg_settings", settings.join(" · ")),
    ];
    rows(o, &pairs);
}

/// After a pass: ` (3 checks failed as the scenario expects: exactly_once, …)`, muted; else nothing.
fn expected(s: &RunSummary) -> String {
    match gate::expected_note(&gate::expected_failures(s)) {
        Some(note) if s.passed => format!(" <small class=muted>({})</small>", escape(&note)),
        _ => String::new(),
    }
}

fn verdict_word(status: &str) -> String {
    let class = if status == "PASSED" { "ok" } else { "fail" };
    format!("<span class={class}>{status}</span>")
}

/// Several runs side by side.
/// `versions`: the version matrix's section (`versions::html`), or empty.
pub(crate) fn comparison(runs: &[ComparedRun], versions: &str, charts: &[Chart]) -> String {
    let mut o = String::from("<h1>queuebench comparison</h1>");
    o.push_str(versions);
    o.push_str(&runs_table(runs));
    figures(&mut o, charts);
    page("queuebench comparison", &o)
}

/// The table of several runs, one row each, with a link to its report.
pub(crate) fn runs_table(runs: &[ComparedRun]) -> String {
    let mut o = String::from(
        "<table><tr><th>scenario</th><th>strategy · mode</th><th>jobs/s</th><th>claim p99 ms</th><th>duplicate executions</th><th>distinct jobs</th><th>lost</th><th>verdict</th><th>report</th></tr>",
    );
    for ComparedRun { summary: s, report: link } in runs {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{} · {}</td><td class=n>{:.1}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td><a href=\"{}\">report</a></td></tr>",
            escape(&s.scenario),
            escape(&s.strategy),
            escape(&s.mode),
            s.throughput.jobs_per_sec,
            if s.latency_ms.claim.count > 0 { format!("{:.2}", s.latency_ms.claim.p99) } else { "—".into() },
            s.executions.duplicate,
            s.executions.distinct_jobs,
            s.jobs.lost,
            verdict(s.passed).to_string() + &expected(s),
            escape(link)
        );
    }
    o.push_str("</table>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_latency_nobody_measured_is_a_dash_in_the_runs_table() {
        let mut measured = RunSummary { scenario: "m".into(), ..Default::default() };
        measured.latency_ms.claim = Percentiles { count: 10, p99: 1.5, ..Default::default() };
        let client = RunSummary { scenario: "c".into(), ..Default::default() };
        let t = runs_table(&[
            ComparedRun { summary: measured, report: "m.html".into() },
            ComparedRun { summary: client, report: "c.html".into() },
        ]);
        assert!(t.contains("<td class=n>1.50</td>"), "{t}");
        assert!(t.contains("<td class=n>—</td>") && !t.contains("<td class=n>0.00</td>"), "{t}");
    }

    #[test]
    fn report_escapes_and_embeds() {
        let mut s = RunSummary { scenario: "<x>".into(), passed: true, ..Default::default() };
        s.latency_ms.queue_wait.insert("high".into(), Percentiles { count: 3, ..Default::default() });
        s.latency_ms.queue_wait.insert("idle".into(), Percentiles::default());
        let chart = Chart { name: "t".into(), caption: "t".into(), svg: "<svg id=c></svg>".into(), png: Vec::new() };
        let html = report(&s, &[chart], &[], "name = \"<x>\"");
        assert!(html.contains("&lt;x&gt;") && !html.contains("<x>"));
        assert!(html.contains("<svg id=c></svg>"));
        assert!(html.contains("queue wait · high"));
        assert!(!html.contains("queue wait · idle"), "classes without jobs are left out");
        assert!(!html.contains("<script"), "self-contained, no scripts");
    }
}
