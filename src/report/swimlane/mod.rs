//! The swimlanes of report.html: up to five example jobs of each failed check drawn against
//! time, one lane per worker that touched the job. Each claim's lease window is a light bar,
//! the time its worker believed it owned the job a darker bar inside it, the claim's round trip
//! a thin line before it; an execution is an amber bar of its work; writes are marks (a green
//! dot accepted, a red cross rejected, an open circle a completion whose answer was lost),
//! heartbeats ticks, an abandon a grey square, faults red lines, and the reaper taking the job
//! back a dotted line across the lanes. A network fault on an agent's path (partition, latency,
//! loss) is a hatched band across the lanes of that agent's workers for as long as it lasted.
//! Every mark has a tooltip with its time, and the legend under the lanes names every kind of
//! mark drawn in them (`marks.rs`: one list of the kinds, the drawing and the legend both made
//! from it). The causes `explain` prints go under it.
//! Plain SVG: no scripts, no fonts needed beyond the page's.

use crate::collect::{Event, EventKind, FaultEvent, ReapEvent};
use crate::model::records::{JobRow, NetworkSpan};
use crate::model::summary::CheckResult;
use crate::verify::claims::{ClaimSpan, spans};
use crate::verify::story::story;
use crate::verify::time::secs;
use marks::{Canvas, Mark};
use std::fmt::Write;
use std::time::Duration;

mod marks;

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
    let bottom = TOP + workers.len() as f64 * LANE;
    let mut c = Canvas::default();
    ticks(&mut c.svg, &ax, bottom);
    for (i, w) in workers.iter().enumerate() {
        let y = lane(*w);
        let shade = if i % 2 == 0 { "#fafafa" } else { "#ffffff" };
        let _ =
            write!(c.svg, "<rect x='{LEFT}' y='{y}' width='{}' height='{LANE}' fill='{shade}'/>", WIDTH - LEFT - RIGHT);
        let _ = write!(c.svg, "<text x='6' y='{}'>w{w}</text>", y + LANE / 2.0 + 4.0);
    }
    if !bands.is_empty() {
        c.svg.push_str(NET_PATTERN);
    }
    for s in &bands {
        for w in workers.iter().filter(|w| s.hits(**w)) {
            network_band(&mut c, &ax, s, lane(*w));
        }
    }
    for cl in claims {
        claim_bars(&mut c, &ax, cl, lane(cl.worker));
    }
    for e in evs {
        marks::event(&mut c, &ax, e, lane(e.worker));
    }
    for f in faults {
        let span = match f.worker {
            Some(w) => (lane(w), lane(w) + LANE),
            None => (TOP, bottom),
        };
        fault_line(&mut c, &ax, f, span);
    }
    for r in reaps {
        reap_line(&mut c, &ax, r, bottom);
    }
    let rows = c.legend(bottom + 22.0, &network_words(&bands));
    let height = bottom + 18.0 + 16.0 * rows.max(1) as f64;
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {WIDTH} {height}' width='{WIDTH}' height='{height}' \
         font-family='DejaVu Sans,sans-serif' font-size='11'>{}</svg>",
        c.svg
    )
}

/// A fault: a red dashed line across its worker's lane (`y0..y1`), or every lane.
fn fault_line(c: &mut Canvas, ax: &Axis, f: &FaultEvent, (y0, y1): (f64, f64)) {
    let x = ax.x(f.t_us);
    let a = format_args!(
        "x1='{x:.1}' y1='{y0}' x2='{x:.1}' y2='{y1}' stroke='#cf222e' stroke-width='2' stroke-dasharray='4 2'>\
         <title>fault: {} at t={}</title></line>",
        f.kind,
        secs(f.t_us)
    );
    c.put(Mark::Fault, "line", a);
}

/// The reaper taking the job back: a dotted line across every lane (the reaper is no worker).
fn reap_line(c: &mut Canvas, ax: &Axis, r: &ReapEvent, bottom: f64) {
    let x = ax.x(r.t_us);
    let a = format_args!(
        "x1='{x:.1}' y1='{TOP}' x2='{x:.1}' y2='{bottom}' stroke='#9a6700' stroke-width='2' \
         stroke-dasharray='1 3'><title>the reaper {} at t={}</title></line>",
        r.action.did(),
        secs(r.t_us)
    );
    c.put(Mark::Reaper, "line", a);
}

/// The hatching of a network fault's band.
const NET_PATTERN: &str = "<defs><pattern id='qb-net' width='6' height='6' patternUnits='userSpaceOnUse' \
     patternTransform='rotate(45)'><rect width='6' height='6' fill='#8250df' fill-opacity='0.10'/>\
     <line x1='0' y1='0' x2='0' y2='6' stroke='#8250df' stroke-opacity='0.45' stroke-width='2'/></pattern></defs>";

/// A network fault across one worker's lane, from when it took effect to when it was lifted
/// (clipped to the window); the legend names it.
fn network_band(c: &mut Canvas, ax: &Axis, s: &NetworkSpan, y: f64) {
    let (x0, x1) = (ax.x(s.start_us), ax.x(s.end_us));
    let a = format_args!(
        "x='{x0:.1}' y='{y:.1}' width='{:.1}' height='{LANE}' fill='url(#qb-net)' \
         stroke='#8250df' stroke-opacity='0.6' stroke-dasharray='2 2'>\
         <title>network {} of agent {} (its workers' path to the server) from t={} to t={}</title></rect>",
        (x1 - x0).max(2.0),
        s.kind,
        s.agent,
        secs(s.start_us),
        secs(s.end_us)
    );
    c.put(Mark::Network, "rect", a);
}

/// The network faults' legend words: each one drawn, by kind, agent and time.
fn network_words(bands: &[&NetworkSpan]) -> String {
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
    format!("{} (the lanes of that agent's workers)", what.join("; "))
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
fn claim_bars(c: &mut Canvas, ax: &Axis, cl: &ClaimSpan, y: f64) {
    let (xs, xr, xl) = (ax.x(cl.sent_us), ax.x(cl.start_us), ax.x(cl.lease_end_us));
    let m = y + LANE / 2.0;
    c.put(
        Mark::RoundTrip,
        "line",
        format_args!("x1='{xs:.1}' y1='{m:.1}' x2='{xr:.1}' y2='{m:.1}' stroke='#6ea8fe' stroke-width='1'/>"),
    );
    let a = format_args!(
        "x='{xr:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='#cfe2ff'>\
         <title>w{} claim {} (attempt {}): sent t={}, returned t={}, lease until t={}</title></rect>",
        y + 5.0,
        (xl - xr).max(1.0),
        LANE - 10.0,
        cl.worker,
        cl.claim,
        cl.attempt,
        secs(cl.sent_us),
        secs(cl.start_us),
        secs(cl.lease_end_us),
    );
    c.put(Mark::LeaseWindow, "rect", a);
    let until = cl.released_us.unwrap_or(ax.t1);
    let xo = ax.x(until);
    let a = format_args!(
        "x='{xr:.1}' y='{:.1}' width='{:.1}' height='6' fill='#3d8bfd'>\
         <title>w{} believed it owned the job from t={} to {}</title></rect>",
        y + 8.0,
        (xo - xr).max(1.0),
        cl.worker,
        secs(cl.start_us),
        cl.released_us.map_or("the end".into(), |r| format!("t={}", secs(r)))
    );
    c.put(Mark::BelievedOwned, "rect", a);
}

#[cfg(test)]
mod tests;
