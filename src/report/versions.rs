//! The version matrix of `run --pg-version 14,15,16` (`compare::versions`) as `versions.md`,
//! `versions.csv` and the section on top of comparison.html: per scenario and major, jobs/s,
//! claim p99 and dead tuples (median and min–max over the repeats), every check's verdict, and
//! with repeats each major against the first (change of the median, the rank test's p).

use super::escape::escape;
use crate::compare::stats::{Spread, num};
use crate::compare::versions::{COMPARED, VersionGroup, word};
use crate::compare::{Row, Verdict};
use std::fmt::Write;

fn version(g: &VersionGroup) -> String {
    if g.server_version.is_empty() { g.major.map_or("?".into(), |m| m.to_string()) } else { g.server_version.clone() }
}

fn spread(s: &Option<Spread>) -> String {
    s.as_ref().map_or("—".into(), |s| s.show())
}

/// A check's cell: `ok`, or in how many runs it failed.
fn check_cell(g: &VersionGroup, check: &str) -> String {
    match g.checks.iter().find(|(c, _)| c == check) {
        None => "—".into(),
        Some((_, 0)) => "ok".into(),
        Some(_) if g.runs == 1 => "FAILED".into(),
        Some((_, n)) => format!("FAILED in {n} of {}", g.runs),
    }
}

/// One comparison row in words: `-12.5% (p 0.05): worse`.
fn against(row: &Option<Row>) -> String {
    let Some(r) = row else { return "—".into() };
    if r.verdict == Verdict::Missing {
        return word(r.verdict).into();
    }
    let change = r.change.map_or("–".into(), |c| format!("{:+.1}%", c * 100.0));
    let p = r.p.map_or(String::new(), |p| format!(", p {}", num((p * 1000.0).round() / 1000.0)));
    format!("{change}{p}: {}", word(r.verdict))
}

fn scenarios(groups: &[VersionGroup]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for g in groups {
        if !out.contains(&g.scenario.as_str()) {
            out.push(&g.scenario);
        }
    }
    out
}

/// The checks any major of `scenario` ran, in their first order.
fn check_names<'a>(groups: &[&'a VersionGroup]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for (c, _) in groups.iter().flat_map(|g| &g.checks) {
        if !out.contains(&c.as_str()) {
            out.push(c);
        }
    }
    out
}

/// versions.md: per scenario, the figures per major, the checks per major, and with repeats
/// each major against the first.
pub(crate) fn markdown(groups: &[VersionGroup]) -> String {
    let mut o = String::from(
        "Values: median (min–max) over each major's runs. Dead tuples: `n_dead_tup` of the jobs table as the sampler saw it.\n",
    );
    for scenario in scenarios(groups) {
        let these: Vec<&VersionGroup> = groups.iter().filter(|g| g.scenario == scenario).collect();
        let _ = write!(o, "\n### {scenario}\n\n| PostgreSQL | runs |");
        for (_, title) in COMPARED {
            let _ = write!(o, " {title} |");
        }
        o.push_str(" verdict |\n|---|---|");
        o.push_str(&"---|".repeat(COMPARED.len() + 1));
        o.push('\n');
        for g in &these {
            let _ = write!(o, "| {} | {} |", version(g), g.runs);
            for f in &g.figures {
                let _ = write!(o, " {} |", spread(f));
            }
            let _ = writeln!(o, " {} |", g.verdict());
        }
        let checks = check_names(&these);
        if !checks.is_empty() {
            o.push_str("\n| check |");
            for g in &these {
                let _ = write!(o, " {} |", version(g));
            }
            o.push_str("\n|---|");
            o.push_str(&"---|".repeat(these.len()));
            o.push('\n');
            for c in checks {
                let _ = write!(o, "| {c} |");
                for g in &these {
                    let _ = write!(o, " {} |", check_cell(g, c));
                }
                o.push('\n');
            }
        }
        if let Some(first) = these.first().filter(|_| these.iter().any(|g| g.against_first.is_some())) {
            let _ = write!(
                o,
                "\nAgainst {} (change of the median; p: the rank test's, with 3 runs a side or more):\n\n| PostgreSQL |",
                version(first)
            );
            for (_, title) in COMPARED {
                let _ = write!(o, " {title} |");
            }
            o.push_str("\n|---|");
            o.push_str(&"---|".repeat(COMPARED.len()));
            o.push('\n');
            for g in these.iter().skip(1) {
                let _ = write!(o, "| {} |", version(g));
                for i in 0..COMPARED.len() {
                    let row = g.against_first.as_ref().and_then(|a| a[i].clone());
                    let _ = write!(o, " {} |", against(&row));
                }
                o.push('\n');
            }
        }
    }
    o
}

