#!/usr/bin/env bash
# Builds the queuebench image on this machine with no image registry and runs a coordinator
# and 3 agents as containers against an ephemeral PostgreSQL (docs/kubernetes.md#built-and-run-here):
#   1. a Debian bookworm base: debootstrap --variant=minbase, imported into podman
#      (queuebench-base:bookworm; kept between runs, made again only when missing)
#   2. the image queuebench:local: deploy/Containerfile.local FROM that base, with a binary
#      built beforehand (user 10001, ENTRYPOINT ["queuebench"])
#   3. a throw-away cluster (initdb, trust auth, 127.0.0.1 on a free port), stopped at the end
#   4. the coordinator's container (run --agents 3) and 3 agents' containers, --network host
#   5. checks: the coordinator exits 0, summary.json lists 3 agents finished, every job
#      executed exactly once
# Run as root (podman, debootstrap, the cluster's data folder owned by postgres).
#
#   scripts/container-run.sh [--binary PATH] [--mirror URL] [--jobs N] [--clean]
#   scripts/container-run.sh --postgres-image [--mirror URL]
#   scripts/container-run.sh --postgres-docker [--binary PATH] [--mirror URL] [-- CMD ARG…]
#
#   --postgres-image   instead: steps 1–2, then the image localhost/queuebench-postgres:15
#                  (deploy/Containerfile.postgres: the base with Debian's postgresql-15) for
#                  `--postgres docker` (docs/databases.md, "--postgres docker with podman")
#   --postgres-docker  that image (made when missing), then podman's Docker-compatible service
#                  on a socket of its own, and CMD with DOCKER_HOST naming it (default: the
#                  binary's `run scenarios/skip-locked.toml --postgres docker --postgres-image
#                  localhost/queuebench-postgres:15`); fails if CMD fails or leaves a
#                  queuebench-pg-* container behind. E.g. the feature's test:
#                  scripts/container-run.sh --postgres-docker -- cargo test --features docker --test suite -- docker::
#
#   --binary PATH  the queuebench binary to put in the image (default: $QUEUEBENCH, else the
#                  debug build in cargo's target folder, else the release build; none is built)
#   --mirror URL   the Debian mirror for debootstrap (default: the first bookworm URI in this
#                  machine's apt sources)
#   --jobs N       jobs to burn down (default 3000)
#   --clean        at the end, remove the images too (queuebench:local and the base)
#   QUEUEBENCH_RUNTIMES="crun runc"  the OCI runtimes to try, in order (the first that runs
#                  a container wins; QUEUEBENCH_RUNTIMES=crun shows the exit 3 on this machine)
#
# Exit: 0 the run passed; 1 a step or check failed; 2 usage; 3 containers cannot run here
# (the reason is printed). Everything it starts is removed on any exit (a trap): containers,
# the cluster, temporary folders. Not in .ci/run: a first run takes minutes (debootstrap).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
binary=${QUEUEBENCH:-}
mirror=
jobs=3000
clean=0
mode=run
pg_cmd=()
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --clean) clean=1; shift ;;
    --postgres-image) mode=pg-image; shift ;;
    --postgres-docker) mode=pg-docker; shift ;;
    --) shift; pg_cmd=("$@"); break ;;
    -h | --help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--binary PATH] [--mirror URL] [--jobs N] [--clean]" >&2; exit 2 ;;
  esac
done

base_image=localhost/queuebench-base:bookworm
pg_image=localhost/queuebench-postgres:15
image=localhost/queuebench:local
prefix=qb-ctr-$$
agents=3
script_start=$(date +%s)
step_start=$script_start

