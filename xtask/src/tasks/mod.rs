//! One module per kind of task.

pub mod repeats;
pub mod smoke;
pub mod tables;
