-- The queue table the built-in strategies use (seed 001's table, with seed
-- 004's priority and seed 000's claim_token). Created inside the run's own
-- schema: the connection's search_path points there.
CREATE TABLE jobs (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue        text        NOT NULL DEFAULT 'default',
  class        text        NOT NULL DEFAULT 'default',  -- the harness's job class (open-model producers)
  payload      jsonb       NOT NULL DEFAULT '{}',
  status       text        NOT NULL DEFAULT 'queued'
               CHECK (status IN ('queued', 'running', 'done', 'failed', 'dead', 'cancelled')),
  priority     int         NOT NULL DEFAULT 0,
  run_at       timestamptz NOT NULL DEFAULT now(),
  attempts     int         NOT NULL DEFAULT 0,
  max_attempts int         NOT NULL DEFAULT 5,
  locked_until timestamptz,
  claim_token  uuid,
  locked_by    text,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX jobs_ready_idx ON jobs (queue, run_at) WHERE status = 'queued';
-- For the priority claims (priority, deadline-first below the deadline):
-- the highest priority, then the oldest, without a sort.
CREATE INDEX jobs_priority_idx ON jobs (queue, priority DESC, run_at) WHERE status = 'queued';
-- For the reaper and the inline reclaim: running jobs by lease end.
CREATE INDEX jobs_running_idx ON jobs (locked_until) WHERE status = 'running';

-- The second witness of every execution: written by the worker outside any
-- claim transaction, so a rolled-back claim cannot erase it.
CREATE TABLE effects (
  job_id  bigint      NOT NULL,
  worker  int         NOT NULL,
  attempt int         NOT NULL,
  at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  batch   bigint      -- the worker's batch: one written again replaces itself
);

-- A stand-in for the application's own table: with jobs.business_row = true
-- every job is enqueued in the same transaction as a row here (seed 004).
CREATE TABLE business_rows (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  payload    jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The mark `--reuse` looks for: only tables carrying it are ever dropped from an existing schema.
COMMENT ON TABLE jobs IS 'queuebench';
COMMENT ON TABLE effects IS 'queuebench';
COMMENT ON TABLE business_rows IS 'queuebench';
