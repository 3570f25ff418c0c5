"""Shared glue for the Python process clients (contract v1, see ../CONTRACT.md).

It knows nothing about any queue library: each client's worker.py builds the
library's objects and calls ``run_handler`` from inside the library's job
handler. Needs psycopg 3 and psycopg_pool (both pinned by every Python client).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import psycopg
import psycopg.conninfo
import psycopg_pool

SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,49}$")


def fail(msg: str) -> None:
    sys.stderr.write(f"queuebench client: {msg}\n")
    sys.stderr.flush()
    os._exit(2)


def _int_env(name: str, default: int | None, minimum: int) -> int | None:
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        v = minimum - 1
    if v < minimum:
        fail(f"{name} must be an integer >= {minimum}")
    return v


@dataclass
class Env:
    url: str
    schema: str
    worker: str
    app_name: str
    effects_app_name: str
    concurrency: int
    queue: str
    poll_ms: int | None
    events: bool
    work_ms: float
    bug: str
    # QUEUEBENCH_BATCH: jobs per fetch where the library fetches in batches (None: as configured)
    batch: int | None = None
    # QUEUEBENCH_RECORD=0: no effect rows, no events (cargo xtask clients-overhead only)
    record: bool = True


def read_env() -> Env:
    url = os.environ.get("QUEUEBENCH_DATABASE_URL", "")
    if not url:
        fail("QUEUEBENCH_DATABASE_URL is not set")
    schema = os.environ.get("QUEUEBENCH_SCHEMA", "")
    if not schema:
        fail("QUEUEBENCH_SCHEMA is not set")
    if not SCHEMA_RE.match(schema):
        fail("QUEUEBENCH_SCHEMA must match ^[a-z_][a-z0-9_]*$ (at most 50 characters)")
    worker = os.environ.get("QUEUEBENCH_WORKER") or f"pid{os.getpid()}"
    app_name = os.environ.get("QUEUEBENCH_APPLICATION_NAME") or f"queuebench-{worker}"
    raw_work = os.environ.get("QUEUEBENCH_WORK_MS", "")
    try:
        work_ms = float(raw_work) if raw_work else 0.0
    except ValueError:
        work_ms = -1.0
    if not work_ms >= 0:
        fail("QUEUEBENCH_WORK_MS must be a number >= 0")
    bug = os.environ.get("QUEUEBENCH_CLIENT_BUG", "")
    if bug not in ("", "twice", "ack-first"):
        fail(f"unknown QUEUEBENCH_CLIENT_BUG={bug}")
    return Env(
        url=url,
        schema=schema,
        worker=worker,
        app_name=app_name,
        effects_app_name=f"{app_name}-effects",
        concurrency=_int_env("QUEUEBENCH_CONCURRENCY", 1, 1) or 1,
        queue=os.environ.get("QUEUEBENCH_QUEUE") or "queuebench",
        poll_ms=_int_env("QUEUEBENCH_POLL_MS", None, 1),
        events=os.environ.get("QUEUEBENCH_EVENTS") == "1" and os.environ.get("QUEUEBENCH_RECORD", "1") == "1",
        work_ms=work_ms,
        bug=bug,
        batch=_int_env("QUEUEBENCH_BATCH", None, 1),
        record=_record(),
    )


def _record() -> bool:
    raw = os.environ.get("QUEUEBENCH_RECORD", "1")
    if raw not in ("0", "1"):
        fail("QUEUEBENCH_RECORD must be 0 or 1")
    return raw == "1"


def conninfo(env: Env, app_name: str, search_path: str | None = None) -> str:
    """The database URL with application_name (and optionally search_path) set.

    Keyword values override the same keys in the URL, so a URL that already
    names an application_name cannot win over ours.
    """
    extra: dict[str, Any] = {"application_name": app_name}
    if search_path is not None:
        extra["options"] = f"-c search_path={search_path}"
    try:
        return psycopg.conninfo.make_conninfo(env.url, **extra)
    except psycopg.ProgrammingError:
        fail("QUEUEBENCH_DATABASE_URL is not a valid connection string (its value is not shown)")
        raise


def setup_logging() -> None:
    # Libraries log through `logging`; all of it goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("QUEUEBENCH_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )


# Event lines wait in one buffer and leave in one write per turn of the event loop (or earlier,
# where the contract needs them out: before an effect row is sent, before a handler returns or
# raises).
_events: list[str] = []
_events_scheduled = False


def _event_line(env: Env, ev: str, job: Any, n: int | None) -> str:
    # The contract's line, built by hand (json.dumps of a dict costs more per line).
    return (
        f'{{"ev":"{ev}","job":{json.dumps(str(job))},"n":{"null" if n is None else int(n)},'
        f'"worker":{json.dumps(env.worker)},"t":{time.time() * 1000.0!r}}}\n'
    )


def flush_events() -> None:
    global _events_scheduled
    _events_scheduled = False
    if not _events:
        return
    out = "".join(_events)
    _events.clear()
    sys.stdout.write(out)
    sys.stdout.flush()


def emit(env: Env, ev: str, job: Any, n: int | None) -> None:
    """Buffer a line; it is written at the end of this turn of the event loop at the latest."""
    global _events_scheduled
    if not env.events:
        return
    _events.append(_event_line(env, ev, job, n))
    if not _events_scheduled:
        _events_scheduled = True
        asyncio.get_running_loop().call_soon(flush_events)


def emit_now(env: Env, ev: str, job: Any, n: int | None) -> None:
    """Buffer a line and write the buffer now (a handler about to return or raise)."""
    if not env.events:
        return
    _events.append(_event_line(env, ev, job, n))
    flush_events()


@dataclass
class Payload:
    n: int
    work_ms: float
    fail: bool


def parse_payload(data: Any) -> Payload:
    if isinstance(data, (str, bytes)):
        data = json.loads(data)
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    n = data.get("n")
    if isinstance(n, bool) or not isinstance(n, int):
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        else:
            raise ValueError("payload has no integer n")
    work_ms = data.get("work_ms")
    work_ms = 0.0 if work_ms is None else float(work_ms)
    if not work_ms >= 0:
        raise ValueError("payload work_ms is not a number >= 0")
    return Payload(n=n, work_ms=work_ms, fail=data.get("fail") is True)


class Effects:
    """The external side effect: one row per execution, INSERTed on its own pool."""

    def __init__(self, env: Env):
        self.env = env
        # One statement text for any number of rows (the rows travel as three arrays), so the
        # server prepares it once per connection.
        self.sql = (
            f'INSERT INTO "{env.schema}".queuebench_effects (job_id, n, worker, attempt) '
            "SELECT j, n, %s::text, a FROM unnest(%s::text[], %s::bigint[], %s::int[]) AS u(j, n, a)"
        )
        self.pending: list[tuple[str, int, int | None, str | None, asyncio.Future | None]] = []
        self.scheduled = False
        self.tasks: set[asyncio.Task] = set()
        self.pool = psycopg_pool.AsyncConnectionPool(
            conninfo(env, env.effects_app_name),
            min_size=1,
            max_size=env.concurrency + 1,
            kwargs={"autocommit": True, "prepare_threshold": 0},
            configure=_asynchronous_commit,
            open=False,
        )

    async def open(self) -> None:
        await self.pool.open()

    async def record(self, job_id: Any, n: int, attempt: int | None, closing: str | None) -> None:
        """One effect row, committed before this returns. The rows of the handlers that finish
        in the same turn of the event loop go in one INSERT (a group commit), so a fast library
        is not held to one round trip per job. ``closing``: the event line ('end' or 'error')
        the handler's return or raise stands for; it is written, with the others of the batch
        in one write, after the commit and before any of the batch's handlers goes on."""
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending.append((str(job_id), n, attempt, closing, done))
        if self.env.bug == "twice":
            self.pending.append((str(job_id), n, attempt, None, None))
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._start_flush)
        await done

    def _start_flush(self) -> None:
        task = asyncio.ensure_future(self._flush())
        self.tasks.add(task)  # a reference, so the task is not collected while it runs
        task.add_done_callback(self.tasks.discard)

    async def _flush(self) -> None:
        self.scheduled = False
        while self.pending:
            batch, self.pending = self.pending[:500], self.pending[500:]
            # Every start line is out before its effect row is sent.
            flush_events()
            values = (self.env.worker, [b[0] for b in batch], [b[1] for b in batch], [b[2] for b in batch])
            try:
                async with self.pool.connection() as conn:
                    await conn.execute(self.sql, values)
            except BaseException as err:  # noqa: BLE001 - every waiting handler gets the error
                for *_, done in batch:
                    if done is not None and not done.done():
                        done.set_exception(err if isinstance(err, Exception) else RuntimeError(str(err)))
                if not isinstance(err, Exception):
                    raise
            else:
                if self.env.events:
                    for job, n, _, closing, done in batch:
                        # (a handler cancelled while it waited writes its own error line)
                        if closing is not None and done is not None and not done.done():
                            _events.append(_event_line(self.env, closing, job, n))
                    flush_events()
                for *_, done in batch:
                    if done is not None and not done.done():
                        done.set_result(None)

    async def close(self) -> None:
        await self.pool.close(timeout=1.0)


