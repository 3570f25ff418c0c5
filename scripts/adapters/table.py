#!/usr/bin/env python3
"""Markdown tables of scripts/adapters-table.sh's runs (stdlib only).

    python3 scripts/adapters/table.py RESULTS/manifest.tsv

The manifest has one line per run (section, queue, workers, round, lease,
default_lease, note, exit, dir); each dir holds the run's summary.json.
"""
import csv
import json
import os
import statistics
import sys

# Why a late completion lands or not: the adapter's complete statement (adapters/*.toml) and,
# for the built-in, src/adapter/sql/complete.sql with fencing = "token".
WHY = {
    "skip-locked": "token fence: `UPDATE jobs … WHERE id = :id AND claim_token = :token`; the re-claim issued a new token",
    "river": "state-only: `WHERE id = :id AND state = 'running'`; the re-claimed job is running again",
    "pg-boss": "state-only: `WHERE name = :queue AND id = :id AND state = 'active'`; the re-fetched job is active again",
    "graphile-worker": "no fence: `DELETE FROM _private_jobs WHERE id = :id` (locked_by is not checked)",
    "pgmq": "no fence: archive() is `DELETE FROM q_default WHERE msg_id = :id` (vt and read_ct are not checked)",
    "que": "no fence (`DELETE … WHERE id = :id`), but no lease either: the paused session keeps its advisory lock, nobody re-claims",
    "oban": "no fence: `UPDATE oban_jobs SET state = 'completed' WHERE id = :id`",
    "solid_queue": "claim-row fence: the completion deletes its own claimed execution (`WHERE id = :token`); the prune deleted it and failed the job",
    "good_job": "no fence (`WHERE id = :id`), but no lease either: the paused session keeps its advisory lock, nobody re-claims",
    "procrastinate": "state-only: `WHERE id = :id AND status IN ('todo', 'doing')`; the retried job is doing again",
    "pgqueuer": "no fence: `DELETE FROM pgqueuer WHERE id = :id` (queue_manager_id is not checked)",
}


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        s = os.path.join(row["dir"], "summary.json")
        row["s"] = json.load(open(s)) if os.path.exists(s) else None
    return rows


def get(s, path, default=0):
    for k in path.split("."):
        if not isinstance(s, dict) or k not in s:
            return default
        s = s[k]
    return s


def check(s, name):
    for c in (s or {}).get("checks", []):
        if c["name"] == name:
            return c
    return None


def verdict(row):
    code = row["exit"]
    return {"0": "passed", "1": "failed"}.get(code, f"error (exit {code})")


def dup(s):
    return f"{get(s, 'executions.duplicate_race')} / {get(s, 'executions.duplicate_lease_expired')}"


def once(s):
    c = check(s, "exactly_once")
    if c is None:
        return "?"
    return "yes" if c["violations"] == 0 else f"no ({c['violations']} jobs)"


def secs(ms):
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def lease_cell(row):
    if row["note"] == "real default":
        return f"{row['lease']} (real default)"
    if row["note"].startswith("no lease"):
        return "none (advisory lock)"
    return f"**{row['lease']}** ({row['note']}; real {row['default_lease']})"


def contention(rows):
    rows = [r for r in rows if r["section"] == "contention"]
    if not rows:
        return
    queues = list(dict.fromkeys(r["queue"] for r in rows))
    workers = sorted({int(r["workers"]) for r in rows})
    rounds = sorted({int(r["round"]) for r in rows})
    by = {(r["queue"], int(r["workers"]), int(r["round"])): r for r in rows}
    print(f"### (a) Contention: {get(rows[0]['s'], 'jobs.enqueued')} jobs, zero work, burn-down, "
          f"{len(rounds)} round(s)")
    print()
    print("jobs/s: the median of the rounds (each round's value in brackets); × skip-locked: the median "
          "of each round's ratio to skip-locked's run of the same round and worker count. Duplicates: "
          "racing claims / after lease expiry, summed over the rounds.")
    print()
    print("| queue | workers | jobs/s | × skip-locked | claim p99 ms | exactly-once | duplicates race / expiry "
          "| stale completions acc. / rej. | verdict |")
    print("|---|---:|---:|---:|---:|---|---|---|---|")
    for q in queues:
        for w in workers:
            runs = [by[(q, w, r)] for r in rounds if (q, w, r) in by]
            ok = [x for x in runs if x["s"]]
            if not ok:
                print(f"| {q} | {w} | — | — | — | — | — | — | {', '.join(verdict(x) for x in runs)} |")
                continue
            jps = [get(x["s"], "throughput.jobs_per_sec") for x in ok]
            ratios = []
            for x in ok:
                base = by.get(("skip-locked", w, int(x["round"])))
                b = get(base["s"], "throughput.jobs_per_sec") if base and base["s"] else 0
                if b:
                    ratios.append(get(x["s"], "throughput.jobs_per_sec") / b)
            p99 = statistics.median(get(x["s"], "latency_ms.claim.p99") for x in ok)
            each = " / ".join(f"{v:.0f}" for v in jps)
            ratio = f"{statistics.median(ratios):.2f}×" if ratios else "—"
            onces = [once(x["s"]) for x in ok]
            bad = [o for o in onces if o != "yes"]
            race = sum(get(x["s"], "executions.duplicate_race") for x in ok)
            exp = sum(get(x["s"], "executions.duplicate_lease_expired") for x in ok)
            sa = sum(get(x["s"], "completions.stale_accepted") for x in ok)
            sr = sum(get(x["s"], "completions.stale_rejected") for x in ok)
            verdicts = sorted({verdict(x) for x in runs})
            name = f"**{q}**" if q == "skip-locked" else q
            print(f"| {name} | {w} | {statistics.median(jps):.0f} ({each}) | {ratio} | {p99:.1f} | "
                  f"{'; '.join(bad) if bad else 'yes'} | {race} / {exp} | {sa} / {sr} | {', '.join(verdicts)} |")
    print()


