//! The swimlanes of report.html: up to five example jobs of each failed check drawn against
//! time, one lane per worker that touched the job. Each claim's lease window is a light bar,
//! the time its worker believed it owned the job a darker bar inside it, the claim's round trip
//! a thin line before it; an execution is an amber bar of its work; writes are marks (a green
//! dot accepted, a red cross rejected), heartbeats ticks, an abandon a grey square, and faults
//! red lines. A network fault on an agent's path (partition, latency, loss) is a hatched band
//! across the lanes of that agent's workers for as long as it lasted. Every mark has a tooltip
//! with its time. The causes `explain` prints go under it.
//! Plain SVG: no scripts, no fonts needed beyond the page's.

use crate::collect::{Event, EventKind, FaultEvent, ReapEvent};
use crate::model::records::{JobRow, NetworkSpan};
use crate::model::summary::CheckResult;
use crate::verify::claims::{ClaimSpan, spans};
use crate::verify::story::story;
use crate::verify::time::secs;
use std::fmt::Write;
use std::time::Duration;

/// Example jobs drawn per failed check.
pub(crate) const PER_CHECK: usize = 5;

/// One example job, drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Swimlane {
    pub check: String,
    pub job: i64,
    pub svg: String,
    /// What went wrong, one line each (as `explain` says it).
    pub causes: Vec<String>,
}

/// What the swimlanes are drawn from: the run's journal and faults, the final table, the lease.
pub(crate) struct Source<'a> {
    pub journal: &'a [Event],
    pub faults: &'a [FaultEvent],
    /// The jobs the reaper took back (told in the causes).
    pub reaps: &'a [ReapEvent],
    pub final_jobs: &'a [JobRow],
    pub lease: Duration,
    /// The agents' clock error bound, µs (`verify::claims::race_tolerance`).
    pub clock_us: u64,
    pub hold_transaction: bool,
    /// The network faults on agents' paths, each with the workers it hit.
    pub network: &'a [NetworkSpan],
}

/// The swimlanes of every failed check's first examples (a job shown once, under its first check).
pub(crate) fn swimlanes(checks: &[CheckResult], src: &Source) -> Vec<Swimlane> {
    let mut wanted: Vec<(String, i64)> = Vec::new();
    for c in checks.iter().filter(|c| !c.passed) {
        for job in c.examples.iter().take(PER_CHECK) {
            if !wanted.iter().any(|(_, j)| j == job) {
                wanted.push((c.name.to_string(), *job));
            }
        }
    }
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut events: Vec<Vec<Event>> = vec![Vec::new(); wanted.len()];
    for e in src.journal {
        if let Some(i) = wanted.iter().position(|(_, j)| *j == e.job) {
            events[i].push(*e);
        }
    }
    wanted
        .into_iter()
        .zip(events)
        .filter(|(_, evs)| !evs.is_empty())
        .map(|((check, job), mut evs)| {
            evs.sort_by_key(|e| (e.t_us, e.kind));
            let faults: Vec<&FaultEvent> = src.faults.iter().filter(|f| f.job == Some(job)).collect();
            let row = src.final_jobs.iter().find(|r| r.id == job);
            // The story picks the job's own faults out of the run's.
            let causes =
                story(&evs, (src.faults, src.reaps), row, (src.lease, src.hold_transaction, src.clock_us)).causes;
            let claims = spans(&evs, src.lease, src.hold_transaction);
            let reaps: Vec<&ReapEvent> = src.reaps.iter().filter(|r| r.job == job).collect();
            let svg = draw(&evs, &claims, (&faults, &reaps), src.network);
            Swimlane { check, job, svg, causes }
        })
        .collect()
}

const WIDTH: f64 = 960.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 26.0;
const LANE: f64 = 30.0;

/// The time window shown: from the first claim sent to the last thing that happened, with a
/// lease end beyond it shown only up to as far again (a 30 s lease would flatten 10 ms of race).
fn window(evs: &[Event], claims: &[ClaimSpan], faults: &[&FaultEvent]) -> (u64, u64) {
    let start = claims.iter().map(|c| c.sent_us).chain(evs.iter().map(|e| e.t_us)).chain(faults.iter().map(|f| f.t_us));
    let t0 = start.min().unwrap_or(0);
    let ends = evs.iter().map(|e| e.t_us + if is_write(e.kind) { u64::from(e.dur_us) } else { 0 });
    let last = ends.chain(faults.iter().map(|f| f.t_us)).max().unwrap_or(t0);
    let lease_end = claims.iter().map(|c| c.lease_end_us).max().unwrap_or(last);
    let span = (last - t0).max(1_000);
    let t1 = lease_end.clamp(last, last + span);
    let pad = (t1 - t0) / 40 + 1;
    (t0.saturating_sub(pad), t1 + pad)
}

