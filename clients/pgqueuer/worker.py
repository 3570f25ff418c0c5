"""queuebench process client for PgQueuer (contract v1: ../CONTRACT.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))

import qb_common as qb  # noqa: E402

log = logging.getLogger("queuebench.pgqueuer")

# PgQueuer library defaults, named here because the README quotes them.
HEARTBEAT_TIMEOUT = timedelta(seconds=30)  # QueueManager.run(heartbeat_timeout=...)
DEQUEUE_TIMEOUT = timedelta(seconds=30)  # QueueManager.run(dequeue_timeout=...)


def use_schema(env: qb.Env) -> None:
    # PgQueuer reads its DBSettings once per process from the environment;
    # PGQUEUER_SCHEMA schema-qualifies every object it creates and queries.
    os.environ["PGQUEUER_SCHEMA"] = env.schema


async def connect(env: qb.Env):
    # asyncpg, PgQueuer's primary driver. (Its psycopg driver polls for
    # notifications holding the connection's lock for up to 1 s at a time,
    # which held this worker to about 4 jobs a second.) One connection carries
    # all of a QueueManager's queries and its LISTEN.
    import asyncpg

    return await asyncpg.connect(dsn=env.url, server_settings={"application_name": env.app_name})


async def setup(env: qb.Env, args: list[str]) -> int:
    use_schema(env)
    from pgqueuer import Queries

    conn = await connect(env)
    try:
        queries = Queries.from_asyncpg_connection(conn)
        # The library's migration API (what `pgq install` / `pgq upgrade` run).
        if await queries.schema_is_installed():
            plan = await queries.apply_upgrade()
            sys.stderr.write(f"pgqueuer: already installed in {env.schema}; upgrade ran {len(plan.statements)} statement(s)\n")
        else:
            await queries.install()
    finally:
        await conn.close()
    return 0


async def enqueue(env: qb.Env, args: list[str]) -> int:
    count = qb.parse_count(args)
    use_schema(env)
    import json

    from pgqueuer import Queries

    all_payloads = qb.payloads(env, count)
    conn = await connect(env)
    try:
        queries = Queries.from_asyncpg_connection(conn)
        for i in range(0, len(all_payloads), 500):
            chunk = all_payloads[i : i + 500]
            await queries.enqueue(
                [env.queue] * len(chunk),
                [json.dumps(p).encode() for p in chunk],
                [0] * len(chunk),
            )
    finally:
        await conn.close()
    return 0


async def work(env: qb.Env, args: list[str]) -> int:
    if env.bug == "ack-first":
        qb.fail("pgqueuer: QUEUEBENCH_CLIENT_BUG=ack-first is not supported")
    if env.concurrency < 2:
        # QueueManager.run() caps the jobs one worker holds with
        # max_concurrent_tasks, and insists on max_concurrent_tasks >= 2 * batch_size
        # (batch_size >= 1), so a per-process cap of 1 cannot be expressed.
        qb.fail("pgqueuer: QUEUEBENCH_CONCURRENCY must be >= 2 (PgQueuer requires max_concurrent_tasks >= 2 * batch_size)")
    use_schema(env)
    from pgqueuer import Job, Queries, QueueManager

    effects = qb.Effects(env)
    await effects.open()
    conn = await connect(env)
    qm = QueueManager(Queries.from_asyncpg_connection(conn))

    # QUEUEBENCH_BATCH: jobs per dequeue (PgQueuer's batch_size); by default half the handlers.
    batch_size = env.batch or max(1, env.concurrency // 2)
    if env.concurrency < 2 * batch_size:
        qb.fail(
            f"pgqueuer: QUEUEBENCH_BATCH={batch_size} needs QUEUEBENCH_CONCURRENCY >= {2 * batch_size} "
            "(PgQueuer requires max_concurrent_tasks >= 2 * batch_size)"
        )

    @qm.entrypoint(env.queue)
    async def queuebench_job(job: Job) -> None:
        await qb.run_handler(env, effects, job.id, job.payload, job.attempts)

    dequeue_timeout = DEQUEUE_TIMEOUT if env.poll_ms is None else timedelta(milliseconds=env.poll_ms)

    async def run() -> None:
        await qm.run(
            dequeue_timeout=dequeue_timeout,
            batch_size=batch_size,
            max_concurrent_tasks=env.concurrency,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
        )

    def stop() -> None:
        # PgQueuer's shutdown: stop dequeuing, then wait for the running jobs
        # (it has no graceful timeout of its own; qb's 4.5 s failsafe exits 3).
        qm.shutdown.set()

    sys.stderr.write(
        f"pgqueuer worker {env.worker}: concurrency {env.concurrency} on entrypoint {env.queue} in schema {env.schema}\n"
    )
    code = await qb.serve_until_signal(run, stop)
    await conn.close()
    await effects.close()
    return code


if __name__ == "__main__":
    qb.main({"setup": setup, "enqueue": enqueue, "work": work})
