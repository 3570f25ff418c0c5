"""queuebench process client for procrastinate (contract v1: ../CONTRACT.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))

import procrastinate  # noqa: E402
import qb_common as qb  # noqa: E402

log = logging.getLogger("queuebench.procrastinate")
# procrastinate warns when the App lives in __main__ because tasks found by
# import path could then be registered twice; this worker registers its one
# task under an explicit name and never imports tasks by path.
logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)

# procrastinate's worker waits for running jobs forever by default
# (shutdown_graceful_timeout=None); the contract gives a client 5 s in all.
# After this timeout procrastinate cancels the jobs still running; they end
# with status "aborted" (no retry strategy is configured, the library default).
SHUTDOWN_GRACEFUL_TIMEOUT_S = 3.0

# procrastinate has no built-in rescue of jobs whose worker died: its docs tell
# users to periodically retry the jobs that JobManager.get_stalled_jobs()
# returns (jobs in "doing" whose worker has not sent a heartbeat for
# seconds_since_heartbeat, default 30 s). Every work process runs that recipe
# in a side loop at this interval (the library's heartbeat interval, 10 s).
RESCUE_INTERVAL_S = 10.0
# ... and once more when its own worker has stopped (bounded by this): a job whose finish
# write died with a terminated connection stays "doing" under its worker, which lives on
# and heartbeats, so no stalled-job query finds it until that worker unregisters (at
# shutdown: its jobs' worker_id becomes NULL). The recipe's next pass would retry it; this
# pass does it before the process exits, so the job is back in the queue (todo) rather than
# left "doing" with no worker.
FINAL_RESCUE_TIMEOUT_S = 0.8


def make_app(env: qb.Env, max_size: int) -> procrastinate.App:
    # procrastinate's SQL (schema.sql and its queries) names its objects
    # without a schema, so search_path on every connection puts them, and
    # finds them, in QUEUEBENCH_SCHEMA. The pool's conninfo also serves the
    # standalone LISTEN connection, so application_name is on every connection.
    connector = procrastinate.PsycopgConnector(
        conninfo=qb.conninfo(env, env.app_name, search_path=env.schema),
        min_size=1,
        max_size=max_size,
    )
    app = procrastinate.App(connector=connector)
    return app


async def schema_installed(app: procrastinate.App) -> bool:
    row = await app.connector.execute_query_one_async(
        query="SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS installed"
    )
    return bool(row["installed"])


async def setup(env: qb.Env, args: list[str]) -> int:
    app = make_app(env, 2)
    async with app.open_async():
        if await schema_installed(app):
            # schema.sql is a whole schema, not an idempotent migration.
            sys.stderr.write(f"procrastinate: schema already installed in {env.schema}; nothing to do\n")
            return 0
        await app.connector.execute_query_async(query=f'CREATE SCHEMA IF NOT EXISTS "{env.schema}"')
        # The library's migration API: SchemaManager.apply_schema_async() runs
        # procrastinate's own schema.sql (what `procrastinate schema --apply` does).
        await app.schema_manager.apply_schema_async()
    return 0


def register_task(app: procrastinate.App, env: qb.Env, effects: qb.Effects | None):
    @app.task(name=env.queue, queue=env.queue, pass_context=True)
    async def queuebench_task(context: procrastinate.JobContext, **payload):
        assert effects is not None
        job = context.job
        await qb.run_handler(env, effects, job.id, payload, job.attempts)

    return queuebench_task


async def enqueue(env: qb.Env, args: list[str]) -> int:
    count = qb.parse_count(args)
    app = make_app(env, 2)
    task = register_task(app, env, None)
    all_payloads = qb.payloads(env, count)
    async with app.open_async():
        for i in range(0, len(all_payloads), 500):
            await task.batch_defer_async(*all_payloads[i : i + 500])
    return 0


async def rescue_once(app: procrastinate.App, env: qb.Env) -> None:
    try:
        for job in await app.job_manager.get_stalled_jobs(queue=env.queue):
            log.warning("retrying stalled job %s", job.id)
            await app.job_manager.retry_job(job)
    except Exception as exc:  # noqa: BLE001 - keep rescuing
        sys.stderr.write(f"procrastinate rescue: {exc!r}\n")


async def rescue_loop(app: procrastinate.App, env: qb.Env) -> None:
    while True:
        await asyncio.sleep(RESCUE_INTERVAL_S)
        await rescue_once(app, env)


async def work(env: qb.Env, args: list[str]) -> int:
    if env.bug == "ack-first":
        qb.fail("procrastinate: QUEUEBENCH_CLIENT_BUG=ack-first is not supported")
    if env.batch is not None:
        qb.fail("procrastinate: QUEUEBENCH_BATCH is not supported (procrastinate 3.10 fetches one job per handler)")
    effects = qb.Effects(env)
    await effects.open()
    # Pool: one connection per concurrent job's status update, plus fetching,
    # heartbeats and abort polling (LISTEN uses its own standalone connection).
    app = make_app(env, env.concurrency + 3)
    register_task(app, env, effects)
    worker_options: dict = dict(
        queues=[env.queue],
        name=env.worker,
        concurrency=env.concurrency,
        install_signal_handlers=False,
        shutdown_graceful_timeout=SHUTDOWN_GRACEFUL_TIMEOUT_S,
    )
    if env.poll_ms is not None:
        worker_options["fetch_job_polling_interval"] = env.poll_ms / 1000.0  # default 5 s

    async with app.open_async():
        worker_task: asyncio.Task | None = None
        rescue = asyncio.create_task(rescue_loop(app, env))

        async def run() -> None:
            nonlocal worker_task
            worker_task = asyncio.create_task(app.run_worker_async(**worker_options))
            await worker_task

        def stop() -> None:
            # Cancelling run_worker_async is procrastinate's way to stop a worker
            # that does not handle signals itself: it stops fetching, waits up to
            # shutdown_graceful_timeout for running jobs, then unregisters.
            rescue.cancel()
            if worker_task is not None:
                worker_task.cancel()

        sys.stderr.write(
            f"procrastinate worker {env.worker}: concurrency {env.concurrency} on queue {env.queue} in schema {env.schema}\n"
        )
        code = await qb.serve_until_signal(run, stop)
        rescue.cancel()
        try:
            await asyncio.wait_for(rescue_once(app, env), timeout=FINAL_RESCUE_TIMEOUT_S)
        except asyncio.TimeoutError:
            sys.stderr.write("procrastinate rescue: the last pass did not finish in time\n")
    await effects.close()
    return code


if __name__ == "__main__":
    qb.main({"setup": setup, "enqueue": enqueue, "work": work})
