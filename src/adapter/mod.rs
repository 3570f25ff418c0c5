//! A queue described as data (`docs/adapters.md`): its own schema and the statements it runs
//! to enqueue, claim, complete, fail, heartbeat, reclaim and cancel, how the claim's result
//! maps onto a job (id, attempt, token of any column type), how a write is judged accepted,
//! and the observer queries the harness reads its state with.

pub mod keys;
pub mod raw;
pub mod verb;
