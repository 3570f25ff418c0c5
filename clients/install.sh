#!/usr/bin/env bash
# Install every process client's dependencies from its committed lockfile.
#   Node clients:   npm ci in clients/<name>/ (package-lock.json)
#   Python clients: one venv, clients/.venv, pip install --require-hashes -r
#                   clients/<name>/requirements.txt (hash-pinned, see lock-python.sh)
# Idempotent and fast when nothing changed: each install is skipped while the
# sha256 of its lockfile matches the stamp left by the last successful install.
# Usage: clients/install.sh [client ...]   (default: all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3.11}
node_clients=(pg-boss graphile-worker)
python_clients=(procrastinate pgqueuer)
wanted=("$@")
want() { [ ${#wanted[@]} -eq 0 ] && return 0; local w; for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
sum() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

for c in "${node_clients[@]}"; do
  want "$c" || continue
  dir=$here/$c
  stamp=$dir/node_modules/.queuebench-stamp
  s=$(sum "$dir/package-lock.json" "$dir/package.json")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$s" ]; then
    echo "install: $c up to date"
    continue
  fi
  echo "install: npm ci in clients/$c"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$s" > "$stamp"
done

venv=$here/.venv
py_wanted=()
for c in "${python_clients[@]}"; do want "$c" && py_wanted+=("$c"); done
if [ ${#py_wanted[@]} -gt 0 ]; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "install: creating clients/.venv with $py"
    "$py" -m venv "$venv"
  fi
  for c in "${py_wanted[@]}"; do
    req=$here/$c/requirements.txt
    stamp=$venv/.queuebench-stamp-$c
    s=$(sum "$req")
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$s" ]; then
      echo "install: $c up to date"
      continue
    fi
    echo "install: pip install --require-hashes -r clients/$c/requirements.txt"
    "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes --no-deps -r "$req"
    echo "$s" > "$stamp"
  done
  "$venv/bin/pip" check -q --disable-pip-version-check >/dev/null || { "$venv/bin/pip" check; exit 1; }
fi
echo "install: done"