async def _asynchronous_commit(conn: psycopg.AsyncConnection) -> None:
    """Asynchronous commit (CONTRACT.md, "The job handler"): the row is committed and visible
    when the INSERT returns; its commit record precedes, in the server's write-ahead log, the
    library's own commit that marks the job done, so a server that kept that commit kept the
    row. The handler does not wait for a WAL flush of its own."""
    await conn.execute("SET synchronous_commit TO off")


async def run_handler(
    env: Env,
    effects: Effects,
    job_id: Any,
    data: Any,
    attempt: int | None,
    skip_effect: bool = False,
) -> None:
    """The contract's job handler; raises when the payload says fail=true."""
    n = None
    try:
        p = parse_payload(data)
        n = p.n
        emit(env, "start", job_id, n)
        if p.work_ms > 0:
            await asyncio.sleep(p.work_ms / 1000.0)
    except BaseException:
        # BaseException: a library cancelling the handler (asyncio.CancelledError)
        # is also "the handler did not return".
        emit_now(env, "error", job_id, n)
        raise
    closing = "error" if p.fail else "end"
    if not skip_effect and env.record:
        try:
            # Returns after the commit, with this handler's closing line already written.
            await effects.record(job_id, p.n, attempt, closing)
        except BaseException:
            emit_now(env, "error", job_id, n)
            raise
    else:
        emit_now(env, closing, job_id, n)
    if p.fail:
        raise RuntimeError(f"job {job_id} (n={p.n}) failed on purpose (payload fail=true)")


