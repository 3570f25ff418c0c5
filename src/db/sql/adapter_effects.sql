-- An adapter's run: queuebench's own witness of every execution beside the
-- queue's tables (the same table the process clients write, clients/CONTRACT.md):
-- the queue's job id as text, the harness's number for it, the worker, the attempt,
-- and the harness's batch (a process client leaves it empty).
CREATE TABLE queuebench_effects (
  job_id  text        NOT NULL,
  n       bigint,
  worker  text        NOT NULL,
  attempt int,
  at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  batch   bigint
);
COMMENT ON TABLE queuebench_effects IS 'queuebench';
