# Helpers shared by the benchmark scripts (sourced, not run).

# num FILE KEY: the first number after "KEY": in a JSON file (summary.json is pretty-printed).
num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | awk '{print $2}'; }

# cpu_s FILE: user + system CPU seconds from a `/usr/bin/time -v` report.
cpu_s() {
  awk -F': ' '/User time \(seconds\)/ {u = $2} /System time \(seconds\)/ {s = $2} END {printf "%.3f", u + s}' "$1"
}

# rss_mib FILE: the peak resident set size from a `/usr/bin/time -v` report, in MiB.
rss_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }

# median X...: the median of the arguments (the lower middle one for an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# median_lines < FILE: the median of the numbers on standard input, one per line (the mean of
# the middle two for an even count).
median_lines() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# per10k CPU JOBS: CPU seconds per 10,000 jobs.
per10k() { awk -v c="$1" -v j="$2" 'BEGIN { if (j > 0) printf "%.3f", c * 10000 / j; else print "n/a" }'; }

# ratio A B: A / B to three places.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "0" }'; }

# verdict VALUE OP GOAL: PASS or MISS (OP is >= or <=).
verdict() {
  awk -v v="$1" -v g="$3" -v op="$2" 'BEGIN {
    ok = (op == ">=") ? (v + 0 >= g + 0) : (v + 0 <= g + 0); print (ok ? "PASS" : "MISS") }'
}

# timed OUTFILE CMD...: runs CMD under /usr/bin/time -v, its report in OUTFILE; returns CMD's status.
timed() {
  local out=$1
  shift
  /usr/bin/time -v -o "$out" "$@"
}

# drop_schema URL SCHEMA
drop_schema() {
  PGOPTIONS="-c client_min_messages=warning" psql -q "$1" -c "DROP SCHEMA IF EXISTS $2 CASCADE" > /dev/null
}

# hog_start N SECONDS: stress-ng keeps N CPU workers busy, stopping by itself after SECONDS;
# hog_stop ends it early (installed as an EXIT trap by hog_start, so it always ends).
hog_pid=
hog_start() {
  stress-ng --cpu "$1" --timeout "${2}s" --quiet &
  hog_pid=$!
  trap hog_stop EXIT
}
hog_stop() {
  if [ -n "$hog_pid" ]; then
    kill "$hog_pid" 2>/dev/null || true
    wait "$hog_pid" 2>/dev/null || true
    hog_pid=
  fi
}