fn is_write(k: EventKind) -> bool {
    matches!(
        k,
        EventKind::Accepted
            | EventKind::Rejected
            | EventKind::FailAccepted
            | EventKind::FailRejected
            | EventKind::HeartbeatOk
            | EventKind::HeartbeatRejected
    )
}

struct Axis {
    t0: u64,
    t1: u64,
}

impl Axis {
    fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.t0, self.t1);
        LEFT + (t - self.t0) as f64 / (self.t1 - self.t0).max(1) as f64 * (WIDTH - LEFT - RIGHT)
    }
}

fn draw(
    evs: &[Event],
    claims: &[ClaimSpan],
    (faults, reaps): (&[&FaultEvent], &[&ReapEvent]),
    network: &[NetworkSpan],
) -> String {
    let mut workers: Vec<u32> = evs.iter().map(|e| e.worker).collect();
    workers.extend(faults.iter().filter_map(|f| f.worker));
    workers.sort_unstable();
    workers.dedup();
    let lane = |w: u32| TOP + workers.iter().position(|x| *x == w).unwrap_or(0) as f64 * LANE;
    let (t0, t1) = window(evs, claims, faults);
    let ax = Axis { t0, t1 };
    // The network faults that overlap the window and hit a worker drawn here.
    let bands: Vec<&NetworkSpan> =
        network.iter().filter(|s| s.start_us <= t1 && s.end_us >= t0 && workers.iter().any(|w| s.hits(*w))).collect();
    let legend_rows = if bands.is_empty() { 1.0 } else { 2.0 };
    let height = TOP + workers.len() as f64 * LANE + 18.0 + 16.0 * legend_rows;
    let mut o = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {height}' width='{WIDTH}' height='{height}' \
         font-family='DejaVu Sans,sans-serif' font-size='11'>"
    );
    let bottom = TOP + workers.len() as f64 * LANE;
    ticks(&mut o, &ax, bottom);
    for (i, w) in workers.iter().enumerate() {
        let y = lane(*w);
        let shade = if i % 2 == 0 { "#fafafa" } else { "#ffffff" };
        let _ = write!(o, "<rect x='{LEFT}' y='{y}' width='{}' height='{LANE}' fill='{shade}'/>", WIDTH - LEFT - RIGHT);
        let _ = write!(o, "<text x='6' y='{}'>w{w}</text>", y + LANE / 2.0 + 4.0);
    }
    if !bands.is_empty() {
        o.push_str(NET_PATTERN);
    }
    for s in &bands {
        for w in workers.iter().filter(|w| s.hits(**w)) {
            network_band(&mut o, &ax, s, lane(*w));
        }
    }
    for c in claims {
        claim_bars(&mut o, &ax, c, lane(c.worker));
    }
    for e in evs {
        mark(&mut o, &ax, e, lane(e.worker));
    }
    for f in faults {
        let x = ax.x(f.t_us);
        let (y0, y1) = match f.worker {
            Some(w) => (lane(w), lane(w) + LANE),
            None => (TOP, TOP + workers.len() as f64 * LANE),
        };
        let _ = write!(
            o,
            "<line x1='{x:.1}' y1='{y0}' x2='{x:.1}' y2='{y1}' stroke='#cf222e' stroke-width='2' stroke-dasharray='4 2'>\
             <title>fault: {} at t={}</title></line>",
            f.kind,
            secs(f.t_us)
        );
    }
    for r in reaps {
        reap_line(&mut o, &ax, r, bottom);
    }
    legend(&mut o, bottom + 22.0);
    if !bands.is_empty() {
        network_legend(&mut o, bottom + 38.0, &bands);
    }
    o.push_str("</svg>");
    o
}

