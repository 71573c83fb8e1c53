#!/usr/bin/env bash
# `make test` runs the deployment tests beside the main suite:
#
#   background.sh start   build the tools (helm) and the images side by side, then run pytest deploy/tests,
#                         then the cluster fault run (deploy/tests/test_cluster_faults.py), all detached;
#                         output in var/deploy/test.log
#   background.sh wait    wait for it, print its output, exit with its status
#
# The two suites share the machine; the deployment tests are mostly image builds, downloads and waits. The
# cluster fault run comes after them, so that only one of the two shares the cores with the main suite.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
DIR="$REPO/var/deploy"
LOG="$DIR/test.log"
RC="$DIR/test.rc"
WAIT_TIMEOUT="${DEPLOY_TEST_TIMEOUT:-2400}"

start() {
  mkdir -p "$DIR"
  rm -f "$RC"
  # setsid + nohup: the job outlives the make recipe line that started it.
  setsid nohup bash -c '
    cd "$1"; started=$SECONDS
    # helm builds (cold: minutes) while the images build and the tests that need no helm run first.
    deploy/helm/tools.sh helm >/dev/null &
    rc=0
    deploy/images/build.sh || rc=$?
    echo "deploy-tests: images ready after $((SECONDS - started)) s"
    if [[ $rc == 0 ]]; then
      .venv/bin/pytest -p no:cacheprovider --timeout 1800 -q -rA deploy/tests/test_compose.py \
        deploy/tests/test_testcontainers.py deploy/tests/test_env_contract.py deploy/tests/test_helm.py \
        deploy/tests/test_helm_trust.py deploy/tests/test_helm_commands.py || rc=$?
    fi
    wait
    echo "deploy-tests: finished in $((SECONDS - started)) s"
    started=$SECONDS
    # Cluster mode has a PostgreSQL of its own (Patroni), so the main suite's restart of the shared server (R12)
    # does not touch it: the two run side by side.
    .venv/bin/pytest -p no:cacheprovider --timeout 1500 -q -rA -s deploy/tests/test_cluster_faults.py || rc=$?
    echo "cluster-faults: finished in $((SECONDS - started)) s"
    echo "$rc" >"$2"
  ' _ "$REPO" "$RC" >"$LOG" 2>&1 </dev/null &
  echo "deploy-tests: started in the background (log: var/deploy/test.log)"
}

wait_done() {
  local deadline=$((SECONDS + WAIT_TIMEOUT))
  until [[ -s "$RC" ]]; do
    if ((SECONDS > deadline)); then
      echo "deploy-tests: still running after ${WAIT_TIMEOUT}s" >&2
      cat "$LOG"
      return 1
    fi
    sleep 2
  done
  echo "=============================== deployment tests ==============================="
  cat "$LOG"
  return "$(cat "$RC")"
}

case "${1:-}" in
  start) start ;;
  wait) wait_done ;;
  *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
