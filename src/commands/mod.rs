//! The commands besides `run` and `sweep`: each reads its arguments and calls the stages it needs.

pub mod check;
pub mod clean;
pub mod cluster;
pub mod compare;
pub mod explain;
pub mod prepare;
pub mod report;
pub mod repro;
pub mod sql;
pub mod validate;