/// The reaper taking the job back: a dotted line across every lane (the reaper is no worker).
fn reap_line(o: &mut String, ax: &Axis, r: &ReapEvent, bottom: f64) {
    let x = ax.x(r.t_us);
    let _ = write!(
        o,
        "<line class='reap' x1='{x:.1}' y1='{TOP}' x2='{x:.1}' y2='{bottom}' stroke='#9a6700' stroke-width='2' \
         stroke-dasharray='1 3'><title>the reaper {} at t={}</title></line>",
        r.action.did(),
        secs(r.t_us)
    );
}

/// The hatching of a network fault's band.
const NET_PATTERN: &str = "<defs><pattern id='qb-net' width='6' height='6' patternUnits='userSpaceOnUse' \
     patternTransform='rotate(45)'><rect width='6' height='6' fill='#8250df' fill-opacity='0.10'/>\
     <line x1='0' y1='0' x2='0' y2='6' stroke='#8250df' stroke-opacity='0.45' stroke-width='2'/></pattern></defs>";

/// A network fault across one worker's lane, from when it took effect to when it was lifted
/// (clipped to the window); the legend names it.
fn network_band(o: &mut String, ax: &Axis, s: &NetworkSpan, y: f64) {
    let (x0, x1) = (ax.x(s.start_us), ax.x(s.end_us));
    let _ = write!(
        o,
        "<rect class='net-fault' x='{x0:.1}' y='{y:.1}' width='{:.1}' height='{LANE}' fill='url(#qb-net)' \
         stroke='#8250df' stroke-opacity='0.6' stroke-dasharray='2 2'>\
         <title>network {} of agent {} (its workers' path to the server) from t={} to t={}</title></rect>",
        (x1 - x0).max(2.0),
        s.kind,
        s.agent,
        secs(s.start_us),
        secs(s.end_us)
    );
}

/// The network faults' legend entry, on a row of its own: each one drawn, by kind, agent and time.
fn network_legend(o: &mut String, y: f64, bands: &[&NetworkSpan]) {
    let what: Vec<String> = bands
        .iter()
        .map(|s| {
            format!(
                "network {} · agent {}, {:.1}–{:.1} s",
                s.kind,
                s.agent,
                s.start_us as f64 / 1e6,
                s.end_us as f64 / 1e6
            )
        })
        .collect();
    let _ = write!(
        o,
        "<g transform='translate({LEFT:.0},{:.0})'><rect width='14' height='9' fill='url(#qb-net)' stroke='#8250df' \
         stroke-opacity='0.6'/></g><text x='{:.0}' y='{y:.0}' fill='#444'>{} (the lanes of that agent's workers)</text>",
        y - 8.0,
        LEFT + 18.0,
        what.join("; ")
    );
}

/// Time ticks along the top, in run seconds.
fn ticks(o: &mut String, ax: &Axis, bottom: f64) {
    let span = (ax.t1 - ax.t0).max(1) as f64;
    let raw = span / 6.0;
    let step = [1.0, 2.0, 5.0].iter().map(|m| m * 10f64.powf(raw.log10().floor())).find(|s| *s >= raw).unwrap_or(raw);
    let step = step.max(1.0) as u64;
    let mut t = ax.t0.div_ceil(step) * step;
    let decimals = if step >= 1_000_000 {
        0
    } else if step >= 100_000 {
        1
    } else if step >= 10_000 {
        2
    } else {
        3
    };
    while t <= ax.t1 {
        let x = ax.x(t);
        let _ = write!(
            o,
            "<line x1='{x:.1}' y1='{}' x2='{x:.1}' y2='{bottom}' stroke='#e5e5e5'/>\
             <text x='{x:.1}' y='{}' text-anchor='middle' fill='#666'>{:.decimals$} s</text>",
            TOP - 4.0,
            TOP - 8.0,
            t as f64 / 1e6
        );
        t += step;
    }
}

