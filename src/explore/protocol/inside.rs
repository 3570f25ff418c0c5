//! Inside a statement, as the model sees it: which enabled statements may also be sent with a
//! pause inside (`Op::Paused`), a paused session's step to run on (`Op::Resume`), and the gate
//! session's lines in the printed schedule (window G), so a script replays the pause by hand.

use super::{Model, Op, Record};
use crate::explore::pause;

impl Op {
    /// The plain step a paused one stands for (the same statement, without its pause).
    pub(in crate::explore) fn plain(self) -> Op {
        match self {
            Op::Paused(a, Some(kind)) => Op::Start(a, kind),
            Op::Paused(a, None) => Op::Next(a),
            op => op,
        }
    }
}

/// The gate session's name in the step list and the script.
pub(in crate::explore) const GATE_WINDOW: &str = "G";

impl<'p> Model<'p> {
    /// The enabled steps, and beside each statement that has a point to pause at (a lock that
    /// never waits) the same statement paused there; a session paused at its gate can run on.
    pub(super) fn with_pauses(&self, ops: Vec<Op>) -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len() + 2);
        for op in ops {
            out.push(op);
            let paused = match op {
                Op::Start(i, kind) => Op::Paused(i, Some(kind)),
                Op::Next(i) => Op::Paused(i, None),
                _ => continue,
            };
            if self.bounds.inside && self.raw_text(paused).is_some_and(pause::has_point) {
                out.push(paused);
            }
        }
        for (i, a) in self.actors.iter().enumerate() {
            if matches!(a.waiting, Some((Op::Paused(..), _))) {
                out.push(Op::Resume(i));
            }
        }
        out
    }

    /// The adapter's text of the statement a paused step sends (placeholders and all).
    fn raw_text(&self, op: Op) -> Option<&'p str> {
        let (kind, index) = match op {
            Op::Paused(_, Some(kind)) => (kind, 0),
            Op::Paused(i, None) => match &self.actors[i].phase {
                super::Phase::Running { kind, sent, .. } => (*kind, *sent),
                _ => return None,
            },
            _ => return None,
        };
        self.step(kind).and_then(|s| s.statements.get(index)).map(|s| s.text.as_str())
    }

    /// The text a paused step sends: the statement's, with its gate in front of its first lock.
    pub(super) fn paused_sql(&self, op: Op) -> Option<String> {
        let a = op.actor()?;
        pause::paused(&self.sql(op.plain())?, a as i32 + 1)
    }

    /// A gate's line; `step`: it is the schedule's `Resume` step itself.
    fn gate_record(&mut self, op: Op, sql: String, result: String, step: bool) {
        let at_secs = self.epoch_us() as f64 / 1e6;
        let actor = GATE_WINDOW.to_string();
        self.records.push(Record { op, actor, sql: Some(sql), result, at_secs, waited_until: None, step });
    }

    /// Session `a`'s gate closed, before its paused statement is sent (the first time in a
    /// schedule, with the pause function, so the script makes it).
    pub(in crate::explore) fn gate_closed(&mut self, a: usize) {
        let name = self.actors[a].name.clone();
        let hold = pause::hold_sql(a as i32 + 1);
        let first = !self.records.iter().any(|r| r.actor == GATE_WINDOW);
        let sql = if first { format!("{};\n{hold}", pause::FUNCTION) } else { hold };
        self.gate_record(Op::Resume(a), sql, format!("closes {name}'s gate"), false);
    }

    /// Session `a`'s gate opened: its statement runs on (`stood`: it stood at the gate, and
    /// waits no more on it; otherwise it never reached its lock).
    pub(in crate::explore) fn gate_opened(&mut self, a: usize, stood: bool) {
        let name = self.actors[a].name.clone();
        let result = if stood {
            if let Some((op, _)) = self.actors[a].waiting.as_mut() {
                *op = op.plain();
            }
            format!("opens {name}'s gate: {name}'s statement runs on from its pause")
        } else {
            format!("opens {name}'s gate ({name}'s statement never reached a lock: no pause)")
        };
        self.gate_record(Op::Resume(a), pause::release_sql(a as i32 + 1), result, stood);
    }
}
