//! `ack_lost` as the search plays it: the completion's COMMIT is sent and lands; the session's
//! connection is then cut (its answer lost) and opened again (`protocol::ack`).

use super::Search;
use crate::error::Result;
use crate::explore::protocol::{Model, Op};
use crate::explore::session::Sent;

impl<'a> Search<'a> {
    pub(super) async fn lose_ack(&mut self, model: &mut Model<'a>, a: usize) -> Result<()> {
        let op = Op::AckLost(a);
        let index = model.sent(op, "COMMIT".into());
        match self.sessions.send(a, "COMMIT".into()).await? {
            Sent::Done(Ok(_)) => {
                model.answer_lost(a, index);
                self.sessions.reconnect(a).await
            }
            // A COMMIT the server refused, or one that waits: as any other commit.
            Sent::Done(out) => {
                model.outcome(Op::Commit(a), &out, index);
                self.rollback(a).await
            }
            Sent::Blocked => {
                model.blocked(Op::Commit(a), index);
                Ok(())
            }
        }
    }
}
