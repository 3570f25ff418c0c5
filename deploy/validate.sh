#!/usr/bin/env bash
# Checks the Kubernetes manifests of deploy/kubernetes/ without a cluster:
#   1. every manifest against the JSON schemas of Kubernetes $KUBERNETES_VERSIONS, strictly (an
#      unknown field is an error), with kubernetes-validate, pinned with hashes in
#      deploy/requirements.txt (for CPython 3.11 on Linux x86_64, as clients/ are) and installed
#      into a venv under the cache folder: the first run needs the Python package index, later
#      ones nothing;
#   2. a deliberately broken copy of one manifest must fail the same validation (so a validator
#      that passes everything cannot pass this script);
#   3. kustomization.yaml lists files that exist, and the agent count agrees in its three places:
#      the coordinator's --agents, the agents Job's completions and parallelism (and the
#      scenario has at least one worker per agent);
#   4. the scenario in the ConfigMap passes `queuebench validate`, when a queuebench binary is
#      at hand ($QB or $QUEUEBENCH, else a build in cargo's target folder; skipped if none).
# Usage: deploy/validate.sh [DIR]   (default deploy/kubernetes). Exit 0 when all of it holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/kubernetes}
versions=${KUBERNETES_VERSIONS:-1.33.0 1.37.0}
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null 2>&1 || py=python3
req=$here/requirements.txt
stamp=$(sha256sum "$req" | cut -c1-12)
cache=${QUEUEBENCH_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/queuebench}
venv=$cache/kubernetes-validate-$stamp

# The venv is named after the requirements' hash and marked complete only once installed whole.
if [ ! -f "$venv/.installed" ]; then
  echo "validate: installing deploy/requirements.txt into $venv (pip install --require-hashes)"
  rm -rf "$venv"
  mkdir -p "$cache"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes -r "$req"
  "$venv/bin/pip" check -q --disable-pip-version-check >/dev/null || { "$venv/bin/pip" check; exit 1; }
  touch "$venv/.installed"
fi
kv=$venv/bin/kubernetes-validate

