//! Every integration test, in one binary. Each file beside this one is a module of it: one
//! link instead of one per file, which saves minutes and gigabytes on a cold build (CI's
//! `.ci/run` builds from scratch). The tests still run two at a time, as before
//! (the test harness's threads are the machine's cores).
//!
//! Run one file's tests: `cargo test --test suite tls::`; one test: `cargo test --test suite NAME`.

mod common;

mod adapters;
mod agents;
mod architecture;
mod bad_input;
mod boundary;
mod bounded_waits;
mod checkers;
mod clean;
mod clients;
mod conformance;
mod connect_bounds;
mod contract;
mod corpus;
mod diagnostics;
mod doc_commands;
mod docker;
mod docs;
mod echo_refusals;
mod enqueue;
mod errors;
mod expected_failures;
mod explore;
mod explore_identity;
mod explore_inside;
mod explore_pace;
mod failover;
mod faults;
mod flags;
mod full_speed;
mod gate;
mod history;
mod horizon;
mod hostile_names;
mod idle;
mod interrupt;
mod isolation;
mod lifecycle;
mod liveness;
mod netns;
mod outputs;
mod patroni;
mod perf;
mod pg_versions;
mod pgbouncer;
mod pool;
mod preload;
mod priorities;
mod privilege;
mod promises;
mod quota;
mod reaper;
mod release;
mod reports;
mod restart;
mod scenarios;
mod scripts;
mod secrets;
mod sweep;
mod tls;
mod validate_cycle;
mod wording;