step() {
  local now
  now=$(date +%s)
  echo "== [$(date -u +%H:%M:%S) +$((now - script_start))s] $*"
  step_start=$now
}
done_step() { echo "   done in $(($(date +%s) - step_start)) s"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
cannot() { echo "CANNOT RUN CONTAINERS HERE: $*" >&2; exit 3; }

# --postgres-image and --postgres-docker: steps 1–2 are done (the base, a runtime that works).
postgres_docker() {
  step "image $pg_image (deploy/Containerfile.postgres)"
  if [ "$mode" = pg-docker ] && podman "${pflags[@]}" image exists "$pg_image" 2>/dev/null; then
    echo "   already there: kept (--postgres-image makes it again)"
  else
    mkdir -p "$tmp/pgcontext"
    cp "$root/deploy/postgres-entrypoint.sh" "$tmp/pgcontext/"
    local previous
    previous=$(podman "${pflags[@]}" image inspect --format '{{.Id}}' "$pg_image" 2>/dev/null || true)
    podman "${pflags[@]}" build --runtime "$runtime" "${ulimits[@]}" --network host --build-arg "BASE=$base_image" \
      -f "$root/deploy/Containerfile.postgres" -t "$pg_image" "$tmp/pgcontext" >"$tmp/pgbuild.log" 2>&1 ||
      { cat "$tmp/pgbuild.log" >&2; fail "podman build of $pg_image failed"; }
    # The tag moved to the new build: remove the one it left untagged (this script's own, by id).
    if [ -n "$previous" ] && [ "$previous" != "$(podman "${pflags[@]}" image inspect --format '{{.Id}}' "$pg_image")" ]; then
      podman "${pflags[@]}" rmi "$previous" >/dev/null 2>&1 || true
    fi
  fi
  echo "   $(podman "${pflags[@]}" image inspect --format '{{.Size}}' "$pg_image" | awk '{printf "%.0f MB", $1/1e6}'): $(podman "${pflags[@]}" run --rm --network host "${ulimits[@]}" --entrypoint postgres "$pg_image" --version)"
  done_step
  [ "$mode" = pg-docker ] || return 0

  # The service takes no command-line flags per container: what steps 0–2 found goes into a
  # containers.conf of its own (the runtime, cgroupfs, the events file, ulimits in bounds).
  step "podman system service on $tmp/podman.sock"
  cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "$runtime"
EOF
  CONTAINERS_CONF=$tmp/containers.conf podman "${pflags[@]}" system service --time=0 "unix://$tmp/podman.sock" \
    >"$tmp/service.log" 2>&1 &
  service_pid=$!
  for _ in $(seq 1 100); do [ -S "$tmp/podman.sock" ] && break; sleep 0.1; done
  [ -S "$tmp/podman.sock" ] || { cat "$tmp/service.log" >&2; fail "podman's service did not make its socket in 10 s"; }
  export DOCKER_HOST=unix://$tmp/podman.sock
  echo "   DOCKER_HOST=$DOCKER_HOST (podman's Docker-compatible API)"
  done_step

  [ ${#pg_cmd[@]} -gt 0 ] || pg_cmd=("$binary" run "$root/scenarios/skip-locked.toml" --postgres docker
    --postgres-image "$pg_image" --out "$tmp/run")
  step "${pg_cmd[*]}"
  local rc=0
  (cd "$root" && "${pg_cmd[@]}") || rc=$?
  local left
  left=$(podman "${pflags[@]}" ps -a --filter name=queuebench-pg- --format '{{.Names}}')
  [ -z "$left" ] || fail "left behind by the command: $left"
  echo "   no queuebench-pg-* container is left"
  [ "$rc" = 0 ] || fail "the command exited $rc"
  done_step
  echo "PASS: --postgres docker through podman's Docker-compatible API"
}

tmp=
pgdata=
containers=()
service_pid=
cleanup() {
  local rc=$?
  set +e
  echo "== teardown"
  [ -z "$service_pid" ] || { kill "$service_pid" 2>/dev/null; wait "$service_pid" 2>/dev/null; }
  for c in "${containers[@]}"; do
    podman "${pflags[@]}" rm -f -t 0 "$c" >/dev/null 2>&1
  done
  if [ -n "$pgdata" ] && [ -f "$pgdata/postmaster.pid" ]; then
    runuser -u postgres -- pg_ctl -D "$pgdata" -m immediate -w -t 30 stop >/dev/null 2>&1
  fi
  if [ "$clean" = 1 ] && [ -n "${pflags+x}" ]; then
    podman "${pflags[@]}" rmi -f "$image" "$base_image" >/dev/null 2>&1
  fi
  [ -n "$tmp" ] && rm -rf "$tmp"
  echo "== exit $rc after $(($(date +%s) - script_start)) s"
  exit "$rc"
}
pflags=(--cgroup-manager=cgroupfs --events-backend=file)
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- 0. what this needs ------------------------------------------------------------------
step "preflight"
[ "$(id -u)" = 0 ] || { echo "run as root (podman, debootstrap, the cluster)" >&2; exit 2; }
for tool in podman debootstrap initdb pg_ctl runuser python3; do
  command -v "$tool" >/dev/null || {
    [ "$tool" = podman ] && cannot "podman is not installed (apt-get install -y podman buildah debootstrap)"
    fail "$tool is not installed"
  }
done
if [ -z "$binary" ] && [ "$mode" != pg-image ]; then
  # cargo's target folder, wherever it is (CARGO_TARGET_DIR, .cargo/config.toml, target/)
  tdir=$("$root/scripts/queuebench-bin.sh" --dir 2>/dev/null || echo "$root/target")
  for b in "$tdir/debug/queuebench" "$tdir/release/queuebench"; do
    [ -x "$b" ] && { binary=$b; break; }
  done
fi
if [ "$mode" != pg-image ]; then
  if [ -z "$binary" ] || [ ! -x "$binary" ]; then
    fail "no queuebench binary: build one or pass --binary PATH"
  fi
  missing=$(ldd "$binary" | grep 'not found' || true)
  [ -z "$missing" ] || fail "$binary needs libraries this machine lacks: $missing"
  echo "   binary: $binary ($("$binary" --version))"
fi
echo "   podman $(podman --version | awk '{print $3}'), kernel $(uname -r), cgroup $(stat -fc %T /sys/fs/cgroup)"
tmp=$(mktemp -d /var/tmp/queuebench-ctr.XXXXXX)
chmod 755 "$tmp"
podman "${pflags[@]}" info >/dev/null 2>"$tmp/info.log" ||
  { cat "$tmp/info.log" >&2; cannot "podman info failed: $(tail -1 "$tmp/info.log")"; }
done_step

# --- 1. the base image ---------------------------------------------------------------------
step "base image $base_image"
if podman "${pflags[@]}" image exists "$base_image" 2>/dev/null; then
  echo "   already there: kept (podman rmi $base_image, or --clean, to make it again)"
else
  mirror_from="--mirror"
  if [ -z "$mirror" ]; then
    mirror_from="this machine's apt sources"
    # The first URI of a bookworm suite in the machine's apt sources (deb822 or one-line form).
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}')
    [ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1=="deb" && $3=="bookworm" {print $2; exit}')
    [ -n "$mirror" ] || fail "no bookworm mirror in the apt sources: pass --mirror URL"
  fi
  echo "   debootstrap --variant=minbase bookworm (the mirror from $mirror_from)"
  debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    { tail -20 "$tmp/debootstrap.log" >&2; fail "debootstrap failed"; }
  rm -rf "$tmp/rootfs/var/cache/apt/archives/"*.deb "$tmp/rootfs/var/lib/apt/lists/"*
  echo "   rootfs $(du -sh "$tmp/rootfs" | cut -f1); importing"
  tar -C "$tmp/rootfs" -c . | podman "${pflags[@]}" import -q - "$base_image" >/dev/null ||
    fail "podman import failed"
  rm -rf "$tmp/rootfs"
fi
done_step

# --- 2. can this machine run a container at all? -------------------------------------------
# Two things podman's defaults trip over where there is no systemd and no CAP_SYS_RESOURCE:
# its default ulimits (nofile 1048576) are above this machine's hard limits, so every container
# dies in setrlimit (EPERM); and crun refuses a hybrid cgroup v1+v2 hierarchy. So: ulimits
# within the hard limits, and the first OCI runtime (crun, runc) that runs a container.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=65536
[ "$nofile" -gt 65536 ] && nofile=65536
ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
runtime=
for rt in ${QUEUEBENCH_RUNTIMES:-crun runc}; do
  command -v "$rt" >/dev/null || { echo "   $rt: not installed" >>"$tmp/probe.log"; continue; }
  step "probe: podman --runtime $rt run --network host ${ulimits[*]} $base_image true"
  if podman "${pflags[@]}" --runtime "$rt" run --rm --network host "${ulimits[@]}" "$base_image" /bin/true \
    >>"$tmp/probe.log" 2>&1; then
    runtime=$rt
    break
  fi
  echo "   $rt: $(tail -1 "$tmp/probe.log")"
done
if [ -z "$runtime" ]; then
  cat "$tmp/probe.log" >&2
  cannot "no OCI runtime could start a container (storage $(podman "${pflags[@]}" info --format '{{.Store.GraphDriverName}}' 2>/dev/null), cgroup manager cgroupfs, $(stat -fc %T /sys/fs/cgroup) on /sys/fs/cgroup): $(tail -1 "$tmp/probe.log")"
fi
pflags+=(--runtime "$runtime")
echo "   runtime $runtime, storage driver $(podman "${pflags[@]}" info --format '{{.Store.GraphDriverName}}'), cgroup manager $(podman "${pflags[@]}" info --format '{{.Host.CgroupManager}}') (cgroups $(podman "${pflags[@]}" info --format '{{.Host.CgroupsVersion}}')), events $(podman "${pflags[@]}" info --format '{{.Host.EventLogger}}'), ${ulimits[*]}"
done_step

[ "$mode" = run ] || { postgres_docker; exit 0; }

# --- 3. the queuebench image ---------------------------------------------------------------
step "image $image (deploy/Containerfile.local)"
mkdir -p "$tmp/context/scenarios"
cp "$binary" "$tmp/context/queuebench"
cp "$root"/scenarios/*.toml "$tmp/context/scenarios/"
previous=$(podman "${pflags[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
podman "${pflags[@]}" build --runtime "$runtime" "${ulimits[@]}" --network host --build-arg "BASE=$base_image" -q \
  -f "$root/deploy/Containerfile.local" -t "$image" "$tmp/context" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "podman build failed"; }
rm -rf "$tmp/context"
# The tag moved to the new build: remove the one it left untagged (this script's own, by id).
if [ -n "$previous" ] && [ "$previous" != "$(podman "${pflags[@]}" image inspect --format '{{.Id}}' "$image")" ]; then
  podman "${pflags[@]}" rmi "$previous" >/dev/null 2>&1 || true
fi
user=$(podman "${pflags[@]}" image inspect --format '{{.Config.User}} {{.Config.Entrypoint}}' "$image")
echo "   $(podman "${pflags[@]}" image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), user and entrypoint: $user"
podman "${pflags[@]}" run --rm --network host "${ulimits[@]}" "$image" --version
done_step

# --- 4. the ephemeral cluster --------------------------------------------------------------
step "ephemeral PostgreSQL on 127.0.0.1"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pgdata=$tmp/pgdata
mkdir -p "$pgdata" "$tmp/pgsock"
chown postgres: "$pgdata" "$tmp/pgsock"
runuser -u postgres -- initdb -D "$pgdata" -A trust -U postgres >"$tmp/initdb.log" 2>&1 ||
  { cat "$tmp/initdb.log" >&2; fail "initdb failed"; }
runuser -u postgres -- pg_ctl -D "$pgdata" -l "$tmp/pgsock/postgres.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $tmp/pgsock -c max_connections=100 -c fsync=off" \
  start >/dev/null || { cat "$tmp/pgsock/postgres.log" >&2; fail "pg_ctl start failed"; }
url="postgres://postgres@127.0.0.1:$port/postgres"
echo "   $url ($(runuser -u postgres -- postgres --version))"
done_step

# --- 5. the run: a coordinator and 3 agents, each a container ------------------------------
step "run: coordinator --agents $agents and $agents agents, containers on the host network"
mkdir -p "$tmp/scenario" "$tmp/results"
cat >"$tmp/scenario/scenario.toml" <<EOF
name = "container-run"
seed = 7
[jobs]
preload = $jobs
[workers]
count = 6
strategy = "skip-locked"
work = "0ms"
[lease]
duration = "10s"
fencing = "token"
reclaim = "reaper"
[run]
stop = "drained"
timeout = "120s"
EOF
chown -R 10001:10001 "$tmp/results"
chmod 755 "$tmp/scenario" && chmod 644 "$tmp/scenario/scenario.toml"
common=(--network host "${ulimits[@]}" --label queuebench-container-run="$prefix")
coord=$prefix-coordinator
containers+=("$coord")
podman "${pflags[@]}" run -d --name "$coord" "${common[@]}" \
  -v "$tmp/scenario:/scenario:ro" -v "$tmp/results:/results" \
  "$image" run /scenario/scenario.toml --database-url "$url" --agents "$agents" \
  --agent-wait 120s --out /results/run >/dev/null || fail "the coordinator's container did not start"
for k in $(seq 1 "$agents"); do
  containers+=("$prefix-a$k")
  podman "${pflags[@]}" run -d --name "$prefix-a$k" "${common[@]}" \
    "$image" agent --database-url "$url" --name "a$k" --wait 2m >/dev/null ||
    fail "agent a$k's container did not start"
done
echo "   started ${containers[*]}"
# Wait for each container, at most 300 s in all.
deadline=$(($(date +%s) + 300))
declare -A code
for c in "${containers[@]}"; do
  while :; do
    state=$(podman "${pflags[@]}" inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$c")
    case $state in exited*) code[$c]=${state#exited }; break ;; esac
    [ "$(date +%s)" -lt "$deadline" ] || { code[$c]=timeout; break; }
    sleep 1
  done
done
for c in "${containers[@]}"; do
  echo "   $c: exit ${code[$c]}"
  podman "${pflags[@]}" logs "$c" >"$tmp/$c.log" 2>&1
done
echo "   --- coordinator's log (last 25 lines)"
tail -25 "$tmp/$coord.log" | sed 's/^/   | /'
for k in $(seq 1 "$agents"); do
  echo "   --- a$k's log (last 3 lines)"
  tail -3 "$tmp/$prefix-a$k.log" | sed 's/^/   | /'
done
done_step

# --- 6. checks -----------------------------------------------------------------------------
step "checks"
bad=0
for c in "${containers[@]}"; do
  [ "${code[$c]}" = 0 ] || { echo "   $c exited ${code[$c]}" >&2; bad=1; }
done
summary=$tmp/results/run/summary.json
[ -f "$summary" ] || fail "no summary.json in the coordinator's run folder"
python3 - "$summary" "$agents" "$jobs" <<'PY' || bad=1
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2]); jobs = int(sys.argv[3])
ag = s.get("agents") or []
ex = s.get("executions") or {}
print(f"   agents: {[(a.get('name'), a.get('state'), a.get('jobs')) for a in ag]}")
print(f"   executions: total {ex.get('total')} distinct_jobs {ex.get('distinct_jobs')} "
      f"duplicate {ex.get('duplicate')} max_per_job {ex.get('max_per_job')}")
tp = (s.get("throughput") or {}).get("jobs_per_sec")
print(f"   throughput: {tp} jobs/s, passed: {s.get('passed')}, failed_checks: {s.get('failed_checks')}")
ok = (s.get("passed") is True and len(ag) == n and all(a.get("state") == "finished" for a in ag)
      and ex.get("total") == jobs and ex.get("distinct_jobs") == jobs
      and ex.get("duplicate") == 0 and ex.get("max_per_job") == 1)
print("   summary.json: " + (f"passed, {n} agents finished, every job executed exactly once" if ok else "NOT as expected"))
sys.exit(0 if ok else 1)
PY
[ "$bad" = 0 ] || fail "the run did not pass (logs above)"
done_step
echo "PASS: coordinator and $agents agents ran as containers; $jobs jobs, each executed once"