/// versions.csv: one row per scenario and major; the figures' median, min and max, the change
/// against the first major with its p-value and word, the verdict, then one column per check.
pub(crate) fn csv(groups: &[VersionGroup]) -> String {
    let mut all_checks: Vec<&str> = Vec::new();
    for (c, _) in groups.iter().flat_map(|g| &g.checks) {
        if !all_checks.contains(&c.as_str()) {
            all_checks.push(c);
        }
    }
    let mut header: Vec<String> =
        ["scenario", "major", "server_version", "runs", "passed_runs"].map(String::from).to_vec();
    for (m, _) in COMPARED {
        for part in ["median", "min", "max", "change_vs_first", "p_vs_first", "vs_first"] {
            header.push(format!("{m}.{part}"));
        }
    }
    header.push("verdict".into());
    header.extend(all_checks.iter().map(|c| format!("checks.{c}.failed_runs")));
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&header);
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for g in groups {
        let mut row = vec![
            g.scenario.clone(),
            g.major.map(|m| m.to_string()).unwrap_or_default(),
            g.server_version.clone(),
            g.runs.to_string(),
            g.passed.to_string(),
        ];
        for (i, f) in g.figures.iter().enumerate() {
            row.extend([opt(f.map(|s| s.median)), opt(f.map(|s| s.min)), opt(f.map(|s| s.max))]);
            let r = g.against_first.as_ref().and_then(|a| a[i].as_ref());
            row.extend([
                opt(r.and_then(|r| r.change)),
                opt(r.and_then(|r| r.p)),
                r.map(|r| word(r.verdict).to_string()).unwrap_or_default(),
            ]);
        }
        row.push(g.verdict());
        for c in &all_checks {
            row.push(g.checks.iter().find(|(x, _)| x == c).map(|(_, n)| n.to_string()).unwrap_or_default());
        }
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The matrix as HTML, for the top of comparison.html.
pub(crate) fn html(groups: &[VersionGroup]) -> String {
    let mut o = String::from("<h2>PostgreSQL versions</h2><p>Values: median (min–max) over each major's runs.</p>");
    for scenario in scenarios(groups) {
        let these: Vec<&VersionGroup> = groups.iter().filter(|g| g.scenario == scenario).collect();
        let _ = write!(o, "<h3>{}</h3><table><tr><th>row</th>", escape(scenario));
        for g in &these {
            let _ = write!(o, "<th>PostgreSQL {}</th>", escape(&version(g)));
        }
        o.push_str("</tr>");
        let mut line = |title: &str, cell: &dyn Fn(&VersionGroup) -> String| {
            let _ = write!(o, "<tr><td>{}</td>", escape(title));
            for g in &these {
                let _ = write!(o, "<td class=n>{}</td>", escape(&cell(g)));
            }
            o.push_str("</tr>");
        };
        line("runs", &|g| g.runs.to_string());
        for (i, (_, title)) in COMPARED.iter().enumerate() {
            line(title, &|g| spread(&g.figures[i]));
            if these.iter().any(|g| g.against_first.is_some()) {
                line(&format!("{title} against the first"), &|g| {
                    against(&g.against_first.as_ref().and_then(|a| a[i].clone()))
                });
            }
        }
        for c in check_names(&these) {
            line(&format!("check {c}"), &|g| check_cell(g, c));
        }
        line("verdict", &|g| g.verdict());
        o.push_str("</table>");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::versions::groups;
    use crate::model::check::Check;
    use crate::model::summary::{CheckResult, RunSummary};

    fn run(major: u32, jobs_per_sec: f64, fails: bool) -> RunSummary {
        let mut s = RunSummary { scenario: "naive".into(), passed: !fails, ..Default::default() };
        s.database.server_major = Some(major);
        s.database.server_version = format!("{major}.2");
        s.throughput.jobs_per_sec = jobs_per_sec;
        s.dead_tuples.peak = 40;
        s.checks.push(CheckResult { name: Check::ExactlyOnce, passed: !fails, ..Default::default() });
        s
    }

    #[test]
    fn every_format_has_each_major_its_figures_and_checks() {
        let runs = [run(14, 900.0, false), run(17, 500.0, true), run(14, 1000.0, false), run(17, 520.0, false)];
        let g = groups(&runs, |_| None);
        let md = markdown(&g);
        assert!(md.contains("| 14.2 | 2 | 950 (900–1000) | — | 40 | 0 | PASSED |"), "{md}");
        assert!(md.contains("| exactly_once | ok | FAILED in 1 of 2 |"), "{md}");
        assert!(md.contains("| 17.2 | -46.3%: worse |"), "{md}");
        let csv = csv(&g);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("scenario,major,server_version,runs,passed_runs,throughput.jobs_per_sec.median,"));
        assert!(lines[0].ends_with(",verdict,checks.exactly_once.failed_runs"), "{}", lines[0]);
        assert!(lines[2].starts_with("naive,17,17.2,2,1,510,500,520,"), "{}", lines[2]);
        assert!(lines[2].ends_with(",FAILED (1 of 2 runs: exactly_once),1"), "{}", lines[2]);
        let h = html(&g);
        assert!(h.contains("<th>PostgreSQL 14.2</th><th>PostgreSQL 17.2</th>"), "{h}");
        assert!(h.contains("<td>check exactly_once</td><td class=n>ok</td><td class=n>FAILED in 1 of 2</td>"), "{h}");
    }
}
