//! The commands besides `run` and `sweep`: each reads its arguments and calls the stages it needs.

pub(crate) mod check;
pub(crate) mod clean;
pub(crate) mod cluster;
pub(crate) mod compare;
pub(crate) mod explain;
pub(crate) mod postgres;
pub(crate) mod prepare;
pub(crate) mod report;
pub(crate) mod repro;
pub(crate) mod sql;
pub(crate) mod validate;
