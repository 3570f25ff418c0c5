//! Runs beyond one machine: a coordinator and agents that meet through the database under
//! test (docs/agents.md). `netns`, `forward` and `netfault` make agents on this machine look
//! like separate hosts (a network namespace each, a forwarder to the server, `tc netem`).
