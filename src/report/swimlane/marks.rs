//! Every kind of mark the swimlanes draw, in one list (`Mark::ALL`): its class in the SVG, its
//! legend's label and glyph. The drawing puts every mark through `Canvas::put`, which notes its
//! kind, and the legend is made from those notes: a lane's legend names every kind of mark drawn
//! in it, and nothing else. A new kind of mark is a new `Mark` (a new `EventKind` must pick one
//! in `Mark::of`, or the build fails).

use super::{Axis, LANE, LEFT, RIGHT, WIDTH};
use crate::collect::{Event, EventKind};
use crate::verify::time::secs;
use std::fmt::Write;

/// One kind of mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    /// A claim statement's round trip: a thin line from sent to returned.
    RoundTrip,
    LeaseWindow,
    BelievedOwned,
    Work,
    /// A completion or failure that updated the row.
    Accepted,
    /// A completion or failure that changed nothing.
    Rejected,
    /// A completion whose answer was lost (`ack_lost`): it may or may not have landed.
    CompleteUnknown,
    HeartbeatOk,
    HeartbeatRejected,
    Abandoned,
    /// From a write's sending to its answer, when they are visibly apart.
    InFlight,
    Fault,
    /// The reaper taking the job back, across every lane.
    Reaper,
    /// A network fault on an agent's path, across its workers' lanes.
    Network,
}

impl Mark {
    /// The legend's order.
    pub(super) const ALL: [Mark; 14] = [
        Mark::RoundTrip,
        Mark::LeaseWindow,
        Mark::BelievedOwned,
        Mark::Work,
        Mark::Accepted,
        Mark::Rejected,
        Mark::CompleteUnknown,
        Mark::HeartbeatOk,
        Mark::HeartbeatRejected,
        Mark::Abandoned,
        Mark::InFlight,
        Mark::Fault,
        Mark::Reaper,
        Mark::Network,
    ];

    /// The class of the mark's elements in the SVG.
    pub(super) fn class(self) -> &'static str {
        match self {
            Mark::RoundTrip => "round-trip",
            Mark::LeaseWindow => "lease",
            Mark::BelievedOwned => "owned",
            Mark::Work => "work",
            Mark::Accepted => "accepted",
            Mark::Rejected => "rejected",
            Mark::CompleteUnknown => "unknown",
            Mark::HeartbeatOk => "heartbeat",
            Mark::HeartbeatRejected => "heartbeat-rejected",
            Mark::Abandoned => "abandoned",
            Mark::InFlight => "in-flight",
            Mark::Fault => "fault",
            Mark::Reaper => "reap",
            Mark::Network => "net-fault",
        }
    }

    /// The legend's words (a network fault's are the faults drawn: `Legend::network`).
    pub(super) fn label(self) -> &'static str {
        match self {
            Mark::RoundTrip => "claim round trip",
            Mark::LeaseWindow => "lease window",
            Mark::BelievedOwned => "believed owned",
            Mark::Work => "work",
            Mark::Accepted => "write accepted",
            Mark::Rejected => "rejected",
            Mark::CompleteUnknown => "answer lost (may have landed)",
            Mark::HeartbeatOk => "heartbeat",
            Mark::HeartbeatRejected => "heartbeat rejected",
            Mark::Abandoned => "abandoned",
            Mark::InFlight => "write in flight",
            Mark::Fault => "fault",
            Mark::Reaper => "reaper took it back",
            Mark::Network => "network fault",
        }
    }

    /// The legend's glyph, in a 14 × 9 box.
    fn glyph(self) -> &'static str {
        match self {
            Mark::RoundTrip => "<line x1='0' y1='4' x2='14' y2='4' stroke='#6ea8fe' stroke-width='1'/>",
            Mark::LeaseWindow => "<rect width='14' height='9' fill='#cfe2ff'/>",
            Mark::BelievedOwned => "<rect y='2' width='14' height='5' fill='#3d8bfd'/>",
            Mark::Work => "<rect y='2' width='14' height='5' fill='#f0ad00'/>",
            Mark::Accepted => "<circle cx='5' cy='4' r='4' fill='#1a7f37'/>",
            Mark::Rejected => "<path d='M1,0 l8,8 m0,-8 l-8,8' stroke='#cf222e' stroke-width='2'/>",
            Mark::CompleteUnknown => "<circle cx='5' cy='4' r='4' fill='none' stroke='#888' stroke-width='2'/>",
            Mark::HeartbeatOk => "<line x1='5' y1='-1' x2='5' y2='10' stroke='#1a7f37' stroke-width='2'/>",
            Mark::HeartbeatRejected => "<line x1='5' y1='-1' x2='5' y2='10' stroke='#cf222e' stroke-width='2'/>",
            Mark::Abandoned => "<rect x='1' width='8' height='8' fill='#888'/>",
            Mark::InFlight => {
                "<line x1='0' y1='4' x2='14' y2='4' stroke='#888' stroke-width='1.5' stroke-dasharray='3 2'/>"
            }
            Mark::Fault => {
                "<line x1='5' y1='-1' x2='5' y2='10' stroke='#cf222e' stroke-width='2' stroke-dasharray='3 2'/>"
            }
            Mark::Reaper => {
                "<line x1='5' y1='-1' x2='5' y2='10' stroke='#9a6700' stroke-width='2' stroke-dasharray='1 3'/>"
            }
            Mark::Network => "<rect width='14' height='9' fill='url(#qb-net)' stroke='#8250df' stroke-opacity='0.6'/>",
        }
    }

    /// The mark of a journal event at its time; None for a claim (drawn as its bars).
    pub(super) fn of(kind: EventKind) -> Option<Mark> {
        match kind {
            EventKind::Claimed => None,
            EventKind::Executed => Some(Mark::Work),
            EventKind::Accepted | EventKind::FailAccepted => Some(Mark::Accepted),
            EventKind::Rejected | EventKind::FailRejected => Some(Mark::Rejected),
            EventKind::HeartbeatOk => Some(Mark::HeartbeatOk),
            EventKind::HeartbeatRejected => Some(Mark::HeartbeatRejected),
            EventKind::Abandoned => Some(Mark::Abandoned),
            EventKind::CompleteUnknown => Some(Mark::CompleteUnknown),
        }
    }
}