def payloads(env: Env, count: int) -> list[dict[str, Any]]:
    return [{"n": i, "work_ms": env.work_ms} for i in range(1, count + 1)]


def parse_count(args: list[str]) -> int:
    try:
        v = int(args[0])
    except (IndexError, ValueError):
        v = -1
    if v < 0:
        fail("usage: enqueue N (N an integer >= 0)")
    return v


# Failsafe: if the graceful stop has not finished this long after SIGTERM,
# exit 3 (the contract's budget is 5 s).
STOP_BUDGET_S = 4.5


async def serve_until_signal(
    run: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None] | None]
) -> int:
    """Run ``run()`` until SIGTERM/SIGINT, then call ``stop()`` and wait for run()."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)

    run_task = asyncio.create_task(run())
    stop_wait = asyncio.create_task(stopping.wait())
    await asyncio.wait({run_task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
    if run_task.done():
        stop_wait.cancel()
        exc = run_task.exception()
        if exc:
            sys.stderr.write(f"queuebench client: worker stopped on its own: {exc!r}\n")
            return 1
        sys.stderr.write("queuebench client: worker stopped on its own\n")
        return 1

    sys.stderr.write("queuebench client: SIGTERM, stopping\n")
    sys.stderr.flush()
    loop.call_later(STOP_BUDGET_S, _forced_exit)
    result = stop()
    if result is not None:
        await result
    try:
        await run_task
    except asyncio.CancelledError:
        pass
    return 0


def _forced_exit() -> None:
    sys.stderr.write(f"queuebench client: graceful stop took over {STOP_BUDGET_S} s; exiting 3\n")
    sys.stderr.flush()
    os._exit(3)


def main(commands: dict[str, Callable[[Env, list[str]], Awaitable[int | None]]]) -> None:
    setup_logging()
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = commands.get(cmd)
    if fn is None:
        fail(f"usage: worker.py setup | work | enqueue N (got {cmd!r})")
        return
    env = read_env()
    try:
        code = asyncio.run(fn(env, sys.argv[2:]))
    except Exception as exc:  # noqa: BLE001 - report and exit non-zero
        logging.getLogger("queuebench").exception("%s failed: %s", cmd, exc)
        sys.exit(1)
    sys.stdout.flush()
    sys.exit(code or 0)