# Every manifest: each .yaml file of the folder except the kustomization, which is kustomize's
# own format and no Kubernetes object.
manifests=()
for f in "$dir"/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || manifests+=("$f")
done
[ ${#manifests[@]} -gt 0 ] || { echo "validate: no manifests in $dir"; exit 1; }

# kubernetes-validate exits 0 on a kind it has no schema for (only a WARN line): that counts
# as a failure here, as does any other warning.
schema_check() {
  local version=$1 out rc=0
  shift
  out=$("$kv" --strict --quiet --kubernetes-version "$version" "$@" 2>&1) || rc=$?
  [ -z "$out" ] || printf '%s\n' "$out" | sed "s|$dir/||; s|^|  |"
  [ "$rc" -eq 0 ] && ! printf '%s\n' "$out" | grep -q '^WARN'
}

failed=0
tool="kubernetes-validate $("$kv" --version) --strict"
names="${manifests[*]##*/}"
for v in $versions; do
  if schema_check "$v" "${manifests[@]}"; then
    echo "validate: ok: ${#manifests[@]} manifests against Kubernetes $v ($tool): $names"
  else
    echo "validate: FAILED: the manifests against Kubernetes $v ($tool)"
    failed=1
  fi
done

# The negative control (when the real manifests passed): the agents Job with one field
# misspelt must be refused, on that field.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$failed" = 0 ] && [ -f "$dir/agents-job.yaml" ]; then
  sed 's/^  parallelism:/  paralelism:/' "$dir/agents-job.yaml" > "$tmp/broken-agents-job.yaml"
  if cmp -s "$dir/agents-job.yaml" "$tmp/broken-agents-job.yaml"; then
    echo "validate: FAILED: could not break agents-job.yaml for the negative control (no spec.parallelism?)"
    failed=1
  elif out=$(schema_check "${versions%% *}" "$tmp/broken-agents-job.yaml"); then
    echo "validate: FAILED: a broken copy of agents-job.yaml (spec.paralelism) passed the validator"
    failed=1
  elif ! printf '%s\n' "$out" | grep -q "'paralelism' was unexpected"; then
    printf 'validate: FAILED: the broken copy of agents-job.yaml failed, but not on spec.paralelism:\n%s\n' "$out"
    failed=1
  else
    echo "validate: ok: a broken copy of agents-job.yaml (spec.paralelism) is refused"
  fi
fi

# The kustomization's files and the agent count, read with the venv's PyYAML; the scenario is
# written out for queuebench validate.
"$venv/bin/python" - "$dir" "$tmp/scenario.toml" <<'PY' || failed=1
import os, sys, tomllib, yaml
folder, scenario_out = sys.argv[1:3]
names = set(os.listdir(folder))
problems = []

def load(name):
    with open(os.path.join(folder, name)) as f:
        return yaml.safe_load(f)

def check():
    if "kustomization.yaml" in names:
        for r in load("kustomization.yaml").get("resources", []):
            if not os.path.exists(os.path.join(folder, r)):
                problems.append(f"kustomization.yaml lists {r}, which does not exist")
    if not {"coordinator-job.yaml", "agents-job.yaml", "scenario-configmap.yaml"} <= names:
        return
    args = load("coordinator-job.yaml")["spec"]["template"]["spec"]["containers"][0]["args"]
    agents = int(args[args.index("--agents") + 1]) if "--agents" in args else None
    spec = load("agents-job.yaml")["spec"]
    scenario = load("scenario-configmap.yaml")["data"]["scenario.toml"]
    with open(scenario_out, "w") as f:
        f.write(scenario)
    if spec.get("completionMode") != "Indexed":
        problems.append("agents-job.yaml: completionMode is not Indexed")
    for key in ("completions", "parallelism"):
        if spec.get(key) != agents:
            problems.append(f"agents-job.yaml: {key} is {spec.get(key)!r}, the coordinator's --agents {agents}")
    workers = tomllib.loads(scenario).get("workers", {}).get("count")
    if isinstance(workers, int) and agents and workers < agents:
        problems.append(f"the scenario has {workers} workers for {agents} agents")
    if not problems:
        print(f"validate: ok: {agents} agents in the coordinator's --agents and in the agents Job")

try:
    check()
except (OSError, yaml.YAMLError, tomllib.TOMLDecodeError, KeyError, IndexError, TypeError, ValueError) as e:
    problems.append(f"cannot read the manifests for these checks: {type(e).__name__}: {e}")
for p in problems:
    print(f"validate: FAILED: {p}")
sys.exit(1 if problems else 0)
PY

# The binary: $QB (.ci/run exports it) or $QUEUEBENCH, else a debug or release build in cargo's
# target folder, wherever that is (scripts/queuebench-bin.sh --dir); nothing is built here.
qb=${QB:-${QUEUEBENCH:-}}
if [ -z "$qb" ] && target=$(bash "$here/../scripts/queuebench-bin.sh" --dir 2>/dev/null); then
  for c in "$target/debug/queuebench" "$target/release/queuebench"; do
    [ -x "$c" ] && { qb=$c; break; }
  done
fi
if [ ! -f "$tmp/scenario.toml" ]; then
  :
elif [ -n "$qb" ] && [ -x "$qb" ]; then
  if out=$("$qb" validate "$tmp/scenario.toml" 2>&1); then
    echo "validate: ok: the ConfigMap's ${out#"$tmp/"}"
  else
    printf 'validate: FAILED: queuebench validate refused the ConfigMap'"'"'s scenario:\n%s\n' "$out"
    failed=1
  fi
else
  echo "validate: no queuebench binary (set QB, or cargo build): the ConfigMap's scenario is not checked"
fi

if [ "$failed" != 0 ]; then
  echo "validate: FAILED"
  exit 1
fi
echo "validate: all manifests valid"