/// The lanes' SVG being drawn, and the kinds of mark drawn so far (the legend's entries).
#[derive(Default)]
pub(super) struct Canvas {
    pub(super) svg: String,
    used: Vec<Mark>,
}

impl Canvas {
    /// One element of a mark: `<TAG class='CLASS' REST` (REST closes the element).
    pub(super) fn put(&mut self, mark: Mark, tag: &str, rest: std::fmt::Arguments) {
        if !self.used.contains(&mark) {
            self.used.push(mark);
        }
        let _ = write!(self.svg, "<{tag} class='{}' {rest}", mark.class());
    }

    /// The legend of the marks drawn, in `Mark::ALL`'s order, wrapped in rows from `y` down;
    /// `network`: the network faults' words. Returns the rows drawn.
    pub(super) fn legend(&mut self, y: f64, network: &str) -> usize {
        let mut x = LEFT;
        let mut row = 0;
        for m in Mark::ALL.into_iter().filter(|m| self.used.contains(m)) {
            let label = if m == Mark::Network { network } else { m.label() };
            let width = 30.0 + label.chars().count() as f64 * 6.6;
            if x > LEFT && x + width > WIDTH - RIGHT {
                (x, row) = (LEFT, row + 1);
            }
            let ty = y + 16.0 * row as f64;
            let _ = write!(
                self.svg,
                "<g transform='translate({x:.0},{:.0})'>{}</g><text x='{:.0}' y='{ty:.0}' fill='#444'>{label}</text>",
                ty - 8.0,
                m.glyph(),
                x + 18.0
            );
            x += width;
        }
        if self.used.is_empty() { 0 } else { row + 1 }
    }
}

/// One event's mark in its worker's lane. A completion or failure is marked where its answer
/// came back, after a dashed line from where it was sent when that is visibly apart (a write
/// that waited in a partition arrives late, and the lane shows it).
pub(super) fn event(c: &mut Canvas, ax: &Axis, e: &Event, y: f64) {
    let Some(mark) = Mark::of(e.kind) else { return };
    let mut x = ax.x(e.t_us);
    let m = y + LANE / 2.0 + 3.0;
    let mut title = format!("<title>w{} {} at t={}</title>", e.worker, e.kind.name(), secs(e.t_us));
    let answered = ax.x(e.t_us + u64::from(e.dur_us));
    if matches!(mark, Mark::Accepted | Mark::Rejected) && answered - x >= 3.0 {
        title = format!(
            "<title>w{} {} sent at t={}, answered at t={}</title>",
            e.worker,
            e.kind.name(),
            secs(e.t_us),
            secs(e.t_us + u64::from(e.dur_us))
        );
        c.put(
            Mark::InFlight,
            "line",
            format_args!(
                "x1='{x:.1}' y1='{m:.1}' x2='{answered:.1}' y2='{m:.1}' stroke='#888' stroke-width='1.5' \
                 stroke-dasharray='3 2'>{title}</line>"
            ),
        );
        x = answered;
    }
    match mark {
        Mark::Work => {
            let xs = ax.x(e.t_us.saturating_sub(u64::from(e.dur_us)));
            let (w, top) = ((x - xs).max(2.0), y + 16.0);
            let a = format_args!("x='{xs:.1}' y='{top:.1}' width='{w:.1}' height='6' fill='#f0ad00'>{title}</rect>");
            c.put(mark, "rect", a);
        }
        Mark::Accepted => {
            c.put(mark, "circle", format_args!("cx='{x:.1}' cy='{m:.1}' r='5' fill='#1a7f37'>{title}</circle>"))
        }
        Mark::Rejected => {
            let (px, py) = (x - 4.0, m - 4.0);
            let a = format_args!(
                "d='M{px:.1},{py:.1} l8,8 m0,-8 l-8,8' stroke='#cf222e' stroke-width='2.5'>{title}</path>"
            );
            c.put(mark, "path", a);
        }
        Mark::HeartbeatOk | Mark::HeartbeatRejected => {
            let color = if mark == Mark::HeartbeatOk { "#1a7f37" } else { "#cf222e" };
            let (y0, y1) = (y + 3.0, y + LANE - 3.0);
            let a = format_args!(
                "x1='{x:.1}' y1='{y0:.1}' x2='{x:.1}' y2='{y1:.1}' stroke='{color}' stroke-width='2'>{title}</line>"
            );
            c.put(mark, "line", a);
        }
        Mark::Abandoned => {
            let (px, py) = (x - 4.0, m - 4.0);
            c.put(
                mark,
                "rect",
                format_args!("x='{px:.1}' y='{py:.1}' width='8' height='8' fill='#888'>{title}</rect>"),
            );
        }
        Mark::CompleteUnknown => c.put(
            mark,
            "circle",
            format_args!("cx='{x:.1}' cy='{m:.1}' r='5' fill='none' stroke='#888' stroke-width='2'>{title}</circle>"),
        ),
        // Not an event's mark (`Mark::of` gives none of these).
        Mark::RoundTrip
        | Mark::LeaseWindow
        | Mark::BelievedOwned
        | Mark::InFlight
        | Mark::Fault
        | Mark::Reaper
        | Mark::Network => {}
    }
}
