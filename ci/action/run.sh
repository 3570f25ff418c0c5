#!/usr/bin/env bash
# Runs queuebench on a set of scenario files and records its exit code.
#
# Environment (the action's inputs; GitLab's template sets the same):
#   QB_SCENARIOS          whitespace- or newline-separated paths or globs (`**` works), relative to
#                         QB_WORKING_DIRECTORY; a glob that matches nothing is an error (exit 2)
#   QB_REPEAT             runs per scenario (default 1)
#   QB_BASELINE           baseline name to compare with (empty: none)
#   QB_BASELINE_DIR       where baselines live (default baselines)
#   QB_SAVE_BASELINE      baseline name to save the runs as; when set, nothing is compared
#   QB_TOLERANCES         newline-separated METRIC=VALUE, each passed as --tolerance
#   QB_DATABASE_URL       a server to run on (passed as DATABASE_URL, never on the command line);
#                         empty: queuebench's ephemeral cluster (a DATABASE_URL already in the
#                         environment is then ignored)
#   QB_ARGS               extra arguments, split like a shell would (quotes and backslashes; no
#                         variables or substitutions are expanded)
#   QB_WORKING_DIRECTORY  where to run (default .)
#   QB_RESULTS_DIR        --out, relative to the working directory (default queuebench-results)
#   QB_BIN                the queuebench binary (default: queuebench on PATH)
#   QB_GITHUB             true: pass --github (default: true when GITHUB_ACTIONS=true)
#   QB_DEFER_EXIT         true: record the exit code and exit 0, so that the action can upload
#                         the results first and fail afterwards (ci/action/finish.sh)
#   QB_JUNIT_DIR          when set, copy each scenario's junit.xml there as <folder>.xml: the
#                         files of a --repeat run's repeat-K/ folders repeat the combined one
# Outputs: exit-code (queuebench's, or 2 for a bad input found here), results-dir (absolute).
set -euo pipefail
# shellcheck source=ci/action/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

github=${QB_GITHUB:-}
if [ -z "$github" ]; then
  if qb_in_github; then github=true; else github=false; fi
fi
results_abs=""

