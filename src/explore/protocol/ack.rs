//! `ack_lost` in explore: a worker's completion COMMITs on the server and its answer never
//! reaches the worker (the connection drops). The worker cannot tell whether it landed, so,
//! connected again, it still holds the job and sends the completion once more, as the run's
//! `ack_lost` fault (`then = "resend"`) does. The journal says `complete_unknown`, and the
//! checkers class what runs again after it as "after an unknown outcome"
//! (`completion_idempotent`).

use super::{Model, Op, Phase, Role, StepKind};
use crate::collect::{EventKind, FaultEvent, FaultKind};

impl<'p> Model<'p> {
    /// The enabled steps, and a lost answer for each completion about to commit (lease mode:
    /// in hold-transaction mode the COMMIT is the claim's own, refused as in a run).
    pub(super) fn with_acks_lost(&self, mut ops: Vec<Op>) -> Vec<Op> {
        if self.acks >= self.bounds.acks_lost || self.hold_tx() {
            return ops;
        }
        for (i, a) in self.actors.iter().enumerate() {
            let Phase::Running { kind: StepKind::Complete, sent, .. } = a.phase else { continue };
            let total = self.step(StepKind::Complete).map_or(0, |s| s.statements.len());
            if a.role == Role::Worker && a.waiting.is_none() && sent == total && !self.autocommit(StepKind::Complete) {
                ops.push(Op::AckLost(i));
            }
        }
        ops
    }

    /// Session `a`'s completion committed (record `index`) and its answer was lost: the
    /// connection closed and opened again, the job still held, the outcome unknown.
    pub(in crate::explore) fn answer_lost(&mut self, a: usize, index: usize) {
        self.acks += 1;
        self.changes += 1;
        let name = self.actors[a].name.clone();
        self.records[index].result = format!(
            "lands, and its answer is lost: the connection closes; {name} connects again, and not knowing whether \
             the completion landed, holds the job and sends it again"
        );
        let job = self.actors[a].job.clone();
        let t_us = self.next_seq();
        self.faults.push(FaultEvent {
            t_us,
            kind: FaultKind::AckLost,
            worker: Some(a as u32 + 1),
            job: job.as_ref().map(|j| j.id),
        });
        if let Some(j) = &job {
            self.event(a, j, EventKind::CompleteUnknown);
        }
        let actor = &mut self.actors[a];
        actor.carried.clear();
        actor.renewed = None;
        actor.phase = if actor.job.is_some() { Phase::Holding { in_tx: false } } else { Phase::Idle };
    }
}
