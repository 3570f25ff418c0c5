//! An agent's state in the control table (`qb_agent.state`, sql/control.sql): written by the
//! agent at each sign of life, read by the coordinator. On the wire it is the state's name, as
//! agents have always written it.

use std::fmt;

/// Where an agent is in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentState {
    /// It took a number (the row's default).
    Joined,
    /// Every worker connection is open: it waits at the barrier.
    Ready,
    /// Its workers run.
    Running,
    /// Its workers are done: it uploads its evidence.
    Finished,
    /// Its evidence and report are in the control tables.
    Uploaded,
    /// It gave up (`error` says why).
    Failed,
}

impl AgentState {
    /// Every state, in the order an agent goes through them.
    pub(crate) const ALL: [AgentState; 6] = [
        AgentState::Joined,
        AgentState::Ready,
        AgentState::Running,
        AgentState::Finished,
        AgentState::Uploaded,
        AgentState::Failed,
    ];

    /// Its name in the control table.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AgentState::Joined => "joined",
            AgentState::Ready => "ready",
            AgentState::Running => "running",
            AgentState::Finished => "finished",
            AgentState::Uploaded => "uploaded",
            AgentState::Failed => "failed",
        }
    }

    /// The state of a name read from the control table. A name this version does not know
    /// (an agent of another version wrote it) counts as running: alive and not done, so its
    /// silence still makes it missing.
    pub(crate) fn read(name: &str) -> AgentState {
        AgentState::ALL.into_iter().find(|s| s.name() == name).unwrap_or(AgentState::Running)
    }

    /// It will not report again: its evidence is uploaded, or it gave up.
    pub(crate) fn over(self) -> bool {
        matches!(self, AgentState::Uploaded | AgentState::Failed)
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::AgentState;

    #[test]
    fn every_state_reads_back_from_its_name_and_the_table_names_them_all() {
        for s in AgentState::ALL {
            assert_eq!(AgentState::read(s.name()), s);
        }
        // sql/control.sql's comment lists the states the column holds; the SQL that sets one
        // (fail.sql) names one of them.
        let tables = include_str!("sql/control.sql");
        let listed = tables.lines().find(|l| l.contains("joined, ready")).expect("control.sql lists the states");
        for s in AgentState::ALL {
            assert!(listed.contains(s.name()), "control.sql's list of states names {s}: {listed}");
        }
        assert!(include_str!("sql/fail.sql").contains(&format!("'{}'", AgentState::Failed)));
        assert!(tables.contains(&format!("DEFAULT '{}'", AgentState::Joined)));
    }

    #[test]
    fn a_state_this_version_does_not_know_counts_as_running() {
        assert_eq!(AgentState::read("paused-by-a-newer-agent"), AgentState::Running);
        assert!(!AgentState::read("paused-by-a-newer-agent").over());
    }
}
