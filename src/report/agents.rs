//! A run across agents in the terminal and in report.html: one line (one table row) per
//! agent, side by side, with its share, what it did, and its clock against the server's.

use super::escape::escape;
use crate::model::summary::{AgentFigures, AgentOutcome, RunSummary};
use std::fmt::Write;

/// "+12 µs ± 40 µs", and the same at the end when measured.
fn clock(a: &AgentFigures) -> String {
    let mut t = format!("{:+} µs ± {} µs", a.clock_offset_us, a.clock_bound_us);
    if let (Some(o), Some(b)) = (a.clock_offset_end_us, a.clock_bound_end_us) {
        let _ = write!(t, " (end {o:+} µs ± {b} µs)");
    }
    t
}

fn p99(a: &AgentFigures) -> String {
    a.claim_p99_ms.map_or("—".into(), |p| format!("{p:.2} ms"))
}

/// The terminal's lines: a head line, then one per agent.
pub(crate) fn lines(s: &RunSummary) -> Vec<(&'static str, String)> {
    if s.agents.is_empty() {
        return Vec::new();
    }
    let finished = s.agents.iter().filter(|a| a.state == AgentOutcome::Finished).count();
    let merge = format!("evidence merged in {:.2} s", s.timings.merge_s);
    let mut out = vec![("agents", format!("{finished} of {} finished · {merge}", s.agents.len()))];
    for a in &s.agents {
        let mut line = format!(
            "{} {} [{}] · workers {}..={} · {} jobs · {:.1} jobs/s · claim p99 {} · {} errors · clock {}",
            a.agent,
            a.name,
            a.state,
            a.first_worker,
            a.last_worker,
            a.jobs,
            a.jobs_per_sec,
            p99(a),
            a.errors,
            clock(a)
        );
        if a.recovered_executions > 0 {
            let _ = write!(line, " · {} executions recovered", a.recovered_executions);
        }
        if !a.note.is_empty() {
            let _ = write!(line, " · {}", a.note);
        }
        out.push(("  agent", line));
    }
    out
}

/// report.html's "Agents" table (nothing for a local run).
pub(crate) fn table(o: &mut String, s: &RunSummary) {
    if s.agents.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<h2>Agents</h2><p class=muted>The run's workers ran in {} agents that met through the database \
         (docs/agents.md); their evidence was merged in {:.2} s and checked once. Clock: the agent's clock \
         minus the server's, within ± the bound, at the start and the end.</p><table><tr><th>agent</th>\
         <th>name</th><th>state</th><th>workers</th><th>jobs</th><th>jobs/s</th><th>claims</th>\
         <th>claim p99</th><th>errors</th><th>clock</th><th>recovered</th><th>note</th></tr>",
        s.agents.len(),
        s.timings.merge_s
    );
    for a in &s.agents {
        let _ = write!(
            o,
            "<tr><td class=n>{}</td><td>{}</td><td>{}</td><td>{}..={}</td><td class=n>{}</td><td class=n>{:.1}</td>\
             <td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td><td>{}</td></tr>",
            a.agent,
            escape(&a.name),
            escape(a.state.name()),
            a.first_worker,
            a.last_worker,
            a.jobs,
            a.jobs_per_sec,
            a.claims,
            p99(a),
            a.errors,
            escape(&clock(a)),
            a.recovered_executions,
            escape(&a.note)
        );
    }
    o.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_and_one_row_per_agent() {
        let mut s = RunSummary::default();
        assert!(lines(&s).is_empty());
        s.agents = vec![
            AgentFigures {
                agent: 1,
                name: "a<1>".into(),
                state: AgentOutcome::Finished,
                jobs: 10,
                ..Default::default()
            },
            AgentFigures {
                agent: 2,
                state: AgentOutcome::Absent,
                note: "it never joined".into(),
                ..Default::default()
            },
        ];
        let l = lines(&s);
        assert_eq!(l.len(), 3);
        assert!(l[0].1.starts_with("1 of 2 finished"), "{}", l[0].1);
        assert!(l[2].1.contains("it never joined"));
        let mut html = String::new();
        table(&mut html, &s);
        assert_eq!(html.matches("<tr>").count(), 3);
        assert!(html.contains("a&lt;1&gt;"));
    }
}
