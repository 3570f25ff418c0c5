//! Inside a statement, as the search plays it (`explore::pause`): a paused statement is sent
//! with its gate closed, so it stops after its snapshot and before its first lock, and waits
//! there as on a lock; `Resume` opens the gate and the statement runs on, returns or waits on a
//! real lock.

use super::Search;
use crate::error::Result;
use crate::explore::protocol::{Model, Op};
use crate::explore::session::Sent;
use std::time::Duration;

impl<'a> Search<'a> {
    /// Before a paused statement is sent, its session's gate closes; true for a paused step.
    pub(super) async fn close_gate(&mut self, model: &mut Model<'a>, op: Op) -> Result<bool> {
        let Op::Paused(a, _) = op else { return Ok(false) };
        self.sessions.hold_gate(a).await?;
        model.gate_closed(a);
        Ok(true)
    }

    /// Session `a`'s gate opens (`stood`: its statement stood at it).
    pub(super) async fn open_gate(&mut self, model: &mut Model<'a>, a: usize, stood: bool) -> Result<()> {
        self.sessions.release_gate(a).await?;
        model.gate_opened(a, stood);
        Ok(())
    }

    /// The paused statement of session `a` runs on: it returns, or waits on a real lock.
    pub(super) async fn resume(&mut self, model: &mut Model<'a>, a: usize) -> Result<()> {
        self.open_gate(model, a, true).await?;
        if let Sent::Done(out) = self.sessions.settle(a, Duration::ZERO).await? {
            model.settled(a, &out);
            if out.is_err() {
                self.rollback(a).await?;
            }
        }
        Ok(())
    }
}