summary() {
  if [ "$github" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '%s\n' "$@" >>"$GITHUB_STEP_SUMMARY"
  fi
}

finish() {
  local code=$1
  if [ -n "$results_abs" ]; then qb_output results-dir "$results_abs"; fi
  qb_output exit-code "$code"
  qb_log "queuebench exit code $code: $(qb_exit_meaning "$code")"
  if [ "${QB_DEFER_EXIT:-}" = true ]; then
    exit 0
  fi
  exit "$code"
}

# A bad input found before queuebench ran: exit 2, as queuebench does for usage errors.
bad_input() {
  if [ "$github" = true ]; then printf '::error title=queuebench::%s\n' "$*"; fi
  qb_log "error: $*"
  summary "### queuebench did not run" "" "$*" ""
  finish 2
}

workdir=${QB_WORKING_DIRECTORY:-.}
[ -d "$workdir" ] || bad_input "working-directory '$workdir' does not exist"
cd "$workdir"

results=${QB_RESULTS_DIR:-queuebench-results}
case "$results" in
  /*) results_abs=$results ;;
  *) results_abs="$PWD/${results#./}" ;;
esac

bin=${QB_BIN:-queuebench}
command -v "$bin" >/dev/null 2>&1 || bad_input "queuebench binary '$bin' not found (run ci/action/install.sh first)"

# Scenario files: split on whitespace, expand globs, drop repeats (two runs of one scenario
# would write the same results/<scenario>/ folder).
files=()
add_file() {
  local f
  for f in ${files[@]+"${files[@]}"}; do
    [ "$f" = "$1" ] && return 0
  done
  files+=("$1")
}
set -f
# shellcheck disable=SC2206 # split on whitespace, globbing off
words=(${QB_SCENARIOS:-})
set +f
shopt -s nullglob globstar
for word in "${words[@]}"; do
  if [[ $word == *[*?[]* ]]; then
    # shellcheck disable=SC2206 # the glob is meant to expand here
    matches=($word)
    [ "${#matches[@]}" -gt 0 ] || bad_input "scenarios: '$word' matches no file in $PWD"
    for m in "${matches[@]}"; do add_file "$m"; done
  else
    add_file "$word"
  fi
done
shopt -u nullglob globstar
[ "${#files[@]}" -gt 0 ] || bad_input "scenarios is empty: give one or more scenario files or globs"

repeat=${QB_REPEAT:-1}
[[ $repeat =~ ^[0-9]+$ ]] || bad_input "repeat must be a whole number, not '$repeat'"

args=(--out "$results_abs" --repeat "$repeat" --baseline-dir "${QB_BASELINE_DIR:-baselines}")
if [ -n "${QB_SAVE_BASELINE:-}" ]; then
  args+=(--save-baseline "$QB_SAVE_BASELINE")
  if [ -n "${QB_BASELINE:-}" ]; then
    qb_log "save-baseline is set: saving '$QB_SAVE_BASELINE', not comparing with '$QB_BASELINE'"
  fi
elif [ -n "${QB_BASELINE:-}" ]; then
  args+=(--baseline "$QB_BASELINE")
fi

set -f
while IFS= read -r line; do
  line=${line%%#*}
  for tol in $line; do
    [[ $tol == *=* ]] || bad_input "tolerances: '$tol' is not METRIC=VALUE"
    args+=(--tolerance "$tol")
  done
done <<<"${QB_TOLERANCES:-}"
set +f

if [ "$github" = true ]; then
  args+=(--github)
fi

extra=()
if [ -n "${QB_ARGS:-}" ] && [ -n "${QB_ARGS//[[:space:]]/}" ]; then
  if ! err=$(printf '%s\n' "$QB_ARGS" | xargs printf '%s\0' 2>&1 >/dev/null) || [ -n "$err" ]; then
    bad_input "args: cannot split '$QB_ARGS': ${err:-unbalanced quotes}"
  fi
  while IFS= read -r -d '' a; do
    extra+=("$a")
  done < <(printf '%s\n' "$QB_ARGS" | xargs printf '%s\0')
fi

if [ -n "${QB_DATABASE_URL:-}" ]; then
  export DATABASE_URL="$QB_DATABASE_URL"
else
  unset DATABASE_URL
fi

if [ -d "$results_abs" ] && [ -n "$(ls -A "$results_abs")" ]; then
  qb_log "warning: $results_abs is not empty; queuebench refuses to write into it (exit 2) unless args has --force"
fi

cmd=("$bin" run "${files[@]}" "${args[@]}" ${extra[@]+"${extra[@]}"})
qb_log "running in $PWD:$(printf ' %q' "${cmd[@]}")"
set +e
"${cmd[@]}"
code=$?
set -e

if [ -n "${QB_SAVE_BASELINE:-}" ] && [ -d "${QB_BASELINE_DIR:-baselines}/$QB_SAVE_BASELINE" ]; then
  # The saved baseline travels with the results, so it can be downloaded and committed.
  mkdir -p "$results_abs/saved-baseline"
  cp -R "${QB_BASELINE_DIR:-baselines}/$QB_SAVE_BASELINE" "$results_abs/saved-baseline/"
  qb_log "baseline '$QB_SAVE_BASELINE' saved in ${QB_BASELINE_DIR:-baselines}/$QB_SAVE_BASELINE (copy in $results_abs/saved-baseline/)"
  summary "Baseline \`$QB_SAVE_BASELINE\` saved: commit the results' \`saved-baseline/$QB_SAVE_BASELINE/\` folder as \`${QB_BASELINE_DIR:-baselines}/$QB_SAVE_BASELINE/\`." ""
fi

if [ -n "${QB_JUNIT_DIR:-}" ] && [ -d "$results_abs" ]; then
  mkdir -p "$QB_JUNIT_DIR"
  junit_dir=$(cd "$QB_JUNIT_DIR" && pwd)
  while IFS= read -r -d '' f; do
    rel=${f#"$results_abs"/}
    rel=${rel%junit.xml}
    rel=${rel%/}
    name=${rel//\//-}
    cp "$f" "$junit_dir/${name:-queuebench}.xml"
  done < <(find "$results_abs" -name junit.xml -not -path '*/repeat-*/*' -not -path "$junit_dir/*" -print0)
fi

if [ "$code" -ge 2 ]; then
  # queuebench's own summary covers finished runs; say why there may be none.
  if [ "$github" = true ]; then
    printf '::error title=queuebench::queuebench exited %s: %s (see the log)\n' "$code" "$(qb_exit_meaning "$code")"
  fi
  summary "### queuebench exited $code" "" "$(qb_exit_meaning "$code"); the step log has queuebench's message." ""
fi
finish "$code"
