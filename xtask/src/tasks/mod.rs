//! One module per kind of task.

pub mod adapters;
pub mod bench;
pub mod clients;
pub mod explore;
pub mod gw_perf;
pub mod loops;
pub mod probes;
pub mod repeats;
pub mod smoke;
pub mod suite;
pub mod tables;
pub mod vs_pgbench;
