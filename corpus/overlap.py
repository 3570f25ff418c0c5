#!/usr/bin/env python3
"""corpus/overlap.py RUN_DIR [KEY_EXPR]: the most executions that overlapped in time, from a
run's history.csv.gz (each `execute` row: t_us = its end, dur_us = its length). A stand-in for
the mutual_exclusion check issue 36 asks for, over all jobs (one key) unless KEY_EXPR, a Python
expression over `job` (the job id), names each job's key, e.g. "job % 4"."""
import csv, gzip, sys
from collections import defaultdict

run = sys.argv[1]
key_expr = sys.argv[2] if len(sys.argv) > 2 else "0"
spans = defaultdict(list)
with gzip.open(f"{run}/history.csv.gz", "rt") as f:
    for r in csv.DictReader(f):
        if r["event"] == "execute":
            end = int(r["t_us"]); dur = int(r["dur_us"] or 0); job = int(r["job"])
            spans[eval(key_expr, {"job": job})].append((end - dur, end))
worst, pairs = 0, 0
for key, ss in spans.items():
    points = sorted([(s, 1) for s, _ in ss] + [(e, -1) for _, e in ss], key=lambda p: (p[0], p[1]))
    cur = 0
    for _, d in points:
        cur += d
        worst = max(worst, cur)
    ss.sort()
    for i, (s, e) in enumerate(ss):
        for s2, _ in ss[i + 1:]:
            if s2 >= e:
                break
            pairs += 1
print(f"most overlapping executions of one key: {worst}; overlapping pairs: {pairs}")