def crash(rows):
    rows = [r for r in rows if r["section"] == "crash"]
    if not rows:
        return
    print(f"### (b) Crash after claim: {get(rows[0]['s'], 'jobs.enqueued')} jobs, 8 workers, 1 % of jobs "
          "crash their worker after the claim (respawn after 100 ms)")
    print()
    print("Recovered: every crashed job completed later (faults.unrecovered = 0); recovery: from the crash "
          "to that job's completion. Dead and lost as the checkers judge the final table. Duplicates: "
          "racing claims / after lease expiry. Drain: the run's wall time until nothing was left to do.")
    print()
    print("| queue | lease used | reclaim | crashes | recovered? | completed | lost | dead | duplicates race / expiry "
          "| recovery mean / max | drain s | jobs/s | verdict |")
    print("|---|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|---|")
    for r in rows:
        s = r["s"]
        q = f"**{r['queue']}**" if r["queue"] == "skip-locked" else r["queue"]
        if not s:
            print(f"| {q} | {lease_cell(r)} | | | | | | | | | | | {verdict(r)} |")
            continue
        crashes = get(s, "faults.by_kind.crash")
        un = get(s, "faults.unrecovered")
        rec = "yes" if un == 0 else f"**no: {un} of {crashes}**"
        reclaim = "reaper" if get(s, "reaper.runs") else "none (claim or connection)"
        if get(s, "faults.recovered"):
            recovery = f"{secs(get(s, 'faults.recovery_ms_mean'))} / {secs(get(s, 'faults.recovery_ms_max'))}"
        else:
            recovery = "—"
        print(f"| {q} | {lease_cell(r)} | {reclaim} | {crashes} | {rec} | {get(s, 'jobs.completed')} | "
              f"{get(s, 'jobs.lost')} | {get(s, 'jobs.dead')} | {dup(s)} | "
              f"{recovery} | {get(s, 'throughput.duration_s'):.1f} | "
              f"{get(s, 'throughput.jobs_per_sec'):.0f} | {verdict(r)} |")
    print()


def pause(rows):
    rows = [r for r in rows if r["section"] == "pause"]
    if not rows:
        return
    print("### (c) Pause past the lease: w1 freezes before it acknowledges, the job is re-claimed, w1 wakes "
          "and completes")
    print()
    print("Executions: of 2 jobs (3 = the paused job ran twice). Stale: completions sent after another "
          "claim had superseded the sender's (accepted = the late write landed on the new owner's job). "
          "Overlap: jobs two workers believed they owned at once.")
    print()
    print("| queue | lease used | pause | re-claimed? | late completion | stale acc. / rej. | executions "
          "| final: completed / dead | overlap | why (the complete statement) |")
    print("|---|---|---:|---|---|---|---:|---|---:|---|")
    for r in rows:
        s = r["s"]
        q = f"**{r['queue']}**" if r["queue"] == "skip-locked" else r["queue"]
        if not s:
            print(f"| {q} | {lease_cell(r)} | | | {verdict(r)} | | | | | {WHY.get(r['queue'], '')} |")
            continue
        sa, sr = get(s, "completions.stale_accepted"), get(s, "completions.stale_rejected")
        execs = get(s, "executions.total")
        reclaimed = execs > 2
        if sa:
            late = "**landed** on the new owner's job"
        elif sr:
            late = "rejected (fence)"
        elif get(s, "completions.rejected") and get(s, "jobs.dead"):
            late = "rejected: the job was failed instead"
        elif not reclaimed:
            late = "not stale: nobody took the job"
        else:
            late = "?"
        pause_ms = ""
        scen = os.path.join(r["dir"], "scenario.toml")
        if os.path.exists(scen):
            for line in open(scen):
                if line.startswith("duration = ") and "ms" in line:
                    pause_ms = line.split('"')[1]
                    break
        print(f"| {q} | {lease_cell(r)} | {pause_ms} | {'yes' if reclaimed else 'no'} | {late} | {sa} / {sr} | "
              f"{execs} | {get(s, 'jobs.completed')} / {get(s, 'jobs.dead')} | "
              f"{get(s, 'ownership.overlapping_jobs')} | {WHY.get(r['queue'], '')} |")
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: table.py RESULTS/manifest.tsv")
    rows = load(sys.argv[1])
    contention(rows)
    crash(rows)
    pause(rows)
    errors = [r for r in rows if r["exit"] not in ("0", "1")]
    for r in errors:
        print(f"- {r['section']} {r['queue']} w{r['workers']} round {r['round']}: exit {r['exit']}, "
              f"see {r['dir']}.log")


if __name__ == "__main__":
    main()
