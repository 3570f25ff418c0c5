"""The harness's cost per execution for each reference client (scripts/clients-overhead.sh).

Run inside `queuebench cluster --` (DATABASE_URL set). For each client, at the settings of its
scenarios/clients/<client>-throughput.toml but in one process, and for each round: N jobs are
enqueued through the client's own `run enqueue`, then `run work` drains them twice, once with
queuebench's recording (an effect row per execution and an event line per start and end,
read from a pipe) and once without (QUEUEBENCH_RECORD=0: the handler only returns), in
alternating order. The rate is timed by the queue's own count of what is left (the shipped
adapter's `observe.remaining`), polled every 5 ms: from the first drop to 0.
"""

import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# client: (concurrency, batch or None, poll ms or None, the adapter's observe.remaining)
CLIENTS = {
    "pg-boss": (4, 50, 500, "SELECT count(*) FROM job WHERE state < 'completed'"),
    "graphile-worker": (24, 500, None, "SELECT count(*) FROM _private_jobs"),
    "procrastinate": (16, None, None, "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"),
    "pgqueuer": (32, 16, None, "SELECT count(*) FROM pgqueuer WHERE status IN ('queued', 'picked')"),
}


def client_env(url, schema, conc, batch, poll, record):
    env = dict(os.environ)
    env.update(
        QUEUEBENCH_DATABASE_URL=url,
        QUEUEBENCH_SCHEMA=schema,
        QUEUEBENCH_WORKER="p1",
        QUEUEBENCH_CONCURRENCY=str(conc),
        QUEUEBENCH_WORK_MS="0",
        QUEUEBENCH_EVENTS="1",
        QUEUEBENCH_RECORD="1" if record else "0",
    )
    for k, v in (("QUEUEBENCH_BATCH", batch), ("QUEUEBENCH_POLL_MS", poll)):
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def one(url, client, n, record, tag):
    conc, batch, poll, remaining = CLIENTS[client]
    schema = f"qb_overhead_{client.replace('-', '_')}_{tag}"
    run = os.path.join(ROOT, "clients", client, "run")
    env = client_env(url, schema, conc, batch, poll, record)
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        db.execute(f'CREATE SCHEMA "{schema}"')
        db.execute(f'SET search_path TO "{schema}"')
        db.execute(open(os.path.join(ROOT, "src/db/sql/adapter_effects.sql")).read())
        subprocess.run([run, "setup"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([run, "enqueue", str(n)], env=env, check=True, stdout=subprocess.DEVNULL)
        left = db.execute(remaining).fetchone()[0]
        if left != n:
            sys.exit(f"{client}: {left} jobs waiting after enqueue {n}")
        worker = subprocess.Popen([run, "work"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = [0]

        def read():
            # Whole chunks, counted: a reader slower than the worker would fill the pipe and
            # hold the worker's writes up.
            for chunk in iter(lambda: worker.stdout.read1(1 << 16), b""):
                lines[0] += chunk.count(b"\n")

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        first = None
        deadline = time.monotonic() + 300
        try:
            while time.monotonic() < deadline:
                left = db.execute(remaining).fetchone()[0]
                now = time.monotonic()
                if first is None and left < n:
                    first = (now, left)
                if left == 0:
                    break
                time.sleep(0.005)
            else:
                sys.exit(f"{client}: not drained in 300 s ({left} left)")
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            reader.join(5)
        effects = db.execute("SELECT count(*) FROM queuebench_effects").fetchone()[0]
        db.execute(f'DROP SCHEMA "{schema}" CASCADE')
    t0, left0 = first
    rate = left0 / max(now - t0, 1e-6)
    if record and (effects < n or lines[0] < 2 * n):
        sys.exit(f"{client}: recording on, but {effects} effect rows and {lines[0]} event lines for {n} jobs")
    if not record and (effects or lines[0]):
        sys.exit(f"{client}: recording off, but {effects} effect rows and {lines[0]} event lines")
    return rate


def main():
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    only = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else list(CLIENTS)
    url = os.environ["DATABASE_URL"]
    print(f"{n} jobs, no work time, one worker process, {rounds} round(s), median shown")
    print()
    print("| client | settings | jobs/s without recording | jobs/s with recording | ratio | harness cost per execution |")
    print("|---|---|---|---|---|---|")
    for client in only:
        off, on = [], []
        for r in range(rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for record in order:
                rate = one(url, client, n, record, f"{'on' if record else 'off'}{r}")
                (on if record else off).append(rate)
        a, b = statistics.median(off), statistics.median(on)
        conc, batch, poll, _ = CLIENTS[client]
        settings = f"{conc} handlers" + (f", batch {batch}" if batch else "") + (f", poll {poll} ms" if poll else "")
        cost = (1 / b - 1 / a) * 1e6
        print(f"| {client} | {settings} | {a:,.0f} | {b:,.0f} | {b / a:.2f} | {cost:,.0f} µs |", flush=True)


if __name__ == "__main__":
    main()
