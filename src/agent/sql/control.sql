-- The control tables of a run across agents (docs/agents.md), in the run's own schema:
-- the coordinator writes the plan, agents join, meet at a barrier, report, and upload
-- their evidence here. Nothing outside the run's schema is touched.
CREATE TABLE qb_agent_run (
  one            bool        PRIMARY KEY DEFAULT true CHECK (one),
  run_id         text        NOT NULL,
  agents         int         NOT NULL,
  bundle         jsonb       NOT NULL,
  -- waiting (agents may join), running (start_at is set), stopping, done
  state          text        NOT NULL DEFAULT 'waiting',
  start_at       timestamptz,
  producers_done bool        NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE qb_agent (
  agent     int         PRIMARY KEY,
  name      text        NOT NULL,
  joined_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- every 250 ms while the agent lives: a coordinator calls an agent silent for longer
  -- than its dead_after missing
  seen_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- joined, ready (connections open), running, finished (uploading), uploaded, failed
  state     text        NOT NULL DEFAULT 'joined',
  report    jsonb,
  error     text
);
CREATE TABLE qb_agent_evidence (
  agent int   NOT NULL,
  part  text  NOT NULL,
  seq   int   NOT NULL,
  data  bytea NOT NULL,
  PRIMARY KEY (agent, part, seq)
);
COMMENT ON TABLE qb_agent_run IS 'queuebench';
COMMENT ON TABLE qb_agent IS 'queuebench';
COMMENT ON TABLE qb_agent_evidence IS 'queuebench';
