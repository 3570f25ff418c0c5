#!/usr/bin/env bash
# The action's last step: fails with queuebench's own exit code, which run.sh recorded (with
# QB_DEFER_EXIT=true) so that the results could be uploaded first.
#
# Environment: QB_EXIT_CODE (the run step's exit-code output).
set -euo pipefail
# shellcheck source=ci/action/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

code=${QB_EXIT_CODE:-}
if ! [[ $code =~ ^[0-9]+$ ]]; then
  qb_fail 3 "the run step recorded no exit code: queuebench did not run"
fi
if [ "$code" = 0 ]; then
  qb_log "queuebench passed: $(qb_exit_meaning 0)"
else
  qb_log "queuebench failed with exit code $code: $(qb_exit_meaning "$code")"
fi
exit "$code"