/// A claim: its round trip, its lease window, and how long its worker believed it owned the job.
fn claim_bars(o: &mut String, ax: &Axis, c: &ClaimSpan, y: f64) {
    let (xs, xr, xl) = (ax.x(c.sent_us), ax.x(c.start_us), ax.x(c.lease_end_us));
    let _ = write!(
        o,
        "<line x1='{xs:.1}' y1='{m:.1}' x2='{xr:.1}' y2='{m:.1}' stroke='#6ea8fe' stroke-width='1'/>\
         <rect x='{xr:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='#cfe2ff'>\
         <title>w{} claim {} (attempt {}): sent t={}, returned t={}, lease until t={}</title></rect>",
        y + 5.0,
        (xl - xr).max(1.0),
        LANE - 10.0,
        c.worker,
        c.claim,
        c.attempt,
        secs(c.sent_us),
        secs(c.start_us),
        secs(c.lease_end_us),
        m = y + LANE / 2.0,
    );
    let until = c.released_us.unwrap_or(ax.t1);
    let xo = ax.x(until);
    let _ = write!(
        o,
        "<rect x='{xr:.1}' y='{:.1}' width='{:.1}' height='6' fill='#3d8bfd'>\
         <title>w{} believed it owned the job from t={} to {}</title></rect>",
        y + 8.0,
        (xo - xr).max(1.0),
        c.worker,
        secs(c.start_us),
        c.released_us.map_or("the end".into(), |r| format!("t={}", secs(r)))
    );
}

/// One event's mark in its worker's lane. A completion or failure is marked where its answer
/// came back, after a dashed line from where it was sent when that is visibly apart (a write
/// that waited in a partition arrives late, and the lane shows it).
fn mark(o: &mut String, ax: &Axis, e: &Event, y: f64) {
    let mut x = ax.x(e.t_us);
    let m = y + LANE / 2.0 + 3.0;
    let mut title = format!("<title>w{} {} at t={}</title>", e.worker, e.kind.name(), secs(e.t_us));
    let write =
        matches!(e.kind, EventKind::Accepted | EventKind::FailAccepted | EventKind::Rejected | EventKind::FailRejected);
    let answered = ax.x(e.t_us + u64::from(e.dur_us));
    if write && answered - x >= 3.0 {
        title = format!(
            "<title>w{} {} sent at t={}, answered at t={}</title>",
            e.worker,
            e.kind.name(),
            secs(e.t_us),
            secs(e.t_us + u64::from(e.dur_us))
        );
        let _ = write!(
            o,
            "<line x1='{x:.1}' y1='{m:.1}' x2='{answered:.1}' y2='{m:.1}' stroke='#888' stroke-width='1.5' \
             stroke-dasharray='3 2'>{title}</line>"
        );
        x = answered;
    }
    let _ = match e.kind {
        EventKind::Claimed => Ok(()),
        EventKind::Executed => {
            let xs = ax.x(e.t_us.saturating_sub(u64::from(e.dur_us)));
            write!(
                o,
                "<rect x='{xs:.1}' y='{:.1}' width='{:.1}' height='6' fill='#f0ad00'>{title}</rect>",
                y + 16.0,
                (x - xs).max(2.0)
            )
        }
        EventKind::Accepted | EventKind::FailAccepted => {
            write!(o, "<circle cx='{x:.1}' cy='{m:.1}' r='5' fill='#1a7f37'>{title}</circle>")
        }
        EventKind::Rejected | EventKind::FailRejected => write!(
            o,
            "<path d='M{:.1},{:.1} l8,8 m0,-8 l-8,8' stroke='#cf222e' stroke-width='2.5'>{title}</path>",
            x - 4.0,
            m - 4.0
        ),
        EventKind::HeartbeatOk | EventKind::HeartbeatRejected => {
            let color = if e.kind == EventKind::HeartbeatOk { "#1a7f37" } else { "#cf222e" };
            write!(
                o,
                "<line x1='{x:.1}' y1='{:.1}' x2='{x:.1}' y2='{:.1}' stroke='{color}' stroke-width='2'>{title}</line>",
                y + 3.0,
                y + LANE - 3.0
            )
        }
        EventKind::Abandoned => {
            write!(o, "<rect x='{:.1}' y='{:.1}' width='8' height='8' fill='#888'>{title}</rect>", x - 4.0, m - 4.0)
        }
        // A completion whose answer was lost: an open circle (it may or may not have landed).
        EventKind::CompleteUnknown => {
            write!(
                o,
                "<circle cx='{x:.1}' cy='{m:.1}' r='5' fill='none' stroke='#888' stroke-width='2'>{title}</circle>"
            )
        }
    };
}

fn legend(o: &mut String, y: f64) {
    let items: [(&str, &str); 8] = [
        ("<rect width='14' height='9' fill='#cfe2ff'/>", "lease window"),
        ("<rect y='2' width='14' height='5' fill='#3d8bfd'/>", "believed owned"),
        ("<rect y='2' width='14' height='5' fill='#f0ad00'/>", "work"),
        ("<circle cx='5' cy='4' r='4' fill='#1a7f37'/>", "write accepted"),
        ("<path d='M1,0 l8,8 m0,-8 l-8,8' stroke='#cf222e' stroke-width='2'/>", "rejected"),
        ("<rect x='1' width='8' height='8' fill='#888'/>", "abandoned"),
        (
            "<line x1='0' y1='4' x2='14' y2='4' stroke='#888' stroke-width='1.5' stroke-dasharray='3 2'/>",
            "write in flight",
        ),
        ("<line x1='5' y1='-1' x2='5' y2='10' stroke='#cf222e' stroke-width='2' stroke-dasharray='3 2'/>", "fault"),
    ];
    let mut x = LEFT;
    for (shape, label) in items {
        let _ = write!(o, "<g transform='translate({x:.0},{:.0})'>{shape}</g>", y - 8.0);
        let _ = write!(o, "<text x='{:.0}' y='{y:.0}' fill='#444'>{}</text>", x + 18.0, label);
        x += 30.0 + label.len() as f64 * 6.6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::*;
    use crate::model::check::Check;

    fn ev(t_us: u64, job: i64, worker: u32, claim: u32, kind: EventKind) -> Event {
        Event { t_us, job, attempt: 1, worker, claim, kind, dur_us: 100, token: 0 }
    }

    #[test]
    fn a_race_draws_two_lanes_each_with_its_claim_work_and_write() {
        let journal = [
            ev(1_000, 7, 1, 1, Claimed),
            ev(1_100, 7, 2, 1, Claimed),
            ev(2_000, 7, 1, 1, Executed),
            ev(2_100, 7, 2, 1, Executed),
            ev(3_000, 7, 1, 1, Accepted),
            ev(3_100, 7, 2, 1, Rejected),
            ev(500, 8, 3, 1, Claimed),
        ];
        let failed = CheckResult {
            name: Check::ExactlyOnce,
            passed: false,
            violations: 1,
            detail: String::new(),
            examples: vec![7],
        };
        let passed = CheckResult { name: Check::NoLostJobs, passed: true, examples: vec![8], ..failed.clone() };
        let src = Source {
            journal: &journal,
            faults: &[],
            reaps: &[],
            final_jobs: &[],
            lease: Duration::from_secs(30),
            hold_transaction: false,
            clock_us: 0,
            network: &[],
        };
        let lanes = swimlanes(&[failed, passed], &src);
        assert_eq!(lanes.len(), 1, "only failed checks are drawn");
        let svg = &lanes[0].svg;
        assert!(svg.contains(">w1<") && svg.contains(">w2<") && !svg.contains(">w3<"), "{svg}");
        assert_eq!(svg.matches("fill='#cfe2ff'>").count(), 2, "two lease windows");
        assert_eq!(svg.matches("fill='#f0ad00'>").count(), 2, "two executions");
        assert!(svg.contains("complete_rejected sent at t=0.003 s, answered at t=0.003 s"), "{svg}");
        assert!(lanes[0].causes.iter().any(|c| c.contains("racing claim")), "{:?}", lanes[0].causes);
        let mut page = String::new();
        crate::report::html::example_jobs(&mut page, &lanes);
        assert!(page.contains("<h3>job 7 · exactly_once</h3>") && page.contains("racing claim"), "{page}");
    }

    #[test]
    fn a_partition_is_a_band_over_the_lanes_of_its_agent_s_workers_only() {
        // w5 (agent 2) claims job 3 at 0.5 s, is cut off from 1 s to 11 s, and its late
        // completion is rejected; w1 (agent 1) took the job at 9 s.
        let journal = [
            ev(500_000, 3, 5, 1, Claimed),
            ev(8_000_000, 3, 5, 1, Executed),
            ev(9_100_000, 3, 1, 1, Claimed),
            ev(12_000_000, 3, 5, 1, Rejected),
            ev(17_000_000, 3, 1, 1, Executed),
            ev(17_100_000, 3, 1, 1, Accepted),
        ];
        let net = |agent, start_us, end_us, workers| NetworkSpan {
            kind: "partition".into(),
            agent,
            start_us,
            end_us,
            workers,
        };
        let network = [
            net(2, 1_000_000, 11_000_000, vec![(5, 8), (100_009, 200_008)]),
            // Another agent's cut: none of its workers is in this job's lanes.
            net(3, 2_000_000, 4_000_000, vec![(9, 12)]),
            // Agent 2 again, long after this job's window.
            net(2, 90_000_000, 95_000_000, vec![(5, 8)]),
        ];
        let failed = CheckResult {
            name: crate::model::check::Check::StaleCompletionsAccepted,
            passed: false,
            violations: 1,
            detail: String::new(),
            examples: vec![3],
        };
        let mut src = Source {
            journal: &journal,
            faults: &[],
            reaps: &[],
            final_jobs: &[],
            lease: Duration::from_secs(9),
            hold_transaction: false,
            clock_us: 0,
            network: &network,
        };
        let svg = swimlanes(std::slice::from_ref(&failed), &src).remove(0).svg;
        assert_eq!(svg.matches("class='net-fault'").count(), 1, "one band, on w5's lane only: {svg}");
        assert!(svg.contains("network partition of agent 2"), "{svg}");
        assert!(svg.contains("from t=1.000 s to t=11.000 s"), "{svg}");
        assert!(svg.contains(">network partition · agent 2, 1.0–11.0 s (the lanes"), "its legend entry: {svg}");
        // The band lies in w5's lane (the second: w1, then w5) and spans 1 s to 11 s.
        let band = svg.split("class='net-fault' ").nth(1).unwrap();
        let attr = |name: &str| -> f64 {
            let v = band.split(&format!("{name}='")).nth(1).unwrap();
            v[..v.find('\'').unwrap()].parse().unwrap()
        };
        assert_eq!(attr("y"), TOP + LANE, "{band}");
        let (t0, t1) = window(&journal, &spans(&journal, Duration::from_secs(9), false), &[]);
        let ax = Axis { t0, t1 };
        assert!(
            (attr("x") - ax.x(1_000_000)).abs() < 0.2
                && (attr("width") - (ax.x(11_000_000) - ax.x(1_000_000))).abs() < 0.2
        );
        // Without network faults: no band and no legend entry for them.
        src.network = &[];
        let plain = swimlanes(&[failed], &src).remove(0).svg;
        assert!(!plain.contains("net-fault") && !plain.contains("network partition"), "{plain}");
    }

    #[test]
    fn the_reaper_is_a_line_across_the_lanes_and_a_cause() {
        // w5 claims job 3 at 0.5 s and is paused; the reaper fails the job at 9 s; w5's late
        // completion lands at 12 s.
        let journal =
            [ev(500_000, 3, 5, 1, Claimed), ev(800_000, 3, 5, 1, Executed), ev(12_000_000, 3, 5, 1, Accepted)];
        let reaps = [
            ReapEvent { t_us: 9_000_000, job: 3, action: crate::collect::ReapAction::Failed, dur_us: 1_000 },
            ReapEvent { t_us: 9_000_000, job: 4, action: crate::collect::ReapAction::Failed, dur_us: 1_000 },
        ];
        let failed = CheckResult {
            name: crate::model::check::Check::StaleCompletionsAccepted,
            passed: false,
            violations: 1,
            detail: String::new(),
            examples: vec![3],
        };
        let src = Source {
            journal: &journal,
            faults: &[],
            reaps: &reaps,
            final_jobs: &[],
            lease: Duration::from_secs(3),
            hold_transaction: false,
            clock_us: 0,
            network: &[],
        };
        let lane = swimlanes(&[failed], &src).remove(0);
        assert_eq!(lane.svg.matches("class='reap'").count(), 1, "this job's only: {}", lane.svg);
        assert!(lane.svg.contains("<title>the reaper failed it at t=9.000 s</title>"), "{}", lane.svg);
        assert!(lane.causes.iter().any(|c| c.contains("accepted after the reaper failed it")), "{:?}", lane.causes);
    }

    #[test]
    fn a_long_lease_does_not_flatten_the_race() {
        let journal = [ev(1_000, 1, 1, 1, Claimed), ev(11_000, 1, 1, 1, Accepted)];
        let claims = spans(&journal, Duration::from_secs(30), false);
        let (t0, t1) = window(&journal, &claims, &[]);
        assert!(t0 <= 1_000 - 100 && t1 < 40_000, "{t0}..{t1}");
    }
}
